//! Unit tests of the audit, one file per room, on the fixtures below: a
//! report as the harness writes it and the facts an honest run gathers.

mod claims;
mod events;
mod gate;
mod gathered;
mod judge;
mod money;
mod reach;

use super::*;
use harness::ending::Ending;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A report as the harness writes it: example state (t0, t1 verified,
/// t2 queued, t3 parked), the given ending, spend 0 of a $28 cap.
fn report(ending: Ending, predicate_met: bool) -> Report {
    let mut s = harness::state::RunState::example(4);
    s.hard_cap_usd = 28.0;
    Report::build(&s, "g", ending, None, None, predicate_met, 5)
}

fn admitted(ids: &[&str]) -> Option<EventFacts> {
    Some(EventFacts {
        admitted: ids.iter().map(|s| s.to_string()).collect(),
        descriptions: ids
            .iter()
            .map(|s| (s.to_string(), format!("Task {s}: make the thing")))
            .collect(),
        tools: vec![],
        checks_not_run: vec![],
        setbacks: vec![],
        ..EventFacts::default()
    })
}

fn spec(cap: f64) -> Option<SpecFacts> {
    Some(SpecFacts {
        goal: "g".into(),
        hard_cap_usd: cap,
        tools_allowed: vec!["read_file".into(), "write_file".into()],
        api_key_env: Some("ANTHROPIC_API_KEY".into()),
        wall_clock_limit_s: 300.0,
    })
}

fn honest(ending: Ending, predicate: bool) -> Gathered {
    Gathered {
        exit_code: Some(ending.exit_code()),
        predicate: Some(PredicateRerun {
            passed: Ok(predicate),
            hard_cap_usd: Some(28.0),
        }),
        events: admitted(&["t0", "t1", "t2", "t3"]),
        spec: spec(28.0),
        ..Gathered::default()
    }
}

fn case_copy() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let c = t.path();
    std::fs::create_dir_all(c.join("workspace/src")).unwrap();
    std::fs::create_dir_all(c.join("checks")).unwrap();
    std::fs::write(c.join("workspace/src/a.txt"), "before\n").unwrap();
    std::fs::write(
        c.join("checks/ok.sh"),
        "#!/bin/sh\ngrep -q after src/a.txt\n",
    )
    .unwrap();
    std::fs::write(
        c.join("run.toml"),
        r#"goal = "Make src/a.txt say after."
workspace = "workspace"
[predicate]
command = ["sh", "checks/ok.sh"]
[budget]
hard_cap_usd = 0.02
wall_clock_limit_s = 300
task_budget_tokens = 2000
[model]
protocol = "openai"
base_url = "http://127.0.0.1:9/v1"
executor = "m"
[prices.m]
input_usd_per_mtok = 0.1
output_usd_per_mtok = 0.4
"#,
    )
    .unwrap();
    t
}

fn captured(call_key: &str, body: Value) -> Captured {
    Captured {
        call_key: call_key.into(),
        attempt: 0,
        body: body.to_string(),
    }
}

fn judge_body(user: &str, system: &str) -> Value {
    serde_json::json!({
        "system": system,
        "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}],
    })
}
