//! The loop, in rooms of its own. `policy` holds every branch decision of a
//! run: `should_stop`, the priority order of the seven endings read top to
//! bottom; `drive`, the one loop that calls it at the top of every lap; and
//! `respond`, the one place an error's class (`error`) becomes the loop's
//! response (a budget refusal sets `blocked` and the loop goes on so the top
//! of the loop reports BUDGET_EXHAUSTED; anything else unrecoverable is
//! UNRECOVERABLE_ERROR). The other rooms compute and do: `open` (start-up,
//! and the one early end of a run that never reaches a lap), `task` (a
//! task's attempts, verify, commit or park), `plan` (plan, replan, admission,
//! the drift gate), `memory` (compaction, lessons), `call` (the model call
//! and the ledger gate), `end` (finish, suspend, publish, the panic ending).
//!
//! Every exit is an ending: `run` runs the loop as a task of its own, so a
//! panic anywhere in it comes back as a value and becomes UNRECOVERABLE_ERROR
//! (kind `panic`) built from what is on disk (`end_after_panic`); every
//! ending is published the same way (`publish`: the alert, then report.json,
//! or the report on stderr when it cannot be written).

mod call;
mod end;
mod error;
mod memory;
mod open;
mod plan;
mod policy;
mod rules;
mod task;
#[cfg(test)]
mod tests;

pub use end::end_before_start;
pub use error::{Classified, LapError};

use crate::check::CheckResult;
use crate::checkpoint::{self, Refusal};
use crate::ending::{Ending, ErrorKind};
use crate::events::EventLog;
use crate::gitwork::GitWork;
use crate::goal::Goal;
use crate::ledger::Ledger;
use crate::model::client::ModelClient;
use crate::outbox::Outbox;
use crate::report::Report;
use crate::spec::RunSpec;
use crate::state::RunState;
use crate::task_writes::TaskWrites;
use crate::workspace::Workspace;
use end::{end_after_panic, AfterPanic};
use policy::Exit;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The loop itself is bounded: no run takes more laps than this, whatever
/// the model writes (each lap is one task or one planning call).
pub const LAPS_MAX: u64 = 10_000;

/// How many times a malformed plan is sent back to the planner.
pub const PLAN_FORMAT_RETRIES: u32 = 1;

/// Kept from a model's own claim of success, for the report.
pub const CLAIM_MAX_CHARS: usize = 500;

/// TIME_LIMIT is decided (report built) within this much of the wall-clock
/// limit whatever check or tool was in flight: checks and tools are bounded
/// by the time left, and the lap stops when it runs out. What remains after
/// the limit is killing and reaping the check, the final checkpoint and the
/// report (measured by `bench faults`, slow-check scenarios). An alert
/// webhook, when configured, is sent after that, within its own timeout.
pub const TIME_LIMIT_MARGIN_MS: u64 = 2000;

pub struct RunOptions {
    /// Overrides the spec's base URL (the embedded replay server).
    pub base_url_override: Option<String>,
    pub jitter_seed: u64,
    /// Raise a limit the run ended on, then go on (`--raise-cap-usd`,
    /// `--raise-wall-clock-s`).
    pub raise: Option<Raise>,
    /// `--max-usd`: this command's cap is min(the run's cap, this). The
    /// run's cap is the spec's, or the journal's last raise once raised:
    /// the flag only ever tightens, and a raise stays the run's cap.
    pub max_usd: Option<f64>,
    /// The command line this run was started with (`harness run ...`, no
    /// raise flag), recorded in the start or resume event for the page's
    /// Next section; empty when the run is opened as a library call.
    pub command: Vec<String>,
    /// Library-only test hook (no CLI flag reaches it): corrupt the goal text
    /// in memory before lap N, to prove the hash check turns an in-process
    /// mutation into UNRECOVERABLE_ERROR. Exists only with the `test-hooks`
    /// feature: no production code can set it.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub tamper_goal_before_lap: Option<u64>,
}

/// How a `run` came back: ended (one of the seven endings), stopped by a
/// stop request and suspended, to be resumed (crate::stop: not an ending),
/// or a raise of a limit refused before anything was changed.
pub enum RunEnd {
    Ended(Outcome),
    Stopped(Suspended),
    Refused(String),
}

/// A limit to raise before the run goes on: only the one it ended on
/// (BUDGET_EXHAUSTED: the cap; TIME_LIMIT: the wall clock), only upward.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Raise {
    pub limit: crate::ledger::LimitKind,
    /// Dollars for the cap, seconds for the wall clock.
    pub to: f64,
}

impl From<Outcome> for RunEnd {
    fn from(o: Outcome) -> RunEnd {
        RunEnd::Ended(o)
    }
}

impl RunEnd {
    /// The process's exit code: the ending's, or 128 + the stop's signal.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunEnd::Ended(o) => o.ending.exit_code(),
            RunEnd::Stopped(s) => s.report.stopped.exit_code,
            RunEnd::Refused(_) => crate::ending::EXIT_SPEC_REJECTED,
        }
    }
}

/// A run suspended by a stop request: its report (report.json, which says
/// it was stopped and names no ending) and whether that file was written.
pub struct Suspended {
    pub report: crate::report::StoppedReport,
    pub report_written: bool,
}

/// What `run` hands back to main when the run ended: the ending and its report.
pub struct Outcome {
    pub ending: Ending,
    pub report: Report,
    /// Whether report.json holds `report`. When false, the report went to
    /// stderr (a full disk, a state dir that could not be made): nothing may
    /// point a reader at a report.json that is not there.
    pub report_written: bool,
}

