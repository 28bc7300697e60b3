//! HTTP client for one model endpoint: one POST per attempt, bounded retries,
//! and a classification of every failure into a [`ModelError`].
//!
//! The API key is read from the environment at call time and only ever put in
//! a header marked sensitive; it is scrubbed from anything the server echoes
//! back, and neither [`EndpointConfig`] nor [`ModelClient`] holds it, so no
//! Debug output, error or log line can carry it.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, USER_AGENT,
};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::gate::{AttemptGate, Billing, CallError, Ungated};
use super::headers::{HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE, HEADER_MISS};
use super::retry::parse_retry_after;
pub use super::retry::{retry_delay_ms, RetryPolicy, MAX_ATTEMPTS_HARD_CAP};
use super::types::{ModelError, ModelReply, ModelRequest, Protocol};
use super::{endpoint_path, parse_response, request_body, truncate_str};

/// Bodies larger than this are not read: a 200 that large is treated as
/// malformed (unparseable, billed), an error body is cut there.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Error bodies kept in [`ModelError::Rejected`].
pub const MAX_ERROR_BODY_BYTES: usize = 2 * 1024;
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How much later than its own timeout an attempt is cut by the outer
/// bound, should reqwest's timeout ever not fire.
pub const ATTEMPT_TIMEOUT_GRACE: Duration = Duration::from_millis(250);

/// One model endpoint. Holds the NAME of the env var with the key, never the
/// key, so the derived Debug is safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointConfig {
    /// Anthropic: without `/v1` (`https://api.anthropic.com`); OpenAI-compatible:
    /// ending in `/v1` (`http://127.0.0.1:8080/v1`). See [`super::endpoint_path`].
    pub base_url: String,
    pub protocol: Protocol,
    /// Env var holding the API key. Unset/empty var: no auth header (replay).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Whole-attempt timeout (connect + send + full body).
    #[serde(default = "default_timeout_ms")]
    pub request_timeout_ms: u64,
    #[serde(default)]
    pub retry: RetryPolicy,
}

fn default_timeout_ms() -> u64 {
    120_000
}

#[derive(Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    cfg: EndpointConfig,
    url: String,
    sampling: Sampling,
}

/// Sampling settings added to every request body; unset fields are omitted
/// (the endpoint's defaults apply).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    /// OpenAI-compatible endpoints only; never sent to the Anthropic API.
    pub seed: Option<u64>,
    /// How schema-constrained output is asked for (OpenAI-compatible only).
    pub structured_output: StructuredOutput,
}

/// The two dialects of schema-constrained JSON among OpenAI-compatible
/// servers. OpenAI's is `{"type": "json_schema", "json_schema": {"schema": S}}`;
/// llama-cpp-python's server (0.3.x) accepts only
/// `{"type": "json_object", "schema": S}` and rejects the first with a 500.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StructuredOutput {
    #[default]
    JsonSchema,
    JsonObject,
}

