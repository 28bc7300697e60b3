//! The live proxy: a small HTTP server on 127.0.0.1 that the harness
//! subprocess is pointed at (`--base-url`) instead of a replay server. Each
//! POST is checked against the command-wide budget, forwarded to the one
//! upstream endpoint with the API key added here, booked, optionally kept for
//! a cassette, and answered back.
//!
//! URLs: `http://127.0.0.1:P/live/<key>/<run>` (+ `/v1` for the openai
//! protocol), so the harness's own endpoint path completes them exactly as
//! it completes a replay base URL: `.../v1/chat/completions` or
//! `.../v1/messages`. `<key>` is the case id (`bench run`, `bench record`) or
//! `<arm>~<case id>` (`bench ab`); each case-run is registered before its
//! harness starts and unregistered after it ends.
//!
//! The key: read once from the environment variable named by
//! `--api-key-env`, held in memory only, put in a header marked sensitive,
//! and scrubbed from every upstream body before the harness or a cassette
//! sees it. Nothing the harness sends is forwarded but the body and its
//! `x-harness-call-role/key/attempt` headers: any auth header it sends is
//! dropped. The harness itself runs with the variable
//! removed from its environment.
//!
//! Limits: request bodies up to `MAX_REQUEST_BYTES` (413 beyond), response
//! bodies up to the harness client's own cap, an upstream timeout of the
//! case-run's `model.request_timeout_s` less a second (so the proxy answers
//! 504 before the harness gives up on it), at most `max_in_flight` upstream
//! requests at once (a semaphore), `CONNECTIONS_MAX` open connections,
//! `CAPTURE_MAX_PER_RUN` requests kept per case-run.

use super::budget::{worst_case_usage, Budget, Caps, Refusal};
use bytes::Bytes;
use harness::ledger::{Price, PriceTable};
use harness::model::headers::{HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE};
use harness::model::{parse_response, Protocol};
use harness::replay::Captured;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

mod hybrid;
pub use hybrid::{sticky_probe, ProbeError};

/// Request bodies the proxy accepts (a harness request is tens of KiB).
pub const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// Upstream bodies are read up to the harness client's own cap.
pub const MAX_RESPONSE_BYTES: usize = harness::model::client::MAX_RESPONSE_BYTES;
/// Upper bound of the upstream timeout (the spec allows at most 3600 s).
pub const UPSTREAM_TIMEOUT_MAX: Duration = Duration::from_secs(3600);
/// Characters of an endpoint's error body quoted in why a call went
/// unanswered (a 429's or 529's message says what the endpoint refused).
pub const ENDPOINT_ERROR_SHOWN_MAX_CHARS: usize = 200;
/// Open connections from harness processes at once.
pub const CONNECTIONS_MAX: usize = 256;
/// Upstream requests in flight at once, whatever `--max-concurrency` says.
pub const IN_FLIGHT_MAX: usize = 64;
/// Requests kept per case-run for scoring (as the replay server does).
pub const CAPTURE_MAX_PER_RUN: usize = harness::replay::server::CAPTURE_MAX_PER_RUN;
/// Exchanges kept per case-run for a cassette (its per-file interaction cap),
/// and their bytes (request + response bodies; a cassette file is at most
/// this large anyway).
pub const EXCHANGES_MAX_PER_RUN: usize = harness::replay::cassette::MAX_INTERACTIONS;
pub const EXCHANGE_BYTES_MAX_PER_RUN: usize =
    harness::replay::cassette::MAX_CASSETTE_BYTES as usize;
/// Request bytes kept per case-run for scoring.
pub const CAPTURE_BYTES_MAX_PER_RUN: usize = 64 * 1024 * 1024;

/// How the proxy is set up for one command.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The upstream base URL, same convention as the harness's: Anthropic
    /// without `/v1`, OpenAI-compatible ending in `/v1`.
    pub endpoint: String,
    /// The NAME of the environment variable holding the key.
    pub api_key_env: Option<String>,
    pub caps: Caps,
    /// Upstream requests in flight at once.
    pub max_in_flight: usize,
    /// `--model`: the only model a live call may ask for (a call for another
    /// is refused before anything is sent); None: any priced model.
    pub live_model: Option<String>,
}

/// What the proxy needs to know about one registered case-run.
#[derive(Debug, Clone)]
pub struct RunReg {
    pub protocol: Protocol,
    /// The case-run's own run-spec price table: worst cases and bookings
    /// are priced with the price of the model each request names.
    pub prices: PriceTable,
    pub timeout: Duration,
    /// Keep the exchanges (for a cassette).
    pub record: bool,
    /// Hybrid: this case-run's replay base URL
    /// (`http://127.0.0.1:P/replay/<case>/<run>`). Its recording answers
    /// every call until the first one it did not see; from that call on, the
    /// case-run goes live (`hybrid`).
    pub replay: Option<String>,
}

/// One request and the response it got, as forwarded.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub role: String,
    pub call_key: String,
    pub attempt: u32,
    pub request: Value,
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub latency_ms: u64,
}

