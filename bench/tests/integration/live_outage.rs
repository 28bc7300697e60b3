//! An endpoint that fails is not a measurement. Each test stands up a real
//! misbehaving endpoint on 127.0.0.1 (wiremock, or a raw socket for a
//! truncated reply) and runs `bench run --hybrid` through the bench's real
//! path (the proxy, the harness, the summary): a case whose executor prompt
//! changed replays its plan call and goes live from its first execute call.
//! Whatever the failure (overloaded past retries, slower than the run's
//! clock, an unparseable or truncated 200, usage above what the request
//! could bill), the case-run is not measured and says the endpoint's
//! failure first; its live calls and dollars are in the traffic; the hybrid
//! suite does not take it as observed. Before: measured, "1 of 1 measured",
//! the outage replayed offline next time; a slow endpoint's billed call
//! shown as "0 live ($0.0000)"; garbage 200s reported as the command cap;
//! a reply claiming 900,000,000 output tokens booked at $27,000.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const GOOD: &str =
    "ending = \"GOAL_MET\"\nverified = [\"t1\", \"t2\", \"t3\"]\npredicate_met = true";

/// A suite of one case, `new-prompt`: the demo case with another executor
/// prompt (so its execute calls go live), its run.toml edited by `spec`.
fn suite_with(root: &Path, spec: impl Fn(String) -> String) -> PathBuf {
    let suite = root.join("suites");
    add_case_from("suites/demo/p95-index", &suite, "happy", "new-prompt", GOOD);
    std::fs::remove_file(suite.join("happy/new-prompt/scenario.json")).unwrap();
    let p = suite.join("happy/new-prompt/run.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let text = spec(format!(
        "{text}\n[prompts]\nexecutor_extra = \"Be terse.\"\n"
    ));
    std::fs::write(&p, text).unwrap();
    suite
}

/// Two HTTP attempts per call instead of five: the outage is the same,
/// the test shorter.
fn two_attempts(text: String) -> String {
    text.replacen(
        "max_tokens = 8192",
        "max_tokens = 8192\nhttp_attempts = 2",
        1,
    )
}

struct Ran {
    code: i32,
    summary: Value,
    log: String,
    out: PathBuf,
}

fn hybrid_run(root: &Path, suite: &Path, endpoint: &str, max_usd: &str) -> Ran {
    let out = root.join("out");
    let (code, summary, log) = bench_run(
        suite,
        &out,
        &[
            "--category",
            "happy",
            "--hybrid",
            "--endpoint",
            endpoint,
            "--protocol",
            "anthropic",
            "--max-usd",
            max_usd,
        ],
    );
    Ran {
        code,
        summary,
        log,
        out,
    }
}

/// The case-run is not measured, leads with the endpoint's failure (which
/// says `says`), counts its live calls, and is left out of the hybrid
/// suite; returns the run's record.
fn assert_unmeasured(r: &Ran, says: &str) -> Value {
    let (s, log) = (&r.summary, &r.log);
    assert_eq!(r.code, 1, "{log}");
    let run = s["cases"][0]["runs"][0].clone();
    assert_eq!(
        run["bench_fault"]["kind"], "live_not_measured",
        "{run}\n{log}"
    );
    let cause = run["cause"].as_str().unwrap_or_default();
    assert!(
        cause.starts_with("live call not answered by the model: ") && cause.contains(says),
        "the endpoint's failure first, saying {says:?}: {cause}\n{log}"
    );
    let fail = log
        .lines()
        .find(|l| l.starts_with("FAIL happy/new-prompt run 0: "))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        fail.starts_with("FAIL happy/new-prompt run 0: live call not answered by the model: "),
        "{fail}"
    );
    assert!(run["live_calls"]["live"].as_u64().unwrap() >= 1, "{run}");
    assert!(
        log.contains("0 of 1 measured under their own conditions"),
        "{log}"
    );
    assert!(
        log.contains("hybrid     0 of 1 cases observed whole"),
        "{log}"
    );
    assert!(
        !r.out.join("hybrid/suite/happy/new-prompt").exists(),
        "an outage is never replayed offline as observed: {log}"
    );
    run
}

fn reply(usage: Value) -> Value {
    json!({"id": "msg_standin", "type": "message", "role": "assistant", "model": "claude-opus-5",
        "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
        "stop_sequence": null, "usage": usage})
}

/// A wiremock endpoint answering every POST with `answer`.
fn endpoint(
    rt: &tokio::runtime::Runtime,
    answer: wiremock::ResponseTemplate,
) -> wiremock::MockServer {
    rt.block_on(async {
        let s = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(answer)
            .mount(&s)
            .await;
        s
    })
}

