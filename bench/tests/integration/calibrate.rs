//! `bench calibrate` end to end through the binary: the committed set in CI
//! (lexical measured, judge honestly not measured), the judge refusing
//! scripted stand-ins, and bad labeled sets named by file and field.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("calibrate")
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("calibration.json")).unwrap()).unwrap()
}

fn copy_set(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(repo().join("suites/drift-calibration")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn committed_set_offline_lexical_measured_judge_not_measured() {
    let out = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let o = bench(&[
        "--out",
        out.path().to_str().unwrap(),
        "--recordings",
        empty.path().to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let v = json(out.path());
    assert_eq!(v["n_queues"], 20);
    let lex = &v["detectors"]["lexical"];
    assert_eq!(lex["measured"], true);
    // The calibration.json contract.
    for k in [
        "auc",
        "auc_ci",
        "at_0.3",
        "at_0.5",
        "agreement",
        "agreement_ci",
        "sensitivity",
        "specificity",
        "loo_threshold",
        "loo_agreement",
        "brier",
        "verdict",
    ] {
        assert!(!lex[k].is_null(), "lexical.{k} missing: {lex}");
    }
    for band in ["at_0.3", "at_0.5"] {
        let t = &lex[band];
        let sum: u64 = ["tp", "fp", "tn", "fn"]
            .iter()
            .map(|k| t[*k].as_u64().unwrap())
            .sum();
        assert_eq!(sum, 20, "{band}");
    }
    let verdict = lex["verdict"].as_str().unwrap();
    let lo = lex["auc_ci"][0].as_f64().unwrap();
    assert_eq!(verdict.starts_with("separates"), lo > 0.5, "{verdict}");
    if lo <= 0.5 {
        assert!(
            verdict.starts_with("cannot separate: do not trust threshold"),
            "{verdict}"
        );
    }
    // The judge: no numbers, a reason, and how to make recordings.
    let judge = &v["detectors"]["judge"];
    assert_eq!(judge["measured"], false);
    assert!(judge["auc"].is_null());
    assert!(
        judge["reason"]
            .as_str()
            .unwrap()
            .contains("no recordings of a real judge yet"),
        "{judge}"
    );
    assert!(judge["how_to"].as_str().unwrap().contains("issue 9"));
    assert!(stderr.contains("judge: NOT MEASURED"), "{stderr}");
    // Terminal summary, markdown and plot.
    assert!(
        stdout.contains("lexical")
            && stdout.contains("not measured")
            && stdout.contains("cannot tell 0.8 agreement from 0.95"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.path().join("calibration.md")).unwrap();
    for s in [
        "## lexical",
        "**Verdict:",
        "Score > 0.3 (prune band)",
        "Score > 0.5 (halt band)",
        "drifted, mild",
        "leave-one-out agreement",
        "Brier",
        "## judge",
        "NOT MEASURED",
        "## Per queue",
    ] {
        assert!(
            md.contains(s) || md.to_lowercase().contains(&s.to_lowercase()),
            "calibration.md lacks {s:?}"
        );
    }
    let svg = std::fs::read_to_string(out.path().join("roc.svg")).unwrap();
    for s in [
        "false positive rate",
        "true positive rate",
        "lexical: AUC",
        "lexical &gt; 0.3",
        "lexical &gt; 0.5",
        "judge: NOT MEASURED",
    ] {
        assert!(svg.contains(s), "roc.svg lacks {s:?}");
    }
}

#[test]
fn judge_alone_without_recordings_says_so_and_exits_3() {
    let out = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let o = bench(&[
        "--detector",
        "judge",
        "--out",
        out.path().to_str().unwrap(),
        "--recordings",
        empty.path().to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("there are no recordings of a real judge yet")
            && stderr.contains("issue 9")
            && stderr.contains("--record"),
        "{stderr}"
    );
    let v = json(out.path());
    assert_eq!(v["detectors"]["judge"]["measured"], false);
    assert!(v["detectors"].get("lexical").is_none());
}

#[test]
fn a_scripted_stand_in_is_never_reported_as_a_judge() {
    let out = tempfile::tempdir().unwrap();
    let o = bench(&[
        "--detector",
        "all",
        "--out",
        out.path().to_str().unwrap(),
        "--recordings",
        "bench/tests/fixtures/calibrate/stand-in-judge/recordings",
    ]);
    let (stdout, stderr) = text(&o);
    // Under `all`, a stand-in is "no real recordings": lexical still measured.
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("made.how = \"scripted\""), "{stderr}");
    let v = json(out.path());
    assert_eq!(v["detectors"]["judge"]["measured"], false);
    assert!(v["detectors"]["judge"]["auc"].is_null());
    assert!(!std::fs::read_to_string(out.path().join("calibration.md"))
        .unwrap()
        .contains("stand-in-judge ("));
    let o = bench(&[
        "--detector",
        "judge",
        "--out",
        out.path().to_str().unwrap(),
        "--recordings",
        "bench/tests/fixtures/calibrate/stand-in-judge/recordings",
    ]);
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn bad_queue_files_are_named_by_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    copy_set(&set);
    let edit = |name: &str, from: &str, to: &str| {
        let p = set.join(name);
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains(from), "{name} lacks {from:?}");
        std::fs::write(&p, t.replacen(from, to, 1)).unwrap();
    };
    edit("latency-search-index.toml", "label = \"aligned\"\n", "");
    edit(
        "security-ssrf-waf.toml",
        "severity = \"mild\"",
        "severity = \"slight\"",
    );
    edit(
        "docs-billing-site.toml",
        "off_goal = [\"t3\"",
        "off_goal = [\"t9\"",
    );
    let o = bench(&[
        "--queues",
        set.to_str().unwrap(),
        "--detector",
        "lexical",
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("latency-search-index.toml: field `label`: missing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("security-ssrf-waf.toml: field `severity`: unknown severity \"slight\""),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "docs-billing-site.toml: field `off_goal[0]`: \"t9\" is not a task id in this queue"
        ),
        "{stderr}"
    );
    assert!(
        !dir.path().join("out/calibration.json").exists(),
        "nothing is measured on a bad set"
    );
}

#[test]
fn unbalanced_set_runs_with_a_warning_and_runs_show_spread() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    copy_set(&set);
    std::fs::remove_file(set.join("latency-search-index.toml")).unwrap();
    std::fs::remove_file(set.join("migration-orders-uuid.toml")).unwrap();
    let out = dir.path().join("out");
    let o = bench(&[
        "--queues",
        set.to_str().unwrap(),
        "--detector",
        "lexical",
        "--runs",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let v = json(&out);
    assert_eq!(v["n_queues"], 18);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("unbalanced set: 8 aligned vs 10 drifted"),
        "{}",
        v["warnings"]
    );
    assert!(stdout.contains("warning: unbalanced set"));
    assert!(std::fs::read_to_string(out.join("calibration.md"))
        .unwrap()
        .contains("**Warning:** unbalanced set"));
    let spread = &v["detectors"]["lexical"]["run_spread"];
    assert_eq!(spread["runs"], 3);
    // The baseline is deterministic: its runs agree exactly.
    assert_eq!(spread["auc"]["sd"], 0.0);
    assert_eq!(spread["band_flips"].as_array().unwrap().len(), 0);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["--record", "x"],
        vec!["--endpoint", "http://127.0.0.1:9/v1"],
        vec!["--model", "m"],
        vec!["--runs", "0"],
        vec![
            "--detector",
            "lexical",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--protocol",
            "openai",
            "--model",
            "m",
        ],
    ] {
        let o = bench(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o).1);
    }
}

/// Exactly the CI command, with the default recordings directory: it must
/// succeed offline today (no recordings: judge not measured) and after
/// issue 9 commits real ones (judge replayed in strict mode).
#[test]
fn the_default_command_runs_offline() {
    let out = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let o = bench(&["--out", out.path().to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        started.elapsed().as_secs() < 30,
        "bench calibrate should take seconds"
    );
    assert_eq!(json(out.path())["detectors"]["lexical"]["measured"], true);
}
