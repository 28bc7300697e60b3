//! Running case-runs: each through the real `harness` binary as a subprocess
//! (the deployable artifact and its exit code are what is tested), against an
//! in-process replay server on loopback, or (live) the bench's proxy to a
//! real endpoint (`Target`). Every case-run gets a fresh copy of
//! the case (spec, workspace, checks) and its own state dir under the output
//! directory, so nothing a run does can leak into another or into the suite.

use crate::audit::{self, Canary};
use crate::bench_fault::{self, BenchFault};
use crate::score::{self, Artifacts, Check, Verdict};
use crate::suite::Case;
use crate::suite::InterruptSignal;
use harness::ending::Ending;
use harness::invocation::{HarnessInvocation, ModelSource};
use harness::replay::{FaultPlan, Recordings, ReplayOptions, ReplayServer};
use serde::{Deserialize, Serialize};
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    pub run: u32,
    /// None when the harness reported no ending (written `<none>`).
    #[serde(with = "ending_or_none")]
    #[schemars(with = "String")]
    pub ending: Option<Ending>,
    pub exit_code: i32,
    pub passed: bool,
    pub score: f64,
    pub cost_usd: f64,
    pub latency_ms: u64,
    pub expected_ending: Ending,
    pub checks: Vec<Check>,
    pub failures: Vec<String>,
    pub state_dir: String,
    /// Verified task count, for cost-per-verified-task figures.
    pub verified: u64,
    /// Set when the case-run ended because of the bench's own machinery (a
    /// recording miss, no replay server, a failed setup, the live cap), not
    /// the harness: a failure of the gate, but no data point of a comparison.
    #[serde(default)]
    pub bench_fault: Option<BenchFault>,
    /// The root cause a failed case-run leads with (bench::cause), when one
    /// is known; the failures below it are what it caused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// A live or hybrid case-run: how its model calls were answered
    /// (replayed, live, live dollars). None when it was replayed whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_calls: Option<crate::live::LiveCalls>,
}

/// An ending as summary.json and the knee's case_runs.json spell it: its
/// name, or `<none>` for a case-run that never reached one (the harness did
/// not run or wrote no report). Read back strictly: any other name is an
/// error, never a silent `<none>`.
pub mod ending_or_none {
    use harness::ending::Ending;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub const NONE: &str = "<none>";

    /// `name` read back: an ending, `<none>`, or an error naming it.
    pub fn parse(name: &str) -> Result<Option<Ending>, String> {
        if name == NONE {
            return Ok(None);
        }
        Ending::parse(name)
            .map(Some)
            .ok_or_else(|| format!("unknown ending {name:?}"))
    }

    /// The name written for `e`.
    pub fn name(e: Option<Ending>) -> &'static str {
        e.map_or(NONE, Ending::as_str)
    }

    pub fn serialize<S: Serializer>(e: &Option<Ending>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name(*e))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Ending>, D::Error> {
        parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// Settings laid over a case's run spec for one arm of a comparison (`bench
/// ab`) or one budget level (`bench knee`). Tables merge key by key; values
/// replace. `budget_scale` multiplies the hard cap and the visible task budget.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    pub table: toml::Table,
    pub budget_scale: Option<f64>,
    /// Variables set on every harness process of the arm, after the case's
    /// own (`bench self-test`: which broken variant the process runs as).
    pub harness_env: Vec<(String, String)>,
}

fn merge_into(dst: &mut toml::Table, src: &toml::Table) {
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(toml::Value::Table(d)), toml::Value::Table(s)) => merge_into(d, s),
            _ => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Overlay {
    pub fn is_empty(&self) -> bool {
        self.table.is_empty() && self.budget_scale.is_none()
    }

    /// Apply to the text of a run.toml; errors name what could not be applied.
    pub fn apply(&self, spec_text: &str) -> Result<String, String> {
        let mut t: toml::Table = spec_text
            .parse()
            .map_err(|e: toml::de::Error| format!("run.toml: {}", e.message()))?;
        merge_into(&mut t, &self.table);
        if let Some(f) = self.budget_scale {
            let b = t
                .get_mut("budget")
                .and_then(|b| b.as_table_mut())
                .ok_or("run.toml has no [budget] table")?;
            let cap = b
                .get("hard_cap_usd")
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                .ok_or("budget.hard_cap_usd is not a number")?;
            b.insert("hard_cap_usd".into(), toml::Value::Float(cap * f));
            if let Some(tok) = b.get("task_budget_tokens").and_then(|v| v.as_integer()) {
                b.insert(
                    "task_budget_tokens".into(),
                    toml::Value::Integer(((tok as f64 * f).round() as i64).max(1)),
                );
            }
        }
        toml::to_string(&t).map_err(|e| e.to_string())
    }
}

