//! Model traffic: protocol-neutral types, two wire adapters and an HTTP client
//! with bounded retries.
//!
//! * [`types`]: what the harness builds and gets back ([`ModelRequest`], [`ModelReply`], ...).
//! * [`anthropic`] / [`openai`]: pure functions between those types and JSON wire
//!   bodies. They are pure so they can be tested against literal JSON and so the
//!   replay tooling can render cassettes with exactly the code that parses them.
//! * [`client`]: one POST per attempt, retries, error classification.
//! * [`conditions`]: what in a request a recorded reply holds for (model,
//!   sampling, length limit, system prompt, tools, the rest), read from a wire body.
//!
//! Base-URL convention (see [`endpoint_path`]): an Anthropic base URL has NO
//! `/v1` (`https://api.anthropic.com`), an OpenAI-compatible base URL already
//! ends in `/v1` (`http://127.0.0.1:8080/v1`), which is what the official SDKs
//! and llama.cpp / vLLM / Ollama documentation use, so users can paste theirs.

pub mod anthropic;
pub mod canonical;
pub mod client;
pub mod conditions;
pub mod gate;
pub mod headers;
pub mod openai;
pub mod retry;
pub mod types;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use client::{wire_body, EndpointConfig, ModelClient, Sampling, StructuredOutput};
pub use conditions::{ConditionField, Conditions, Difference};
pub use retry::{retry_delay_ms, RetryPolicy};
pub use types::{
    CallRole, ModelError, ModelReply, ModelRequest, Protocol, StopReason, ToolCall, ToolDef, Turn,
    Usage,
};

/// A reply as read off the wire, before the client adds attempt bookkeeping.
/// The same shape is what scripted cassettes and fixtures are written from
/// (see [`ScriptedReply`]), so `parse_response(render_response(r)) == r`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    pub model: String,
}

/// What a scripted cassette / test fixture says the model answered. Same
/// struct as [`ParsedReply`] on purpose: render and parse are inverses.
pub type ScriptedReply = ParsedReply;

impl ParsedReply {
    /// Attach the client's bookkeeping to make the harness-facing reply.
    pub fn into_reply(
        self,
        latency_ms: u64,
        attempts: u32,
        billed_unknown_attempts: u32,
    ) -> ModelReply {
        ModelReply {
            text: self.text,
            tool_calls: self.tool_calls,
            stop_reason: self.stop_reason,
            usage: self.usage,
            model: self.model,
            latency_ms,
            attempts,
            billed_unknown_attempts,
        }
    }
}

/// Path appended to the endpoint's base URL (trailing `/` of the base trimmed).
///
/// * Anthropic: `"/v1/messages"`, base URL WITHOUT `/v1` (`https://api.anthropic.com`).
/// * OpenAI-compatible: `"/chat/completions"`, base URL that already ENDS in
///   `/v1` (`https://api.openai.com/v1`, `http://localhost:11434/v1`), the
///   OpenAI SDK convention.
pub fn endpoint_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "/v1/messages",
        Protocol::Openai => "/chat/completions",
    }
}

/// Wire body for `req` in `protocol`.
pub fn request_body(protocol: Protocol, req: &ModelRequest) -> Value {
    match protocol {
        Protocol::Anthropic => anthropic::request_body(req),
        Protocol::Openai => openai::request_body(req),
    }
}

/// Parse a wire reply. `Err(detail)` for anything malformed; never panics.
pub fn parse_response(protocol: Protocol, body: &[u8]) -> Result<ParsedReply, String> {
    match protocol {
        Protocol::Anthropic => anthropic::parse_response(body),
        Protocol::Openai => openai::parse_response(body),
    }
}

/// Wire reply body for a scripted reply (inverse of [`parse_response`]).
pub fn render_response(protocol: Protocol, reply: &ScriptedReply) -> Value {
    match protocol {
        Protocol::Anthropic => anthropic::render_response(reply),
        Protocol::Openai => openai::render_response(reply),
    }
}

/// Short, deterministic id suffix for rendered replies: the same scripted
/// reply always renders to byte-identical JSON, so cassettes diff cleanly.
pub(crate) fn deterministic_id(body: &Value) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(body.to_string().as_bytes());
    hex::encode(&digest[..12])
}

