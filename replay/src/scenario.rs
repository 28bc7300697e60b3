//! Scripted scenarios: a compact, hand-writable description of what the model
//! answers on each call of a run, compiled into a cassette in the replay
//! format (`recordings/README.md`). Cassettes made this way say so in their
//! `made` block (`how: "scripted"`), next to live recordings.
//!
//! A call's role comes from its call key prefix (`plan/`, `execute/`,
//! `judge/`, `replan/`), the same keys the harness sends.

use model::types::{Protocol, StopReason, ToolCall, Usage};
use model::{render_response, ScriptedReply};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub case: String,
    pub protocol: Protocol,
    pub model: String,
    #[serde(default)]
    pub notes: String,
    /// When the scenario was written (goes into the cassette's `made.when`,
    /// so regenerating a cassette is byte-for-byte reproducible).
    #[serde(default)]
    pub when: Option<String>,
    pub runs: Vec<ScriptRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRun {
    pub calls: Vec<ScriptCall>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub key: String,
    #[serde(default)]
    pub text: String,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
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
    match key.split('/').next().unwrap_or("") {
        "plan" => Ok("plan"),
        "execute" => Ok("execute"),
        "judge" => Ok("judge"),
        "replan" => Ok("replan"),
        "compact" => Ok("compact"),
        "lesson" => Ok("lesson"),
        other => Err(format!(
            "call key {key:?}: role prefix {other:?} is not plan/execute/judge/replan/compact/lesson"
        )),
    }
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
            text: self.text.clone(),
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

    /// Compile to a cassette (JSON value in the replay format).
    pub fn to_cassette(&self, made_when: &str, made_by: &str) -> Result<Value, String> {
        let path = model::endpoint_path(self.protocol);
        let path = match self.protocol {
            Protocol::Anthropic => path.to_string(),
            Protocol::Openai => format!("/v1{path}"),
        };
        let mut runs = vec![];
        for (ri, run) in self.runs.iter().enumerate() {
            let mut interactions = vec![];
            let mut seen = std::collections::BTreeSet::new();
            for c in &run.calls {
                if !seen.insert(c.key.clone()) {
                    return Err(format!("runs[{ri}]: call key {:?} appears twice", c.key));
                }
                let role = role_of_key(&c.key).map_err(|e| format!("runs[{ri}]: {e}"))?;
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
                interactions.push(it);
            }
            runs.push(json!({"run": ri, "interactions": interactions}));
        }
        Ok(json!({
            "format": "harness-cassette/1",
            "case": self.case,
            "protocol": self.protocol,
            "model": self.model,
            "made": {"how": "scripted", "when": self.when.as_deref().unwrap_or(made_when), "by": made_by, "temperature": null, "seed": null, "notes": self.notes},
            "runs": runs,
        }))
    }
}