impl RunRecord {
    /// A case-run that could not be carried out: failed, with the reason.
    pub fn failed(case: &Case, run: u32, msg: String, state_dir: String) -> RunRecord {
        RunRecord {
            run,
            ending: None,
            exit_code: -1,
            passed: false,
            score: 0.0,
            cost_usd: 0.0,
            latency_ms: 0,
            expected_ending: case.expected_ending(run),
            checks: vec![],
            cause: Some(msg.clone()),
            failures: vec![msg],
            state_dir,
            verified: 0,
            bench_fault: None,
            live_calls: None,
        }
    }

    /// A case-run the bench's machinery could not carry out: failed, with
    /// the fault as its reason.
    pub fn faulted(case: &Case, run: u32, fault: BenchFault, state_dir: String) -> RunRecord {
        RunRecord {
            bench_fault: Some(fault.clone()),
            ..RunRecord::failed(case, run, fault.describe(), state_dir)
        }
    }

    /// The first line of a failed case-run: its root cause when known, else
    /// what ending was expected and which came.
    pub fn headline(&self) -> String {
        match &self.cause {
            Some(c) => format!(
                "{c} (expected {}, got {})",
                self.expected_ending,
                self.ending_name()
            ),
            None => format!(
                "expected {}, got {}",
                self.expected_ending,
                self.ending_name()
            ),
        }
    }

    /// The ending's name, `<none>` when there was none.
    pub fn ending_name(&self) -> &'static str {
        ending_or_none::name(self.ending)
    }

    /// The harness ran and wrote a report (the ending is one of the seven):
    /// the case-runs whose latency and cost the summary's statistics use.
    pub fn reported(&self) -> bool {
        self.ending.is_some()
    }
}

/// Where a case-run's `--base-url` points: a replay server answering from
/// the case's cassette, or the live proxy (bench/src/live/) forwarding to a
/// real endpoint under the command-wide cap.
#[derive(Clone)]
pub enum Target {
    Replay(Arc<ReplayServer>),
    Live(Arc<crate::live::LiveTarget>),
}

/// One replay server per distinct (faults, latency scale): cases that ask
/// for fault injection get a server configured for it. A group whose server
/// cannot start fails its own case-runs with the reason, never the batch:
/// one bad case does not stop the suite.
pub struct Servers {
    servers: Vec<(String, Group)>,
    failed: Vec<(String, String)>,
}

/// Case-runs one replay server is handed to before the batch starts a fresh
/// one for the group's next case-runs. wiremock 0.6 keeps a clone of every
/// request a mock matched for the mock's lifetime (its
/// `MountedMock::matched_requests`, even with request recording off): about
/// 55 KB per anchor case-run, so one server over a whole suite grew the
/// bench without bound (137 MiB at 1,600 case-runs, 49 MiB at 400). A
/// retired server ends when its last case-run drops it; nothing in flight
/// ever sees a gap.
pub const CASE_RUNS_PER_SERVER: u32 = 256;

/// One group's server, and what it takes to start the next.
struct Group {
    cases: Vec<Case>,
    current: std::sync::Mutex<Arc<ReplayServer>>,
    handed_out: std::sync::atomic::AtomicU32,
}

fn server_key(c: &Case) -> String {
    format!(
        "{}|{}",
        c.file.faults.clone().unwrap_or_default(),
        c.file.latency_scale.unwrap_or(0.0)
    )
}

impl Servers {
    pub async fn start(cases: &[Case]) -> Result<Servers, String> {
        let mut keys: Vec<String> = cases.iter().map(server_key).collect();
        keys.sort();
        keys.dedup();
        let mut servers = vec![];
        let mut failed = vec![];
        for k in keys {
            let group: Vec<Case> = (cases.iter())
                .filter(|c| server_key(c) == k)
                .cloned()
                .collect();
            match Self::start_group(&group).await {
                Ok(Some(s)) => servers.push((
                    k,
                    Group {
                        cases: group,
                        current: std::sync::Mutex::new(Arc::new(s)),
                        handed_out: Default::default(),
                    },
                )),
                Ok(None) => {}
                Err(e) => failed.push((k, format!("cannot start the replay server: {e}"))),
            }
        }
        Ok(Servers { servers, failed })
    }

