//! Start-up: from a spec and a state dir to a `Runner` ready for its first
//! lap, or the one early end (`EarlyEnd`) that answers without a lap: the
//! run could not start (UNRECOVERABLE_ERROR through `end::fail_early`), it
//! had already ended (re-reported), or a raise of a limit was refused.

use super::end::{fail_early, rereport, CannotStart, Ends, Opening};
use super::rules::Rules;
use super::{Raise, RunEnd, RunOptions, Runner};
use crate::checkpoint;
use crate::clock::now_unix_ms;
use crate::ending::{Ending, ErrorKind};
use crate::events::{Event, EventLog, RunOpened};
use crate::gitwork::GitWork;
use crate::goal::Goal;
use crate::ledger::Ledger;
use crate::model::client::{EndpointConfig, ModelClient, RetryPolicy};
use crate::outbox::Outbox;
use crate::spec::RunSpec;
use crate::state::{Finished, RunState};
use crate::task_writes::TaskWrites;
use crate::workspace::Workspace;
use std::collections::BTreeSet;
use std::path::Path;

/// Why `open` gave no Runner.
pub(super) enum EarlyEnd {
    /// The run could not start (a refused checkpoint, an unusable state
    /// dir, ledger journal, workspace or endpoint).
    Failed(Box<(Opening, RunState)>, CannotStart),
    /// The run had already ended: re-reported, never run again.
    Ended(Box<(Opening, RunState)>, Finished),
    /// A raise of a limit, refused before anything was changed.
    Refused(String),
}

impl EarlyEnd {
    /// The one early-end path: every way `open` ends a run is answered here.
    pub(super) async fn end(self, state_dir: &Path) -> RunEnd {
        match self {
            EarlyEnd::Failed(at, why) => {
                let (mut o, state) = *at;
                fail_early(state, why, &mut o, state_dir).await.into()
            }
            EarlyEnd::Ended(at, f) => {
                let (mut o, state) = *at;
                rereport(&state, &f, &mut o, state_dir).await.into()
            }
            EarlyEnd::Refused(why) => RunEnd::Refused(why),
        }
    }
}

fn failed(o: Opening, state: RunState, kind: ErrorKind, detail: String) -> EarlyEnd {
    EarlyEnd::Failed(Box::new((o, state)), CannotStart { kind, detail })
}

/// A state for a run whose own could not be read: reported as `unknown`.
fn unknown_state(goal: &Goal, hard_cap: f64) -> RunState {
    let mut s = RunState::new("unknown".into(), goal.sha256().to_string(), now_unix_ms());
    s.hard_cap_usd = hard_cap;
    s
}

