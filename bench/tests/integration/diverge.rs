//! `bench diverge` through the real binary: a set against itself, the
//! scripted pairs under bench/tests/fixtures/diverge/ (made by make.py there:
//! one tool call's arguments changed; one ending changed with identical
//! calls), and bad input (a missing directory, a cassette that does not
//! parse, a bad flag), each with its exit code from `bench::exit`; and live
//! mode against the fake OpenAI upstream of `live.rs`: a case recorded there
//! and run again live by `bench diverge --endpoint` did not change.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::repo;

const DIVERGED: i32 = 1;
const USAGE: i32 = 2;
const UNLOADABLE: i32 = 3;

struct Out {
    code: i32,
    json: Value,
    md: String,
    text: String,
    _dir: tempfile::TempDir,
}

fn fixtures() -> PathBuf {
    repo().join("bench/tests/fixtures/diverge")
}

fn diverge(recorded: &Path, against: &Path, extra: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .current_dir(repo())
        .arg("diverge")
        .arg("--recorded")
        .arg(recorded)
        .arg("--against")
        .arg(against)
        .arg("--out")
        .arg(dir.path())
        .args(extra)
        .env("CI", "1")
        .output()
        .unwrap();
    let json = std::fs::read(dir.path().join("diverge.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Out {
        code: o.status.code().unwrap_or(-1),
        json,
        md: std::fs::read_to_string(dir.path().join("diverge.md")).unwrap_or_default(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        _dir: dir,
    }
}

fn case<'a>(j: &'a Value, id: &str) -> &'a Value {
    j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {j}"))
}

#[test]
fn the_live_recordings_against_a_copy_of_themselves_do_not_diverge() {
    let copy = tempfile::tempdir().unwrap();
    let src = repo().join("recordings/live");
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
    }
    let o = diverge(&src, copy.path(), &[]);
    assert_eq!(o.code, 0, "{}", o.text);
    let j = &o.json;
    assert_eq!(j["schema"], "bench-diverge/1");
    assert_eq!(j["diverged"], false);
    assert_eq!(j["totals"]["cases"], 13);
    assert_eq!(j["totals"]["cases_diverged"], 0);
    assert_eq!(j["totals"]["variants"], 39);
    assert_eq!(j["totals"]["worst_similarity"], 1.0);
    let mut seen_one = [false, false];
    for c in j["cases"].as_array().unwrap() {
        assert_eq!(c["similarity"], 1.0, "{}", c["case"]);
        for v in c["runs"].as_array().unwrap() {
            assert_eq!(
                v["sequence_similarity"], 1.0,
                "{} run {}",
                c["case"], v["run"]
            );
            // A Jaccard over two empty sets (a run with no tool call, or no
            // plan) is n/a, never 1.
            for m in ["calls_jaccard", "tasks_jaccard"] {
                assert!(
                    v[m] == 1.0 || v[m].is_null(),
                    "{} run {} {m}: {}",
                    c["case"],
                    v["run"],
                    v[m]
                );
                seen_one[usize::from(m == "tasks_jaccard")] |= v[m] == 1.0;
            }
            assert_eq!(v["ending_changed"], false);
            assert_eq!(v["first_parting"], Value::Null);
            assert_eq!(v["cost_ratio"], 1.0);
        }
    }
    // The small model's recordings plan tasks but call no tool.
    assert!(seen_one[1], "some variants do compare tasks");
    // What no cassette holds is said, not invented.
    let nr: Vec<&str> = j["not_recorded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["field"].as_str().unwrap())
        .collect();
    assert_eq!(nr, ["verified_ids", "parked_ids", "spend_usd"]);
    assert!(o.md.contains("**0 of 13 case(s) diverged**"), "{}", o.md);
}

