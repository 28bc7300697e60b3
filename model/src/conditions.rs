//! Recording conditions: the part of a request that the model's answer
//! depends on besides the conversation itself. A recorded reply holds only
//! for a request sent under the same conditions; replay compares them on
//! every call and refuses to answer across a difference (another model,
//! prompt, tool set, sampling or length limit), so a verdict never rests on
//! a reply the recording did not observe.
//!
//! Read from the wire body of either protocol, so the same function serves
//! the recorder, the replay server and the bench:
//!
//! | field | Anthropic Messages | OpenAI chat completions |
//! | --- | --- | --- |
//! | `model` | `model` | `model` |
//! | `temperature` | `temperature` | `temperature` |
//! | `seed` | (none in the API) | `seed` |
//! | `max_tokens` | `max_tokens` | `max_tokens` or `max_completion_tokens` |
//! | `system` | `system` (string or blocks; the harness appends the JSON-schema instruction here) | every `messages[]` entry whose role is `system` or `developer` |
//! | `tools` | `tools` | `tools` |
//! | `other` | every other top-level field (`tool_choice`, `top_p`, `top_k`, `stop_sequences`, `thinking`, ...) | every other top-level field (`response_format`, `tool_choice`, `top_p`, `stop`, `parallel_tool_calls`, `n`, ...) |
//!
//! Left out, because the answer does not depend on them: the conversation
//! (`messages` other than system ones: matched by call key), `stream`,
//! `stream_options`, `metadata` and `user` (transport and bookkeeping). A
//! field nobody listed is in `other`, so a new request field is a condition
//! until someone decides otherwise.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canonical::canonical_sha256;
use crate::types::Protocol;

/// Top-level request fields that are not conditions (see the module doc).
const NOT_CONDITIONS: &[&str] = &["messages", "stream", "stream_options", "metadata", "user"];
/// Fields read into their own condition, so left out of `other`.
const OWN_FIELDS: &[&str] = &[
    "model",
    "temperature",
    "seed",
    "max_tokens",
    "max_completion_tokens",
    "system",
    "tools",
];
/// Largest difference between two temperatures that is still the same
/// setting (a float parsed twice may differ in its last bit).
const TEMPERATURE_EPSILON: f64 = 1e-9;

/// The conditions one role's requests were (or are) sent under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u64>,
    /// SHA-256 of the canonical JSON of the system prompt (null when none).
    pub system_sha256: String,
    /// SHA-256 of the canonical JSON of the tool definitions (null when none).
    pub tools_sha256: String,
    /// SHA-256 of the canonical JSON of every other answer-relevant field.
    pub other_sha256: String,
}

/// One field of [`Conditions`]: what a cassette may declare itself
/// indifferent to, and what a difference names.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ConditionField {
    Model,
    Temperature,
    Seed,
    MaxTokens,
    System,
    Tools,
    Other,
}

impl ConditionField {
    /// Every field, in the order a difference is looked for.
    pub const ALL: [ConditionField; 7] = [
        ConditionField::Model,
        ConditionField::Temperature,
        ConditionField::Seed,
        ConditionField::MaxTokens,
        ConditionField::System,
        ConditionField::Tools,
        ConditionField::Other,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionField::Model => "model",
            ConditionField::Temperature => "temperature",
            ConditionField::Seed => "seed",
            ConditionField::MaxTokens => "max_tokens",
            ConditionField::System => "system",
            ConditionField::Tools => "tools",
            ConditionField::Other => "other",
        }
    }
}

impl std::fmt::Display for ConditionField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first field on which a request's conditions differ from the
/// recording's, with both values as a person reads them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Difference {
    pub field: ConditionField,
    pub recorded: String,
    pub requested: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: recorded {}, requested {}",
            self.field, self.recorded, self.requested
        )
    }
}

impl Conditions {
    /// The conditions of a wire body in `protocol`. Never fails: a body
    /// that is not a JSON object has no model and the digests of null, which
    /// differ from any real recording's.
    pub fn of_body(protocol: Protocol, body: &Value) -> Conditions {
        let empty = Map::new();
        let obj = body.as_object().unwrap_or(&empty);
        let system = match protocol {
            Protocol::Anthropic => obj.get("system").cloned().unwrap_or(Value::Null),
            Protocol::Openai => system_messages(obj.get("messages")),
        };
        let other: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| {
                !NOT_CONDITIONS.contains(&k.as_str()) && !OWN_FIELDS.contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Conditions {
            model: obj.get("model").and_then(Value::as_str).map(str::to_string),
            temperature: obj.get("temperature").and_then(Value::as_f64),
            seed: obj.get("seed").and_then(Value::as_u64),
            max_tokens: obj
                .get("max_tokens")
                .or_else(|| obj.get("max_completion_tokens"))
                .and_then(Value::as_u64),
            system_sha256: canonical_sha256(&system),
            tools_sha256: canonical_sha256(obj.get("tools").unwrap_or(&Value::Null)),
            other_sha256: canonical_sha256(&Value::Object(other)),
        }
    }

    /// The conditions of a body given as bytes (a request as it arrived).
    pub fn of_bytes(protocol: Protocol, body: &[u8]) -> Conditions {
        let v = serde_json::from_slice(body).unwrap_or(Value::Null);
        Conditions::of_body(protocol, &v)
    }

    /// The first field, in [`ConditionField::ALL`] order, on which
    /// `requested` differs from these (recorded) conditions, skipping the
    /// fields the recording is declared indifferent to.
    pub fn first_difference(
        &self,
        requested: &Conditions,
        indifferent: &[ConditionField],
    ) -> Option<Difference> {
        ConditionField::ALL
            .iter()
            .copied()
            .filter(|f| !indifferent.contains(f))
            .find_map(|f| {
                let (r, q) = (self.show(f), requested.show(f));
                let same = match f {
                    ConditionField::Temperature => {
                        same_temperature(self.temperature, requested.temperature)
                    }
                    _ => r == q,
                };
                (!same).then_some(Difference {
                    field: f,
                    recorded: r,
                    requested: q,
                })
            })
    }

    /// One field as a person reads it in a difference.
    fn show(&self, f: ConditionField) -> String {
        fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
            v.as_ref().map_or("(not sent)".into(), |v| v.to_string())
        }
        let digest = |h: &str| format!("sha256 {}", &h[..h.len().min(12)]);
        match f {
            ConditionField::Model => opt(&self.model),
            ConditionField::Temperature => opt(&self.temperature),
            ConditionField::Seed => opt(&self.seed),
            ConditionField::MaxTokens => opt(&self.max_tokens),
            ConditionField::System => digest(&self.system_sha256),
            ConditionField::Tools => digest(&self.tools_sha256),
            ConditionField::Other => digest(&self.other_sha256),
        }
    }
}