impl fmt::Debug for ModelClient {
    // By hand so that adding a field can never silently leak something.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelClient")
            .field("url", &self.url)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// What one attempt came to.
enum Attempt {
    Done(super::ParsedReply),
    Retry {
        last: String,
        retry_after_ms: Option<u64>,
        billing: Billing,
    },
    Fatal(ModelError),
}

impl ModelClient {
    pub fn new(cfg: EndpointConfig) -> Result<Self, ModelError> {
        let parsed = reqwest::Url::parse(&cfg.base_url).map_err(|e| {
            ModelError::Config(format!(
                "base_url {:?} is not a valid URL: {e}",
                cfg.base_url
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ModelError::Config(format!(
                "base_url {:?} must be http or https",
                cfg.base_url
            )));
        }
        if cfg.request_timeout_ms == 0 {
            return Err(ModelError::Config("request_timeout_ms must be > 0".into()));
        }
        let timeout = Duration::from_millis(cfg.request_timeout_ms);
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            // No redirects: a model endpoint has no business redirecting a
            // POST, and following one could carry x-api-key to another host.
            .redirect(reqwest::redirect::Policy::none());
        let loopback = parsed.host_str().is_some_and(|h| {
            h.eq_ignore_ascii_case("localhost")
                || h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if loopback {
            // A replay server or local llama.cpp must never be reached through
            // an HTTP(S)_PROXY from the environment.
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build HTTP client: {e}")))?;
        let url = format!(
            "{}{}",
            cfg.base_url.trim_end_matches('/'),
            endpoint_path(cfg.protocol)
        );
        Ok(ModelClient {
            http,
            cfg,
            url,
            sampling: Sampling::default(),
        })
    }

    /// The same client, sending these sampling settings with every call.
    pub fn with_sampling(mut self, sampling: Sampling) -> ModelClient {
        self.sampling = sampling;
        self
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// The full URL requests are POSTed to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The exact JSON body `call` sends for `req`: the protocol's rendering
    /// plus this client's sampling settings. Recorders use it so a recording
    /// holds what went on the wire (strict replay hashes it).
    pub fn wire_body(&self, req: &ModelRequest) -> Value {
        wire_body(self.cfg.protocol, &self.sampling, req)
    }

    /// Make the call, retrying 429 / 5xx / transport errors / unparseable
    /// 200s, with no gate: no money is consulted and only the request
    /// timeout bounds an attempt.
    pub async fn call(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        match self.call_gated(req, &mut Ungated).await {
            Ok(reply) => Ok(reply),
            Err(CallError::Model(e)) => Err(e),
            Err(CallError::Stopped(never)) => match never {},
        }
    }

    /// Make the call with `gate` consulted around every attempt: before each
    /// one (it may stop the call, e.g. a refused reserve) and after each
    /// failed one with what it may have cost. Every attempt is bounded by the
    /// request timeout AND the gate's deadline; a backoff sleep never goes
    /// past the deadline; when the deadline is reached the call ends with
    /// [`ModelError::Deadline`].
    pub async fn call_gated<G: AttemptGate>(
        &self,
        req: &ModelRequest,
        gate: &mut G,
    ) -> Result<ModelReply, CallError<G::Stop>> {
        let (key, body, base_headers) = self.prepare(req).map_err(CallError::Model)?;
        let max = self.cfg.retry.effective_max_attempts();
        let deadline = gate.deadline();
        let timeout_cap = Duration::from_millis(self.cfg.request_timeout_ms);
        let mut billed_unknown = 0u32;
        let mut last = String::new();

        for attempt in 0..max {
            // The time this attempt may take: the request timeout, or less
            // when the run's clock has less left.
            let Some(timeout) = attempt_timeout(deadline, timeout_cap) else {
                return Err(CallError::Model(ModelError::Deadline {
                    attempts: attempt,
                    last,
                }));
            };
            gate.before_attempt(attempt).map_err(CallError::Stopped)?;
            let mut headers = base_headers.clone();
            headers.insert(
                HeaderName::from_static(HEADER_ATTEMPT),
                HeaderValue::from(attempt),
            );
            let started = Instant::now();
            let outcome = self
                .attempt(headers, body.clone(), key.as_deref(), timeout)
                .await;
            match outcome {
                Attempt::Done(parsed) => {
                    let latency_ms = started.elapsed().as_millis().min(u64::MAX as u128) as u64;
                    return Ok(parsed.into_reply(latency_ms, attempt + 1, billed_unknown));
                }
                // A fatal answer (4xx, recording miss) billed nothing.
                Attempt::Fatal(e) => return Err(CallError::Model(e)),
                Attempt::Retry {
                    last: l,
                    retry_after_ms,
                    billing,
                } => {
                    if billing == Billing::Unknown {
                        billed_unknown += 1;
                    }
                    gate.after_failed_attempt(attempt, billing)
                        .map_err(CallError::Stopped)?;
                    last = format!("attempt {}: {l}", attempt + 1);
                    if attempt + 1 < max {
                        self.back_off(req, attempt, retry_after_ms, deadline).await;
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(CallError::Model(ModelError::Deadline {
                            attempts: attempt + 1,
                            last,
                        }));
                    }
                }
            }
        }
        Err(CallError::Model(ModelError::RetriesExhausted {
            attempts: max,
            last,
            billed_unknown_attempts: billed_unknown,
        }))
    }

    /// What every attempt of one call sends, made once: the API key (from
    /// its env var), the body's bytes and the headers but the attempt's.
    fn prepare(
        &self,
        req: &ModelRequest,
    ) -> Result<(Option<String>, Vec<u8>, HeaderMap), ModelError> {
        let key = self
            .cfg
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.is_empty());
        let body = self.wire_body(req);
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::Config(format!("cannot serialise request: {e}")))?;
        let headers = self.headers(req, key.as_deref())?;
        Ok((key, body, headers))
    }

    /// The backoff before the next attempt, never past the deadline.
    async fn back_off(
        &self,
        req: &ModelRequest,
        attempt: u32,
        retry_after_ms: Option<u64>,
        deadline: Option<Instant>,
    ) {
        let mut wait = Duration::from_millis(retry_delay_ms(
            &self.cfg.retry,
            &req.call_key,
            attempt,
            retry_after_ms,
        ));
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        tokio::time::sleep(wait).await;
    }

    fn headers(&self, req: &ModelRequest, key: Option<&str>) -> Result<HeaderMap, ModelError> {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("harness/", env!("CARGO_PKG_VERSION"))),
        );
        h.insert(
            HeaderName::from_static(HEADER_CALL_ROLE),
            HeaderValue::from_static(req.role.as_str()),
        );
        let call_key = HeaderValue::from_str(&req.call_key).map_err(|_| {
            ModelError::Config(format!(
                "call_key {:?} is not a valid header value",
                req.call_key
            ))
        })?;
        h.insert(HeaderName::from_static(HEADER_CALL_KEY), call_key);
        // The error for a bad key must not echo it.
        let secret = |v: String| -> Result<HeaderValue, ModelError> {
            let mut hv = HeaderValue::from_str(&v).map_err(|_| {
                ModelError::Config(
                    "the API key env var holds characters not allowed in an HTTP header".into(),
                )
            })?;
            hv.set_sensitive(true);
            Ok(hv)
        };
        match self.cfg.protocol {
            Protocol::Anthropic => {
                h.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
                if let Some(k) = key {
                    h.insert(HeaderName::from_static("x-api-key"), secret(k.to_string())?);
                }
            }
            Protocol::Openai => {
                if let Some(k) = key {
                    h.insert(AUTHORIZATION, secret(format!("Bearer {k}"))?);
                }
            }
        }
        Ok(h)
    }

    /// One POST, bounded by `timeout` from connect to the last body byte.
    async fn attempt(
        &self,
        headers: HeaderMap,
        body: Vec<u8>,
        key: Option<&str>,
        timeout: Duration,
    ) -> Attempt {
        let sent = self
            .http
            .post(&self.url)
            .headers(headers)
            .body(body)
            .timeout(timeout);
        // reqwest's timeout covers connect, send and the whole body read;
        // this outer bound (a little later) only makes that a certainty.
        match tokio::time::timeout(
            timeout + ATTEMPT_TIMEOUT_GRACE,
            self.send_and_read(sent, key, timeout),
        )
        .await
        {
            Ok(a) => a,
            Err(_) => Attempt::Retry {
                last: format!("timeout after {} ms", timeout.as_millis()),
                retry_after_ms: None,
                // Cut at an unknown point: the server may be working on it.
                billing: Billing::Unknown,
            },
        }
    }

    async fn send_and_read(
        &self,
        sent: reqwest::RequestBuilder,
        key: Option<&str>,
        timeout: Duration,
    ) -> Attempt {
        let timeout_ms = timeout.as_millis().min(u64::MAX as u128) as u64;
        let resp = match sent.send().await {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    last: redact(&describe_transport(&e, timeout_ms), key),
                    retry_after_ms: None,
                    billing: transport_billing(&e),
                }
            }
        };
        let status = resp.status();
        let replay_miss_header = resp
            .headers()
            .get(HEADER_MISS)
            .is_some_and(|v| v.as_bytes() == b"1");
        let retry_after_ms = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let read = read_capped(resp, MAX_RESPONSE_BYTES).await;
        if let Some(miss) = recording_miss_of(&read, replay_miss_header, key) {
            return miss;
        }
        if status.is_success() {
            return self.read_success(status, read, key);
        }
        failed_status(status, &read, retry_after_ms, key)
    }

