//! Drift: each self-generated task is locally reasonable but the chain is not,
//! so it is measured against the immutable ORIGINAL goal, by a judge in a fresh
//! context that receives only (original goal, queue) -- never the agent's
//! messages, whose justifications it would rationalize.
//!
//! [`gate`] is the harness half and the ONLY writer of the run's drift score.
//! Bands are strict: above `halt_above` (0.5) halts as DRIFT_DETECTED; above
//! `prune_above` (0.3) moves the off-goal tasks to `pruned`; exactly 0.5 prunes,
//! exactly 0.3 does nothing.

use crate::goal::Goal;
use crate::model::types::{CallRole, ModelRequest, Turn};
use crate::state::{DriftPoint, PrunedTask, RunState};
use crate::task::Task;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const JUDGE_MAX_TOKENS: u32 = 2048;
pub const REASONING_MAX_CHARS: usize = 4000;

// The band is recorded in the state's drift history, so it is defined there.
pub use crate::state::Band;

/// The judge's verdict. `reasoning` is the first field on purpose: constrained
/// decoding emits fields in schema order, so the score is conditioned on the
/// analysis instead of committed to before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftCheck {
    pub reasoning: String,
    pub off_goal_task_ids: Vec<String>,
    pub drift_score: f64,
}

pub const JUDGE_SYSTEM: &str = "Score how far the task queue has drifted from the ORIGINAL goal. \
A task is off-goal if completing it would not measurably advance the original goal, even if it seems useful. \
Judge each task against the goal only. You have not been given the agent's reasoning and must not assume it was sound. \
0.0 = fully aligned, 1.0 = entirely unrelated. Write your reasoning first, then the off-goal task ids, then the score.";

pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "off_goal_task_ids": {"type": "array", "items": {"type": "string"}},
            "drift_score": {"type": "number", "minimum": 0, "maximum": 1}
        },
        "required": ["reasoning", "off_goal_task_ids", "drift_score"],
        "additionalProperties": false
    })
}

/// Build the judge request. Its inputs are exactly the goal and the queue: the
/// signature is the guarantee that nothing else reaches the judge.
pub fn judge_request(goal: &Goal, queue: &[Task], model: &str, call_key: String) -> ModelRequest {
    let mut q = String::new();
    for t in queue {
        q.push_str(&format!(
            "- {}: {}\n",
            t.id,
            t.description.replace('\n', " ")
        ));
    }
    ModelRequest {
        role: CallRole::Judge,
        call_key,
        model: model.to_string(),
        system: JUDGE_SYSTEM.to_string(),
        turns: vec![Turn::User {
            text: format!(
                "<original_goal>{}</original_goal>\n<queue>\n{}</queue>",
                goal.text(),
                q
            ),
        }],
        tools: vec![],
        max_tokens: JUDGE_MAX_TOKENS,
        json_schema: Some(schema()),
        trailing_notice: None,
    }
}

/// Parse the judge's reply text into a DriftCheck. Refuses a score outside
/// [0, 1] or not a number: a judge we cannot read is an error, not "aligned".
pub fn parse(text: &str) -> Result<DriftCheck, String> {
    let v = crate::reply_json::extract_json_object(text)
        .ok_or_else(|| "judge reply holds no JSON object".to_string())?;
    // Through the workspace's strict loader, so a wrong value names its
    // field (`drift_score`), not only the type serde expected.
    let mut dc: DriftCheck = strict::from_str(strict::Format::Json, &v.to_string()).map_err(
        |e: strict::Error| match e.field() {
            Some(f) if !e.message.contains(&format!("`{f}`")) => {
                format!(
                    "judge reply does not match the schema: field `{f}`: {}",
                    e.message
                )
            }
            _ => format!("judge reply does not match the schema: {}", e.message),
        },
    )?;
    if !(dc.drift_score.is_finite() && (0.0..=1.0).contains(&dc.drift_score)) {
        return Err(format!("drift_score {} outside [0, 1]", dc.drift_score));
    }
    if dc.reasoning.chars().count() > REASONING_MAX_CHARS {
        dc.reasoning = dc.reasoning.chars().take(REASONING_MAX_CHARS).collect();
    }
    Ok(dc)
}

pub fn band(score: f64, prune_above: f64, halt_above: f64) -> Band {
    if score > halt_above {
        Band::Halt
    } else if score > prune_above {
        Band::Prune
    } else {
        Band::Aligned
    }
}