#[test]
fn one_changed_tool_call_is_found_at_its_step() {
    let f = fixtures();
    let o = diverge(&f.join("recorded"), &f.join("one-call"), &[]);
    assert_eq!(o.code, DIVERGED, "{}", o.text);
    let j = &o.json;
    assert_eq!(j["totals"]["cases_diverged"], 1);
    assert_eq!(j["totals"]["endings_changed"], 0);
    // The untouched case is identical and listed after the diverged one.
    assert_eq!(j["cases"][0]["case"], "happy-bump-requests-cve");
    assert_eq!(case(j, "happy-i18n-missing-keys")["diverged"], false);
    let v = &case(j, "happy-bump-requests-cve")["runs"][0];
    assert_eq!(v["diverged"], true);
    assert_eq!(v["ending_changed"], false);
    assert_eq!(v["tasks_jaccard"], 1.0);
    // Four tool calls among seven steps, one replaced: 3 shared / (3 + 1 + 1),
    // and the LCS keeps 6 of the 7 steps.
    assert!(
        (v["calls_jaccard"].as_f64().unwrap() - 3.0 / 5.0).abs() < 1e-9,
        "{v}"
    );
    assert!(
        (v["sequence_similarity"].as_f64().unwrap() - 6.0 / 7.0).abs() < 1e-9,
        "{v}"
    );
    let p = &v["first_parting"];
    assert_eq!(p["step"], 2);
    assert_eq!(p["recorded"]["call_key"], "execute/t2/a0/0");
    assert_eq!(p["against"]["call_key"], "execute/t2/a0/0");
    assert_eq!(
        p["recorded"]["call"],
        r#"read_file({"path":"requirements.lock"})"#
    );
    assert_eq!(
        p["against"]["call"],
        r#"read_file({"path":"requirements.txt"})"#
    );
    // The Markdown shows the parting point side by side.
    assert!(
        o.md.contains(
            "| 2 | recorded | `execute/t2/a0/0` | `read_file({\"path\":\"requirements.lock\"})` |"
        ),
        "{}",
        o.md
    );
    assert!(o.md.contains(
        "| 2 | against | `execute/t2/a0/0` | `read_file({\"path\":\"requirements.txt\"})` |"
    ));
    // A looser threshold lets the same pair through.
    let o = diverge(
        &f.join("recorded"),
        &f.join("one-call"),
        &["--threshold", "0.5"],
    );
    assert_eq!(o.code, 0, "{}", o.text);
}

#[test]
fn an_ending_changed_with_identical_calls_diverges() {
    let f = fixtures();
    let o = diverge(&f.join("recorded"), &f.join("ending"), &[]);
    assert_eq!(o.code, DIVERGED, "{}", o.text);
    let c = case(&o.json, "happy-bump-requests-cve");
    assert_eq!(c["diverged"], true);
    assert_eq!(c["ending_changed"], true);
    assert_eq!(c["similarity"], 1.0);
    let v = &c["runs"][0];
    assert_eq!(v["first_parting"], Value::Null);
    assert_eq!(v["recorded"]["ending"], "GOAL_MET");
    assert_eq!(v["against"]["ending"], "NO_PROGRESS");
    assert_eq!(v["reasons"][0], "ending GOAL_MET -> NO_PROGRESS");
    assert_eq!(case(&o.json, "happy-i18n-missing-keys")["diverged"], false);
}

#[test]
fn a_case_on_one_side_only_is_reported_and_diverged() {
    let f = fixtures();
    let one = tempfile::tempdir().unwrap();
    std::fs::copy(
        f.join("recorded/happy-i18n-missing-keys.json"),
        one.path().join("happy-i18n-missing-keys.json"),
    )
    .unwrap();
    let o = diverge(&f.join("recorded"), one.path(), &[]);
    assert_eq!(o.code, DIVERGED, "{}", o.text);
    let c = case(&o.json, "happy-bump-requests-cve");
    assert_eq!(c["presence"], "only_recorded");
    assert_eq!(c["diverged"], true);
    assert_eq!(o.json["totals"]["cases_only_recorded"], 1);
}

