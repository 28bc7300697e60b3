//! Money survives a damaged journal: the real binary is killed while a model
//! call is in flight, the journal (or the checkpoint) is damaged the way a
//! kill, a power cut or a bad disk leaves it, and the same command is run
//! again. What `harness status` shows, what the resume books and what a
//! refused resume reports all come from the journal by the same rules.

use crate::common::*;
use harness::ledger::journal::{self, JournalEntry};
use serde_json::json;
use std::path::Path;

const CAP: f64 = 28.0;

/// Killed while execute/t1/a0/0 is in flight: the journal holds plan/0's
/// reserve and record, and that call's reserve.
fn killed_mid_call(name: &str) -> Case {
    let c = case(name).calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    run_until_killed(&c, "during_model_call:2");
    c
}

/// (booked, worst of the reserve still open) as the journal's lines say.
fn journal_money(path: &Path) -> (f64, f64, usize) {
    let bytes = std::fs::read(path).unwrap();
    let text = journal::parse(&bytes);
    assert!(text.corrupt.is_empty() && text.torn.is_none());
    let mut booked = 0.0;
    let mut last_reserve = (0.0, 0);
    let mut offset = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        match serde_json::from_slice::<JournalEntry>(line.strip_suffix(b"\n").unwrap()).unwrap() {
            JournalEntry::Record { cost_usd, .. } => booked += cost_usd,
            JournalEntry::Reserve { worst_usd, .. } => last_reserve = (worst_usd, offset),
            JournalEntry::Release { .. } | JournalEntry::Limit { .. } => {}
        }
        offset += line.len();
    }
    (booked, last_reserve.0, last_reserve.1)
}

fn status(c: &Case) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["status", "--state-dir"])
        .arg(c.state_dir())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn spend(r: &RunResult) -> f64 {
    r.report["spend_usd"].as_f64().unwrap()
}

#[test]
fn a_torn_reserve_line_is_booked_at_the_amount_it_still_shows() {
    let c = killed_mid_call("torn-reserve");
    let j = c.state_dir().join("ledger.jsonl");
    let (booked, worst, start) = journal_money(&j);
    assert!(booked > 0.0 && worst > 0.0);
    // Torn after its amount (seq, worst_usd and the comma after it survive).
    let bytes = std::fs::read(&j).unwrap();
    let line = String::from_utf8_lossy(&bytes[start..]).into_owned();
    let keep = line.find(",\"attempt\"").unwrap() + 1;
    std::fs::write(&j, &bytes[..start + keep]).unwrap();
    // Status and the resume agree, and neither forgets the call in flight.
    let shown = status(&c);
    assert!(
        shown.contains(&format!("${booked:.4} of"))
            && shown.contains(&format!("${worst:.4} reserved in flight")),
        "{shown}"
    );
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.ending(), "GOAL_MET", "{}", r.explain());
    let curve = r.report["spend_curve"].as_array().unwrap();
    assert!(
        curve.iter().any(|p| p["basis"] == "worst_case"
            && (p["cost_usd"].as_f64().unwrap() - worst).abs() < 1e-12),
        "the torn reserve is booked at its amount: {curve:?}"
    );
    assert!(spend(&r) >= booked + worst - 1e-12, "{}", r.explain());
}

#[test]
fn a_reserve_torn_before_its_amount_is_booked_at_the_cap_left() {
    let c = killed_mid_call("torn-early");
    let j = c.state_dir().join("ledger.jsonl");
    let (booked, _, start) = journal_money(&j);
    let bytes = std::fs::read(&j).unwrap();
    std::fs::write(&j, &bytes[..start + 12]).unwrap(); // `{"op":"rese`
    let shown = status(&c);
    assert!(
        shown.contains(&format!("${:.4} reserved in flight", CAP - booked)),
        "{shown}"
    );
    let r = c.result(c.command().output().unwrap());
    // Never less than the largest amount that reserve could have been.
    assert!((spend(&r) - CAP).abs() < 1e-9, "{}", r.explain());
    assert_eq!(r.ending(), "BUDGET_EXHAUSTED", "{}", r.explain());
}

#[test]
fn a_corrupt_middle_line_refuses_the_resume_and_reports_the_journals_money() {
    let c = killed_mid_call("corrupt-middle");
    let j = c.state_dir().join("ledger.jsonl");
    let (booked, worst, _) = journal_money(&j);
    let mut bytes = std::fs::read(&j).unwrap();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes.splice(
        second..second,
        b"{\"op\":\"record\",\"seq\":0,\0\0\0\0\n".iter().copied(),
    );
    std::fs::write(&j, &bytes).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "ledger_journal");
    assert!(
        r.report["detail"].as_str().unwrap().contains("line 2"),
        "{}",
        r.explain()
    );
    // What the readable lines hold: plan/0 booked, the call in flight at its worst.
    assert!(
        (spend(&r) - (booked + worst)).abs() < 1e-9,
        "{}",
        r.explain()
    );
    assert_eq!(
        std::fs::read(&j).unwrap(),
        bytes,
        "a refused journal is left as it was"
    );
}

#[test]
fn a_refused_checkpoint_reports_the_money_the_journal_holds() {
    let c = killed_mid_call("torn-checkpoint");
    let (booked, worst, _) = journal_money(&c.state_dir().join("ledger.jsonl"));
    let ck = c.state_dir().join(harness::checkpoint::FILE_NAME);
    let bytes = std::fs::read(&ck).unwrap();
    std::fs::write(&ck, &bytes[..bytes.len() / 2]).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert!(
        r.report["error_kind"]
            .as_str()
            .unwrap()
            .starts_with("checkpoint_"),
        "{}",
        r.explain()
    );
    assert!(
        (spend(&r) - (booked + worst)).abs() < 1e-9,
        "not $0: {}",
        r.explain()
    );
}
