//! Hybrid replay (design doc 002 §10: "did the model's behaviour change?").
//! A case-run's calls are answered from its recording while the recording
//! saw them: the replay server matches the case, run, call key, the reply's
//! recording conditions (model, sampling, prompt and tool digests) and any
//! conditional text, exactly as a plain replay does. The first call it did
//! not see, and every call after it, goes live through the proxy's budgeted
//! upstream path (`go_live`). The switch is one-way: once a live reply is in
//! the conversation, a recorded reply would answer a conversation nobody
//! recorded.

use super::{Call, Forwarded, RunReg, Shared};
use bytes::Bytes;
use harness::replay::server::HEADER_MISS;
use std::time::{Duration, Instant};

/// How long the loopback replay server may take to answer one call (it
/// answers from memory; a recorded latency is scaled to 0 in hybrid).
const REPLAY_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The recording's answer to this call, or None when the recording did not
/// see it (the case-run has diverged: this call and the rest go live). A
/// replay server that cannot be asked is an answer too: a 502 the proxy made
/// up, noted as a failure, so the case-run is never scored as measured.
pub(super) async fn from_recording(
    sh: &Shared,
    slot: &str,
    reg: &RunReg,
    replay_base: &str,
    tail: &str,
    call: &Call,
    body: &Bytes,
) -> Option<Forwarded> {
    let diverged = sh
        .lock_runs()
        .get(slot)
        .is_none_or(|s| s.traffic.diverged.is_some());
    if diverged {
        return None;
    }
    let t0 = Instant::now();
    let mut rb = sh
        .local
        .post(format!("{replay_base}{tail}"))
        .timeout(reg.timeout.min(REPLAY_ANSWER_TIMEOUT))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.clone());
    for (name, v) in call.headers() {
        rb = rb.header(name, v);
    }
    let failed = |why: String| {
        sh.with_slot(slot, |t| t.upstream_failed.push(why.clone()));
        Some(super::made_up(502, why, t0, 0.0))
    };
    let resp = match rb.send().await {
        Ok(r) => r,
        Err(e) => return failed(format!("hybrid: the replay server did not answer: {e}")),
    };
    let miss = resp.headers().contains_key(HEADER_MISS);
    let status = resp.status().as_u16();
    let header = |n: reqwest::header::HeaderName| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let retry_after = header(reqwest::header::RETRY_AFTER);
    let body = match super::read_capped(resp, super::MAX_RESPONSE_BYTES).await {
        Ok(b) => b,
        Err(e) => return failed(format!("hybrid: the replay server's answer: {e}")),
    };
    if miss {
        let why = miss_message(&body);
        sh.with_slot(slot, |t| {
            t.diverged.get_or_insert(why);
        });
        return None;
    }
    sh.with_slot(slot, |t| t.replayed += 1);
    Some(Forwarded {
        status,
        content_type,
        retry_after,
        body,
        latency_ms: t0.elapsed().as_millis().min(u64::MAX as u128) as u64,
        booked_usd: 0.0,
        failed: None,
    })
}

/// The replay server's miss message (its `error.message`), or the raw body.
fn miss_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

