//! Bad input is named, not fatal: the file, the field and what was
//! expected, the documented exit code, and nothing else lost.

use e2e::*;

#[test]
fn a_malformed_case_is_its_own_load_error_and_the_rest_of_the_suite_runs() {
    let t = tempfile::tempdir().unwrap();
    let suite = small_suite(t.path(), &SMALL_CASES);
    let bad = suite.join("edge/edge-wind-down-at-90/case.toml");
    let text = std::fs::read_to_string(&bad).unwrap();
    std::fs::write(
        &bad,
        text.replacen("latency_cap_ms = 20000", "latency_cap_ms = \"fast\"", 1),
    )
    .unwrap();

    let out = t.path().join("out");
    let o = run(bench(&["run", "--runs-per-case", "1", "--suite"])
        .arg(&suite)
        .arg("--out")
        .arg(&out));
    assert_eq!(o.code, 1, "a load error fails the gate: {}", o.log());
    let s = read_json(&out.join("summary.json"));
    let errs = s["load_errors"].as_array().unwrap();
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert!(
        e["file"]
            .as_str()
            .unwrap()
            .ends_with("edge-wind-down-at-90/case.toml"),
        "{e}"
    );
    assert_eq!(e["field"], "latency_cap_ms", "{e}");
    assert!(!e["expected"].as_str().unwrap().is_empty(), "{e}");
    assert!(
        o.log().contains("edge-wind-down-at-90/case.toml") && o.log().contains("latency_cap_ms"),
        "the terminal names it too: {}",
        o.log()
    );
    // Nothing lost: the three good cases ran and passed, in summary.json
    // and in the JUnit file CI reads.
    let ran: Vec<_> = s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(ran.iter().all(|(_, p)| *p), "{ran:?}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    for (_, id) in SMALL_CASES.iter().filter(|(c, _)| *c != "edge") {
        assert!(junit.contains(id), "{id} in junit.xml");
    }
}

#[test]
fn a_malformed_run_spec_is_rejected_with_file_field_and_expected_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let case = t.path().join("case");
    copy_dir(&repo().join("suites/demo/p95-index"), &case);
    let spec = case.join("run.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        text.replacen("hard_cap_usd = 28.0", "hard_cap_usd = -1.0", 1),
    )
    .unwrap();
    let before = std::fs::read_dir(case.join("workspace")).unwrap().count();

    let state = t.path().join("state");
    let o = run(harness(&["run", "--spec"])
        .arg(&spec)
        .arg("--state-dir")
        .arg(&state)
        .args(["--replay", "recordings/demo", "--latency-scale", "0"]));
    assert_eq!(o.code, 64, "{}", o.log());
    // SpecError's form: `<file>: field `<field>`: expected <what>`.
    let line = o
        .stderr
        .lines()
        .find(|l| l.starts_with("harness: spec rejected: "))
        .unwrap_or_else(|| panic!("{}", o.log()));
    assert!(line.contains(spec.to_str().unwrap()), "{line}");
    assert!(line.contains("field `budget.hard_cap_usd`"), "{line}");
    assert!(line.contains(": expected "), "{line}");
    // Rejected before the state dir is touched; the workspace is as it was.
    assert!(!state.exists(), "nothing was written");
    assert_eq!(
        std::fs::read_dir(case.join("workspace")).unwrap().count(),
        before
    );
}
