//! Scripted scenarios: a compact, hand-writable description of what the model
//! answers on each call of a run, compiled into a cassette in the replay
//! format (`recordings/README.md`). Cassettes made this way say so in their
//! `made` block (`how: "scripted"`), next to live recordings.
//!
//! A call's role comes from its call key prefix (`plan/`, `execute/`,
//! `judge/`, `replan/`), the same keys the harness sends.

use crate::cassette::AlternativesCheck;
use model::types::{Protocol, StopReason, ToolCall, Usage};
use model::{render_response, ScriptedReply};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Where an editor finds this file's JSON Schema (docs/schemas/, by a
    /// path relative to the file); read by nothing else.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    pub case: String,
    pub protocol: Protocol,
    pub model: String,
    #[serde(default)]
    pub notes: String,
    /// When the scenario was written (goes into the cassette's `made.when`,
    /// so regenerating a cassette is byte-for-byte reproducible).
    #[serde(default)]
    pub when: Option<String>,
    /// Request fields these scripted replies are deliberately indifferent
    /// to (recordings/README.md, "Recording conditions"): copied to the
    /// cassette's `indifferent_to`. Absent = indifferent to nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indifferent_to: Vec<model::conditions::ConditionField>,
    pub runs: Vec<ScriptRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptRun {
    pub calls: Vec<ScriptCall>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub key: String,
    /// Answer with this call only when the request contains this text (in
    /// one of its JSON string values): several calls of a run may share a
    /// key, all but at most one with a condition; the first whose text the
    /// request contains is served, else the one without (recordings/README.md,
    /// "Conditional replies").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_request_contains: Option<String>,
    #[serde(default)]
    pub text: String,
    /// A plan (or replan) reply written as the JSON object it is
    /// (`{"tasks": [...]}`) instead of as an escaped string in `text`: the
    /// reply's text is this object's JSON. Not together with `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// At most one tool call per turn is what the harness runs; more may be
    /// scripted to test that the others are ignored.
    #[serde(default)]
    pub tools: Vec<ScriptTool>,
    #[serde(default)]
    pub stop: Option<StopReason>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Responses served on attempts before the real one: e.g. a 429 then a
    /// 500, to script transient failures.
    #[serde(default)]
    pub faults_before: Vec<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptTool {
    pub name: String,
    pub input: Value,
}

/// Default usage for a scripted call whose author did not give one: sized
/// like the seed's task calls (a 3.5k prompt, ~700 tokens out).
pub const DEFAULT_USAGE: Usage = Usage {
    input_tokens: 3500,
    output_tokens: 700,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
};

pub fn role_of_key(key: &str) -> Result<&'static str, String> {
    model::types::CallRole::of_call_key(key)
        .map(|r| r.as_str())
        .ok_or_else(|| {
            format!(
                "call key {key:?}: role prefix {:?} is not plan/execute/judge/replan/compact/lesson",
                key.split('/').next().unwrap_or("")
            )
        })
}

impl ScriptCall {
    pub fn reply(&self, model: &str) -> ScriptedReply {
        let tool_calls: Vec<ToolCall> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| ToolCall {
                id: format!("call_{}_{}", self.key.replace('/', "_"), i),
                name: t.name.clone(),
                input: t.input.clone(),
            })
            .collect();
        let stop = self.stop.clone().unwrap_or(if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        ScriptedReply {
            text: match &self.plan {
                Some(p) => p.to_string(),
                None => self.text.clone(),
            },
            tool_calls,
            stop_reason: stop,
            usage: self.usage.unwrap_or(DEFAULT_USAGE),
            model: model.to_string(),
        }
    }
}

