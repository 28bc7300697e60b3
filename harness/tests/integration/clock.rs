//! The wall clock bounds every check and tool the harness runs, not only the
//! gaps between laps: a predicate, a task's verify or a `run_check` tool that
//! would sleep 30 s against a 3 s clock ends the run TIME_LIMIT within
//! `TIME_LIMIT_MARGIN_MS` of the limit, and a check the clock cut is never
//! read as a verdict (the predicate is not met; a verify is "not judged").

use crate::common::*;
use harness::run_loop::TIME_LIMIT_MARGIN_MS;
use serde_json::json;
use std::time::Instant;

const LIMIT_S: f64 = 3.0;
const SLOW: &str = "exec sleep 30";

/// Runs the case, returns the result and the process's wall time in ms.
fn timed(c: &Case) -> (RunResult, u64) {
    let t0 = Instant::now();
    let r = c.run();
    (r, t0.elapsed().as_millis() as u64)
}

fn assert_time_limit_in_margin(what: &str, r: &RunResult, wall_ms: u64) {
    assert_eq!(
        (r.code, r.ending()),
        (2, "TIME_LIMIT"),
        "{what}: {}",
        r.explain()
    );
    let limit_ms = (LIMIT_S * 1000.0) as u64;
    let elapsed = r.report["elapsed_ms"].as_u64().unwrap();
    eprintln!(
        "{what}: TIME_LIMIT decided at {elapsed} ms (limit {limit_ms} ms, +{} ms); process ran {wall_ms} ms",
        elapsed.saturating_sub(limit_ms)
    );
    assert!(
        elapsed <= limit_ms + TIME_LIMIT_MARGIN_MS,
        "{what}: decided at {elapsed} ms: {}",
        r.explain()
    );
    assert!(
        wall_ms <= limit_ms + TIME_LIMIT_MARGIN_MS,
        "{what}: the process ran {wall_ms} ms"
    );
    assert_eq!(r.report["predicate_met"], false, "{what}");
}

#[test]
fn a_predicate_past_the_clock_is_cut_and_never_goal_met() {
    // `sleep 30` exits 0: let run to the end, it would read as GOAL_MET.
    let mut c = case("slow-predicate");
    c.wall_clock_limit_s = LIMIT_S;
    c.predicate = format!(r#"command = ["sh", "-c", "{SLOW}"]"#);
    let (r, wall) = timed(&c);
    assert_time_limit_in_margin("slow predicate", &r, wall);
    assert_eq!(r.report["steps"], 0);
}

#[test]
fn a_verify_past_the_clock_is_not_judged_not_failed() {
    // Fast (and failing) at admission, before the work; slow after it.
    let mut c = case("slow-verify")
        .check("slow", "test -f db/0042_search_index.sql || exit 1; exec sleep 30")
        .calls(vec![
            plan(
                "plan/0",
                json!([{"id": "t1", "description": "Add the index, then prove it with the slow suite",
                        "verify": {"kind": "check", "name": "slow"}}]),
            ),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "done"),
        ]);
    c.wall_clock_limit_s = LIMIT_S;
    c.predicate = r#"command = ["false"]"#.into();
    let (r, wall) = timed(&c);
    assert_time_limit_in_margin("slow verify", &r, wall);
    // Not retried (no second attempt was requested: no recording miss), not
    // parked as a failure on merit.
    assert_eq!(r.ids("parked"), vec!["t1"], "{}", r.explain());
    let reason = r.report["parked"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("not judged"), "{reason}");
    assert!(reason.contains("wall clock"), "{reason}");
    assert!(!reason.contains("verification failed"), "{reason}");
}

#[test]
fn a_run_check_tool_past_the_clock_ends_the_lap_at_the_limit() {
    let mut c = case("slow-tool").check("slow", SLOW).calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        tool("execute/t1/a0/0", "run_check", json!({"name": "slow"})),
        // Never asked for: the lap stops when the clock runs out.
        write_index("execute/t1/a0/1"),
        text("execute/t1/a0/2", "done"),
    ]);
    c.wall_clock_limit_s = LIMIT_S;
    let (r, wall) = timed(&c);
    assert_time_limit_in_margin("slow run_check tool", &r, wall);
    assert_eq!(r.report["model_calls"], 2, "{}", r.explain());
    assert!(!c.ws().join("db/0042_search_index.sql").exists());
    assert_eq!(r.ids("parked"), vec!["t1"]);
}

/// The limit counts elapsed time, never dates: a run whose realtime clock
/// says it started a day ago (a clock stepped forward, or a run resumed the
/// next morning) but which had run one second when it was checkpointed
/// resumes and finishes its work, instead of ending TIME_LIMIT at once; and
/// its report counts the carried second plus this process's time.
#[test]
fn a_clock_stepped_forward_a_day_does_not_end_a_ten_second_run() {
    let mut c = case("clock-stepped")
        .file("src/search.py", "def search(q): ...\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1")])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Added the index migration."),
        ]);
    c.wall_clock_limit_s = 10.0;
    c.materialize();
    let goal = harness::goal::Goal::new("Reduce p95 latency on /api/search to under 200ms.");
    let day_ms = 24 * 3600 * 1000;
    let mut state = harness::state::RunState::new(
        "run-stepped".into(),
        goal.sha256().to_string(),
        harness::clock::now_unix_ms() - day_ms,
    );
    state.hard_cap_usd = c.hard_cap_usd;
    state.elapsed_ms = 1_000;
    std::fs::create_dir_all(c.state_dir()).unwrap();
    harness::checkpoint::save(&c.state_dir(), &state).unwrap();
    let r = c.run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["resumes"], 1, "{}", r.explain());
    let elapsed = r.report["elapsed_ms"].as_u64().unwrap();
    assert!(
        (1_000..10_000).contains(&elapsed),
        "elapsed {elapsed} ms: the carried second plus this process, not a day"
    );
}
