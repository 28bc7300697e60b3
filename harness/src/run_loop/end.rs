//! Endings: `finish` (settle the task in flight, the final checkpoint, the
//! report), `suspend` for a stop request, the early end of a run that could
//! not start, the ending of a panicked run built from disk, and `publish`,
//! the last act of every ending.

use super::rules::Rules;
use super::{Outcome, Runner, Suspended};
use crate::checkpoint::{self, SaveError};
use crate::clock::now_unix_ms;
use crate::ending::{Ending, ErrorKind};
use crate::events::{EndingEvent, Event, EventLog};
use crate::goal::Goal;
use crate::ledger::{Ledger, PriceTable};
use crate::report::Report;
use crate::spec::{AlertSpec, RunSpec};
use crate::state::{Finished, ParkedTask, RunState, VerifiedHow};
use crate::task_writes::TaskWrites;
use crate::verify::VerifyOutcome;
use nix::sys::signal::Signal;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Why a task in flight at an ending is parked without a verdict.
const NOT_JUDGED_PREFIX: &str = "not judged";

/// What an early end is reported from: the goal, where endings are
/// published, the event log, and the state as far as it was read.
pub(super) struct Opening {
    pub(super) goal: Goal,
    pub(super) ends: Ends,
    pub(super) events: EventLog,
    /// The run's rules (`rules.rs`), chosen once when the run opens.
    pub(super) rules: Rules,
}

/// Why a run could not start: UNRECOVERABLE_ERROR of this kind.
pub(super) struct CannotStart {
    pub(super) kind: ErrorKind,
    pub(super) detail: String,
}

/// One ending as it is told: every report.json of an ending and every
/// `ending` event in the journal is built from a draft (`report`, `event`),
/// so the two never disagree on the ending, its detail or its kind.
pub(super) struct ReportDraft<'a> {
    pub(super) state: &'a RunState,
    pub(super) goal: &'a Goal,
    pub(super) ending: Ending,
    pub(super) detail: Option<String>,
    /// Why the run is UNRECOVERABLE_ERROR; None for every other ending.
    pub(super) kind: Option<ErrorKind>,
    pub(super) predicate_met: bool,
    pub(super) elapsed_ms: u64,
    /// The final checkpoint could not be written: said in the report.
    pub(super) checkpoint_error: Option<SaveError>,
}

/// Who decided an ending, which is how its event is journaled (readers of
/// events.jsonl rely on the two shapes): the loop's own ending with its
/// exit code (its kind is in the report); an ending the loop never reached
/// (the run could not start, or panicked) with the kind that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DecidedBy {
    Loop,
    Outside,
}

/// Where an ending goes: its event into the run's journal; its alert,
/// report.json and page into the state dir (`publish`).
pub(super) struct Outlet<'a> {
    pub(super) events: &'a mut EventLog,
    pub(super) ends: &'a Ends,
    pub(super) state_dir: &'a Path,
}

impl ReportDraft<'_> {
    /// The report, before `publish` adds the drift bands and the alert's
    /// delivery.
    pub(super) fn report(&self) -> Report {
        let mut report = Report::build(
            self.state,
            self.goal.text(),
            self.ending,
            self.detail.clone(),
            self.kind,
            self.predicate_met,
            self.elapsed_ms,
        );
        if let Some(e) = &self.checkpoint_error {
            note_final_checkpoint_failed(&mut report, e);
        }
        report
    }

    /// The journal's `ending` event, in the shape `by` calls for.
    pub(super) fn event(&self, by: DecidedBy) -> Event {
        let (kind, exit_code) = match by {
            DecidedBy::Loop => (None, Some(self.ending.exit_code())),
            DecidedBy::Outside => (self.kind, None),
        };
        Event::Ending(EndingEvent {
            ending: self.ending,
            kind,
            exit_code,
            detail: self.detail.clone(),
        })
    }

    /// The last acts of an ending: the report, its event in the journal,
    /// then `publish` (the alert, report.json, the page).
    pub(super) async fn close(self, by: DecidedBy, out: Outlet<'_>) -> Outcome {
        let mut report = self.report();
        out.events.emit(self.state.step, self.event(by));
        let report_written = publish(&mut report, out.ends, out.state_dir).await;
        Outcome {
            ending: self.ending,
            report,
            report_written,
        }
    }
}

/// End a run that could not start (a refused checkpoint, an unusable state
/// dir, ledger journal, workspace or endpoint): report it and alert a human,
/// exactly like any other UNRECOVERABLE_ERROR.
pub(super) async fn fail_early(
    mut state: RunState,
    why: CannotStart,
    o: &mut Opening,
    state_dir: &Path,
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
    let draft = ReportDraft {
        state: &state,
        goal: &o.goal,
        ending: Ending::UnrecoverableError,
        detail: Some(why.detail),
        kind: Some(why.kind),
        predicate_met: false,
        elapsed_ms: state.elapsed_ms,
        checkpoint_error: None,
    };
    let out = Outlet {
        events: &mut o.events,
        ends: &o.ends,
        state_dir,
    };
    draft.close(DecidedBy::Outside, out).await
}

