//! Each command's documented exit statuses (README.md, "Gate a deploy";
//! docs/bench.md; docs/harness.md): `bench run` 0 pass,
//! 1 a case failed, 2 usage, 3 the suite cannot load; the harness's exit is
//! its ending's, 64 for a rejected command line; `harness status` 64 on a
//! path that is not a state dir, 0 on one with no checkpoint yet.

use e2e::*;
use std::path::Path;

fn bench_run(suite: &Path, out: &Path, extra: &[&str]) -> Out {
    run(bench(&["run", "--runs-per-case", "1", "--suite"])
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(extra))
}

#[test]
fn bench_run_exit_codes_are_pass_gate_failure_usage_and_unloadable_suite() {
    let t = tempfile::tempdir().unwrap();
    let suite = small_suite(t.path(), &SMALL_CASES[..2]);

    // 0, and the harness's own exit codes are its endings': GOAL_MET 0,
    // BUDGET_EXHAUSTED 2 (a case that expects it passes).
    let o = bench_run(&suite, &t.path().join("ok"), &["--category", "happy,edge"]);
    assert_eq!(o.code, 0, "{}", o.log());
    let s = read_json(&t.path().join("ok/summary.json"));
    for (id, ending, exit) in [
        ("happy-search-p95-index", "GOAL_MET", 0),
        ("edge-wind-down-at-90", "BUDGET_EXHAUSTED", 2),
    ] {
        let c = s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap();
        assert_eq!(c["runs"][0]["ending"], ending, "{id}");
        assert_eq!(c["runs"][0]["exit_code"], exit, "{id}");
    }

    // 3: without --category the gate needs every category; this suite has
    // no adversarial/ or regression/, and the message names one.
    let o = bench_run(&suite, &t.path().join("missing"), &[]);
    assert_eq!(o.code, 3, "{}", o.log());
    assert!(
        o.stderr.contains("adversarial") || o.stderr.contains("regression"),
        "{}",
        o.log()
    );

    // 2: usage errors, before anything runs.
    for bad in [
        &["--runs-per-case", "0"][..],
        &["--shard", "3/2"],
        &["--pass-rate", "2"],
    ] {
        let out = t.path().join("usage");
        let o = run(bench(&["run", "--suite"])
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(bad));
        assert_eq!(o.code, 2, "{bad:?}: {}", o.log());
        assert!(!out.join("summary.json").exists(), "{bad:?}");
    }

    // 1: a case whose expectation the run does not meet fails the gate.
    let case = suite.join("happy/happy-search-p95-index/case.toml");
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(text.contains("ending = \"GOAL_MET\""), "{text}");
    std::fs::write(
        &case,
        text.replacen("ending = \"GOAL_MET\"", "ending = \"TIME_LIMIT\"", 1),
    )
    .unwrap();
    let o = bench_run(
        &suite,
        &t.path().join("fail"),
        &["--category", "happy,edge"],
    );
    assert_eq!(o.code, 1, "{}", o.log());
    let s = read_json(&t.path().join("fail/summary.json"));
    assert_eq!(s["passed"], false);
    let failed: Vec<_> = s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["happy-search-p95-index"]);
}

#[test]
fn harness_exit_64_for_a_rejected_command_line_and_status_of_a_non_state_dir() {
    let t = tempfile::tempdir().unwrap();
    // clap's usage code would be 2, which reads as BUDGET_EXHAUSTED.
    let o = run(&mut harness(&["run", "--state-dir"]).arg(t.path().join("s")));
    assert_eq!(o.code, 64, "no --spec: {}", o.log());
    let o = run(&mut harness(&["no-such-command"]));
    assert_eq!(o.code, 64, "{}", o.log());
    assert!(!t.path().join("s").exists(), "nothing was written");

    // A path that is not a directory is not a state dir: 64. An empty
    // directory is one with no checkpoint yet: 0, and it says so.
    let missing = t.path().join("missing");
    let o = run(harness(&["status", "--state-dir"]).arg(&missing));
    assert_eq!(o.code, 64, "{}", o.log());
    assert!(o.stderr.contains("is not a state dir"), "{}", o.log());
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(harness(&["status", "--state-dir"]).arg(&empty));
    assert_eq!(o.code, 0, "{}", o.log());
    assert!(o.stdout.contains("no checkpoint yet"), "{}", o.log());
}
