//! Recorded responses ready for the wire, and the latency they are served
//! with. A recording is turned into a [`Prepared`] once, at start, so a
//! header a client could not parse is dropped then and answering cannot
//! fail; delays are bounded so a typo in a latency never hangs a suite
//! (`Shared::scaled`, in state.rs, reads this file's bound: this file names
//! nothing of the state's).

use std::time::Duration;

use wiremock::http::{HeaderName, HeaderValue};
use wiremock::ResponseTemplate;

use crate::cassette::{RecordedResponse, HOP_BY_HOP_HEADERS};

/// Longest delay ever applied, whatever latency_ms x scale says.
pub(super) const MAX_DELAY: Duration = Duration::from_secs(600);

/// A response ready to go on the wire: header names/values already parsed,
/// body already serialised, so answering never re-encodes or fails.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub(super) status: u16,
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    pub(super) body: Vec<u8>,
}

impl Prepared {
    pub(super) fn from_recorded(r: &RecordedResponse) -> Prepared {
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

    pub(super) fn template(&self, body: Vec<u8>) -> ResponseTemplate {
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

pub(super) fn with_delay(t: ResponseTemplate, d: Duration) -> ResponseTemplate {
    if d.is_zero() {
        t
    } else {
        t.set_delay(d)
    }
}
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::cassette::Cassette;
    use crate::server::ReplayOptions;
    use serde_json::json;
    use std::time::{Duration, Instant};

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
    async fn the_model_time_a_run_was_served_is_its_scaled_holds_per_run() {
        let c = reqwest::Client::new();
        let s = server(ReplayOptions {
            latency_scale: 0.5,
            capture: true,
            ..fast()
        })
        .await;
        // execute/t1/a0/0 is recorded at 200 ms: served at scale 0.5 it is
        // held 100 ms; the scripted faults before it (attempts 0, 1) and
        // plan/0 (0 ms) are held nothing.
        for (key, attempt) in [
            ("plan/0", 0),
            ("execute/t1/a0/0", 0),
            ("execute/t1/a0/0", 2),
        ] {
            let role = key.split('/').next().unwrap();
            call(
                &c,
                &s.base_url_for(CASE, 0),
                "/v1/messages",
                role,
                key,
                attempt,
                &json!({}),
            )
            .await;
        }
        let end = Instant::now() + Duration::from_secs(60);
        assert_eq!(s.take_model_time(CASE, 0, end), Duration::from_millis(100));
        // Taken once; another run's holds are its own.
        assert_eq!(s.take_model_time(CASE, 0, end), Duration::ZERO);
        assert_eq!(s.take_model_time(CASE, 1, end), Duration::ZERO);
        // Not kept when the server keeps nothing of its runs.
        let s = server(ReplayOptions {
            latency_scale: 0.5,
            ..fast()
        })
        .await;
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
        assert_eq!(s.take_model_time(CASE, 0, end), Duration::ZERO);
    }
}
