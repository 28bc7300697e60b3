//! The audit every case-run gets, through the real binaries: a harness that
//! leaks a key (to a file or to its output) or whose report forgets money
//! fails its case-run with the audit check named, even when the case asks
//! for nothing but its ending. The harness under test is the real one,
//! wrapped in a shell script that does the one bad thing after it ran.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A wrapper "harness": runs the real binary with the same arguments, keeps
/// its exit code, then runs `after` (a shell snippet that sees `$STATE`, the
/// state dir).
fn wrapped_harness(dir: &Path, name: &str, after: &str) -> PathBuf {
    let p = dir.join(name);
    let script = format!(
        "#!/bin/sh\nSTATE=''\nprev=''\nfor a in \"$@\"; do [ \"$prev\" = --state-dir ] && STATE=\"$a\"; prev=\"$a\"; done\n\"{}\" \"$@\"\ncode=$?\n{after}\nexit $code\n",
        harness_bin().display()
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn run_with(harness: &Path, suite: &Path, out: &Path) -> (i32, Value, String) {
    // The test suite holds one category.
    bench_run_with(harness, suite, out, &["--category", "happy"])
}

fn run0(s: &Value) -> &Value {
    &s["cases"][0]["runs"][0]
}

fn check<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

#[test]
fn the_audit_fails_a_harness_that_leaks_a_key_or_forgets_money() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case_from(
        "suites/demo/p95-index",
        &suite,
        "happy",
        "happy-demo-copy",
        "ending = \"GOAL_MET\"",
    );

    // The honest harness: every audit check passes.
    let (code, s, out) = run_with(&harness_bin(), &suite, &t.path().join("o-honest"));
    assert_eq!(code, 0, "{out}");
    let r = run0(&s);
    for c in r["checks"].as_array().unwrap() {
        assert_eq!(c["passed"], true, "{c}");
    }
    assert_eq!(check(r, "audit.secret_canary")["passed"], true, "{r}");

    // A key written into the state dir, in the variable the spec names.
    let h = wrapped_harness(
        t.path(),
        "leak-file.sh",
        // A line the harness's own event type reads (a plan error quoting
        // the key), so only the canary check has anything to say.
        "echo \"{\\\"unix_ms\\\":1,\\\"t_ms\\\":0,\\\"step\\\":0,\\\"kind\\\":\\\"plan_malformed\\\",\\\"data\\\":{\\\"error\\\":\\\"$ANTHROPIC_API_KEY\\\"}}\" >> \"$STATE/events.jsonl\"",
    );
    let (code, s, out) = run_with(&h, &suite, &t.path().join("o-file"));
    assert_eq!(code, 1, "{out}");
    let r = run0(&s);
    assert_eq!(r["passed"], false, "{r}");
    let c = check(r, "audit.secret_canary");
    assert_eq!(c["passed"], false, "{r}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY in state/events.jsonl"),
        "{c}"
    );
    assert!(
        r["failures"][0]
            .as_str()
            .unwrap()
            .starts_with("gate audit.secret_canary"),
        "{r}"
    );

    // Another provider's key, printed on stdout.
    let h = wrapped_harness(
        t.path(),
        "leak-stdout.sh",
        "echo \"openai: $OPENAI_API_KEY\"",
    );
    let (code, s, out) = run_with(&h, &suite, &t.path().join("o-stdout"));
    assert_eq!(code, 1, "{out}");
    let c = check(run0(&s), "audit.secret_canary");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY in stdout"),
        "{c}"
    );

    // A report whose spend is not what the journal holds: the journal keeps
    // an extra $0.50 booked (a record the report forgot).
    let h = wrapped_harness(
        t.path(),
        "forget-money.sh",
        "echo '{\"op\":\"reserve\",\"seq\":9999,\"call_key\":\"x\",\"role\":\"execute\",\"model\":\"m\",\"worst_usd\":0.5}' >> \"$STATE/ledger.jsonl\"\necho '{\"op\":\"record\",\"seq\":9999,\"cost_usd\":0.5,\"usage\":{\"input_tokens\":0,\"output_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0},\"basis\":\"usage\"}' >> \"$STATE/ledger.jsonl\"",
    );
    let (code, s, out) = run_with(&h, &suite, &t.path().join("o-money"));
    assert_eq!(code, 1, "{out}");
    let c = check(run0(&s), "audit.spend");
    assert_eq!(c["passed"], false, "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("not the journal's"),
        "{c}"
    );
}