/// Everything the proxy kept about one case-run.
#[derive(Debug, Default)]
pub struct RunTraffic {
    /// Forwarded exchanges, in arrival order (only when registered to record).
    pub exchanges: Vec<Exchange>,
    /// Every request received (for the scorer's request expectations).
    pub captured: Vec<Captured>,
    /// Calls the command-wide budget refused: the case-run is incomplete.
    pub refused: Vec<String>,
    /// Requests refused by the proxy for another reason (no price, no
    /// max_tokens, bad body, wrong path), each with its message.
    pub rejected: Vec<String>,
    /// Exchanges beyond `EXCHANGES_MAX_PER_RUN` / `EXCHANGE_BYTES_MAX_PER_RUN`
    /// that could not be kept.
    pub dropped: u64,
    /// Calls answered by the recording (hybrid) and calls sent upstream.
    pub replayed: u64,
    pub live: u64,
    /// What this case-run's live calls were booked at.
    pub live_usd: f64,
    /// Hybrid: why the recording stopped answering (the replay server's miss
    /// for the first request it did not see); every later call went live.
    pub diverged: Option<String>,
    /// Live calls the upstream failed (the proxy answered for it).
    pub upstream_failed: Vec<String>,
    /// Call key -> the endpoint's error answer (429, 529, any non-2xx), for
    /// each call whose last live answer was one: a call retried to a model
    /// answer leaves it; one that ran out of retries (or was not retried)
    /// stays, and the case-run measured the outage, not the model.
    pub unanswered: BTreeMap<String, String>,
    /// Live calls sent and not yet answered, and the dollars reserved for
    /// them: a case-run that ends with one in flight (the endpoint slower
    /// than the run's clock) counts it at its reservation.
    pub in_flight: u32,
    pub in_flight_usd: f64,
    kept_bytes: usize,
    captured_bytes: usize,
}

struct Slot {
    reg: RunReg,
    traffic: RunTraffic,
}

/// The key in memory only. Debug never shows it.
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

struct Shared {
    endpoint: String,
    upstream_host: String,
    key: Option<Secret>,
    http: reqwest::Client,
    budget: Arc<Budget>,
    upstream_slots: Arc<Semaphore>,
    runs: Mutex<HashMap<String, Slot>>,
    case_runs_done: AtomicU64,
    cap_after: Mutex<Option<u64>>,
    /// `--model`: the only model a live call may ask the endpoint for.
    live_model: Option<String>,
    /// Hybrid: the client that asks the (loopback) replay server first.
    local: reqwest::Client,
}

/// The running proxy. Dropping it stops accepting connections.
pub struct LiveProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for LiveProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Why the proxy cannot start: a flag or the key's variable is wrong, or
/// the machine refused a client or the listener. Never holds the key.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("--api-key-env {0:?}: expected the NAME of an environment variable (letters, digits, _), never the key itself")]
    EnvName(String),
    #[error("--api-key-env {0}: the variable is not set or empty")]
    KeyUnset(String),
    #[error("--api-key-env {0}: the variable holds characters not allowed in an HTTP header")]
    KeyNotHeader(String),
    #[error("--endpoint {endpoint:?}: not a valid URL: {cause}")]
    NotUrl { endpoint: String, cause: String },
    #[error("--endpoint {0:?}: expected an http:// or https:// URL")]
    NotHttp(String),
    #[error("--endpoint: credentials in the URL are refused; put the key in the variable named by --api-key-env")]
    Credentials,
    #[error("--endpoint: a query string is refused (it could carry a key)")]
    Query,
    #[error("--endpoint: the URL has no host")]
    NoHost,
    /// `which`: "upstream" or "replay".
    #[error("cannot build the {which} HTTP client: {cause}")]
    Client {
        which: &'static str,
        cause: reqwest::Error,
    },
    #[error("cannot bind the live proxy on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    #[error("live proxy address: {0}")]
    Address(std::io::Error),
}

/// `NAME` is a plausible environment variable name.
pub fn check_env_name(name: &str) -> Result<(), ProxyError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(ProxyError::EnvName(name.to_string()))
    }
}

