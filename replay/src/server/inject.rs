//! A seeded fault's response. The plan (crate::faults) decides, as a pure
//! function of the request, whether and which fault; this file only says
//! what that fault looks like on the wire, in the protocol's own error
//! shape, so the harness's client meets an injected fault exactly as it
//! would meet a real one.

use std::time::Duration;

use serde_json::json;
use wiremock::ResponseTemplate;

use super::cases::ServeInteraction;
use super::incoming::Incoming;
use super::response::{with_delay, MAX_DELAY};
use super::state::Shared;
use super::HEADER_FAULT;
use crate::faults::FaultKind;
use model::types::Protocol;

impl Shared {
    pub(super) fn inject(
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
    /// How long `inject` holds the answer back on purpose (the model time
    /// the run is served): the scaled latency, plus the injected latency,
    /// or plus the drip of the body's chunks; nothing for an error at once.
    pub(super) fn held_for(
        &self,
        kind: FaultKind,
        it: &ServeInteraction,
        delay: Duration,
    ) -> Duration {
        let f = &self.opts.faults;
        match kind {
            FaultKind::RateLimited | FaultKind::ServerError => Duration::ZERO,
            FaultKind::Latency => delay
                .saturating_add(Duration::from_millis(f.added_latency_ms))
                .min(MAX_DELAY),
            FaultKind::Drip => {
                let chunks = it
                    .response
                    .body
                    .len()
                    .div_ceil(crate::faults::DRIP_CHUNK_BYTES);
                let drip = Duration::from_millis(f.drip_interval_ms)
                    .saturating_mul(u32::try_from(chunks).unwrap_or(u32::MAX));
                delay.saturating_add(drip)
            }
            FaultKind::Truncated | FaultKind::Malformed => delay,
        }
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
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::faults::{FaultKind, FaultPlan};
    use crate::server::{ReplayServer, HEADER_FAULT};
    use serde_json::{json, Value};
    use std::time::{Duration, Instant};

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
            crate::faults::FAULT_ATTEMPT_CAP,
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
}
