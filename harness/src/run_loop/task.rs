//! A task: the resume's verify of the task in flight, the attempts with
//! their ReAct loop, the verify after each, and what a verified or parked
//! task leaves behind (its commit, its parked record).

use super::error::{cut_short, LapError};
use super::{Runner, CLAIM_MAX_CHARS};
use crate::chaos_hook::{point, Phase};
use crate::check::{run_check_by, CheckResult};
use crate::events::{Event, GitError, ToolEvent, ToolRef};
use crate::model::types::{ModelRequest, StopReason, ToolCall, ToolDef, Turn};
use crate::spec::Predicate;
use crate::state::{CompletedTask, ModelClaim, ParkedTask, VerifiedHow};
use crate::task::Task;
use crate::text::clip_chars;
use crate::tools::Observation;
use crate::tools::ToolBox;
use crate::verify::{VerifyContext, VerifyOutcome};

/// How a task attempt's ReAct loop ended (before verification).
#[derive(Debug, Clone)]
enum AttemptEnd {
    Finished { claim: String },
    Refused { text: String },
    Stuck { detail: String },
    LoopCap,
}

impl AttemptEnd {
    pub(super) fn describe(&self) -> String {
        match self {
            AttemptEnd::Finished { .. } => "the model said it was finished".into(),
            AttemptEnd::Refused { text } => format!("the model refused: {}", clip_chars(text, 200)),
            AttemptEnd::Stuck { detail } => detail.clone(),
            AttemptEnd::LoopCap => "reached the per-task loop cap".into(),
        }
    }
}

pub(super) enum TaskResult {
    Verified { claim: Option<String> },
    Park { reason: String },
}

impl Runner {
    /// Before the first lap: the git branch, and on resume the in-flight task
    /// is verified, never re-executed.
    pub(super) async fn prepare(&mut self, resumed: bool) -> Result<(), LapError> {
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
                let outcome = if !self.rules.resume_verifies {
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

    /// Execute with retries; the harness verifies after every attempt.
    pub(super) async fn execute_task(&mut self, task: &Task) -> Result<TaskResult, LapError> {
        let attempts_allowed = 1 + self.spec.retries_per_task;
        let mut last = String::new();
        for attempt in 0..attempts_allowed {
            self.clock_left(|| format!("task {}, before attempt {}", task.id, attempt + 1))?;
            let (end, io_failed, observations) = self.execute_attempt(task, attempt).await?;
            let claim = match &end {
                AttemptEnd::Finished { claim } => Some(clip_chars(claim, CLAIM_MAX_CHARS)),
                _ => None,
            };
            let (mut outcome, why) = task.verify.run_why(&self.verify_ctx());
            if !self.rules.verify_decides && claim.is_some() {
                outcome = VerifyOutcome::Done;
            }
            self.events.emit(
                self.state.step,
                Event::Verify {
                    task: task.id.clone(),
                    attempt,
                    attempt_end: end.describe(),
                    outcome: outcome.clone(),
                    why: (outcome == VerifyOutcome::NotStarted)
                        .then_some(why)
                        .flatten(),
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
        self.attempt_io_failed = None;
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
            let req = self.execute_req(task, attempt, turn, &executor, &turns, &tool_defs);
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
            self.note_tool(
                task,
                &format!("execute/{}/a{attempt}/{turn}", task.id),
                &call,
                &obs,
                io_failed,
                observations,
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

    /// What a tool call of an attempt leaves behind: its writes noted and
    /// journaled, its doubt, its observation line, whether a side effect is
    /// in doubt (`io_failed`), the artifact, and its event.
    fn note_tool(
        &mut self,
        task: &Task,
        call_key: &str,
        call: &ToolCall,
        obs: &Observation,
        io_failed: &mut Option<(String, serde_json::Value)>,
        observations: &mut String,
    ) {
        if obs.posted_key.is_some() {
            point(Phase::AfterPostBeforeCheckpoint);
        }
        if !obs.wrote.is_empty() {
            self.note_writes(&task.id, &obs.wrote);
        }
        self.note_doubt(obs);
        crate::lessons::push_observation(
            observations,
            &crate::lessons::observation_line(&call.name, &call.input, &obs.content, obs.is_error),
        );
        if obs.is_error && obs.side_effect {
            *io_failed = Some((call.name.clone(), call.input.clone()));
        } else if !obs.is_error
            && io_failed.as_ref() == Some(&(call.name.clone(), call.input.clone()))
        {
            *io_failed = None; // the same call redone successfully: durable again
        }
        self.attempt_io_failed = io_failed.as_ref().map(|(name, _)| name.clone());
        if obs.side_effect {
            if let Some(p) = call.input.get("path").and_then(|p| p.as_str()) {
                if !self.state.artifacts.iter().any(|a| a == p) && self.state.artifacts.len() < 1000
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
                call_key: call_key.to_string(),
                input: clip_chars(
                    &call.input.to_string(),
                    crate::events::TOOL_INPUT_SHOWN_MAX_CHARS,
                ),
                output: clip_chars(&obs.content, crate::events::TOOL_OUTPUT_SHOWN_MAX_CHARS),
            }),
        );
    }

    /// The executor's request for one turn of an attempt.
    fn execute_req(
        &self,
        task: &Task,
        attempt: u32,
        turn: u32,
        executor: &str,
        turns: &[Turn],
        tool_defs: &[ToolDef],
    ) -> ModelRequest {
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
            .remaining_output_tokens(executor)
            .min(self.spec.task_budget_tokens);
        crate::agent::execute_request(
            executor,
            self.spec.model.max_tokens,
            format!("execute/{}/a{attempt}/{turn}", task.id),
            turns.to_vec(),
            tool_defs.to_vec(),
            budget_tokens,
            notice,
            self.spec.executor_prompt_extra.as_deref(),
        )
    }

    pub(super) fn complete(&mut self, task: Task, claim: Option<String>, how: VerifiedHow) {
        self.attempt_io_failed = None; // settled: nothing of it is in flight
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

    pub(super) fn park(&mut self, task: Task, reason: String) {
        self.attempt_io_failed = None; // settled: nothing of it is in flight
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

    /// Why the task in flight may have effects that are not durable: a
    /// side-effecting call of its attempt failed with an I/O error (not
    /// redone), or one of its paths is a write in doubt (renamed into
    /// place, then the directory fsync failed: checkpointed, so a resume
    /// knows it too). `None` when every write it made was durable.
    pub(super) fn in_flight_write_in_doubt(&self) -> Option<String> {
        if let Some(call) = &self.attempt_io_failed {
            return Some(format!("its {call} call"));
        }
        self.state
            .writes_in_doubt
            .iter()
            .find(|d| self.task_paths.contains(&d.path))
            .map(|d| format!("its write of {} ({})", d.path, d.error))
    }

    pub(super) fn predicate(&mut self) -> CheckResult {
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

    pub(super) fn verify_ctx(&self) -> VerifyContext<'_> {
        VerifyContext {
            workspace: &self.workspace,
            outbox: &self.outbox,
            checks: &self.spec.checks,
            deadline: Some(self.deadline()),
        }
    }
}