/// Open (or resume) the run in `state_dir`: its state, ledger, workspace
/// and endpoint, with the start (or resume) event written. Returns the
/// Runner and whether the run resumed.
pub(super) async fn open(
    mut spec: RunSpec,
    state_dir: &Path,
    opts: RunOptions,
) -> Result<(Runner, bool), EarlyEnd> {
    let goal = Goal::new(spec.goal.clone());
    // main creates it too; the library must not depend on that.
    let dir_err = std::fs::create_dir_all(state_dir).err();
    crate::state_seal::seal(state_dir);
    let mut o = Opening {
        goal,
        events: EventLog::open(state_dir),
        ends: Ends::of(&spec),
        rules: Rules::of_process(),
    };
    let hard_cap = spec.hard_cap_usd;

    if let Some(e) = dir_err {
        let s = unknown_state(&o.goal, hard_cap);
        let d = format!("cannot create state dir {}: {e}", state_dir.display());
        return Err(failed(o, s, ErrorKind::StateDir, d));
    }
    // Load or start. Every refusal is UNRECOVERABLE_ERROR with the refusal
    // named; the refused file is left untouched for a human to inspect.
    let loaded = checkpoint::load(state_dir, Some(o.goal.sha256()));
    let (mut state, resumed) = match loaded {
        Ok(Some(s)) => (s, true),
        Ok(None) => {
            let mut s = RunState::new(
                format!("run-{}-{}", now_unix_ms(), std::process::id()),
                o.goal.sha256().to_string(),
                now_unix_ms(),
            );
            s.hard_cap_usd = hard_cap;
            (s, false)
        }
        Err(refusal) => {
            let s = unknown_state(&o.goal, hard_cap);
            let kind = refusal.refusal_kind().error_kind();
            return Err(failed(o, s, kind, format!("refused to resume: {refusal}")));
        }
    };
    // The cap the run was under when it was last checkpointed (the one a
    // BUDGET_EXHAUSTED run ended on: the spec's, a raise, or a --max-usd).
    let ended_cap = state.hard_cap_usd;
    state.hard_cap_usd = hard_cap;
    if let Some(raise) = opts.raise {
        if let Err(why) = raise_limit(&mut state, raise, &spec, ended_cap, state_dir, &mut o) {
            return Err(EarlyEnd::Refused(why));
        }
    }
    let stands = o.rules.every_ending_stands;
    if let Some(f) = (state.finished.clone()).filter(|f| stands || f.ending == Ending::GoalMet) {
        return Err(EarlyEnd::Ended(Box::new((o, state)), f));
    }

    // A stopped run resumes: its stop report no longer says where it stands
    // (kept beside, for the record, until the run ends or stops again).
    if crate::report::StoppedReport::load(state_dir).is_ok() {
        let _ = std::fs::rename(
            state_dir.join(crate::report::FILE_NAME),
            state_dir.join(crate::report::STOPPED_FILE_NAME),
        );
    }
    let parts = match Parts::open(&mut spec, &mut state, &opts, state_dir, &o.rules) {
        Ok(p) => p,
        Err(why) => return Err(failed(o, state, why.kind, why.detail)),
    };
    let command = opts.command.clone();
    let mut r = parts.runner(spec, state, o, state_dir, &opts);
    let opened = RunOpened {
        run_id: r.state.run_id.clone(),
        spent_usd: r.ledger.spent_usd(),
        command: (!command.is_empty()).then(|| crate::events::RunCommand {
            argv: command,
            workspace: r.spec.workspace.display().to_string(),
            wall_clock_limit_s: r.spec.wall_clock_limit_s,
            utc_offset_s: crate::clock::local_utc_offset_s(),
            started_by: crate::events::StartedBy::from_env(),
        }),
    };
    r.events.emit(
        r.state.step,
        if resumed {
            Event::Resume(opened)
        } else {
            Event::Start(opened)
        },
    );
    Ok((r, resumed))
}

/// What a Runner works with beside its spec and state, each of which can
/// refuse the start.
struct Parts {
    ledger: Ledger,
    workspace: Workspace,
    outbox: Outbox,
    client: ModelClient,
    git: Option<GitWork>,
    check_tmp: Option<tempfile::TempDir>,
}

impl Parts {
    fn open(
        spec: &mut RunSpec,
        state: &mut RunState,
        opts: &RunOptions,
        state_dir: &Path,
        rules: &Rules,
    ) -> Result<Parts, CannotStart> {
        let ledger = open_ledger(spec, state, opts.max_usd, state_dir)?;
        let workspace = Workspace::open(&spec.workspace).map_err(|e| CannotStart {
            kind: ErrorKind::Workspace,
            detail: format!("workspace {}: {e}", spec.workspace.display()),
        })?;
        let outbox = Outbox::new(
            spec.outbox
                .clone()
                .unwrap_or_else(|| state_dir.join("outbox.jsonl")),
        );
        let client = connect(spec, opts, rules).map_err(|detail| CannotStart {
            kind: ErrorKind::EndpointConfig,
            detail,
        })?;
        // The run's own repository under the state dir (crate::gitwork):
        // never the workspace's `.git`, which checks can write. One that
        // cannot be made commits nothing in this run, as a branch that
        // cannot be made does (report: git_disabled).
        let git = match GitWork::for_run(workspace.root(), state_dir) {
            Ok(g) => g,
            Err(e) => {
                state.git_disabled.get_or_insert(format!(
                    "the run's git repository could not be made from the workspace's ({e}); nothing is committed in this run"
                ));
                None
            }
        };
        // Checks get a private TMPDIR, removed when the run ends (the Runner
        // holds it; a killed run's is swept by the next: crate::check_tmp);
        // without one they fall back to the system temp dir.
        let check_tmp = crate::check_tmp::create().ok();
        if let Some(t) = &check_tmp {
            spec.set_check_tmpdir(t.path());
        }
        Ok(Parts {
            ledger,
            workspace,
            outbox,
            client,
            git,
            check_tmp,
        })
    }

