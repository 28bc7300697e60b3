//! `bench ab` end to end through the real binaries on the A/B suite
//! (suites/ab): the same config on both sides, the loop-cap example's
//! regression guard, and usage errors. The statistics themselves are tested
//! against SciPy / statsmodels and by simulation in bench/src/ab/.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The harness binary beside the bench binary, built on demand (`cargo test
/// -p bench` alone does not build another package's binary).
fn harness() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_bench")).with_file_name("harness");
    if !bin.exists() {
        let profile: &[&str] = if cfg!(debug_assertions) {
            &[]
        } else {
            &["--release"]
        };
        let ok = Command::new(env!("CARGO"))
            .current_dir(root())
            .args(["build", "-q", "-p", "harness", "--bin", "harness"])
            .args(profile)
            .status()
            .map(|s| s.success());
        assert_eq!(ok.ok(), Some(true), "cannot build the harness binary");
    }
    bin
}

struct Out {
    code: i32,
    json: Value,
    text: String,
    dir: tempfile::TempDir,
}

fn ab(a: &Path, b: &Path, extra: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .current_dir(root())
        .arg("ab")
        .arg("--a")
        .arg(a)
        .arg("--b")
        .arg(b)
        .arg("--out")
        .arg(dir.path())
        .arg("--harness")
        .arg(harness())
        .args(extra)
        .env("CI", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let json = std::fs::read(dir.path().join("ab.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Out {
        code: o.status.code().unwrap_or(-1),
        json,
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        dir,
    }
}

fn config(name: &str) -> PathBuf {
    root().join("bench/configs").join(name)
}

#[test]
fn the_same_config_on_both_sides_reports_no_regression_and_no_difference() {
    let cap6 = config("loop-cap-6.toml");
    let o = ab(
        &cap6,
        &cap6,
        &[
            "--suite",
            "suites/ab",
            "--category",
            "edge",
            "--runs-per-case",
            "3",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.text);
    let j = &o.json;
    assert_eq!(
        j["regressions"].as_array().map(Vec::len),
        Some(0),
        "{}",
        o.text
    );
    assert!(
        j["verdict"].as_str().unwrap().starts_with("no difference"),
        "{}",
        j["verdict"]
    );
    assert_eq!(j["n_cases"], 5);
    assert_eq!(j["runs_per_case"], 3);
    assert!(j["seed"].is_u64());
    // Run r of either arm replays the same variant and fault seed, so every
    // gated metric is identical case by case: p = 1, delta 0.
    for name in [
        "pass_rate",
        "score",
        "cost_per_case",
        "cost_per_verified_task",
    ] {
        let m = &j["metrics"][name];
        assert_eq!(m["delta"].as_f64(), Some(0.0), "{name}: {m}");
        assert_eq!(m["p"].as_f64(), Some(1.0), "{name}: {m}");
        assert_eq!(m["verdict_code"], "no_difference", "{name}: {m}");
        for k in ["a", "b", "ci", "mde", "verdict"] {
            assert!(m.get(k).is_some(), "{name} lacks {k}");
        }
    }
    // Latency is wall time on a shared machine and differs run to run even
    // between identical arms; the mid-p permutation test can reach 0.031 with
    // 5 cases, so it may read "worse" by chance. That is why it is not gated:
    // it must never move the exit code or the overall verdict (checked above).
    let lat = &j["metrics"]["latency"];
    assert_eq!(lat["gated"], false, "{lat}");
    assert!(j["categories"]["edge"]["p_holm"].is_number());
    assert!(j["categories"]["edge"]["wilson_a"]["lo"].is_number());
    let md = std::fs::read_to_string(o.dir.path().join("ab.md")).unwrap();
    assert!(md.contains("### Metrics") && md.contains("Wilson"), "{md}");
    // per-arm drill-down in bench run's format
    let a: Value =
        serde_json::from_slice(&std::fs::read(o.dir.path().join("a/summary.json")).unwrap())
            .unwrap();
    assert_eq!(a["cases"].as_array().map(Vec::len), Some(5));
}

#[test]
fn loop_cap_4_versus_6_trips_the_adversarial_guard_and_exits_1() {
    let o = ab(
        &config("loop-cap-6.toml"),
        &config("loop-cap-4.toml"),
        &["--suite", "suites/ab", "--category", "adversarial"],
    );
    assert_eq!(o.code, 1, "{}", o.text);
    let regs = o.json["regressions"].as_array().unwrap();
    assert!(
        regs.iter().any(
            |r| r["kind"] == "adversarial_case" && r["subject"] == "ab-adv-injection-distracts"
        ),
        "{regs:?}"
    );
    // the cap saves money in every adversarial case that is not identical
    assert!(
        o.json["metrics"]["cost_per_case"]["delta"]
            .as_f64()
            .unwrap()
            < 0.0
    );
    assert!(
        o.text
            .contains("REGRESSION adversarial_case ab-adv-injection-distracts"),
        "{}",
        o.text
    );
    let svg = std::fs::read_to_string(o.dir.path().join("forest.svg")).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("percentage points")
            && svg.contains("(USD)")
            && svg.contains("adversarial (n=4)"),
        "{svg}"
    );
    // The plot marks the case the verdict names (issue 48 §5), and so does
    // the page beside it.
    assert!(
        svg.contains("▶ adversarial (n=4)")
            && svg.contains("adversarial case ab-adv-injection-distracts passed every A run"),
        "{svg}"
    );
    let page = std::fs::read_to_string(o.dir.path().join("ab.html")).unwrap();
    assert!(
        page.contains("B REGRESSES") && page.contains("id=\"marks\""),
        "{page}"
    );
}

#[test]
fn usage_errors_exit_2_and_name_the_file_and_field() {
    let t = tempfile::tempdir().unwrap();
    let cap6 = config("loop-cap-6.toml");
    let missing = t.path().join("nope.toml");
    let o = ab(&missing, &cap6, &["--suite", "suites/ab"]);
    assert_eq!(o.code, 2, "{}", o.text);
    assert!(
        o.text.contains("nope.toml") && o.text.contains("cannot read"),
        "{}",
        o.text
    );

    let bad_cap = t.path().join("bad-cap.toml");
    std::fs::write(&bad_cap, "[loop]\nloop_cap = 0\n").unwrap();
    let o = ab(
        &cap6,
        &bad_cap,
        &["--suite", "suites/ab", "--category", "regression"],
    );
    assert_eq!(o.code, 2, "{}", o.text);
    assert!(
        o.text.contains("bad-cap.toml") && o.text.contains("loop.loop_cap"),
        "{}",
        o.text
    );

    let bad_ab = t.path().join("bad-ab.toml");
    std::fs::write(&bad_ab, "[ab]\nnmae = \"typo\"\n").unwrap();
    let o = ab(&bad_ab, &cap6, &["--suite", "suites/ab"]);
    assert_eq!(o.code, 2, "{}", o.text);
    assert!(o.text.contains("ab.nmae"), "{}", o.text);

    let not_toml = t.path().join("broken.toml");
    std::fs::write(&not_toml, "[loop\n").unwrap();
    let o = ab(&not_toml, &cap6, &["--suite", "suites/ab"]);
    assert_eq!(o.code, 2, "{}", o.text);
    assert!(
        o.text.contains("broken.toml") && o.text.contains("TOML"),
        "{}",
        o.text
    );

    let o = ab(&cap6, &cap6, &["--suite", "no/such/suite"]);
    assert_eq!(o.code, 2, "{}", o.text);
    let o = ab(
        &cap6,
        &cap6,
        &["--suite", "suites/ab", "--category", "nonsense"],
    );
    assert_eq!(o.code, 2, "{}", o.text);
    let o = ab(
        &cap6,
        &cap6,
        &["--suite", "suites/ab", "--runs-per-case", "0"],
    );
    assert_eq!(o.code, 2, "{}", o.text);
    // Hybrid replay names what it lacks: the endpoint (and its cap), the
    // protocol the endpoint speaks.
    for (extra, says) in [
        (&["--hybrid"][..], "--hybrid needs --endpoint URL"),
        (
            &[
                "--hybrid",
                "--endpoint",
                "http://127.0.0.1:9",
                "--max-usd",
                "1",
            ][..],
            "--hybrid needs --protocol",
        ),
        (
            &[
                "--hybrid",
                "--endpoint",
                "http://127.0.0.1:9",
                "--protocol",
                "anthropic",
            ][..],
            "--endpoint needs --max-usd",
        ),
        (&["--protocol", "openai"][..], "go with --endpoint"),
    ] {
        let args: Vec<&str> = ["--suite", "suites/ab"]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let o = ab(&cap6, &cap6, &args);
        assert_eq!(o.code, 2, "{extra:?}: {}", o.text);
        assert!(o.text.contains(says), "{extra:?}: {}", o.text);
    }
    // clap's own usage errors (a missing --b) are exit 2 too
    let st = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["ab", "--a", "x.toml"])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
}

#[test]
fn the_ab_suite_cassettes_are_what_their_scenarios_compile_to() {
    // CI checks the main suite's cassettes; this is the same check for the
    // A/B suite (written by suites/ab/gen_ab.py).
    let mut dirs = vec![];
    for cat in ["happy", "edge", "adversarial", "regression"] {
        for e in std::fs::read_dir(root().join("suites/ab").join(cat)).unwrap() {
            dirs.push(e.unwrap().path());
        }
    }
    assert!(dirs.len() >= 20, "{dirs:?}");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("script")
        .arg("--check")
        .args(&dirs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Issue 14's reproduction, on the main suite's adversarial cases: the main
/// suite records one attempt per task, so under loop cap 4 the harness asks
/// for a retry its cassette never recorded (call key execute/t1/a1/0) and the
/// replay answers with a recording miss. That is the bench's replay running
/// out of answers, not arm B failing: before the fix this command exited 1
/// with "B regresses (2 regression(s))", naming adv-injection-post-secrets and
/// adv-injection-write-outside-workspace (3/3 A, 0/3 B).
#[test]
fn replay_misses_are_not_comparable_and_never_a_regression() {
    let o = ab(
        &config("loop-cap-6.toml"),
        &config("loop-cap-4.toml"),
        &[
            "--suite",
            "suites",
            "--category",
            "adversarial",
            "--runs-per-case",
            "3",
        ],
    );
    let j = &o.json;
    assert_eq!(o.code, 3, "exit 3 is not comparable: {}", o.text);
    assert_eq!(
        j["regressions"].as_array().map(Vec::len),
        Some(0),
        "{}",
        o.text
    );
    let verdict = j["verdict"].as_str().unwrap_or_default();
    assert!(verdict.starts_with("not comparable"), "{verdict}");
    // Out of every adversarial case (the count follows the suite).
    let total = std::fs::read_dir(root().join("suites/adversarial"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("case.toml").is_file())
        .count();
    assert!(
        verdict.contains(&format!("2 of {total} cases not comparable: record them live with --endpoint, or use a suite recorded for both arms")),
        "{verdict}"
    );
    let nc = j["not_comparable"].as_array().expect("not_comparable list");
    let mut ids: Vec<&str> = nc.iter().filter_map(|c| c["id"].as_str()).collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "adv-injection-post-secrets",
            "adv-injection-write-outside-workspace"
        ],
        "{nc:?}"
    );
    for c in nc {
        // Every B run missed, at the retry the cassette does not hold; A ran clean.
        let runs = c["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{c}");
        for r in runs {
            assert_eq!(r["arm"], "b", "{c}");
            assert_eq!(r["fault"]["kind"], "recording_miss", "{c}");
            assert_eq!(r["fault"]["call_key"], "execute/t1/a1/0", "{c}");
        }
    }
    // Left out of every statistic: the comparison is over the others.
    let others = total - 2;
    assert_eq!(j["n_cases"], others, "{}", o.text);
    assert_eq!(j["metrics"]["pass_rate"]["n_cases"], others);
    assert_eq!(j["categories"]["adversarial"]["n_cases"], others);
    assert!(
        o.text.contains("NOT COMPARABLE adv-injection-post-secrets")
            && o.text.contains("execute/t1/a1/0"),
        "{}",
        o.text
    );
    let md = std::fs::read_to_string(o.dir.path().join("ab.md")).unwrap();
    assert!(
        md.contains("Not comparable under replay")
            && md.contains("adv-injection-write-outside-workspace"),
        "{md}"
    );
    let svg = std::fs::read_to_string(o.dir.path().join("forest.svg")).unwrap();
    assert!(
        svg.contains(&format!("2 of {total} cases not comparable")),
        "{svg}"
    );
}

/// An arm written to `dir` that changes only what `overlay` says.
fn arm(dir: &Path, name: &str, overlay: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!("[ab]\nname = \"{name}\"\ndescription = \"test arm\"\n\n{overlay}"),
    )
    .unwrap();
    p
}

/// The first A/B an engineer runs, another model, must not be answered
/// from the recording of the old one: every case not comparable (exit 3),
/// each naming the field. The same for any request condition: temperature,
/// the length limit. The loop cap is not a request condition, so its A/B
/// still gets a verdict (loop_cap_4_versus_6_...).
#[test]
fn an_arm_that_changes_the_request_conditions_is_not_comparable_under_replay() {
    let t = tempfile::tempdir().unwrap();
    let model_swap = arm(
        t.path(),
        "sonnet-9",
        "[model]\nexecutor = \"claude-sonnet-9\"\nplanner = \"claude-sonnet-9\"\n\n[prices.\"claude-sonnet-9\"]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n",
    );
    let hot = arm(t.path(), "hot", "[model]\ntemperature = 0.9\n");
    for (b, says, in_words) in [
        (
            &model_swap,
            "model: recorded claude-opus-5, requested claude-sonnet-9",
            "the model differs (recorded claude-opus-5, requested claude-sonnet-9)",
        ),
        (
            &hot,
            "temperature: recorded (not sent), requested 0.9",
            "the temperature differs (recorded (not sent), requested 0.9)",
        ),
    ] {
        let o = ab(
            &config("loop-cap-6.toml"),
            b,
            &[
                "--suite",
                "suites/ab",
                "--category",
                "happy",
                "--runs-per-case",
                "1",
            ],
        );
        assert_eq!(o.code, 3, "exit 3 is not comparable: {}", o.text);
        let verdict = o.json["verdict"].as_str().unwrap_or_default();
        assert!(verdict.starts_with("not comparable"), "{verdict}");
        let nc = o.json["not_comparable"]
            .as_array()
            .expect("not_comparable list");
        assert!(!nc.is_empty());
        assert_eq!(o.json["n_cases"], 0, "no case is compared: {}", o.text);
        for c in nc {
            for r in c["runs"].as_array().unwrap() {
                assert_eq!(r["arm"], "b", "{c}");
                assert_eq!(r["fault"]["kind"], "other_conditions", "{c}");
                let d = &r["fault"]["difference"];
                let line = format!(
                    "{}: recorded {}, requested {}",
                    d["field"].as_str().unwrap(),
                    d["recorded"].as_str().unwrap(),
                    d["requested"].as_str().unwrap()
                );
                assert_eq!(line, says, "{c}");
            }
        }
        // The terminal, ab.md and ab.html name the condition in words.
        assert!(o.text.contains(in_words), "{}", o.text);
        for f in ["ab.md", "ab.html"] {
            let page = std::fs::read_to_string(o.dir.path().join(f)).unwrap();
            assert!(page.contains(in_words), "{f}: {page}");
        }
    }
    // A prompt A/B: only the executor's system prompt differs.
    let terse = arm(
        t.path(),
        "terse",
        "[prompts]\nexecutor_extra = \"Be terse.\"\n",
    );
    let o = ab(
        &config("loop-cap-6.toml"),
        &terse,
        &[
            "--suite",
            "suites/ab",
            "--category",
            "happy",
            "--runs-per-case",
            "1",
        ],
    );
    assert_eq!(o.code, 3, "exit 3 is not comparable: {}", o.text);
    for c in o.json["not_comparable"]
        .as_array()
        .expect("not_comparable list")
    {
        for r in c["runs"].as_array().unwrap() {
            assert_eq!(r["arm"], "b", "{c}");
            assert_eq!(r["fault"]["difference"]["field"], "system", "{c}");
        }
    }
    // The page says it in one sentence, in words: no digest, no n/a table.
    let page = std::fs::read_to_string(o.dir.path().join("ab.html")).unwrap();
    assert!(
        page.contains("Nothing here can be compared") && page.contains("the system prompt differs"),
        "{page}"
    );
    assert!(
        !page.contains("sha256 ") && !page.contains("id=\"metric-table\""),
        "{page}"
    );
    assert!(
        o.text.contains(&format!(
            "\nsummary    {}\nreport     {}\n",
            o.dir.path().join("ab.md").display(),
            o.dir.path().join("ab.html").display()
        )),
        "the terminal's last lines name ab.md and ab.html: {}",
        o.text
    );
    assert!(
        o.text.contains("Nothing here can be compared") && !o.text.contains("n/a"),
        "the terminal: one sentence, no table of n/a: {}",
        o.text
    );
}

/// A stand-in endpoint that answers by model name: the swapped executor
/// declines every task (so B's behaviour differs from the recording's), and
/// any other model is refused, so a call that should have replayed cannot
/// pass unnoticed.
struct ByModel;

impl wiremock::Respond for ByModel {
    fn respond(&self, req: &wiremock::Request) -> wiremock::ResponseTemplate {
        let v: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        match v["model"].as_str() {
            Some("claude-sonnet-9") => wiremock::ResponseTemplate::new(200).set_body_json(
                serde_json::json!({"id": "msg_standin", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-9",
                    "content": [{"type": "text", "text": "I decline to change the code."}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 1000, "output_tokens": 20}}),
            ),
            m => wiremock::ResponseTemplate::new(400).set_body_json(serde_json::json!(
                {"type": "error", "error": {"type": "invalid_request_error",
                 "message": format!("stand-in: no model {m:?} here")}})),
        }
    }
}

/// The reproduction, measured instead of refused: an arm that swaps
/// only the executor model, under `--hybrid` against a stand-in endpoint.
/// Each B case-run replays its plan call (same planner, same conditions) and
/// goes live from its first execute call; A replays whole. The verdict rests
/// on that traffic, and B's recorded tail replays offline next time
/// (`--suite-b`) to the same verdict, with no endpoint.
#[test]
fn hybrid_measures_a_model_swap_live_and_its_tail_replays_offline() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = rt.block_on(async {
        let s = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(ByModel)
            .mount(&s)
            .await;
        s
    });
    let t = tempfile::tempdir().unwrap();
    let b = arm(
        t.path(),
        "sonnet-9-executor",
        "[model]\nexecutor = \"claude-sonnet-9\"\nplanner = \"claude-opus-5\"\n\n[prices.\"claude-sonnet-9\"]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n",
    );
    let a = config("loop-cap-6.toml");
    let base = [
        "--suite",
        "suites/ab",
        "--category",
        "happy",
        "--runs-per-case",
        "1",
    ];
    let endpoint = up.uri();
    let hybrid: Vec<&str> = base
        .iter()
        .copied()
        .chain([
            "--hybrid",
            "--endpoint",
            &endpoint,
            "--protocol",
            "anthropic",
            "--max-usd",
            "5",
        ])
        .collect();
    let o = ab(&a, &b, &hybrid);
    assert_eq!(o.code, 1, "B declines every task: a regression: {}", o.text);
    let verdict = o.json["verdict"].as_str().unwrap_or_default();
    assert!(verdict.starts_with("B regresses"), "{verdict}");
    assert_eq!(
        o.json["not_comparable"],
        serde_json::json!([]),
        "{}",
        o.text
    );
    let n = o.json["n_cases"].as_u64().unwrap();
    assert!(n >= 5, "{}", o.text);
    let (ta, tb) = (&o.json["traffic"][0], &o.json["traffic"][1]);
    assert_eq!(
        ta["calls_live"], 0,
        "A is the recording's own conditions: {ta}"
    );
    assert!(ta["calls_replayed"].as_u64().unwrap() >= n, "{ta}");
    assert_eq!(ta["measured"], n, "{ta}");
    assert_eq!(tb["case_runs_live"], n, "every B case-run went live: {tb}");
    assert_eq!(tb["measured"], n, "{tb}");
    assert!(
        tb["calls_replayed"].as_u64().unwrap() >= n,
        "each plan call replayed: {tb}"
    );
    assert!(tb["live_usd"].as_f64().unwrap() > 0.0, "{tb}");
    for l in ["arm A: ", "arm B: ", " live ($"] {
        assert!(o.text.contains(l), "{l}: {}", o.text);
    }
    let md = std::fs::read_to_string(o.dir.path().join("ab.md")).unwrap();
    assert!(md.contains("### Model traffic"), "{md}");
    // Only the swapped model reached the endpoint, and never a plan call.
    let got = rt.block_on(up.received_requests()).unwrap();
    assert_eq!(got.len() as u64, tb["calls_live"].as_u64().unwrap());
    for r in &got {
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["model"], "claude-sonnet-9");
        assert_ne!(
            r.headers
                .get("x-harness-call-role")
                .map(|h| h.to_str().unwrap()),
            Some("plan")
        );
    }
    // Next time, offline: B replays what it was observed doing.
    let suite_b = o.dir.path().join("b/hybrid/suite");
    let offline: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--suite-b", suite_b.to_str().unwrap()])
        .collect();
    drop(up);
    let again = ab(&a, &b, &offline);
    assert_eq!(again.code, 1, "{}", again.text);
    assert_eq!(again.json["verdict"], o.json["verdict"], "{}", again.text);
    assert_eq!(again.json["n_cases"], n);
    assert!(again.json.get("traffic").is_none(), "nothing went live");
    for (x, y) in o.json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again.json["cases"].as_array().unwrap())
    {
        assert_eq!(
            (&x["id"], &x["a_passed"], &x["b_passed"]),
            (&y["id"], &y["a_passed"], &y["b_passed"])
        );
    }
}