/// The harness half: record the score, then act on the band. Halting is left
/// to `should_stop` at the top of the next lap (the one place endings are
/// decided). Returns the ids it pruned.
pub fn gate(
    state: &mut RunState,
    dc: &DriftCheck,
    prune_above: f64,
    halt_above: f64,
) -> Vec<String> {
    let b = band(dc.drift_score, prune_above, halt_above);
    state.drift_score = dc.drift_score; // nothing else assigns this
    let mut pruned = vec![];
    if b == Band::Prune {
        let off: std::collections::BTreeSet<&str> =
            dc.off_goal_task_ids.iter().map(|s| s.as_str()).collect();
        let (drop, keep): (Vec<Task>, Vec<Task>) = std::mem::take(&mut state.queue)
            .into_iter()
            .partition(|t| off.contains(t.id.as_str()));
        state.queue = keep;
        for t in drop {
            pruned.push(t.id.clone());
            state.pruned.push(PrunedTask {
                id: t.id,
                description: t.description,
                drift_step: state.step,
                drift_score: dc.drift_score,
            });
        }
    }
    state.drift_history.push(DriftPoint {
        step: state.step,
        score: dc.drift_score,
        band: b,
        off_goal_task_ids: dc.off_goal_task_ids.clone(),
        reasoning: dc.reasoning.clone(),
    });
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Verify;

    fn task(id: &str, d: &str) -> Task {
        Task {
            id: id.into(),
            description: d.into(),
            verify: Verify::FileExists {
                path: format!("{id}.txt"),
            },
            origin: "plan".into(),
            attempts: 0,
        }
    }
    fn state() -> RunState {
        let mut s = RunState::new("r".into(), crate::goal::sha256_hex("g"), 0);
        s.queue = vec![
            task("t5", "Build a metrics dashboard"),
            task("t6", "Add dashboard auth"),
            task("t7", "Re-measure p95"),
        ];
        s
    }
    fn dc(score: f64) -> DriftCheck {
        DriftCheck {
            reasoning: "dashboard and auth do not move p95".into(),
            off_goal_task_ids: vec!["t5".into(), "t6".into()],
            drift_score: score,
        }
    }

    #[test]
    fn a_compacted_history_never_reaches_the_judge() {
        let mut s = state();
        s.history_summary = vec!["COMPACTED-SUMMARY new goal: build the dashboard".into()];
        s.push_compaction(crate::state::Compaction {
            call_key: "compact/0".into(),
            step: 3,
            bytes_before: 400,
            bytes_after: 52,
            cost_usd: 0.01,
            outcome: crate::state::CompactOutcome::Ok,
            detail: None,
        });
        let goal = crate::goal::Goal::new("Reduce p95.");
        let req = judge_request(&goal, &s.queue, "m", "judge/3".into());
        let wire = format!("{req:?}");
        assert!(!wire.contains("COMPACTED-SUMMARY"), "{wire}");
        assert!(!wire.contains("build the dashboard"), "{wire}");
        assert!(wire.contains("Reduce p95."));
    }

    #[test]
    fn exactly_half_prunes_and_does_not_halt() {
        let mut s = state();
        let pruned = gate(&mut s, &dc(0.5), 0.3, 0.5);
        assert_eq!(pruned, vec!["t5", "t6"]);
        assert_eq!(s.queue.len(), 1);
        assert_eq!(s.drift_history[0].band, Band::Prune);
        assert_eq!(band(0.5, 0.3, 0.5), Band::Prune);
    }

    #[test]
    fn exactly_point_three_does_nothing() {
        let mut s = state();
        assert!(gate(&mut s, &dc(0.3), 0.3, 0.5).is_empty());
        assert_eq!(s.queue.len(), 3);
        assert_eq!(s.drift_score, 0.3);
        assert_eq!(s.drift_history[0].band, Band::Aligned);
    }

    #[test]
    fn above_half_is_halt_band_and_keeps_queue_for_the_report() {
        let mut s = state();
        assert!(gate(&mut s, &dc(0.51), 0.3, 0.5).is_empty());
        assert_eq!(s.drift_history[0].band, Band::Halt);
        assert_eq!(s.drift_score, 0.51);
    }

    #[test]
    fn judge_sees_only_goal_and_queue() {
        let g = Goal::new("Reduce p95 latency on /api/search to under 200ms.");
        let r = judge_request(&g, &state().queue, "judge-model", "judge/5".into());
        assert_eq!(r.turns.len(), 1);
        assert!(r.tools.is_empty());
        let Turn::User { text } = &r.turns[0] else {
            panic!()
        };
        assert!(text.contains("<original_goal>Reduce p95"));
        assert!(text.contains("t5: Build a metrics dashboard"));
    }

    #[test]
    fn parse_refuses_out_of_range_and_garbage() {
        assert!(parse(r#"{"reasoning":"x","off_goal_task_ids":[],"drift_score":1.5}"#).is_err());
        assert!(parse("I think it is fine").is_err());
        let ok = parse("```json\n{\"reasoning\":\"x\",\"off_goal_task_ids\":[\"t1\"],\"drift_score\":0.4}\n```").unwrap();
        assert_eq!(ok.off_goal_task_ids, vec!["t1"]);
    }
}
