//! Running case-runs: each through the real `harness` binary as a subprocess
//! (the deployable artifact and its exit code are what is tested), against an
//! in-process replay server on loopback, or (live) the bench's proxy to a
//! real endpoint (`Target`). Every case-run gets a fresh copy of
//! the case (spec, workspace, checks) and its own state dir under the output
//! directory, so nothing a run does can leak into another or into the suite.

use crate::audit::{self, Canary};
use crate::bench_fault::{self, BenchFault};
pub use crate::harness_bin::default_harness_bin;
pub use crate::record::{ending_or_none, RunRecord};
use crate::score::commits::{CommitFiles, CommitFilesError};
use crate::score::{self, Artifacts, Check, Verdict};
pub use crate::servers::{start_server, Servers, CASE_RUNS_PER_SERVER};
pub use crate::spec_overlay::Overlay;
use crate::suite::Case;
use crate::suite::StepWhen;
use harness::invocation::{HarnessInvocation, ModelSource};
use harness::replay::ReplayServer;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A harness process that has not ended by then is killed and the run fails.
pub const PROCESS_TIMEOUT: Duration = Duration::from_secs(600);
/// How long past its spec's wall clock a harness process may run before the
/// bench kills it (the harness promises TIME_LIMIT within a few seconds of
/// the limit; this bounds a harness that breaks the promise, so a hung one
/// costs the gate its clock, not PROCESS_TIMEOUT).
pub const PROCESS_GRACE_AFTER_WALL_CLOCK: Duration = Duration::from_secs(30);

/// The bound on one harness process of a case-run: its spec's wall clock
/// plus the grace, never more than PROCESS_TIMEOUT (also when the spec could
/// not be read).
pub fn process_limit(wall_clock_limit_s: Option<f64>) -> Duration {
    match wall_clock_limit_s {
        Some(w) if w.is_finite() && w > 0.0 => {
            (Duration::from_secs_f64(w.min(PROCESS_TIMEOUT.as_secs_f64()))
                + PROCESS_GRACE_AFTER_WALL_CLOCK)
                .min(PROCESS_TIMEOUT)
        }
        _ => PROCESS_TIMEOUT,
    }
}
/// How long to wait for an interrupted harness to reach its pause point.
pub const PAUSE_TIMEOUT: Duration = Duration::from_secs(120);

/// Where a case-run's `--base-url` points: a replay server answering from
/// the case's cassette, or the live proxy (bench/src/live/) forwarding to a
/// real endpoint under the command-wide cap.
#[derive(Clone)]
pub enum Target {
    Replay(Arc<ReplayServer>),
    Live(Arc<crate::live::LiveTarget>),
}

/// git on the case's own committed files, before the harness starts: no
/// system or global config, no hooks (docs/sandbox.md).
fn git(ws: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    std::process::Command::new("git")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(ws)
        .output()
}

/// A `[setup]` fixture that could not be made.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error("mkfifo {}: {source}", .path.display())]
    Fifo { path: PathBuf, source: nix::Error },
    #[error("{}: {source}", .link.display())]
    RemoveLink {
        link: PathBuf,
        source: std::io::Error,
    },
    #[error("ln {} {}: {source}", .target.display(), .link.display())]
    HardLink {
        target: PathBuf,
        link: PathBuf,
        source: std::io::Error,
    },
}

