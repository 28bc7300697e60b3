//! A kill during a compaction (`compact/<n>` in flight, or booked but not
//! yet checkpointed) resumes cleanly: the journal books the call, the resume
//! keeps the checkpointed history and compacts again later, and the run
//! ends as it would have.

use crate::common::*;
use serde_json::json;

fn compact_case(name: &str) -> Case {
    let mut c = case(name)
        .toml("[memory]\ncompact_above_tokens = 1\ncompact_max_tokens = 256\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1"),
                {"id": "t2", "description": "Write the latency notes", "verify": {"kind": "file_exists", "path": "docs/notes.md"}}])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Added the index migration."),
            harness::scenario::ScriptCall {
                usage: Some(usage(500, 100)),
                ..text("compact/0", &json!({"summary": "t1 index added"}).to_string())
            },
            tool(
                "execute/t2/a0/0",
                "write_file",
                json!({"path": "docs/notes.md", "content": "p95 notes\n"}),
            ),
            text("execute/t2/a0/1", "Wrote the notes."),
        ]);
    c.predicate = r#"command = ["test", "-f", "docs/notes.md"]"#.into();
    c
}

const CALL_USD: f64 = (3500.0 * 5.0 + 300.0 * 25.0) / 1e6;
const COMPACT_USD: f64 = (500.0 * 5.0 + 100.0 * 25.0) / 1e6;

/// The fourth model call of the first process is compact/0.
fn killed_then_resumed(name: &str, phase: &str) -> (Case, RunResult) {
    let c = compact_case(name);
    run_until_killed(&c, phase);
    let r = c.run();
    (c, r)
}

#[test]
fn a_kill_while_the_compaction_is_in_flight_resumes_and_books_it_at_worst() {
    let (_c, r) = killed_then_resumed("compact-kill-in-flight", "during_model_call:4");
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["resumes"], 1);
    // The resumed process compacts after t2 (the checkpoint after t1 held
    // no attempt), as compact/0 again.
    let comp = r.report["compactions"].as_array().unwrap();
    assert_eq!(comp.len(), 1, "{}", r.explain());
    assert_eq!(comp[0]["call_key"], "compact/0");
    assert_eq!(comp[0]["outcome"], "ok");
    assert_eq!(comp[0]["step"], 2);
    // The killed call's reserve is booked at its worst case: more than the
    // five calls the runs billed.
    let spend = r.report["spend_usd"].as_f64().unwrap();
    assert!(
        spend > 5.0 * CALL_USD + COMPACT_USD,
        "{spend}: {}",
        r.explain()
    );
    assert!(spend <= r.report["hard_cap_usd"].as_f64().unwrap());
}

#[test]
fn a_kill_after_the_compaction_is_booked_before_its_checkpoint_resumes_cleanly() {
    let (_c, r) = killed_then_resumed(
        "compact-kill-after-record",
        "between_ledger_record_and_checkpoint:4",
    );
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["resumes"], 1);
    assert_eq!(r.ids("verified"), vec!["t1", "t2"]);
    // Booked once by the first process (its record is in the journal), then
    // made again by the resume: both paid, nothing lost.
    let spend = r.report["spend_usd"].as_f64().unwrap();
    assert!(
        (spend - 5.0 * CALL_USD - 2.0 * COMPACT_USD).abs() < 1e-9,
        "{spend}: {}",
        r.explain()
    );
}