/// Field helpers shared by both parsers: they turn "missing or wrong type"
/// into an error string instead of a panic.
pub(crate) fn req_u64(obj: &Value, field: &str, ctx: &str) -> Result<u64, String> {
    match obj.get(field) {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{ctx}.{field} is not a non-negative integer: {}", short(v))),
        None => Err(format!("{ctx}.{field} is missing")),
    }
}

/// Optional counter: missing or null means 0 (servers omit cache fields).
pub(crate) fn opt_u64(obj: &Value, field: &str, ctx: &str) -> Result<u64, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{ctx}.{field} is not a non-negative integer: {}", short(v))),
    }
}

/// A value shortened for error messages (bodies can be megabytes).
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    truncate_str(&s, 200)
}

/// Truncate on a char boundary, marking the cut.
pub(crate) fn truncate_str(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...[truncated, {} bytes total]", &s[..end], s.len())
}

/// Parse a body into a JSON object, with an error that says what was wrong.
pub(crate) fn parse_object(body: &[u8]) -> Result<serde_json::Map<String, Value>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "body is not valid JSON ({e}); {} bytes, starts {:?}",
            body.len(),
            truncate_str(&String::from_utf8_lossy(&body[..body.len().min(120)]), 120)
        )
    })?;
    match v {
        Value::Object(m) => Ok(m),
        other => Err(format!("body is JSON but not an object: {}", short(&other))),
    }
}

#[cfg(test)]
pub(crate) mod test_fixtures {
    use super::*;
    use serde_json::json;

    /// A multi-turn conversation with two parallel tool calls, their results
    /// (one an error), and a follow-up user turn.
    pub fn conversation() -> ModelRequest {
        ModelRequest {
            role: CallRole::Execute,
            call_key: "execute/t1/a0/2".into(),
            model: "test-model".into(),
            system: "You are careful.".into(),
            turns: vec![
                Turn::User {
                    text: "Do task t1.".into(),
                },
                Turn::Assistant {
                    text: "Reading two files.".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_a".into(),
                            name: "read_file".into(),
                            input: json!({"path": "a.txt"}),
                        },
                        ToolCall {
                            id: "call_b".into(),
                            name: "read_file".into(),
                            input: json!({"path": "b.txt"}),
                        },
                    ],
                },
                Turn::ToolResult {
                    call_id: "call_a".into(),
                    content: "alpha".into(),
                    is_error: false,
                },
                Turn::ToolResult {
                    call_id: "call_b".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
                Turn::Assistant {
                    text: "Done.".into(),
                    tool_calls: vec![],
                },
                Turn::User {
                    text: "Continue.".into(),
                },
            ],
            tools: vec![ToolDef {
                name: "read_file".into(),
                description: "Read a file in the workspace.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            }],
            max_tokens: 1024,
            json_schema: None,
            trailing_notice: None,
        }
    }

    pub fn scripted() -> ScriptedReply {
        ScriptedReply {
            text: "Let me write it.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "write_file".into(),
                input: json!({"path": "out.txt", "content": "hi"}),
            }],
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
                cache_read_input_tokens: 300,
                cache_creation_input_tokens: 0,
            },
            model: "test-model".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_paths_follow_sdk_conventions() {
        assert_eq!(endpoint_path(Protocol::Anthropic), "/v1/messages");
        assert_eq!(endpoint_path(Protocol::Openai), "/chat/completions");
    }

    #[test]
    fn dispatch_round_trips_both_protocols() {
        let r = test_fixtures::scripted();
        for p in [Protocol::Anthropic, Protocol::Openai] {
            let body = render_response(p, &r).to_string();
            assert_eq!(parse_response(p, body.as_bytes()).unwrap(), r, "{p:?}");
            // Deterministic rendering: same reply, same bytes.
            assert_eq!(render_response(p, &r).to_string(), body);
        }
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        let s = "é".repeat(10);
        let t = truncate_str(&s, 3);
        assert!(t.starts_with('é'));
        assert!(t.contains("truncated"));
        assert_eq!(truncate_str("abc", 3), "abc");
    }

    #[test]
    fn into_reply_carries_bookkeeping() {
        let r = test_fixtures::scripted().into_reply(12, 3, 1);
        assert_eq!(
            (r.latency_ms, r.attempts, r.billed_unknown_attempts),
            (12, 3, 1)
        );
        assert_eq!(r.usage.cache_read_input_tokens, 300);
    }
}