    fn runner(
        self,
        spec: RunSpec,
        state: RunState,
        o: Opening,
        state_dir: &Path,
        opts: &RunOptions,
    ) -> Runner {
        #[cfg(not(feature = "test-hooks"))]
        let _ = opts;
        Runner {
            clock: crate::clock::RunClock::resume_from(state.elapsed_ms),
            spec,
            goal: o.goal,
            state,
            ledger: self.ledger,
            client: self.client,
            workspace: self.workspace,
            outbox: self.outbox,
            git: self.git,
            state_dir: state_dir.to_path_buf(),
            events: o.events,
            last_predicate: None,
            plan_note: None,
            #[cfg(feature = "test-hooks")]
            tamper_goal_before_lap: opts.tamper_goal_before_lap,
            fresh_predicate: None,
            clock_ran_out: false,
            writes: TaskWrites::new(state_dir),
            task_paths: BTreeSet::new(),
            attempt_io_failed: None,
            _check_tmp: self.check_tmp,
            rules: o.rules,
        }
    }
}

/// The run's ledger from its journal, under the cap this command runs
/// under; the state takes its figures.
fn open_ledger(
    spec: &mut RunSpec,
    state: &mut RunState,
    max_usd: Option<f64>,
    state_dir: &Path,
) -> Result<Ledger, CannotStart> {
    let journal = |detail| CannotStart {
        kind: ErrorKind::LedgerJournal,
        detail,
    };
    let mut ledger =
        Ledger::new(spec.hard_cap_usd, spec.prices.clone()).for_protocol(spec.model.protocol);
    ledger
        .open_journal(&state_dir.join("ledger.jsonl"))
        .map_err(|e| journal(e.to_string()))?;
    // Money the checkpoint knows about must still be in the journal: a journal
    // that lost money is refused, never silently trusted.
    if ledger.spent_usd() + 1e-9 < state.ledger.spent_usd {
        return Err(journal(format!(
            "ledger journal books ${:.6} but the checkpoint recorded ${:.6}",
            ledger.spent_usd(),
            state.ledger.spent_usd
        )));
    }
    ledger.set_blocked(state.ledger.blocked);
    state.ledger = ledger.snapshot().clone();
    // A raised limit is the journal's from the raise on, whatever the spec
    // says; `--max-usd` tightens it for this command only, said on stderr
    // when it is below a raise (the raise stays in the journal).
    if let Some(x) = max_usd {
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
    Ok(ledger)
}

/// The model endpoint's client, or why the spec's endpoint is unusable.
fn connect(spec: &RunSpec, opts: &RunOptions, rules: &Rules) -> Result<ModelClient, String> {
    let base_url = opts
        .base_url_override
        .clone()
        .unwrap_or_else(|| spec.model.base_url.clone());
    ModelClient::new(EndpointConfig {
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
    .map(|c| c.with_sampling(sampling(spec, rules)))
    .map_err(|e| e.to_string())
}

/// The spec's sampling, as every request carries it (unless a broken
/// variant sends requests off the recording: `rules::OffTheRecording`).
fn sampling(spec: &RunSpec, rules: &Rules) -> crate::model::Sampling {
    let mut s = spec.model.sampling();
    if let Some(off) = rules.off_the_recording {
        off.sampling(&mut s);
    }
    s
}

/// A raise of the limit whose ending is `needs` goes on only from a run
/// that ended `needs`; `flag` names the raise in the refusal.
fn ended_on(state: &RunState, flag: &str, needs: Ending, rules: &Rules) -> Result<(), String> {
    let any = !rules.raise_needs_its_ending;
    match &state.finished {
        Some(f) if f.ending != needs && !any => Err(format!("{flag}: the run ended {}, not {needs}: only a run that ended on this limit goes on under a raised one", f.ending)),
        Some(_) => Ok(()),
        None => Err(format!("{flag}: the run has not ended (its checkpoint holds no ending): a limit is raised only after the run ended {needs}; to resume it, run the same command without {flag}")),
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
    o: &mut Opening,
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
                o.goal.assert_intact().map_err(|e| e.to_string())?;
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
    ended_on(state, flag, needs, &o.rules)?;
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
    o.events.emit(state.step, Event::LimitRaised(r));
    o.goal.assert_intact().map_err(|e| e.to_string())?;
    crate::chaos_hook::point(crate::chaos_hook::Phase::AfterRaiseBeforeCheckpoint);
    checkpoint::save(state_dir, state).map_err(|e| {
        format!("{flag}: the raise is journaled but the checkpoint could not be written ({e}); run the same command again")
    })
}
