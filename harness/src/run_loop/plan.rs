//! What the queue holds: the plan, a replan when it runs dry, the admission
//! of what either proposes, and the drift gate that prunes it.

use super::error::LapError;
use super::rules::JudgeSees;
use super::{Runner, PLAN_FORMAT_RETRIES};
use crate::chaos_hook::Phase;
use crate::drift::{self, Band};
use crate::events::{Admit, AdmittedTask, Event};
use crate::model::types::Turn;
use crate::text::clip_chars;
use crate::tools::ToolBox;
use serde_json::json;

impl Runner {
    pub(super) async fn plan(&mut self) -> Result<(), LapError> {
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

    pub(super) async fn replan(&mut self, predicate_output: &str) -> Result<(), LapError> {
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

    pub(super) fn admit(&mut self, raw: Vec<crate::agent::RawTask>, origin: &str) {
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

    pub(super) async fn drift_check(&mut self) -> Result<(), LapError> {
        self.goal.assert_intact()?; // at every check

        // The variant's judge also sees the tasks already verified (as if
        // the queue were never emptied): audit.judge_requests must fail it.
        let with_done: Vec<crate::task::Task>;
        let queue: &[crate::task::Task] = if self.rules.judge_sees == JudgeSees::QueueAndDone {
            let template = self.state.queue[0].clone(); // non-empty: drift_check's caller
            with_done = (self.state.completed.iter())
                .map(|c| crate::task::Task {
                    id: c.id.clone(),
                    description: c.description.clone(),
                    ..template.clone()
                })
                .chain(self.state.queue.iter().cloned())
                .collect();
            &with_done
        } else {
            &self.state.queue
        };
        let mut req = drift::judge_request(
            &self.goal,
            queue,
            self.spec.model_for(crate::model::types::CallRole::Judge),
            format!("judge/{}", self.state.step),
        );
        if self.rules.judge_sees == JudgeSees::QueueAndHistory {
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
}
