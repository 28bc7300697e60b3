//! The policy: the priority order of the seven endings (`should_stop`), the
//! one loop (`drive`), the one place that maps an error's class to an ending
//! or to the loop going on (`respond`), and one lap (`lap`). Every branch
//! decision of a run lives here; the rooms beside it compute and do.

use super::error::{cut_short, Classified, LapError};
use super::task::TaskResult;
use super::{Runner, LAPS_MAX};
use crate::chaos_hook::{point, Phase};
use crate::ending::{Ending, ErrorKind};
use crate::events::Event;
use crate::state::VerifiedHow;
use nix::sys::signal::Signal;

/// How `drive` came back.
pub(super) enum Exit {
    /// One of the seven endings, its detail and (UNRECOVERABLE_ERROR) kind.
    Ended(Ending, Option<String>, Option<ErrorKind>),
    /// A stop request, seen at a safe point: the run is suspended. `cut`:
    /// what was in flight and was cut for it.
    Stopped { signal: Signal, cut: Option<String> },
}

/// Where an error came from, for `respond`: before the first lap (the
/// resume's verify, its checkpoint, its replan) or out of a lap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Prepare,
    Lap,
}

impl Runner {
    /// The priority order of the endings is the literal order of these checks.
    /// UNRECOVERABLE_ERROR is not here: nothing returns it from a check; it is
    /// the classification of an error out of the lap body.
    pub(super) fn should_stop(&mut self) -> Option<Ending> {
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
        let rules = self.rules;
        if (rules.drift_halt).halts(self.state.drift_score, self.spec.drift_halt_above) {
            return Some(Ending::DriftDetected);
        }
        let k = self.spec.no_progress_k + rules.no_progress_slack;
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
            return Some(rules.empty_queue); // QUEUE_EMPTY_GOAL_UNMET: NOT success
        }
        None
    }

    /// The one loop. Returns the ending (with its detail and error kind), or
    /// the stop request that suspends the run.
    pub(super) async fn drive(&mut self, resumed: bool) -> Exit {
        if let Err(e) = self.prepare(resumed).await {
            // Out of `prepare` every class is an exit (`respond`).
            if let Some(exit) = self.respond(e, Stage::Prepare) {
                return exit;
            }
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
                let cut = self.predicate_cut_by_stop(signal);
                return Exit::Stopped { signal, cut };
            }
            if let Some(ending) = decided {
                return self.ended(ending);
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
                if let Some(exit) = self.respond(e, Stage::Lap) {
                    return exit;
                }
            }
        }
    }

    /// What the stop cut in `should_stop`: the goal predicate, when the
    /// request killed it (its result says so), else nothing was in flight.
    fn predicate_cut_by_stop(&self, signal: Signal) -> Option<String> {
        self.last_predicate.as_ref().filter(|p| p.cut_by_stop)?;
        let during = "the goal predicate (its check was killed whole, so no verdict)".to_string();
        Some(LapError::Stopped { signal, during }.to_string())
    }

    /// The one place an error's class becomes the loop's response: an exit
    /// (an ending, or the stop that suspends the run), or None when the loop
    /// goes on and the top of the next lap reports it. A budget refusal or a
    /// model call cut by the clock out of a lap goes on, so the goal
    /// predicate has its say first; out of `prepare` (before any lap) it ends
    /// the run there.
    fn respond(&mut self, e: LapError, stage: Stage) -> Option<Exit> {
        let said = e.to_string();
        Some(match e.classify() {
            Classified::Unrecoverable { kind, detail } => {
                Exit::Ended(Ending::UnrecoverableError, Some(detail), Some(kind))
            }
            Classified::Stopped(signal) => Exit::Stopped {
                signal,
                cut: Some(said),
            },
            // A cut the stop request made (a check killed, so a verify with
            // no verdict) is the stop's, not the clock's.
            _ if crate::stop::requested().is_some() => Exit::Stopped {
                signal: crate::stop::requested().unwrap_or(Signal::SIGTERM),
                cut: Some(said),
            },
            Classified::Blocked if stage == Stage::Prepare => {
                Exit::Ended(Ending::BudgetExhausted, None, None)
            }
            Classified::TimeUp if stage == Stage::Prepare => {
                Exit::Ended(Ending::TimeLimit, None, None)
            }
            // Do not end here: the top of the loop reports it, after the
            // goal predicate has had its say.
            Classified::Blocked => {
                self.ledger.set_blocked(true);
                self.events.emit(
                    self.state.step,
                    Event::BudgetRefused {
                        spent_usd: self.ledger.spent_usd(),
                        detail: said,
                    },
                );
                return None;
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
                return None;
            }
            Classified::WallClock { detail } => self.clock_ran_out(detail),
        })
    }

    /// The exit for an ending `should_stop` decided. GOAL_MET means durable:
    /// the predicate measured the page cache, and a write whose rename
    /// landed but whose directory fsync failed may not survive a power cut
    /// (found by bench chaos, power-loss mode, EIO on that fsync).
    fn ended(&self, ending: Ending) -> Exit {
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
        Exit::Ended(ending, self.plan_note.clone(), None)
    }

    /// The wall clock ran out inside a lap. The priority order still decides
    /// (a blocked ledger outranks the clock); the predicate, with no time
    /// left, is not run, so this is never GOAL_MET. A clock that stepped back
    /// cannot send the loop on with a task still in flight: TIME_LIMIT.
    pub(super) fn clock_ran_out(&mut self, detail: String) -> Exit {
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
        let skip_checkpoint =
            matches!(result, TaskResult::Park { .. }) && !self.rules.checkpoint_after_park;
        match result {
            TaskResult::Verified { claim } => self.complete(task, claim, VerifiedHow::Verified),
            TaskResult::Park { reason } => self.park(task, reason),
        }
        self.state.step += 1;
        if !skip_checkpoint {
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
    pub(super) async fn replan_if_dry(&mut self) -> Result<(), LapError> {
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
}
