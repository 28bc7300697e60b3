//! The judge rule (`audit.judge_requests`): every drift judge request is a
//! fresh context holding the original goal and the queue at its step, and
//! nothing of the agent's.

use super::events::EventFacts;
use super::sent::{content_text, offered_tools, Sent};
use super::{GateResult, Gathered};
use harness::replay::Captured;
use harness::report::Report;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Texts of the agent's side of the run: model claims, and the assistant
/// turns and tool results the execute requests carried. None may reach the
/// judge. Only texts long enough not to match by chance are kept.
const AGENT_TEXT_MIN_CHARS: usize = 16;

fn agent_texts(report: &Report, sent: &[Sent]) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = report
        .model_claims
        .iter()
        .map(|c| c.text.trim().to_string())
        .collect();
    for s in sent
        .iter()
        .filter(|s| s.captured.call_key.starts_with("execute/"))
    {
        let Ok(body) = &s.body else {
            continue;
        };
        for m in body["messages"].as_array().into_iter().flatten() {
            let role = m["role"].as_str().unwrap_or("");
            if role == "assistant" || role == "tool" {
                out.insert(content_text(&m["content"]).0.trim().to_string());
            }
            if let Some(blocks) = m["content"].as_array() {
                for b in blocks {
                    if b["type"] == "tool_result" {
                        out.insert(content_text(&b["content"]).0.trim().to_string());
                    }
                }
            }
        }
    }
    out.retain(|t| t.chars().count() >= AGENT_TEXT_MIN_CHARS);
    out
}

/// Why a judge request breaks the judge rule (`audit.judge_requests`).
#[derive(Debug, thiserror::Error)]
pub enum JudgeRequestError {
    #[error("body is not JSON: {0}")]
    NotJson(String),
    #[error("the judge was offered tools")]
    OfferedTools,
    #[error("the judge saw a {0} message")]
    OtherRole(String),
    #[error("a message with no role")]
    NoRole,
    #[error("{0} user turns, not one")]
    UserTurns(usize),
    #[error("the user turn does not open with the original goal, verbatim, then the queue")]
    NoGoal,
    #[error("the user turn holds something after the queue")]
    AfterQueue,
    #[error("queue line {0:?} is not `- <id>: <description>`")]
    QueueLine(String),
    #[error("queue task {0} carries another description")]
    OtherDescription(String),
    #[error("queue task {0:?} is not a task of the run")]
    NotATask(String),
    #[error("queue task {task} had left the queue before step {step} ({why})")]
    NotQueued {
        task: String,
        step: u64,
        why: &'static str,
    },
    #[error("queue task {0} appears twice")]
    Twice(String),
    #[error("the system prompt is not the judge's instruction")]
    NotJudgeSystem,
    #[error("it carries the agent's own text: {0:?}")]
    AgentText(String),
}

/// Check one judge request body against the judge rule; Err says why not.
fn judge_request_ok(
    sent: &Sent,
    goal: &str,
    tasks: &BTreeMap<String, String>,
    agent: &BTreeSet<String>,
) -> Result<usize, JudgeRequestError> {
    let v = (sent.body.as_ref()).map_err(|e| JudgeRequestError::NotJson(e.to_string()))?;
    judge_body_ok(v, goal, tasks, agent)
}

