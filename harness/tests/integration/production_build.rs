//! The deployable harness carries no test machinery: built without the
//! `test-hooks`, `chaos-broken` and `fault-injection` features (as
//! `cargo test --workspace` and `cargo build --release -p harness` build it),
//! the binary holds none of the hooks' variable names, and setting them
//! changes nothing: no pause (an endless sleep), no operation log, no
//! injected I/O error. Compiled out of the hooked builds, where the hooks are
//! meant to work.

#![cfg(not(any(
    feature = "test-hooks",
    feature = "chaos-broken",
    feature = "fault-injection"
)))]

use crate::common::*;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Every variable a test hook or variant reads.
const HOOK_VARS: [&str; 5] = [
    harness::chaos_hook::ENV_VAR,
    harness::simfs::LOG_ENV,
    harness::simfs::FAULT_ENV,
    harness::simfs::BROKEN_ENV,
    harness::fault_injection::PANIC_AT_ENV,
];

#[test]
fn the_binary_holds_no_hook_variable_name() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_harness")).unwrap();
    for name in HOOK_VARS.iter().copied().chain(["HARNESS_CHAOS_PAUSED"]) {
        assert!(
            !bin.windows(name.len()).any(|w| w == name.as_bytes()),
            "{} contains {name}: a test hook is compiled into the production build",
            env!("CARGO_BIN_EXE_harness")
        );
    }
}

#[test]
fn the_hook_variables_change_nothing() {
    let mut c = case("no-hooks")
        .file("src/search.py", "def search(q): ...\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1")])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Added the index migration."),
        ]);
    let log = c.root.path().join("ops.jsonl");
    c.env.extend([
        // A hooked build would sleep here until killed.
        (
            harness::chaos_hook::ENV_VAR.to_string(),
            "during_model_call:1".to_string(),
        ),
        (
            harness::simfs::LOG_ENV.to_string(),
            log.display().to_string(),
        ),
        // A hooked build would fail every durable write from the first one.
        (
            harness::simfs::FAULT_ENV.to_string(),
            "eio:write:1:sticky".to_string(),
        ),
    ]);
    // Bounded: a pause compiled in by mistake must fail the test, not hang it.
    c.materialize();
    let mut child = c
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run did not end in 60 s (paused?); stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = c.result(child.wait_with_output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert!(
        !r.stderr.contains("HARNESS_CHAOS_PAUSED"),
        "{}",
        r.explain()
    );
    assert!(!log.exists(), "an operation log was written");
}
