//! A panic anywhere after the spec is accepted is UNRECOVERABLE_ERROR with
//! error kind `panic`: the report, the alert and the panic message in
//! `detail`, built from the last durable checkpoint (never the panicked
//! in-memory state), with the ledger journal's spend. Needs the harness built
//! with the `fault-injection` feature (`HARNESS_PANIC_AT=<point>:<n>`):
//!
//! cargo test --release -p harness --features test-variants --test hooked panics

use crate::common::*;
use harness::checkpoint;
use serde_json::{json, Value};

fn two_task_case(name: &str) -> Case {
    case(name).calls(vec![
        plan(
            "plan/0",
            json!([
                {"id": "t1", "description": "Write the rollout note", "verify": {"kind": "file_contains", "path": "notes/rollout.md", "text": "rollout"}},
                index_task("t2"),
            ]),
        ),
        tool("execute/t1/a0/0", "write_file", json!({"path": "notes/rollout.md", "content": "rollout plan\n"})),
        text("execute/t1/a0/1", "done"),
        write_index("execute/t2/a0/0"),
        text("execute/t2/a0/1", "done"),
    ])
}

fn panicking_at(name: &str, point: &str) -> Case {
    let mut c = two_task_case(name);
    c.env.push(("HARNESS_PANIC_AT".into(), point.into()));
    c
}

fn alerts(r: &RunResult) -> Vec<Value> {
    std::fs::read_to_string(r.state_dir.join("alerts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The common shape of a panic's ending.
fn assert_panic_ending(point: &str, r: &RunResult) {
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{point}: {}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "panic", "{point}");
    let detail = r.report["detail"].as_str().unwrap();
    assert!(
        detail.contains("the harness panicked: injected panic at"),
        "{point}: {detail}"
    );
    assert!(detail.contains(".rs:"), "{point}: the location: {detail}");
    let a = alerts(r);
    assert_eq!(a.len(), 1, "{point}: one alert: {a:?}");
    assert_eq!(a[0]["ending"], "UNRECOVERABLE_ERROR");
    assert!(a[0]["detail"].as_str().unwrap().contains("panicked"));
    assert!(
        r.stdout.contains(&format!(
            "report     {}",
            r.state_dir.join("report.json").display()
        )),
        "{point}: {}",
        r.explain()
    );
    // The ending is durable: the same command re-reports it, runs nothing.
    let ck = checkpoint::load(&r.state_dir, None).unwrap().unwrap();
    let f = ck.finished.as_ref().unwrap();
    assert_eq!(f.error_kind.as_deref(), Some("panic"));
    assert!(ck.in_progress.is_none());
    let spend = r.report["spend_usd"].as_f64().unwrap();
    let journal =
        harness::ledger::Ledger::peek_journal(&r.state_dir.join("ledger.jsonl"), ck.hard_cap_usd);
    if let Some((booked, in_flight)) = journal {
        assert!(in_flight.abs() < 1e-12, "{point}: no reserve left open");
        assert!(
            (booked - spend).abs() < 1e-9,
            "{point}: the report's spend is the journal's"
        );
    }
}

#[test]
fn a_panic_at_the_top_of_a_lap_is_an_ending_with_the_last_checkpoint() {
    // Lap 1 plans, lap 2 runs t1; the panic at the top of lap 3.
    let c = panicking_at("panic-lap", "lap:3");
    let r = c.run();
    assert_panic_ending("lap:3", &r);
    assert_eq!(
        r.ids("verified"),
        vec!["t1"],
        "from the checkpoint after t1"
    );
    assert_eq!(r.report["queue_left"], json!(["t2"]));
    // Re-running re-reports, never runs t2.
    let mut again = two_task_case("panic-lap");
    again.root = c.root;
    let r2 = again.run();
    assert_eq!((r2.code, r2.ending()), (4, "UNRECOVERABLE_ERROR"));
    assert_eq!(r2.report["error_kind"], "panic");
    assert!(!again.ws().join("db/0042_search_index.sql").exists());
}

#[test]
fn a_panic_during_a_model_call_books_the_reserve_at_worst_case() {
    // The 3rd call (t1's second turn) is reserved, then the panic.
    let c = panicking_at("panic-call", "during_model_call:3");
    let r = c.run();
    assert_panic_ending("during_model_call:3", &r);
    // The task in flight is parked unverified, for a human.
    assert_eq!(r.ids("parked"), vec!["t1"], "{}", r.explain());
    let reason = r.report["parked"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("not verified after the panic"), "{reason}");
    // Two calls booked at usage, the third at its worst case.
    let curve = r.report["spend_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 3, "{curve:?}");
    let usage_cost = (3500.0 * 5.0 + 300.0 * 25.0) / 1e6;
    assert!(r.report["spend_usd"].as_f64().unwrap() > 2.0 * usage_cost + 0.05);
}

#[test]
fn a_panic_while_a_checkpoint_write_is_in_flight_leaves_the_old_one_whole() {
    // temp_written: the n-th atomic write has its temp file written, not
    // yet renamed. Write 2 is the in-progress checkpoint of t1.
    let c = panicking_at("panic-ckpt", "temp_written:2");
    let r = c.run();
    assert_panic_ending("temp_written:2", &r);
    let temps: Vec<_> = std::fs::read_dir(&r.state_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(
        temps.is_empty(),
        "the half-written temp was removed: {temps:?}"
    );
    // The checkpoint it was replacing (after the plan) is what was reported.
    assert_eq!(r.report["verified"], json!([]));
    assert_eq!(
        r.report["queue_left"],
        json!(["t1", "t2"]),
        "{}",
        r.explain()
    );
}

#[test]
fn a_panic_in_finish_after_the_ending_was_decided_is_still_reported() {
    let c = panicking_at("panic-finish", "finish_after_checkpoint:1");
    let r = c.run();
    assert_panic_ending("finish_after_checkpoint:1", &r);
    let detail = r.report["detail"].as_str().unwrap();
    assert!(
        detail.contains("the run had already ended GOAL_MET before the panic"),
        "{detail}"
    );
    assert_eq!(r.ids("verified"), vec!["t1", "t2"]);
    let c = panicking_at("panic-finish-start", "finish_start:1");
    let r = c.run();
    assert_panic_ending("finish_start:1", &r);
}

#[test]
fn a_panic_while_ending_after_a_panic_is_one_clear_line_and_exit_4() {
    // The loop panics at lap 2, then the ending of that panic panics too:
    // main's last resort, never Rust's 101.
    let c = panicking_at("panic-twice", "lap:2,after_panic:1");
    let r = c.run();
    assert_eq!(r.code, 4, "{}", r.explain());
    assert!(
        r.stderr
            .contains("harness: UNRECOVERABLE_ERROR (exit 4): the harness panicked outside the run: injected panic at after_panic"),
        "{}",
        r.explain()
    );
    // The run's own ending never got written: the same command resumes from
    // the last good checkpoint (after the plan) and finishes the run.
    let ck = checkpoint::load(&r.state_dir, None).unwrap().unwrap();
    assert!(ck.finished.is_none());
}

#[test]
fn a_panic_in_a_re_report_is_an_ending_too() {
    let c = two_task_case("panic-rereport");
    let r = c.run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    std::fs::remove_file(r.state_dir.join("report.json")).unwrap();
    let mut again = two_task_case("panic-rereport");
    again.root = c.root;
    again
        .env
        .push(("HARNESS_PANIC_AT".into(), "rereport:1".into()));
    let r = again.run();
    assert_panic_ending("rereport:1", &r);
    assert!(r.report["detail"]
        .as_str()
        .unwrap()
        .contains("already ended GOAL_MET"));
}
