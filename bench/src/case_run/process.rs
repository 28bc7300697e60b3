//! One harness process of a case-run: started in its own process group,
//! its stdout and stderr drained and scanned for canaries, waited for
//! within its bound, asked to stop or killed, and reaped with its CPU time.
//! Every wait maps the process's end to a number through one `exit_code`.

use crate::audit::{self, Canary};
use harness::invocation::HarnessInvocation;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A harness process that has not ended by then is killed and the run fails.
pub(super) const PROCESS_TIMEOUT: Duration = Duration::from_secs(600);
/// How long past its spec's wall clock a harness process may run before the
/// bench kills it (the harness promises TIME_LIMIT within a few seconds of
/// the limit; this bounds a harness that breaks the promise, so a hung one
/// costs the gate its clock, not PROCESS_TIMEOUT).
pub(super) const PROCESS_GRACE_AFTER_WALL_CLOCK: Duration = Duration::from_secs(30);
/// How long to wait for an interrupted harness to reach its pause point.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long stdout may stay open after the harness exited (a descendant
/// holding the pipe) before the bench stops reading it.
const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(10);
/// How long a harness sent SIGTERM at an `[interrupt]` may take to exit:
/// its own grace and a margin for a loaded machine, in seconds.
const STOP_EXIT_LIMIT_S: u64 = harness::stop::STOP_GRACE_S + 10;
/// The stderr tail kept for messages: cut back to the last
/// `STDERR_TAIL_KEEP_BYTES` once it passes `STDERR_TAIL_MAX_BYTES`.
const STDERR_TAIL_MAX_BYTES: usize = 8192;
const STDERR_TAIL_KEEP_BYTES: usize = 4096;

/// The bound on one harness process of a case-run: its spec's wall clock
/// plus the grace, never more than PROCESS_TIMEOUT (also when the spec could
/// not be read).
pub(super) fn process_limit(wall_clock_limit_s: Option<f64>) -> Duration {
    match wall_clock_limit_s {
        Some(w) if w.is_finite() && w > 0.0 => {
            (Duration::from_secs_f64(w.min(PROCESS_TIMEOUT.as_secs_f64()))
                + PROCESS_GRACE_AFTER_WALL_CLOCK)
                .min(PROCESS_TIMEOUT)
        }
        _ => PROCESS_TIMEOUT,
    }
}

/// The number a case-run records for how a harness process ended: its exit
/// code, or -1 when a signal ended it (no code). summary.json, JUnit and
/// every failure message have always written -1 for a killed harness; the
/// signal is in the stderr tail and the state dir when it matters.
pub(super) fn exit_code(st: ExitStatus) -> i32 {
    st.code().unwrap_or(-1)
}

/// A harness process that ended, read to its end.
#[derive(Debug)]
pub(super) struct Spawned {
    /// Through `exit_code`.
    pub code: i32,
    pub elapsed: Duration,
    /// When the process was seen to exit (the replayed model time is cut
    /// there: bench/src/latency.rs).
    pub ended: Instant,
    /// Its CPU time with its waited-for children's; None when unread.
    pub cpu: Option<Duration>,
    pub stderr_tail: String,
    /// Canaries seen on the process's stdout or stderr.
    pub canary_hits: Vec<String>,
}

/// Why a harness process gave no exit status to score.
#[derive(Debug)]
pub(super) enum SpawnError {
    /// The bench could not start the process (a bench fault).
    NotStarted(String),
    /// The process started and misbehaved (never paused, ran past its clock):
    /// the harness's own failure.
    Harness(String),
}

/// A started harness process: its stdout drained and scanned on a task of
/// its own (a full pipe would block the harness), its stderr left to read.
pub(super) struct Started {
    child: tokio::process::Child,
    pid: Option<u32>,
    /// Killed by a second signal to the bench (crate::interrupt) until reaped.
    _running: Option<crate::interrupt::Child>,
    stderr: tokio::process::ChildStderr,
    stdout_task: tokio::task::JoinHandle<Vec<String>>,
    t0: Instant,
}

/// The stderr read so far: a bounded tail and the canaries seen in it.
#[derive(Default)]
struct Heard {
    tail: String,
    hits: Vec<String>,
}

