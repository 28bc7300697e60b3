//! One bad value in one case.toml is that case's load error, named by file
//! and field (and what was expected); the rest of the suite runs and the
//! gate fails. Before: `latency_scale = -1.0` or `nan` stopped the whole
//! suite at "cannot start the replay server" (exit 3), and a type error
//! named the value (`field `-1``) instead of the field.

use std::path::Path;

use crate::common::*;

const GOOD: &str =
    "ending = \"GOAL_MET\"\nverified = [\"t1\", \"t2\", \"t3\"]\npredicate_met = true";

/// A demo copy whose case.toml gets `line` among its top-level keys.
fn add_with(suite: &Path, id: &str, line: &str) {
    add_case_from("suites/demo/p95-index", suite, "happy", id, GOOD);
    let p = suite.join("happy").join(id).join("case.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let text = text.replacen("\n[expect]\n", &format!("\n{line}\n\n[expect]\n"), 1);
    std::fs::write(&p, text).unwrap();
}

#[test]
fn a_bad_value_is_that_cases_load_error_and_the_rest_run() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_with(&suite, "demo-ok", "latency_scale = 0.0");
    let bad = [
        ("demo-neg-scale", "latency_scale = -1.0", "latency_scale"),
        ("demo-nan-scale", "latency_scale = nan", "latency_scale"),
        ("demo-huge-scale", "latency_scale = 1e300", "latency_scale"),
        ("demo-neg-cap", "latency_cap_ms = -1", "latency_cap_ms"),
        ("demo-str-git", "workspace_git = \"yes\"", "workspace_git"),
    ];
    for (id, line, _) in bad {
        add_with(&suite, id, line);
    }
    // latency_cap_ms is already set by add_case_from: drop that line where a
    // case sets its own.
    let p = suite.join("happy/demo-neg-cap/case.toml");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replacen("latency_cap_ms = 60000\n", "", 1);
    std::fs::write(&p, text).unwrap();

    let (code, s, log) = bench_run(&suite, &t.path().join("out"), &["--category", "happy"]);
    assert_eq!(code, 1, "the gate fails, nothing aborts: {log}");
    let cases = s["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{log}");
    assert_eq!(cases[0]["id"], "demo-ok");
    assert_eq!(cases[0]["passed"], true, "{log}");
    let errs = s["load_errors"].as_array().unwrap();
    assert_eq!(errs.len(), bad.len(), "{log}");
    for (id, _, field) in bad {
        let e = errs
            .iter()
            .find(|e| {
                e["file"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("{id}/case.toml"))
            })
            .unwrap_or_else(|| panic!("{id}: {log}"));
        assert_eq!(e["field"], field, "{id}: {e}");
        assert!(!e["expected"].as_str().unwrap().is_empty(), "{id}: {e}");
    }
}

/// A case whose check script lost its execute bit reads as a broken case,
/// not as an agent that failed: the FAIL line, summary.md and the JUnit
/// message open with the OS's "Permission denied", before the follow-on
/// failures (the ending, the predicate) it caused.
#[test]
fn a_check_that_cannot_run_leads_every_failure_report_with_why() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    let case = suite.join("happy/happy-fix-failing-pricing-test");
    harness::workspace::copy_tree(
        &repo().join("suites/happy/happy-fix-failing-pricing-test"),
        &case,
    )
    .unwrap();
    let script = case.join("checks/tests.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = t.path().join("out");
    let (code, s, log) = bench_run(&suite, &out, &["--category", "happy"]);
    assert_ne!(code, 0, "{log}");
    let fail = log
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("{log}"));
    let (head, rest) = fail.split_once(" -- ").unwrap();
    assert!(
        head.contains("check \"tests\" could not run") && head.contains("Permission denied"),
        "the cause leads: {fail}"
    );
    // The endings are said once (in the head), the other follow-on
    // failures after it.
    assert_eq!(fail.matches("expected GOAL_MET").count(), 1, "{fail}");
    assert!(!rest.is_empty(), "the follow-on failures follow: {fail}");
    let cause = s["cases"][0]["runs"][0]["cause"]
        .as_str()
        .unwrap_or_default();
    assert!(
        cause.contains("Permission denied"),
        "{}",
        s["cases"][0]["runs"][0]
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let run_line = md
        .lines()
        .find(|l| l.starts_with("- run 0: "))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(run_line.contains("Permission denied"), "{run_line}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let msg = junit
        .split("message=\"")
        .nth(1)
        .and_then(|m| m.split('"').next())
        .unwrap_or_else(|| panic!("{junit}"));
    assert!(
        msg.contains("run 0: check &quot;tests&quot; could not run"),
        "{msg}"
    );
    assert!(msg.contains("Permission denied"), "{msg}");
}