    /// A 2xx reply: from here on the endpoint accepted the request and may
    /// have billed it, so every failure counts as an unparseable billed
    /// attempt.
    fn read_success(
        &self,
        status: StatusCode,
        read: Result<Vec<u8>, String>,
        key: Option<&str>,
    ) -> Attempt {
        let detail = match read {
            Ok(bytes) => match parse_response(self.cfg.protocol, &bytes) {
                Ok(parsed) => return Attempt::Done(parsed),
                Err(d) => d,
            },
            Err(d) => d,
        };
        Attempt::Retry {
            last: redact(
                &format!("HTTP {} with unparseable body: {detail}", status.as_u16()),
                key,
            ),
            retry_after_ms: None,
            billing: Billing::Unknown,
        }
    }
}

/// The time an attempt may take: the request timeout, or what is left
/// before the deadline; None once the deadline has passed.
fn attempt_timeout(deadline: Option<Instant>, timeout_cap: Duration) -> Option<Duration> {
    match deadline {
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            (!left.is_zero()).then(|| timeout_cap.min(left))
        }
        None => Some(timeout_cap),
    }
}

/// A replay server's "no recording for this request", whatever the status:
/// fatal, since asking again cannot find one.
fn recording_miss_of(
    read: &Result<Vec<u8>, String>,
    replay_miss_header: bool,
    key: Option<&str>,
) -> Option<Attempt> {
    if let Ok(bytes) = read {
        if let Some(detail) = recording_miss(bytes, replay_miss_header) {
            return Some(Attempt::Fatal(ModelError::RecordingMiss {
                detail: redact(&detail, key),
            }));
        }
    } else if replay_miss_header {
        return Some(Attempt::Fatal(ModelError::RecordingMiss {
            detail: "x-replay-miss: 1 (body unreadable)".into(),
        }));
    }
    None
}

/// A non-2xx reply: 429 and 5xx are retried (not billed), anything else is
/// the request's fault and fatal.
fn failed_status(
    status: StatusCode,
    read: &Result<Vec<u8>, String>,
    retry_after_ms: Option<u64>,
    key: Option<&str>,
) -> Attempt {
    let body_text = match read {
        Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Err(d) => format!("<body unreadable: {d}>"),
    };
    // Redact before truncating so a cut can never leave part of the key.
    let body_text = truncate_str(&redact(&body_text, key), MAX_ERROR_BODY_BYTES);
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        Attempt::Retry {
            last: format!("HTTP {}: {body_text}", status.as_u16()),
            retry_after_ms,
            billing: Billing::NotBilled,
        }
    } else {
        Attempt::Fatal(ModelError::Rejected {
            status: status.as_u16(),
            body: body_text,
        })
    }
}

