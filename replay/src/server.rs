//! The replay server: a wiremock `MockServer` with ONE catch-all mock whose
//! `Respond` impl answers every request from the cassette index.
//!
//! Why one mock and not one per interaction: wiremock tries mocks in order,
//! so thousands of mocks would make each request a linear scan. With one
//! mock the lookup is a couple of hash probes, and the server is stateless:
//! everything needed to answer (case, run, call_key, role, attempt) is in the
//! request itself, so one server can serve many cases and runs concurrently,
//! and answers do not depend on arrival order.
//!
//! URL layout: `<uri>/replay/<case>/<run>/<endpoint path>`, e.g.
//! `/replay/latency-p95/2/v1/messages`. Anything that does not match a
//! recording gets a 404 with `x-replay-miss: 1`: there is no fall-through to
//! anything live.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::http::{HeaderName, HeaderValue};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::cassette::{
    body_sha256, canonical_json, endpoint_path, nearest, RecordedResponse, Recordings,
    HOP_BY_HOP_HEADERS,
};
use super::faults::{FaultKind, FaultPlan};
use model::types::{CallRole, Protocol};

/// The wire headers are the model crate's (the client sends what this server
/// reads); re-exported here where a server's reader looks for them.
pub use model::headers::{
    HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE, HEADER_FAULT, HEADER_MISS,
};

/// Longest delay ever applied, whatever latency_ms x scale says.
const MAX_DELAY: Duration = Duration::from_secs(600);
/// How many recent miss messages are kept for reports.
const MISS_LOG_LEN: usize = 64;
/// Longest rendered value in a strict-mode body diff.
const DIFF_VALUE_CHARS: usize = 60;

/// How the server replays.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// Also require the canonical SHA-256 of the request body to equal the
    /// recorded `body_sha256`.
    pub strict: bool,
    /// Recorded latency is multiplied by this; 0 = as fast as possible.
    pub latency_scale: f64,
    pub faults: FaultPlan,
    /// Keep request bodies per (case, run) for `take_captured`.
    pub capture: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            strict: false,
            latency_scale: 1.0,
            faults: FaultPlan::none(),
            capture: false,
        }
    }
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ReplayError {
    Bind(std::io::Error),
    BadOptions(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Bind(e) => write!(f, "replay server cannot bind: {e}"),
            ReplayError::BadOptions(m) => write!(f, "bad replay options: {m}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// A snapshot of the server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReplayCounters {
    /// Requests answered from a recording (real responses, scripted
    /// `faults_before` and injected faults all count).
    pub served: u64,
    /// Requests answered with a 404 recording miss.
    pub misses: u64,
    /// Of `served`: faults injected by the FaultPlan.
    pub faults_injected: u64,
    /// Of `served`: scripted `faults_before` responses.
    pub scripted_faults: u64,
}

#[derive(Default)]
struct Counters {
    served: AtomicU64,
    misses: AtomicU64,
    faults_injected: AtomicU64,
    scripted_faults: AtomicU64,
}

/// A response ready to go on the wire: header names/values already parsed,
/// body already serialised, so answering never re-encodes or fails.
#[derive(Debug, Clone)]
struct Prepared {
    status: u16,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
}

impl Prepared {
    fn from_recorded(r: &RecordedResponse) -> Prepared {
        let mut headers = Vec::new();
        let mut has_content_type = false;
        for (k, v) in &r.headers {
            let lower = k.to_ascii_lowercase();
            if HOP_BY_HOP_HEADERS.contains(&lower.as_str()) {
                continue;
            }
            // Load-time checks already validated these; skipping instead of
            // unwrapping keeps the server panic-free regardless.
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(lower.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                has_content_type |= name == "content-type";
                headers.push((name, value));
            }
        }
        if !has_content_type && r.body_raw.is_none() && r.body.is_some() {
            headers.push((
                HeaderName::from_static("content-type"),
                HeaderValue::from_static("application/json"),
            ));
        }
        Prepared {
            status: r.status,
            headers,
            body: r.body_bytes(),
        }
    }

    fn template(&self, body: Vec<u8>) -> ResponseTemplate {
        // ResponseTemplate::new panics on a status outside 100..=999; the
        // cassette check bounds it to 100..=599, and this guard keeps the
        // server panic-free even for a Recordings built some other way.
        let status = if (100..=999).contains(&self.status) {
            self.status
        } else {
            500
        };
        let mut t = ResponseTemplate::new(status);
        for (name, value) in &self.headers {
            t = t.insert_header(name.clone(), value.clone());
        }
        // set_body_bytes leaves Content-Type alone (we set it from the
        // recording); set_body_raw would parse a mime and could panic.
        t.set_body_bytes(body)
    }
}

struct ServeInteraction {
    role: CallRole,
    method: String,
    body: Option<Value>,
    body_sha256: Option<String>,
    latency_ms: u64,
    response: Prepared,
    faults_before: Vec<Prepared>,
}

struct ServeCase {
    source: PathBuf,
    protocol: Protocol,
    variants: Vec<HashMap<String, ServeInteraction>>,
}

struct Shared {
    cases: HashMap<String, ServeCase>,
    opts: ReplayOptions,
    counters: Counters,
    miss_log: Mutex<VecDeque<String>>,
    /// Request bodies by "<case>/<run>", kept only when `opts.capture` is on,
    /// so the bench can check what the harness sent (e.g. where the budget
    /// notice sat). Drained by `take_captured`.
    captured: Mutex<HashMap<String, Vec<Captured>>>,
}

/// One request the harness sent, as the bench inspects it.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    pub call_key: String,
    pub attempt: u32,
    pub body: String,
}

/// Bodies kept per (case, run) at most, so a runaway harness cannot grow the
/// capture without bound.
pub const CAPTURE_MAX_PER_RUN: usize = 2000;

/// The running server. Dropping it shuts the listener down.
pub struct ReplayServer {
    server: MockServer,
    shared: Arc<Shared>,
    /// The streaming relay on the public listener, when the fault plan can
    /// drip (wiremock cannot send a body slowly).
    front: Option<super::drip::DripFront>,
}

impl fmt::Debug for ReplayServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayServer")
            .field("uri", &self.uri())
            .field("cases", &self.shared.cases.len())
            .finish()
    }
}