    async fn start_group(group: &[Case]) -> Result<Option<ReplayServer>, String> {
        let Some(c0) = group.first() else {
            return Ok(None);
        };
        let faults = match &c0.file.faults {
            Some(f) => FaultPlan::parse(f).map_err(|e| e.to_string())?,
            None => FaultPlan::none(),
        };
        let latency_scale = c0.file.latency_scale.unwrap_or(0.0);
        let refs: Vec<&Case> = group.iter().collect();
        start_server(&refs, faults, latency_scale, None)
            .await
            .map(Some)
    }

    /// The server for `c`, or why there is none.
    pub fn server_for(&self, c: &Case) -> Result<Arc<ReplayServer>, String> {
        let k = server_key(c);
        if let Some(s) = self.for_case(c) {
            return Ok(s);
        }
        Err(self
            .failed
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| "no replay server for this case".to_string()))
    }

    /// The server for the next case-run of `c`: a fresh one for its group
    /// every [`CASE_RUNS_PER_SERVER`] case-runs (when a fresh one cannot
    /// start, the current one goes on serving).
    pub async fn server_for_next_run(&self, c: &Case) -> Result<Arc<ReplayServer>, String> {
        let k = server_key(c);
        if let Some((_, g)) = self.servers.iter().find(|(kk, _)| *kk == k) {
            let n = g
                .handed_out
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n > 0 && n % CASE_RUNS_PER_SERVER == 0 {
                if let Ok(Some(fresh)) = Self::start_group(&g.cases).await {
                    *g.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(fresh);
                }
            }
        }
        self.server_for(c)
    }

    pub fn for_case(&self, c: &Case) -> Option<Arc<ReplayServer>> {
        let k = server_key(c);
        self.servers
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, g)| g.current.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

/// A capturing replay server for `cases` with these faults and latency
/// scale, answering every request as run `serve_as_run` when it is set
/// (`ReplayOptions::serve_as_run`): the one way the bench starts a replay
/// server for case-runs.
pub async fn start_server(
    cases: &[&Case],
    faults: FaultPlan,
    latency_scale: f64,
    serve_as_run: Option<u32>,
) -> Result<ReplayServer, String> {
    let mut rec = Recordings::new();
    for c in cases {
        rec.add(c.cassette.clone(), c.cassette_path.clone())
            .map_err(|e| e.to_string())?;
    }
    let opts = ReplayOptions {
        strict: false,
        latency_scale,
        faults,
        capture: true,
        serve_as_run,
    };
    ReplayServer::start(rec, opts)
        .await
        .map_err(|e| e.to_string())
}

