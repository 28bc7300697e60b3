//! The README's main command, `scripts/suite`: the eval suite through the
//! real harness on replayed recordings, 3 runs per case, no network, no key.

use e2e::*;

/// The `bench run` line `scripts/suite` execs, read from the script so the
/// test follows the script rather than a copy of it.
fn suite_script_command() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("scripts/suite")).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("exec target/release/bench run"))
        .expect("scripts/suite execs target/release/bench run");
    line.split_whitespace()
        .skip(2) // exec, the binary
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_main_command_runs_a_case_three_times_offline_and_writes_every_output() {
    let args = suite_script_command();
    // `bench run --suite suites "${runs[@]}" "$@"`: the script's own
    // arguments are its runs-per-case default and what the caller adds.
    assert_eq!(
        &args[..3],
        ["run", "--suite", "suites"],
        "scripts/suite: {args:?}"
    );
    let script = std::fs::read_to_string(repo().join("scripts/suite")).unwrap();
    assert!(
        script.contains("runs=(--runs-per-case 3)"),
        "scripts/suite runs each case 3 times"
    );

    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    let o = run(bench(&["run", "--suite", "suites", "--runs-per-case", "3"])
        .args(["--case", "happy-search-p95-index", "--out"])
        .arg(&out));
    assert_eq!(o.code, 0, "{}", o.log());
    assert!(o.stdout.contains(": PASS"), "{}", o.log());

    let s = read_json(&out.join("summary.json"));
    assert_eq!(s["passed"], true);
    assert_eq!(s["runs_per_case"], 3);
    assert_eq!(s["case_runs"], 3);
    // No --category: the gate asked for every category of the suite.
    assert_eq!(
        s["categories_required"],
        serde_json::json!(["happy", "edge", "adversarial", "regression"])
    );
    let case = &s["cases"][0];
    assert_eq!(case["id"], "happy-search-p95-index");
    assert_eq!(case["outcome"], "passed");
    let runs = case["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for r in runs {
        assert_eq!(r["ending"], "GOAL_MET", "{r}");
        assert_eq!(r["exit_code"], 0, "{r}");
        assert!(r["bench_fault"].is_null(), "{r}");
        // Every case-run's state dir is under --out: nothing in suites/.
        let state = r["state_dir"].as_str().unwrap();
        assert!(state.starts_with(out.to_str().unwrap()), "{state}");
        let report = read_json(&std::path::Path::new(state).join("report.json"));
        assert_eq!(report["ending"], "GOAL_MET");
    }
    for f in ["summary.md", "junit.xml"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("happy-search-p95-index"), "{junit}");
}