#[test]
fn bad_input_names_the_file_and_never_panics() {
    let f = fixtures();
    // A missing directory.
    let o = diverge(
        Path::new("/nonexistent/diverge-set"),
        &f.join("recorded"),
        &[],
    );
    assert_eq!(o.code, UNLOADABLE, "{}", o.text);
    assert!(
        o.text.contains("--recorded: /nonexistent/diverge-set"),
        "{}",
        o.text
    );
    assert!(!o.text.contains("panicked"), "{}", o.text);
    // A cassette that does not parse, and one with a bad field.
    for (body, want) in [
        ("{\"format\": \"harness-cassette/1\",", "not valid JSON"),
        (
            &std::fs::read_to_string(f.join("recorded/happy-i18n-missing-keys.json"))
                .unwrap()
                .replacen("\"protocol\": \"anthropic\"", "\"protocol\": \"gemini\"", 1)[..],
            "field `protocol`",
        ),
    ] {
        let bad = tempfile::tempdir().unwrap();
        let file = bad.path().join("broken.json");
        std::fs::write(&file, body).unwrap();
        let o = diverge(&f.join("recorded"), bad.path(), &[]);
        assert_eq!(o.code, UNLOADABLE, "{}", o.text);
        assert!(
            o.text.contains(&format!("--against: {}", file.display())),
            "{}",
            o.text
        );
        assert!(o.text.contains(want), "{want}: {}", o.text);
        assert!(!o.text.contains("panicked"), "{}", o.text);
        assert_eq!(o.json, Value::Null, "no report for bad input");
    }
    // A directory with no cassette at all.
    let empty = tempfile::tempdir().unwrap();
    let o = diverge(&f.join("recorded"), empty.path(), &[]);
    assert_eq!(o.code, UNLOADABLE, "{}", o.text);
    assert!(o.text.contains("no *.json cassettes"), "{}", o.text);
    // Usage: a threshold out of range, and --against with --endpoint.
    let o = diverge(
        &f.join("recorded"),
        &f.join("recorded"),
        &["--threshold", "1.5"],
    );
    assert_eq!(o.code, USAGE, "{}", o.text);
    assert!(o.text.contains("--threshold 1.5"), "{}", o.text);
    let o = diverge(
        &f.join("recorded"),
        &f.join("recorded"),
        &["--endpoint", "http://127.0.0.1:9/v1"],
    );
    assert_eq!(o.code, USAGE, "{}", o.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_mode_records_the_cases_again_and_compares() {
    use crate::live::{add_case, bench, record_args, s, upstream, KEY_ENV, MODEL, SENTINEL};
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let suite = root.join("suite");
    let case = add_case(&suite, "live-demo", (1.0, 2.0));
    let up = upstream(false).await;
    let endpoint = format!("{}/v1", up.uri());
    let extra = [
        "--runs",
        "2",
        "--seed",
        "7",
        "--max-usd",
        "1",
        "--api-key-env",
        KEY_ENV,
    ];
    let (code, log) = bench(
        record_args(&endpoint, &case, root, &extra),
        vec![(KEY_ENV, SENTINEL)],
    )
    .await;
    assert_eq!(code, 0, "{log}");
    let out = root.join("diverge");
    let harness = crate::common::harness_bin();
    let args: Vec<String> = [
        "diverge",
        "--recorded",
        &s(&root.join("recordings")),
        "--endpoint",
        &endpoint,
        "--protocol",
        "openai",
        "--model",
        MODEL,
        "--max-usd",
        "1",
        "--api-key-env",
        KEY_ENV,
        "--suite",
        &s(&suite),
        "--out",
        &s(&out),
        "--work",
        &s(&root.join("work-diverge")),
        "--harness",
        &s(&harness),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let (code, log) = bench(args, vec![(KEY_ENV, SENTINEL)]).await;
    assert_eq!(code, 0, "{log}");
    // The fresh recording is in <out>/recorded/, as many runs as the recorded set has.
    let again = harness::replay::Cassette::load(out.join("recorded/live-demo.json")).unwrap();
    assert_eq!(again.runs.len(), 2);
    assert_eq!(
        again.made.seed,
        Some(7),
        "the recorded set's seed is the default"
    );
    assert!(
        again.made.by.starts_with("bench diverge "),
        "{}",
        again.made.by
    );
    let j: Value =
        serde_json::from_slice(&std::fs::read(out.join("diverge.json")).unwrap()).unwrap();
    assert_eq!(j["mode"], "live");
    assert_eq!(j["diverged"], false, "{j}");
    assert_eq!(j["totals"]["variants"], 2);
    assert_eq!(j["totals"]["worst_similarity"], 1.0);
    assert!(out.join("live.json").is_file());
    // The key reached the upstream only: never the new cassettes or the report.
    for f in [
        "recorded/live-demo.json",
        "diverge.json",
        "diverge.md",
        "live.json",
    ] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains(SENTINEL), "{f}");
    }
}