/// A run that had already ended: re-reported, never run again.
pub(super) async fn rereport(
    state: &RunState,
    f: &Finished,
    o: &mut Opening,
    state_dir: &Path,
) -> Outcome {
    crate::fault_injection::panic_point("rereport");
    o.events
        .emit(state.step, Event::Rereport { ending: f.ending });
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
            // at-least-once, never at-most-once). Its ending event is
            // already in the journal.
            let draft = ReportDraft {
                state,
                goal: &o.goal,
                ending: f.ending,
                detail: f.detail.clone(),
                kind: f.error_kind,
                predicate_met: f.ending == Ending::GoalMet,
                elapsed_ms: 0,
                checkpoint_error: None,
            };
            let mut r = draft.report();
            let written = publish(&mut r, &o.ends, state_dir).await;
            (r, written)
        }
    };
    Outcome {
        ending: f.ending,
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
    let mut o = Opening {
        goal,
        ends: Ends::of(spec),
        events: EventLog::open(state_dir),
        rules: Rules::of_process(),
    };
    fail_early(s, CannotStart { kind, detail }, &mut o, state_dir).await
}

/// The last act of every ending: the alert (file and webhook), then
/// report.json. Never fails and never changes the ending: a report that
/// cannot be written (a full disk) is said plainly on stderr, followed by the
/// report itself as one JSON line, so the morning still has it. Returns
/// whether report.json was written.
/// What publishing an ending needs from the spec: where the alert goes, and
/// the drift bands the report (and its page) shows the run against.
pub(super) struct Ends {
    alerts: AlertSpec,
    bands: crate::report::DriftBands,
}

impl Ends {
    pub(super) fn of(spec: &RunSpec) -> Ends {
        Ends {
            alerts: spec.alerts.clone(),
            bands: crate::report::DriftBands {
                prune_above: spec.drift_prune_above,
                halt_above: spec.drift_halt_above,
            },
        }
    }
}

