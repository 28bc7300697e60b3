//! Live runs end to end with real processes: `bench record` and `bench run
//! --endpoint` drive the real harness binary through the bench's live proxy
//! to a wiremock MockServer standing in for an OpenAI-compatible endpoint
//! (answers: the demo case's scripted replies rendered as OpenAI bodies,
//! matched by the `x-harness-call-key` header the proxy passes on).
//!
//! What is checked: a recording of a case with no cassette yet replays with
//! `bench run` to the same endings; the API key reaches the upstream and no
//! file anywhere (cassettes, state dirs, outputs) holds it; the command-wide
//! caps (`--max-usd`, and `--max-tokens` with a $0 price table) refuse later
//! calls, the command says so and exits non-zero, and booked spend stays
//! under the cap.

use harness::replay::{Cassette, MadeHow};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::*;

pub(crate) const KEY_ENV: &str = "BENCH_LIVE_TEST_KEY";
pub(crate) const SENTINEL: &str = "sk-test-SENTINEL-0123456789abcdef";
pub(crate) const MODEL: &str = "fake-model";

/// The demo case as `<suite>/happy/<id>/`, speaking openai to MODEL at the
/// given price, with NO cassette (it is what the recording makes).
pub(crate) fn add_case(suite: &Path, id: &str, price: (f64, f64)) -> PathBuf {
    let dir = suite.join("happy").join(id);
    let demo = repo().join("suites/demo/p95-index");
    for part in ["run.toml", "workspace", "checks"] {
        let src = demo.join(part);
        if src.is_dir() {
            harness::workspace::copy_tree(&src, &dir.join(part)).unwrap();
        } else {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(&src, dir.join(part)).unwrap();
        }
    }
    let mut spec: toml::Table = std::fs::read_to_string(dir.join("run.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let m = spec["model"].as_table_mut().unwrap();
    m.insert("protocol".into(), "openai".into());
    m.insert("base_url".into(), "http://127.0.0.1:9/v1".into());
    m.insert("api_key_env".into(), KEY_ENV.into());
    m.insert("max_tokens".into(), toml::Value::Integer(1000));
    for r in ["executor", "judge"] {
        m.insert(r.into(), MODEL.into());
    }
    let mut p = toml::Table::new();
    p.insert("input_usd_per_mtok".into(), toml::Value::Float(price.0));
    p.insert("output_usd_per_mtok".into(), toml::Value::Float(price.1));
    let mut prices = toml::Table::new();
    prices.insert(MODEL.into(), toml::Value::Table(p));
    spec.insert("prices".into(), toml::Value::Table(prices));
    std::fs::write(dir.join("run.toml"), toml::to_string(&spec).unwrap()).unwrap();
    std::fs::write(
        dir.join("case.toml"),
        format!(
            "id = \"{id}\"\ncategory = \"happy\"\ntitle = \"demo, live\"\nlatency_cap_ms = 120000\ncost_cap_usd = 1.0\n\n[expect]\nending = \"GOAL_MET\"\nverified = [\"t1\", \"t2\", \"t3\"]\npredicate_met = true\n"
        ),
    )
    .unwrap();
    dir
}

/// The fake upstream: the demo's scripted replies as OpenAI bodies, one mock
/// per call key. With `fault_first_plan`, attempt 0 of `plan/0` gets a 500
/// first (so the recording has a `faults_before`).
pub(crate) async fn upstream(fault_first_plan: bool) -> MockServer {
    let mut sc: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("suites/demo/p95-index/scenario.json")).unwrap(),
    )
    .unwrap();
    sc["protocol"] = "openai".into();
    sc["model"] = MODEL.into();
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("scenario.json");
    std::fs::write(&p, sc.to_string()).unwrap();
    let cassette = harness::scenario::Scenario::load(&p)
        .unwrap()
        // Only its rendered replies are used (as the mock upstream's).
        .to_cassette(
            "2026-01-01",
            "test",
            &harness::model::conditions::every_role_as(
                harness::model::Protocol::Openai,
                &Value::Null,
            ),
        )
        .unwrap();
    let server = MockServer::start().await;
    if fault_first_plan {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("x-harness-call-key", "plan/0"))
            .and(header("x-harness-attempt", "0"))
            .respond_with(ResponseTemplate::new(500).set_body_string("overloaded, try again"))
            .with_priority(1)
            .mount(&server)
            .await;
    }
    for it in cassette["runs"][0]["interactions"].as_array().unwrap() {
        let key = it["call_key"].as_str().unwrap().to_string();
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("x-harness-call-key", key.as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(it["response"]["body"].clone()))
            .mount(&server)
            .await;
    }
    server
}