impl Heard {
    fn line(&mut self, l: &str) {
        self.tail.push_str(l);
        self.tail.push('\n');
        if self.tail.len() > STDERR_TAIL_MAX_BYTES {
            let cut = self.tail.len() - STDERR_TAIL_KEEP_BYTES;
            let cut = (cut..self.tail.len())
                .find(|i| self.tail.is_char_boundary(*i))
                .unwrap_or(self.tail.len());
            self.tail.drain(..cut);
        }
    }

    /// `l`'s canaries, each once.
    fn scan(&mut self, l: &str, canaries: &[Canary], name: &str) {
        for h in audit::canary_hits_in(l.as_bytes(), canaries, name) {
            if !self.hits.contains(&h) {
                self.hits.push(h);
            }
        }
    }
}

/// Read `stream` to its end line by line, looking for the canaries in every
/// line (whatever the stream's length) and keeping a bounded tail.
async fn drain<R: tokio::io::AsyncRead + Unpin>(
    stream: R,
    canaries: &[Canary],
    name: &str,
    heard: &mut Heard,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(l)) = lines.next_line().await {
        heard.scan(&l, canaries, name);
        heard.line(&l);
    }
}

async fn join_stdout(t: tokio::task::JoinHandle<Vec<String>>) -> Vec<String> {
    match tokio::time::timeout(STDOUT_DRAIN_AFTER_EXIT, t).await {
        Ok(Ok(h)) => h,
        _ => vec![],
    }
}

/// Wait for `child` to exit and reap it, its CPU time read first
/// (`latency::cpu_at_exit` leaves the exited process for this wait to reap).
async fn reap(
    child: &mut tokio::process::Child,
) -> (std::io::Result<ExitStatus>, Option<Duration>) {
    let cpu = crate::latency::cpu_at_exit_async(child.id()).await;
    (child.wait().await, cpu)
}

/// Start `bin` on `inv`.
pub(super) fn start(
    bin: &Path,
    inv: &HarnessInvocation,
    canaries: &[Canary],
) -> Result<Started, SpawnError> {
    // No provider key reaches the harness under test (the invocation removes
    // them): replay needs none, and live the proxy adds the key (the variable
    // --api-key-env names and the spec's api_key_env are removed too).
    let mut std_cmd = inv.command(bin);
    // Its own process group: Ctrl-C on a terminal signals the whole
    // foreground group, and a harness that got it directly would read the
    // bench's own stop request (below) as a second signal and exit at once
    // with no stop report. Shielded, it hears only the bench's one request.
    std::os::unix::process::CommandExt::process_group(&mut std_cmd, 0);
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| SpawnError::NotStarted(format!("cannot start {}: {e}", bin.display())))?;
    let pid = child.id();
    let _running = pid.map(crate::interrupt::Child::register);
    let stderr =
        (child.stderr.take()).ok_or_else(|| SpawnError::NotStarted("no stderr pipe".into()))?;
    let stdout =
        (child.stdout.take()).ok_or_else(|| SpawnError::NotStarted("no stdout pipe".into()))?;
    // stdout is scanned for canaries like stderr.
    let out_canaries = canaries.to_vec();
    let stdout_task = tokio::spawn(async move {
        let mut heard = Heard::default();
        drain(stdout, &out_canaries, "stdout", &mut heard).await;
        heard.hits
    });
    Ok(Started {
        child,
        pid,
        _running,
        stderr,
        stdout_task,
        t0,
    })
}

/// One harness process started and read to its exit within `limit`.
pub(super) async fn run(
    bin: &Path,
    inv: &HarnessInvocation,
    canaries: &[Canary],
    limit: Duration,
) -> Result<Spawned, SpawnError> {
    until_exit(start(bin, inv, canaries)?, canaries, limit).await
}

