//! The loop. `should_stop` is the priority order of the seven endings, read
//! top to bottom; `run` is the one loop that calls it at the top of every lap
//! and classifies every error out of the lap body (a budget refusal sets
//! `blocked` and continues so the top of the loop reports BUDGET_EXHAUSTED;
//! anything else is UNRECOVERABLE_ERROR). Every branch decision of a run lives
//! in this file; the modules it calls compute values.
//!
//! Every exit is an ending: `run` runs the loop as a task of its own, so a
//! panic anywhere in it comes back as a value and becomes UNRECOVERABLE_ERROR
//! (kind `panic`) built from what is on disk (`end_after_panic`); every
//! ending is published the same way (`publish`: the alert, then report.json,
//! or the report on stderr when it cannot be written).

use crate::chaos_hook::{point, Phase};
use crate::check::{run_check_by, CheckResult};
use crate::checkpoint::{self, Refusal, SaveError};
use crate::drift::{self, Band};
use crate::ending::{Ending, ErrorKind};
use crate::events::{
    Admit, AdmittedTask, EndingEvent, Event, EventLog, GitError, ModelCall, RunOpened, ToolEvent,
    ToolRef,
};
use crate::gitwork::GitWork;
use crate::goal::{Goal, GoalTampered};
use crate::ledger::{
    AttemptReserve, BilledAboveReserve, BudgetExceeded, CallBound, Ledger, LedgerError, PriceTable,
    ReserveError,
};
use crate::model::client::{EndpointConfig, ModelClient, RetryPolicy};
use crate::model::gate::CallError;
use crate::model::types::{ModelError, ModelReply, ModelRequest, StopReason, Turn};
use crate::outbox::Outbox;
use crate::report::Report;
use crate::spec::{AlertSpec, Predicate, RunSpec};
use crate::state::{
    CompactOutcome, CompletedTask, Finished, ModelClaim, ParkedTask, RunState, VerifiedHow,
};
use crate::task::Task;
use crate::task_writes::TaskWrites;
use crate::text::clip_chars;
use crate::tools::ToolBox;
use crate::verify::{VerifyContext, VerifyOutcome};
use crate::workspace::Workspace;
use nix::sys::signal::Signal;
use serde_json::json;
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

pub use crate::clock::now_unix_ms;