/// A drift judge request's wire body (either protocol): no tool, the
/// judge's own instruction as its system prompt and nothing of the agent's
/// (`agent`), and one user turn that is exactly the original goal and the
/// queue (`tasks`: id to description). The rule `audit.judge_requests`
/// holds every run's judge calls to, for a caller that builds judge
/// requests itself (`bench calibrate --endpoint`). Returns the queue's
/// length.
pub fn judge_body_ok(
    v: &Value,
    goal: &str,
    tasks: &BTreeMap<String, String>,
    agent: &BTreeSet<String>,
) -> Result<usize, JudgeRequestError> {
    use JudgeRequestError as E;
    if !offered_tools(v).is_empty() {
        return Err(E::OfferedTools);
    }
    let mut system = content_text(&v["system"]).0;
    let mut users = vec![];
    for m in v["messages"].as_array().into_iter().flatten() {
        let (text, other) = content_text(&m["content"]);
        match m["role"].as_str() {
            Some("system") => system.push_str(&text),
            Some("user") if !other => users.push(text),
            Some(r) => return Err(E::OtherRole(r.to_string())),
            None => return Err(E::NoRole),
        }
    }
    if users.len() != 1 {
        return Err(E::UserTurns(users.len()));
    }
    let user = &users[0];
    let head = format!("<original_goal>{goal}</original_goal>\n<queue>\n");
    let rest = user.strip_prefix(&head).ok_or(E::NoGoal)?;
    let lines = rest.strip_suffix("</queue>").ok_or(E::AfterQueue)?;
    let mut seen = BTreeSet::new();
    let mut n = 0;
    for line in lines.split_terminator('\n') {
        let item = line
            .strip_prefix("- ")
            .and_then(|l| l.split_once(": "))
            .ok_or_else(|| E::QueueLine(line.to_string()))?;
        match tasks.get(item.0) {
            Some(d) if d == item.1 => {}
            Some(_) => return Err(E::OtherDescription(item.0.to_string())),
            None => return Err(E::NotATask(item.0.to_string())),
        }
        if !seen.insert(item.0.to_string()) {
            return Err(E::Twice(item.0.to_string()));
        }
        n += 1;
    }
    // The user turn is exactly the goal and the queue (checked above); the
    // system prompt is the judge's own instruction (plus, for Anthropic, the
    // schema statement) and nothing of the agent's.
    let rest_of_system = system
        .strip_prefix(harness::drift::JUDGE_SYSTEM)
        .ok_or(E::NotJudgeSystem)?;
    for t in agent {
        if rest_of_system.contains(t.as_str()) {
            return Err(E::AgentText(harness::text::clip_chars(t, 60)));
        }
    }
    Ok(n)
}

/// `audit.judge_requests`: every `judge/*` request is one user turn holding
/// exactly the original goal and the queue, in a fresh context.
pub fn check_judge_requests(report: &Report, requests: &[Captured], g: &Gathered) -> GateResult {
    judge_requests(report, &Sent::parse(requests), g)
}

pub(super) fn judge_requests(report: &Report, sent: &[Sent], g: &Gathered) -> GateResult {
    let Some(spec) = &g.spec else {
        return GateResult::fail("the spec's goal was not read");
    };
    let Some(ev) = &g.events else {
        return GateResult::fail(g.events_unread("events.jsonl was not read"));
    };
    let tasks = &ev.descriptions;
    let agent = agent_texts(report, sent);
    let mut bad = vec![];
    let mut n = 0;
    for s in sent
        .iter()
        .filter(|s| s.captured.call_key.starts_with("judge/"))
    {
        n += 1;
        if let Err(e) = judge_request_ok(s, &spec.goal, tasks, &agent)
            .and_then(|n| queued_at_step(s, ev).map(|()| n))
        {
            let r = s.captured;
            bad.push(format!("{} (attempt {}): {e}", r.call_key, r.attempt));
        }
    }
    GateResult::unless(&bad, || {
        format!("{n} judge request(s): the original goal and the queue only")
    })
}

/// The queue `judge/<S>` showed holds no task that had left the queue
/// before step S: none started at an earlier step (verified, parked or in
/// flight), none pruned by an earlier drift check. The judge sees the goal
/// and the queue at that step, not every task the run had.
fn queued_at_step(sent: &Sent, ev: &EventFacts) -> Result<(), JudgeRequestError> {
    let Some(step) =
        (sent.captured.call_key.strip_prefix("judge/")).and_then(|s| s.parse::<u64>().ok())
    else {
        return Ok(()); // a judge key with no step: the other rules still hold it
    };
    let Ok(v) = sent.body.as_ref() else {
        return Ok(()); // judge_request_ok has said why
    };
    for id in judge_queue_ids(v) {
        let gone = match (ev.started_at.get(&id), ev.pruned_at.get(&id)) {
            (Some(s), _) if *s < step => Some("it started at an earlier step"),
            (_, Some(p)) if *p < step => Some("an earlier drift check pruned it"),
            _ => None,
        };
        if let Some(why) = gone {
            return Err(JudgeRequestError::NotQueued {
                task: id,
                step,
                why,
            });
        }
    }
    Ok(())
}

/// The task ids of a judge request's queue lines (`- <id>: ...`).
fn judge_queue_ids(v: &Value) -> Vec<String> {
    let mut out = vec![];
    for m in v["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        let text = content_text(&m["content"]).0;
        let Some((_, queue)) = text.split_once("<queue>\n") else {
            continue;
        };
        for line in queue.lines() {
            if let Some((id, _)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
                out.push(id.to_string());
            }
        }
    }
    out
}
