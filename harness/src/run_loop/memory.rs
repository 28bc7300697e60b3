//! The run's memory: compaction of the history and lessons from failed
//! attempts, each a model call whose reply is data and whose every outcome
//! is recorded.

use super::error::LapError;
use super::Runner;
use crate::chaos_hook::{point, Phase};
use crate::events::Event;
use crate::model::types::ModelError;
use crate::state::CompactOutcome;
use crate::task::Task;
use crate::text::clip_chars;

impl Runner {
    /// The spec's `[memory]` when a compaction is due now: the history's
    /// estimate (bytes / 4) is over the bound and the last attempt (whatever
    /// its outcome, so a failing one is not retried every task) was at least
    /// `compact_every_tasks_min` tasks ago. None without `[memory]`.
    pub(super) fn compaction_due(&self) -> Option<crate::spec::MemorySpec> {
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
    pub(super) async fn compact(
        &mut self,
        memory: &crate::spec::MemorySpec,
    ) -> Result<(), LapError> {
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
            && !self.rules.malformed_summary_keeps_history
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
    pub(super) async fn learn(
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
                Ok(reply) => self.lesson_of(
                    &reply.text,
                    task,
                    attempt,
                    &call_key,
                    observations,
                    cost_usd,
                ),
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

    /// A lesson call's reply, admitted only by the harness's own checks
    /// (`lessons::admit`), or why it is refused.
    fn lesson_of(
        &self,
        reply_text: &str,
        task: &Task,
        attempt: u32,
        call_key: &str,
        observations: &str,
        cost_usd: f64,
    ) -> Result<crate::lessons::Lesson, (crate::lessons::LessonRefusal, String)> {
        use crate::lessons::LessonRefusal;
        crate::lessons::parse(reply_text)
            .map_err(|e| (LessonRefusal::Malformed, e))
            .and_then(|c| {
                let ctx = crate::lessons::AdmitContext {
                    task_text: crate::lessons::task_text(task),
                    observations,
                    workspace: Some(&self.workspace),
                    admitted: &self.state.lessons,
                };
                let admitted = if !self.rules.lessons_checked {
                    Ok((String::new(), crate::lessons::AnchorSource::Observation))
                } else {
                    crate::lessons::admit(&c, &ctx)
                };
                admitted.map(|(anchor, anchor_in)| crate::lessons::Lesson {
                    call_key: call_key.to_string(),
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
            })
    }
}