fn git(ws: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    std::process::Command::new("git")
        .args([
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

/// Make the case's `[setup]` fixtures in the case copy.
fn apply_setup(case_copy: &Path, st: &crate::suite::Setup) -> Result<(), String> {
    for f in &st.fifos {
        let p = case_copy.join(f);
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644))
            .map_err(|e| format!("mkfifo {}: {e}", p.display()))?;
    }
    for h in &st.hard_links {
        let (link, target) = (case_copy.join(&h.link), case_copy.join(&h.target));
        if link.exists() {
            std::fs::remove_file(&link).map_err(|e| format!("{}: {e}", link.display()))?;
        }
        std::fs::hard_link(&target, &link)
            .map_err(|e| format!("ln {} {}: {e}", target.display(), link.display()))?;
    }
    Ok(())
}

/// The files each commit of `main..branch` changed, oldest first: read
/// through the harness's own git helper, the one that made the commits.
fn branch_commit_files(ws: &Path, branch: &str) -> Result<Vec<Vec<String>>, String> {
    let gw = harness::gitwork::GitWork::detect(ws)
        .ok_or_else(|| format!("{} is not a git work tree", ws.display()))?;
    let commits = gw
        .commits_between("main", branch)
        .map_err(|e| e.to_string())?;
    commits
        .iter()
        .map(|sha| gw.commit_paths(sha).map_err(|e| e.to_string()))
        .collect()
}

#[derive(Debug)]
struct Spawned {
    code: i32,
    elapsed: Duration,
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

/// `[interrupt] signal = "SIGTERM"`: ask the paused harness to stop and
/// wait for it. It must exit 128 + 15 (suspended, not ended) within its
/// grace; anything else is the harness's failure, not the bench's.
async fn stop_request(
    child: &mut tokio::process::Child,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    tail: &mut String,
) -> Result<std::process::ExitStatus, SpawnError> {
    let pid = child.id().map(|p| nix::unistd::Pid::from_raw(p as i32));
    if let Some(pid) = pid {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    }
    let wait = async {
        while let Ok(Some(l)) = lines.next_line().await {
            tail.push_str(&l);
            tail.push('\n');
        }
        child.wait().await
    };
    let st = match tokio::time::timeout(Duration::from_secs(STOP_EXIT_LIMIT_S), wait).await {
        Ok(st) => st.map_err(|e| SpawnError::Harness(e.to_string()))?,
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(SpawnError::Harness(format!(
                "asked to stop (SIGTERM), the harness was still running after {STOP_EXIT_LIMIT_S} s"
            )));
        }
    };
    let want = harness::stop::exit_code(nix::sys::signal::Signal::SIGTERM);
    if st.code() != Some(want) {
        return Err(SpawnError::Harness(format!(
            "asked to stop (SIGTERM), the harness exited {st}, not {want} (suspended); stderr: {}",
            tail.trim()
        )));
    }
    Ok(st)
}

async fn run_harness(
    harness_bin: &Path,
    inv: &HarnessInvocation,
    pause_at: Option<&crate::suite::Interrupt>,
    canaries: &[Canary],
    limit: Duration,
) -> Result<Spawned, SpawnError> {
    // No provider key reaches the harness under test (the invocation removes
    // them): replay needs none, and live the proxy adds the key (the variable
    // --api-key-env names and the spec's api_key_env are removed too).
    let inv = match pause_at {
        Some(p) => inv.clone().env(harness::chaos_hook::ENV_VAR, &p.at),
        None => inv.clone(),
    };
    let mut cmd = tokio::process::Command::from(inv.command(harness_bin));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        SpawnError::NotStarted(format!("cannot start {}: {e}", harness_bin.display()))
    })?;
    // Killed by a second signal to the bench (crate::interrupt) until reaped.
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
    // stdout is drained alongside (a full pipe would block the harness) and
    // scanned for canaries like stderr.
    let out_canaries = canaries.to_vec();
    let stdout_task = tokio::spawn(async move {
        let (mut tail, mut hits) = (String::new(), vec![]);
        drain(stdout, &out_canaries, "stdout", &mut tail, &mut hits).await;
        hits
    });
    let mut tail = String::new();
    let mut hits = vec![];
    if let Some(interrupt) = pause_at {
        let mut lines = BufReader::new(stderr).lines();
        // Read until the harness says it paused at the phase, then SIGKILL.
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
        let st = match (paused, interrupt.signal) {
            (true, InterruptSignal::Sigterm) => {
                stop_request(&mut child, &mut lines, &mut tail).await?
            }
            _ => {
                let _ = child.start_kill(); // SIGKILL
                child
                    .wait()
                    .await
                    .map_err(|e| SpawnError::Harness(e.to_string()))?
            }
        };
        if !paused {
            return Err(SpawnError::Harness(format!(
                "the harness never reached the interrupt point (exit {:?}); stderr: {}",
                st.code(),
                tail.trim()
            )));
        }
        hits.extend(join_stdout(stdout_task).await);
        use std::os::unix::process::ExitStatusExt;
        return Ok(Spawned {
            code: st.code().or(st.signal().map(|s| 128 + s)).unwrap_or(-1),
            elapsed: t0.elapsed(),
            stderr_tail: tail,
            canary_hits: hits,
        });
    }
    let collect = async {
        drain(stderr, canaries, "stderr", &mut tail, &mut hits).await;
        child.wait().await
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
        std::future::pending::<std::io::Result<std::process::ExitStatus>>().await
    };
    let waited = async {
        tokio::select! {
            r = collect => r,
            r = forward => r,
        }
    };
    let st = match tokio::time::timeout(limit, waited).await {
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
        elapsed: t0.elapsed(),
        stderr_tail: tail,
        canary_hits: hits,
    })
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