impl ReplayServer {
    /// Start on a random loopback port.
    pub async fn start(
        recordings: Recordings,
        opts: ReplayOptions,
    ) -> Result<ReplayServer, ReplayError> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(ReplayError::Bind)?;
        ReplayServer::start_on(listener, recordings, opts).await
    }

    /// Start on a listener the caller bound (e.g. a fixed port for `bench serve`).
    pub async fn start_on(
        listener: TcpListener,
        recordings: Recordings,
        opts: ReplayOptions,
    ) -> Result<ReplayServer, ReplayError> {
        if !opts.latency_scale.is_finite() || opts.latency_scale < 0.0 {
            return Err(ReplayError::BadOptions(format!(
                "latency_scale is {}; expected a finite number >= 0",
                opts.latency_scale
            )));
        }
        opts.faults
            .validate()
            .map_err(|e| ReplayError::BadOptions(e.to_string()))?;
        // wiremock unwraps local_addr(); ask first so a bad listener is an error, not a panic.
        listener.local_addr().map_err(ReplayError::Bind)?;
        // A plan that can drip: wiremock listens privately, the drip front
        // takes the caller's listener and relays to it.
        let (wiremock_listener, front_listener) = if opts.faults.may_drip() {
            let inner = TcpListener::bind(("127.0.0.1", 0)).map_err(ReplayError::Bind)?;
            inner.local_addr().map_err(ReplayError::Bind)?;
            (inner, Some(listener))
        } else {
            (listener, None)
        };
        let drip_interval = Duration::from_millis(opts.faults.drip_interval_ms);

        let shared = Arc::new(Shared {
            cases: prepare(recordings),
            opts,
            counters: Counters::default(),
            miss_log: Mutex::new(VecDeque::with_capacity(MISS_LOG_LEN)),
            captured: Mutex::new(HashMap::new()),
        });
        // Request recording off: this server is long-lived and high-volume,
        // and wiremock would otherwise keep every request in memory.
        let server = MockServer::builder()
            .listener(wiremock_listener)
            .disable_request_recording()
            .start()
            .await;
        Mock::given(any())
            .respond_with(Responder {
                shared: Arc::clone(&shared),
            })
            .mount(&server)
            .await;
        let front = match front_listener {
            Some(l) => Some(
                super::drip::DripFront::start(l, *server.address(), drip_interval)
                    .map_err(ReplayError::Bind)?,
            ),
            None => None,
        };
        Ok(ReplayServer {
            server,
            shared,
            front,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        format!("http://{}", self.address())
    }

    pub fn address(&self) -> SocketAddr {
        match &self.front {
            Some(f) => f.addr,
            None => *self.server.address(),
        }
    }

    /// The base URL a harness run should use for (case, run):
    /// `http://127.0.0.1:<port>/replay/<case>/<run>`.
    pub fn base_url_for(&self, case: &str, run: u32) -> String {
        format!("{}/replay/{case}/{run}", self.uri())
    }

    pub fn counters(&self) -> ReplayCounters {
        let c = &self.shared.counters;
        ReplayCounters {
            served: c.served.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            faults_injected: c.faults_injected.load(Ordering::Relaxed),
            scripted_faults: c.scripted_faults.load(Ordering::Relaxed),
        }
    }

    /// The most recent miss messages (up to 64), oldest first.
    pub fn recent_misses(&self) -> Vec<String> {
        let log = self
            .shared
            .miss_log
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        log.iter().cloned().collect()
    }

    pub fn options(&self) -> &ReplayOptions {
        &self.shared.opts
    }

    /// The request bodies captured for (case, run), in arrival order, and
    /// forget them. Empty unless the server was started with `capture`.
    pub fn take_captured(&self, case: &str, run: u32) -> Vec<Captured> {
        let mut m = self
            .shared
            .captured
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        m.remove(&format!("{case}/{run}")).unwrap_or_default()
    }

    /// Free the requests wiremock has retained. wiremock 0.6 keeps a clone of
    /// every request a mock matched for the mock's lifetime (even with
    /// request recording disabled), so a long-lived server grows by roughly
    /// one request body per request. This drops the mock and mounts a fresh
    /// one. Only call it when no request is in flight (e.g. between suite
    /// batches): a request arriving in the gap gets wiremock's bare 404
    /// instead of a replayed answer. Counters and the miss log are kept.
    pub async fn release_retained_requests(&self) {
        self.server.reset().await;
        Mock::given(any())
            .respond_with(Responder {
                shared: Arc::clone(&self.shared),
            })
            .mount(&self.server)
            .await;
    }
}

fn prepare(recordings: Recordings) -> HashMap<String, ServeCase> {
    let mut cases = HashMap::new();
    for rec in recordings.into_cases() {
        let protocol = rec.cassette.protocol;
        let variants = rec
            .cassette
            .runs
            .into_iter()
            .map(|run| {
                run.interactions
                    .into_iter()
                    .map(|it| {
                        let si = ServeInteraction {
                            role: it.role,
                            method: it.request.method,
                            body_sha256: it
                                .request
                                .body_sha256
                                .or_else(|| it.request.body.as_ref().map(body_sha256)),
                            body: it.request.body,
                            latency_ms: it.latency_ms,
                            response: Prepared::from_recorded(&it.response),
                            faults_before: it
                                .faults_before
                                .iter()
                                .map(Prepared::from_recorded)
                                .collect(),
                        };
                        (it.call_key, si)
                    })
                    .collect()
            })
            .collect();
        cases.insert(
            rec.cassette.case,
            ServeCase {
                source: rec.source,
                protocol,
                variants,
            },
        );
    }
    cases
}

struct Responder {
    shared: Arc<Shared>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let shared = &self.shared;
        if shared.opts.capture {
            if let Ok(inc) = parse_incoming(request) {
                let mut m = shared.captured.lock().unwrap_or_else(|p| p.into_inner());
                let v = m.entry(format!("{}/{}", inc.case, inc.run)).or_default();
                if v.len() < CAPTURE_MAX_PER_RUN {
                    v.push(Captured {
                        call_key: inc.call_key.to_string(),
                        attempt: inc.attempt,
                        body: String::from_utf8_lossy(&request.body).into_owned(),
                    });
                }
            }
        }
        match shared.answer(request) {
            Ok(t) => {
                shared.counters.served.fetch_add(1, Ordering::Relaxed);
                t
            }
            Err(message) => shared.miss(message),
        }
    }
}

