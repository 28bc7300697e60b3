//! A harness bug `bench chaos` found with SIGKILL alone (reproduction:
//! `bench chaos --seed 1 --mode sigkill --replay-kill 3`). They failed on the
//! harness as it was and pass with the fixes in run_loop (the re-report writes
//! a missing report and delivers its alert; a refused resume alerts).

use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn unmet_case(name: &str) -> Case {
    // One verified task, then the queue is empty with the goal unmet and no
    // replans: QUEUE_EMPTY_GOAL_UNMET (exit 3), whose alert action is "alert".
    let mut c = case(name).toml("[loop]\nmax_replans = 0").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    c.predicate = r#"command = ["false"]"#.into();
    c
}

#[test]
fn killed_after_the_final_checkpoint_the_rerun_still_writes_the_report_and_alerts() {
    // 1. A clean run, counting its checkpoint writes through the operation log.
    let clean = unmet_case("final-window-clean");
    let log = clean.root.path().join("ops.jsonl");
    let mut clean = clean;
    clean
        .env
        .push(("HARNESS_SIMFS_LOG".into(), log.display().to_string()));
    let r = clean.run();
    assert_eq!(
        (r.code, r.ending()),
        (3, "QUEUE_EMPTY_GOAL_UNMET"),
        "{}",
        r.explain()
    );
    let n = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"op\":\"rename\"") && l.contains("checkpoint.json\""))
        .count();
    assert!(n >= 3, "{n}");

    // 2. The same run, SIGKILLed right after the final (finished) checkpoint
    //    was renamed into place, before report.json and the alert.
    let c = unmet_case("final-window");
    c.materialize();
    let mut cmd = c.command();
    cmd.env(
        "HARNESS_CHAOS_PAUSE_AT",
        format!("after_rename_before_fsync_dir:{n}"),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    assert!(
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("HARNESS_CHAOS_PAUSED")),
        "never paused"
    );
    child.kill().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert!(!c.state_dir().join("report.json").exists());

    // 3. The same command again: the run is finished, so it re-reports...
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.code, 3, "{}", r.explain());
    // ...but nothing writes the report it says it wrote, or delivers the alert.
    assert!(
        c.state_dir().join("report.json").exists(),
        "no report.json after the re-report; stdout says:\n{}",
        r.stdout
    );
    let alerts = std::fs::read_to_string(c.state_dir().join("alerts.jsonl")).unwrap_or_default();
    assert!(
        alerts.contains("QUEUE_EMPTY_GOAL_UNMET"),
        "the ending's alert was never delivered"
    );
}

#[test]
fn a_refused_checkpoint_alerts_a_human() {
    // Any refusal at load goes through run()'s fail_early, which writes the
    // report but never calls deliver_alert. Reproduced here with a torn
    // checkpoint (what the in-place broken variant leaves); bench chaos finds
    // it on every run that ends in a refusal.
    let c = unmet_case("refused");
    c.materialize();
    std::fs::create_dir_all(c.state_dir()).unwrap();
    std::fs::write(
        c.state_dir().join("checkpoint.json"),
        b"harness-checkpoint schema=1 len=999 sha256=00\n{\"torn",
    )
    .unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["alert"], "alert");
    let alerts = std::fs::read_to_string(c.state_dir().join("alerts.jsonl")).unwrap_or_default();
    assert!(
        alerts.contains("UNRECOVERABLE_ERROR"),
        "report.json says alert, but alerts.jsonl has nothing:\n{}",
        r.explain()
    );
}
