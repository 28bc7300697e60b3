//! The three resume outcomes, each from a real interrupted state: the harness
//! is paused at a named phase (the chaos hook), killed with SIGKILL, and the
//! same command is run again. The in-flight task is verified, never re-executed.

use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn migration_case(name: &str) -> Case {
    case(name)
        .file("src/search.py", "SEARCH_SQL = 'SELECT * FROM search_events ORDER BY created_at DESC'\n")
        .file(
            "migrations/0042_search_index.json",
            &json!({"steps": [
                {"path": "db/migrations/0042_search_index.sql", "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON search_events(created_at);\n"},
                {"path": "db/schema_version", "content": "42\n"}
            ]}).to_string(),
        )
        .calls(vec![
            plan("plan/0", json!([{"id": "t1", "description": "Apply migration 0042_search_index", "verify": {"kind": "migration_state", "name": "0042_search_index"}}])),
            tool("execute/t1/a0/0", "apply_migration", json!({"name": "0042_search_index"})),
            text("execute/t1/a0/1", "Migration applied."),
            // A resume that settles the task leaves the queue dry: it gets
            // its replan, as at the end of a lap (this one admits nothing).
            plan("replan/0", json!([])),
        ])
}

#[test]
fn partially_applied_migration_is_parked_for_a_human_never_rerun() {
    let mut c = migration_case("resume-partial");
    c.predicate = r#"command = ["test", "-f", "db/schema_version"]"#.into();
    run_until_killed(&c, "between_migration_steps:1");
    // Exactly one step landed.
    assert!(c.ws().join("db/migrations/0042_search_index.sql").exists());
    assert!(!c.ws().join("db/schema_version").exists());
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.ids("parked"), vec!["t1"], "{}", r.explain());
    let reason = r.report["parked"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("partially applied"), "{reason}");
    assert!(
        !c.ws().join("db/schema_version").exists(),
        "the migration must not be re-run"
    );
    assert_eq!(r.report["resumes"], 1);
    assert_eq!(
        (r.code, r.ending()),
        (3, "QUEUE_EMPTY_GOAL_UNMET"),
        "{}",
        r.explain()
    );
}

#[test]
fn post_that_landed_before_the_kill_is_verified_done_and_never_posted_twice() {
    let c = case("resume-done")
        .calls(vec![
            plan("plan/0", json!([
                {"id": "t1", "description": "Post the rollout note to #eng", "verify": {"kind": "outbox_has", "key": "rollout-0042"}},
                index_task("t2")])),
            tool("execute/t1/a0/0", "post_message", json!({"channel": "#eng", "text": "Rolling out idx_search_ts", "idempotency_key": "rollout-0042"})),
            text("execute/t1/a0/1", "Posted."),
            write_index("execute/t2/a0/0"),
            text("execute/t2/a0/1", "done"),
        ]);
    run_until_killed(&c, "after_post_before_checkpoint:1");
    assert_eq!(read_outbox(&c.state_dir()).len(), 1);
    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    let outbox = read_outbox(&c.state_dir());
    assert_eq!(
        outbox.iter().filter(|e| e["key"] == "rollout-0042").count(),
        1,
        "double post: {outbox:?}"
    );
    assert_eq!(r.report["verified"][0]["how"], "verified_on_resume");
}

#[test]
fn nothing_happened_goes_back_to_the_front_and_runs() {
    let c = case("resume-requeue").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    // The 2nd model call is the first execute call: killed before it returns.
    run_until_killed(&c, "during_model_call:2");
    assert!(!c.ws().join("db/0042_search_index.sql").exists());
    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["verified"][0]["how"], "verified");
    // The call in flight at the kill is booked at its worst case: spend never
    // forgets it (4 booked calls: plan, the killed one, and the two re-run).
    let curve = r.report["spend_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 4, "{curve:?}");
    assert_eq!(
        curve.iter().filter(|p| p["basis"] == "worst_case").count(),
        1
    );
}

#[test]
fn a_torn_checkpoint_on_disk_ends_unrecoverable_and_is_left_for_a_human() {
    let c = case("torn").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    run_until_killed(&c, "during_model_call:2");
    let p = c.state_dir().join("checkpoint.json");
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "checkpoint_unparseable");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        &b[..b.len() / 2],
        "the refused file is left as it was"
    );
    assert!(
        !c.ws().join("db/0042_search_index.sql").exists(),
        "nothing ran from a refused checkpoint"
    );
}

#[test]
fn status_shows_a_live_run_without_disturbing_it() {
    let c = case("status").calls(vec![plan("plan/0", json!([index_task("t1"), {"id": "t2", "description": "Post the note", "verify": {"kind": "outbox_has", "key": "n"}}])), write_index("execute/t1/a0/0"), text("execute/t1/a0/1", "done")]);
    c.materialize();
    let mut cmd = c.command();
    cmd.env("HARNESS_CHAOS_PAUSE_AT", "during_model_call:2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(Ok(l)) = lines.next() {
        if l.starts_with("HARNESS_CHAOS_PAUSED") {
            break;
        }
    }
    let before: Vec<(String, Vec<u8>)> = std::fs::read_dir(c.state_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("status")
        .arg("--state-dir")
        .arg(c.state_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("ending     none yet"), "{text}");
    assert!(text.contains("in flight  t1"), "{text}");
    assert!(text.contains("queue      1 task(s): t2"), "{text}");
    assert!(
        text.contains("of $28.00 cap") && text.contains("reserved in flight"),
        "{text}"
    );
    let after: Vec<(String, Vec<u8>)> = before
        .iter()
        .map(|(p, _)| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    assert_eq!(before, after, "status must not write to the state dir");
    child.kill().unwrap();
    child.wait().unwrap();
    let r = c.result(c.command().output().unwrap());
    // The goal is met after t1, so t2 never runs.
    assert_eq!(r.ending(), "GOAL_MET", "{}", r.explain());
    assert_eq!(r.report["queue_left"], json!(["t2"]));
}