/// What the request claims to be.
struct Incoming<'a> {
    case: &'a str,
    run: u32,
    endpoint: &'a str,
    call_key: &'a str,
    role: CallRole,
    attempt: u32,
}

fn parse_role(s: &str) -> Option<CallRole> {
    match s {
        "plan" => Some(CallRole::Plan),
        "execute" => Some(CallRole::Execute),
        "judge" => Some(CallRole::Judge),
        "replan" => Some(CallRole::Replan),
        _ => None,
    }
}

fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn parse_incoming(req: &Request) -> Result<Incoming<'_>, String> {
    let path = req.url.path();
    let Some(rest) = path.strip_prefix("/replay/") else {
        return Err(format!(
            "\"{path}\" is not a replay URL; expected /replay/<case>/<run>/<endpoint path>"
        ));
    };
    let mut parts = rest.splitn(3, '/');
    let case = parts.next().unwrap_or("");
    let run_s = parts.next().unwrap_or("");
    let endpoint_rest = parts.next().unwrap_or("");
    if case.is_empty() || run_s.is_empty() || endpoint_rest.is_empty() {
        return Err(format!(
            "\"{path}\" is not a replay URL; expected /replay/<case>/<run>/<endpoint path>"
        ));
    }
    let run = run_s.parse::<u32>().map_err(|_| {
        format!("case \"{case}\": run index \"{run_s}\" in the URL is not a non-negative integer")
    })?;
    // `endpoint` keeps its leading slash: it is the tail of `path` from the '/' before endpoint_rest.
    let endpoint = &path[path.len() - endpoint_rest.len() - 1..];
    let call_key = header(req, HEADER_CALL_KEY)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!("case \"{case}\" run {run}: request has no {HEADER_CALL_KEY} header")
        })?;
    let role_s = header(req, HEADER_CALL_ROLE).ok_or_else(|| {
        format!("case \"{case}\" run {run} call_key \"{call_key}\": request has no {HEADER_CALL_ROLE} header")
    })?;
    let role = parse_role(role_s).ok_or_else(|| {
        format!("case \"{case}\" run {run} call_key \"{call_key}\": {HEADER_CALL_ROLE} \"{role_s}\" is not plan|execute|judge|replan")
    })?;
    let attempt = match header(req, HEADER_ATTEMPT) {
        None => 0,
        Some(s) => s.parse::<u32>().map_err(|_| {
            format!("case \"{case}\" run {run} call_key \"{call_key}\": {HEADER_ATTEMPT} \"{s}\" is not a non-negative integer")
        })?,
    };
    Ok(Incoming {
        case,
        run,
        endpoint,
        call_key,
        role,
        attempt,
    })
}

impl Shared {
    fn miss(&self, message: String) -> ResponseTemplate {
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        {
            let mut log = self.miss_log.lock().unwrap_or_else(|p| p.into_inner());
            if log.len() == MISS_LOG_LEN {
                log.pop_front();
            }
            log.push_back(message.clone());
        }
        let body =
            json!({"type": "error", "error": {"type": "recording_miss", "message": message}});
        ResponseTemplate::new(404)
            .insert_header(HEADER_MISS, "1")
            .set_body_raw(
                serde_json::to_vec(&body).unwrap_or_default(),
                "application/json",
            )
    }

    /// The answer for a request, or the miss message.
    fn answer(&self, req: &Request) -> Result<ResponseTemplate, String> {
        let inc = parse_incoming(req)?;
        let (case, run, key) = (inc.case, inc.run, inc.call_key);

        let Some(sc) = self.cases.get(case) else {
            let near = nearest(case, self.cases.keys().map(String::as_str));
            return Err(match near {
                Some(n) => format!(
                    "unknown case \"{case}\" (run {run}, call_key \"{key}\"); nearest recorded case is \"{n}\" ({})",
                    self.cases.get(n).map(|c| c.source.display().to_string()).unwrap_or_default()
                ),
                None => format!("unknown case \"{case}\": no cassettes are loaded"),
            });
        };
        let expected_endpoint = endpoint_path(sc.protocol);
        // OpenAI clients take a base URL that already ends in /v1 and append
        // /chat/completions; accept the path without /v1 too, so
        // base_url_for() works with either base-URL convention.
        let endpoint_ok = inc.endpoint == expected_endpoint
            || (sc.protocol == Protocol::Openai && inc.endpoint == "/chat/completions");
        if !endpoint_ok {
            return Err(format!(
                "case \"{case}\" run {run} call_key \"{key}\": protocol mismatch: the cassette ({}) is {} \
                 (POST {expected_endpoint}) but the request went to {}",
                sc.source.display(),
                sc.protocol.as_str(),
                inc.endpoint
            ));
        }
        let n = sc.variants.len().max(1) as u32;
        let variant = run % n;
        let Some(it) = sc.variants.get(variant as usize).and_then(|v| v.get(key)) else {
            return Err(self.no_such_call_key(sc, case, run, variant, n, key));
        };
        let at = format!("case \"{case}\" run {run} (variant {variant} of {n}) call_key \"{key}\"");
        if it.role != inc.role {
            return Err(format!(
                "{at}: role mismatch: recorded role {} but the request says {}",
                it.role.as_str(),
                inc.role.as_str()
            ));
        }
        if !req.method.as_str().eq_ignore_ascii_case(&it.method) {
            return Err(format!(
                "{at}: method mismatch: recorded {} but got {}",
                it.method, req.method
            ));
        }
        if self.opts.strict {
            strict_check(it, &req.body).map_err(|why| format!("{at}: {why}"))?;
        }

        // Scripted faults first: attempt k < len(faults_before) gets the k-th.
        if let Some(f) = it.faults_before.get(inc.attempt as usize) {
            self.counters
                .scripted_faults
                .fetch_add(1, Ordering::Relaxed);
            return Ok(f.template(f.body.clone()));
        }

        let recorded_delay = self.scaled(it.latency_ms);
        match self.opts.faults.decide(case, run, key, inc.attempt) {
            None => Ok(with_delay(
                it.response.template(it.response.body.clone()),
                recorded_delay,
            )),
            Some(kind) => {
                self.counters
                    .faults_injected
                    .fetch_add(1, Ordering::Relaxed);
                Ok(self.inject(kind, sc.protocol, it, recorded_delay, &inc))
            }
        }
    }