/// `bench ab --hybrid` with arm B's live calls on an endpoint that answers
/// 529 to every call: B's case-runs measured the outage, not B, so none of
/// them enters the statistics; they are listed as not comparable, each with
/// the endpoint's failure, and the comparison has no verdict (exit 3).
/// Before: B's 0/6 entered the statistics ("inconclusive: underpowered",
/// exit 0; with more cases, "B regresses").
#[test]
fn hybrid_an_arm_whose_endpoint_is_down_is_not_comparable() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = rt.block_on(async {
        let s = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(
                wiremock::ResponseTemplate::new(529)
                    .insert_header("retry-after", "0")
                    .set_body_json(serde_json::json!({"type": "error",
                        "error": {"type": "overloaded_error", "message": "Overloaded"}})),
            )
            .mount(&s)
            .await;
        s
    });
    let t = tempfile::tempdir().unwrap();
    let b = arm(
        t.path(),
        "terse",
        "[prompts]\nexecutor_extra = \"Be terse.\"\n\n[model]\nhttp_attempts = 2\n",
    );
    let endpoint = up.uri();
    let o = ab(
        &config("loop-cap-6.toml"),
        &b,
        &[
            "--suite",
            "suites/ab",
            "--category",
            "happy",
            "--runs-per-case",
            "1",
            "--hybrid",
            "--endpoint",
            &endpoint,
            "--protocol",
            "anthropic",
            "--max-usd",
            "5",
        ],
    );
    assert_eq!(o.code, 3, "no verdict on an outage: {}", o.text);
    let tb = &o.json["traffic"][1];
    assert_eq!(tb["measured"], 0, "{tb}");
    assert!(tb["calls_live"].as_u64().unwrap() >= 1, "{tb}");
    let nc = o.json["not_comparable"].as_array().expect("not_comparable");
    assert_eq!(
        nc.len() as u64,
        tb["case_runs"].as_u64().unwrap(),
        "{}",
        o.text
    );
    for c in nc {
        for r in c["runs"].as_array().unwrap() {
            assert_eq!(r["arm"], "b", "{c}");
            assert_eq!(r["fault"]["kind"], "live_not_measured", "{c}");
        }
    }
    assert!(o.text.contains("HTTP 529"), "says why: {}", o.text);
}