#[test]
fn an_endpoint_overloaded_past_its_retries_is_not_measured() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = endpoint(
        &rt,
        wiremock::ResponseTemplate::new(529)
            .insert_header("retry-after", "0")
            .set_body_json(json!({"type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    );
    let t = tempfile::tempdir().unwrap();
    let suite = suite_with(t.path(), two_attempts);
    let r = hybrid_run(t.path(), &suite, &up.uri(), "1");
    let run = assert_unmeasured(&r, "HTTP 529");
    assert_eq!(run["ending"], "UNRECOVERABLE_ERROR", "{run}");
    let sent = rt.block_on(up.received_requests()).unwrap().len() as u64;
    assert_eq!(
        run["live_calls"]["live"], sent,
        "every call sent is counted: {run}"
    );
}

#[test]
fn an_endpoint_slower_than_the_runs_clock_is_not_measured_and_its_call_is_counted() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = endpoint(
        &rt,
        wiremock::ResponseTemplate::new(200)
            .set_body_json(reply(json!({"input_tokens": 500, "output_tokens": 5})))
            .set_delay(std::time::Duration::from_secs(60)),
    );
    let t = tempfile::tempdir().unwrap();
    let suite = suite_with(t.path(), |s| {
        s.replacen("wall_clock_limit_s = 28800", "wall_clock_limit_s = 4", 1)
    });
    let r = hybrid_run(t.path(), &suite, &up.uri(), "1");
    let run = assert_unmeasured(&r, "slower than the run's clock");
    assert_eq!(run["ending"], "TIME_LIMIT", "{run}");
    assert_eq!(run["live_calls"]["live"], 1, "{run}");
    assert!(
        run["live_calls"]["live_usd"].as_f64().unwrap() > 0.0,
        "the call in flight is counted at its reservation: {run}"
    );
    assert!(!r.log.contains("0 live ($0.0000)"), "{}", r.log);
}

#[test]
fn an_unparseable_200_is_the_endpoints_fault_not_the_command_cap() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = endpoint(
        &rt,
        wiremock::ResponseTemplate::new(200)
            .insert_header("content-type", "application/json")
            .set_body_string("<html>502 Bad Gateway</html>"),
    );
    let t = tempfile::tempdir().unwrap();
    let suite = suite_with(t.path(), |s| s);
    let r = hybrid_run(t.path(), &suite, &up.uri(), "1");
    let run = assert_unmeasured(&r, "with a body that is not a anthropic reply");
    assert!(
        run["live_calls"]["live_usd"].as_f64().unwrap() > 0.0,
        "a 2xx may have been billed: booked at its worst case, counted: {run}"
    );
}

/// A raw endpoint that answers every request with a 200 whose body stops
/// halfway (Content-Length says more than is sent) and hangs up. It reads
/// the whole request first, so the hang-up is a cut body, not a reset.
fn truncating_endpoint() -> String {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = read_request(&mut s);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n{\"id\": \"msg_standin\", \"type\": \"mess",
            );
            let _ = s.flush();
        }
    });
    format!("http://{addr}")
}

/// Read one HTTP/1.1 request: its head, then Content-Length bytes of body.
fn read_request(s: &mut std::net::TcpStream) -> std::io::Result<()> {
    use std::io::Read;
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if got.len() >= end + 4 + len {
            return Ok(());
        }
    }
}

#[test]
fn a_truncated_200_is_the_endpoints_fault_not_the_command_cap() {
    let t = tempfile::tempdir().unwrap();
    // Five attempts, each booked at its worst case (a 2xx may have been
    // billed): the fifth is refused by the $1 cap, which came after the
    // endpoint's failure and is listed after it.
    let suite = suite_with(t.path(), |s| s);
    let r = hybrid_run(t.path(), &suite, &truncating_endpoint(), "1");
    let run = assert_unmeasured(&r, "upstream body read failed");
    let failures = run["failures"].as_array().unwrap();
    let cap = failures
        .iter()
        .position(|f| f.as_str().unwrap().contains("command-wide cap refused"));
    assert!(cap.is_some_and(|i| i > 0), "{run}");
}

#[test]
fn usage_above_what_the_request_could_bill_is_refused_before_it_is_booked() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = endpoint(
        &rt,
        wiremock::ResponseTemplate::new(200).set_body_json(reply(
            json!({"input_tokens": 500, "output_tokens": 900_000_000u64}),
        )),
    );
    let t = tempfile::tempdir().unwrap();
    let suite = suite_with(t.path(), two_attempts);
    let r = hybrid_run(t.path(), &suite, &up.uri(), "0.5");
    assert_unmeasured(
        &r,
        "claims 900000000 output tokens, above the request's max_tokens 8192",
    );
    let live: Value =
        serde_json::from_slice(&std::fs::read(r.out.join("live.json")).unwrap()).unwrap();
    let booked = live["spend"]["booked_usd"].as_f64().unwrap();
    assert!(booked <= 0.5, "never booked above --max-usd: {live}");
    // Input above what the request's bytes could hold: the same.
    let up2 = endpoint(
        &rt,
        wiremock::ResponseTemplate::new(200)
            .set_body_json(reply(json!({"input_tokens": 5, "output_tokens": 5,
                "cache_read_input_tokens": 50_000_000u64}))),
    );
    let t2 = tempfile::tempdir().unwrap();
    let suite2 = suite_with(t2.path(), two_attempts);
    let r2 = hybrid_run(t2.path(), &suite2, &up2.uri(), "0.5");
    assert_unmeasured(&r2, "input tokens, above the");
}