/// Every role under the conditions of one body: for fixtures and for a
/// cassette that is indifferent to everything but says so.
pub fn every_role_as(
    protocol: Protocol,
    body: &Value,
) -> std::collections::BTreeMap<crate::types::CallRole, Conditions> {
    let c = Conditions::of_body(protocol, body);
    crate::types::CallRole::ALL
        .iter()
        .map(|r| (*r, c.clone()))
        .collect()
}

fn same_temperature(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= TEMPERATURE_EPSILON,
        _ => false,
    }
}

/// An OpenAI body's system prompt: its system and developer messages, in order.
fn system_messages(messages: Option<&Value>) -> Value {
    let Some(Value::Array(ms)) = messages else {
        return Value::Null;
    };
    let sys: Vec<Value> = ms
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        .map(|m| m["content"].clone())
        .collect();
    if sys.is_empty() {
        Value::Null
    } else {
        Value::Array(sys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn anthropic(model: &str, system: &str) -> Value {
        json!({"model": model, "max_tokens": 1024, "system": system, "temperature": 0.7,
               "messages": [{"role": "user", "content": "hi"}], "stream": false,
               "tools": [{"name": "read_file", "input_schema": {"type": "object"}}]})
    }

    #[test]
    fn the_conversation_is_not_a_condition_but_everything_the_answer_depends_on_is() {
        let a = Conditions::of_body(Protocol::Anthropic, &anthropic("m1", "be careful"));
        let mut other_turns = anthropic("m1", "be careful");
        other_turns["messages"] = json!([{"role": "user", "content": "something else"}]);
        other_turns["stream"] = json!(true);
        let b = Conditions::of_body(Protocol::Anthropic, &other_turns);
        assert_eq!(a.first_difference(&b, &[]), None);

        let model = Conditions::of_body(Protocol::Anthropic, &anthropic("m2", "be careful"));
        let d = a.first_difference(&model, &[]).unwrap();
        assert_eq!(d.to_string(), "model: recorded m1, requested m2");
        let system = Conditions::of_body(Protocol::Anthropic, &anthropic("m1", "be bold"));
        assert_eq!(
            a.first_difference(&system, &[]).unwrap().field,
            ConditionField::System
        );
        // Indifference is per field, and only what is declared.
        assert_eq!(a.first_difference(&model, &[ConditionField::Model]), None);
        assert!(a
            .first_difference(&system, &[ConditionField::Model])
            .is_some());

        for (field, v) in [
            ("temperature", json!(0.2)),
            ("max_tokens", json!(99)),
            ("tools", json!([])),
            ("tool_choice", json!({"type": "any"})),
        ] {
            let mut changed = anthropic("m1", "be careful");
            changed[field] = v;
            let c = Conditions::of_body(Protocol::Anthropic, &changed);
            assert!(a.first_difference(&c, &[]).is_some(), "{field}");
        }
    }

    #[test]
    fn an_openai_system_prompt_is_its_system_messages_and_key_order_does_not_matter() {
        let body = |sys: &str| {
            json!({"model": "gpt", "seed": 7, "max_completion_tokens": 50,
                   "response_format": {"type": "json_object"},
                   "messages": [{"role": "system", "content": sys}, {"role": "user", "content": "x"}]})
        };
        let a = Conditions::of_body(Protocol::Openai, &body("s1"));
        assert_eq!((a.seed, a.max_tokens), (Some(7), Some(50)));
        let b = Conditions::of_body(Protocol::Openai, &body("s2"));
        assert_eq!(
            a.first_difference(&b, &[]).unwrap().field,
            ConditionField::System
        );
        let reordered: Value = serde_json::from_str(
            r#"{"response_format": {"type": "json_object"}, "max_completion_tokens": 50, "seed": 7,
                "messages": [{"content": "s1", "role": "system"}, {"role": "user", "content": "y"}], "model": "gpt"}"#,
        )
        .unwrap();
        let c = Conditions::of_body(Protocol::Openai, &reordered);
        assert_eq!(a.first_difference(&c, &[]), None);
        let mut fmt = body("s1");
        fmt["response_format"] = json!({"type": "text"});
        let d = Conditions::of_body(Protocol::Openai, &fmt);
        assert_eq!(
            a.first_difference(&d, &[]).unwrap().field,
            ConditionField::Other
        );
    }

    #[test]
    fn garbage_has_conditions_that_match_no_recording() {
        let real = Conditions::of_body(Protocol::Anthropic, &anthropic("m1", "s"));
        let junk = Conditions::of_bytes(Protocol::Anthropic, b"\x00not json");
        let d = real.first_difference(&junk, &[]).unwrap();
        assert_eq!(d.to_string(), "model: recorded m1, requested (not sent)");
    }
}