/// Make the case's `[setup]` fixtures in the case copy.
fn apply_setup(case_copy: &Path, st: &crate::suite::Setup) -> Result<(), SetupError> {
    for f in &st.fifos {
        let path = case_copy.join(f);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).map_err(
            |source| SetupError::Fifo {
                path: path.clone(),
                source,
            },
        )?;
    }
    for h in &st.hard_links {
        let (link, target) = (case_copy.join(&h.link), case_copy.join(&h.target));
        if link.exists() {
            std::fs::remove_file(&link).map_err(|source| SetupError::RemoveLink {
                link: link.clone(),
                source,
            })?;
        }
        std::fs::hard_link(&target, &link).map_err(|source| SetupError::HardLink {
            target: target.clone(),
            link: link.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The files each commit of `main..branch` changed, oldest first: read
/// through the harness's own git helper, the one that made the commits.
fn branch_commit_files(ws: &Path, state: &Path, branch: &str) -> CommitFiles {
    let gw = harness::gitwork::GitWork::of_run(ws, state)
        .ok_or_else(|| CommitFilesError::NotGitTree(ws.to_path_buf()))?;
    let commits = gw.commits_between("main", branch)?;
    commits
        .iter()
        .map(|sha| gw.commit_paths(sha).map_err(CommitFilesError::from))
        .collect()
}

#[derive(Debug)]
struct Spawned {
    code: i32,
    elapsed: Duration,
    /// When the process was seen to exit (the replayed model time is cut
    /// there: bench/src/latency.rs).
    ended: Instant,
    /// Its CPU time with its waited-for children's; None when unread.
    cpu: Option<Duration>,
    stderr_tail: String,
    /// Canaries seen on the process's stdout or stderr.
    canary_hits: Vec<String>,
}

/// How long stdout may stay open after the harness exited (a descendant
/// holding the pipe) before the bench stops reading it.
pub const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(10);

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
) -> (std::io::Result<std::process::ExitStatus>, Option<Duration>) {
    let cpu = crate::latency::cpu_at_exit_async(child.id()).await;
    (child.wait().await, cpu)
}

/// Read `stream` to its end line by line, looking for the canaries in every
/// line (whatever the stream's length) and keeping a bounded tail.
async fn drain<R: tokio::io::AsyncRead + Unpin>(
    stream: R,
    canaries: &[Canary],
    name: &str,
    tail: &mut String,
    hits: &mut Vec<String>,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(l)) = lines.next_line().await {
        for h in audit::canary_hits_in(l.as_bytes(), canaries, name) {
            if !hits.contains(&h) {
                hits.push(h);
            }
        }
        tail.push_str(&l);
        tail.push('\n');
        if tail.len() > 8192 {
            let cut = tail.len() - 4096;
            let cut = (cut..tail.len())
                .find(|i| tail.is_char_boundary(*i))
                .unwrap_or(tail.len());
            tail.drain(..cut);
        }
    }
}

/// Why a harness process gave no exit status to score.
#[derive(Debug)]
enum SpawnError {
    /// The bench could not start the process (a bench fault).
    NotStarted(String),
    /// The process started and misbehaved (never paused, ran past its clock):
    /// the harness's own failure.
    Harness(String),
}

/// How long a harness sent SIGTERM at an `[interrupt]` may take to exit:
/// its own grace and a margin for a loaded machine, in seconds.
const STOP_EXIT_LIMIT_S: u64 = harness::stop::STOP_GRACE_S + 10;

/// `[interrupt] signal = "SIGTERM"` (or SIGINT, SIGHUP): ask the paused
/// harness to stop and wait for it. It must exit 128 + the signal
/// (suspended, not ended) within its grace; anything else is the harness's
/// failure, not the bench's.
async fn stop_request(
    child: &mut tokio::process::Child,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    tail: &mut String,
    sig: nix::sys::signal::Signal,
) -> Result<(std::process::ExitStatus, Option<Duration>), SpawnError> {
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

/// A started harness process: its stdout drained and scanned on a task of
/// its own (a full pipe would block the harness), its stderr left to read.
struct Started {
    child: tokio::process::Child,
    pid: Option<u32>,
    /// Killed by a second signal to the bench (crate::interrupt) until reaped.
    _running: Option<crate::interrupt::Child>,
    stderr: tokio::process::ChildStderr,
    stdout_task: tokio::task::JoinHandle<Vec<String>>,
    t0: Instant,
}

/// Start the harness on `inv` (with its pause point when `pause_at`).
fn start_harness(
    harness_bin: &Path,
    inv: &HarnessInvocation,
    pause_at: Option<&crate::suite::Interrupt>,
    canaries: &[Canary],
) -> Result<Started, SpawnError> {
    // No provider key reaches the harness under test (the invocation removes
    // them): replay needs none, and live the proxy adds the key (the variable
    // --api-key-env names and the spec's api_key_env are removed too).
    let inv = match pause_at {
        Some(p) => inv.clone().env(harness::chaos_hook::ENV_VAR, &p.at),
        None => inv.clone(),
    };
    let mut std_cmd = inv.command(harness_bin);
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
    let mut child = cmd.spawn().map_err(|e| {
        SpawnError::NotStarted(format!("cannot start {}: {e}", harness_bin.display()))
    })?;
    let pid = child.id();
    let _running = pid.map(crate::interrupt::Child::register);
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| SpawnError::NotStarted("no stderr pipe".into()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| SpawnError::NotStarted("no stdout pipe".into()))?;
    // stdout is scanned for canaries like stderr.
    let out_canaries = canaries.to_vec();
    let stdout_task = tokio::spawn(async move {
        let (mut tail, mut hits) = (String::new(), vec![]);
        drain(stdout, &out_canaries, "stdout", &mut tail, &mut hits).await;
        hits
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

/// One harness process of a case-run, started, read and waited for: until
/// its pause point (`pause_at`) or its exit within `limit`.
async fn run_harness(
    harness_bin: &Path,
    inv: &HarnessInvocation,
    pause_at: Option<&crate::suite::Interrupt>,
    canaries: &[Canary],
    limit: Duration,
) -> Result<Spawned, SpawnError> {
    let started = start_harness(harness_bin, inv, pause_at, canaries)?;
    match pause_at {
        Some(interrupt) => Ok(until_paused(started, interrupt, canaries, None).await?.0),
        None => until_exit(started, canaries, limit).await,
    }
}

/// What runs while the harness is paused, before it is signalled: the
/// case's `[[step]] when = "paused"` (a second harness beside it).
type Beside<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Check>> + Send + 'a>>;

/// The interrupted half of an `[interrupt]` case: read stderr until the
/// harness says it paused at the phase, then kill it (or ask it to stop).
/// A harness that never pauses failed.
async fn until_paused(
    s: Started,
    interrupt: &crate::suite::Interrupt,
    canaries: &[Canary],
    beside: Option<Beside<'_>>,
) -> Result<(Spawned, Vec<Check>), SpawnError> {
    let Started {
        mut child,
        _running,
        stderr,
        stdout_task,
        t0,
        ..
    } = s;
    let (mut tail, mut hits) = (String::new(), vec![]);
    let mut lines = BufReader::new(stderr).lines();
    let paused = tokio::time::timeout(PAUSE_TIMEOUT, async {
        while let Ok(Some(l)) = lines.next_line().await {
            if l.starts_with("HARNESS_CHAOS_PAUSED") {
                return true;
            }
            hits.extend(audit::canary_hits_in(l.as_bytes(), canaries, "stderr"));
            tail.push_str(&l);
            tail.push('\n');
        }
        false
    })
    .await
    .unwrap_or(false);
    let beside_checks = match (paused, beside) {
        (true, Some(f)) => f.await,
        _ => vec![],
    };
    let (st, cpu) = match (paused, interrupt.signal.stop_request()) {
        (true, Some(sig)) => stop_request(&mut child, &mut lines, &mut tail, sig).await?,
        _ => {
            let _ = child.start_kill(); // SIGKILL
            let (st, cpu) = reap(&mut child).await;
            (st.map_err(|e| SpawnError::Harness(e.to_string()))?, cpu)
        }
    };
    let ended = Instant::now();
    if !paused {
        return Err(SpawnError::Harness(format!(
            "the harness never reached the interrupt point (exit {:?}); stderr: {}",
            st.code(),
            tail.trim()
        )));
    }
    hits.extend(join_stdout(stdout_task).await);
    use std::os::unix::process::ExitStatusExt;
    let spawned = Spawned {
        code: st.code().or(st.signal().map(|s| 128 + s)).unwrap_or(-1),
        elapsed: ended - t0,
        ended,
        cpu,
        stderr_tail: tail,
        canary_hits: hits,
    };
    Ok((spawned, beside_checks))
}

/// The scored process: read stderr until it exits, within `limit`; an
/// interrupted bench asks it to stop too and waits for it as before.
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
    let (mut tail, mut hits) = (String::new(), vec![]);
    let collect = async {
        drain(stderr, canaries, "stderr", &mut tail, &mut hits).await;
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
        std::future::pending::<std::io::Result<(std::process::ExitStatus, Option<Duration>, Instant)>>()
            .await
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
    hits.extend(join_stdout(stdout_task).await);
    Ok(Spawned {
        code: st.code().unwrap_or(-1),
        elapsed: ended - t0,
        ended,
        cpu,
        stderr_tail: tail,
        canary_hits: hits,
    })
}

/// What is wrong with a stop report the interrupted run left: not the
/// signal it was sent, not resumable, or not what the case expects of it.
fn stop_report_wrong(
    r: &harness::report::StoppedReport,
    sig: nix::sys::signal::Signal,
    want: Option<&crate::suite::StopReportExpect>,
) -> Option<String> {
    if r.stopped.signal != sig.as_str() || !r.stopped.resumable {
        return Some(format!(
            "says {} (resumable: {}), sent {sig}",
            r.stopped.signal, r.stopped.resumable
        ));
    }
    let want = want?;
    if let Some(t) = &want.in_flight_task {
        if r.in_flight_task.as_deref() != Some(t.as_str()) {
            return Some(format!("names {:?} in flight, not {t:?}", r.in_flight_task));
        }
    }
    if let Some(c) = &want.cut_contains {
        if !r
            .stopped
            .cut
            .as_deref()
            .is_some_and(|x| x.contains(c.as_str()))
        {
            return Some(format!(
                "says it cut {:?}, expected {c:?} in it",
                r.stopped.cut
            ));
        }
    }
    None
}

/// What the first run of a `[raise]` case ended on (its report.json).
#[derive(Debug, Clone, Copy)]
struct FirstEnding {
    ending: harness::ending::Ending,
    spend_usd: f64,
}

/// A `[raise]` case's first run: the plain command, to its first ending.
async fn run_to_first_ending(
    harness_bin: &Path,
    inv: &HarnessInvocation,
    watched: &[Canary],
    limit: Duration,
    state: &Path,
) -> Result<(Spawned, FirstEnding), SpawnError> {
    let s = run_harness(harness_bin, inv, None, watched, limit).await?;
    match harness::report::Report::load(state) {
        Ok(r) => Ok((
            s,
            FirstEnding {
                ending: r.ending,
                spend_usd: r.spend_usd,
            },
        )),
        Err(e) => Err(SpawnError::Harness(format!(
            "no report.json after it (exit {}): {e}; stderr: {}",
            s.code,
            s.stderr_tail.trim()
        ))),
    }
}

/// The raising command (`--raise-cap-usd` or `--raise-wall-clock-s`), its
/// process limit (a raised clock is its wall clock) and the ending the
/// first run must have reached for the raise to be taken.
fn raise_invocation(
    inv: &HarnessInvocation,
    r: &crate::suite::Raise,
    limit: Duration,
) -> Option<(HarnessInvocation, Duration, harness::ending::Ending)> {
    use harness::ledger::LimitKind;
    let (kind, to, _) = r.limit()?;
    let raised = match kind {
        LimitKind::HardCapUsd => (inv.clone().raise_cap_usd(to), limit),
        LimitKind::WallClockLimitS => (inv.clone().raise_wall_clock_s(to), process_limit(Some(to))),
    };
    Some((raised.0, raised.1, r.first_ending()?))
}

/// The `raise` gate: the first ending, and exactly one raise of the limit
/// to the case's value in the ledger journal (what the harness journals
/// before it goes on) and in the final report.
fn raise_check(
    r: &crate::suite::Raise,
    first: &FirstEnding,
    report: &harness::report::Report,
    state: &Path,
) -> Check {
    use harness::ledger::journal::{parse, JournalEntry};
    let (kind, to, _) = match r.limit() {
        Some(x) => x,
        None => return raise_gate(false, "no limit to raise".into()),
    };
    let journal = std::fs::read(state.join("ledger.jsonl")).unwrap_or_default();
    let journaled: Vec<(f64, f64)> = parse(&journal)
        .lines
        .into_iter()
        .filter_map(|l| match l.entry {
            JournalEntry::Limit {
                limit, old, new, ..
            } if limit == kind => Some((old, new)),
            _ => None,
        })
        .collect();
    let reported: Vec<f64> = (report.limit_raises.iter())
        .filter(|x| x.limit == kind)
        .map(|x| x.new)
        .collect();
    let name = match kind {
        harness::ledger::LimitKind::HardCapUsd => "hard_cap_usd",
        harness::ledger::LimitKind::WallClockLimitS => "wall_clock_limit_s",
    };
    let what = format!(
        "first run ended {} at ${:.6}; {name} raised to {to}: ledger journal {journaled:?} (old, new), report {reported:?}",
        first.ending.as_str(),
        first.spend_usd
    );
    let ok = matches!(journaled.as_slice(), [(_, n)] if *n == to) && reported == [to];
    raise_gate(
        ok,
        if ok {
            what
        } else {
            format!("not exactly one raise to {to}: {what}")
        },
    )
}

fn raise_gate(passed: bool, detail: String) -> Check {
    Check {
        name: "raise".into(),
        kind: score::CheckKind::Gate,
        passed,
        detail,
    }
}

/// One case-run in flight: who it is and where it goes, and the records a
/// phase that cannot go on leaves (each phase returns one as its `Err`, so
/// the phases read as a straight line; boxed, as an `Err` is best small).
struct CaseRun<'a> {
    case: &'a Case,
    run: u32,
    target: &'a Target,
    harness_bin: &'a Path,
    dir: PathBuf,
}

/// What `prepare` made: the case's private copy, the audit's first look, and
/// the invocation that runs the harness on it.
struct Prepared {
    case_copy: PathBuf,
    ws: PathBuf,
    state: PathBuf,
    /// The run whose recorded variant answers (a replay server may pin it):
    /// the expected ending and the bench-fault diagnosis are read from it.
    served: u32,
    session: Option<crate::live::Session>,
    gathered: audit::Gathered,
    watched: Vec<Canary>,
    limit: Duration,
    inv: HarnessInvocation,
    /// The case's `[[step]]` gates, as they ran.
    step_checks: Vec<Check>,
}

/// What `spawn` left: the scored process, the time every process of the
/// case-run took, and a `[raise]` case's first ending.
struct Ran {
    spawned: Spawned,
    took: Took,
    first: Option<(crate::suite::Raise, FirstEnding)>,
}

/// The time every harness process of a case-run took, summed: wall time,
/// CPU time (None when one process's could not be read) and when the last
/// one ended (bench/src/latency.rs judges from these).
#[derive(Debug, Clone, Copy)]
struct Took {
    wall: Duration,
    cpu: Option<Duration>,
    ended: Instant,
}

impl Took {
    fn of(s: &Spawned) -> Took {
        Took {
            wall: s.elapsed,
            cpu: s.cpu,
            ended: s.ended,
        }
    }

    /// This process's time and then `next`'s.
    fn then(self, next: Took) -> Took {
        Took {
            wall: self.wall + next.wall,
            cpu: self.cpu.zip(next.cpu).map(|(a, b)| a + b),
            ended: next.ended,
        }
    }
}

/// What `collect` read back after the harness ended.
struct Collected {
    report: harness::report::Report,
    outbox: Vec<harness::outbox::OutboxEntry>,
    requests: Vec<harness::replay::Captured>,
    live_end: Option<crate::live::RunEnd>,
    commits: Option<usize>,
    commit_files: Option<CommitFiles>,
}

impl CaseRun<'_> {
    fn state_dir(&self) -> String {
        self.dir.join("state").display().to_string()
    }

    /// The harness's failure: the case-run failed.
    fn fail(&self, msg: String) -> Box<RunRecord> {
        Box::new(RunRecord::failed(
            self.case,
            self.run,
            msg,
            self.state_dir(),
        ))
    }

    /// The bench could not prepare the case-run: no data about the harness.
    fn setup_fault(&self, detail: impl std::fmt::Display) -> Box<RunRecord> {
        let fault = BenchFault::CaseSetup {
            detail: detail.to_string(),
        };
        Box::new(RunRecord::faulted(
            self.case,
            self.run,
            fault,
            self.state_dir(),
        ))
    }

    fn spawn_failed(&self, e: SpawnError, context: &str) -> Box<RunRecord> {
        match e {
            SpawnError::NotStarted(m) => self.setup_fault(format!("{context}{m}")),
            SpawnError::Harness(m) => self.fail(format!("{context}{m}")),
        }
    }

    /// Copy the case (spec, workspace, checks) into the case-run's own
    /// directory, so nothing the run does reaches the suite.
    fn copy_case(&self, case_copy: &Path) -> Result<(), Box<RunRecord>> {
        for part in ["run.toml", "workspace", "checks"] {
            let src = self.case.dir.join(part);
            if !src.exists() {
                continue;
            }
            let r = if src.is_dir() {
                harness::workspace::copy_tree(&src, &case_copy.join(part))
            } else {
                std::fs::create_dir_all(case_copy)
                    .and_then(|_| std::fs::copy(&src, case_copy.join(part)).map(|_| ()))
            };
            if let Err(e) = r {
                return Err(self.setup_fault(format!("cannot copy {}: {e}", src.display())));
            }
        }
        Ok(())
    }

    /// Lay the arm's or level's settings over the copied run.toml.
    fn lay_overlay(&self, overlay: &Overlay, case_copy: &Path) -> Result<(), Box<RunRecord>> {
        if overlay.is_empty() {
            return Ok(());
        }
        let p = case_copy.join("run.toml");
        let applied = std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| overlay.apply(&t).map_err(|e| e.to_string()));
        applied
            .and_then(|t| std::fs::write(&p, t).map_err(|e| e.to_string()))
            .map_err(|e| self.setup_fault(format!("overlay on {}: {e}", p.display())))
    }

    /// A case that wants its workspace under git gets one commit of it
    /// before the run, the base its branch is compared with.
    fn init_git(&self, ws: &Path) -> Result<(), Box<RunRecord>> {
        if self.case.file.workspace_git != Some(true) {
            return Ok(());
        }
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &["commit", "-q", "--allow-empty", "-m", "before the run"],
        ] {
            if let Err(e) = git(ws, args) {
                return Err(self.setup_fault(format!("git {args:?}: {e}")));
            }
        }
        Ok(())
    }

    /// Where the harness's model calls go (`--base-url`), the key variables
    /// taken out of its environment, and a live case-run's session.
    fn endpoint(
        &self,
        case_copy: &Path,
    ) -> Result<(String, Vec<String>, Option<crate::live::Session>), Box<RunRecord>> {
        match self.target {
            Target::Replay(server) => {
                let mut base = server.base_url_for(self.case.id(), self.run);
                if self.case.cassette.protocol == harness::model::types::Protocol::Openai {
                    base.push_str("/v1");
                }
                Ok((base, vec![], None))
            }
            Target::Live(live) => {
                match live.begin(self.case, self.run, &case_copy.join("run.toml")) {
                    Ok(s) => Ok((s.base_url.clone(), s.env_remove.clone(), Some(s))),
                    Err(e) => Err(self.setup_fault(format!("live: {e}"))),
                }
            }
        }
    }

    /// What the run page's Next gives for this case-run instead of the
    /// harness command the bench ran (its `--base-url` is the bench's replay
    /// server or live proxy, gone once the bench exits): the bench command
    /// that reproduces it, as JSON of `harness::events::StartedBy`.
    fn started_by(&self, overlay: &Overlay) -> String {
        let dir = std::path::absolute(&self.case.dir).unwrap_or_else(|_| self.case.dir.clone());
        let how = match self.target {
            Target::Replay(_) => "against its replay server",
            Target::Live(_) => {
                "through its live proxy (this command replays the case's recording instead)"
            }
        };
        let mut say = format!(
            "This case-run was started by the bench {how}. Reproduce it the way the bench runs it (a fresh copy of the case, its recording, every check and the audit):"
        );
        if self.run > 0 {
            say.push_str(&format!(
                " try-case runs run 0; this was run {}, which `bench run --case {} --runs-per-case {}` also runs.",
                self.run,
                self.case.id(),
                self.run + 1
            ));
        }
        if !(overlay.table.is_empty() && overlay.budget_scale.is_none()) {
            say.push_str(" The config this case-run laid over run.toml (a `bench ab` arm or a `bench knee` level) is not laid by try-case.");
        }
        let started = harness::events::StartedBy {
            say,
            argv: vec!["bench".into(), "try-case".into(), dir.display().to_string()],
        };
        serde_json::to_string(&started).unwrap_or_default()
    }

    /// The case's private copy, audited and set up, and the invocation of
    /// the harness on it: everything before the first process starts.
    fn prepare(&self, overlay: &Overlay) -> Result<Prepared, Box<RunRecord>> {
        let _ = std::fs::remove_dir_all(&self.dir);
        let case_copy = self.dir.join("case");
        self.copy_case(&case_copy)?;
        self.lay_overlay(overlay, &case_copy)?;
        let ws = case_copy.join("workspace");
        self.init_git(&ws)?;
        // The audit (every case-run): read the spec, plant the sentinel,
        // snapshot what lies outside the workspace.
        let mut gathered = audit::Gathered::default();
        if let Err(e) = gathered.before_run(&case_copy) {
            return Err(self.setup_fault(e));
        }
        // Fixtures git cannot hold, made after the sentinel is planted (a
        // hard link may name it).
        if let Some(st) = &self.case.file.setup {
            if let Err(e) = apply_setup(&case_copy, st) {
                return Err(self.setup_fault(format!("setup: {e}")));
            }
        }
        let served = match self.target {
            Target::Replay(server) => server.served_run(self.run),
            Target::Live(_) => self.run,
        };
        let (base, env_remove, session) = self.endpoint(&case_copy)?;
        let (case, run) = (self.case, self.run);
        let key_env = gathered
            .spec
            .as_ref()
            .and_then(|s| s.api_key_env.as_deref());
        gathered.canaries =
            audit::canaries(key_env, case.id(), run, &env_remove, &case.file.harness_env);
        let state = self.dir.join("state");
        let limit = process_limit(gathered.spec.as_ref().map(|s| s.wall_clock_limit_s));
        let inv = HarnessInvocation::run(
            case_copy.join("run.toml"),
            &state,
            ModelSource::BaseUrl(base),
        )
        .run_index(run)
        .env(harness::events::STARTED_BY_ENV, self.started_by(overlay));
        let (inv, watched) = self.confine(inv, &env_remove, overlay, &mut gathered)?;
        Ok(Prepared {
            case_copy,
            ws,
            state,
            served,
            session,
            gathered,
            watched,
            limit,
            inv,
            step_checks: vec![],
        })
    }

    /// The harness's environment: key variables removed, the audit's fake
    /// keys set, its own HOME (with planted secrets) and TMPDIR, then what
    /// the case and the overlay ask for. Returns the invocation and every
    /// canary its output is scanned for.
    fn confine(
        &self,
        mut inv: HarnessInvocation,
        env_remove: &[String],
        overlay: &Overlay,
        gathered: &mut audit::Gathered,
    ) -> Result<(HarnessInvocation, Vec<Canary>), Box<RunRecord>> {
        let private = crate::private_dirs::PrivateDirs::make(&self.dir, self.case.id(), self.run)
            .map_err(|e| self.setup_fault(e))?;
        let watched: Vec<Canary> = (gathered.canaries.iter())
            .chain(&private.canaries)
            .cloned()
            .collect();
        for name in env_remove {
            inv = inv.env_remove(name);
        }
        // The audit's secret canary: fake keys in every key variable; none
        // may reach a file, a request body or the process's output.
        for c in gathered.canaries.iter().filter(|c| c.in_env) {
            inv = inv.env(&c.var, &c.value);
        }
        let path = private.path_with_tool_dir(&std::env::var_os("PATH").unwrap_or_default());
        inv = inv
            .env("HOME", private.home.display().to_string())
            .env("TMPDIR", private.tmp.display().to_string())
            .env("PATH", path.to_string_lossy().into_owned());
        gathered.private = Some(private);
        // What the case asks for (`harness_env`) comes after the removal.
        let env_set = (self.case.file.harness_env.iter())
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(overlay.harness_env.iter().cloned());
        for (k, v) in env_set {
            inv = inv.env(k, v);
        }
        Ok((inv, watched))
    }

    /// An `[interrupt]` case's first process, killed (or asked to stop) at
    /// its pause point by the test-variants harness; the scored run resumes
    /// what it left. Returns the time it took.
    async fn interrupted_run(
        &self,
        i: &crate::suite::Interrupt,
        p: &mut Prepared,
    ) -> Result<Took, Box<RunRecord>> {
        // The pause point is test machinery the production build lacks.
        let hb = self.harness_bin.to_path_buf();
        let hooked =
            tokio::task::spawn_blocking(move || crate::harness_bin::interrupt_harness(&hb))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map_err(|e| self.setup_fault(format!("interrupt at {}: {e}", i.at)))?;
        let started = start_harness(&hooked, &p.inv, Some(i), &p.watched)
            .map_err(|e| self.spawn_failed(e, &format!("interrupt at {}: ", i.at)))?;
        let ctx = self.step_ctx(p);
        let paused: Vec<(usize, &crate::suite::Step)> = self.steps_when(StepWhen::Paused);
        let beside: Option<Beside<'_>> = (!paused.is_empty())
            .then(|| Box::pin(async move { crate::steps::run(&ctx, &paused).await }) as Beside<'_>);
        let (s, checks) = until_paused(started, i, &p.watched, beside)
            .await
            .map_err(|e| self.spawn_failed(e, &format!("interrupt at {}: ", i.at)))?;
        p.gathered.canary_hits.extend(s.canary_hits.clone());
        p.step_checks.extend(checks);
        // A stop request leaves a stop report (never an ending) for the
        // resume to move aside: read it before the resume runs.
        if let Some(sig) = i.signal.stop_request() {
            let r = harness::report::StoppedReport::load(&p.state).map_err(|e| {
                self.fail(format!(
                    "interrupt at {}: asked to stop, the harness left no stop report: {e}",
                    i.at
                ))
            })?;
            if let Some(wrong) = stop_report_wrong(&r, sig, i.stop_report.as_ref()) {
                return Err(self.fail(format!("interrupt at {}: the stop report {wrong}", i.at)));
            }
        }
        Ok(Took::of(&s))
    }

    /// The case's steps that run at `when`, numbered as in case.toml.
    fn steps_when(&self, when: StepWhen) -> Vec<(usize, &crate::suite::Step)> {
        (self.case.file.steps.iter().enumerate())
            .filter(|(_, s)| s.when == when)
            .collect()
    }

    /// Where the case-run's steps run: its command, before any raise.
    fn step_ctx(&self, p: &Prepared) -> crate::steps::StepCtx {
        crate::steps::StepCtx {
            harness_bin: self.harness_bin.to_path_buf(),
            inv: p.inv.clone(),
            run_dir: self.dir.clone(),
            case_copy: p.case_copy.clone(),
            state: p.state.clone(),
            limit: p.limit,
        }
    }

    /// `[[step]] when = "after"`: run once the scored run has been read.
    async fn after_steps(&self, p: &mut Prepared) {
        let after = self.steps_when(StepWhen::After);
        if after.is_empty() {
            return;
        }
        let ctx = self.step_ctx(p);
        let checks = crate::steps::run(&ctx, &after).await;
        p.step_checks.extend(checks);
    }

    /// `[raise]`: the first run must end on the limit; the scored run is the
    /// same command raising it, on the same state dir (`p.inv` and `p.limit`
    /// become the raised ones). Returns the time it took and its ending.
    async fn raise_first_run(
        &self,
        r: &crate::suite::Raise,
        p: &mut Prepared,
    ) -> Result<(Took, FirstEnding), Box<RunRecord>> {
        let (s, ended) =
            run_to_first_ending(self.harness_bin, &p.inv, &p.watched, p.limit, &p.state)
                .await
                .map_err(|e| self.spawn_failed(e, "[raise] first run: "))?;
        p.gathered.canary_hits.extend(s.canary_hits.clone());
        let Some((raised, raised_limit, want)) = raise_invocation(&p.inv, r, p.limit) else {
            return Err(self.setup_fault("[raise]: no limit to raise"));
        };
        if ended.ending != want {
            return Err(self.fail(format!(
                "[raise]: the first run ended {} (exit {}, ${:.6} spent), not {}: nothing to raise",
                ended.ending.as_str(),
                s.code,
                ended.spend_usd,
                want.as_str()
            )));
        }
        (p.inv, p.limit) = (raised, raised_limit);
        p.gathered.raise_asked_usd = r.cap_usd;
        Ok((Took::of(&s), ended))
    }

    /// Every harness process of the case-run: an interrupted or `[raise]`
    /// case's first one, then the one that is scored.
    async fn spawn(&self, p: &mut Prepared) -> Result<Ran, Box<RunRecord>> {
        let mut before: Option<Took> = None;
        if let Some(i) = &self.case.file.interrupt {
            before = Some(self.interrupted_run(i, p).await?);
        }
        let mut first = None;
        if let Some(r) = &self.case.file.raise {
            let (took, ended) = self.raise_first_run(r, p).await?;
            before = Some(before.map_or(took, |b| b.then(took)));
            first = Some((*r, ended));
        }
        let spawned = run_harness(self.harness_bin, &p.inv, None, &p.watched, p.limit)
            .await
            .map_err(|e| self.spawn_failed(e, ""))?;
        p.gathered.canary_hits.extend(spawned.canary_hits.clone());
        let took = before.map_or(Took::of(&spawned), |b| b.then(Took::of(&spawned)));
        Ok(Ran {
            spawned,
            took,
            first,
        })
    }

    /// The latency the case's cap judges: the replayed model time the run
    /// was served (taken from its replay server) plus the harness's CPU
    /// time, with wall time beside it (bench/src/latency.rs).
    fn latency(&self, took: &Took) -> crate::latency::Latency {
        let model = match self.target {
            Target::Replay(server) => {
                Some(server.take_model_time(self.case.id(), self.run, took.ended))
            }
            Target::Live(_) => None,
        };
        crate::latency::Latency::judge(self.case, took.wall, model, took.cpu)
    }

    /// The harness's report, parsed once into its own type: a report it
    /// would not have written is no report.
    fn read_report(
        &self,
        state: &Path,
        spawned: &Spawned,
    ) -> Result<harness::report::Report, Box<RunRecord>> {
        let parsed = std::fs::read(state.join("report.json"))
            .ok()
            .map(|b| serde_json::from_slice::<harness::report::Report>(&b));
        match parsed {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) if !(e.is_syntax() || e.is_eof()) => {
                Err(self.fail(format!("report.json is not a harness report: {e}")))
            }
            _ => Err(self.fail(format!(
                "no report.json (exit {}); stderr: {}",
                spawned.code,
                spawned.stderr_tail.trim()
            ))),
        }
    }

    /// What the ended harness left: its report and outbox, the requests it
    /// sent, its commits; the audit's after-look taken.
    async fn collect(&self, p: &mut Prepared, ran: &Ran) -> Result<Collected, Box<RunRecord>> {
        // The bench was interrupted and the harness suspended (its stop
        // report says so): no verdict on a run that did not finish.
        if let Some(sig) = crate::interrupt::requested() {
            if harness::report::StoppedReport::load(&p.state).is_ok()
                || harness::report::Report::load(&p.state).is_err()
            {
                let fault = BenchFault::Interrupted {
                    signal: sig.to_string(),
                };
                let state = p.state.display().to_string();
                return Err(Box::new(RunRecord::faulted(
                    self.case, self.run, fault, state,
                )));
            }
        }
        let report = self.read_report(&p.state, &ran.spawned)?;
        // Through the harness's own reader and type (a torn or foreign line
        // is skipped there, as the harness itself skips it).
        let outbox = harness::outbox::Outbox::new(p.state.join("outbox.jsonl"))
            .read_all()
            .map(|c| c.entries)
            .unwrap_or_default();
        let (requests, live_end) = match (self.target, p.session.take()) {
            (Target::Live(_), Some(s)) => {
                let mut end = s.end(Some(&report), ran.spawned.code);
                (std::mem::take(&mut end.captured), Some(end))
            }
            (Target::Replay(server), _) => (server.take_captured(self.case.id(), self.run), None),
            (Target::Live(_), None) => (vec![], None),
        };
        let commits = report.git_branch.as_deref().and_then(|b| {
            let gw = harness::gitwork::GitWork::of_run(&p.ws, &p.state)?;
            gw.commits_between("main", b).ok().map(|c| c.len())
        });
        let commit_files = match (
            &self.case.file.expect.commit_files,
            report.git_branch.as_deref(),
        ) {
            (Some(_), Some(b)) => Some(branch_commit_files(&p.ws, &p.state, b)),
            (Some(_), None) => Some(Err(CommitFilesError::NoBranch)),
            _ => None,
        };
        (p.gathered)
            .after_run(
                &p.case_copy,
                &p.state,
                &self.dir,
                &requests,
                ran.spawned.code,
            )
            .await;
        Ok(Collected {
            report,
            outbox,
            requests,
            live_end,
            commits,
            commit_files,
        })
    }

    /// The checks, the audit and the verdict on what the harness did; a
    /// live case-run the cap cut short or the model never answered fails.
    fn judge(&self, p: Prepared, ran: Ran, c: Collected) -> RunRecord {
        let (case, report) = (self.case, &c.report);
        let artifacts = Artifacts {
            report,
            outbox: &c.outbox,
            workspace: &p.ws,
            requests: &c.requests,
            commits: c.commits,
            commit_files: c.commit_files.as_ref(),
        };
        let latency = self.latency(&ran.took);
        let mut checks = score::checks(&case.file.expect, &artifacts);
        if let Some((r, ended)) = &ran.first {
            checks.push(raise_check(r, ended, report, &p.state));
        }
        checks.extend(p.step_checks.iter().cloned());
        checks.extend(audit::audit(report, &c.requests, &p.gathered));
        let Verdict {
            score,
            passed,
            mut failures,
            ..
        } = score::verdict(case, p.served, report, &checks, &latency);
        // The exit code is part of what is tested: audit.report_consistent
        // gates it against the ending and the report.
        // A recording miss is the replay running out of answers (report.json's
        // error_kind, read typed); the missing key comes from what was sent.
        let replayed = match self.target {
            Target::Replay(_) => Some(&*case.cassette),
            Target::Live(_) => None,
        };
        let mut bench_fault = bench_fault::from_report(report, replayed, p.served, &c.requests);
        let cut_short = live_cut_short(c.live_end.as_ref(), &mut failures, &mut bench_fault);
        let passed = passed && !cut_short;
        let cause = if passed {
            None
        } else {
            let variant = replayed
                .filter(|c| !c.runs.is_empty())
                .map(|c| &c.runs[p.served as usize % c.runs.len()]);
            let held = |prefix: &str| {
                variant.is_some_and(|v| {
                    v.interactions
                        .iter()
                        .any(|i| i.call_key.starts_with(prefix))
                })
            };
            crate::cause::root_cause(
                bench_fault.as_ref(),
                report,
                p.gathered.events.as_ref(),
                variant.is_some().then_some(&held as &dyn Fn(&str) -> bool),
            )
        };
        RunRecord {
            cause,
            run: self.run,
            ending: Some(report.ending),
            exit_code: ran.spawned.code,
            passed,
            score,
            cost_usd: report.spend_usd,
            latency_ms: latency.judged_ms,
            latency: Some(latency),
            expected_ending: case.expected_ending(p.served),
            checks,
            failures,
            state_dir: p.state.display().to_string(),
            verified: report.verified.len() as u64,
            bench_fault,
            live_calls: c.live_end.map(|e| e.calls),
        }
    }
}

/// A case-run the command-wide cap cut short is incomplete, never a pass;
/// one whose live call the model never answered measured nothing. Either
/// adds its failure and fault; returns whether one did.
fn live_cut_short(
    end: Option<&crate::live::RunEnd>,
    failures: &mut Vec<String>,
    bench_fault: &mut Option<BenchFault>,
) -> bool {
    let Some(e) = end else { return false };
    // The endpoint's failure first: worst-case bookings of its failed
    // replies are what run a cap out, so a cap refusal after one is its
    // consequence, listed after it.
    let (msg, fault): (&String, fn(String) -> BenchFault) = match (&e.not_measured, &e.refused) {
        (Some(m), _) => (m, |detail| BenchFault::LiveNotMeasured { detail }),
        (None, Some(m)) => (m, |detail| BenchFault::LiveCapReached { detail }),
        (None, None) => return false,
    };
    failures.push(msg.clone());
    if let (Some(_), Some(cap)) = (&e.not_measured, &e.refused) {
        failures.push(cap.clone());
    }
    *bench_fault = Some(fault(msg.clone()));
    true
}

/// Run one case once and score it. Never panics: an infrastructure failure
/// is a failed run whose failure says what went wrong. The case-run goes
/// through its phases: prepare (a private copy of the case,
/// audited, and the harness's invocation), spawn (every harness process),
/// collect (what the harness left) and judge (checks, audit, verdict). A
/// phase that cannot go on returns the case-run's record, failed or
/// faulted, and the rest do not run.
pub async fn run_case(
    case: &Case,
    run: u32,
    target: &Target,
    harness_bin: &Path,
    out_root: &Path,
    overlay: &Overlay,
) -> RunRecord {
    let dir = out_root
        .join("cases")
        .join(case.id())
        .join(format!("run-{run}"));
    let cr = CaseRun {
        case,
        run,
        target,
        harness_bin,
        dir,
    };
    let mut p = match cr.prepare(overlay) {
        Ok(p) => p,
        Err(rec) => return *rec,
    };
    let ran = match cr.spawn(&mut p).await {
        Ok(r) => r,
        Err(rec) => return *rec,
    };
    match cr.collect(&mut p, &ran).await {
        Ok(c) => {
            cr.after_steps(&mut p).await;
            cr.judge(p, ran, c)
        }
        Err(rec) => *rec,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ending::Ending;
    use serde::{Deserialize, Serialize};

    #[test]
    fn an_ending_is_written_by_name_or_as_none_and_read_back_strictly() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct R {
            #[serde(with = "ending_or_none")]
            ending: Option<Ending>,
        }
        let written = |e| serde_json::to_string(&R { ending: e }).unwrap();
        // The spellings summary.json and case_runs.json always had.
        assert_eq!(written(None), r#"{"ending":"<none>"}"#);
        assert_eq!(
            written(Some(Ending::BudgetExhausted)),
            r#"{"ending":"BUDGET_EXHAUSTED"}"#
        );
        for e in Ending::ALL.map(Some).into_iter().chain([None]) {
            assert_eq!(serde_json::from_str::<R>(&written(e)).unwrap().ending, e);
        }
        let e = serde_json::from_str::<R>(r#"{"ending":"BUDGET_EXHAUSTD"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown ending"), "{e}");
    }

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

    #[test]
    fn a_raise_is_the_same_command_with_the_raise_flag_and_its_clock() {
        use harness::ending::Ending;
        let argv = |inv: &HarnessInvocation| -> Vec<String> {
            inv.args()
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        let base = invocation();
        let limit = Duration::from_secs(7);
        let cap = crate::suite::Raise {
            cap_usd: Some(2.0),
            wall_clock_s: None,
        };
        let (inv, l, want) = raise_invocation(&base, &cap, limit).unwrap();
        assert_eq!(want, Ending::BudgetExhausted);
        assert_eq!(l, limit, "a raised cap keeps the process's clock");
        assert_eq!(argv(&inv)[..argv(&base).len()], argv(&base)[..]);
        assert!(argv(&inv).ends_with(&["--raise-cap-usd".into(), "2".into()]));
        let clock = crate::suite::Raise {
            cap_usd: None,
            wall_clock_s: Some(600.0),
        };
        let (inv, l, want) = raise_invocation(&base, &clock, limit).unwrap();
        assert_eq!(want, Ending::TimeLimit);
        assert_eq!(
            l,
            process_limit(Some(600.0)),
            "the raised clock bounds the process"
        );
        assert!(argv(&inv).ends_with(&["--raise-wall-clock-s".into(), "600".into()]));
        let neither = crate::suite::Raise {
            cap_usd: None,
            wall_clock_s: None,
        };
        assert!(raise_invocation(&base, &neither, limit).is_none());
    }

    /// A group's server is replaced every CASE_RUNS_PER_SERVER case-runs
    /// (so what wiremock retains per request is freed with the old one),
    /// and the retired server still answers the case-runs that hold it.
    #[tokio::test]
    async fn a_fresh_replay_server_every_case_runs_per_server() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/happy");
        let case = crate::suite::load_case(
            &root.join("happy-search-p95-index"),
            "happy",
            &crate::suite::report_fields(),
        )
        .unwrap();
        let servers = Servers::start(std::slice::from_ref(&case)).await;
        let first = servers.server_for_next_run(&case).await.unwrap();
        for _ in 1..CASE_RUNS_PER_SERVER {
            let s = servers.server_for_next_run(&case).await.unwrap();
            assert!(Arc::ptr_eq(&s, &first));
        }
        let next = servers.server_for_next_run(&case).await.unwrap();
        assert!(
            !Arc::ptr_eq(&next, &first),
            "no fresh server after {CASE_RUNS_PER_SERVER}"
        );
        let url = format!("{}/v1/messages", first.base_url_for(case.id(), 0));
        let r = reqwest::Client::new()
            .post(url)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_ne!(r.status().as_u16(), 0);
        assert_eq!(first.counters().served + first.counters().misses, 1);
    }

    #[tokio::test]
    async fn a_harness_that_hangs_is_killed_at_its_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_harness(tmp.path(), "sleep 30");
        let t0 = Instant::now();
        let r = run_harness(&bin, &invocation(), None, &[], Duration::from_millis(300)).await;
        assert!(
            matches!(r, Err(SpawnError::Harness(ref m)) if m.contains("no ending")),
            "{r:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(20));
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
        let s = run_harness(&bin, &inv, None, &[], PROCESS_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(s.code, 0);
        assert!(!s.stderr_tail.contains("CANARY-bench"), "{}", s.stderr_tail);
        assert!(s.stderr_tail.contains("ANTHROPIC_API_KEY=the-case-canary"));
        assert!(
            s.stderr_tail.contains("PATH="),
            "the rest of the environment stays"
        );
    }
}