pub struct Runner {
    /// The run's elapsed time, which the wall-clock limit reads.
    clock: crate::clock::RunClock,
    spec: RunSpec,
    goal: Goal,
    state: RunState,
    ledger: Ledger,
    client: ModelClient,
    workspace: Workspace,
    outbox: Outbox,
    git: Option<GitWork>,
    state_dir: PathBuf,
    events: EventLog,
    /// Set by a lap when the drift judge could not be read, etc.
    last_predicate: Option<CheckResult>,
    plan_note: Option<String>,
    #[cfg(feature = "test-hooks")]
    tamper_goal_before_lap: Option<u64>,
    fresh_predicate: Option<CheckResult>,
    /// A model call was cut by the run's wall clock: TIME_LIMIT at the top
    /// of the next lap, even if the clock reads a hair under the limit.
    clock_ran_out: bool,
    /// Which paths each task's tools wrote, journaled for resume.
    writes: TaskWrites,
    /// The in-progress task's written paths (all its attempts): exactly what
    /// its commit holds, or what stays uncommitted when it is parked.
    task_paths: BTreeSet<String>,
    /// The in-progress task's current attempt: the side-effecting tool call
    /// that failed with an I/O error and was not redone (what
    /// `execute_task` parks a "done" task for). Kept here, not only in the
    /// attempt, because a budget or clock can end the run right after it:
    /// `finish` then settles the task in flight and must not verify it
    /// from the page cache (issue 47: ENOSPC on the fsync of t3's write,
    /// then the budget, then "verified at end").
    attempt_io_failed: Option<String>,
    /// The checks' TMPDIR, removed when the run (the Runner) ends.
    _check_tmp: Option<tempfile::TempDir>,
    /// The stop policy's parameters (the design's in the product).
    rules: rules::Rules,
}

/// Run (or resume) the spec's goal in `state_dir` to exactly one ending.
/// Never panics and never returns a bare error: every failure, a panic
/// included, is an ending with a report. The caller holds the state dir's
/// lock (main's `run.lock`).
pub async fn run(spec: RunSpec, state_dir: &Path, opts: RunOptions) -> RunEnd {
    crate::panics::install_hook();
    // Before anything is written: the key's value joins the redaction filter.
    if let Some(v) = &spec.model.api_key_env {
        crate::redact::watch_env_var(v);
    }
    let after = AfterPanic::of(&spec, state_dir);
    // The loop is a task of its own: a panic anywhere in it (a lap, a tool, a
    // checkpoint write, `finish` itself) stops at the task boundary and comes
    // back here as a value. The task's memory goes with it, so nothing
    // half-updated can be reported from: `end_after_panic` reads the disk.
    match tokio::spawn(run_to_ending(spec, state_dir.to_path_buf(), opts)).await {
        Ok(outcome) => outcome,
        Err(e) => {
            let message = if e.is_panic() {
                crate::panics::describe(e.into_panic().as_ref())
            } else {
                format!("the run's task did not finish: {e}")
            };
            end_after_panic(after, message).await.into()
        }
    }
}

async fn run_to_ending(spec: RunSpec, state_dir: PathBuf, opts: RunOptions) -> RunEnd {
    let (mut r, resumed) = match open::open(spec, &state_dir, opts).await {
        Ok(opened) => opened,
        Err(early) => return early.end(&state_dir).await,
    };
    match r.drive(resumed).await {
        Exit::Ended(ending, detail, kind) => r.finish(ending, detail, kind).await.into(),
        Exit::Stopped { signal, cut } => RunEnd::Stopped(r.suspend(signal, cut).await),
    }
}

/// Refusal reasons are part of the public vocabulary of the report.
pub fn refusal_kind(r: &Refusal) -> ErrorKind {
    r.refusal_kind().error_kind()
}

impl Runner {
    fn checkpoint(&mut self) -> Result<(), LapError> {
        self.goal.assert_intact()?;
        // Never checkpoint over a state dir a confined process changed.
        crate::state_seal::intact()?;
        self.state.ledger = self.ledger.snapshot().clone();
        self.state.elapsed_ms = self.clock.elapsed_ms();
        checkpoint::save(&self.state_dir, &self.state)?;
        Ok(())
    }

    /// How long the run has run (crate::clock): monotonic, across resumes.
    fn elapsed_ms(&self) -> u64 {
        self.clock.elapsed_ms()
    }

    /// What is left of the wall-clock limit, which counts from the run's first
    /// start (across resumes), the same clock `should_stop` reads.
    fn time_left(&self) -> Duration {
        let limit_ms = (self.spec.wall_clock_limit_s * 1000.0) as u64;
        Duration::from_millis(limit_ms.saturating_sub(self.elapsed_ms()))
    }

    /// The instant the run's wall clock runs out: every check and tool the
    /// harness runs is bounded by it as well as by its own timeout.
    fn deadline(&self) -> Instant {
        Instant::now() + self.time_left()
    }

    fn clock_out(&self) -> bool {
        self.time_left().is_zero()
    }

    /// Err(WallClock) when the clock has run out, Err(Stopped) when the run
    /// was asked to stop: a lap stops at the next step instead of starting
    /// work it has no time for.
    fn clock_left(&self, during: impl FnOnce() -> String) -> Result<(), LapError> {
        if let Some(signal) = crate::stop::requested() {
            return Err(LapError::Stopped {
                signal,
                during: during(),
            });
        }
        if self.clock_out() {
            return Err(LapError::WallClock { during: during() });
        }
        Ok(())
    }
}