/// Host (and port) of the endpoint, for provenance: never a path, query or
/// user info.
pub fn endpoint_host(endpoint: &str) -> Result<String, ProxyError> {
    let u = reqwest::Url::parse(endpoint).map_err(|e| ProxyError::NotUrl {
        endpoint: endpoint.to_string(),
        cause: e.to_string(),
    })?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(ProxyError::NotHttp(endpoint.to_string()));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(ProxyError::Credentials);
    }
    if u.query().is_some() {
        return Err(ProxyError::Query);
    }
    let host = u.host_str().ok_or(ProxyError::NoHost)?;
    Ok(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

fn is_loopback(endpoint: &str) -> bool {
    reqwest::Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| {
            h.eq_ignore_ascii_case("localhost")
                || h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
}

/// Replace every occurrence of `key` in `body` (an upstream echoing the key
/// back in an error must not put it in a report or a cassette).
fn scrub(body: Vec<u8>, key: Option<&Secret>) -> Vec<u8> {
    let Some(k) = key.map(|k| k.0.as_bytes()).filter(|k| !k.is_empty()) else {
        return body;
    };
    if body.len() < k.len() {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(k) {
            out.extend_from_slice(b"[REDACTED]");
            i += k.len();
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

fn error_response(status: u16, kind: &str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// The proxy's own error body, for a response it makes up (502, 504).
fn error_body(kind: &str, message: &str) -> Vec<u8> {
    json!({"type": "error", "error": {"type": kind, "message": message}})
        .to_string()
        .into_bytes()
}

/// The key from the variable `name` (checked to be a variable's name, not
/// a key pasted in its place). Errors name the variable, never the value.
fn read_key(name: &str) -> Result<Secret, ProxyError> {
    check_env_name(name)?;
    match std::env::var(name) {
        Ok(k) if !k.is_empty() => {
            if k.chars().any(|c| c.is_control()) {
                return Err(ProxyError::KeyNotHeader(name.to_string()));
            }
            Ok(Secret(k))
        }
        _ => Err(ProxyError::KeyUnset(name.to_string())),
    }
}

/// The client that carries the key upstream: never redirected (a redirect
/// could carry the key to another host), never through a proxy to a
/// loopback endpoint.
fn upstream_client(endpoint: &str) -> Result<reqwest::Client, ProxyError> {
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .connect_timeout(Duration::from_secs(10))
        .timeout(UPSTREAM_TIMEOUT_MAX)
        // A redirect could carry the key to another host.
        .redirect(reqwest::redirect::Policy::none());
    if is_loopback(endpoint) {
        b = b.no_proxy();
    }
    b.build().map_err(|cause| ProxyError::Client {
        which: "upstream",
        cause,
    })
}

/// Accept harness connections, at most `CONNECTIONS_MAX` open at once,
/// each served on its own task.
async fn accept_loop(listener: tokio::net::TcpListener, sh: Arc<Shared>) {
    let conns = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    loop {
        let Ok(permit) = conns.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // EMFILE and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let sh = sh.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let sh = sh.clone();
                async move { Ok::<_, Infallible>(handle(sh, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            drop(permit);
        });
    }
}

impl LiveProxy {
    /// Read the key, build the upstream client, bind 127.0.0.1:0 and serve.
    /// Errors name the flag or the variable; never the key.
    pub async fn start(cfg: ProxyConfig) -> Result<LiveProxy, ProxyError> {
        let upstream_host = endpoint_host(&cfg.endpoint)?;
        let key = match &cfg.api_key_env {
            Some(name) => Some(read_key(name)?),
            None => None,
        };
        let http = upstream_client(&cfg.endpoint)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(ProxyError::Bind)?;
        let addr = listener.local_addr().map_err(ProxyError::Address)?;
        let shared = Arc::new(Shared {
            endpoint: cfg.endpoint.trim_end_matches('/').to_string(),
            upstream_host,
            key,
            http,
            budget: Budget::new(cfg.caps),
            upstream_slots: Arc::new(Semaphore::new(cfg.max_in_flight.clamp(1, IN_FLIGHT_MAX))),
            runs: Mutex::new(HashMap::new()),
            case_runs_done: AtomicU64::new(0),
            cap_after: Mutex::new(None),
            live_model: cfg.live_model.clone(),
            local: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|cause| ProxyError::Client {
                    which: "replay",
                    cause,
                })?,
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(LiveProxy {
            addr,
            shared,
            accept,
        })
    }

    pub fn budget(&self) -> &Arc<Budget> {
        &self.shared.budget
    }

    /// Host (and port) of the upstream, for provenance.
    pub fn upstream_host(&self) -> &str {
        &self.shared.upstream_host
    }

    fn slot_key(key: &str, run: u32) -> String {
        format!("{key}/{run}")
    }

    /// Register a case-run; returns the harness's `--base-url`.
    pub fn register(&self, key: &str, run: u32, reg: RunReg) -> String {
        let mut base = format!("http://{}/live/{key}/{run}", self.addr);
        if reg.protocol == Protocol::Openai {
            base.push_str("/v1");
        }
        self.shared.lock_runs().insert(
            Self::slot_key(key, run),
            Slot {
                reg,
                traffic: RunTraffic::default(),
            },
        );
        base
    }

    /// Unregister a case-run and hand back what it sent and got.
    pub fn finish(&self, key: &str, run: u32) -> RunTraffic {
        self.shared
            .lock_runs()
            .remove(&Self::slot_key(key, run))
            .map(|s| s.traffic)
            .unwrap_or_default()
    }

    /// Count a case-run that has ended (for "the cap was reached after N").
    pub fn case_run_done(&self) {
        self.shared.case_runs_done.fetch_add(1, Ordering::SeqCst);
    }

    /// How many case-runs had ended when the cap first refused a call.
    pub fn cap_reached_after(&self) -> Option<u64> {
        *self
            .shared
            .cap_after
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

impl Shared {
    fn lock_runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn with_slot(&self, slot: &str, f: impl FnOnce(&mut RunTraffic)) {
        if let Some(s) = self.lock_runs().get_mut(slot) {
            f(&mut s.traffic);
        }
    }

    /// A request refused before anything was sent, noted on its case-run.
    fn reject(&self, slot: &str, status: u16, msg: String) -> Response<Full<Bytes>> {
        self.with_slot(slot, |t| t.rejected.push(msg.clone()));
        error_response(status, "live_proxy", &msg)
    }

    /// Keep an exchange for the case-run's cassette, within its limits.
    fn keep(
        &self,
        slot: &str,
        call: &Call,
        request: &Value,
        request_len: usize,
        answer: &Forwarded,
    ) {
        let size = request_len + answer.body.len();
        self.with_slot(slot, |t| {
            if t.exchanges.len() < EXCHANGES_MAX_PER_RUN
                && t.kept_bytes + size <= EXCHANGE_BYTES_MAX_PER_RUN
            {
                t.kept_bytes += size;
                t.exchanges.push(Exchange {
                    role: call.role.clone(),
                    call_key: call.key.clone(),
                    attempt: call.attempt,
                    request: request.clone(),
                    status: answer.status,
                    content_type: answer.content_type.clone(),
                    body: answer.body.clone(),
                    latency_ms: answer.latency_ms,
                });
            } else {
                t.dropped += 1;
            }
        });
    }

    /// The call's model (the one `--model` allows, if given), its
    /// `max_tokens` and its price: without them its worst case cannot be
    /// bounded, and it is refused before anything is sent.
    fn price_call(
        &self,
        slot: &str,
        reg: &RunReg,
        request: &Value,
    ) -> Result<(Price, u64), Box<Reply>> {
        let Some(model) = request
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return Err(self.refuse(
                slot,
                "request body: field `model`: expected the model name (a string)".into(),
            ));
        };
        if let Some(only) = &self.live_model {
            if *only != model {
                return Err(self.refuse(
                    slot,
                    format!("request body: field `model`: the live endpoint is used for --model {only:?} only, and this call asks for {model:?}; nothing was sent"),
                ));
            }
        }
        let Some(max_tokens) = request
            .get("max_tokens")
            .or_else(|| request.get("max_completion_tokens"))
            .and_then(Value::as_u64)
        else {
            return Err(self.refuse(
                slot,
                "request body: field `max_tokens`: expected a number; without it the worst case of the call cannot be bounded".into(),
            ));
        };
        let Some(price) = reg.prices.get(&model).copied() else {
            return Err(self.refuse(
                slot,
                format!("model {model:?} has no price in the case-run's run spec ([prices.\"{model}\"]); the budget cannot price it"),
            ));
        };
        Ok((price, max_tokens))
    }

    /// A call refused before anything was sent (400), for a step that
    /// returns the refusal as its error.
    fn refuse(&self, slot: &str, msg: String) -> Box<Reply> {
        Box::new(self.reject(slot, 400, msg))
    }

    /// Keep a received request for scoring, within the case-run's limits.
    fn capture(&self, slot: &str, call: &Call, body: &Bytes) {
        self.with_slot(slot, |t| {
            if t.captured.len() < CAPTURE_MAX_PER_RUN
                && t.captured_bytes + body.len() <= CAPTURE_BYTES_MAX_PER_RUN
            {
                t.captured_bytes += body.len();
                t.captured.push(Captured {
                    call_key: call.key.clone(),
                    attempt: call.attempt,
                    body: String::from_utf8_lossy(body).into_owned(),
                });
            }
        });
    }

    fn note_refusal(&self, slot: &str, r: &Refusal) {
        let mut after = self.cap_after.lock().unwrap_or_else(|p| p.into_inner());
        after.get_or_insert(self.case_runs_done.load(Ordering::SeqCst));
        drop(after);
        self.with_slot(slot, |t| t.refused.push(r.message.clone()));
    }
}

/// `/live/<key>/<run><tail>` -> (key, run, tail).
fn route(path: &str) -> Option<(&str, u32, &str)> {
    let rest = path.strip_prefix("/live/")?;
    let (key, rest) = rest.split_once('/')?;
    let (run, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if key.is_empty() {
        return None;
    }
    Some((key, run.parse().ok()?, tail))
}

fn header_str(req: &Request<Incoming>, name: &str) -> String {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

type Reply = Response<Full<Bytes>>;

async fn handle(sh: Arc<Shared>, req: Request<Incoming>) -> Reply {
    let path = req.uri().path().to_string();
    let (slot, reg, tail) = match registered_run(&sh, &req, &path) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let call = Call {
        role: header_str(&req, HEADER_CALL_ROLE),
        key: header_str(&req, HEADER_CALL_KEY),
        attempt: header_str(&req, HEADER_ATTEMPT).parse().unwrap_or(0),
    };
    let (body, request) = match read_request(&sh, &slot, req).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    sh.capture(&slot, &call, &body);
    // Hybrid: the recording answers while it saw this request.
    if let Some(replay) = &reg.replay {
        if let Some(answer) =
            hybrid::from_recording(&sh, &slot, &reg, replay, tail, &call, &body).await
        {
            if reg.record {
                sh.keep(&slot, &call, &request, body.len(), &answer);
            }
            return respond(answer);
        }
    }
    go_live(sh, slot, reg, call, body, request).await
}

/// The registered case-run a POST to `path` is for: its slot, registration
/// and endpoint tail, or the refusal (another method, an unknown URL or
/// case-run, another protocol's endpoint).
fn registered_run<'p>(
    sh: &Shared,
    req: &Request<Incoming>,
    path: &'p str,
) -> Result<(String, RunReg, &'p str), Box<Reply>> {
    if req.method() != Method::POST {
        return Err(Box::new(error_response(
            405,
            "live_proxy",
            &format!("{} {path}: the live proxy takes POST only", req.method()),
        )));
    }
    let Some((key, run, tail)) = route(path) else {
        return Err(Box::new(error_response(
            404,
            "live_proxy",
            &format!("{path}: expected /live/<case>/<run>/<endpoint path>"),
        )));
    };
    let slot = format!("{key}/{run}");
    let Some(reg) = sh.lock_runs().get(&slot).map(|s| s.reg.clone()) else {
        return Err(Box::new(error_response(
            404,
            "live_proxy",
            &format!("no case-run registered as {slot}"),
        )));
    };
    let want = harness::replay::cassette::endpoint_path(reg.protocol);
    if tail != want {
        let msg = format!(
            "{path}: expected {want} after the base URL for protocol {}",
            reg.protocol.as_str()
        );
        sh.with_slot(&slot, |t| t.rejected.push(msg.clone()));
        return Err(Box::new(error_response(404, "live_proxy", &msg)));
    }
    Ok((slot, reg, tail))
}

/// The request's body (bounded) and its JSON object. Only the body goes
/// on: whatever auth the harness might send is dropped with the rest of
/// its headers.
async fn read_request(
    sh: &Shared,
    slot: &str,
    req: Request<Incoming>,
) -> Result<(Bytes, Value), Reply> {
    let body = match Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let too_big = e.is::<http_body_util::LengthLimitError>();
            let msg = if too_big {
                format!("request body over {MAX_REQUEST_BYTES} bytes")
            } else {
                format!("request body unreadable: {e}")
            };
            sh.with_slot(slot, |t| t.rejected.push(msg.clone()));
            return Err(error_response(
                if too_big { 413 } else { 400 },
                "live_proxy",
                &msg,
            ));
        }
    };
    match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => Ok((body, v)),
        Ok(_) => Err(sh.reject(slot, 400, "request body: expected a JSON object".into())),
        Err(e) => Err(sh.reject(slot, 400, format!("request body: not JSON: {e}"))),
    }
}

/// The call's position, as the harness sent it in its headers.
pub(super) struct Call {
    role: String,
    key: String,
    attempt: u32,
}

impl Call {
    fn headers(&self) -> [(&'static str, String); 3] {
        [
            (HEADER_CALL_ROLE, self.role.clone()),
            (HEADER_CALL_KEY, self.key.clone()),
            (HEADER_ATTEMPT, self.attempt.to_string()),
        ]
    }
}

/// Price the call, reserve its worst case under the command-wide cap, send
/// it upstream with the key, book what it cost, keep it and answer it.
async fn go_live(
    sh: Arc<Shared>,
    slot: String,
    reg: RunReg,
    call: Call,
    body: Bytes,
    request: Value,
) -> Reply {
    let (price, max_tokens) = match sh.price_call(&slot, &reg, &request) {
        Ok(priced) => priced,
        Err(refused) => return *refused,
    };
    let Ok(permit) = sh.upstream_slots.clone().acquire_owned().await else {
        return error_response(503, "live_proxy", "the proxy is shutting down");
    };
    let hold = match sh
        .budget
        .reserve(&price, &worst_case_usage(body.len(), max_tokens))
    {
        Ok(h) => h,
        Err(r) => {
            sh.note_refusal(&slot, &r);
            return error_response(402, "command_cap_reached", &r.message);
        }
    };
    let request_len = body.len();
    let reserved_usd = hold.usd();
    // Counted as sent before it is sent: a case-run that ends before the
    // answer (its clock ran out) still shows the call and its dollars.
    sh.with_slot(&slot, |t| {
        t.live += 1;
        t.in_flight += 1;
        t.in_flight_usd += reserved_usd;
    });
    // In its own task, so a harness that hangs up mid-call cannot cut the
    // upstream call off unbooked: it runs to the end and books what it cost.
    let task = tokio::spawn(forward(
        sh.clone(),
        reg.clone(),
        call.headers(),
        body,
        price,
        hold,
        permit,
        max_tokens,
    ));
    let fwd = match task.await {
        Ok(f) => f,
        Err(e) => {
            let why = format!("forwarding failed: {e}");
            sh.with_slot(&slot, |t| {
                t.in_flight -= 1;
                t.in_flight_usd -= reserved_usd;
                t.live_usd += reserved_usd;
                t.upstream_failed.push(why.clone());
            });
            return error_response(502, "live_proxy", &why);
        }
    };
    sh.with_slot(&slot, |t| {
        t.in_flight -= 1;
        t.in_flight_usd -= reserved_usd;
        t.live_usd += fwd.booked_usd;
        if let Some(why) = &fwd.failed {
            t.upstream_failed.push(why.clone());
        }
        if (200..300).contains(&fwd.status) && fwd.failed.is_none() {
            t.unanswered.remove(&call.key);
        } else {
            let why = fwd.failed.clone().unwrap_or_else(|| {
                format!(
                    "the endpoint answered call {} with HTTP {}: {}",
                    call.key,
                    fwd.status,
                    harness::text::clip_chars(
                        String::from_utf8_lossy(&fwd.body).trim(),
                        ENDPOINT_ERROR_SHOWN_MAX_CHARS
                    )
                )
            });
            t.unanswered.insert(call.key.clone(), why);
        }
    });
    if reg.record {
        sh.keep(&slot, &call, &request, request_len, &fwd);
    }
    respond(fwd)
}

/// The answer as the harness gets it: status, body, content type and
/// Retry-After; nothing else of the upstream's headers.
fn respond(fwd: Forwarded) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(fwd.body)));
    *r.status_mut() = StatusCode::from_u16(fwd.status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, v) in [
        (hyper::header::CONTENT_TYPE, fwd.content_type),
        (hyper::header::RETRY_AFTER, fwd.retry_after),
    ] {
        if let Some(hv) = v.and_then(|v| hyper::header::HeaderValue::from_str(&v).ok()) {
            r.headers_mut().insert(name, hv);
        }
    }
    r
}

/// An answer to one call: from upstream, made up by the proxy when the
/// upstream failed, or (hybrid) from the recording.
struct Forwarded {
    status: u16,
    content_type: Option<String>,
    retry_after: Option<String>,
    body: Vec<u8>,
    latency_ms: u64,
    /// What the call was booked at under the command-wide cap ($0 replayed).
    booked_usd: f64,
    /// Set when the proxy made the answer up because the upstream failed
    /// (no connection, a timeout, an unreadable body): no model answered.
    failed: Option<String>,
}

/// The answer the proxy makes up when the upstream failed.
fn made_up(status: u16, msg: String, t0: Instant, booked_usd: f64) -> Forwarded {
    Forwarded {
        status,
        content_type: Some("application/json".into()),
        retry_after: None,
        body: error_body("live_proxy_upstream", &msg),
        latency_ms: t0.elapsed().as_millis().min(u64::MAX as u128) as u64,
        booked_usd,
        failed: Some(msg),
    }
}

async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    if resp.content_length().is_some_and(|l| l > cap as u64) {
        return Err(format!("upstream body exceeds the {cap}-byte cap"));
    }
    let mut buf = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if buf.len() + c.len() > cap {
                    return Err(format!("upstream body exceeds the {cap}-byte cap"));
                }
                buf.extend_from_slice(&c);
            }
            Ok(None) => return Ok(buf),
            Err(e) => return Err(format!("upstream body read failed: {e}")),
        }
    }
}

#[allow(clippy::too_many_arguments)] // one call's every fact, moved into its task
async fn forward(
    sh: Arc<Shared>,
    reg: RunReg,
    call: [(&'static str, String); 3],
    body: Bytes,
    price: Price,
    hold: super::budget::Hold,
    _permit: tokio::sync::OwnedSemaphorePermit,
    max_tokens: u64,
) -> Forwarded {
    use reqwest::header::CONTENT_TYPE;
    let bound = worst_case_usage(body.len(), max_tokens);
    let rb = upstream_request(&sh, &reg, call, body);
    let t0 = Instant::now();
    let ms = |t0: Instant| t0.elapsed().as_millis().min(u64::MAX as u128) as u64;
    let resp = match rb.send().await {
        Ok(r) => r,
        Err(e) => {
            hold.release();
            return send_failed(&e, &reg, t0);
        }
    };
    let status = resp.status().as_u16();
    let hdr = |n: reqwest::header::HeaderName| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = hdr(CONTENT_TYPE);
    let retry_after = hdr(reqwest::header::RETRY_AFTER);
    let ok = (200..300).contains(&status);
    let body = match read_capped(resp, MAX_RESPONSE_BYTES).await {
        Ok(b) => scrub(b, sh.key.as_ref()),
        Err(e) => {
            let booked = if ok {
                hold.book_worst() // accepted, maybe billed, unknown usage
            } else {
                hold.release();
                0.0
            };
            return made_up(502, e, t0, booked);
        }
    };
    if !ok {
        hold.release();
        return Forwarded {
            status,
            content_type,
            retry_after,
            body,
            latency_ms: ms(t0),
            booked_usd: 0.0,
            failed: None,
        };
    }
    // A 2xx is the model's answer only if it reads as one and bills what
    // the request could: otherwise it is the endpoint's fault, booked at
    // the request's worst case (it may have been billed), never at what it
    // claims, and the harness gets a 502 (retryable) instead of it.
    let booked_usd = match parse_response(reg.protocol, &body) {
        Err(e) => {
            let why = format!(
                "the endpoint answered {status} with a body that is not a {} reply ({} bytes): {e}",
                reg.protocol.as_str(),
                body.len()
            );
            return made_up(502, why, t0, hold.book_worst());
        }
        Ok(p) => match usage_above_bound(&p.usage, &bound) {
            Some(why) => return made_up(502, why, t0, hold.book_worst()),
            None => hold.book(&price, &p.usage),
        },
    };
    Forwarded {
        status,
        content_type,
        retry_after,
        body,
        latency_ms: ms(t0),
        booked_usd,
        failed: None,
    }
}

/// Why a reply's usage is more than its request could bill, if it is:
/// output tokens above the request's `max_tokens`, or input tokens (fresh,
/// cached and cache-written together) above what the request's bytes could
/// hold (one token per byte, plus the template allowance). The endpoint's
/// fault: its claim is never booked.
fn usage_above_bound(
    usage: &harness::model::Usage,
    bound: &harness::model::Usage,
) -> Option<String> {
    let input = usage
        .input_tokens
        .saturating_add(usage.cache_read_input_tokens)
        .saturating_add(usage.cache_creation_input_tokens);
    if usage.output_tokens > bound.output_tokens {
        Some(format!(
            "the endpoint's reply claims {} output tokens, above the request's max_tokens {}: refused, not booked",
            usage.output_tokens, bound.output_tokens
        ))
    } else if input > bound.input_tokens {
        Some(format!(
            "the endpoint's reply claims {input} input tokens, above the {} the request's bytes could hold: refused, not booked",
            bound.input_tokens
        ))
    } else {
        None
    }
}

/// The upstream request for one call: the body, the call's position
/// headers, and the key in the protocol's own header, marked sensitive.
fn upstream_request(
    sh: &Shared,
    reg: &RunReg,
    call: [(&'static str, String); 3],
    body: Bytes,
) -> reqwest::RequestBuilder {
    use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
    let url = format!(
        "{}{}",
        sh.endpoint,
        harness::model::endpoint_path(reg.protocol)
    );
    let mut rb = sh
        .http
        .post(&url)
        .timeout(reg.timeout.min(UPSTREAM_TIMEOUT_MAX))
        .header(CONTENT_TYPE, "application/json")
        .header(
            USER_AGENT,
            concat!("bench-live/", env!("CARGO_PKG_VERSION")),
        )
        .body(body);
    // The call's position, as the harness sent it: harmless to a hosted API,
    // and what lets a replay server stand in as the upstream.
    for (name, v) in call {
        if !v.is_empty() {
            rb = rb.header(name, v);
        }
    }
    let secret = |v: String| {
        HeaderValue::from_str(&v).ok().map(|mut h| {
            h.set_sensitive(true);
            h
        })
    };
    match reg.protocol {
        Protocol::Anthropic => {
            rb = rb.header(
                "anthropic-version",
                harness::model::client::ANTHROPIC_VERSION,
            );
            if let Some(h) = sh.key.as_ref().and_then(|k| secret(k.0.clone())) {
                rb = rb.header("x-api-key", h);
            }
        }
        Protocol::Openai => {
            if let Some(h) = sh
                .key
                .as_ref()
                .and_then(|k| secret(format!("Bearer {}", k.0)))
            {
                rb = rb.header(AUTHORIZATION, h);
            }
        }
    }
    rb
}

/// The answer made up when the request never got a response (nothing was
/// billed): 504 for a timeout, 502 otherwise.
fn send_failed(e: &reqwest::Error, reg: &RunReg, t0: Instant) -> Forwarded {
    let (status, what) = if e.is_timeout() {
        (
            504,
            format!("upstream timed out after {} ms", reg.timeout.as_millis()),
        )
    } else if e.is_connect() {
        (502, "cannot connect to the upstream".to_string())
    } else {
        (502, "upstream request failed".to_string())
    };
    // reqwest's message names the URL, which holds no key.
    made_up(status, format!("{what}: {e}"), t0, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn anthropic_ok() -> Value {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
               "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
               "stop_sequence": null,
               "usage": {"input_tokens": 100, "output_tokens": 10}})
    }

    /// The Anthropic wire: the proxy adds x-api-key and anthropic-version,
    /// drops the auth the client sent, books the usage; and the refusals
    /// (unregistered, wrong path, no price, too large, over the cap).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn anthropic_forwarding_auth_and_refusals() {
        const VAR: &str = "BENCH_PROXY_UNIT_TEST_KEY";
        const KEY: &str = "sk-ant-test-0123456789abcdefghij";
        std::env::set_var(VAR, KEY);
        let up = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", KEY))
            .and(header(
                "anthropic-version",
                harness::model::client::ANTHROPIC_VERSION,
            ))
            .and(header("x-harness-call-key", "plan/0"))
            .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_ok()))
            .mount(&up)
            .await;
        let proxy = LiveProxy::start(ProxyConfig {
            endpoint: up.uri(),
            api_key_env: Some(VAR.into()),
            caps: Caps::new(0.003, None).unwrap(),
            max_in_flight: 2,
            live_model: None,
        })
        .await
        .unwrap();
        let prices: PriceTable = [(
            "claude-x".to_string(),
            Price {
                input_usd_per_mtok: 1.0,
                output_usd_per_mtok: 5.0,
            },
        )]
        .into();
        let base = proxy.register(
            "c",
            0,
            RunReg {
                protocol: Protocol::Anthropic,
                prices,
                timeout: Duration::from_secs(10),
                record: true,
                replay: None,
            },
        );
        assert!(base.ends_with("/live/c/0"), "{base}");
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let post = |url: String, body: Vec<u8>| {
            http.post(url)
                .header("x-harness-call-role", "plan")
                .header("x-harness-call-key", "plan/0")
                .header("x-harness-attempt", "0")
                .header("x-api-key", "sk-ant-from-the-client-000000000000")
                .header("authorization", "Bearer from-the-client-0000000000")
                .body(body)
                .send()
        };
        let body = |model: &str, max: u64| {
            json!({"model": model, "max_tokens": max, "messages": [{"role": "user", "content": "hi"}]})
                .to_string()
                .into_bytes()
        };
        let r = post(format!("{base}/v1/messages"), body("claude-x", 50))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let got = up.received_requests().await.unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].headers.get("authorization").is_none());
        let s = proxy.budget().spend();
        assert_eq!(s.booked_tokens, 110);
        assert!((s.booked_usd - 0.00015).abs() < 1e-12, "{s:?}");
        // Refusals, each an error the harness will not retry.
        let too_big = vec![b' '; MAX_REQUEST_BYTES + 1];
        for (url, b, status) in [
            (
                format!("{base}/v1/chat/completions"),
                body("claude-x", 50),
                404,
            ),
            (
                base.replace("/live/c/0", "/live/nope/0") + "/v1/messages",
                body("claude-x", 50),
                404,
            ),
            (format!("{base}/v1/messages"), body("unpriced", 50), 400),
            (format!("{base}/v1/messages"), b"not json".to_vec(), 400),
            (format!("{base}/v1/messages"), too_big, 413),
            // ~1.1k tokens in at $1 + 1000 out at $5 = ~$0.006 > $0.003: over the cap.
            (format!("{base}/v1/messages"), body("claude-x", 1000), 402),
        ] {
            let r = post(url.clone(), b).await.unwrap();
            assert_eq!(r.status().as_u16(), status, "{url}");
            let v: Value = r.json().await.unwrap();
            assert!(v["error"]["message"].is_string(), "{v}");
        }
        assert_eq!(up.received_requests().await.unwrap().len(), 1);
        assert!(proxy.budget().cap_reached().is_some());
        let t = proxy.finish("c", 0);
        assert_eq!(t.exchanges.len(), 1);
        assert_eq!(t.refused.len(), 1);
        assert_eq!(t.rejected.len(), 4, "{:?}", t.rejected);
        std::env::remove_var(VAR);
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("/live/case-1/2/v1/chat/completions"),
            Some(("case-1", 2, "/v1/chat/completions"))
        );
        assert_eq!(
            route("/live/a~c/0/v1/messages"),
            Some(("a~c", 0, "/v1/messages"))
        );
        assert_eq!(route("/live/c/x/v1/messages"), None);
        assert_eq!(route("/replay/c/0/v1/messages"), None);
        assert_eq!(route("/live//0/v1"), None);
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        let k = Secret("sk-abc".into());
        assert_eq!(
            scrub(b"x sk-abc y sk-abcsk-abc".to_vec(), Some(&k)),
            b"x [REDACTED] y [REDACTED][REDACTED]".to_vec()
        );
        assert_eq!(scrub(b"sk-ab".to_vec(), Some(&k)), b"sk-ab".to_vec());
        assert_eq!(format!("{k:?}"), "[REDACTED]");
    }

    #[test]
    fn endpoint_hosts_and_env_names() {
        assert_eq!(
            endpoint_host("http://127.0.0.1:8080/v1").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            endpoint_host("https://api.anthropic.com").unwrap(),
            "api.anthropic.com"
        );
        assert!(endpoint_host("https://u:p@h/v1").is_err());
        assert!(endpoint_host("https://h/v1?key=x").is_err());
        assert!(endpoint_host("ftp://h").is_err());
        assert!(check_env_name("OPENAI_API_KEY").is_ok());
        assert!(check_env_name("sk-abc123").is_err());
        assert!(check_env_name("").is_err());
    }
}