/// Read the body, refusing more than `cap` bytes (Content-Length checked first,
/// then while streaming, since chunked bodies have no length).
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    if let Some(len) = resp.content_length() {
        if len > cap as u64 {
            return Err(format!("body of {len} bytes exceeds the {cap}-byte cap"));
        }
    }
    let mut buf = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if buf.len() + chunk.len() > cap {
                    return Err(format!("body exceeds the {cap}-byte cap"));
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(buf),
            Err(e) => {
                return Err(format!(
                    "body read failed after {} bytes: {}",
                    buf.len(),
                    error_chain(&e)
                ))
            }
        }
    }
}

/// The replay server's miss answer: header `x-replay-miss: 1` and/or a JSON
/// body with `error.type == "recording_miss"`.
fn recording_miss(body: &[u8], header: bool) -> Option<String> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let is_miss =
        header || err.and_then(|e| e.get("type")).and_then(Value::as_str) == Some("recording_miss");
    if !is_miss {
        return None;
    }
    Some(
        match err.and_then(|e| e.get("message")).and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => truncate_str(&String::from_utf8_lossy(body), MAX_ERROR_BODY_BYTES),
        },
    )
}

/// A transport error bills nothing only when the request provably never
/// reached the server: the connection was not made (refused, DNS, connect
/// timeout) or the request was never built. Anything later (a reset after
/// sending, a timeout while the server works, a broken body read) may have
/// been billed.
fn transport_billing(e: &reqwest::Error) -> Billing {
    if e.is_connect() || e.is_builder() {
        Billing::NotBilled
    } else {
        Billing::Unknown
    }
}