    fn no_such_call_key(
        &self,
        sc: &ServeCase,
        case: &str,
        run: u32,
        variant: u32,
        n: u32,
        key: &str,
    ) -> String {
        let mut msg =
            format!("case \"{case}\" run {run} (variant {variant} of {n}): no recording for call_key \"{key}\"");
        let here = sc.variants.get(variant as usize);
        match here.and_then(|v| nearest(key, v.keys().map(String::as_str))) {
            Some(near) => {
                let role = here
                    .and_then(|v| v.get(near))
                    .map(|i| i.role.as_str())
                    .unwrap_or("?");
                msg.push_str(&format!(
                    "; nearest in this run is \"{near}\" (role {role})"
                ));
            }
            None => msg.push_str("; this run variant has no recordings"),
        }
        // The case's nearest run: another variant that does have this key.
        if let Some(other) = sc.variants.iter().position(|v| v.contains_key(key)) {
            msg.push_str(&format!("; the key is recorded in run variant {other}"));
        }
        msg.push_str(&format!(" ({})", sc.source.display()));
        msg
    }

    fn scaled(&self, ms: u64) -> Duration {
        let secs = ms as f64 / 1000.0 * self.opts.latency_scale;
        Duration::try_from_secs_f64(secs)
            .unwrap_or(MAX_DELAY)
            .min(MAX_DELAY)
    }

    fn inject(
        &self,
        kind: FaultKind,
        protocol: Protocol,
        it: &ServeInteraction,
        delay: Duration,
        inc: &Incoming<'_>,
    ) -> ResponseTemplate {
        let note = format!(
            "replay: injected {} fault (seed {}, attempt {})",
            kind.as_str(),
            self.opts.faults.seed,
            inc.attempt
        );
        let fault_header = |t: ResponseTemplate| t.insert_header(HEADER_FAULT, kind.as_str());
        match kind {
            FaultKind::RateLimited => fault_header(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", self.opts.faults.retry_after_s.to_string())
                    .set_body_raw(error_body(protocol, 429, &note), "application/json"),
            ),
            FaultKind::ServerError => fault_header(
                ResponseTemplate::new(500)
                    .set_body_raw(error_body(protocol, 500, &note), "application/json"),
            ),
            FaultKind::Latency => {
                let extra = Duration::from_millis(self.opts.faults.added_latency_ms);
                fault_header(with_delay(
                    it.response.template(it.response.body.clone()),
                    delay.saturating_add(extra).min(MAX_DELAY),
                ))
            }
            FaultKind::Truncated => {
                let half = it.response.body.len() / 2;
                let mut p = it.response.clone();
                p.status = 200;
                fault_header(with_delay(
                    p.template(it.response.body[..half].to_vec()),
                    delay,
                ))
            }
            // The real answer; the drip front sends its body slowly.
            FaultKind::Drip => fault_header(with_delay(
                it.response.template(it.response.body.clone()),
                delay,
            )),
            FaultKind::Malformed => {
                // Claims JSON, is not: what a misbehaving proxy in front of
                // the endpoint looks like.
                let body = format!("<html><body>upstream hiccup</body></html> {note}").into_bytes();
                fault_header(with_delay(
                    ResponseTemplate::new(200).set_body_raw(body, "application/json"),
                    delay,
                ))
            }
        }
    }
}

fn with_delay(t: ResponseTemplate, d: Duration) -> ResponseTemplate {
    if d.is_zero() {
        t
    } else {
        t.set_delay(d)
    }
}

