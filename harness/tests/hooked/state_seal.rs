//! The state dir's seal (harness::state_seal) through the real binary: a
//! goal predicate that appends to the ledger journal. Under the shipped
//! confinement the write is refused and the run ends as it would have; with
//! both filesystem layers removed (the `no-file-layers` variant: no mount
//! view, no Landlock; either alone still stops it), the write lands,
//! and the harness itself sees it: UNRECOVERABLE_ERROR, `state_tampered`,
//! naming the file, never GOAL_MET on a ledger nobody can trust.

use crate::common::*;
use serde_json::json;

fn forging_case(name: &str) -> Case {
    let mut c = case(name)
        .file("src/search.py", "def search(q): ...\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1")])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Added the index migration."),
        ]);
    let ledger = c.state_dir().join("ledger.jsonl");
    c.predicate = format!(
        "command = [\"sh\", \"-c\", {:?}]",
        format!(
            "echo '{{\"forged\":1}}' >> '{}' 2>/dev/null; grep -q 'CREATE INDEX' db/0042_search_index.sql",
            ledger.display()
        )
    );
    c
}

#[test]
fn a_confined_process_that_writes_the_ledger_ends_the_run_state_tampered() {
    // The shipped confinement: the write is refused, nothing to see.
    let r = forging_case("seal-holds").run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    let journal = std::fs::read_to_string(r.state_dir.join("ledger.jsonl")).unwrap_or_default();
    assert!(!journal.contains("forged"), "{journal}");

    // Both filesystem layers removed: the write lands, and the seal names it.
    let mut c = forging_case("seal-breached");
    c.env
        .push(("HARNESS_CHAOS_BROKEN".into(), "no-file-layers".into()));
    let r = c.run();
    assert_eq!(
        (r.ending(), r.report["error_kind"].as_str()),
        ("UNRECOVERABLE_ERROR", Some("state_tampered")),
        "{}",
        r.explain()
    );
    let detail = r.report["detail"].to_string();
    assert!(detail.contains("ledger.jsonl"), "{detail}");
    assert_eq!(r.report["predicate_met"], false, "{}", r.explain());
}