pub(super) async fn publish(report: &mut Report, ends: &Ends, state_dir: &Path) -> bool {
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
pub(super) fn write_page(report: &Report, state_dir: &Path) {
    if let Err(e) = crate::page::write(report, state_dir) {
        crate::console::err_line(&format!(
            "harness: the morning page was NOT written to {}: {e} (report.json was)",
            state_dir.join(crate::page::FILE_NAME).display()
        ));
    }
}

/// What the ending of a panicked run is built from, taken before the run
/// started: the spec's goal, alerts and prices, and where the state is.
pub(super) struct AfterPanic {
    goal: String,
    ends: Ends,
    hard_cap_usd: f64,
    prices: PriceTable,
    state_dir: PathBuf,
}

impl AfterPanic {
    pub(super) fn of(spec: &RunSpec, state_dir: &Path) -> AfterPanic {
        AfterPanic {
            goal: spec.goal.clone(),
            ends: Ends::of(spec),
            hard_cap_usd: spec.hard_cap_usd,
            prices: spec.prices.clone(),
            state_dir: state_dir.to_path_buf(),
        }
    }
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
pub(super) async fn end_after_panic(after: AfterPanic, message: String) -> Outcome {
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
    book_from_journal(
        &mut state,
        after.hard_cap_usd,
        after.prices,
        state_dir,
        &mut notes,
    );
    park_in_flight(&mut state, state_dir);
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
    let checkpoint_error = if checkpoint_usable {
        checkpoint::save(state_dir, &state).err()
    } else {
        None
    };
    let draft = ReportDraft {
        state: &state,
        goal: &goal,
        ending: Ending::UnrecoverableError,
        detail: Some(detail),
        kind: Some(kind),
        predicate_met: false,
        elapsed_ms: state.elapsed_ms,
        checkpoint_error,
    };
    let out = Outlet {
        events: &mut events,
        ends: &after.ends,
        state_dir,
    };
    draft.close(DecidedBy::Outside, out).await
}

/// The spend of a panicked run: the ledger journal's (a call in flight at
/// its worst case), unless the journal cannot be read or books less than
/// the checkpoint, which is then said in `notes`.
fn book_from_journal(
    state: &mut RunState,
    hard_cap_usd: f64,
    prices: PriceTable,
    state_dir: &Path,
    notes: &mut Vec<String>,
) {
    let mut ledger = Ledger::new(hard_cap_usd, prices);
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
}

/// The task in flight at a panic, parked unverified: nothing of the run's
/// own code runs again.
fn park_in_flight(state: &mut RunState, state_dir: &Path) {
    if let Some(task) = state.in_progress.take() {
        // What its tools wrote, from the journal (the panicked task's memory
        // is gone): left uncommitted in the work tree for the human.
        let uncommitted_paths = TaskWrites::new(state_dir)
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
    /// Suspend the run for a stop request (crate::stop). Not an ending:
    /// `finished` stays unset and the task in flight stays in flight, so the
    /// next `harness run` verifies it before anything runs (the resume rule a
    /// SIGKILL relies on). The checkpoint is written, then the report that
    /// says the run was stopped, its page, and the stop notice.
    pub(super) async fn suspend(mut self, signal: Signal, cut: Option<String>) -> Suspended {
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
            in_flight_task: (s.in_progress.as_ref())
                .filter(|_| self.rules.stop_report_names_in_flight)
                .map(|t| t.id.clone()),
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

    /// The task in flight when the run ends, settled by its verify: done is
    /// verified at end, anything else parked (said why). Returns why its
    /// effects may not be durable (a write of it failed with an I/O error),
    /// when so: it is then parked whatever its verify says.
    fn settle_in_flight(&mut self, ending: Ending) -> Option<String> {
        let task = self.state.in_progress.take()?;
        let outcome = task.verify.run(&self.verify_ctx());
        let doubt = self
            .in_flight_write_in_doubt()
            .filter(|_| self.rules.in_doubt_parks);
        match outcome {
            // Verified means durable: what the page cache shows after a
            // failed write may not survive a power cut (found by bench
            // chaos: `--seed 1 --mode power-loss --replay-kill 2446`).
            VerifyOutcome::Done => match &doubt {
                Some(what) => {
                    let r = format!("the run ended ({ending}) while this task was in progress; verify says done, but {what} failed with an I/O error, so its effects may not be durable");
                    self.park(task, r)
                }
                None => self.complete(task, None, VerifiedHow::AtEnd),
            },
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
                        VerifyOutcome::CouldNotRun { detail } => format!("not started: {detail}"),
                        VerifyOutcome::Done
                        | VerifyOutcome::NotStarted
                        | VerifyOutcome::NotJudged { .. } => "not started".into(),
                    }
                );
                self.park(task, r)
            }
        }
        doubt
    }

    /// End the run: settle an in-flight task by verifying it, write the final
    /// checkpoint (so a re-run re-reports), the report, and the alert.
    pub(super) async fn finish(
        mut self,
        ending: Ending,
        detail: Option<String>,
        kind: Option<ErrorKind>,
    ) -> Outcome {
        crate::fault_injection::panic_point("finish_start");
        let doubt = self.settle_in_flight(ending);
        let predicate_met = match &self.last_predicate {
            Some(p) if ending != Ending::UnrecoverableError => p.passed,
            _ => self.predicate().passed,
        };
        // GOAL_MET never stands on a write in doubt (as `ended` says for the
        // writes in doubt a lap saw).
        let (ending, detail, kind) = match doubt {
            Some(what) if ending == Ending::GoalMet => (
                Ending::UnrecoverableError,
                Some(format!("the goal predicate passed, but the task in flight at the end had {what} fail with an I/O error, so what it measured may not survive a power cut")),
                Some(ErrorKind::WriteNotDurable),
            ),
            _ => (ending, detail, kind),
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
        let checkpoint_error =
            if ending == Ending::UnrecoverableError && kind == Some(ErrorKind::GoalTampered) {
                None // never write a checkpoint from a state whose goal we no longer trust
            } else {
                checkpoint::save(&self.state_dir, &self.state).err()
            };
        crate::fault_injection::panic_point("finish_after_checkpoint");
        let draft = ReportDraft {
            state: &self.state,
            goal: &self.goal,
            ending,
            detail,
            kind,
            predicate_met,
            elapsed_ms: self.clock.elapsed_ms(),
            checkpoint_error,
        };
        let ends = Ends::of(&self.spec);
        let out = Outlet {
            events: &mut self.events,
            ends: &ends,
            state_dir: &self.state_dir,
        };
        let outcome = draft.close(DecidedBy::Loop, out).await;
        if ending == Ending::GoalMet && !self.rules.work_kept_after_report {
            self.undo_verified_work();
        }
        outcome
    }
}

impl Runner {
    /// `Mutant::UndoneAfterReport`: remove from the workspace every file a
    /// verified task committed, after the report said GOAL_MET (a cleanup
    /// that undoes the work the report stands on).
    fn undo_verified_work(&self) {
        let Some(git) = &self.git else {
            return;
        };
        for task in &self.state.completed {
            for sha in git.commits_for_task(&task.id) {
                for path in git.commit_paths(&sha).unwrap_or_default() {
                    let _ = std::fs::remove_file(self.workspace.root().join(path));
                }
            }
        }
    }
}