/// The process read to its exit, within `limit`; an interrupted bench asks
/// it to stop too and waits for it as before.
async fn until_exit(
    s: Started,
    canaries: &[Canary],
    limit: Duration,
) -> Result<Spawned, SpawnError> {
    let Started {
        mut child,
        pid,
        _running,
        stderr,
        stdout_task,
        t0,
    } = s;
    let mut heard = Heard::default();
    let collect = async {
        drain(stderr, canaries, "stderr", &mut heard).await;
        let (st, cpu) = reap(&mut child).await;
        st.map(|st| (st, cpu, Instant::now()))
    };
    // The bench interrupted: the harness is asked to stop too (it suspends
    // at a safe point and exits 128 + 15), and is waited for as before.
    let forward = async {
        crate::interrupt::wait().await;
        if let Some(p) = pid {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        // Never resolves: the harness's own exit ends the wait.
        std::future::pending::<std::io::Result<(ExitStatus, Option<Duration>, Instant)>>().await
    };
    let waited = async {
        tokio::select! {
            r = collect => r,
            r = forward => r,
        }
    };
    let (st, cpu, ended) = match tokio::time::timeout(limit, waited).await {
        Ok(r) => r.map_err(|e| SpawnError::Harness(e.to_string()))?,
        Err(_) => {
            return Err(SpawnError::Harness(format!(
                "the harness ran past {:.0}s (its wall clock plus {}s) and was killed: no ending",
                limit.as_secs_f64(),
                PROCESS_GRACE_AFTER_WALL_CLOCK.as_secs()
            )))
        }
    };
    heard.hits.extend(join_stdout(stdout_task).await);
    Ok(Spawned {
        code: exit_code(st),
        elapsed: ended - t0,
        ended,
        cpu,
        stderr_tail: heard.tail,
        canary_hits: heard.hits,
    })
}

/// What runs while the harness is paused, before it is stopped: the
/// case's `[[step]] when = "paused"` (a second harness beside it).
pub(super) type Beside<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Vec<crate::score::Check>> + Send + 'a>>;

/// How a paused harness is ended: SIGKILL, or a stop request it must
/// answer by suspending (`[interrupt] signal`).
pub(super) type Ending = Option<nix::sys::signal::Signal>;

/// The interrupted half of an `[interrupt]` case: read stderr until the
/// harness says it paused (`paused`, the test hooks' line), run `beside`,
/// then kill it or ask it to stop (`stop`). A harness that never pauses
/// failed.
pub(super) async fn until_paused(
    s: Started,
    paused: fn(&str) -> bool,
    stop: Ending,
    canaries: &[Canary],
    beside: Option<Beside<'_>>,
) -> Result<(Spawned, Vec<crate::score::Check>), SpawnError> {
    let Started {
        mut child,
        _running,
        stderr,
        stdout_task,
        t0,
        ..
    } = s;
    let mut heard = Heard::default();
    let mut lines = BufReader::new(stderr).lines();
    let reached = tokio::time::timeout(PAUSE_TIMEOUT, async {
        while let Ok(Some(l)) = lines.next_line().await {
            if paused(&l) {
                return true;
            }
            heard
                .hits
                .extend(audit::canary_hits_in(l.as_bytes(), canaries, "stderr"));
            heard.tail.push_str(&l);
            heard.tail.push('\n');
        }
        false
    })
    .await
    .unwrap_or(false);
    let beside_checks = match (reached, beside) {
        (true, Some(f)) => f.await,
        _ => vec![],
    };
    let (st, cpu) = match (reached, stop) {
        (true, Some(sig)) => stop_request(&mut child, &mut lines, &mut heard.tail, sig).await?,
        _ => {
            let _ = child.start_kill(); // SIGKILL
            let (st, cpu) = reap(&mut child).await;
            (st.map_err(|e| SpawnError::Harness(e.to_string()))?, cpu)
        }
    };
    let ended = Instant::now();
    if !reached {
        return Err(SpawnError::Harness(format!(
            "the harness never reached the interrupt point (exit {:?}); stderr: {}",
            st.code(),
            heard.tail.trim()
        )));
    }
    heard.hits.extend(join_stdout(stdout_task).await);
    let spawned = Spawned {
        code: exit_code(st),
        elapsed: ended - t0,
        ended,
        cpu,
        stderr_tail: heard.tail,
        canary_hits: heard.hits,
    };
    Ok((spawned, beside_checks))
}

/// `[interrupt] signal = "SIGTERM"` (or SIGINT, SIGHUP): ask the paused
/// harness to stop and wait for it. It must exit 128 + the signal
/// (suspended, not ended) within its grace; anything else is the harness's
/// failure, not the bench's.
async fn stop_request(
    child: &mut tokio::process::Child,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    tail: &mut String,
    sig: nix::sys::signal::Signal,
) -> Result<(ExitStatus, Option<Duration>), SpawnError> {
    let pid = child.id().map(|p| nix::unistd::Pid::from_raw(p as i32));
    if let Some(pid) = pid {
        let _ = nix::sys::signal::kill(pid, sig);
    }
    let wait = async {
        while let Ok(Some(l)) = lines.next_line().await {
            tail.push_str(&l);
            tail.push('\n');
        }
        reap(child).await
    };
    let (st, cpu) = match tokio::time::timeout(Duration::from_secs(STOP_EXIT_LIMIT_S), wait).await {
        Ok((st, cpu)) => (st.map_err(|e| SpawnError::Harness(e.to_string()))?, cpu),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(SpawnError::Harness(format!(
                "asked to stop ({sig}), the harness was still running after {STOP_EXIT_LIMIT_S} s"
            )));
        }
    };
    let want = harness::stop::exit_code(sig);
    if st.code() != Some(want) {
        return Err(SpawnError::Harness(format!(
            "asked to stop ({sig}), the harness exited {st}, not {want} (suspended); stderr: {}",
            tail.trim()
        )));
    }
    Ok((st, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::invocation::ModelSource;
    use std::path::PathBuf;

    #[test]
    fn a_harness_process_is_bounded_by_its_wall_clock_plus_the_grace() {
        assert_eq!(
            process_limit(Some(30.0)),
            Duration::from_secs(30) + PROCESS_GRACE_AFTER_WALL_CLOCK
        );
        assert_eq!(process_limit(Some(1e9)), PROCESS_TIMEOUT);
        for bad in [None, Some(f64::NAN), Some(-1.0), Some(0.0)] {
            assert_eq!(process_limit(bad), PROCESS_TIMEOUT);
        }
    }

    /// A stand-in for the harness binary: a script that ignores the
    /// `harness run` argv and runs `body`.
    fn fake_harness(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("fake-harness");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn invocation() -> HarnessInvocation {
        HarnessInvocation::run(
            "run.toml",
            "state",
            ModelSource::BaseUrl("http://127.0.0.1:1".into()),
        )
    }

    #[tokio::test]
    async fn a_harness_that_hangs_is_killed_at_its_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_harness(tmp.path(), "sleep 30");
        let t0 = Instant::now();
        let r = run(&bin, &invocation(), &[], Duration::from_millis(300)).await;
        assert!(
            matches!(r, Err(SpawnError::Harness(ref m)) if m.contains("no ending")),
            "{r:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(20));
    }

    /// A harness a signal ended has no exit code: the case-run records -1
    /// for it (what summary.json and JUnit have always written), whichever
    /// wait saw it end; a harness's own exit code is recorded as it is.
    #[tokio::test]
    async fn a_harness_killed_by_a_signal_is_recorded_as_minus_one_by_every_wait() {
        let tmp = tempfile::tempdir().unwrap();
        let killed = fake_harness(tmp.path(), "kill -KILL $$");
        let s = run(&killed, &invocation(), &[], PROCESS_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(s.code, -1, "the scored wait");
        let paused_then_killed = fake_harness(tmp.path(), "echo paused >&2; kill -KILL $$");
        let started = start(&paused_then_killed, &invocation(), &[]).unwrap();
        let (s, _) = until_paused(started, |_| true, None, &[], None)
            .await
            .unwrap();
        assert_eq!(s.code, -1, "the interrupted wait");
        let exits = fake_harness(tmp.path(), "exit 3");
        let s = run(&exits, &invocation(), &[], PROCESS_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(s.code, 3);
    }

    #[tokio::test]
    async fn no_provider_key_reaches_the_harness_process() {
        // Stand-in for the harness binary: print the environment it got.
        for k in harness::redact::PROVIDER_KEY_VARS {
            std::env::set_var(k, format!("CANARY-bench-{k}-0123456789"));
        }
        std::env::set_var("BENCH_TEST_KEY_ENV", "CANARY-bench-named-0123456789");
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_harness(tmp.path(), "env >&2");
        let inv = invocation()
            .env_remove("BENCH_TEST_KEY_ENV")
            .env("ANTHROPIC_API_KEY", "the-case-canary");
        let s = run(&bin, &inv, &[], PROCESS_TIMEOUT).await.unwrap();
        assert_eq!(s.code, 0);
        assert!(!s.stderr_tail.contains("CANARY-bench"), "{}", s.stderr_tail);
        assert!(s.stderr_tail.contains("ANTHROPIC_API_KEY=the-case-canary"));
        assert!(
            s.stderr_tail.contains("PATH="),
            "the rest of the environment stays"
        );
    }
}