/// Everything that can go wrong inside a lap, as values. `classify` is the
/// only place that maps them to the loop's two responses.
#[derive(Debug, thiserror::Error)]
pub enum LapError {
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    #[error("{0}")]
    Model(#[from] ModelError),
    #[error("{0}")]
    Goal(#[from] GoalTampered),
    #[error("{0}")]
    State(#[from] crate::state_seal::StateTampered),
    #[error("{0}")]
    Checkpoint(#[from] SaveError),
    #[error("{0}")]
    Ledger(#[from] LedgerError),
    #[error("{0}")]
    BilledAboveReserve(#[from] BilledAboveReserve),
    #[error("{0}")]
    Internal(String),
    /// The run's wall clock ran out inside the lap (a check or tool was cut
    /// by it, or it ran out between steps). Not an error of anything: the
    /// top of the loop turns it into TIME_LIMIT (or an ending above it).
    #[error("the run's wall clock ran out during {during}")]
    WallClock { during: String },
    /// The run was asked to stop (crate::stop) and this is a safe point:
    /// not an error and not an ending; the run is suspended.
    #[error("the run was asked to stop ({signal}) during {during}")]
    Stopped { signal: Signal, during: String },
}

impl From<ReserveError> for LapError {
    fn from(e: ReserveError) -> Self {
        match e {
            ReserveError::Budget(b) => LapError::Budget(b),
            ReserveError::NoPrice(m) => LapError::Internal(format!("no price for model {m:?}")),
            ReserveError::Journal(j) => LapError::Ledger(j),
        }
    }
}

pub enum Classified {
    /// The ledger refused the next call: not broken, a PARTIAL.
    Blocked,
    /// The run's wall clock ran out during a model call: a PARTIAL too.
    TimeUp,
    Unrecoverable {
        kind: ErrorKind,
        detail: String,
    },
    /// The wall clock ran out mid-lap: the priority order decides the ending.
    WallClock {
        detail: String,
    },
    /// A stop request: no ending; the run is suspended (crate::stop).
    Stopped(Signal),
}

impl LapError {
    pub fn classify(self) -> Classified {
        match self {
            LapError::Budget(_) => Classified::Blocked,
            LapError::Model(ModelError::Deadline { .. }) => Classified::TimeUp,
            LapError::Model(ModelError::RecordingMiss { detail }) => Classified::Unrecoverable {
                kind: ErrorKind::RecordingMiss,
                detail: format!("recording miss (the replay had no recording for this call; not an agent failure): {detail}"),
            },
            LapError::Model(e @ ModelError::Rejected { .. }) => Classified::Unrecoverable { kind: ErrorKind::HttpRejected, detail: e.to_string() },
            LapError::Model(e @ ModelError::RetriesExhausted { .. }) => Classified::Unrecoverable { kind: ErrorKind::ModelUnavailable, detail: e.to_string() },
            LapError::Model(e @ ModelError::Config(_)) => Classified::Unrecoverable { kind: ErrorKind::EndpointConfig, detail: e.to_string() },
            LapError::Goal(e) => Classified::Unrecoverable { kind: ErrorKind::GoalTampered, detail: e.to_string() },
            LapError::State(e) => Classified::Unrecoverable { kind: ErrorKind::StateTampered, detail: e.to_string() },
            LapError::Checkpoint(e) => Classified::Unrecoverable { kind: ErrorKind::CheckpointWrite, detail: e.to_string() },
            LapError::Ledger(e) => Classified::Unrecoverable { kind: ErrorKind::LedgerJournal, detail: e.to_string() },
            LapError::BilledAboveReserve(e) => Classified::Unrecoverable { kind: ErrorKind::BilledAboveReserve, detail: e.to_string() },
            LapError::Internal(d) => Classified::Unrecoverable { kind: ErrorKind::Internal, detail: d },
            e @ LapError::WallClock { .. } => Classified::WallClock { detail: e.to_string() },
            LapError::Stopped { signal, .. } => Classified::Stopped(signal),
        }
    }
}

/// How a task attempt's ReAct loop ended (before verification).
#[derive(Debug, Clone)]
enum AttemptEnd {
    Finished { claim: String },
    Refused { text: String },
    Stuck { detail: String },
    LoopCap,
}

impl AttemptEnd {
    fn describe(&self) -> String {
        match self {
            AttemptEnd::Finished { .. } => "the model said it was finished".into(),
            AttemptEnd::Refused { text } => format!("the model refused: {}", clip_chars(text, 200)),
            AttemptEnd::Stuck { detail } => detail.clone(),
            AttemptEnd::LoopCap => "reached the per-task loop cap".into(),
        }
    }
}

enum TaskResult {
    Verified { claim: Option<String> },
    Park { reason: String },
}

/// A check cut short with no verdict (crate::check's `cut_short`): the
/// stop request's doing if one is pending, else the wall clock's.
fn cut_short(during: String) -> LapError {
    match crate::stop::requested() {
        Some(signal) => LapError::Stopped { signal, during },
        None => LapError::WallClock { during },
    }
}

/// How `drive` came back.
enum Exit {
    /// One of the seven endings, its detail and (UNRECOVERABLE_ERROR) kind.
    Ended(Ending, Option<String>, Option<ErrorKind>),
    /// A stop request, seen at a safe point: the run is suspended. `cut`:
    /// what was in flight and was cut for it.
    Stopped { signal: Signal, cut: Option<String> },
}

/// Why a task in flight at an ending is parked without a verdict.
const NOT_JUDGED_PREFIX: &str = "not judged";

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
    /// The checks' TMPDIR, removed when the run (the Runner) ends.
    _check_tmp: Option<tempfile::TempDir>,
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
    let after = AfterPanic {
        goal: spec.goal.clone(),
        ends: Ends::of(&spec),
        hard_cap_usd: spec.hard_cap_usd,
        prices: spec.prices.clone(),
        state_dir: state_dir.to_path_buf(),
    };
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

async fn run_to_ending(mut spec: RunSpec, state_dir: PathBuf, opts: RunOptions) -> RunEnd {
    let state_dir = state_dir.as_path();
    let goal = Goal::new(spec.goal.clone());
    // main creates it too; the library must not depend on that.
    let dir_err = std::fs::create_dir_all(state_dir).err();
    crate::state_seal::seal(state_dir);
    let mut events = EventLog::open(state_dir);
    let hard_cap = spec.hard_cap_usd;
    let ends = Ends::of(&spec);

    if let Some(e) = dir_err {
        let mut s = RunState::new("unknown".into(), goal.sha256().to_string(), now_unix_ms());
        s.hard_cap_usd = hard_cap;
        return fail_early(
            s,
            ErrorKind::StateDir,
            format!("cannot create state dir {}: {e}", state_dir.display()),
            &goal,
            &ends,
            state_dir,
            &mut events,
        )
        .await
        .into();
    }
    // Load or start. Every refusal is UNRECOVERABLE_ERROR with the refusal
    // named; the refused file is left untouched for a human to inspect.
    let loaded = checkpoint::load(state_dir, Some(goal.sha256()));
    let (mut state, resumed) = match loaded {
        Ok(Some(s)) => (s, true),
        Ok(None) => {
            let mut s = RunState::new(
                format!("run-{}-{}", now_unix_ms(), std::process::id()),
                goal.sha256().to_string(),
                now_unix_ms(),
            );
            s.hard_cap_usd = hard_cap;
            (s, false)
        }
        Err(refusal) => {
            let mut s = RunState::new("unknown".into(), goal.sha256().to_string(), now_unix_ms());
            s.hard_cap_usd = hard_cap;
            return fail_early(
                s,
                refusal.refusal_kind().error_kind(),
                format!("refused to resume: {refusal}"),
                &goal,
                &ends,
                state_dir,
                &mut events,
            )
            .await
            .into();
        }
    };
    // The cap the run was under when it was last checkpointed (the one a
    // BUDGET_EXHAUSTED run ended on: the spec's, a raise, or a --max-usd).
    let ended_cap = state.hard_cap_usd;
    state.hard_cap_usd = hard_cap;
    if let Some(raise) = opts.raise {
        if let Err(why) = raise_limit(
            &mut state,
            raise,
            &spec,
            ended_cap,
            state_dir,
            &goal,
            &mut events,
        ) {
            return RunEnd::Refused(why);
        }
    }

    if let Some(f) = &state.finished {
        // Already ended: re-report, never run again.
        crate::fault_injection::panic_point("rereport");
        events.emit(state.step, Event::Rereport { ending: f.ending });
        let (report, report_written) = match Report::load(state_dir) {
            Ok(r) => {
                // The page again, from the report as it stands.
                write_page(&r, state_dir);
                (r, true)
            }
            Err(_) => {
                // Killed between the final checkpoint and report.json: the
                // report and the alert were never delivered. finish() sends
                // the alert before writing the report, so a missing report
                // means a possibly missing alert: deliver it now (alerts are
                // at-least-once, never at-most-once).
                let mut r = Report::build(
                    &state,
                    goal.text(),
                    f.ending,
                    f.detail.clone(),
                    f.error_kind.clone(),
                    f.ending == Ending::GoalMet,
                    0,
                );
                let written = publish(&mut r, &ends, state_dir).await;
                (r, written)
            }
        };
        return Outcome {
            ending: f.ending,
            report,
            report_written,
        }
        .into();
    }

    // A stopped run resumes: its stop report no longer says where it stands
    // (kept beside, for the record, until the run ends or stops again).
    if crate::report::StoppedReport::load(state_dir).is_ok() {
        let _ = std::fs::rename(
            state_dir.join(crate::report::FILE_NAME),
            state_dir.join(crate::report::STOPPED_FILE_NAME),
        );
    }
    let mut ledger =
        Ledger::new(spec.hard_cap_usd, spec.prices.clone()).for_protocol(spec.model.protocol);
    if let Err(e) = ledger.open_journal(&state_dir.join("ledger.jsonl")) {
        return fail_early(
            state,
            ErrorKind::LedgerJournal,
            e.to_string(),
            &goal,
            &ends,
            state_dir,
            &mut events,
        )
        .await
        .into();
    }
    // Money the checkpoint knows about must still be in the journal: a journal
    // that lost money is refused, never silently trusted.
    if ledger.spent_usd() + 1e-9 < state.ledger.spent_usd {
        let d = format!(
            "ledger journal books ${:.6} but the checkpoint recorded ${:.6}",
            ledger.spent_usd(),
            state.ledger.spent_usd
        );
        return fail_early(
            state,
            ErrorKind::LedgerJournal,
            d,
            &goal,
            &ends,
            state_dir,
            &mut events,
        )
        .await
        .into();
    }
    ledger.set_blocked(state.ledger.blocked);
    state.ledger = ledger.snapshot().clone();
    // A raised limit is the journal's from the raise on, whatever the spec
    // says; `--max-usd` tightens it for this command only, said on stderr
    // when it is below a raise (the raise stays in the journal).
    if let Some(x) = opts.max_usd {
        if x < ledger.hard_cap_usd() {
            if let Some(raised) = ledger.raised(crate::ledger::LimitKind::HardCapUsd) {
                crate::console::err_line(&format!(
                    "harness: --max-usd {x} is below the run's raised cap ${raised}: this command runs under ${x}; the raise stays in ledger.jsonl and a command without --max-usd runs under it again"
                ));
            }
            ledger.tighten_cap(x);
        }
    }
    state.hard_cap_usd = ledger.hard_cap_usd();
    if let Some(s) = ledger.raised(crate::ledger::LimitKind::WallClockLimitS) {
        spec.wall_clock_limit_s = s;
    }

    let workspace = match Workspace::open(&spec.workspace) {
        Ok(w) => w,
        Err(e) => {
            return fail_early(
                state,
                ErrorKind::Workspace,
                format!("workspace {}: {e}", spec.workspace.display()),
                &goal,
                &ends,
                state_dir,
                &mut events,
            )
            .await
            .into()
        }
    };
    let outbox = Outbox::new(
        spec.outbox
            .clone()
            .unwrap_or_else(|| state_dir.join("outbox.jsonl")),
    );
    let base_url = opts
        .base_url_override
        .clone()
        .unwrap_or_else(|| spec.model.base_url.clone());
    let client = match ModelClient::new(EndpointConfig {
        base_url,
        protocol: spec.model.protocol,
        api_key_env: spec.model.api_key_env.clone(),
        request_timeout_ms: spec.model.request_timeout_s * 1000,
        retry: RetryPolicy {
            max_attempts: spec.model.http_attempts,
            jitter_seed: opts.jitter_seed,
            ..RetryPolicy::default()
        },
    })
    .map(|c| c.with_sampling(spec.model.sampling()))
    {
        Ok(c) => c,
        Err(e) => {
            return fail_early(
                state,
                ErrorKind::EndpointConfig,
                e.to_string(),
                &goal,
                &ends,
                state_dir,
                &mut events,
            )
            .await
            .into()
        }
    };
    let git = GitWork::detect(workspace.root());
    // Checks get a private TMPDIR, removed when the run ends (the Runner
    // holds it; a killed run's is swept by the next: crate::check_tmp);
    // without one they fall back to the system temp dir.
    let check_tmp = crate::check_tmp::create().ok();
    if let Some(t) = &check_tmp {
        spec.set_check_tmpdir(t.path());
    }

    let mut r = Runner {
        clock: crate::clock::RunClock::resume_from(state.elapsed_ms),
        spec,
        goal,
        state,
        ledger,
        client,
        workspace,
        outbox,
        git,
        state_dir: state_dir.to_path_buf(),
        events,
        last_predicate: None,
        plan_note: None,
        #[cfg(feature = "test-hooks")]
        tamper_goal_before_lap: opts.tamper_goal_before_lap,
        fresh_predicate: None,
        clock_ran_out: false,
        writes: TaskWrites::new(state_dir),
        task_paths: BTreeSet::new(),
        _check_tmp: check_tmp,
    };
    let opened = RunOpened {
        run_id: r.state.run_id.clone(),
        spent_usd: r.ledger.spent_usd(),
    };
    r.events.emit(
        r.state.step,
        if resumed {
            Event::Resume(opened)
        } else {
            Event::Start(opened)
        },
    );

    match r.drive(resumed).await {
        Exit::Ended(ending, detail, kind) => r.finish(ending, detail, kind).await.into(),
        Exit::Stopped { signal, cut } => RunEnd::Stopped(r.suspend(signal, cut).await),
    }
}

/// Raise the limit a finished run ended on, so it goes on from its
/// checkpoint: refused (Err, nothing changed) unless the run ended on that
/// very limit and the new value is above the old one (for the cap, the one
/// the run ended on, and above what is spent; for the clock, above the time
/// run). The same raise again (the journal's last raise of that limit is
/// this value) never journals twice: it completes a raise killed before its
/// checkpoint, else it is a plain resume or re-report. The raise is a
/// ledger journal line (when, old, new), then `finished` is cleared and the
/// checkpoint written; the goal, queue and verified tasks are untouched.
fn raise_limit(
    state: &mut RunState,
    raise: Raise,
    spec: &RunSpec,
    ended_cap: f64,
    state_dir: &Path,
    goal: &Goal,
    events: &mut EventLog,
) -> Result<(), String> {
    use crate::ledger::LimitKind;
    let (flag, needs) = match raise.limit {
        LimitKind::HardCapUsd => ("--raise-cap-usd", Ending::BudgetExhausted),
        LimitKind::WallClockLimitS => ("--raise-wall-clock-s", Ending::TimeLimit),
    };
    let mut ledger =
        Ledger::new(spec.hard_cap_usd, spec.prices.clone()).for_protocol(spec.model.protocol);
    ledger
        .open_journal(&state_dir.join("ledger.jsonl"))
        .map_err(|e| format!("{flag}: {e}"))?;
    // The same raise again, after a process that journaled it was killed:
    // before its checkpoint (the journal holds more raises than the
    // checkpoint) the raise is completed, never journaled twice; after it
    // (the run no longer ended) the command is a resume.
    let of_limit =
        |v: &[crate::ledger::LimitRaise]| v.iter().filter(|r| r.limit == raise.limit).count();
    if ledger.raised(raise.limit) == Some(raise.to) {
        let unrecorded = of_limit(ledger.raises()) > of_limit(&state.limit_raises);
        match &state.finished {
            Some(f) if unrecorded && f.ending == needs => {
                state.finished = None;
                state.ledger = ledger.snapshot().clone();
                state.ledger.blocked = false;
                if raise.limit == LimitKind::HardCapUsd {
                    state.hard_cap_usd = raise.to;
                }
                state.limit_raises = ledger.raises().to_vec();
                goal.assert_intact().map_err(|e| e.to_string())?;
                return checkpoint::save(state_dir, state).map_err(|e| {
                    format!("{flag}: the raise is journaled but the checkpoint could not be written ({e}); run the same command again")
                });
            }
            // Taken and recorded: the run goes on, or is re-reported.
            _ if !unrecorded => return Ok(()),
            Some(_) | None => {}
        }
    }
    // Refused unless the run ended on this very limit (a run not ended, or
    // ended otherwise, may still be this very raise again: above).
    if let Some(f) = state.finished.as_ref().filter(|f| f.ending != needs) {
        return Err(format!("{flag}: the run ended {}, not {needs}: only a run that ended on this limit goes on under a raised one", f.ending));
    }
    if state.finished.is_none() {
        return Err(format!("{flag}: the run has not ended (its checkpoint holds no ending): a limit is raised only after the run ended {needs}; to resume it, run the same command without {flag}"));
    }
    let spent = ledger.spent_usd();
    let elapsed_s = state.elapsed_ms as f64 / 1000.0;
    let (old, floor, unit) = match raise.limit {
        // The cap the run ended on: the spec's or the last raise, or lower
        // when the command that ended it had --max-usd.
        LimitKind::HardCapUsd => (
            if ended_cap.is_finite() && ended_cap > 0.0 {
                ended_cap
            } else {
                ledger.hard_cap_usd()
            },
            spent,
            "spent",
        ),
        LimitKind::WallClockLimitS => (
            ledger
                .raised(LimitKind::WallClockLimitS)
                .unwrap_or(spec.wall_clock_limit_s),
            elapsed_s,
            "run so far",
        ),
    };
    if !(raise.to.is_finite() && raise.to > old && raise.to > floor) {
        return Err(format!(
            "{flag} {}: expected a number above the current limit {old} and above the {floor:.4} {unit}: a limit is only ever raised",
            raise.to
        ));
    }
    let r = ledger
        .raise(raise.limit, old, raise.to)
        .map_err(|e| format!("{flag}: the raise could not be journaled: {e}"))?;
    state.finished = None;
    state.ledger = ledger.snapshot().clone();
    state.ledger.blocked = false;
    if raise.limit == LimitKind::HardCapUsd {
        state.hard_cap_usd = raise.to;
    }
    state.limit_raises.push(r);
    events.emit(state.step, Event::LimitRaised(r));
    goal.assert_intact().map_err(|e| e.to_string())?;
    crate::chaos_hook::point(crate::chaos_hook::Phase::AfterRaiseBeforeCheckpoint);
    checkpoint::save(state_dir, state).map_err(|e| {
        format!("{flag}: the raise is journaled but the checkpoint could not be written ({e}); run the same command again")
    })
}

/// End a run that could not start (a refused checkpoint, an unusable state
/// dir, ledger journal, workspace or endpoint): report it and alert a human,
/// exactly like any other UNRECOVERABLE_ERROR.
async fn fail_early(
    mut state: RunState,
    kind: ErrorKind,
    detail: String,
    goal: &Goal,
    ends: &Ends,
    state_dir: &Path,
    events: &mut EventLog,
) -> Outcome {
    // The money is the journal's, read by the resume rules (in-flight and
    // torn reserves at their worst case), whatever refused the run: a
    // refused resume must not report $0 while the journal holds what was
    // spent, nor less than the checkpoint knew. The journal is only read.
    if let Some(f) = Ledger::journal_figure(&state_dir.join("ledger.jsonl"), state.hard_cap_usd) {
        if f.snapshot.spent_usd > state.ledger.spent_usd {
            let blocked = state.ledger.blocked;
            state.ledger = f.snapshot;
            state.ledger.blocked = blocked;
        }
    }
    events.emit(
        state.step,
        Event::Ending(EndingEvent {
            ending: Ending::UnrecoverableError,
            kind: Some(kind),
            exit_code: None,
            detail: Some(detail.clone()),
        }),
    );
    let mut report = Report::build(
        &state,
        goal.text(),
        Ending::UnrecoverableError,
        Some(detail),
        Some(kind),
        false,
        state.elapsed_ms,
    );
    let report_written = publish(&mut report, ends, state_dir).await;
    Outcome {
        ending: Ending::UnrecoverableError,
        report,
        report_written,
    }
}

/// End a run that main could not start (its state dir cannot be made, the
/// lock file cannot be opened): UNRECOVERABLE_ERROR with a report where the
/// state dir allows one, else the report on stderr; the alert is tried
/// either way.
pub async fn end_before_start(
    spec: &RunSpec,
    state_dir: &Path,
    kind: ErrorKind,
    detail: String,
) -> Outcome {
    let goal = Goal::new(spec.goal.clone());
    let mut s = RunState::new("unknown".into(), goal.sha256().to_string(), now_unix_ms());
    s.hard_cap_usd = spec.hard_cap_usd;
    let mut events = EventLog::open(state_dir);
    fail_early(
        s,
        kind,
        detail,
        &goal,
        &Ends::of(spec),
        state_dir,
        &mut events,
    )
    .await
}

/// The last act of every ending: the alert (file and webhook), then
/// report.json. Never fails and never changes the ending: a report that
/// cannot be written (a full disk) is said plainly on stderr, followed by the
/// report itself as one JSON line, so the morning still has it. Returns
/// whether report.json was written.
/// What publishing an ending needs from the spec: where the alert goes, and
/// the drift bands the report (and its page) shows the run against.
struct Ends {
    alerts: AlertSpec,
    bands: crate::report::DriftBands,
}

impl Ends {
    fn of(spec: &RunSpec) -> Ends {
        Ends {
            alerts: spec.alerts.clone(),
            bands: crate::report::DriftBands {
                prune_above: spec.drift_prune_above,
                halt_above: spec.drift_halt_above,
            },
        }
    }
}

async fn publish(report: &mut Report, ends: &Ends, state_dir: &Path) -> bool {
    report.drift_bands = ends.bands;
    report
        .alert_delivery
        .extend(crate::report::deliver_alert(&ends.alerts, state_dir, report).await);
    match report.write(state_dir) {
        Ok(()) => {
            write_page(report, state_dir);
            true
        }
        Err(e) => {
            let path = state_dir.join(crate::report::FILE_NAME);
            crate::console::err_line(&format!(
                "harness: the report was NOT written to {}: {e}",
                path.display()
            ));
            crate::console::err_line(&format!(
                "harness: the run ended {} (exit {}); its report follows as one line of JSON",
                report.ending, report.exit_code
            ));
            let json = serde_json::to_string(report).unwrap_or_else(|e| {
                json!({"ending": report.ending, "serialize_error": e.to_string()}).to_string()
            });
            crate::console::err_line(&format!("{}{json}", crate::report::STDERR_JSON_PREFIX));
            for d in &report.alert_delivery {
                crate::console::err_line(&format!("harness: {d}"));
            }
            false
        }
    }
}

/// report.html beside report.json. The page is for people: one that cannot
/// be written is said on stderr and changes neither the ending nor whether
/// the report was written.
fn write_page(report: &Report, state_dir: &Path) {
    if let Err(e) = crate::page::write(report, state_dir) {
        crate::console::err_line(&format!(
            "harness: the morning page was NOT written to {}: {e} (report.json was)",
            state_dir.join(crate::page::FILE_NAME).display()
        ));
    }
}

/// What the ending of a panicked run is built from, taken before the run
/// started: the spec's goal, alerts and prices, and where the state is.
struct AfterPanic {
    goal: String,
    ends: Ends,
    hard_cap_usd: f64,
    prices: PriceTable,
    state_dir: PathBuf,
}

/// UNRECOVERABLE_ERROR (kind `panic`) for a run whose task panicked. What
/// is trustworthy now is on disk, not in memory: the panicked task's state
/// was dropped with it and may have been half updated. The last durable
/// checkpoint says what the run had done (checkpoint writes are atomic, so a
/// write in flight at the panic left the old one whole), the ledger journal
/// what it spent (a call in flight is booked at its worst case, as after a
/// kill). Nothing of the run's own code runs again: the task in flight is
/// parked unverified, the predicate is not re-run. The ending is made
/// durable (a re-run re-reports it), unless the checkpoint is refused, which
/// is left untouched for a human.
async fn end_after_panic(after: AfterPanic, message: String) -> Outcome {
    crate::fault_injection::panic_point("after_panic");
    let state_dir = after.state_dir.as_path();
    let goal = Goal::new(after.goal);
    let mut events = EventLog::open(state_dir);
    let mut notes: Vec<String> = vec![];
    let fresh = || {
        RunState::new(
            format!("run-{}-{}", now_unix_ms(), std::process::id()),
            goal.sha256().to_string(),
            now_unix_ms(),
        )
    };
    let (mut state, checkpoint_usable) = match checkpoint::load(state_dir, Some(goal.sha256())) {
        Ok(Some(s)) => (s, true),
        Ok(None) => (fresh(), true),
        Err(r) => {
            notes.push(format!(
                "the checkpoint is refused ({r}) and left untouched"
            ));
            (fresh(), false)
        }
    };
    state.hard_cap_usd = after.hard_cap_usd;
    let prior = state.finished.take();
    let mut ledger = Ledger::new(after.hard_cap_usd, after.prices);
    match ledger.open_journal(&state_dir.join("ledger.jsonl")) {
        Ok(()) if ledger.spent_usd() + 1e-9 >= state.ledger.spent_usd => {
            ledger.set_blocked(state.ledger.blocked);
            state.ledger = ledger.snapshot().clone();
        }
        Ok(()) => notes.push(format!(
            "the ledger journal books ${:.6}, less than the checkpoint's ${:.6}: the checkpoint's spend is reported",
            ledger.spent_usd(),
            state.ledger.spent_usd
        )),
        Err(e) => notes.push(format!("{e}; the checkpoint's spend is reported")),
    }
    if let Some(task) = state.in_progress.take() {
        // What its tools wrote, from the journal (the panicked task's memory
        // is gone): left uncommitted in the work tree for the human.
        let uncommitted_paths = TaskWrites::new(&after.state_dir)
            .paths_for(&task.id)
            .into_iter()
            .collect();
        state.parked.push(ParkedTask {
            id: task.id,
            description: task.description,
            reason: "the harness panicked while this task was in progress; it was not verified after the panic, so it may be partly done: a human decides".into(),
            step: state.step,
            uncommitted_paths,
        });
    }
    let mut detail = format!("the harness panicked: {message}");
    if let Some(f) = &prior {
        detail.push_str(&format!(
            "; the run had already ended {} before the panic",
            f.ending
        ));
    }
    for n in &notes {
        detail.push_str("; ");
        detail.push_str(n);
    }
    let kind = ErrorKind::Panic;
    state.finished = Some(Finished {
        ending: Ending::UnrecoverableError,
        detail: Some(detail.clone()),
        error_kind: Some(kind),
    });
    let ckpt_err = if checkpoint_usable {
        checkpoint::save(state_dir, &state).err()
    } else {
        None
    };
    let mut report = Report::build(
        &state,
        goal.text(),
        Ending::UnrecoverableError,
        Some(detail),
        Some(kind.clone()),
        false,
        state.elapsed_ms,
    );
    if let Some(e) = ckpt_err {
        note_final_checkpoint_failed(&mut report, &e);
    }
    events.emit(
        state.step,
        Event::Ending(EndingEvent {
            ending: Ending::UnrecoverableError,
            kind: Some(kind),
            exit_code: None,
            detail: report.detail.clone(),
        }),
    );
    let report_written = publish(&mut report, &after.ends, state_dir).await;
    Outcome {
        ending: Ending::UnrecoverableError,
        report,
        report_written,
    }
}

/// The final checkpoint could not be written: the last good one stays (the
/// write is atomic), and a re-run resumes from it.
fn note_final_checkpoint_failed(report: &mut Report, e: &SaveError) {
    crate::console::err_line(&format!(
        "harness: the final checkpoint was not written ({e}); the last good checkpoint is kept, and running the same command again resumes from it"
    ));
    report
        .alert_delivery
        .push(format!("final checkpoint not written: {e}"));
}

impl Runner {
    /// The priority order of the endings is the literal order of these checks.
    /// UNRECOVERABLE_ERROR is not here: nothing returns it from a check; it is
    /// the classification of an error out of the lap body.
    fn should_stop(&mut self) -> Option<Ending> {
        // The HARNESS runs it, never the agent. A result the lap computed as
        // its very last act (nothing has run since) is used instead of
        // running the same command twice in a row.
        let met = match self.fresh_predicate.take() {
            Some(p) => p.passed,
            None => self.predicate().passed,
        };
        if met {
            return Some(Ending::GoalMet);
        }
        if self.ledger.blocked()
            || self.ledger.spent_usd() >= self.ledger.hard_cap_usd()
            || self.ledger.winding_down()
        {
            return Some(Ending::BudgetExhausted); // `blocked`: reserve() already refused
        }
        if self.clock_ran_out || self.clock_out() {
            return Some(Ending::TimeLimit);
        }
        if self.state.drift_score > self.spec.drift_halt_above
            || (crate::mutants::active(crate::mutants::Mutant::HaltAtThreshold)
                && self.state.drift_score >= self.spec.drift_halt_above)
        {
            return Some(Ending::DriftDetected);
        }
        let k = self.spec.no_progress_k
            + u32::from(crate::mutants::active(
                crate::mutants::Mutant::NoProgressOffByOne,
            ));
        if self.state.no_progress_streak >= k {
            return Some(Ending::NoProgress);
        }
        // The pass-rate guard: enough tasks finished and too few verified.
        let finished = (self.state.completed.len() + self.state.parked.len()) as u64;
        if finished >= self.spec.pass_rate_min_tasks {
            let rate = self.state.completed.len() as f64 / finished as f64;
            if rate < self.spec.min_pass_rate {
                self.plan_note = Some(format!(
                    "verified pass rate {:.0}% ({} of {finished} tasks) is below the {:.0}% guard: the run was paying for work that is thrown away",
                    100.0 * rate,
                    self.state.completed.len(),
                    100.0 * self.spec.min_pass_rate
                ));
                return Some(Ending::NoProgress);
            }
        }
        if self.state.planned && self.state.queue.is_empty() {
            if crate::mutants::active(crate::mutants::Mutant::EmptyQueueIsSuccess) {
                return Some(Ending::GoalMet);
            }
            return Some(Ending::QueueEmptyGoalUnmet); // NOT success: report it as such
        }
        None
    }

    /// The one loop. Returns the ending (with its detail and error kind), or
    /// the stop request that suspends the run.
    async fn drive(&mut self, resumed: bool) -> Exit {
        if let Err(e) = self.prepare(resumed).await {
            return self.classify_fatal(e);
        }
        let mut laps = 0u64;
        loop {
            // Before the ending checks, and again after them: a check the
            // stop request cut (the predicate) is no measurement, so no
            // ending decided while a stop is pending is trusted.
            if let Some(signal) = crate::stop::requested() {
                return Exit::Stopped { signal, cut: None };
            }
            let decided = self.should_stop();
            if let Some(signal) = crate::stop::requested() {
                return Exit::Stopped { signal, cut: None };
            }
            if let Some(ending) = decided {
                // GOAL_MET means durable: the predicate measured the page
                // cache, and a write whose rename landed but whose directory
                // fsync failed may not survive a power cut (found by bench
                // chaos, power-loss mode, EIO on that fsync).
                if ending == Ending::GoalMet && !self.state.writes_in_doubt.is_empty() {
                    return Exit::Ended(
                        Ending::UnrecoverableError,
                        Some(format!(
                            "the goal predicate passed, but these writes failed with an I/O error after they landed and were not redone, so what it measured may not survive a power cut: {}",
                            self.state
                                .writes_in_doubt
                                .iter()
                                .map(|d| format!("{} ({})", d.path, d.error))
                                .collect::<Vec<_>>()
                                .join("; ")
                        )),
                        Some(ErrorKind::WriteNotDurable),
                    );
                }
                return Exit::Ended(ending, self.plan_note.clone(), None);
            }
            laps += 1;
            crate::fault_injection::panic_point("lap");
            #[cfg(feature = "test-hooks")]
            if self.tamper_goal_before_lap == Some(laps) {
                self.goal
                    .corrupt_for_test("Improve observability of the search subsystem.");
            }
            if laps > LAPS_MAX {
                return Exit::Ended(
                    Ending::UnrecoverableError,
                    Some(format!("the loop ran {LAPS_MAX} laps without ending")),
                    Some(ErrorKind::LapsExhausted),
                );
            }
            if let Err(e) = self.lap().await {
                let said = e.to_string();
                match e.classify() {
                    Classified::Unrecoverable { kind, detail } => {
                        return Exit::Ended(Ending::UnrecoverableError, Some(detail), Some(kind))
                    }
                    Classified::Stopped(signal) => {
                        return Exit::Stopped {
                            signal,
                            cut: Some(said),
                        }
                    }
                    // A cut the stop request made (a check killed, so a
                    // verify with no verdict) is the stop's, not the clock's.
                    _ if crate::stop::requested().is_some() => {
                        return Exit::Stopped {
                            signal: crate::stop::requested().unwrap_or(Signal::SIGTERM),
                            cut: Some(said),
                        }
                    }
                    // Do not end here: the top of the loop reports it, after
                    // the goal predicate has had its say.
                    Classified::Blocked => {
                        self.ledger.set_blocked(true);
                        self.events.emit(
                            self.state.step,
                            Event::BudgetRefused {
                                spent_usd: self.ledger.spent_usd(),
                                detail: said,
                            },
                        );
                        continue;
                    }
                    Classified::TimeUp => {
                        self.clock_ran_out = true;
                        self.events.emit(
                            self.state.step,
                            Event::ClockRanOut {
                                elapsed_ms: self.elapsed_ms(),
                                spent_usd: self.ledger.spent_usd(),
                                detail: said,
                            },
                        );
                        continue;
                    }
                    Classified::WallClock { detail } => return self.clock_ran_out(detail),
                }
            }
        }
    }

    /// The wall clock ran out inside a lap. The priority order still decides
    /// (a blocked ledger outranks the clock); the predicate, with no time
    /// left, is not run, so this is never GOAL_MET. A clock that stepped back
    /// cannot send the loop on with a task still in flight: TIME_LIMIT.
    fn clock_ran_out(&mut self, detail: String) -> Exit {
        self.events.emit(
            self.state.step,
            Event::WallClock {
                detail: detail.clone(),
            },
        );
        self.plan_note = Some(detail);
        let ending = match self.should_stop() {
            Some(e) if e != Ending::GoalMet => e,
            _ => Ending::TimeLimit,
        };
        if let Some(signal) = crate::stop::requested() {
            return Exit::Stopped {
                signal,
                cut: self.plan_note.clone(),
            };
        }
        Exit::Ended(ending, self.plan_note.clone(), None)
    }

    fn classify_fatal(&mut self, e: LapError) -> Exit {
        let said = e.to_string();
        match e.classify() {
            Classified::Unrecoverable { kind, detail } => {
                Exit::Ended(Ending::UnrecoverableError, Some(detail), Some(kind))
            }
            Classified::Stopped(signal) => Exit::Stopped {
                signal,
                cut: Some(said),
            },
            _ if crate::stop::requested().is_some() => Exit::Stopped {
                signal: crate::stop::requested().unwrap_or(Signal::SIGTERM),
                cut: Some(said),
            },
            Classified::Blocked => Exit::Ended(Ending::BudgetExhausted, None, None),
            Classified::TimeUp => Exit::Ended(Ending::TimeLimit, None, None),
            Classified::WallClock { detail } => self.clock_ran_out(detail),
        }
    }

    /// Before the first lap: the git branch, and on resume the in-flight task
    /// is verified, never re-executed.
    async fn prepare(&mut self, resumed: bool) -> Result<(), LapError> {
        self.goal.assert_intact()?;
        // A run whose branch could not be made commits nothing, ever: not
        // onto whatever branch the workspace was on, not after a resume.
        if let (Some(g), None) = (&self.git, &self.state.git_disabled) {
            let branch = self
                .state
                .git_branch
                .clone()
                .unwrap_or_else(|| format!("harness/{}", self.state.run_id));
            match g.ensure_branch(&branch) {
                Ok(()) => self.state.git_branch = Some(branch),
                Err(e) => {
                    let why = format!("the run branch {branch:?} could not be made or checked out ({e}); nothing is committed in this run");
                    self.events.emit(
                        self.state.step,
                        Event::GitError(GitError {
                            task: None,
                            detail: why.clone(),
                        }),
                    );
                    self.state.git_branch = None;
                    self.state.git_disabled = Some(why);
                }
            }
        }
        if resumed {
            self.state.resumes += 1;
            if let Some(task) = self.state.in_progress.take() {
                // What its tools wrote before the kill, from the journal.
                self.task_paths = self.writes.paths_for(&task.id);
                point(Phase::DuringResumeVerify);
                let outcome = if crate::mutants::active(crate::mutants::Mutant::ResumeReexecutes) {
                    VerifyOutcome::NotStarted
                } else {
                    task.verify.run(&self.verify_ctx())
                };
                self.events.emit(
                    self.state.step,
                    Event::ResumeVerify {
                        task: task.id.clone(),
                        outcome: outcome.clone(),
                    },
                );
                // A task settled here finished: it counts as a step (the drift
                // cadence counts finished tasks), exactly as in `lap`.
                match outcome {
                    VerifyOutcome::Done => {
                        self.complete(task, None, VerifiedHow::OnResume);
                        self.state.step += 1;
                    }
                    // Nothing happened: safe to re-run.
                    VerifyOutcome::NotStarted | VerifyOutcome::CouldNotRun { .. } => {
                        self.state.queue.insert(0, task)
                    }
                    VerifyOutcome::PartiallyApplied { detail } => {
                        self.park(
                            task,
                            format!("resumed into a partially applied state: {detail}"),
                        );
                        self.state.step += 1;
                    }
                    // Still in flight: `finish` settles it (TIME_LIMIT).
                    VerifyOutcome::NotJudged { detail } => {
                        self.state.in_progress = Some(task);
                        return Err(cut_short(format!("the resume's verify ({detail})")));
                    }
                }
            }
            self.checkpoint()?;
            // A kill during a replan (or after it answered, before its
            // checkpoint) leaves the checkpoint of the last task: queue dry,
            // the replan not counted. The dry queue gets its replan here, as
            // at the end of a lap, before `should_stop` could read it as
            // QUEUE_EMPTY_GOAL_UNMET (found by bench chaos, during_replan).
            if self.state.planned {
                self.replan_if_dry().await?;
            }
        }
        Ok(())
    }

    /// One lap: plan if not planned yet, else run the next task, verify it,
    /// checkpoint, then the drift gate and (when the queue ran dry) a replan.
    async fn lap(&mut self) -> Result<(), LapError> {
        if !self.state.planned {
            self.plan().await?;
            self.checkpoint()?;
            // A plan that admitted nothing gets the same replan as a queue
            // that ran dry (live suite: a small model's first plan is often
            // all rejected; the rejections go back to it in the replan).
            self.replan_if_dry().await?;
            // A planning lap runs no tool and no check: nothing the agent can
            // reach has changed since the goal was measured at the top of
            // this lap (or by replan_if_dry), so that measurement stands for
            // the next top instead of running the predicate again. It is
            // measured again after every task. (A predicate can be a
            // minutes-long load test; bench run's profile: one of five
            // predicate runs per case-run was this repeat.)
            if self.fresh_predicate.is_none() {
                self.fresh_predicate = self.last_predicate.clone();
            }
            return Ok(());
        }
        let task = self.state.queue.remove(0); // the planner orders by value; should_stop guarantees non-empty
        point(Phase::BeforeInProgressCheckpoint);
        self.state.in_progress = Some(task.clone());
        self.checkpoint()?; // IN_PROGRESS: a crash from here on is verified on resume
        self.events.emit(
            self.state.step,
            Event::TaskStart {
                task: task.id.clone(),
                description: task.description.clone(),
            },
        );

        let result = self.execute_task(&task).await?;
        self.state.in_progress = None;
        // The chaos self-test's skip-park-checkpoint variant; always false
        // without the chaos-broken feature.
        let broken_skip = matches!(result, TaskResult::Park { .. })
            && crate::simfs::broken() == Some(crate::simfs::Broken::SkipParkCheckpoint);
        match result {
            TaskResult::Verified { claim } => self.complete(task, claim, VerifiedHow::Verified),
            TaskResult::Park { reason } => self.park(task, reason),
        }
        self.state.step += 1;
        if !broken_skip {
            self.checkpoint()?;
        }

        if self.ledger.winding_down() {
            return Ok(()); // from 90%: finish the current task only
        }
        if self.state.step % self.spec.drift_every_tasks == 0 && !self.state.queue.is_empty() {
            self.drift_check().await?;
            point(Phase::AfterDriftGateBeforeCheckpoint);
            self.checkpoint()?;
        }
        if let Some(memory) = self.compaction_due() {
            self.compact(&memory).await?;
            self.checkpoint()?;
        }
        self.replan_if_dry().await
    }

    /// When the queue is empty, the goal unmet and replans are left: replan.
    async fn replan_if_dry(&mut self) -> Result<(), LapError> {
        if self.state.queue.is_empty() && self.state.replans < self.spec.max_replans {
            let pred = self.predicate();
            if pred.passed {
                self.fresh_predicate = Some(pred); // nothing runs between here and should_stop
            } else if pred.cut_short() {
                return Err(cut_short("the goal predicate".into()));
            } else {
                self.replan(&pred.output).await?;
                self.checkpoint()?;
            }
        }
        Ok(())
    }

    /// Execute with retries; the harness verifies after every attempt.
    async fn execute_task(&mut self, task: &Task) -> Result<TaskResult, LapError> {
        let attempts_allowed = 1 + self.spec.retries_per_task;
        let mut last = String::new();
        for attempt in 0..attempts_allowed {
            self.clock_left(|| format!("task {}, before attempt {}", task.id, attempt + 1))?;
            let (end, io_failed, observations) = self.execute_attempt(task, attempt).await?;
            let claim = match &end {
                AttemptEnd::Finished { claim } => Some(clip_chars(claim, CLAIM_MAX_CHARS)),
                _ => None,
            };
            let mut outcome = task.verify.run(&self.verify_ctx());
            if crate::mutants::active(crate::mutants::Mutant::TrustsTheClaim) && claim.is_some() {
                outcome = VerifyOutcome::Done;
            }
            self.events.emit(
                self.state.step,
                Event::Verify {
                    task: task.id.clone(),
                    attempt,
                    attempt_end: end.describe(),
                    outcome: outcome.clone(),
                },
            );
            if let Some(c) = &claim {
                self.state.model_claims.push(ModelClaim {
                    task_id: task.id.clone(),
                    text: c.clone(),
                    verified: outcome == VerifyOutcome::Done,
                });
            }
            match outcome {
                // What the page cache shows is not what a power cut leaves: a
                // side-effecting tool call failed with an I/O error in this
                // attempt (and was not redone successfully), so "done" may not
                // be durable. Never re-executed here (it may be a post): a
                // human decides (found by bench chaos, EIO on fsync).
                VerifyOutcome::Done if io_failed.is_some() => {
                    let reason = format!(
                        "verify says done, but {} failed with an I/O error during the attempt, so its effects may not be durable",
                        io_failed.unwrap_or_default()
                    );
                    self.learn(task, attempt, &reason, &observations, false)
                        .await?;
                    return Ok(TaskResult::Park { reason });
                }
                VerifyOutcome::Done => return Ok(TaskResult::Verified { claim }),
                // A half-applied operation goes to a human: no improvising.
                VerifyOutcome::PartiallyApplied { detail } => {
                    let reason =
                        format!("partially applied after attempt {}: {detail}", attempt + 1);
                    self.learn(task, attempt, &reason, &observations, false)
                        .await?;
                    return Ok(TaskResult::Park { reason });
                }
                // No verdict: the task stays in flight and `finish` settles it.
                VerifyOutcome::NotJudged { detail } => {
                    return Err(cut_short(format!(
                        "the verify of task {} ({detail})",
                        task.id
                    )))
                }
                VerifyOutcome::NotStarted | VerifyOutcome::CouldNotRun { .. } => {
                    last = format!(
                        "verification failed ({}) after {}",
                        task.verify.describe(),
                        end.describe()
                    );
                    if let VerifyOutcome::CouldNotRun { detail } = &outcome {
                        last.push_str(&format!(": {detail}"));
                    }
                    if matches!(end, AttemptEnd::Refused { .. }) {
                        break; // a refusal will not change on retry, and teaches nothing
                    }
                    let retry_follows = attempt + 1 < attempts_allowed;
                    self.learn(task, attempt, &last, &observations, retry_follows)
                        .await?;
                }
            }
        }
        Ok(TaskResult::Park {
            reason: format!("{last}; gave up after {attempts_allowed} attempt(s)"),
        })
    }

    /// One short ReAct loop: model <-> tools, one tool call per turn, up to
    /// the loop cap.
    /// Returns how the attempt ended; if a side-effecting tool call failed
    /// (an I/O error after it may have changed something) and was not later
    /// redone successfully, which call; and what the attempt observed (its
    /// tool calls and results, bounded), for a lesson if it failed.
    async fn execute_attempt(
        &mut self,
        task: &Task,
        attempt: u32,
    ) -> Result<(AttemptEnd, Option<String>, String), LapError> {
        let mut io_failed: Option<(String, serde_json::Value)> = None;
        let mut observations = String::new();
        let end = self
            .react(task, attempt, &mut io_failed, &mut observations)
            .await?;
        Ok((end, io_failed.map(|(name, _)| name), observations))
    }

    async fn react(
        &mut self,
        task: &Task,
        attempt: u32,
        io_failed: &mut Option<(String, serde_json::Value)>,
        observations: &mut String,
    ) -> Result<AttemptEnd, LapError> {
        let checks: std::collections::BTreeMap<_, _> = self.spec.checks.clone();
        let allow = self.spec.tools_allowed.clone();
        let tool_defs = ToolBox {
            workspace: &self.workspace,
            outbox: &self.outbox,
            checks: &checks,
            allowlist: &allow,
            deadline: None,
            command: self.spec.run_command.as_ref(),
        }
        .defs();
        // Lessons learned so far that bear on this task (empty unless
        // `[memory] lessons` is on: nothing else admits one).
        let lessons = crate::lessons::render(&crate::lessons::relevant(&self.state.lessons, task));
        let mut turns = vec![Turn::User {
            text: crate::agent::task_prompt(
                &self.goal,
                task,
                &self.state.history_summary,
                &lessons,
            ),
        }];
        let executor = self
            .spec
            .model_for(crate::model::types::CallRole::Execute)
            .to_string();
        let mut previous: Option<(String, serde_json::Value)> = None;
        for turn in 0..self.spec.loop_cap {
            let notice = if self.ledger.notice_due() {
                Some(crate::agent::budget_notice(self.ledger.fraction_spent()))
            } else {
                None
            };
            // The visible budget, in tokens, never dollars: what the dollars
            // left would buy of this call's model's output, at most the
            // spec's per-task figure. It changes every call, so it goes after
            // everything cacheable (agent::execute_request).
            let budget_tokens = self
                .ledger
                .remaining_output_tokens(&executor)
                .min(self.spec.task_budget_tokens);
            let req = crate::agent::execute_request(
                &executor,
                self.spec.model.max_tokens,
                format!("execute/{}/a{attempt}/{turn}", task.id),
                turns.clone(),
                tool_defs.clone(),
                budget_tokens,
                notice,
                self.spec.executor_prompt_extra.as_deref(),
            );
            let reply = self.call_model(req, Phase::DuringModelCall).await?;
            if reply.stop_reason == StopReason::Refusal {
                return Ok(AttemptEnd::Refused { text: reply.text });
            }
            let Some(call) = reply.tool_calls.first().cloned() else {
                return Ok(AttemptEnd::Finished { claim: reply.text });
            };
            let key = (call.name.clone(), call.input.clone());
            if previous.as_ref() == Some(&key) {
                return Ok(AttemptEnd::Stuck {
                    detail: format!("repeated an identical {} call", call.name),
                });
            }
            previous = Some(key);
            let obs = ToolBox {
                workspace: &self.workspace,
                outbox: &self.outbox,
                checks: &checks,
                allowlist: &allow,
                deadline: Some(self.deadline()),
                command: self.spec.run_command.as_ref(),
            }
            .dispatch(&call);
            if obs.posted_key.is_some() {
                point(Phase::AfterPostBeforeCheckpoint);
            }
            if !obs.wrote.is_empty() {
                self.note_writes(&task.id, &obs.wrote);
            }
            self.note_doubt(&obs);
            crate::lessons::push_observation(
                observations,
                &crate::lessons::observation_line(
                    &call.name,
                    &call.input,
                    &obs.content,
                    obs.is_error,
                ),
            );
            if obs.is_error && obs.side_effect {
                *io_failed = Some((call.name.clone(), call.input.clone()));
            } else if !obs.is_error
                && io_failed.as_ref() == Some(&(call.name.clone(), call.input.clone()))
            {
                *io_failed = None; // the same call redone successfully: durable again
            }
            if obs.side_effect {
                if let Some(p) = call.input.get("path").and_then(|p| p.as_str()) {
                    if !self.state.artifacts.iter().any(|a| a == p)
                        && self.state.artifacts.len() < 1000
                    {
                        self.state.artifacts.push(p.to_string());
                    }
                }
            }
            self.events.emit(
                self.state.step,
                Event::Tool(ToolEvent {
                    task: task.id.clone(),
                    tool: ToolRef::of(&call.name),
                    is_error: obs.is_error,
                    side_effect: obs.side_effect,
                    call_key: format!("execute/{}/a{attempt}/{turn}", task.id),
                    input: clip_chars(
                        &call.input.to_string(),
                        crate::events::TOOL_INPUT_SHOWN_MAX_CHARS,
                    ),
                    output: clip_chars(&obs.content, crate::events::TOOL_OUTPUT_SHOWN_MAX_CHARS),
                }),
            );
            // A tool's check cut by the clock, or a clock that ran out while
            // the tool ran: the lap ends here, the task stays in flight.
            self.clock_left(|| format!("task {}, tool {}", task.id, call.name))?;
            let mut content = obs.content;
            let ignored = reply.tool_calls.len() - 1;
            if ignored > 0 {
                content.push_str(&format!("\n[harness] only one tool call per turn is run; {ignored} other call(s) were ignored"));
            }
            turns.push(Turn::Assistant {
                text: reply.text,
                tool_calls: vec![call.clone()],
            });
            turns.push(Turn::ToolResult {
                call_id: call.id,
                content,
                is_error: obs.is_error,
            });
        }
        Ok(AttemptEnd::LoopCap)
    }

    async fn plan(&mut self) -> Result<(), LapError> {
        let checks: Vec<String> = self.spec.checks.keys().cloned().collect();
        let listing = self.workspace_listing();
        let migrations = crate::migration::defined(&self.workspace);
        let mut req = crate::agent::plan_request(
            &self.goal,
            self.spec.model_for(crate::model::types::CallRole::Plan),
            &checks,
            &migrations,
            &listing,
            "plan/0".into(),
        );
        let mut raw = None;
        for n in 0..=PLAN_FORMAT_RETRIES {
            let reply = self.call_model(req.clone(), Phase::DuringModelCall).await?;
            match crate::agent::parse_plan(&reply.text) {
                Ok(r) => {
                    raw = Some(r);
                    break;
                }
                Err(e) => {
                    self.events
                        .emit(self.state.step, Event::PlanMalformed { error: e.clone() });
                    self.plan_note = Some(format!("planner output malformed: {e}"));
                    // The error goes back to the model as an observation.
                    req.turns.push(Turn::Assistant {
                        text: reply.text,
                        tool_calls: vec![],
                    });
                    req.turns.push(Turn::User { text: format!("Your reply could not be used: {e}. Reply again with only the JSON object.") });
                    req.call_key = format!("plan/{}", n + 1);
                }
            }
        }
        self.state.planned = true;
        if let Some(raw) = raw {
            self.plan_note = None;
            self.admit(raw, "plan");
        }
        Ok(())
    }

    async fn replan(&mut self, predicate_output: &str) -> Result<(), LapError> {
        let n = self.state.replans;
        self.state.replans += 1;
        let checks: Vec<String> = self.spec.checks.keys().cloned().collect();
        let migrations = crate::migration::defined(&self.workspace);
        let req = crate::agent::replan_request(
            &self.goal,
            self.spec.model_for(crate::model::types::CallRole::Replan),
            &checks,
            &migrations,
            &self.state,
            &clip_chars(predicate_output, 2000),
            format!("replan/{n}"),
        );
        let reply = self.call_model(req, Phase::DuringModelCall).await?;
        match crate::agent::parse_plan(&reply.text) {
            Ok(raw) => self.admit(raw, &format!("replan/{n}")),
            Err(e) => {
                // The queue stays empty: the report must say why.
                self.plan_note = Some(format!(
                    "replanner output malformed ({}): {e}",
                    format_args!("replan/{n}")
                ));
                self.events
                    .emit(self.state.step, Event::ReplanMalformed { error: e.clone() });
            }
        }
        Ok(())
    }

    fn admit(&mut self, raw: Vec<crate::agent::RawTask>, origin: &str) {
        let (ok, rejected) = {
            let ctx = self.verify_ctx();
            crate::agent::admit_tasks(raw, origin, &self.state, &ctx)
        };
        // The descriptions are what the drift judge is shown of each task: the
        // bench's audit checks every judge request against them.
        self.events.emit(
            self.state.step,
            Event::Admit(Admit {
                origin: origin.to_string(),
                admitted: ok.iter().map(|t| t.id.clone()).collect(),
                tasks: (ok.iter())
                    .map(|t| AdmittedTask {
                        id: t.id.clone(),
                        description: t.description.clone(),
                    })
                    .collect(),
                rejected: rejected.clone(),
            }),
        );
        self.state.queue.extend(ok);
        self.state.rejected.extend(rejected);
    }

    async fn drift_check(&mut self) -> Result<(), LapError> {
        self.goal.assert_intact()?; // at every check
        let mut req = drift::judge_request(
            &self.goal,
            &self.state.queue,
            self.spec.model_for(crate::model::types::CallRole::Judge),
            format!("judge/{}", self.state.step),
        );
        if crate::mutants::active(crate::mutants::Mutant::JudgeSeesHistory) {
            let history: String = (self.state.model_claims.iter())
                .map(|c| format!("{}: {}\n", c.task_id, c.text))
                .collect();
            if let Some(crate::model::types::Turn::User { text }) = req.turns.first_mut() {
                text.push_str(&format!("\n<history>\n{history}</history>"));
            }
        }
        let reply = self.call_model(req, Phase::DuringDriftCall).await?;
        let dc = drift::parse(&reply.text)
            .map_err(|e| LapError::Internal(format!("drift judge reply unusable: {e}")))?;
        let pruned = drift::gate(
            &mut self.state,
            &dc,
            self.spec.drift_prune_above,
            self.spec.drift_halt_above,
        );
        let band = drift::band(
            dc.drift_score,
            self.spec.drift_prune_above,
            self.spec.drift_halt_above,
        );
        self.events.emit(
            self.state.step,
            Event::Drift {
                score: dc.drift_score,
                band,
                pruned: pruned.clone(),
            },
        );
        if band == Band::Halt {
            self.plan_note = Some(format!(
                "drift {:.2} above {:.2}: {}",
                dc.drift_score,
                self.spec.drift_halt_above,
                clip_chars(&dc.reasoning, 300)
            ));
        }
        Ok(())
    }

    /// The spec's `[memory]` when a compaction is due now: the history's
    /// estimate (bytes / 4) is over the bound and the last attempt (whatever
    /// its outcome, so a failing one is not retried every task) was at least
    /// `compact_every_tasks_min` tasks ago. None without `[memory]`.
    fn compaction_due(&self) -> Option<crate::spec::MemorySpec> {
        let m = self.spec.memory.as_ref()?;
        let tokens_estimate = self.state.history_bytes() / 4;
        let spaced = match self.state.compactions.last() {
            Some(last) => self.state.step.saturating_sub(last.step) >= m.compact_every_tasks_min,
            None => true,
        };
        (tokens_estimate > m.compact_above_tokens && spaced).then(|| m.clone())
    }

    /// One `compact/<n>` call: goal + history in, a summary out that replaces
    /// the history. Reserved and booked through `call_model` like every
    /// call. Its output is data: it only ever becomes `history_summary`
    /// lines; the goal, predicate, queue (with its verifies) and ledger are
    /// not inputs to anything it returns. A refused reserve, a failed call
    /// or a malformed reply keeps the previous history and is recorded
    /// (report `compactions`), never a silent truncation.
    async fn compact(&mut self, memory: &crate::spec::MemorySpec) -> Result<(), LapError> {
        let n = self.state.compaction_attempts;
        self.state.compaction_attempts = n.saturating_add(1);
        let call_key = format!("compact/{n}");
        let bytes_before = self.state.history_bytes();
        let spent_before = self.ledger.spent_usd();
        let req = crate::agent::compact_request(
            &self.goal,
            self.spec.model_for(crate::model::types::CallRole::Compact),
            &self.state.history_summary,
            memory.compact_max_tokens,
            call_key.clone(),
        );
        let result = self.call_model(req, Phase::DuringModelCall).await;
        let cost_usd = (self.ledger.spent_usd() - spent_before).max(0.0);
        let mut fatal = None;
        let (outcome, detail, lines) = match result {
            Ok(reply) => match crate::agent::parse_compaction(&reply.text) {
                Ok(lines) => {
                    let after: u64 = lines.iter().map(|l| l.len() as u64 + 3).sum();
                    if after >= bytes_before {
                        // Not smaller: keeping it would only have cost money.
                        (CompactOutcome::Malformed, Some(format!("the summary ({after} bytes) is not smaller than the history ({bytes_before} bytes)")), None)
                    } else {
                        (CompactOutcome::Ok, None, Some(lines))
                    }
                }
                Err(e) => (CompactOutcome::Malformed, Some(clip_chars(&e, 300)), None),
            },
            Err(LapError::Budget(b)) => {
                // The ledger's refusal stands (it sets `blocked`: the run
                // ends BUDGET_EXHAUSTED at the top of the next lap); the
                // history is kept.
                (
                    CompactOutcome::Refused,
                    Some(clip_chars(&b.to_string(), 300)),
                    None,
                )
            }
            Err(LapError::Model(
                e @ (ModelError::Rejected { .. } | ModelError::RetriesExhausted { .. }),
            )) => {
                // The endpoint failed this call: the run goes on with the
                // history it had (the next call will meet the endpoint anyway).
                (
                    CompactOutcome::Error,
                    Some(clip_chars(&e.to_string(), 300)),
                    None,
                )
            }
            Err(e) => {
                // The clock, a recording miss, the ledger journal, a bill
                // above its reserve, a tampered goal: the loop's own endings.
                let d = clip_chars(&e.to_string(), 300);
                fatal = Some(e);
                (CompactOutcome::Error, Some(d), None)
            }
        };
        if let Some(lines) = lines {
            self.state.history_summary = lines;
        } else if outcome == CompactOutcome::Malformed
            && crate::mutants::active(crate::mutants::Mutant::CompactionTruncates)
        {
            let keep = self
                .state
                .history_summary
                .split_off(self.state.history_summary.len().saturating_sub(1));
            self.state.history_summary = keep;
        }
        let record = crate::state::Compaction {
            call_key,
            step: self.state.step,
            bytes_before,
            bytes_after: self.state.history_bytes(),
            cost_usd,
            outcome,
            detail,
        };
        self.events
            .emit(self.state.step, Event::Compaction(record.clone()));
        self.state.push_compaction(record);
        point(Phase::AfterCompactBeforeCheckpoint); // a kill here: the resume compacts again later, as compact/<n>
        match fatal {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// After a failed attempt (or one that parks its task), when `[memory]
    /// lessons` is on: one `lesson/<task>/a<n>` call, reserved and booked
    /// through `call_model` like every call, whose reply is admitted only by
    /// the harness's own checks (`lessons::admit`) and is data: it can only
    /// ever become a line of a later executor prompt's `<lessons>` block.
    /// Every outcome is recorded (report `lessons` / `lessons_refused`); a
    /// refused reserve leaves the ledger's `blocked` standing, a failed call
    /// lets the run go on, every other error is the loop's own ending. From
    /// 90% of the cap the run finishes only its current task, so a lesson is
    /// asked only when a retry of this task follows.
    async fn learn(
        &mut self,
        task: &Task,
        attempt: u32,
        failure: &str,
        observations: &str,
        retry_follows: bool,
    ) -> Result<(), LapError> {
        use crate::lessons::{LessonRefusal, RefusedLesson};
        if !self.spec.memory.as_ref().is_some_and(|m| m.lessons) {
            return Ok(());
        }
        let call_key = crate::lessons::call_key(&task.id, attempt);
        let not_asked = if self.ledger.winding_down() && !retry_follows {
            Some("the run is winding down (90% of the cap is spent) and no retry of this task follows: no lesson bought for tasks that will not run".to_string())
        } else if self.state.lesson_calls >= crate::lessons::LESSON_CALLS_MAX {
            Some(format!(
                "the run has made its {} lesson calls",
                crate::lessons::LESSON_CALLS_MAX
            ))
        } else {
            None
        };
        let mut fatal = None;
        let mut cost_usd = 0.0;
        let verdict = if let Some(why) = not_asked {
            Err((LessonRefusal::NotAsked, why))
        } else {
            self.state.lesson_calls += 1;
            let spent_before = self.ledger.spent_usd();
            let req = crate::lessons::lesson_request(
                &self.goal,
                self.spec.model_for(crate::model::types::CallRole::Lesson),
                task,
                attempt,
                failure,
                observations,
            );
            let result = self.call_model(req, Phase::DuringModelCall).await;
            cost_usd = (self.ledger.spent_usd() - spent_before).max(0.0);
            match result {
                Ok(reply) => crate::lessons::parse(&reply.text)
                    .map_err(|e| (LessonRefusal::Malformed, e))
                    .and_then(|c| {
                        let ctx = crate::lessons::AdmitContext {
                            task_text: crate::lessons::task_text(task),
                            observations,
                            workspace: Some(&self.workspace),
                            admitted: &self.state.lessons,
                        };
                        let admitted =
                            if crate::mutants::active(crate::mutants::Mutant::AdmitsEveryLesson) {
                                Ok((String::new(), crate::lessons::AnchorSource::Observation))
                            } else {
                                crate::lessons::admit(&c, &ctx)
                            };
                        admitted.map(|(anchor, anchor_in)| crate::lessons::Lesson {
                            call_key: call_key.clone(),
                            task_id: task.id.clone(),
                            attempt,
                            step: self.state.step,
                            constraint: c.constraint,
                            cause: c.cause,
                            workaround: c.workaround,
                            evidence: c.evidence,
                            anchor,
                            anchor_in,
                            cost_usd,
                        })
                    }),
                Err(LapError::Budget(b)) => Err((LessonRefusal::CallRefused, b.to_string())),
                Err(LapError::Model(
                    e @ (ModelError::Rejected { .. } | ModelError::RetriesExhausted { .. }),
                )) => Err((LessonRefusal::CallFailed, e.to_string())),
                Err(e) => {
                    let d = e.to_string();
                    fatal = Some(e);
                    Err((LessonRefusal::CallFailed, d))
                }
            }
        };
        let reason = verdict.as_ref().err().map(|(r, _)| *r);
        self.events.emit(
            self.state.step,
            Event::Lesson {
                call_key: call_key.clone(),
                task: task.id.clone(),
                reason,
            },
        );
        match verdict {
            Ok(lesson) => self.state.push_lesson(lesson),
            Err((reason, detail)) => self.state.push_lesson_refusal(RefusedLesson {
                call_key,
                task_id: task.id.clone(),
                attempt,
                step: self.state.step,
                reason,
                detail: clip_chars(&detail, 300),
                cost_usd,
            }),
        }
        if let Some(e) = fatal {
            return Err(e);
        }
        self.checkpoint() // the lesson (or its refusal) survives a crash in the retry
    }

    /// Reserve the worst case, call, book all four usage fields. Every
    /// attempt that may bill is paid from a reservation of its own (the gate
    /// reserves again after an attempt booked at its worst case), and the
    /// whole call is bounded by what is left of the run's wall clock.
    async fn call_model(
        &mut self,
        mut req: ModelRequest,
        phase: Phase,
    ) -> Result<ModelReply, LapError> {
        self.goal.assert_intact()?;
        self.clock_left(|| format!("before model call {}", req.call_key))?;
        self.spec.model.bound(&mut req);
        // The bytes that go on the wire bound the tokens the model reads.
        let body_len = self.client.wire_body(&req).to_string().len() as u64;
        let bound = CallBound::for_request(self.spec.model.protocol, body_len, &req);
        let res = self.ledger.reserve(
            req.role,
            &req.call_key,
            &req.model,
            bound.input_tokens_max,
            bound.output_tokens_max,
        )?;
        if req.trailing_notice.is_some() {
            // Counted only for requests actually sent, not ones the ledger refused.
            self.state.budget_notices += 1;
        }
        point(phase); // a kill here leaves a journaled reserve: booked at worst case on resume
        let deadline = self.clock_deadline();
        let mut gate = AttemptReserve::new(&mut self.ledger, req.role, res, bound, deadline);
        // A stop request abandons the call in flight (crate::stop).
        let result = tokio::select! {
            r = self.client.call_gated(&req, &mut gate) => r,
            signal = crate::stop::requested_wait() => {
                let open = gate.into_open();
                return Err(self.abandon_call(&req, open, signal));
            }
        };
        let open = gate.into_open();
        match result {
            Ok(reply) => {
                let Some(res) = open else {
                    return Err(LapError::Internal(format!(
                        "{}: a reply arrived with no reservation open to book it",
                        req.call_key
                    )));
                };
                let booked = self.ledger.record(res, reply.usage)?;
                point(Phase::BetweenLedgerRecordAndCheckpoint);
                self.state.ledger = self.ledger.snapshot().clone();
                self.events.emit(
                    self.state.step,
                    Event::ModelCall(ModelCall {
                        role: req.role,
                        call_key: req.call_key.clone(),
                        usage: reply.usage,
                        cost_usd: booked.cost_usd,
                        reserved_usd: booked.reserved_usd,
                        input_tokens_max: bound.input_tokens_max,
                        latency_ms: reply.latency_ms,
                        attempts: reply.attempts,
                        billed_unknown_attempts: reply.billed_unknown_attempts,
                        stop: reply.stop_reason.clone(),
                        notice: req.trailing_notice.is_some(),
                    }),
                );
                if booked.overbilled() {
                    return Err(LapError::BilledAboveReserve(BilledAboveReserve {
                        call_key: req.call_key.clone(),
                        reserved_usd: booked.reserved_usd,
                        billed_usd: booked.cost_usd,
                        input_tokens_max: bound.input_tokens_max,
                        output_tokens_max: bound.output_tokens_max,
                        spent_usd: self.ledger.spent_usd(),
                        hard_cap_usd: self.ledger.hard_cap_usd(),
                    }));
                }
                Ok(reply)
            }
            Err(e) => {
                // Still open: the last attempt billed nothing (or none was
                // made). Attempts that may have billed are already booked.
                if let Some(res) = open {
                    self.ledger.release(res)?;
                }
                self.state.ledger = self.ledger.snapshot().clone();
                let e = match e {
                    CallError::Model(m) => LapError::Model(m),
                    CallError::Stopped(r) => LapError::from(r),
                };
                self.note_model_error(&req, &e);
                Err(e)
            }
        }
    }

    /// A model call abandoned for a stop request: its open reservation (the
    /// attempt on the wire, which may bill) stays booked, at its worst case,
    /// as spent; the journal says so before the run is suspended.
    fn abandon_call(
        &mut self,
        req: &ModelRequest,
        open: Option<crate::ledger::Reservation>,
        signal: Signal,
    ) -> LapError {
        let booked = match open {
            Some(res) => match self.ledger.book_worst(res) {
                Ok(usd) => usd,
                Err(e) => return LapError::Ledger(e),
            },
            None => 0.0,
        };
        self.state.ledger = self.ledger.snapshot().clone();
        let e = LapError::Stopped {
            signal,
            during: format!(
                "model call {} (abandoned; ${booked:.6} booked as spent, its worst case)",
                req.call_key
            ),
        };
        self.note_model_error(req, &e);
        e
    }

    /// A model call that ended without a reply, in events.jsonl.
    fn note_model_error(&mut self, req: &ModelRequest, e: &LapError) {
        self.events.emit(
            self.state.step,
            Event::ModelError {
                role: req.role,
                call_key: req.call_key.clone(),
                error: e.to_string(),
            },
        );
    }

    /// When the run's wall clock runs out, as an `Instant` for the client
    /// (`None` only for a limit too far away to represent).
    fn clock_deadline(&self) -> Option<std::time::Instant> {
        let limit_ms = self.spec.wall_clock_limit_s * 1000.0;
        let left_ms = (limit_ms - self.elapsed_ms() as f64).max(0.0);
        std::time::Instant::now().checked_add(std::time::Duration::from_millis(
            left_ms.min(u64::MAX as f64) as u64,
        ))
    }

    fn complete(&mut self, task: Task, claim: Option<String>, how: VerifiedHow) {
        let mut commit = None;
        // Exactly the paths this task's tools wrote, in every attempt.
        let paths: Vec<String> = std::mem::take(&mut self.task_paths).into_iter().collect();
        if let (Some(g), Some(branch), None) =
            (&self.git, &self.state.git_branch, &self.state.git_disabled)
        {
            // On resume the commit may already exist (killed after commit,
            // before the checkpoint): never a second commit for one task.
            let existing = g.commits_for_task(&task.id);
            commit = match existing.first() {
                Some(c) => Some(c.clone()),
                None => match g.commit_task(&task.id, &task.description, branch, &paths) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        self.events.emit(
                            self.state.step,
                            Event::GitError(GitError {
                                task: Some(task.id.clone()),
                                detail: e.to_string(),
                            }),
                        );
                        None
                    }
                },
            };
            // A path this commit holds is no longer left uncommitted by an
            // earlier parked task (tools write whole files: its content is
            // this task's write).
            if commit.is_some() {
                for p in &mut self.state.parked {
                    p.uncommitted_paths.retain(|x| !paths.contains(x));
                }
            }
        }
        self.state.no_progress_streak = 0;
        self.state.push_history(format!(
            "{} verified: {}",
            task.id,
            clip_chars(&task.description, 120)
        ));
        self.events.emit(
            self.state.step,
            Event::TaskDone {
                task: task.id.clone(),
                how,
                commit: commit.clone(),
            },
        );
        self.state.completed.push(CompletedTask {
            id: task.id,
            description: task.description,
            verify: task.verify.describe(),
            step: self.state.step,
            model_claim: claim,
            how,
            commit,
        });
    }

    /// A tool call of the in-progress task wrote these workspace paths:
    /// remember them for its commit and journal them for a resume.
    fn note_writes(&mut self, task_id: &str, paths: &[String]) {
        self.task_paths.extend(paths.iter().cloned());
        if let Err(e) = self.writes.append(task_id, paths) {
            // The in-memory set still holds them; only a kill before the
            // commit would now leave them uncommitted (never misattributed).
            self.events.emit(
                self.state.step,
                Event::WritesJournalError {
                    task: task_id.to_string(),
                    detail: e.to_string(),
                },
            );
        }
    }

    /// A write that landed but may not be durable (its directory fsync
    /// failed) puts its path in doubt; a later successful write of the path
    /// (temp fsynced, renamed, directory fsynced) takes it out.
    fn note_doubt(&mut self, obs: &crate::tools::Observation) {
        if obs.is_error {
            for p in &obs.in_doubt {
                if !self.state.writes_in_doubt.iter().any(|d| d.path == *p) {
                    self.state.writes_in_doubt.push(crate::state::WriteInDoubt {
                        path: p.clone(),
                        error: clip_chars(&obs.content, 300),
                    });
                }
            }
        } else {
            self.state
                .writes_in_doubt
                .retain(|d| !obs.wrote.contains(&d.path));
        }
    }

    fn park(&mut self, task: Task, reason: String) {
        self.state.no_progress_streak += 1;
        self.state
            .push_history(format!("{} parked: {}", task.id, clip_chars(&reason, 160)));
        self.events.emit(
            self.state.step,
            Event::TaskParked {
                task: task.id.clone(),
                reason: reason.clone(),
            },
        );
        self.state.parked.push(ParkedTask {
            id: task.id,
            description: task.description,
            reason,
            step: self.state.step,
            // Left in the work tree for a human, never committed under
            // another task (the next commit names only its own paths).
            uncommitted_paths: std::mem::take(&mut self.task_paths).into_iter().collect(),
        });
        point(Phase::AfterParkBeforeCheckpoint);
    }

    fn checkpoint(&mut self) -> Result<(), LapError> {
        self.goal.assert_intact()?;
        // Never checkpoint over a state dir a confined process changed.
        crate::state_seal::intact()?;
        self.state.ledger = self.ledger.snapshot().clone();
        self.state.elapsed_ms = self.clock.elapsed_ms();
        checkpoint::save(&self.state_dir, &self.state)?;
        Ok(())
    }

    fn predicate(&mut self) -> CheckResult {
        let deadline = Some(self.deadline());
        let res = match &self.spec.predicate {
            Predicate::Command(c) => run_check_by(c, self.workspace.root(), deadline),
            Predicate::Check(name) => match self.spec.checks.get(name) {
                Some(c) => run_check_by(c, self.workspace.root(), deadline),
                None => CheckResult {
                    passed: false,
                    exit_code: None,
                    timed_out: false,
                    cut_by_run_clock: false,
                    cut_by_stop: false,
                    output: format!("check {name:?} not defined"),
                    could_not_run: true,
                },
            },
        };
        self.last_predicate = Some(res.clone());
        res
    }

    fn verify_ctx(&self) -> VerifyContext<'_> {
        VerifyContext {
            workspace: &self.workspace,
            outbox: &self.outbox,
            checks: &self.spec.checks,
            deadline: Some(self.deadline()),
        }
    }

    fn workspace_listing(&self) -> String {
        let checks = std::collections::BTreeMap::new();
        let allow = vec!["list_files".to_string()];
        let tb = ToolBox {
            workspace: &self.workspace,
            outbox: &self.outbox,
            checks: &checks,
            allowlist: &allow,
            deadline: None,
            command: None,
        };
        let call = crate::model::types::ToolCall {
            id: "listing".into(),
            name: "list_files".into(),
            input: json!({"path": "."}),
        };
        clip_chars(&tb.dispatch(&call).content, 4000)
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

    /// Suspend the run for a stop request (crate::stop). Not an ending:
    /// `finished` stays unset and the task in flight stays in flight, so the
    /// next `harness run` verifies it before anything runs (the resume rule a
    /// SIGKILL relies on). The checkpoint is written, then the report that
    /// says the run was stopped, its page, and the stop notice.
    async fn suspend(mut self, signal: Signal, cut: Option<String>) -> Suspended {
        let asked_at = crate::stop::requested_at();
        let checkpoint_error = self.checkpoint().err().map(|e| e.to_string());
        let resumable = matches!(checkpoint::load(&self.state_dir, None), Ok(Some(_)));
        let exit_code = crate::stop::exit_code(signal);
        self.events.emit(
            self.state.step,
            Event::Stopped {
                signal: signal.as_str().into(),
                exit_code,
                in_flight: self.state.in_progress.as_ref().map(|t| t.id.clone()),
                cut: cut.clone(),
            },
        );
        let s = &self.state;
        let ids = |v: &mut dyn Iterator<Item = &String>| v.cloned().collect::<Vec<_>>();
        let report = crate::report::StoppedReport {
            stopped: crate::report::StopDetail {
                signal: signal.as_str().into(),
                exit_code,
                at_unix_ms: now_unix_ms(),
                grace_s: crate::stop::STOP_GRACE_S,
                took_ms: asked_at.map_or(0, |t| t.elapsed().as_millis() as u64),
                cut,
                resumable,
                checkpoint_error,
                resume: format!(
                    "re-run the same `harness run` on {} to resume: the run goes on from its checkpoint, the task in flight verified first",
                    self.state_dir.display()
                ),
            },
            run_id: s.run_id.clone(),
            goal: self.goal.text().to_string(),
            goal_sha256: s.goal_sha256.clone(),
            spend_usd: self.ledger.spent_usd(),
            hard_cap_usd: self.ledger.hard_cap_usd(),
            steps: s.step,
            elapsed_ms: self.clock.elapsed_ms(),
            resumes: s.resumes,
            verified: ids(&mut s.completed.iter().map(|c| &c.id)),
            parked: ids(&mut s.parked.iter().map(|p| &p.id)),
            queue_left: ids(&mut s.queue.iter().map(|t| &t.id)),
            in_flight_task: s.in_progress.as_ref().map(|t| t.id.clone()),
        };
        let delivery = crate::report::deliver_stop_notice(
            &Ends::of(&self.spec).alerts,
            &self.state_dir,
            &report,
        )
        .await;
        let report_written = match report.write(&self.state_dir) {
            Ok(()) => {
                if let Err(e) = crate::page::write_stopped(&report, &self.state_dir) {
                    crate::console::err_line(&format!("harness: the page was not written: {e}"));
                }
                true
            }
            Err(e) => {
                crate::console::err_line(&format!(
                    "harness: the stop report was NOT written to {}: {e}; it follows as one line of JSON",
                    self.state_dir.join(crate::report::FILE_NAME).display()
                ));
                crate::console::err_line(&serde_json::to_string(&report).unwrap_or_default());
                false
            }
        };
        for d in delivery {
            crate::console::err_line(&format!("harness: {d}"));
        }
        Suspended {
            report,
            report_written,
        }
    }

    /// End the run: settle an in-flight task by verifying it, write the final
    /// checkpoint (so a re-run re-reports), the report, and the alert.
    async fn finish(
        mut self,
        ending: Ending,
        detail: Option<String>,
        kind: Option<ErrorKind>,
    ) -> Outcome {
        crate::fault_injection::panic_point("finish_start");
        if let Some(task) = self.state.in_progress.take() {
            let outcome = task.verify.run(&self.verify_ctx());
            match outcome {
                VerifyOutcome::Done => self.complete(task, None, VerifiedHow::AtEnd),
                // No verdict on the work: parked for a human, and said so.
                VerifyOutcome::NotJudged { detail } => {
                    let r = format!("{NOT_JUDGED_PREFIX}: the run ended ({ending}) while this task was in progress and {detail}; it may be done, not started or partly done");
                    self.park(task, r)
                }
                other => {
                    let r = format!(
                        "run ended ({ending}) while this task was in progress; verify says {}",
                        match other {
                            VerifyOutcome::PartiallyApplied { detail } =>
                                format!("partially applied: {detail}"),
                            VerifyOutcome::CouldNotRun { detail } =>
                                format!("not started: {detail}"),
                            VerifyOutcome::Done
                            | VerifyOutcome::NotStarted
                            | VerifyOutcome::NotJudged { .. } => "not started".into(),
                        }
                    );
                    self.park(task, r)
                }
            }
        }
        let predicate_met = match &self.last_predicate {
            Some(p) if ending != Ending::UnrecoverableError => p.passed,
            _ => self.predicate().passed,
        };
        // A confined process changed the state dir (the kernel let it
        // through): whatever the run reached, its ledger and checkpoint
        // cannot be trusted, and that is how it ends.
        let (ending, detail, kind) = match crate::state_seal::intact() {
            Err(e) if kind != Some(ErrorKind::StateTampered) => (
                Ending::UnrecoverableError,
                Some(e.to_string()),
                Some(ErrorKind::StateTampered),
            ),
            _ => (ending, detail, kind),
        };
        // GOAL_MET only ever comes from the predicate; assert what must not happen.
        debug_assert!(ending != Ending::GoalMet || predicate_met);
        self.state.ledger = self.ledger.snapshot().clone();
        self.state.finished = Some(Finished {
            ending,
            detail: detail.clone(),
            error_kind: kind,
        });
        let ckpt_err =
            if ending == Ending::UnrecoverableError && kind == Some(ErrorKind::GoalTampered) {
                None // never write a checkpoint from a state whose goal we no longer trust
            } else {
                checkpoint::save(&self.state_dir, &self.state).err()
            };
        crate::fault_injection::panic_point("finish_after_checkpoint");
        let mut report = Report::build(
            &self.state,
            self.goal.text(),
            ending,
            detail,
            kind,
            predicate_met,
            self.elapsed_ms(),
        );
        if let Some(e) = ckpt_err {
            note_final_checkpoint_failed(&mut report, &e);
        }
        self.events.emit(
            self.state.step,
            Event::Ending(EndingEvent {
                ending,
                kind: None,
                exit_code: Some(ending.exit_code()),
                detail: report.detail.clone(),
            }),
        );
        let report_written = publish(&mut report, &Ends::of(&self.spec), &self.state_dir).await;
        Outcome {
            ending,
            report,
            report_written,
        }
    }
}

/// Refusal reasons are part of the public vocabulary of the report.
pub fn refusal_kind(r: &Refusal) -> ErrorKind {
    r.refusal_kind().error_kind()
}