impl Scenario {
    /// Load a scenario file; errors name the file and what was expected.
    pub fn load(path: &std::path::Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: line {} column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })
    }

    /// Compile to a cassette (JSON value in the replay format) whose replies
    /// hold under `conditions` (each role's, as the case's run spec sends
    /// them: harness::recording_conditions).
    pub fn to_cassette(
        &self,
        made_when: &str,
        made_by: &str,
        conditions: &std::collections::BTreeMap<
            model::types::CallRole,
            model::conditions::Conditions,
        >,
    ) -> Result<Value, String> {
        let path = model::endpoint_path(self.protocol);
        let path = match self.protocol {
            Protocol::Anthropic => path.to_string(),
            Protocol::Openai => format!("/v1{path}"),
        };
        let mut runs = vec![];
        for (ri, run) in self.runs.iter().enumerate() {
            let mut interactions = vec![];
            let list = format!("runs[{ri}].calls");
            // The cassette loader checks the same rules, but naming the
            // scenario's own fields points the author at the line to fix.
            let mut alternatives = AlternativesCheck::new(&list, "key", ri);
            for (ci, c) in run.calls.iter().enumerate() {
                let role = role_of_key(&c.key).map_err(|e| format!("{list}[{ci}]: {e}"))?;
                if c.plan.is_some() && !c.text.is_empty() {
                    return Err(format!(
                        "field `{list}[{ci}].plan`: given together with `text`; expected one of them (the plan as an object, or any reply as text)"
                    ));
                }
                alternatives
                    .admit(ci, &c.key, c.when_request_contains.as_deref(), role)
                    .map_err(|r| format!("field `{list}[{ci}].{}`: {}", r.field, r.message))?;
                let body = render_response(self.protocol, &c.reply(&self.model));
                let mut it = json!({
                    "role": role,
                    "call_key": c.key,
                    "request": {"method": "POST", "path": path, "body": null, "body_sha256": null},
                    "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": body},
                    "latency_ms": c.latency_ms.unwrap_or(0),
                });
                if !c.faults_before.is_empty() {
                    it["faults_before"] = Value::Array(c.faults_before.clone());
                }
                if let Some(w) = &c.when_request_contains {
                    it["when_request_contains"] = Value::String(w.clone());
                }
                interactions.push(it);
            }
            runs.push(json!({"run": ri, "interactions": interactions}));
        }
        let mut c = json!({
            "format": crate::cassette::FORMAT,
            "case": self.case,
            "protocol": self.protocol,
            "model": self.model,
            "made": {"how": "scripted", "when": self.when.as_deref().unwrap_or(made_when), "by": made_by, "temperature": null, "seed": null, "notes": self.notes},
            "conditions": conditions,
        });
        if !self.indifferent_to.is_empty() {
            c["indifferent_to"] = json!(self.indifferent_to);
        }
        c["runs"] = Value::Array(runs);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(calls: Value) -> Scenario {
        serde_json::from_value(json!({
            "case": "s", "protocol": "anthropic", "model": "m", "when": "2026-01-01",
            "runs": [{"calls": calls}]
        }))
        .unwrap()
    }

    #[test]
    fn conditional_calls_compile_to_conditional_interactions() {
        let sc = scenario(json!([
            {"key": "plan/0", "text": "{}"},
            {"key": "execute/t1/a0/0", "text": "explores"},
            {"key": "execute/t1/a0/0", "text": "uses it", "when_request_contains": "Workaround: pin"},
        ]));
        let v = sc
            .to_cassette(
                "1970-01-01",
                "test",
                &model::conditions::every_role_as(Protocol::Anthropic, &json!({})),
            )
            .unwrap();
        let its = v["runs"][0]["interactions"].as_array().unwrap();
        assert!(
            its[0].get("when_request_contains").is_none(),
            "omitted when absent"
        );
        assert!(its[1].get("when_request_contains").is_none());
        assert_eq!(its[2]["when_request_contains"], "Workaround: pin");
        let c: crate::cassette::Cassette = serde_json::from_value(v).unwrap();
        c.check(std::path::Path::new("s.json")).unwrap();
    }

    #[test]
    fn ambiguous_calls_are_refused_naming_the_scenario_field() {
        let e = scenario(json!([{"key": "plan/0"}, {"key": "plan/0"}]))
            .to_cassette(
                "1970-01-01",
                "test",
                &model::conditions::every_role_as(Protocol::Anthropic, &json!({})),
            )
            .unwrap_err();
        assert!(
            e.starts_with("field `runs[0].calls[1].key`: duplicate (run 0, call_key \"plan/0\"): already at runs[0].calls[0]"),
            "{e}"
        );
        let e = scenario(json!([{"key": "plan/0", "when_request_contains": ""}]))
            .to_cassette(
                "1970-01-01",
                "test",
                &model::conditions::every_role_as(Protocol::Anthropic, &json!({})),
            )
            .unwrap_err();
        assert!(
            e.starts_with("field `runs[0].calls[0].when_request_contains`: is empty"),
            "{e}"
        );
    }
}
