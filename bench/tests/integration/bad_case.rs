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

/// The committed pricing case in `suite` (category happy), its scenario
/// changed by `edit` (the scenario as JSON text) and recompiled into its
/// cassette, as a case author's edit would be.
fn pricing_case_edited(suite: &Path, edit: impl Fn(&str) -> String) -> std::path::PathBuf {
    let case = suite.join("happy/happy-fix-failing-pricing-test");
    harness::workspace::copy_tree(
        &repo().join("suites/happy/happy-fix-failing-pricing-test"),
        &case,
    )
    .unwrap();
    let p = case.join("scenario.json");
    let before = std::fs::read_to_string(&p).unwrap();
    let after = edit(&before);
    assert_ne!(before, after, "the edit changed nothing");
    std::fs::write(&p, after).unwrap();
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("script")
        .arg(&case)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    case
}

/// The cause as every failure report shows it: the FAIL line's head,
/// summary.json's `cause`, summary.md's run line and the JUnit message.
fn causes_shown(suite: &Path, out: &Path) -> [String; 4] {
    let (code, s, log) = bench_run(suite, out, &["--category", "happy"]);
    assert_ne!(code, 0, "{log}");
    let fail = log
        .lines()
        .find(|l| l.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("{log}"));
    let head = fail.split_once(" -- ").unwrap().0.to_string();
    let cause = s["cases"][0]["runs"][0]["cause"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let run_line = md
        .lines()
        .find(|l| l.starts_with("- run 0: "))
        .unwrap_or_else(|| panic!("{md}"))
        .to_string();
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let msg = junit
        .split("message=\"")
        .nth(1)
        .and_then(|m| m.split('"').next())
        .unwrap_or_else(|| panic!("{junit}"))
        .replace("&quot;", "\"")
        .replace("&apos;", "'");
    [head, cause, run_line, msg]
}

/// A recorded fix that is wrong (its write leaves the test failing) is the
/// agent's failure: the harness verifies, the check fails, and the retry it
/// then asks for is not in the recording. Every failure report leads with
/// the failed verify (the check's name and its output's tail), then the
/// call the recording lacks; none calls it "not an agent failure". Before:
/// "recording miss (the replay had no recording for this call; not an
/// agent failure)", the failed check only in the transcript.
#[test]
fn a_wrong_recorded_fix_leads_with_the_failed_verify_not_a_recording_miss() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    pricing_case_edited(&suite, |s| {
        s.replace(
            "apply_bulk(total)  # the discount applies once",
            "apply_bulk(apply_bulk(total))",
        )
    });
    for shown in causes_shown(&suite, &t.path().join("out")) {
        let verify = shown
            .find("task t1's verify failed after attempt 1: check \"tests\" failed (exit 1): ");
        let tail = shown.find("FAILED (failures=");
        let asked = shown.find("the run then asked for execute/t1/a1/0, which the recording lacks");
        assert!(
            matches!((verify, tail, asked), (Some(v), Some(t), Some(a)) if v < t && t < a),
            "the failed verify, its output's tail, then the missing call: {shown}"
        );
        assert!(!shown.contains("not an agent failure"), "{shown}");
    }
}

/// A plan task refused for naming a check run.toml does not define: the
/// refusal (and why) leads, then the replan the recording lacks.
#[test]
fn a_plan_task_refused_for_an_undefined_check_leads_with_the_refusal() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    let case = pricing_case_edited(&suite, |s| {
        s.replace(
            r#"\"verify\": {\"kind\": \"check\", \"name\": \"tests\"}"#,
            r#"\"verify\": {\"kind\": \"check\", \"name\": \"unit\"}"#,
        )
    });
    // Declared as scripted on purpose: otherwise the load refuses the case
    // (case_check) and the harness's own refusal is never reached.
    let toml = case.join("case.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("\n[deliberate]\nchecks = [\"unit\"]\n");
    std::fs::write(&toml, text).unwrap();
    for shown in causes_shown(&suite, &t.path().join("out")) {
        let refused = shown.find("the plan named task t1, which was refused: ");
        let why = shown.find("check \"unit\" is not defined by the spec");
        let asked = shown.find("the run then asked for replan/0, which the recording lacks");
        assert!(
            matches!((refused, why, asked), (Some(r), Some(w), Some(a)) if r < w && w < a),
            "the refusal, why, then the missing call: {shown}"
        );
        assert!(!shown.contains("not an agent failure"), "{shown}");
    }
}

/// A recording that runs out on the path it recorded (the run did what the
/// recording did, and asked for one more call) is the recording's fault,
/// and only then is it said to be no agent failure.
#[test]
fn a_recording_that_runs_out_on_its_own_path_is_not_the_agents_failure() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    // The last turn (the model saying it is done) removed: the fix is
    // right, the run asks for the turn after the last recorded one.
    pricing_case_edited(&suite, |s| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        v["runs"][0]["calls"].as_array_mut().unwrap().pop();
        v.to_string()
    });
    for shown in causes_shown(&suite, &t.path().join("out")) {
        assert!(
            shown.contains("no recording for call_key")
                && shown.contains(
                    "the recording ran out on the path it recorded; not an agent failure"
                ),
            "{shown}"
        );
        assert!(!shown.contains("verify failed"), "{shown}");
    }
}