/// Run the bench with args and (name, value) env; (exit code, stdout+stderr).
pub(crate) async fn bench(
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
) -> (i32, String) {
    tokio::task::spawn_blocking(move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bench"));
        c.args(&args).env("CI", "1").env_remove(KEY_ENV);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        if std::env::var_os("LIVE_TEST_LOG").is_some() {
            eprintln!(
                "=== bench {args:?}\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    })
    .await
    .unwrap()
}

pub(crate) fn s(p: &Path) -> String {
    p.display().to_string()
}

pub(crate) fn record_args(endpoint: &str, case: &Path, root: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "record",
        "--endpoint",
        endpoint,
        "--protocol",
        "openai",
        "--model",
        MODEL,
        "--case",
        &s(case),
        "--out",
        &s(&root.join("recordings")),
        "--work",
        &s(&root.join("work")),
        "--harness",
        &s(&harness_bin()),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

/// Every file under `root` (recursively), for the leak check.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

fn live_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("live.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_and_the_key_never_lands_on_disk() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let case = add_case(&root.join("suite"), "live-demo", (1.0, 2.0));
    let up = upstream(true).await;
    let endpoint = format!("{}/v1", up.uri());
    let (code, log) = bench(
        record_args(
            &endpoint,
            &case,
            root,
            &[
                "--runs",
                "2",
                "--seed",
                "7",
                "--api-key-env",
                KEY_ENV,
                "--max-usd",
                "1",
            ],
        ),
        vec![(KEY_ENV, SENTINEL)],
    )
    .await;
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains("GOAL_MET") && log.contains("recorded live-demo (2 run(s))"),
        "{log}"
    );

    // The cassette: loads (the loader refuses secrets), two variants, recorded.
    let path = root.join("recordings/live-demo.json");
    let c = Cassette::load(&path).unwrap();
    assert_eq!(c.case, "live-demo");
    assert_eq!(c.model, MODEL);
    assert_eq!(c.runs.len(), 2);
    assert_eq!(c.made.how, MadeHow::Recorded);
    assert!(
        c.made.by.starts_with("bench record ") && c.made.by.contains(&up.address().to_string()),
        "{}",
        c.made.by
    );
    assert!(!c.made.by.contains("/v1"), "host only: {}", c.made.by);
    assert_eq!((c.made.temperature, c.made.seed), (Some(0.8), Some(7)));
    assert!(c.made.notes.contains("seed 7+i"), "{}", c.made.notes);
    chrono::DateTime::parse_from_rfc3339(&c.made.when).unwrap();
    for (i, r) in c.runs.iter().enumerate() {
        let o = r.outcome.as_ref().unwrap();
        assert_eq!(
            (o.ending.as_str(), o.exit_code, o.predicate_met),
            ("GOAL_MET", 0, true)
        );
        assert_eq!(o.calls as usize, r.interactions.len());
        assert!(o.tokens > 0);
        let plan = &r.interactions[0];
        assert_eq!(plan.call_key, "plan/0");
        // The 500 before the plan is kept as a fault, the 200 as the answer.
        assert_eq!(plan.faults_before.len(), 1);
        assert_eq!(plan.faults_before[0].status, 500);
        assert_eq!(plan.response.status, 200);
        let body = plan.request.body.as_ref().unwrap();
        assert_eq!(body["seed"], 7 + i as u64, "run {i} uses seed 7+{i}");
        assert_eq!(body["temperature"], 0.8);
        assert_eq!(body["model"], MODEL);
        assert_eq!(
            plan.request.body_sha256.as_deref(),
            Some(harness::replay::body_sha256(body).as_str())
        );
        assert_eq!(
            plan.response.headers.keys().collect::<Vec<_>>(),
            ["content-type"]
        );
    }

    // The upstream got the key, as a bearer token, on every request.
    let got = up.received_requests().await.unwrap();
    assert!(!got.is_empty());
    for r in &got {
        assert_eq!(
            r.headers.get("authorization").unwrap().to_str().unwrap(),
            format!("Bearer {SENTINEL}")
        );
        assert!(r.headers.get("x-api-key").is_none());
    }

    // Replay the recording with `bench run`: the same endings.
    let suite2 = root.join("suite2");
    let case2 = suite2.join("happy/live-demo");
    harness::workspace::copy_tree(&case, &case2).unwrap();
    std::fs::copy(&path, case2.join("cassette.json")).unwrap();
    let replay = |out: PathBuf| {
        bench(
            vec![
                "run".into(),
                "--suite".into(),
                s(&suite2),
                "--category".into(),
                "happy".into(),
                "--out".into(),
                s(&out),
                "--runs-per-case".into(),
                "2".into(),
                "--harness".into(),
                s(&harness_bin()),
            ],
            vec![],
        )
    };
    // The case's own spec sends no temperature; the recording was made at
    // 0.8 (the record overlay): replay refuses, and says so first.
    let (code, log) = replay(root.join("run-out-other")).await;
    assert_ne!(code, 0, "{log}");
    let fail = log
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        fail.contains(
            ": replayed under other conditions: temperature: recorded 0.8, requested (not sent)"
        ),
        "{fail}"
    );
    // Under the recorded conditions, the same endings.
    let spec_path = case2.join("run.toml");
    let mut spec: toml::Table = std::fs::read_to_string(&spec_path)
        .unwrap()
        .parse()
        .unwrap();
    spec["model"]
        .as_table_mut()
        .unwrap()
        .insert("temperature".into(), toml::Value::Float(0.8));
    std::fs::write(&spec_path, toml::to_string(&spec).unwrap()).unwrap();
    let out = root.join("run-out");
    let (code, log) = replay(out.clone()).await;
    assert_eq!(code, 0, "{log}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let runs = summary["cases"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (r, rec) in runs.iter().zip(&c.runs) {
        assert_eq!(r["ending"], rec.outcome.as_ref().unwrap().ending.as_str());
    }

    // No file anywhere holds the key: cassettes, state dirs, outputs.
    let all = files(root);
    assert!(all.iter().any(|f| f.ends_with("state/report.json")));
    for f in all {
        let b = std::fs::read(&f).unwrap();
        assert!(
            !b.windows(SENTINEL.len()).any(|w| w == SENTINEL.as_bytes()),
            "{} holds the API key",
            f.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_run_live_with_a_tiny_max_usd_stops_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let suite = root.join("suite");
    add_case(&suite, "live-demo", (1.0, 2.0));
    let up = upstream(false).await;
    let out = root.join("out");
    // One demo run books ~$0.0154 and each call reserves ~$0.007: run 0
    // fits, run 1 is cut short after its first calls, run 2 never starts.
    let cap = 0.025;
    let (code, log) = bench(
        vec![
            "run".into(),
            "--suite".into(),
            s(&suite),
            "--category".into(),
            "happy".into(),
            "--out".into(),
            s(&out),
            "--runs-per-case".into(),
            "3".into(),
            "--harness".into(),
            s(&harness_bin()),
            "--endpoint".into(),
            format!("{}/v1", up.uri()),
            "--max-usd".into(),
            cap.to_string(),
            "--record".into(),
            s(&root.join("recordings")),
        ],
        vec![],
    )
    .await;
    assert_eq!(code, 1, "{log}");
    assert!(log.contains("COMMAND CAP REACHED after"), "{log}");
    let live = live_json(&out);
    let booked = live["spend"]["booked_usd"].as_f64().unwrap();
    assert!(
        booked > 0.0 && booked <= cap,
        "booked {booked} of {cap}: {live}"
    );
    assert!(live["spend"]["refused"].as_u64().unwrap() >= 1);
    assert_eq!(live["spend"]["held_usd"], 0.0);
    let reached = &live["cap_reached"];
    assert!(reached["message"]
        .as_str()
        .unwrap()
        .contains("--max-usd 0.025"));
    assert_eq!(reached["after_case_runs"], 1, "{live}");
    assert_eq!(
        (
            reached["cut_short"].as_u64(),
            reached["not_started"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(
        log.contains("COMMAND CAP REACHED after 1 case-run(s)"),
        "{log}"
    );
    // Run 0 completed and is recorded; the cut and the unstarted run are not.
    let c = Cassette::load(root.join("recordings/live-demo.json")).unwrap();
    assert_eq!(c.runs.len(), 1);
    assert_eq!(c.runs[0].outcome.as_ref().unwrap().ending, "GOAL_MET");
    assert_eq!(
        live["recordings"][0]["left_out"].as_array().unwrap().len(),
        2
    );
    // The case-runs that did not finish count as failed, never as passing.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let runs = summary["cases"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["passed"], true);
    assert_eq!(
        (runs[1]["passed"].as_bool(), runs[2]["passed"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(runs.iter().any(|r| r["failures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap().contains("command-wide cap"))));
    assert_eq!(summary["passed"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_bounds_a_zero_price_model() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let case = add_case(&root.join("suite"), "live-free", (0.0, 0.0));
    let up = upstream(false).await;
    let endpoint = format!("{}/v1", up.uri());
    // $0 and no --max-tokens: nothing could stop it, so it does not start.
    let (code, log) = bench(
        record_args(&endpoint, &case, root, &["--runs", "2", "--max-usd", "1"]),
        vec![],
    )
    .await;
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("give --max-tokens"), "{log}");
    assert!(up.received_requests().await.unwrap().is_empty());

    let cap = 20_000u64;
    let (code, log) = bench(
        record_args(
            &endpoint,
            &case,
            root,
            &[
                "--runs",
                "2",
                "--max-usd",
                "0",
                "--max-tokens",
                &cap.to_string(),
            ],
        ),
        vec![],
    )
    .await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("COMMAND CAP REACHED") && log.contains("--max-tokens 20000"),
        "{log}"
    );
    let live = live_json(&root.join("work"));
    let tokens = live["spend"]["booked_tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= cap, "{live}");
    assert_eq!(live["spend"]["booked_usd"], 0.0);
    // The report prints tokens as well as dollars.
    assert!(log.contains(&format!("and {tokens} tokens")), "{log}");
    assert!(!up.received_requests().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_live_flags_are_usage_errors() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let case = add_case(&root.join("suite"), "live-demo", (1.0, 2.0));
    let ep = "http://127.0.0.1:9/v1";
    for (args, want) in [
        // --max-usd is required (clap: usage error 2).
        (record_args(ep, &case, root, &[]), "--max-usd"),
        (
            record_args(ep, &case, root, &["--max-usd", "-1"]),
            "--max-usd",
        ),
        (
            record_args(
                ep,
                &case,
                root,
                &["--max-usd", "1", "--api-key-env", "sk-abc123"],
            ),
            "NAME of an environment variable",
        ),
        (
            record_args(
                ep,
                &case,
                root,
                &["--max-usd", "1", "--api-key-env", "BENCH_UNSET_VAR_X"],
            ),
            "not set",
        ),
        (
            record_args(ep, &case, root, &["--max-usd", "1", "--runs", "0"]),
            "--runs",
        ),
        (
            record_args(
                "https://u:p@example.com/v1",
                &case,
                root,
                &["--max-usd", "1"],
            ),
            "credentials",
        ),
        (
            vec![
                "run".into(),
                "--suite".into(),
                s(&root.join("suite")),
                "--max-usd".into(),
                "1".into(),
            ],
            "go with --endpoint",
        ),
        (
            vec![
                "run".into(),
                "--suite".into(),
                s(&root.join("suite")),
                "--endpoint".into(),
                ep.into(),
            ],
            "needs --max-usd",
        ),
    ] {
        let (code, log) = bench(args.clone(), vec![]).await;
        assert_eq!(code, 2, "{args:?}: {log}");
        assert!(log.contains(want), "{args:?}: {log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_echoing_the_key_never_gets_it_onto_disk() {
    // A hosted API answering a bad key with the key in its error body.
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let case = add_case(&root.join("suite"), "live-echo", (1.0, 2.0));
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(401).set_body_string(format!(
            "{{\"error\": {{\"message\": \"Incorrect API key provided: {SENTINEL}\"}}}}"
        )))
        .mount(&up)
        .await;
    let (code, log) = bench(
        record_args(
            &format!("{}/v1", up.uri()),
            &case,
            root,
            &["--runs", "1", "--api-key-env", KEY_ENV, "--max-usd", "1"],
        ),
        vec![(KEY_ENV, SENTINEL)],
    )
    .await;
    // The run ends (401 is fatal to the harness). The endpoint refused the
    // call, so the run measured no model: it is not recorded (an outage
    // replayed next time would read as observed behaviour), and why names
    // the 401 with the key scrubbed out of its body.
    assert_eq!(code, 1, "{log}");
    assert!(log.contains("UNRECOVERABLE_ERROR"), "{log}");
    assert!(!log.contains(SENTINEL), "{log}");
    assert!(
        log.contains("NOT RECORDED live-echo")
            && log.contains("with HTTP 401")
            && log.contains("Incorrect API key provided: [REDACTED]"),
        "{log}"
    );
    assert!(!root.join("recordings/live-echo.json").exists(), "{log}");
    let report =
        std::fs::read_to_string(root.join("work/cases/live-echo/run-0/state/report.json")).unwrap();
    assert!(report.contains("[REDACTED]"), "{report}");
    for f in files(root) {
        let b = std::fs::read(&f).unwrap();
        assert!(
            !b.windows(SENTINEL.len()).any(|w| w == SENTINEL.as_bytes()),
            "{} holds the API key",
            f.display()
        );
    }
}