/// Run one case once and score it. Never panics: an infrastructure failure
/// is a failed run whose failure says what went wrong.
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
    let fail = |msg: String, dir: &Path| {
        RunRecord::failed(case, run, msg, dir.join("state").display().to_string())
    };
    // The bench could not prepare the case-run: no data about the harness.
    let setup_fault = |detail: String, dir: &Path| {
        RunRecord::faulted(
            case,
            run,
            BenchFault::CaseSetup { detail },
            dir.join("state").display().to_string(),
        )
    };
    let spawn_failed = |e: SpawnError, context: &str, dir: &Path| match e {
        SpawnError::NotStarted(m) => setup_fault(format!("{context}{m}"), dir),
        SpawnError::Harness(m) => fail(format!("{context}{m}"), dir),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let case_copy = dir.join("case");
    for part in ["run.toml", "workspace", "checks"] {
        let src = case.dir.join(part);
        if !src.exists() {
            continue;
        }
        let r = if src.is_dir() {
            harness::workspace::copy_tree(&src, &case_copy.join(part))
        } else {
            std::fs::create_dir_all(&case_copy)
                .and_then(|_| std::fs::copy(&src, case_copy.join(part)).map(|_| ()))
        };
        if let Err(e) = r {
            return setup_fault(format!("cannot copy {}: {e}", src.display()), &dir);
        }
    }
    if !overlay.is_empty() {
        let p = case_copy.join("run.toml");
        let applied = std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| overlay.apply(&t));
        match applied.and_then(|t| std::fs::write(&p, t).map_err(|e| e.to_string())) {
            Ok(()) => {}
            Err(e) => return setup_fault(format!("overlay on {}: {e}", p.display()), &dir),
        }
    }
    let ws = case_copy.join("workspace");
    if case.file.workspace_git == Some(true) {
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &["commit", "-q", "--allow-empty", "-m", "before the run"],
        ] {
            if let Err(e) = git(&ws, args) {
                return setup_fault(format!("git {args:?}: {e}"), &dir);
            }
        }
    }
    // The audit (every case-run): read the spec, plant the sentinel,
    // snapshot what lies outside the workspace.
    let mut gathered = audit::Gathered::default();
    if let Err(e) = gathered.before_run(&case_copy) {
        return setup_fault(e, &dir);
    }
    // Fixtures git cannot hold, made after the sentinel is planted (a hard
    // link may name it).
    if let Some(st) = &case.file.setup {
        if let Err(e) = apply_setup(&case_copy, st) {
            return setup_fault(format!("setup: {e}"), &dir);
        }
    }
    let env_set: Vec<(String, String)> = (case.file.harness_env.iter())
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(overlay.harness_env.iter().cloned())
        .collect();
    let state = dir.join("state");
    // The run whose recorded variant answers (a replay server may pin it):
    // the expected ending and the bench-fault diagnosis are read from it.
    let served = match target {
        Target::Replay(server) => server.served_run(run),
        Target::Live(_) => run,
    };
    let (base, env_remove, session) = match target {
        Target::Replay(server) => {
            let mut base = server.base_url_for(case.id(), run);
            if case.cassette.protocol == harness::model::types::Protocol::Openai {
                base.push_str("/v1");
            }
            (base, vec![], None)
        }
        Target::Live(live) => match live.begin(case, run, &case_copy.join("run.toml")) {
            Ok(s) => (s.base_url.clone(), s.env_remove.clone(), Some(s)),
            Err(e) => return setup_fault(format!("live: {e}"), &dir),
        },
    };
    gathered.canaries = audit::canaries(
        gathered
            .spec
            .as_ref()
            .and_then(|s| s.api_key_env.as_deref()),
        case.id(),
        run,
        &env_remove,
        &case.file.harness_env,
    );
    // Its own HOME (with planted secrets) and TMPDIR, never the bench's.
    let private = match crate::private_dirs::PrivateDirs::make(&dir, case.id(), run) {
        Ok(p) => p,
        Err(e) => return setup_fault(e, &dir),
    };
    // Every canary the process's output is scanned for: the key variables'
    // and the planted files'.
    let watched: Vec<audit::Canary> = (gathered.canaries.iter())
        .chain(&private.canaries)
        .cloned()
        .collect();
    let limit = process_limit(gathered.spec.as_ref().map(|s| s.wall_clock_limit_s));
    let mut inv = HarnessInvocation::run(
        case_copy.join("run.toml"),
        &state,
        ModelSource::BaseUrl(base),
    )
    .run_index(run);
    for name in &env_remove {
        inv = inv.env_remove(name);
    }
    // The audit's secret canary: fake keys in every key variable; none may
    // reach a file, a request body or the process's output.
    for c in gathered.canaries.iter().filter(|c| c.in_env) {
        inv = inv.env(&c.var, &c.value);
    }
    inv = inv
        .env("HOME", private.home.display().to_string())
        .env("TMPDIR", private.tmp.display().to_string());
    gathered.private = Some(private);
    // What the case asks for (`harness_env`) comes after the removal.
    for (k, v) in env_set {
        inv = inv.env(k, v);
    }
    let mut latency = Duration::ZERO;
    if let Some(i) = &case.file.interrupt {
        // The pause point is test machinery the production build lacks.
        let hb = harness_bin.to_path_buf();
        let hooked = match tokio::task::spawn_blocking(move || crate::batch::interrupt_harness(&hb))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        {
            Ok(b) => b,
            Err(e) => return setup_fault(format!("interrupt at {}: {e}", i.at), &dir),
        };
        match run_harness(&hooked, &inv, Some(i), &watched, limit).await {
            Ok(s) => {
                latency += s.elapsed;
                gathered.canary_hits.extend(s.canary_hits);
            }
            Err(e) => return spawn_failed(e, &format!("interrupt at {}: ", i.at), &dir),
        }
        // A stop request leaves a stop report (never an ending) for the
        // resume to move aside: read it before the resume runs.
        if i.signal == InterruptSignal::Sigterm {
            match harness::report::StoppedReport::load(&state) {
                Ok(r) if r.stopped.signal == "SIGTERM" && r.stopped.resumable => {}
                Ok(r) => {
                    return fail(
                        format!(
                            "interrupt at {}: the stop report says {} (resumable: {})",
                            i.at, r.stopped.signal, r.stopped.resumable
                        ),
                        &dir,
                    )
                }
                Err(e) => {
                    return fail(
                        format!(
                            "interrupt at {}: asked to stop, the harness left no stop report: {e}",
                            i.at
                        ),
                        &dir,
                    )
                }
            }
        }
    }
    // `[raise]`: the first run must end on the limit; the scored run is the
    // same command raising it, on the same state dir.
    let mut first = None;
    let (mut inv, mut limit) = (inv, limit);
    if let Some(r) = &case.file.raise {
        let (s, ended) = match run_to_first_ending(harness_bin, &inv, &watched, limit, &state).await
        {
            Ok(x) => x,
            Err(e) => return spawn_failed(e, "[raise] first run: ", &dir),
        };
        latency += s.elapsed;
        gathered.canary_hits.extend(s.canary_hits);
        let Some((raised, raised_limit, want)) = raise_invocation(&inv, r, limit) else {
            return setup_fault("[raise]: no limit to raise".into(), &dir);
        };
        if ended.ending != want {
            return fail(
                format!(
                    "[raise]: the first run ended {} (exit {}, ${:.6} spent), not {}: nothing to raise",
                    ended.ending.as_str(),
                    s.code,
                    ended.spend_usd,
                    want.as_str()
                ),
                &dir,
            );
        }
        (inv, limit) = (raised, raised_limit);
        gathered.raise_asked_usd = r.cap_usd;
        first = Some((*r, ended));
    }
    let spawned = match run_harness(harness_bin, &inv, None, &watched, limit).await {
        Ok(s) => s,
        Err(e) => return spawn_failed(e, "", &dir),
    };
    gathered.canary_hits.extend(spawned.canary_hits.clone());
    latency += spawned.elapsed;
    let latency_ms = latency.as_millis() as u64;
    // The bench was interrupted and the harness suspended (its stop report
    // says so): no verdict on a run that did not finish.
    if let Some(sig) = crate::interrupt::requested() {
        if harness::report::StoppedReport::load(&state).is_ok()
            || harness::report::Report::load(&state).is_err()
        {
            return RunRecord::faulted(
                case,
                run,
                BenchFault::Interrupted {
                    signal: sig.to_string(),
                },
                state.display().to_string(),
            );
        }
    }
    // Parsed once, into the harness's own type: a report it would not have
    // written is no report.
    let parsed = std::fs::read(state.join("report.json"))
        .ok()
        .map(|b| serde_json::from_slice::<harness::report::Report>(&b));
    let report = match parsed {
        Some(Ok(r)) => r,
        Some(Err(e)) if !(e.is_syntax() || e.is_eof()) => {
            return fail(format!("report.json is not a harness report: {e}"), &dir)
        }
        _ => {
            return fail(
                format!(
                    "no report.json (exit {}); stderr: {}",
                    spawned.code,
                    spawned.stderr_tail.trim()
                ),
                &dir,
            )
        }
    };
    // Through the harness's own reader and type (a torn or foreign line is
    // skipped there, as the harness itself skips it).
    let outbox: Vec<harness::outbox::OutboxEntry> =
        harness::outbox::Outbox::new(state.join("outbox.jsonl"))
            .read_all()
            .map(|c| c.entries)
            .unwrap_or_default();
    let (requests, live_end) = match (target, session) {
        (Target::Live(_), Some(s)) => {
            let mut end = s.end(Some(&report), spawned.code);
            (std::mem::take(&mut end.captured), Some(end))
        }
        (Target::Replay(server), _) => (server.take_captured(case.id(), run), None),
        (Target::Live(_), None) => (vec![], None),
    };
    let commits = report.git_branch.as_deref().and_then(|b| {
        let gw = harness::gitwork::GitWork::detect(&ws)?;
        gw.commits_between("main", b).ok().map(|c| c.len())
    });
    let commit_files = match (&case.file.expect.commit_files, report.git_branch.as_deref()) {
        (Some(_), Some(b)) => Some(branch_commit_files(&ws, b)),
        (Some(_), None) => Some(Err("the report names no git_branch".to_string())),
        _ => None,
    };
    gathered
        .after_run(&case_copy, &state, &dir, &requests, spawned.code)
        .await;
    let mut checks = score::checks(
        &case.file.expect,
        &Artifacts {
            report: &report,
            outbox: &outbox,
            workspace: &ws,
            requests: &requests,
            commits,
            commit_files: commit_files.as_ref(),
        },
    );
    if let Some((r, ended)) = &first {
        checks.push(raise_check(r, ended, &report, &state));
    }
    checks.extend(audit::audit(&report, &requests, &gathered));
    let Verdict {
        score,
        passed,
        mut failures,
        ..
    } = score::verdict(case, served, &report, &checks, latency_ms);
    let exit_code = spawned.code;
    let ending = Some(report.ending);
    // The exit code is part of what is tested: audit.report_consistent gates
    // it against the ending and the report.
    // A recording miss is the replay running out of answers (report.json's
    // error_kind, read typed); the missing key comes from what was sent.
    let replayed = match target {
        Target::Replay(_) => Some(&case.cassette),
        Target::Live(_) => None,
    };
    let mut bench_fault = bench_fault::from_report(&report, replayed, served, &requests);
    // A case-run the command-wide cap cut short is incomplete, never a
    // pass; one whose live call the model never answered measured nothing.
    let passed = match live_end.as_ref().map(|e| (&e.refused, &e.not_measured)) {
        Some((Some(msg), _)) => {
            failures.push(msg.clone());
            bench_fault = Some(BenchFault::LiveCapReached {
                detail: msg.clone(),
            });
            false
        }
        Some((None, Some(msg))) => {
            failures.push(msg.clone());
            bench_fault = Some(BenchFault::LiveNotMeasured {
                detail: msg.clone(),
            });
            false
        }
        _ => passed,
    };
    let cause = if passed {
        None
    } else {
        crate::cause::root_cause(bench_fault.as_ref(), &report, gathered.events.as_ref())
    };
    RunRecord {
        cause,
        run,
        ending,
        exit_code,
        passed,
        score,
        cost_usd: report.spend_usd,
        latency_ms,
        expected_ending: case.expected_ending(served),
        checks,
        failures,
        state_dir: state.display().to_string(),
        verified: report.verified.len() as u64,
        bench_fault,
        live_calls: live_end.map(|e| e.calls),
    }
}

pub fn default_harness_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("harness")))
        .unwrap_or_else(|| PathBuf::from("harness"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let servers = Servers::start(std::slice::from_ref(&case)).await.unwrap();
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