/// An error body in the shape the protocol's real endpoint uses, so the
/// harness's client parses injected faults exactly like real ones.
fn error_body(protocol: Protocol, status: u16, message: &str) -> Vec<u8> {
    let v = match (protocol, status) {
        (Protocol::Anthropic, 429) => {
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}})
        }
        (Protocol::Anthropic, _) => {
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        }
        (Protocol::Openai, 429) => {
            json!({"error": {"message": message, "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}})
        }
        (Protocol::Openai, _) => {
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}})
        }
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Strict mode: the canonical hash of the incoming body must equal the recording's.
fn strict_check(it: &ServeInteraction, raw: &[u8]) -> Result<(), String> {
    let got: Value = serde_json::from_slice(raw).map_err(|e| {
        format!("strict mode: the request body is not JSON ({e}), so it cannot match a recorded body hash")
    })?;
    let Some(recorded_hash) = &it.body_sha256 else {
        return Err("strict mode: this recording has no body_sha256 (hand-written cassette), so no body can match; \
                    run without --strict or re-record the case"
            .to_string());
    };
    let got_hash = body_sha256(&got);
    if &got_hash == recorded_hash {
        return Ok(());
    }
    let detail = match &it.body {
        Some(recorded) => match first_difference(recorded, &got) {
            Some(d) => d,
            // Same value, different hash: only possible if the recorded hash
            // came from elsewhere; say so rather than inventing a diff.
            None => {
                format!("canonical bodies are equal but the recorded hash {recorded_hash} was not computed from them")
            }
        },
        None => {
            format!(
                "recorded body not stored; recorded sha256 {} vs got {}",
                short(recorded_hash),
                short(&got_hash)
            )
        }
    };
    Err(format!("body hash mismatch (strict): {detail}"))
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// The first JSON path (in canonical, key-sorted order) where two bodies
/// differ, with both values: `system: recorded "You are..." vs got "You were..."`.
pub fn first_difference(recorded: &Value, got: &Value) -> Option<String> {
    let mut path = String::new();
    diff_at(recorded, got, &mut path)
}

fn diff_at(a: &Value, b: &Value, path: &mut String) -> Option<String> {
    let here = |p: &str| {
        if p.is_empty() {
            "(root)".to_string()
        } else {
            p.to_string()
        }
    };
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                let found = match (ma.get(k.as_str()), mb.get(k.as_str())) {
                    (Some(x), Some(y)) => diff_at(x, y, path),
                    (x, y) => Some(format!(
                        "{}: recorded {} vs got {}",
                        path,
                        render_opt(x),
                        render_opt(y)
                    )),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Array(xa), Value::Array(xb)) => {
            for i in 0..xa.len().max(xb.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = match (xa.get(i), xb.get(i)) {
                    (Some(x), Some(y)) => diff_at(x, y, path),
                    (x, y) => Some(format!(
                        "{}: recorded {} vs got {}",
                        path,
                        render_opt(x),
                        render_opt(y)
                    )),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::String(x), Value::String(y)) if x != y => {
            let (rx, ry) = render_string_pair(x, y);
            Some(format!("{}: recorded {rx} vs got {ry}", here(path)))
        }
        (x, y) if x != y => Some(format!(
            "{}: recorded {} vs got {}",
            here(path),
            render(x),
            render(y)
        )),
        _ => None,
    }
}

fn render_opt(v: Option<&Value>) -> String {
    v.map(render).unwrap_or_else(|| "(absent)".to_string())
}

fn render(v: &Value) -> String {
    clip(&canonical_json(v))
}

/// Both strings shown around their first differing character, so a change
/// deep inside a long system prompt is visible in the message.
fn render_string_pair(x: &str, y: &str) -> (String, String) {
    let first = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
    let start = first.saturating_sub(20);
    (quote_window(x, start), quote_window(y, start))
}

/// `s` from char `start`, clipped, as a JSON string literal (clipped before
/// quoting so an escape sequence is never cut in half).
fn quote_window(s: &str, start: usize) -> String {
    let tail: String = s.chars().skip(start).take(DIFF_VALUE_CHARS).collect();
    let more = s.chars().count() > start + DIFF_VALUE_CHARS;
    let quoted = serde_json::to_string(&tail).unwrap_or_default();
    let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
    format!(
        "\"{}{inner}{}\"",
        if start > 0 { "..." } else { "" },
        if more { "..." } else { "" }
    )
}

fn clip(s: &str) -> String {
    if s.chars().count() <= DIFF_VALUE_CHARS {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(DIFF_VALUE_CHARS).collect();
        out.push_str("...");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::cassette::{Cassette, Recordings};
    use super::*;
    use std::time::Instant;

    const CASE: &str = "srv";

    fn system_body(system: &str) -> Value {
        json!({
            "model": "claude-test",
            "max_tokens": 512,
            "system": system,
            "messages": [{"role": "user", "content": "Fix the typo in README.md"}]
        })
    }

    /// Two run variants; plan/0 carries a real body + hash; execute/t1/a0/0
    /// has scripted faults; judge/0 is hand-written (no body); one
    /// interaction has a 200 ms recorded latency and one a raw body.
    fn test_cassette() -> Cassette {
        let plan_body = system_body("You are a careful planner.");
        let variant = |v: u32| {
            json!({
                "run": v,
                "interactions": [
                    {
                        "role": "plan", "call_key": "plan/0",
                        "request": {"method": "POST", "path": "/v1/messages", "body": plan_body, "body_sha256": body_sha256(&plan_body)},
                        "response": {"status": 200, "headers": {"content-type": "application/json", "request-id": format!("req_{v}")},
                                     "body": {"id": format!("msg_plan_v{v}"), "type": "message", "content": [{"type": "text", "text": format!("plan variant {v}")}]}},
                        "latency_ms": 0
                    },
                    {
                        "role": "execute", "call_key": "execute/t1/a0/0",
                        "request": {"path": "/v1/messages", "body": null, "body_sha256": null},
                        "response": {"status": 200, "body": {"id": format!("msg_exec_v{v}"), "content": []}},
                        "latency_ms": 200,
                        "faults_before": [
                            {"status": 429, "headers": {"retry-after": "1"}, "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}},
                            {"status": 500, "body_raw": "upstream connect error"}
                        ]
                    },
                    {
                        "role": "judge", "call_key": "judge/0",
                        "request": {"path": "/v1/messages", "body": null, "body_sha256": null},
                        "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "body_raw": format!("event: ping\ndata: {{\"v\": {v}}}\n\n")},
                        "latency_ms": 0
                    }
                ]
            })
        };
        serde_json::from_value(json!({
            "format": "harness-cassette/1",
            "case": CASE,
            "protocol": "anthropic",
            "model": "claude-test",
            "made": {"how": "scripted", "when": "2025-01-01", "by": "server tests", "temperature": null, "seed": null, "notes": ""},
            "runs": [variant(0), variant(1)]
        }))
        .unwrap()
    }

    fn example_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings/examples/example-fix-typo.json")
    }

    async fn server(opts: ReplayOptions) -> ReplayServer {
        let mut rec = Recordings::new();
        rec.add(test_cassette(), "mem/srv.json").unwrap();
        rec.add(Cassette::load(example_path()).unwrap(), example_path())
            .unwrap();
        ReplayServer::start(rec, opts).await.unwrap()
    }

    fn fast() -> ReplayOptions {
        ReplayOptions {
            strict: false,
            latency_scale: 0.0,
            faults: FaultPlan::none(),
            capture: false,
        }
    }

    struct Reply {
        status: u16,
        headers: reqwest::header::HeaderMap,
        body: Vec<u8>,
    }

    impl Reply {
        fn json(&self) -> Value {
            serde_json::from_slice(&self.body).unwrap_or(Value::Null)
        }
        fn miss_message(&self) -> String {
            assert_eq!(self.status, 404);
            assert_eq!(
                self.headers.get(HEADER_MISS).map(|v| v.to_str().unwrap()),
                Some("1")
            );
            let v = self.json();
            assert_eq!(v["type"], "error");
            assert_eq!(v["error"]["type"], "recording_miss");
            v["error"]["message"].as_str().unwrap().to_string()
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn call(
        client: &reqwest::Client,
        base: &str,
        endpoint: &str,
        role: &str,
        key: &str,
        attempt: u32,
        body: &Value,
    ) -> Reply {
        let resp = client
            .post(format!("{base}{endpoint}"))
            .header(HEADER_CALL_ROLE, role)
            .header(HEADER_CALL_KEY, key)
            .header(HEADER_ATTEMPT, attempt.to_string())
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.unwrap().to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    #[tokio::test]
    async fn round_trips_recorded_bodies_exactly() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        // The checked-in example cassette.
        let ex = Cassette::load(example_path()).unwrap();
        for (r, run) in ex.runs.iter().enumerate() {
            for it in &run.interactions {
                let attempt = it.faults_before.len() as u32;
                let base = s.base_url_for(&ex.case, r as u32);
                let got = call(
                    &c,
                    &base,
                    "/v1/messages",
                    it.role.as_str(),
                    &it.call_key,
                    attempt,
                    &json!({}),
                )
                .await;
                assert_eq!(got.status, it.response.status);
                assert_eq!(got.body, it.response.body_bytes(), "{}", it.call_key);
                assert_eq!(got.json(), it.response.body.clone().unwrap());
            }
        }
        // A raw (non-JSON) body comes back byte for byte, with its content type.
        let got = call(
            &c,
            &s.base_url_for(CASE, 1),
            "/v1/messages",
            "judge",
            "judge/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(got.body, b"event: ping\ndata: {\"v\": 1}\n\n");
        assert_eq!(got.headers["content-type"], "text/event-stream");
        // Recorded headers are replayed.
        let got = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(got.headers["request-id"], "req_0");
        assert_eq!(s.counters().misses, 0);
    }

    #[tokio::test]
    async fn run_index_selects_variant_modulo() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        for run in 0..6u32 {
            let got = call(
                &c,
                &s.base_url_for(CASE, run),
                "/v1/messages",
                "plan",
                "plan/0",
                0,
                &json!({}),
            )
            .await;
            assert_eq!(
                got.json()["id"],
                format!("msg_plan_v{}", run % 2),
                "run {run}"
            );
        }
    }

    #[tokio::test]
    async fn reworded_prompt_matches_by_default_but_not_in_strict_mode() {
        let reworded = system_body("You were a careful planner.");
        let exact = system_body("You are a careful planner.");
        let c = reqwest::Client::new();

        let lax = server(fast()).await;
        let got = call(
            &c,
            &lax.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &reworded,
        )
        .await;
        assert_eq!(got.status, 200);

        let strict = server(ReplayOptions {
            strict: true,
            ..fast()
        })
        .await;
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &exact,
        )
        .await;
        assert_eq!(got.status, 200, "exact body matches in strict mode");
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &reworded,
        )
        .await;
        let msg = got.miss_message();
        assert!(msg.contains("body hash mismatch"), "{msg}");
        assert!(
            msg.contains("system: recorded \"You are a careful planner.\" vs got \"You were a careful planner.\""),
            "{msg}"
        );
        // A hand-written recording (no hash) is a strict miss that says why.
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "judge",
            "judge/0",
            0,
            &exact,
        )
        .await;
        assert!(got.miss_message().contains("no body_sha256"));
        assert_eq!(strict.counters().misses, 2);
    }

    #[test]
    fn body_diff_names_the_first_differing_path() {
        let a = json!({"system": "s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10});
        let b = json!({"system": "s", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 10});
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "messages[0].content: recorded \"hi\" vs got \"hello\""
        );
        let c = json!({"system": "s", "messages": [], "max_tokens": 10, "tools": []});
        assert_eq!(
            first_difference(&a, &c).unwrap(),
            "messages[0]: recorded {\"content\":\"hi\",\"role\":\"user\"} vs got (absent)"
        );
        assert_eq!(
            first_difference(&json!(1), &json!("1")).unwrap(),
            "(root): recorded 1 vs got \"1\""
        );
        assert_eq!(first_difference(&a, &a), None);
        let long_a = format!("{}The answer is yes.", "x".repeat(500));
        let long_b = format!("{}The answer is no.", "x".repeat(500));
        let d = first_difference(&json!({"system": long_a}), &json!({"system": long_b})).unwrap();
        assert!(
            d.contains("The answer is yes") && d.contains("The answer is no"),
            "{d}"
        );
        assert!(d.len() < 200, "{d}");
    }

    #[tokio::test]
    async fn misses_name_the_nearest_recording() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        let b = json!({});
        let base = s.base_url_for(CASE, 0);

        let m = call(&c, &base, "/v1/messages", "plan", "plan/1", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("no recording for call_key \"plan/1\"")
                && m.contains("nearest in this run is \"plan/0\""),
            "{m}"
        );

        let m = call(
            &c,
            &s.base_url_for("srvv", 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &b,
        )
        .await
        .miss_message();
        assert!(
            m.contains("unknown case \"srvv\"") && m.contains("nearest recorded case is \"srv\""),
            "{m}"
        );

        let m = call(&c, &base, "/v1/messages", "execute", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("role mismatch: recorded role plan but the request says execute"),
            "{m}"
        );

        let m = call(&c, &base, "/v1/chat/completions", "plan", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("protocol mismatch") && m.contains("anthropic"),
            "{m}"
        );

        let m = call(
            &c,
            &format!("{}/replay/{CASE}/x", s.uri()),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &b,
        )
        .await
        .miss_message();
        assert!(m.contains("run index \"x\""), "{m}");

        let m = call(&c, &s.uri(), "/v1/messages", "plan", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(m.contains("not a replay URL"), "{m}");

        let m = call(&c, &base, "/v1/messages", "planner", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(m.contains("is not plan|execute|judge|replan"), "{m}");

        // No call-key header at all.
        let resp = c
            .post(format!("{base}/v1/messages"))
            .header(HEADER_CALL_ROLE, "plan")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 404);
        assert!(resp
            .text()
            .await
            .unwrap()
            .contains("no x-harness-call-key header"));

        assert_eq!(
            s.counters(),
            ReplayCounters {
                served: 0,
                misses: 8,
                faults_injected: 0,
                scripted_faults: 0
            }
        );
        assert_eq!(s.recent_misses().len(), 8);
    }

    #[tokio::test]
    async fn faults_before_are_served_in_attempt_order() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        let base = s.base_url_for(CASE, 1);
        let r0 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r0.status, 429);
        assert_eq!(r0.headers["retry-after"], "1");
        assert_eq!(r0.json()["error"]["message"], "slow down");
        let r1 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            1,
            &json!({}),
        )
        .await;
        assert_eq!(r1.status, 500);
        assert_eq!(r1.body, b"upstream connect error");
        let r2 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            2,
            &json!({}),
        )
        .await;
        assert_eq!(r2.status, 200);
        assert_eq!(r2.json()["id"], "msg_exec_v1");
        assert_eq!(
            s.counters(),
            ReplayCounters {
                served: 3,
                misses: 0,
                faults_injected: 0,
                scripted_faults: 2
            }
        );
    }

    fn plan(spec: &str) -> ReplayOptions {
        ReplayOptions {
            faults: FaultPlan::parse(spec).unwrap(),
            ..fast()
        }
    }

    #[tokio::test]
    async fn each_injected_fault_kind_over_http() {
        let c = reqwest::Client::new();
        let real = call(
            &c,
            &server(fast()).await.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;

        let s = server(plan("429=1,retry_after=7,seed=3")).await;
        let base = s.base_url_for(CASE, 0);
        let r = call(&c, &base, "/v1/messages", "plan", "plan/0", 0, &json!({})).await;
        assert_eq!(
            (r.status, r.headers["retry-after"].to_str().unwrap()),
            (429, "7")
        );
        assert_eq!(r.json()["error"]["type"], "rate_limit_error");
        assert_eq!(r.headers[HEADER_FAULT], "429");
        // At the attempt cap the real response gets through.
        let r = call(
            &c,
            &base,
            "/v1/messages",
            "plan",
            "plan/0",
            super::super::faults::FAULT_ATTEMPT_CAP,
            &json!({}),
        )
        .await;
        assert_eq!(r.body, real.body);

        let s = server(plan("500=1")).await;
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.status, 500);
        assert_eq!(r.json()["error"]["type"], "api_error");

        let s = server(plan("truncate=1")).await;
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body, real.body[..real.body.len() / 2]);
        assert!(serde_json::from_slice::<Value>(&r.body).is_err());

        let s = server(plan("malformed=1")).await;
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(serde_json::from_slice::<Value>(&r.body).is_err());

        let s = server(plan("latency=1:150")).await;
        let t0 = Instant::now();
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert!(t0.elapsed() >= Duration::from_millis(150));
        assert_eq!(r.body, real.body);
        assert_eq!(s.counters().faults_injected, 1);
    }

    #[tokio::test]
    async fn injected_faults_reproduce_from_the_seed_over_http() {
        let c = reqwest::Client::new();
        let spec = |seed: u64| format!("429=0.2,500=0.2,truncate=0.1,malformed=0.1,seed={seed}");
        async fn statuses(c: &reqwest::Client, s: &ReplayServer) -> Vec<(u16, Vec<u8>)> {
            let mut out = Vec::new();
            for run in 0..40u32 {
                let r = call(
                    c,
                    &s.base_url_for(CASE, run),
                    "/v1/messages",
                    "plan",
                    "plan/0",
                    run % 3,
                    &json!({}),
                )
                .await;
                out.push((r.status, r.body));
            }
            out
        }
        let a = statuses(&c, &server(plan(&spec(11))).await).await;
        let a2 = statuses(&c, &server(plan(&spec(11))).await).await;
        let b = statuses(&c, &server(plan(&spec(12))).await).await;
        assert_eq!(a, a2);
        assert_ne!(a, b);
        // The server agrees with FaultPlan::decide, the pure function.
        let p = FaultPlan::parse(&spec(11)).unwrap();
        for (run, (status, _)) in a.iter().enumerate() {
            let expected = match p.decide(CASE, run as u32, "plan/0", run as u32 % 3) {
                Some(FaultKind::RateLimited) => 429,
                Some(FaultKind::ServerError) => 500,
                _ => 200,
            };
            assert_eq!(*status, expected, "run {run}");
        }
    }

    #[tokio::test]
    async fn drip_sends_the_real_body_a_few_bytes_at_a_time() {
        let c = reqwest::Client::new();
        let plain = server(fast()).await;
        let real = call(
            &c,
            &plain.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        let s = server(ReplayOptions {
            faults: FaultPlan::parse("drip=1.0:20,seed=1").unwrap(),
            ..fast()
        })
        .await;
        assert_ne!(
            s.address(),
            *s.server.address(),
            "the front owns the public port"
        );
        // Status and headers at once, then the body in DRIP_CHUNK_BYTES pieces.
        let t0 = Instant::now();
        let mut resp = c
            .post(format!("{}/v1/messages", s.base_url_for(CASE, 0)))
            .header(HEADER_CALL_ROLE, "plan")
            .header(HEADER_CALL_KEY, "plan/0")
            .header(HEADER_ATTEMPT, "0")
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let headers_after = t0.elapsed();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers().get(HEADER_FAULT).unwrap(), "drip");
        let mut body = Vec::new();
        let mut chunks = 0;
        while let Some(chunk) = resp.chunk().await.unwrap() {
            assert!(chunk.len() <= super::super::faults::DRIP_CHUNK_BYTES);
            body.extend_from_slice(&chunk);
            chunks += 1;
        }
        let took = t0.elapsed();
        assert_eq!(body, real.body, "the real body, whole");
        let pieces = real
            .body
            .len()
            .div_ceil(super::super::faults::DRIP_CHUNK_BYTES);
        assert_eq!(chunks, pieces);
        assert!(
            took >= Duration::from_millis(20 * (pieces as u64 - 1)),
            "{took:?} for {pieces} pieces"
        );
        assert!(headers_after < took / 2, "{headers_after:?} of {took:?}");
        // Attempts at or above the cap get the real answer at full speed,
        // through the same front.
        let t0 = Instant::now();
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            super::super::faults::FAULT_ATTEMPT_CAP,
            &json!({}),
        )
        .await;
        assert_eq!(r.body, real.body);
        assert!(r.headers.get(HEADER_FAULT).is_none());
        assert!(t0.elapsed() < Duration::from_millis(20 * (pieces as u64 - 1)));
        // A miss through the front is still a miss.
        let miss = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/9",
            0,
            &json!({}),
        )
        .await;
        assert!(miss.miss_message().contains("plan/9"));
    }

    #[tokio::test]
    async fn recorded_latency_is_scaled() {
        let c = reqwest::Client::new();
        let s = server(ReplayOptions {
            latency_scale: 0.5,
            ..fast()
        })
        .await;
        let t0 = Instant::now();
        let r = call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            2,
            &json!({}),
        )
        .await;
        let took = t0.elapsed();
        assert_eq!(r.status, 200);
        assert!(took >= Duration::from_millis(100), "{took:?}");

        let s = server(fast()).await;
        let t0 = Instant::now();
        call(
            &c,
            &s.base_url_for(CASE, 0),
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            2,
            &json!({}),
        )
        .await;
        assert!(
            t0.elapsed() < Duration::from_millis(100),
            "scale 0 = as fast as possible"
        );
    }

    #[tokio::test]
    async fn embedded_start_for_run_and_openai_base_url_convention() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(example_path(), dir.path().join("example.json")).unwrap();
        use super::super::embed::start_for_run;

        // One case in the directory: no need to name it.
        let (s, url) = start_for_run(dir.path(), None, 1, Protocol::Anthropic, false, 0.0, None)
            .await
            .unwrap();
        assert_eq!(url, s.base_url_for("example-fix-typo", 1));
        let c = reqwest::Client::new();
        let r = call(&c, &url, "/v1/messages", "plan", "plan/0", 0, &json!({})).await;
        assert_eq!(r.json()["id"], "msg_example_plan_1");

        // An OpenAI cassette: the URL ends in /v1 and the client appends /chat/completions.
        let mut oa = test_cassette();
        oa.case = "oa".into();
        oa.protocol = Protocol::Openai;
        for run in &mut oa.runs {
            for it in &mut run.interactions {
                it.request.path = "/v1/chat/completions".into();
            }
        }
        oa.save(dir.path().join("oa.json")).unwrap();
        let (s, url) = start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            Some("seed=1"),
        )
        .await
        .unwrap();
        assert!(url.ends_with("/replay/oa/0/v1"), "{url}");
        let r = call(
            &c,
            &url,
            "/chat/completions",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.json()["id"], "msg_plan_v0");
        // base_url_for (no /v1) works too; /v1/messages is a protocol mismatch.
        let r = call(
            &c,
            &s.base_url_for("oa", 0),
            "/chat/completions",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.status, 200);
        let m = call(
            &c,
            &s.base_url_for("oa", 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await
        .miss_message();
        assert!(m.contains("protocol mismatch"), "{m}");

        // Ambiguous, unknown, wrong-protocol, bad faults, broken tree: all errors.
        assert!(
            start_for_run(dir.path(), None, 0, Protocol::Anthropic, false, 0.0, None)
                .await
                .is_err()
        );
        assert!(start_for_run(
            dir.path(),
            Some("nope"),
            0,
            Protocol::Anthropic,
            false,
            0.0,
            None
        )
        .await
        .is_err());
        assert!(start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Anthropic,
            false,
            0.0,
            None
        )
        .await
        .is_err());
        assert!(start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            Some("429=9")
        )
        .await
        .is_err());
        std::fs::write(dir.path().join("broken.json"), "{").unwrap();
        let e = start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            None,
        )
        .await
        .map(|_| ())
        .unwrap_err();
        assert!(e.to_string().contains("broken.json"), "{e}");
    }

    #[tokio::test]
    async fn bad_options_are_refused() {
        let bad = ReplayOptions {
            latency_scale: f64::NAN,
            ..fast()
        };
        assert!(matches!(
            ReplayServer::start(Recordings::new(), bad).await,
            Err(ReplayError::BadOptions(_))
        ));
        let mut faults = FaultPlan::none();
        faults.rate_429 = 3.0;
        let bad = ReplayOptions { faults, ..fast() };
        assert!(matches!(
            ReplayServer::start(Recordings::new(), bad).await,
            Err(ReplayError::BadOptions(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_64_concurrent_requests_correctly() {
        let s = Arc::new(server(fast()).await);
        let c = reqwest::Client::new();
        let mut tasks = Vec::new();
        for i in 0..64u32 {
            let (s, c) = (Arc::clone(&s), c.clone());
            tasks.push(tokio::spawn(async move {
                let run = i % 5;
                let (role, key, expect) = match i % 3 {
                    0 => ("plan", "plan/0", format!("msg_plan_v{}", run % 2)),
                    1 => (
                        "execute",
                        "execute/t1/a0/0",
                        format!("msg_exec_v{}", run % 2),
                    ),
                    _ => ("plan", "plan/0", format!("msg_plan_v{}", run % 2)),
                };
                let r = call(
                    &c,
                    &s.base_url_for(CASE, run),
                    "/v1/messages",
                    role,
                    key,
                    2,
                    &json!({"i": i}),
                )
                .await;
                assert_eq!(r.status, 200);
                assert_eq!(r.json()["id"], expect, "request {i}");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(s.counters().served, 64);
        // Releasing wiremock's retained requests keeps the server answering.
        s.release_retained_requests().await;
        let r = call(
            &c,
            &s.base_url_for(CASE, 1),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.json()["id"], "msg_plan_v1");
        assert_eq!(s.counters().served, 65);
    }
}
