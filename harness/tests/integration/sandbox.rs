//! The kernel's confinement of checks (harness::sandbox), tried the way
//! model-written code a check runs would try to get out: each attempt must
//! fail, and nothing the check started may outlive it. These need the full
//! level (Landlock ABI 6+, a network namespace, a pids cgroup: root on a
//! recent kernel, as CI is); on a machine without it they fail, naming the
//! probe, rather than pass without having tried.

use harness::check::{run_check, CheckEnv, CheckResult, CheckSpec};
use harness::sandbox::{self, Level};
use std::path::Path;

fn full_level() {
    assert_eq!(
        sandbox::level(),
        Level::Full,
        "this machine's kernel gives {:?}: these tests need the full level",
        sandbox::probe()
    );
}

fn sh(script: &str, ws: &Path) -> CheckResult {
    let spec = CheckSpec {
        command: vec!["sh".into(), "-c".into(), script.into()],
        timeout_s: 20,
        env: CheckEnv::default(),
        network: false,
    };
    run_check(&spec, ws)
}

#[test]
fn a_check_writes_its_workspace_and_nothing_beside_it() {
    full_level();
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("workspace");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(d.path().join("ledger.jsonl"), "{}\n").unwrap();
    let me = std::process::id();
    let r = sh(
        &format!("echo ok > inside.txt && echo x >> ../ledger.jsonl; echo y > ../planted.txt; echo z > /tmp/harness-sandbox-escape-{me}; echo h > $HOME/.harness-sandbox-escape-{me}; echo t > $TMPDIR/own.txt && echo tmp-ok"),
        &ws,
    );
    assert!(ws.join("inside.txt").exists(), "{r:?}");
    assert!(r.output.contains("tmp-ok"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("ledger.jsonl")).unwrap(),
        "{}\n"
    );
    assert!(!d.path().join("planted.txt").exists());
    assert!(!Path::new(&format!("/tmp/harness-sandbox-escape-{me}")).exists());
    if let Some(home) = std::env::var_os("HOME") {
        assert!(!Path::new(&home)
            .join(format!(".harness-sandbox-escape-{me}"))
            .exists());
    }
}

#[test]
fn a_check_cannot_read_the_state_dir_or_the_harness_environment() {
    full_level();
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("workspace");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(d.path().join("checkpoint.json"), "secret-state").unwrap();
    // This test process stands for the harness: its environment holds a key.
    let me = std::process::id();
    let r = sh(
        &format!("cat ../checkpoint.json; cat /proc/{me}/environ | tr '\\0' '\\n' | grep -c PATH; ls /proc | head -3; echo done"),
        &ws,
    );
    assert!(r.output.contains("done"), "{r:?}");
    assert!(!r.output.contains("secret-state"), "{r:?}");
    assert!(!r.output.contains("PATH="), "{r:?}");
}

#[test]
fn a_check_has_no_network() {
    full_level();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let d = tempfile::tempdir().unwrap();
    let r = sh(
        &format!("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2); print(\"CONNECTED\")' 2>&1; echo done"),
        d.path(),
    );
    assert!(r.output.contains("done"), "{r:?}");
    assert!(!r.output.contains("CONNECTED"), "{r:?}");
}

#[test]
fn nothing_a_check_started_outlives_it_and_a_fork_bomb_stops_at_the_cap() {
    full_level();
    let d = tempfile::tempdir().unwrap();
    let marker = format!("harness-sandbox-outlive-{}", std::process::id());
    // A setsid daemon (out of the check's process group) and 400 sleepers
    // (over the 256-process cap).
    let r = sh(
        &format!("setsid sh -c 'sleep 300; : {marker}' & (i=0; while [ $i -lt 400 ]; do sleep 30 & i=$((i+1)); echo $i > forked; done) 2>/dev/null; echo started"),
        d.path(),
    );
    assert!(r.output.contains("started"), "{r:?}");
    let forked: u32 = std::fs::read_to_string(d.path().join("forked"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        forked < 400,
        "all 400 forks succeeded: the process cap did not hold"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(alive.is_empty(), "still running after the check: {alive:?}");
}

/// A harness killed while a check ran cannot remove the check's group: a
/// process its check left running there would live on. The next harness
/// sweeps every group of a gone owner: kills what is in it, removes it.
#[test]
fn a_killed_harnesss_check_group_and_what_is_in_it_are_swept() {
    full_level();
    use harness::sandbox::cgroup::{sweep_orphans, ROOT};
    // A pid above the kernel's pid_max (2^22): an owner that is surely gone.
    let stale = Path::new(ROOT).join("check-5000000-0");
    let _ = std::fs::create_dir_all(&stale);
    let mut orphan = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    std::fs::write(stale.join("cgroup.procs"), orphan.id().to_string()).unwrap();
    // A live owner's group (this process's) is left alone.
    let live = Path::new(ROOT).join(format!("check-{}-999999", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    assert!(sweep_orphans(Path::new(ROOT)) >= 1);
    assert!(!stale.exists(), "the gone owner's group is removed");
    let st = orphan.wait().unwrap();
    assert!(!st.success(), "the orphan was killed: {st:?}");
    assert!(live.exists(), "a live owner's group is not touched");
    std::fs::remove_dir(&live).unwrap();
}

/// A check is its own PID namespace's init: it sees no process outside it
/// (the harness's pid names nothing there), and its exit code comes back
/// as it was.
#[test]
fn a_check_sees_no_process_but_its_own() {
    full_level();
    let d = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let r = sh(
        &format!("echo pid=$$; if kill -0 {me} 2>/dev/null; then echo harness-visible; else echo harness-hidden; fi; n=0; for p in $(seq 1 512); do kill -0 $p 2>/dev/null && n=$((n+1)); done; echo seen=$n; exit 7"),
        d.path(),
    );
    assert!(r.output.contains("pid=1\n"), "{r:?}");
    assert!(r.output.contains("harness-hidden"), "{r:?}");
    let seen: u32 = r
        .output
        .split("seen=")
        .nth(1)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u32::MAX);
    assert!(
        seen <= 4,
        "a check sees only its own processes, saw {seen}: {r:?}"
    );
    assert_eq!(r.exit_code, Some(7), "its exit code comes back: {r:?}");
}