/// `bench self-test`'s check of this file's one-way switch, through the
/// proxy a `--hybrid` command runs: a recording of three calls and a
/// loopback stand-in for the endpoint, then the traffic of a case-run that
/// goes back to recorded keys after its first unrecorded call (what every
/// diverged conversation does: its next call key was recorded). Ok(what
/// was seen) when every call from the switch on went live; Err(why) when a
/// recorded reply answered after it (the switch is loose) or the probe
/// could not run. An honest harness passes a loose switch, so only this
/// traffic shows it.
pub async fn sticky_probe(dir: &std::path::Path) -> Result<String, ProbeError> {
    use harness::model::Protocol;
    let replay = probe::recording(dir).await?;
    let up = probe::Upstream::start().await?;
    let proxy = super::LiveProxy::start(super::ProxyConfig {
        endpoint: up.url.clone(),
        api_key_env: None,
        caps: crate::live::budget::Caps::new(probe::CAP_USD, None)
            .map_err(|e| probe::setup(e.to_string()))?,
        max_in_flight: 1,
        live_model: None,
    })
    .await
    .map_err(|e| probe::setup(format!("the probe's proxy: {e}")))?;
    let base = proxy.register(
        probe::CASE,
        0,
        RunReg {
            protocol: Protocol::Anthropic,
            prices: probe::prices(),
            timeout: probe::CALL_TIMEOUT,
            record: false,
            replay: Some(replay.base_url_for(probe::CASE, 0)),
        },
    );
    let mut answered = vec![];
    for key in probe::KEYS {
        answered.push((key, probe::call(&base, key).await?));
    }
    let t = proxy.finish(probe::CASE, 0);
    let seen = answered
        .iter()
        .map(|(k, a)| format!("{k} -> {a}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sticky = answered.iter().skip(1).all(|(_, a)| a == probe::LIVE_TEXT)
        && answered[0].1 == "recorded 0"
        && (t.replayed, t.live) == (1, probe::KEYS.len() as u64 - 1);
    match sticky {
        true => Ok(format!("{seen}; {} replayed, {} live", t.replayed, t.live)),
        false => Err(ProbeError::Loose(format!(
            "{seen}; {} replayed, {} live",
            t.replayed, t.live
        ))),
    }
}

/// Why the hybrid switch's probe did not pass.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The probe could not be set up, or a call of it went unanswered: it
    /// proved nothing either way.
    #[error("the probe could not run: {0}")]
    Setup(String),
    /// A recorded reply answered after the switch to live (or the first
    /// call, which the recording saw, was not replayed): what each call got.
    #[error("a recorded reply answered after the switch to live (or the first call was not replayed): {0}")]
    Loose(String),
}

/// The probe's recording, endpoint stand-in and calls.
mod probe {
    use super::ProbeError;
    use harness::ledger::{Price, PriceTable};
    use harness::model::Protocol;
    use harness::replay::{Cassette, FaultPlan, Recordings, ReplayOptions, ReplayServer};
    use serde_json::{json, Value};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    pub(super) const CASE: &str = "hybrid-sticky-probe";
    const MODEL: &str = "probe-model";
    /// The live command's cap for the probe's three live calls, in USD.
    pub(super) const CAP_USD: f64 = 1.0;
    pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(10);
    pub(super) const LIVE_TEXT: &str = "live";
    /// Recorded, then one the recording never saw (the switch), then two
    /// it did see: both must go live.
    pub(super) const KEYS: [&str; 4] = ["execute/0", "execute/unseen", "execute/1", "execute/2"];
    /// The most of a request the stand-in reads, in bytes.
    const REQUEST_MAX_BYTES: usize = 1 << 20;

    fn reply(text: &str) -> Value {
        json!({"id": "msg_probe", "type": "message", "role": "assistant", "model": MODEL,
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 2}})
    }

    fn body() -> Value {
        json!({"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "probe"}]})
    }

    pub(super) fn prices() -> PriceTable {
        let price = Price {
            input_usd_per_mtok: 1.0,
            output_usd_per_mtok: 1.0,
        };
        [(MODEL.to_string(), price)].into()
    }

    /// Three execute calls (`execute/0..2`), recorded under the probe's
    /// conditions.
    pub(super) async fn recording(dir: &std::path::Path) -> Result<ReplayServer, ProbeError> {
        let conditions = harness::model::Conditions::of_body(Protocol::Anthropic, &body());
        let interactions: Vec<Value> = (0..3)
            .map(|i| {
                json!({"role": "execute", "call_key": format!("execute/{i}"),
                       "request": {"method": "POST", "path": "/v1/messages", "body": null, "body_sha256": null},
                       "response": {"status": 200, "headers": {"content-type": "application/json"},
                                    "body": reply(&format!("recorded {i}"))},
                       "latency_ms": 0})
            })
            .collect();
        let c = json!({"format": "harness-cassette/2", "case": CASE, "protocol": "anthropic", "model": MODEL,
                       "made": {"how": "scripted", "when": "2026-12-07", "by": "bench self-test",
                                "temperature": null, "seed": null, "notes": "the hybrid switch's probe"},
                       "conditions": {"execute": conditions},
                       "runs": [{"run": 0, "interactions": interactions}]});
        std::fs::create_dir_all(dir).map_err(|e| setup(format!("{}: {e}", dir.display())))?;
        let path = dir.join(format!("{CASE}.json"));
        std::fs::write(&path, c.to_string())
            .map_err(|e| setup(format!("{}: {e}", path.display())))?;
        let mut rec = Recordings::new();
        let cas = Cassette::load(&path).map_err(|e| setup(format!("{}: {e}", path.display())))?;
        rec.add(cas, path).map_err(|e| setup(e.to_string()))?;
        let opts = ReplayOptions {
            strict: false,
            latency_scale: 0.0,
            faults: FaultPlan::none(),
            capture: false,
            serve_as_run: None,
        };
        ReplayServer::start(rec, opts)
            .await
            .map_err(|e| setup(format!("the probe's replay server: {e}")))
    }

    pub(super) fn setup(why: String) -> ProbeError {
        ProbeError::Setup(why)
    }

    /// A loopback endpoint that answers every request with `LIVE_TEXT`.
    pub(super) struct Upstream {
        pub(super) url: String,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Upstream {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Upstream {
        pub(super) async fn start() -> Result<Upstream, ProbeError> {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| setup(format!("the probe's endpoint: {e}")))?;
            let url = format!(
                "http://{}",
                l.local_addr().map_err(|e| setup(e.to_string()))?
            );
            let task = tokio::spawn(async move {
                while let Ok((conn, _)) = l.accept().await {
                    tokio::spawn(answer(conn));
                }
            });
            Ok(Upstream { url, task })
        }
    }

    /// Read one request (headers and content-length body), answer it.
    async fn answer(mut conn: tokio::net::TcpStream) {
        let mut buf = vec![];
        let mut chunk = [0u8; 8192];
        loop {
            let Ok(n) = conn.read(&mut chunk).await else {
                return;
            };
            if n == 0 || buf.len() > REQUEST_MAX_BYTES {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            if crate::http_request::complete_body(&buf).is_some() {
                break;
            }
        }
        let body = reply(LIVE_TEXT).to_string();
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = conn.write_all(resp.as_bytes()).await;
    }

    /// One call through the proxy; the text of its reply.
    pub(super) async fn call(base: &str, key: &str) -> Result<String, ProbeError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| setup(e.to_string()))?;
        let r = http
            .post(format!("{base}/v1/messages"))
            .header("x-harness-call-role", "execute")
            .header("x-harness-call-key", key)
            .header("x-harness-attempt", "0")
            .timeout(CALL_TIMEOUT)
            .body(body().to_string())
            .send()
            .await
            .map_err(|e| setup(format!("{key}: the proxy did not answer: {e}")))?;
        let status = r.status().as_u16();
        let v: Value = r.json().await.map_err(|e| setup(format!("{key}: {e}")))?;
        match v["content"][0]["text"].as_str() {
            Some(t) if status == 200 => Ok(t.to_string()),
            _ => Err(setup(format!("{key}: the proxy answered {status}: {v}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LiveProxy, ProxyConfig, RunReg};
    use crate::live::budget::Caps;
    use harness::ledger::{Price, PriceTable};
    use harness::model::Protocol;
    use harness::replay::{Cassette, FaultPlan, Recordings, ReplayOptions, ReplayServer};
    use serde_json::{json, Value};
    use std::time::Duration;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn reply(text: &str) -> Value {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m1",
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 10}})
    }

    fn body(model: &str) -> Value {
        json!({"model": model, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]})
    }

    /// A recording of three execute calls, made under model m1's conditions.
    async fn recording(dir: &std::path::Path) -> ReplayServer {
        let conditions = harness::model::Conditions::of_body(Protocol::Anthropic, &body("m1"));
        let interactions: Vec<Value> = (0..3)
            .map(|i| {
                json!({"role": "execute", "call_key": format!("execute/{i}"),
                       "request": {"method": "POST", "path": "/v1/messages", "body": null, "body_sha256": null},
                       "response": {"status": 200, "headers": {"content-type": "application/json"},
                                    "body": reply(&format!("recorded {i}"))},
                       "latency_ms": 0})
            })
            .collect();
        let c = json!({"format": "harness-cassette/2", "case": "c", "protocol": "anthropic", "model": "m1",
                       "made": {"how": "scripted", "when": "2026-12-04", "by": "test",
                                "temperature": null, "seed": null, "notes": ""},
                       "conditions": {"execute": conditions},
                       "runs": [{"run": 0, "interactions": interactions}]});
        let path = dir.join("c.json");
        std::fs::write(&path, c.to_string()).unwrap();
        let mut rec = Recordings::new();
        rec.add(Cassette::load(&path).unwrap(), path).unwrap();
        ReplayServer::start(
            rec,
            ReplayOptions {
                strict: false,
                latency_scale: 0.0,
                faults: FaultPlan::none(),
                capture: false,
                serve_as_run: None,
            },
        )
        .await
        .unwrap()
    }

    /// The recording answers what it saw; the first call it did not see goes
    /// live, and so does every later one, even a call it did see (a recorded
    /// reply would answer a conversation nobody recorded). `--model` keeps
    /// any other model from reaching the endpoint.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replays_until_the_first_unseen_call_then_stays_live() {
        let dir = tempfile::tempdir().unwrap();
        let replay = recording(dir.path()).await;
        let up = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply("live")))
            .mount(&up)
            .await;
        let proxy = LiveProxy::start(ProxyConfig {
            endpoint: up.uri(),
            api_key_env: None,
            caps: Caps::new(1.0, None).unwrap(),
            max_in_flight: 2,
            live_model: Some("m2".into()),
        })
        .await
        .unwrap();
        let price = Price {
            input_usd_per_mtok: 1.0,
            output_usd_per_mtok: 5.0,
        };
        let prices: PriceTable = [("m1".to_string(), price), ("m2".to_string(), price)].into();
        let base = proxy.register(
            "c",
            0,
            RunReg {
                protocol: Protocol::Anthropic,
                prices,
                timeout: Duration::from_secs(10),
                record: true,
                replay: Some(replay.base_url_for("c", 0)),
            },
        );
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let call = |key: &str, model: &str| {
            http.post(format!("{base}/v1/messages"))
                .header("x-harness-call-role", "execute")
                .header("x-harness-call-key", key.to_string())
                .header("x-harness-attempt", "0")
                .body(body(model).to_string())
                .send()
        };
        let text = |v: Value| {
            v["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let r = call("execute/0", "m1").await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(text(r.json().await.unwrap()), "recorded 0");
        assert!(up.received_requests().await.unwrap().is_empty());
        // Another model: the recording never saw it, so it goes live.
        let r = call("execute/1", "m2").await.unwrap();
        assert_eq!(text(r.json().await.unwrap()), "live");
        // Recorded and matching, but after the switch: still live.
        let r = call("execute/2", "m1").await.unwrap();
        assert_eq!(r.status(), 400, "--model m2 keeps m1 off the endpoint");
        assert_eq!(up.received_requests().await.unwrap().len(), 1);
        let t = proxy.finish("c", 0);
        assert_eq!((t.replayed, t.live), (1, 1), "{t:?}");
        assert!(t.live_usd > 0.0);
        let why = t.diverged.expect("the switch is noted");
        assert!(
            why.contains("model: recorded m1, requested m2"),
            "the first differing field leads: {why}"
        );
        assert_eq!(
            t.exchanges.len(),
            2,
            "the replayed and the live call are kept"
        );
        assert_eq!(t.rejected.len(), 1, "{:?}", t.rejected);
        assert!(t.rejected[0].contains("--model \"m2\""), "{:?}", t.rejected);
    }

    /// The self-test's probe passes the one-way switch (a switch that asks
    /// the recording again after it went live fails it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_self_tests_probe_holds_for_the_one_way_switch() {
        let dir = tempfile::tempdir().unwrap();
        let seen = super::sticky_probe(dir.path()).await.unwrap();
        assert!(seen.contains("1 replayed, 3 live"), "{seen}");
    }
}
