//! Every exit is an ending, whatever happens to the process's own I/O and
//! before the loop starts: a closed stdout never changes the exit code; a
//! state dir that cannot be made still ends UNRECOVERABLE_ERROR with the
//! report on stderr and the alert tried; a held lock is one clear line and
//! nothing written; `harness status` says a refused checkpoint in its exit
//! code and never prints a negative zero.

use crate::common::*;
use serde_json::{json, Value};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

fn goal_met_case(name: &str) -> Case {
    case(name).calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ])
}

/// A pipe whose read end is already closed: every write to it fails with
/// EPIPE (Rust ignores SIGPIPE), exactly what `| head -1` does once head has
/// exited.
fn closed_pipe() -> OwnedFd {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    write
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

fn status_cmd(state_dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.arg("status").arg("--state-dir").arg(state_dir);
    c.stdin(Stdio::null());
    c
}

#[test]
fn a_closed_stdout_never_changes_the_exit_code_of_run() {
    for (label, stdout) in [
        ("closed pipe", Stdio::from(closed_pipe())),
        ("/dev/full", Stdio::from(dev_full())),
    ] {
        let c = goal_met_case("closed-stdout");
        c.materialize();
        let out = c.command().stdout(stdout).output().unwrap();
        let r = c.result(out);
        assert_eq!(
            (r.code, r.ending()),
            (0, "GOAL_MET"),
            "{label}: {}",
            r.explain()
        );
        assert!(
            r.stderr.contains("stdout is not writable"),
            "{label}: said once on stderr: {}",
            r.explain()
        );
        assert!(!r.stderr.contains("panicked"), "{label}: {}", r.explain());
        // Also an ending that is not exit 0: its code survives too.
        let mut u = goal_met_case("closed-stdout-unmet").toml("[loop]\nmax_replans = 0");
        u.predicate = r#"command = ["false"]"#.into();
        u.materialize();
        let out = u
            .command()
            .stdout(Stdio::from(closed_pipe()))
            .output()
            .unwrap();
        let r = u.result(out);
        assert_eq!(
            (r.code, r.ending()),
            (3, "QUEUE_EMPTY_GOAL_UNMET"),
            "{label}: {}",
            r.explain()
        );
    }
}

#[test]
fn a_closed_stdout_never_changes_the_exit_code_of_status() {
    let c = goal_met_case("status-closed");
    let r = c.run();
    assert_eq!(r.code, 0, "{}", r.explain());
    for stdout in [Stdio::from(closed_pipe()), Stdio::from(dev_full())] {
        let out = status_cmd(&r.state_dir).stdout(stdout).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn status_never_prints_a_negative_zero_and_a_refused_checkpoint_exits_non_zero() {
    let c = goal_met_case("status-zero");
    let r = c.run();
    let out = status_cmd(&r.state_dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("$0.0000 reserved in flight"),
        "nothing in flight reads as plain zero: {text}"
    );
    assert!(!text.contains("-0.0"), "{text}");

    // Corrupt one byte of the body: the checksum refuses it.
    let p = r.state_dir.join("checkpoint.json");
    let mut b = std::fs::read(&p).unwrap();
    let n = b.len();
    b[n - 2] ^= 0x20;
    std::fs::write(&p, &b).unwrap();
    let out = status_cmd(&r.state_dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checkpoint REFUSED"), "{text}");
    assert_eq!(out.status.code(), Some(4), "{text}");
}

#[test]
fn a_state_dir_that_cannot_be_made_ends_unrecoverable_with_the_report_on_stderr_and_the_alert() {
    let c = goal_met_case("no-state-dir");
    let alerts = c.root.path().join("alerts-outside.jsonl");
    let c = c.toml(&format!(
        "[alerts]\nfile = {:?}",
        alerts.display().to_string()
    ));
    c.materialize();
    // A state dir whose parent is a regular file is refused with the spec,
    // before anything runs (64, nothing written: the path cannot be checked
    // against the workspace).
    let blocker = c.root.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .arg("--spec")
        .arg(c.spec_path())
        .arg("--state-dir")
        .arg(blocker.join("state"))
        .arg("--replay")
        .arg(c.cassette_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("state_dir"));
    assert!(!alerts.exists(), "a refused spec sends no alert");
    // One that passes the check but cannot be made (no directory can be
    // created under /proc, even by root) is an ending.
    let state = std::path::PathBuf::from(format!(
        "/proc/self/harness-no-such-dir-{}/state",
        std::process::id()
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .arg("--spec")
        .arg(c.spec_path())
        .arg("--state-dir")
        .arg(&state)
        .arg("--replay")
        .arg(c.cassette_dir())
        .arg("--latency-scale")
        .arg("0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let code = out.status.code();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code, Some(4), "{stdout}\n{stderr}");
    assert!(stderr.contains("the report was NOT written"), "{stderr}");
    let report: Value = harness::report::json_on_stderr(&stderr)
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("the report as JSON on stderr: {stderr}"));
    assert_eq!(report["ending"], "UNRECOVERABLE_ERROR");
    assert_eq!(report["error_kind"], "state_dir");
    assert!(report["detail"]
        .as_str()
        .unwrap()
        .contains("cannot create state dir"));
    // Never a path to a report that is not there.
    assert!(stdout.contains("report     NOT WRITTEN"), "{stdout}");
    assert!(!stdout.contains("report     /"), "{stdout}");
    // The alert still went out.
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&alerts).unwrap().trim()).unwrap();
    assert_eq!(line["ending"], "UNRECOVERABLE_ERROR");
    assert_eq!(line["action"], "alert");
}

#[test]
fn a_held_lock_is_one_clear_line_and_nothing_is_written() {
    let c = goal_met_case("lock-held");
    c.materialize();
    std::fs::create_dir_all(c.state_dir()).unwrap();
    let lock_path = c.state_dir().join("run.lock");
    std::fs::write(&lock_path, "4242\n").unwrap();
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(&lock_path)
        .unwrap();
    held.lock().unwrap();
    let before: Vec<_> = std::fs::read_dir(c.state_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out = c.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("another harness (pid 4242) is running"),
        "{stderr}"
    );
    let after: Vec<_> = std::fs::read_dir(c.state_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        before, after,
        "nothing written into a state dir another harness owns"
    );
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), "4242\n");
    drop(held);
    // Released: the same command runs, and the lock names its pid meanwhile.
    let r = c.run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
}

/// One harness per workspace: while another holds it (here the test holds
/// the same flock a running harness takes), a run with its own state dir is
/// refused before it writes anything; once it is released, the run goes.
#[test]
fn a_second_harness_on_one_workspace_is_refused_before_it_writes() {
    let c = goal_met_case("ws-lock");
    c.materialize();
    let held = std::fs::File::open(c.ws()).unwrap();
    held.lock().unwrap();
    let out = c.command().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    // What is true: the workspace is held (by this test's pid, read from
    // /proc/locks) under a state dir other than this one.
    let holder = format!(
        "another harness (pid {}) is running on the workspace",
        std::process::id()
    );
    assert!(
        err.contains(&holder)
            && err.contains("with a state dir other than")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert!(!c.state_dir().join("report.json").exists());
    assert!(!c.state_dir().join("checkpoint.json").exists());
    drop(held);
    let r = c.run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
}