fn describe_transport(e: &reqwest::Error, timeout_ms: u64) -> String {
    let kind = if e.is_timeout() {
        format!("timeout after {timeout_ms} ms")
    } else if e.is_connect() {
        "connection failed".to_string()
    } else {
        "transport error".to_string()
    };
    format!("{kind}: {}", error_chain(e))
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// Servers sometimes echo the key ("Incorrect API key provided: sk-...").
fn redact(s: &str, key: Option<&str>) -> String {
    match key {
        Some(k) if !k.is_empty() && s.contains(k) => s.replace(k, "[REDACTED]"),
        _ => s.to_string(),
    }
}

/// The exact JSON body a client with these settings sends for `req`: the
/// protocol's rendering plus the sampling settings. Also what the bench
/// derives a scripted cassette's recording conditions from.
pub fn wire_body(protocol: Protocol, sampling: &Sampling, req: &ModelRequest) -> Value {
    let mut body = request_body(protocol, req);
    if let Some(obj) = body.as_object_mut() {
        if let Some(t) = sampling.temperature {
            obj.insert("temperature".into(), serde_json::json!(t));
        }
        if let (Some(seed), Protocol::Openai) = (sampling.seed, protocol) {
            obj.insert("seed".into(), serde_json::json!(seed));
        }
        if sampling.structured_output == StructuredOutput::JsonObject {
            if let Some(schema) = obj
                .get("response_format")
                .and_then(|f| f["json_schema"].get("schema"))
                .cloned()
            {
                obj.insert(
                    "response_format".into(),
                    serde_json::json!({"type": "json_object", "schema": schema}),
                );
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{AttemptGate, Billing, CallError};
    use crate::types::{CallRole, StopReason, Turn, Usage};
    use crate::{render_response, ScriptedReply};
    use serde_json::json;
    use std::sync::atomic::{AtomicU32, Ordering};
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn fast_policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base_delay_ms: 1,
            max_delay_ms: 5,
            retry_after_cap_ms: 150,
            jitter_seed: 7,
        }
    }

    fn cfg(server: &MockServer, protocol: Protocol, key_env: Option<&str>) -> EndpointConfig {
        let base_url = match protocol {
            Protocol::Anthropic => server.uri(),
            Protocol::Openai => format!("{}/v1/", server.uri()), // trailing slash tolerated
        };
        EndpointConfig {
            base_url,
            protocol,
            api_key_env: key_env.map(str::to_string),
            request_timeout_ms: 5_000,
            retry: fast_policy(),
        }
    }

    fn wire_path(protocol: Protocol) -> &'static str {
        match protocol {
            Protocol::Anthropic => "/v1/messages",
            Protocol::Openai => "/v1/chat/completions",
        }
    }

    fn req() -> ModelRequest {
        ModelRequest {
            role: CallRole::Execute,
            call_key: "execute/t1/a0/0".into(),
            model: "m".into(),
            system: "s".into(),
            turns: vec![Turn::User { text: "hi".into() }],
            tools: vec![],
            max_tokens: 100,
            json_schema: None,
            trailing_notice: None,
        }
    }

    fn ok_body(protocol: Protocol) -> Value {
        render_response(
            protocol,
            &ScriptedReply {
                text: "hello".into(),
                tool_calls: vec![],
                stop_reason: StopReason::EndTurn,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    cache_read_input_tokens: 5,
                    cache_creation_input_tokens: 0,
                },
                model: "m".into(),
            },
        )
    }

    /// Unique per test so parallel tests never share a variable.
    fn key_env(tag: &str, value: Option<&str>) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "HARNESS_MODEL_TEST_KEY_{tag}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(v) = value {
            std::env::set_var(&name, v);
        }
        name
    }

    #[tokio::test]
    async fn success_sends_harness_headers_and_parses() {
        for protocol in [Protocol::Anthropic, Protocol::Openai] {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .and(path(wire_path(protocol)))
                .and(header("x-harness-call-role", "execute"))
                .and(header("x-harness-call-key", "execute/t1/a0/0"))
                .and(header("x-harness-attempt", "0"))
                .and(header("content-type", "application/json"))
                .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(protocol)))
                .expect(1)
                .mount(&server)
                .await;
            let client = ModelClient::new(cfg(&server, protocol, None)).unwrap();
            let reply = client.call(&req()).await.unwrap();
            assert_eq!(
                (
                    reply.text.as_str(),
                    reply.attempts,
                    reply.billed_unknown_attempts
                ),
                ("hello", 1, 0)
            );
            assert_eq!(reply.usage.cache_read_input_tokens, 5);
            let got = &server.received_requests().await.unwrap()[0];
            let body: Value = serde_json::from_slice(&got.body).unwrap();
            assert_eq!(body["model"], "m");
            assert_eq!(
                got.headers.get("anthropic-version").is_some(),
                protocol == Protocol::Anthropic
            );
            // No key configured: no auth header at all.
            assert!(
                got.headers.get("x-api-key").is_none()
                    && got.headers.get("authorization").is_none()
            );
        }
    }

    #[tokio::test]
    async fn retry_after_429_then_200_succeeds_on_second_attempt() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "1")
                    .set_body_string("slow down"),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Anthropic)))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        let t = Instant::now();
        let reply = client.call(&req()).await.unwrap();
        assert_eq!(reply.attempts, 2);
        // Retry-After: 1s, capped by the policy at 150 ms: waited at least the cap.
        assert!(
            t.elapsed() >= Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        assert!(
            t.elapsed() < Duration::from_millis(1_000),
            "cap not applied: {:?}",
            t.elapsed()
        );
        let reqs = server.received_requests().await.unwrap();
        let attempts: Vec<_> = reqs
            .iter()
            .map(|r| {
                r.headers
                    .get("x-harness-attempt")
                    .unwrap()
                    .to_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(attempts, ["0", "1"]);
    }

    #[tokio::test]
    async fn two_500s_then_200_succeeds_with_three_attempts() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
            .up_to_n_times(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Openai)))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Openai, None)).unwrap();
        let reply = client.call(&req()).await.unwrap();
        assert_eq!((reply.attempts, reply.billed_unknown_attempts), (3, 0));
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn persistent_503_exhausts_retries() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).set_body_string("overloaded"))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        match client.call(&req()).await.unwrap_err() {
            ModelError::RetriesExhausted {
                attempts,
                last,
                billed_unknown_attempts,
            } => {
                assert_eq!((attempts, billed_unknown_attempts), (3, 0));
                assert!(
                    last.contains("503") && last.contains("overloaded"),
                    "{last}"
                );
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn client_errors_are_rejected_without_retry() {
        for status in [400u16, 401, 403, 404, 422] {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(status).set_body_string("x".repeat(10_000)))
                .mount(&server)
                .await;
            let client = ModelClient::new(cfg(&server, Protocol::Openai, None)).unwrap();
            match client.call(&req()).await.unwrap_err() {
                ModelError::Rejected { status: s, body } => {
                    assert_eq!(s, status);
                    assert!(
                        body.len() < MAX_ERROR_BODY_BYTES + 100,
                        "body truncated to 2 KiB: {}",
                        body.len()
                    );
                }
                e => panic!("{status}: {e:?}"),
            }
            assert_eq!(
                server.received_requests().await.unwrap().len(),
                1,
                "status {status} must not be retried"
            );
        }
    }

    #[tokio::test]
    async fn recording_miss_is_classified_and_not_retried() {
        // By body (404), and by header alone (any status).
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(404).insert_header("x-replay-miss", "1").set_body_json(json!({
                "type": "error",
                "error": {"type": "recording_miss", "message": "no recording for execute/t1/a0/0; nearest execute/t1/a0/1"}
            })))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        assert_eq!(
            client.call(&req()).await.unwrap_err(),
            ModelError::RecordingMiss {
                detail: "no recording for execute/t1/a0/0; nearest execute/t1/a0/1".into()
            }
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1);

        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(500)
                    .insert_header("x-replay-miss", "1")
                    .set_body_string("miss"),
            )
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Openai, None)).unwrap();
        assert!(matches!(
            client.call(&req()).await.unwrap_err(),
            ModelError::RecordingMiss { .. }
        ));
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn truncated_200_is_retried_and_counted() {
        let truncated = ok_body(Protocol::Anthropic).to_string();
        let truncated = &truncated[..truncated.len() / 2];

        // Always truncated: exhausted, every attempt counted as billed.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string(truncated))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        match client.call(&req()).await.unwrap_err() {
            ModelError::RetriesExhausted {
                attempts,
                billed_unknown_attempts,
                last,
            } => {
                assert_eq!((attempts, billed_unknown_attempts), (3, 3));
                assert!(last.contains("unparseable"), "{last}");
            }
            e => panic!("{e:?}"),
        }

        // Truncated once, then fine: the reply carries the count.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string(truncated))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Anthropic)))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        let reply = client.call(&req()).await.unwrap();
        assert_eq!((reply.attempts, reply.billed_unknown_attempts), (2, 1));
    }

    #[tokio::test]
    async fn oversized_200_body_is_malformed() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200).set_body_string(" ".repeat(MAX_RESPONSE_BYTES + 1)),
            )
            .mount(&server)
            .await;
        let mut c = cfg(&server, Protocol::Openai, None);
        c.retry.max_attempts = 1;
        let client = ModelClient::new(c).unwrap();
        match client.call(&req()).await.unwrap_err() {
            ModelError::RetriesExhausted {
                attempts: 1,
                billed_unknown_attempts: 1,
                last,
            } => {
                assert!(last.contains("cap"), "{last}")
            }
            e => panic!("{e:?}"),
        }
    }

    #[tokio::test]
    async fn timeouts_and_refused_connections_are_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(ok_body(Protocol::Openai))
                    .set_delay(Duration::from_millis(400)),
            )
            .mount(&server)
            .await;
        let mut c = cfg(&server, Protocol::Openai, None);
        c.request_timeout_ms = 50;
        c.retry.max_attempts = 2;
        match ModelClient::new(c).unwrap().call(&req()).await.unwrap_err() {
            // The server had the request and was working on it: each timed-out
            // attempt may have been billed.
            ModelError::RetriesExhausted {
                attempts: 2,
                last,
                billed_unknown_attempts: 2,
            } => {
                assert!(last.contains("timeout"), "{last}")
            }
            e => panic!("{e:?}"),
        }

        // A port nobody listens on: the request never left, nothing billed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = EndpointConfig {
            base_url: format!("http://127.0.0.1:{port}"),
            protocol: Protocol::Anthropic,
            api_key_env: None,
            request_timeout_ms: 1_000,
            retry: fast_policy(),
        };
        assert!(matches!(
            ModelClient::new(c).unwrap().call(&req()).await.unwrap_err(),
            ModelError::RetriesExhausted {
                attempts: 3,
                billed_unknown_attempts: 0,
                ..
            }
        ));
    }

    /// Records what the client told it; refuses attempt `refuse_at`.
    #[derive(Default)]
    struct Probe {
        before: Vec<u32>,
        failed: Vec<(u32, Billing)>,
        refuse_at: Option<u32>,
        deadline: Option<Instant>,
    }

    impl AttemptGate for Probe {
        type Stop = &'static str;
        fn before_attempt(&mut self, attempt: u32) -> Result<(), &'static str> {
            self.before.push(attempt);
            if self.refuse_at == Some(attempt) {
                return Err("refused");
            }
            Ok(())
        }
        fn after_failed_attempt(
            &mut self,
            attempt: u32,
            billing: Billing,
        ) -> Result<(), &'static str> {
            self.failed.push((attempt, billing));
            Ok(())
        }
        fn deadline(&self) -> Option<Instant> {
            self.deadline
        }
    }

    #[tokio::test]
    async fn the_gate_hears_every_attempt_and_what_it_may_have_cost() {
        let truncated = ok_body(Protocol::Anthropic).to_string();
        let truncated = truncated[..truncated.len() / 2].to_string();
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string(truncated))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Anthropic)))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Anthropic, None)).unwrap();
        let mut probe = Probe::default();
        let reply = client.call_gated(&req(), &mut probe).await.unwrap();
        assert_eq!(probe.before, vec![0, 1, 2]);
        assert_eq!(
            probe.failed,
            vec![(0, Billing::NotBilled), (1, Billing::Unknown)]
        );
        assert_eq!((reply.attempts, reply.billed_unknown_attempts), (3, 1));

        // A gate that refuses attempt 1 stops the call before it is made.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Openai, None)).unwrap();
        let mut probe = Probe {
            refuse_at: Some(1),
            ..Probe::default()
        };
        assert_eq!(
            client.call_gated(&req(), &mut probe).await.unwrap_err(),
            CallError::Stopped("refused")
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }

    /// A raw server: reads each request, then answers with `reply` (bytes,
    /// possibly an incomplete response) and closes the connection.
    async fn raw_server(reply: &'static [u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut got = Vec::new();
                    // Read the whole request (headers + Content-Length body).
                    loop {
                        let Ok(n) = s.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&got);
                        if let Some(h) = text.find("\r\n\r\n") {
                            let len = text[..h]
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase()
                                        .strip_prefix("content-length:")
                                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                                })
                                .unwrap_or(0);
                            if got.len() >= h + 4 + len {
                                break;
                            }
                        }
                    }
                    let _ = s.write_all(reply).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_transport_failure_after_sending_may_have_been_billed() {
        let policy = RetryPolicy {
            max_attempts: 2,
            ..fast_policy()
        };
        for (what, reply) in [
            // The server had the request and hung up without a word.
            ("reset after sending", &b""[..]),
            // The reply's status arrived (200), then the connection broke.
            (
                "body broken after 200",
                &b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{\"id\":\"msg_1\",\"content\":["[..],
            ),
        ] {
            let base_url = raw_server(reply).await;
            let client = ModelClient::new(EndpointConfig {
                base_url,
                protocol: Protocol::Anthropic,
                api_key_env: None,
                request_timeout_ms: 5_000,
                retry: policy.clone(),
            })
            .unwrap();
            let mut probe = Probe::default();
            let err = client.call_gated(&req(), &mut probe).await.unwrap_err();
            assert!(
                matches!(err, CallError::Model(ModelError::RetriesExhausted { billed_unknown_attempts: 2, .. })),
                "{what}: {err:?}"
            );
            assert_eq!(
                probe.failed,
                vec![(0, Billing::Unknown), (1, Billing::Unknown)],
                "{what}"
            );
        }
        // A status that bills nothing stays not billed even if its body breaks.
        let base_url =
            raw_server(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\n\r\nbusy")
                .await;
        let client = ModelClient::new(EndpointConfig {
            base_url,
            protocol: Protocol::Anthropic,
            api_key_env: None,
            request_timeout_ms: 5_000,
            retry: policy,
        })
        .unwrap();
        let mut probe = Probe::default();
        let _ = client.call_gated(&req(), &mut probe).await.unwrap_err();
        assert_eq!(
            probe.failed,
            vec![(0, Billing::NotBilled), (1, Billing::NotBilled)]
        );
    }

    #[tokio::test]
    async fn no_attempt_and_no_backoff_outlives_the_deadline() {
        // A server that takes 3 s, a request timeout of 60 s, a deadline of
        // 300 ms: the attempt is cut at the deadline and counted as maybe
        // billed (the server had it).
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(ok_body(Protocol::Openai))
                    .set_delay(Duration::from_secs(3)),
            )
            .mount(&server)
            .await;
        let mut c = cfg(&server, Protocol::Openai, None);
        c.request_timeout_ms = 60_000;
        let client = ModelClient::new(c).unwrap();
        let t = Instant::now();
        let mut probe = Probe {
            deadline: Some(t + Duration::from_millis(300)),
            ..Probe::default()
        };
        match client.call_gated(&req(), &mut probe).await.unwrap_err() {
            CallError::Model(ModelError::Deadline { attempts: 1, last }) => {
                assert!(last.contains("timeout"), "{last}")
            }
            e => panic!("{e:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(probe.failed, vec![(0, Billing::Unknown)]);

        // A 429 asking for 60 s: the backoff sleeps only until the deadline.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "60")
                    .set_body_string("slow down"),
            )
            .mount(&server)
            .await;
        let mut c = cfg(&server, Protocol::Openai, None);
        c.retry.retry_after_cap_ms = 60_000;
        let client = ModelClient::new(c).unwrap();
        let t = Instant::now();
        let mut probe = Probe {
            deadline: Some(t + Duration::from_millis(300)),
            ..Probe::default()
        };
        match client.call_gated(&req(), &mut probe).await.unwrap_err() {
            CallError::Model(ModelError::Deadline { attempts: 1, .. }) => {}
            e => panic!("{e:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(probe.failed, vec![(0, Billing::NotBilled)]);

        // A deadline already past: no attempt at all.
        let mut probe = Probe {
            deadline: Some(Instant::now()),
            ..Probe::default()
        };
        assert!(matches!(
            client.call_gated(&req(), &mut probe).await.unwrap_err(),
            CallError::Model(ModelError::Deadline { attempts: 0, .. })
        ));
        assert!(probe.before.is_empty());
    }

    #[tokio::test]
    async fn sampling_settings_are_sent_and_seed_only_to_openai() {
        for protocol in [Protocol::Openai, Protocol::Anthropic] {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(protocol)))
                .mount(&server)
                .await;
            let plain = ModelClient::new(cfg(&server, protocol, None)).unwrap();
            plain.call(&req()).await.unwrap();
            let sampled = ModelClient::new(cfg(&server, protocol, None))
                .unwrap()
                .with_sampling(Sampling {
                    temperature: Some(0.8),
                    seed: Some(41),
                    ..Sampling::default()
                });
            sampled.call(&req()).await.unwrap();
            let got = server.received_requests().await.unwrap();
            let bodies: Vec<Value> = got
                .iter()
                .map(|r| serde_json::from_slice(&r.body).unwrap())
                .collect();
            assert_eq!(bodies.len(), 2);
            // Unset: omitted, so the endpoint's defaults apply.
            assert!(bodies[0].get("temperature").is_none(), "{}", bodies[0]);
            assert!(bodies[0].get("seed").is_none());
            assert_eq!(bodies[1]["temperature"], 0.8);
            match protocol {
                Protocol::Openai => assert_eq!(bodies[1]["seed"], 41),
                // The Messages API has no seed; sending one would be a 400.
                Protocol::Anthropic => assert!(bodies[1].get("seed").is_none(), "{}", bodies[1]),
            }
        }
    }

    #[tokio::test]
    async fn json_object_dialect_rewrites_response_format_for_llama_cpp() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Openai)))
            .mount(&server)
            .await;
        let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let mut r = req();
        r.json_schema = Some(schema.clone());
        for style in [StructuredOutput::JsonSchema, StructuredOutput::JsonObject] {
            ModelClient::new(cfg(&server, Protocol::Openai, None))
                .unwrap()
                .with_sampling(Sampling {
                    structured_output: style,
                    ..Sampling::default()
                })
                .call(&r)
                .await
                .unwrap();
        }
        let got = server.received_requests().await.unwrap();
        let rf: Vec<Value> = got
            .iter()
            .map(|q| serde_json::from_slice::<Value>(&q.body).unwrap()["response_format"].clone())
            .collect();
        assert_eq!(rf[0]["type"], "json_schema");
        assert_eq!(rf[0]["json_schema"]["schema"], schema);
        assert_eq!(rf[1], json!({"type": "json_object", "schema": schema}));
    }

    #[tokio::test]
    async fn api_key_is_sent_but_never_leaks() {
        const KEY: &str = "sk-test-SECRET-0123456789";
        let env = key_env("LEAK", Some(KEY));

        // Anthropic: x-api-key; the server echoes the key in its 401 body.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(header("x-api-key", KEY))
            .respond_with(
                ResponseTemplate::new(401)
                    .set_body_string(format!("Incorrect API key provided: {KEY}")),
            )
            .expect(1)
            .mount(&server)
            .await;
        let c = cfg(&server, Protocol::Anthropic, Some(&env));
        let client = ModelClient::new(c.clone()).unwrap();
        let err = client.call(&req()).await.unwrap_err();
        assert!(
            matches!(err, ModelError::Rejected { status: 401, .. }),
            "{err:?}"
        );
        for s in [
            err.to_string(),
            format!("{err:?}"),
            format!("{client:?}"),
            format!("{c:?}"),
        ] {
            assert!(!s.contains(KEY), "key leaked: {s}");
        }
        assert!(err.to_string().contains("[REDACTED]"));

        // OpenAI: bearer token; echoed in a 5xx body that ends up in `last`.
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(ResponseTemplate::new(500).set_body_string(format!("bad key {KEY}")))
            .mount(&server)
            .await;
        let client = ModelClient::new(cfg(&server, Protocol::Openai, Some(&env))).unwrap();
        let err = client.call(&req()).await.unwrap_err();
        assert!(
            matches!(err, ModelError::RetriesExhausted { attempts: 3, .. }),
            "{err:?}"
        );
        assert!(!err.to_string().contains(KEY) && !format!("{err:?}").contains(KEY));
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            3,
            "bearer header matched every attempt"
        );

        // Empty env var: no auth header (replay needs none).
        let empty = key_env("EMPTY", Some(""));
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(Protocol::Openai)))
            .mount(&server)
            .await;
        ModelClient::new(cfg(&server, Protocol::Openai, Some(&empty)))
            .unwrap()
            .call(&req())
            .await
            .unwrap();
        assert!(server.received_requests().await.unwrap()[0]
            .headers
            .get("authorization")
            .is_none());
    }

    #[test]
    fn bad_config_is_a_config_error() {
        let base = EndpointConfig {
            base_url: "not a url".into(),
            protocol: Protocol::Openai,
            api_key_env: None,
            request_timeout_ms: 1000,
            retry: RetryPolicy::default(),
        };
        assert!(matches!(
            ModelClient::new(base.clone()),
            Err(ModelError::Config(_))
        ));
        let ftp = EndpointConfig {
            base_url: "ftp://x/v1".into(),
            ..base.clone()
        };
        assert!(matches!(ModelClient::new(ftp), Err(ModelError::Config(_))));
        let zero = EndpointConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            request_timeout_ms: 0,
            ..base.clone()
        };
        assert!(matches!(ModelClient::new(zero), Err(ModelError::Config(_))));
        let ok = ModelClient::new(EndpointConfig {
            base_url: "http://127.0.0.1:1/v1/".into(),
            ..base
        })
        .unwrap();
        assert_eq!(ok.url(), "http://127.0.0.1:1/v1/chat/completions");
    }

    #[test]
    fn endpoint_config_deserialises_with_defaults() {
        let c: EndpointConfig =
            serde_json::from_value(json!({"base_url": "http://h/v1", "protocol": "openai"}))
                .unwrap();
        assert_eq!(c.request_timeout_ms, 120_000);
        assert_eq!(c.retry, RetryPolicy::default());
        assert_eq!(c.api_key_env, None);
    }

    #[test]
    fn recording_miss_detection() {
        let body = br#"{"error":{"type":"recording_miss","message":"nope"}}"#;
        assert_eq!(recording_miss(body, false).as_deref(), Some("nope"));
        assert_eq!(recording_miss(b"plain", true).as_deref(), Some("plain"));
        assert_eq!(
            recording_miss(
                br#"{"error":{"type":"not_found_error","message":"x"}}"#,
                false
            ),
            None
        );
        assert_eq!(recording_miss(b"", false), None);
    }
}
