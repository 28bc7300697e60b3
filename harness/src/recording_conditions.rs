//! The recording conditions (model::conditions) a run under a spec sends,
//! one per call role: what a scripted cassette states its replies hold
//! for, so replay can refuse a request sent under other ones.
//!
//! Derived, never re-spelled: each role's request is built by the same
//! builder the run loop calls, with the spec's model, sampling, tools and
//! checks, and placeholder conversation text (which is not a condition),
//! then rendered to the wire body the client would send. If the loop and
//! this module ever disagreed, every replayed call of that role would be
//! refused, so the suite itself would fail, loudly.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::types::{CallRole, ModelRequest};
use crate::model::Conditions;
use crate::spec::RunSpec;

/// The conditions of every role's requests under `spec`, with the plan
/// schema's migration list read from `workspace` (the case's workspace as
/// committed; a run that defines another migration before it replans sends
/// another replan schema).
pub fn of_spec(spec: &RunSpec, workspace: &Path) -> Result<BTreeMap<CallRole, Conditions>, String> {
    let ws = crate::workspace::Workspace::open(workspace)
        .map_err(|e| format!("{}: {e}", workspace.display()))?;
    let sampling = spec.model.sampling();
    Ok(requests(spec, &ws)
        .into_iter()
        .map(|mut req| {
            spec.model.bound(&mut req);
            let body = crate::model::wire_body(spec.model.protocol, &sampling, &req);
            (req.role, Conditions::of_body(spec.model.protocol, &body))
        })
        .collect())
}

/// One request per role, as the run loop builds it (before `call_model`
/// bounds it by the spec).
fn requests(spec: &RunSpec, ws: &crate::workspace::Workspace) -> Vec<ModelRequest> {
    let goal = crate::goal::Goal::new("(placeholder goal)");
    let checks: Vec<String> = spec.checks.keys().cloned().collect();
    let migrations = crate::migration::defined(ws);
    let task = crate::task::Task {
        id: "t1".into(),
        description: "(placeholder task)".into(),
        verify: crate::verify::Verify::FileExists { path: "x".into() },
        origin: "plan".into(),
        attempts: 0,
    };
    let state = crate::state::RunState::new("r".into(), goal.sha256().into(), 0);
    let outbox = crate::outbox::Outbox::new(ws.root().join(".conditions-outbox-unused"));
    let tools = crate::tools::ToolBox {
        workspace: ws,
        outbox: &outbox,
        checks: &spec.checks,
        allowlist: &spec.tools_allowed,
        deadline: None,
        command: spec.run_command.as_ref(),
    }
    .defs();
    let compact_max_tokens = spec
        .memory
        .as_ref()
        .map_or(crate::spec::DEFAULT_COMPACT_MAX_TOKENS, |m| {
            m.compact_max_tokens
        });
    let model = |role| spec.model_for(role);
    vec![
        crate::agent::plan_request(
            &goal,
            model(CallRole::Plan),
            &checks,
            &migrations,
            "",
            "plan/0".into(),
        ),
        crate::agent::replan_request(
            &goal,
            model(CallRole::Replan),
            &checks,
            &migrations,
            &state,
            "",
            "replan/0".into(),
        ),
        crate::agent::execute_request(
            model(CallRole::Execute),
            spec.model.max_tokens,
            "execute/t1/a0/0".into(),
            vec![],
            tools,
            0,
            None,
            spec.executor_prompt_extra.as_deref(),
        ),
        crate::drift::judge_request(&goal, &[], model(CallRole::Judge), "judge/0".into()),
        crate::agent::compact_request(
            &goal,
            model(CallRole::Compact),
            &[],
            compact_max_tokens,
            "compact/0".into(),
        ),
        crate::lessons::lesson_request(&goal, model(CallRole::Lesson), &task, 0, "", ""),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ConditionField;

    fn spec(extra: &str) -> (tempfile::TempDir, RunSpec) {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("workspace")).unwrap();
        let text = format!(
            "goal = \"g\"\nworkspace = \"workspace\"\n\n[predicate]\ncommand = [\"true\"]\n\n[budget]\nhard_cap_usd = 1.0\nwall_clock_limit_s = 60\ntask_budget_tokens = 1000\n\n[model]\nprotocol = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\nplanner = \"p\"\nexecutor = \"e\"\njudge = \"j\"\n{extra}\n\n[prices.p]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 1.0\n\n[prices.e]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 1.0\n\n[prices.j]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 1.0\n"
        );
        std::fs::write(t.path().join("run.toml"), text).unwrap();
        let s = RunSpec::load(&t.path().join("run.toml")).unwrap();
        (t, s)
    }

    #[test]
    fn every_role_has_conditions_and_the_spec_decides_them() {
        let (t, a) = spec("");
        let ca = of_spec(&a, &t.path().join("workspace")).unwrap();
        assert_eq!(ca.len(), 6);
        assert_eq!(ca[&CallRole::Execute].model.as_deref(), Some("e"));
        assert_eq!(ca[&CallRole::Plan].model.as_deref(), Some("p"));
        assert_eq!(ca[&CallRole::Judge].model.as_deref(), Some("j"));
        // The executor's tools are a condition of execute calls only.
        assert_ne!(
            ca[&CallRole::Execute].tools_sha256,
            ca[&CallRole::Plan].tools_sha256
        );

        let (t2, b) = spec("temperature = 0.5");
        let cb = of_spec(&b, &t2.path().join("workspace")).unwrap();
        let d = ca[&CallRole::Execute]
            .first_difference(&cb[&CallRole::Execute], &[])
            .unwrap();
        assert_eq!(d.field, ConditionField::Temperature);
    }
}
