//! What events.jsonl says the run did, read through the harness's own event
//! type: the admitted tasks, the tool calls, the setbacks, when each task
//! left the queue.

use std::collections::{BTreeMap, BTreeSet};

/// One tool call as the harness logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEvent {
    pub tool: String,
    pub is_error: bool,
    pub side_effect: bool,
}

/// What the audit reads from `events.jsonl` (appended across resumes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFacts {
    /// Task ids admitted to the queue (plan and every replan).
    pub admitted: BTreeSet<String>,
    /// Admitted task id -> its description, as the judge must be shown it
    /// (newlines as spaces).
    pub descriptions: BTreeMap<String, String>,
    pub tools: Vec<ToolEvent>,
    /// Why each verify whose check could not run said so, in order
    /// (`VerifyOutcome::CouldNotRun`): a broken case, not a failed agent.
    pub checks_not_run: Vec<String>,
    /// What went against the run, in order: verifies that found the work
    /// not done, tasks the plan named that were refused. The cause line
    /// (bench::cause) starts a recording miss's chain at the first one the
    /// recording did not foresee.
    pub setbacks: Vec<Setback>,
    /// Task id -> the step of its first `TaskStart`. A task started at step
    /// s has left the queue for good by step s + 1 (a resume that puts it
    /// back runs it again at s), so `judge/<S>` for S > s must not list it.
    pub started_at: BTreeMap<String, u64>,
    /// Task id -> the step of the drift check that pruned it.
    pub pruned_at: BTreeMap<String, u64>,
}

/// One thing that went against a run, as events.jsonl records it.
#[derive(Debug, Clone, PartialEq)]
pub enum Setback {
    /// A verify found task `task`'s work not done after attempt `attempt`
    /// (`VerifyOutcome::NotStarted`); `why` is the harness's line (a
    /// check's name, status and output tail). `answered_after`: a model
    /// call of another task (or the plan, a replan, the judge) was answered
    /// after it, so the run went on along the recording past it.
    VerifyFailed {
        task: String,
        attempt: u32,
        why: String,
        answered_after: bool,
    },
    /// The plan or a replan (`origin`) named task `id` and the harness
    /// refused to admit it (`reason`: an undefined check, a verify not
    /// eligible, ...).
    TaskRejected {
        id: String,
        origin: String,
        reason: String,
    },
}

/// Parse `events.jsonl` through the harness's own event type. A line that
/// is not JSON is skipped (a kill mid-append tears the last one); a JSON
/// line the harness would not have written is an error naming the line,
/// never a silent miss (a reader that skipped it could not see an admit or
/// a tool call that was there).
pub fn event_facts(events_jsonl: &str) -> Result<EventFacts, harness::events::ReadError> {
    use harness::events::Event;
    use harness::verify::VerifyOutcome;
    let lines = harness::events::parse_events(events_jsonl)?;
    let mut f = EventFacts::default();
    for l in lines {
        let step = l.step;
        match l.event {
            Event::Admit(a) => {
                f.setbacks
                    .extend(a.rejected.into_iter().map(|r| Setback::TaskRejected {
                        id: r.id,
                        origin: r.origin,
                        reason: r.reason,
                    }));
                f.admitted.extend(a.admitted);
                for t in a.tasks {
                    f.descriptions
                        .insert(t.id, t.description.replace('\n', " "));
                }
            }
            Event::Tool(t) => f.tools.push(ToolEvent {
                tool: t.tool.as_str().to_string(),
                is_error: t.is_error,
                side_effect: t.side_effect,
            }),
            Event::Verify {
                outcome: VerifyOutcome::CouldNotRun { detail },
                ..
            }
            | Event::ResumeVerify {
                outcome: VerifyOutcome::CouldNotRun { detail },
                ..
            } => f.checks_not_run.push(detail),
            Event::Verify {
                task,
                attempt,
                outcome: VerifyOutcome::NotStarted,
                why,
                ..
            } => f.setbacks.push(Setback::VerifyFailed {
                why: why.unwrap_or_else(|| format!("task {task}'s verify found it not done")),
                task,
                attempt,
                answered_after: false,
            }),
            Event::ModelCall(c) => mark_answered_after(&mut f.setbacks, &c.call_key),
            Event::TaskStart { task, .. } => {
                f.started_at.entry(task).or_insert(step);
            }
            Event::Drift { pruned, .. } => {
                for t in pruned {
                    f.pruned_at.entry(t).or_insert(step);
                }
            }
            _ => {}
        }
    }
    Ok(f)
}

/// A model call `call_key` was answered: every failed verify before it of
/// another task than the call's went on along the recording.
fn mark_answered_after(setbacks: &mut [Setback], call_key: &str) {
    let call_task = call_key.split('/').nth(1);
    for s in setbacks {
        if let Setback::VerifyFailed {
            task,
            answered_after,
            ..
        } = s
        {
            let same_task = matches!(call_key.split('/').next(), Some("execute" | "lesson"))
                && call_task == Some(task.as_str());
            *answered_after |= !same_task;
        }
    }
}
