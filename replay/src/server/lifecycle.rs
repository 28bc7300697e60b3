//! The running server: binding, the one catch-all mock, the drip front
//! when the fault plan can drip (wiremock cannot send a body slowly, so a
//! relay takes the public port), the accessors a bench reads between runs,
//! and dropping wiremock's retained requests on a long-lived server.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wiremock::matchers::any;
use wiremock::{Mock, MockServer};

use super::cases::prepare;
use super::options::{ReplayError, ReplayOptions};
use super::state::{Captured, Counters, ReplayCounters, Responder, Shared, MISS_LOG_LEN};
use crate::cassette::Recordings;

/// The running server. Dropping it shuts the listener down.
pub struct ReplayServer {
    server: MockServer,
    shared: Arc<Shared>,
    /// The streaming relay on the public listener, when the fault plan can
    /// drip (wiremock cannot send a body slowly).
    front: Option<crate::drip::DripFront>,
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
        opts.validate()?;
        ReplayServer::serve(listener, Arc::new(prepare(recordings)), opts).await
    }

    /// A new server on a new port answering from this one's cassettes
    /// (shared, not copied) with its options, and counters, misses and
    /// captured requests of its own: what a long batch moves to when
    /// wiremock's retained requests have grown (see
    /// [`ReplayServer::release_retained_requests`]), without preparing
    /// every cassette again or holding two copies of them.
    pub async fn fresh(&self) -> Result<ReplayServer, ReplayError> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(ReplayError::Bind)?;
        let cases = Arc::clone(&self.shared.cases);
        ReplayServer::serve(listener, cases, self.shared.opts.clone()).await
    }

    async fn serve(
        listener: TcpListener,
        cases: Arc<HashMap<String, super::cases::ServeCase>>,
        opts: ReplayOptions,
    ) -> Result<ReplayServer, ReplayError> {
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
            cases,
            opts,
            counters: Counters::default(),
            miss_log: Mutex::new(VecDeque::with_capacity(MISS_LOG_LEN)),
            captured: Mutex::new(HashMap::new()),
            held: Mutex::new(HashMap::new()),
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
                crate::drip::DripFront::start(l, *server.address(), drip_interval)
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

    /// The run whose variant and faults answer a request whose URL names
    /// `run` (`ReplayOptions::serve_as_run`): what a case-run's expected
    /// ending is read from.
    pub fn served_run(&self, run: u32) -> u32 {
        self.shared.opts.serve_as_run.unwrap_or(run)
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

    /// The model time (case, run) was served up to `until` (when its last
    /// harness process ended), and forget it: how long some answer was
    /// held back on purpose (scaled recorded latency, an injected latency
    /// or drip), overlapping holds counted once. Zero unless the server was
    /// started with `capture`.
    pub fn take_model_time(&self, case: &str, run: u32, until: std::time::Instant) -> Duration {
        let mut m = self.shared.held.lock().unwrap_or_else(|p| p.into_inner());
        let holds = m.remove(&format!("{case}/{run}")).unwrap_or_default();
        super::model_time::covered(&holds, until)
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
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::faults::FaultPlan;
    use crate::server::{HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE, HEADER_FAULT};
    use serde_json::json;
    use std::time::Instant;

    /// A fresh server answers the same cassettes from its own port, counts
    /// on its own, and shares the prepared cassettes instead of holding a
    /// second copy (what kept a long batch's memory per case doubled).
    #[tokio::test]
    async fn a_fresh_server_shares_the_cassettes_and_counts_on_its_own() {
        let c = reqwest::Client::new();
        let first = server(fast()).await;
        let fresh = first.fresh().await.unwrap();
        assert_ne!(first.uri(), fresh.uri());
        assert!(Arc::ptr_eq(&first.shared.cases, &fresh.shared.cases));
        assert_eq!(first.options(), fresh.options());
        let ask = |s: &ReplayServer| {
            let url = s.base_url_for(CASE, 0);
            let c = c.clone();
            async move { call(&c, &url, "/v1/messages", "plan", "plan/0", 0, &json!({})).await }
        };
        let a = ask(&first).await;
        let b = ask(&fresh).await;
        assert_eq!((a.status, b.status), (200, 200));
        assert_eq!(a.json(), b.json(), "the same recorded reply");
        assert_eq!(fresh.counters().served, 1);
        assert_eq!(first.counters().served, 1, "each counts its own");
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
            assert!(chunk.len() <= crate::faults::DRIP_CHUNK_BYTES);
            body.extend_from_slice(&chunk);
            chunks += 1;
        }
        let took = t0.elapsed();
        assert_eq!(body, real.body, "the real body, whole");
        let pieces = real.body.len().div_ceil(crate::faults::DRIP_CHUNK_BYTES);
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
            crate::faults::FAULT_ATTEMPT_CAP,
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
