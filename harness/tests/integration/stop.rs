//! A stop request (SIGTERM, SIGINT, SIGHUP) through the real binary: the run
//! is suspended at a safe point with a report that says so (never an
//! ending), exit 128 + the signal, and the same command resumes it to its
//! ending with nothing run twice.

use crate::common::*;
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Longest a test waits for the harness to reach the point it signals at.
const REACH_LIMIT: Duration = Duration::from_secs(60);

fn events(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Wait until events.jsonl holds an event of `kind` whose data has
/// `field == value`, or panic with what it holds.
fn wait_for_event(child: &mut Child, state: &Path, kind: &str, field: &str, value: &str) {
    let t0 = Instant::now();
    loop {
        if events(state)
            .iter()
            .any(|e| e["kind"] == kind && e["data"][field] == value)
        {
            return;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the harness exited ({st}) before {kind} {field}={value}");
        }
        assert!(
            t0.elapsed() < REACH_LIMIT,
            "no {kind} {field}={value} in {:?}",
            events(state)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

/// t1 posts (non-idempotent: a second post would be seen), t2 writes the
/// index; t2's first model call takes 30 s on the wire (the replay's
/// latency), so a stop lands with it in flight.
fn two_task_case(name: &str) -> Case {
    let mut slow = write_index("execute/t2/a0/0");
    slow.latency_ms = Some(30_000);
    let mut c = case(name).calls(vec![
        plan(
            "plan/0",
            json!([
                {"id": "t1", "description": "Post the rollout note to #eng", "verify": {"kind": "outbox_has", "key": "rollout-0042"}},
                index_task("t2")]),
        ),
        tool(
            "execute/t1/a0/0",
            "post_message",
            json!({"channel": "#eng", "text": "Rolling out idx_search_ts", "idempotency_key": "rollout-0042"}),
        ),
        text("execute/t1/a0/1", "Posted."),
        slow,
        text("execute/t2/a0/1", "done"),
    ]);
    c.latency_scale = 1.0;
    c
}

fn spawn(c: &Case) -> Child {
    c.materialize();
    let mut cmd = c.command();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

#[test]
fn sigterm_abandons_the_call_in_flight_reports_the_stop_and_the_same_command_resumes() {
    let mut c = two_task_case("stop-sigterm");
    let mut child = spawn(&c);
    let state = c.state_dir();
    wait_for_event(&mut child, &state, "task_start", "task", "t2");
    std::thread::sleep(Duration::from_millis(300)); // t2's call is on the wire
    let sent = Instant::now();
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    let r = c.result(out);
    eprintln!("SIGTERM to exit: {took:?}");
    assert_eq!(r.code, 143, "{}", r.explain());
    // The report says stopped, and is no ending a reader could take.
    let rep = &r.report;
    assert_eq!(rep["stopped"]["signal"], "SIGTERM", "{}", r.explain());
    assert_eq!(rep["stopped"]["exit_code"], 143);
    assert_eq!(rep["stopped"]["resumable"], true);
    assert!(rep.get("ending").is_none(), "{rep}");
    assert_eq!(rep["in_flight_task"], "t2");
    assert_eq!(rep["verified"], json!(["t1"]));
    let cut = rep["stopped"]["cut"].as_str().unwrap_or_default();
    assert!(
        cut.contains("execute/t2/a0/0") && cut.contains("abandoned"),
        "{cut}"
    );
    let err = harness::report::Report::load(&state).unwrap_err();
    assert!(err.contains("STOPPED by SIGTERM"), "{err}");
    // The abandoned call stays booked as spent, at its worst case.
    let journal = std::fs::read_to_string(state.join("ledger.jsonl")).unwrap();
    assert!(journal.contains("worst_case"), "{journal}");
    assert!(rep["spend_usd"].as_f64().unwrap() > 0.0);
    // The page and the alert say so too; `status` does not read it as ended.
    let page = std::fs::read_to_string(state.join("report.html")).unwrap();
    assert!(page.contains("STOPPED by SIGTERM"), "{page}");
    // Its Next section gives the exact command that resumes it: the one
    // this test ran, paths absolute (the same command is run below).
    let resume = format!(
        "run --spec {} --state-dir {}",
        std::path::absolute(&c.spec_path()).unwrap().display(),
        std::path::absolute(&state).unwrap().display()
    );
    assert!(
        page.contains("Resume: run the same command") && page.contains(&resume),
        "{resume} not in {page}"
    );
    let alerts = std::fs::read_to_string(state.join("alerts.jsonl")).unwrap();
    assert!(alerts.contains("\"action\":\"stopped\""), "{alerts}");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["status", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let st = String::from_utf8_lossy(&st.stdout);
    assert!(st.contains("STOPPED by SIGTERM"), "{st}");
    assert!(st.contains("in flight  t2"), "{st}");

    // Resume: the same command (the replay's latency off) ends the run.
    c.latency_scale = 0.0;
    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.ids("verified"), vec!["t1", "t2"]);
    assert_eq!(r.report["resumes"], 1);
    assert_eq!(read_outbox(&state).len(), 1, "t1 posted twice");
    assert!(state.join("report.stopped.json").is_file());
    // Spend counts the abandoned call: never less than before the stop.
    let spend_after = r.report["spend_usd"].as_f64().unwrap();
    let booked: f64 = std::fs::read_to_string(state.join("report.stopped.json"))
        .ok()
        .and_then(|b| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v["spend_usd"].as_f64())
        .unwrap();
    assert!(spend_after >= booked, "{spend_after} < {booked}");
}

#[test]
fn a_check_in_flight_is_killed_whole_and_the_task_verified_on_resume() {
    // t1's verify is a check that (once the index is written) starts a
    // grandchild and waits 300 s; the
    // stop kills both at once. The resume verifies t1 again: this time the
    // check passes (the marker the model wrote is there, and no wait).
    let mut c = case("stop-check")
        .check(
            "slow",
            "[ -f db/0042_search_index.sql ] || exit 1; if [ -f .slow-done ]; then exit 0; fi; sleep 3007 & echo started > grandchild.pid; touch .slow-done; wait",
        )
        .calls(vec![
            plan(
                "plan/0",
                json!([{"id": "t1", "description": "Add an index on search_events(created_at) as migration 0042",
                        "verify": {"kind": "check", "name": "slow"}}]),
            ),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "done"),
        ]);
    c.predicate = r#"command = ["test", "-f", ".slow-done"]"#.into();
    let mut child = spawn(&c);
    let t0 = Instant::now();
    while !c.ws().join("grandchild.pid").is_file() {
        assert!(t0.elapsed() < REACH_LIMIT, "the check never started");
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the harness exited ({st}) before the check started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let r = c.result(child.wait_with_output().unwrap());
    assert_eq!(r.code, 130, "{}", r.explain());
    assert_eq!(r.report["stopped"]["signal"], "SIGINT");
    assert_eq!(r.report["in_flight_task"], "t1", "{}", r.explain());
    // The check runs in a PID namespace of its own, so a pid it could
    // write names nothing here: the grandchild is found by its unique
    // argv. Gone, or a zombie waiting to be reaped: not running.
    let running: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\03007\0"))
        .map(|e| std::fs::read_to_string(e.path().join("stat")).unwrap_or_default())
        .filter(|stat| {
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .chars()
                .next();
            !matches!(state, None | Some('Z') | Some('X'))
        })
        .collect();
    assert!(
        running.is_empty(),
        "the check's grandchild outlived the stop: {running:?}"
    );
    // Nothing judged the cut check: t1 is neither verified nor parked.
    assert_eq!(r.report["verified"], json!([]));
    assert_eq!(r.report["parked"], json!([]));

    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["verified"][0]["how"], "verified_on_resume");
}

#[test]
fn a_second_signal_during_the_grace_exits_at_once_and_the_resume_still_ends_the_run() {
    // The stop notice goes to a webhook that accepts and never answers
    // (bounded by its own 5 s timeout): the second signal lands while the
    // stop is still being published.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let mut c = two_task_case("stop-twice").toml(&format!("[alerts]\nwebhook_url = {url:?}\n"));
    let mut child = spawn(&c);
    let state = c.state_dir();
    wait_for_event(&mut child, &state, "task_start", "task", "t2");
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let _held = listener.accept().unwrap(); // the stop notice is being posted
    let sent = Instant::now();
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    eprintln!("second SIGTERM to exit: {:?}", sent.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(out.status.signal().is_none());
    assert!(
        stderr.contains("a second signal (SIGTERM): exiting at once"),
        "{stderr}"
    );
    // Left as a SIGKILL would leave it: the checkpoint, no stop report.
    assert!(harness::report::StoppedReport::load(&state).is_err());

    drop(_held);
    c.latency_scale = 0.0;
    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(read_outbox(&state).len(), 1, "t1 posted twice");
}

/// SIGHUP (the terminal that started the run closed) is a stop request like
/// the others: exit 129, README's table, and the stop report names it.
#[test]
fn sighup_stops_the_run_with_exit_129() {
    let c = two_task_case("stop-sighup");
    let mut child = spawn(&c);
    let state = c.state_dir();
    wait_for_event(&mut child, &state, "task_start", "task", "t2");
    signal(&child, nix::sys::signal::Signal::SIGHUP);
    let r = c.result(child.wait_with_output().unwrap());
    assert_eq!(r.code, 129, "{}", r.explain());
    assert_eq!(r.report["stopped"]["signal"], "SIGHUP", "{}", r.explain());
    assert_eq!(r.report["stopped"]["exit_code"], 129);
}
