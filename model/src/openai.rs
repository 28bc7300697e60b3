//! OpenAI-compatible chat completions adapter (`POST {base}/chat/completions`,
//! base ending in `/v1`), as served by OpenAI, llama.cpp, vLLM and Ollama.
//! Pure functions.

use serde_json::{json, Map, Value};

use super::types::{ModelRequest, StopReason, ToolCall, Turn, Usage};
use super::{deterministic_id, opt_u64, parse_object, req_u64, short, ParsedReply, ScriptedReply};

/// Prefix for failed tool results: the `tool` role has no is_error field, so
/// the model learns of the failure from the content.
pub const TOOL_ERROR_PREFIX: &str = "ERROR: ";

pub fn request_body(req: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    messages.extend(req.turns.iter().map(message));
    // Last, after everything cacheable, so the prompt prefix stays identical.
    if let Some(notice) = &req.trailing_notice {
        messages.push(json!({"role": "user", "content": notice}));
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(req.max_tokens));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(
                req.tools
                    .iter()
                    .map(|t| {
                        json!({"type": "function",
                               "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
                    })
                    .collect(),
            ),
        );
    }
    if let Some(schema) = &req.json_schema {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": true}}),
        );
    }
    Value::Object(body)
}

/// One turn as a chat message; field order is part of the recorded bodies
/// the replay server matches, so it must not change.
fn message(turn: &Turn) -> Value {
    match turn {
        Turn::User { text } => json!({"role": "user", "content": text}),
        Turn::Assistant { text, tool_calls } => assistant_message(text, tool_calls),
        Turn::ToolResult {
            call_id,
            content,
            is_error,
        } => {
            let content = if *is_error {
                format!("{TOOL_ERROR_PREFIX}{content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

fn assistant_message(text: &str, tool_calls: &[ToolCall]) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    // `content: null` with tool calls is what the API itself returns;
    // some servers reject an empty string there.
    let content = if text.is_empty() && !tool_calls.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    m.insert("content".into(), content);
    if !tool_calls.is_empty() {
        m.insert(
            "tool_calls".into(),
            Value::Array(
                tool_calls
                    .iter()
                    .map(|c| {
                        // Always a valid JSON string, even for an
                        // `{"__unparsed": raw}` input: servers that
                        // re-parse arguments for their chat template
                        // (llama.cpp, vLLM) would reject the raw text.
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.input.to_string()}})
                    })
                    .collect(),
            ),
        );
    }
    Value::Object(m)
}

/// Parse `choices[0]`. Usage is mapped so nothing is double-billed:
/// `prompt_tokens` INCLUDES the cached tokens, so
/// `input_tokens = prompt_tokens - cached_tokens`, `cache_read = cached_tokens`,
/// `cache_creation = 0` (the protocol does not report cache writes).
pub fn parse_response(body: &[u8]) -> Result<ParsedReply, String> {
    let obj = parse_object(body)?;
    if let Some(err) = obj.get("error") {
        return Err(format!("body is an error object: {}", short(err)));
    }
    let choice = match obj.get("choices") {
        Some(Value::Array(a)) => a.first().ok_or("choices is empty")?,
        Some(other) => return Err(format!("choices is not an array: {}", short(other))),
        None => return Err("choices is missing".into()),
    };
    let message = match choice.get("message") {
        Some(m @ Value::Object(_)) => m,
        _ => return Err("choices[0].message is missing or not an object".into()),
    };

    let raw_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => &a[..],
        Some(other) => {
            return Err(format!(
                "message.tool_calls is not an array: {}",
                short(other)
            ))
        }
    };
    let mut text = message_text(message, raw_calls)?;
    let tool_calls = tool_calls(raw_calls)?;
    let finish = choice.get("finish_reason").and_then(Value::as_str);
    let mut stop_reason = stop_reason(finish, !tool_calls.is_empty());
    if let Some(Value::String(refusal)) = message.get("refusal") {
        stop_reason = StopReason::Refusal;
        if text.is_empty() {
            text = refusal.clone();
        }
    }
    let usage = usage(obj.get("usage"))?;
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(ParsedReply {
        text,
        tool_calls,
        stop_reason,
        usage,
        model,
    })
}

/// The message's text: a string, null, or content parts (some servers send
/// those; the text ones are kept).
fn message_text(message: &Value, raw_calls: &[Value]) -> Result<String, String> {
    Ok(match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => String::new(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(other) => {
            return Err(format!(
                "message.content has an unexpected type: {}",
                short(other)
            ))
        }
        // A message with neither content nor tool calls carries nothing: malformed.
        None if raw_calls.is_empty() && message.get("refusal").is_none_or_null() => {
            return Err("message has no content and no tool_calls".into())
        }
        None => String::new(),
    })
}

fn tool_calls(raw_calls: &[Value]) -> Result<Vec<ToolCall>, String> {
    let mut tool_calls = Vec::with_capacity(raw_calls.len());
    for (i, c) in raw_calls.iter().enumerate() {
        let f = c
            .get("function")
            .ok_or_else(|| format!("tool_calls[{i}] has no function"))?;
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("tool_calls[{i}].function has no name"))?;
        // Older llama.cpp builds omit ids; a stable synthetic one keeps
        // tool results matchable.
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("call_{i}"));
        let input = match f.get("arguments") {
            Some(Value::String(raw)) => parse_arguments(raw),
            // Lenient: some servers send the object itself.
            Some(v @ Value::Object(_)) => v.clone(),
            None | Some(Value::Null) => json!({}),
            Some(other) => json!({"__unparsed": other.to_string()}),
        };
        tool_calls.push(ToolCall {
            id,
            name: name.into(),
            input,
        });
    }
    Ok(tool_calls)
}

fn stop_reason(finish: Option<&str>, has_tool_calls: bool) -> StopReason {
    match finish {
        Some("stop") if has_tool_calls => StopReason::ToolUse, // Ollama reports "stop" with tool calls
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.into()),
        None => StopReason::Other(String::new()),
    }
}

/// Without usage the call cannot be billed, so a reply without it is
/// unparseable.
fn usage(u: Option<&Value>) -> Result<Usage, String> {
    match u {
        Some(u @ Value::Object(_)) => {
            let prompt = req_u64(u, "prompt_tokens", "usage")?;
            let completion = req_u64(u, "completion_tokens", "usage")?;
            let cached = match u.get("prompt_tokens_details") {
                Some(d @ Value::Object(_)) => {
                    opt_u64(d, "cached_tokens", "usage.prompt_tokens_details")?
                }
                _ => 0,
            }
            // A server reporting more cached than prompt tokens would otherwise
            // make total() exceed what was sent.
            .min(prompt);
            Ok(Usage {
                input_tokens: prompt - cached,
                output_tokens: completion,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            })
        }
        Some(other) => Err(format!("usage is not an object: {}", short(other))),
        None => Err("usage is missing".into()),
    }
}

/// Arguments arrive as a JSON string. Anything that is not a JSON object is
/// kept verbatim under `__unparsed` so the tool layer can answer with an error
/// observation instead of running a tool on garbage. An empty string (a
/// no-argument call, as some local servers send it) is `{}`.
fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"__unparsed": raw}),
    }
}

trait NullExt {
    fn is_none_or_null(&self) -> bool;
}
impl NullExt for Option<&Value> {
    fn is_none_or_null(&self) -> bool {
        matches!(self, None | Some(Value::Null))
    }
}

/// Render a scripted reply as a chat completion. `cache_creation_input_tokens`
/// has no OpenAI field: it is folded into `prompt_tokens` (so it parses back
/// as plain input tokens). An `{"__unparsed": raw}` input renders `raw`
/// verbatim so fixtures can script malformed arguments.
pub fn render_response(reply: &ScriptedReply) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let content = if reply.text.is_empty() && !reply.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(reply.text)
    };
    message.insert("content".into(), content);
    if !reply.tool_calls.is_empty() {
        message.insert(
            "tool_calls".into(),
            Value::Array(
                reply
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = match unparsed_raw(&c.input) {
                            Some(raw) => raw.to_string(),
                            None => c.input.to_string(),
                        };
                        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect(),
            ),
        );
    }
    let finish = match &reply.stop_reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(s) => s.as_str(),
    };
    let u = &reply.usage;
    let prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    let mut body = json!({
        "object": "chat.completion",
        "created": 0,
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": u.output_tokens,
            "total_tokens": prompt + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
        },
    });
    let id = format!("chatcmpl-{}", deterministic_id(&body));
    body["id"] = json!(id);
    body
}

fn unparsed_raw(input: &Value) -> Option<&str> {
    let m = input.as_object()?;
    if m.len() == 1 {
        m.get("__unparsed")?.as_str()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::{conversation, scripted};

    #[test]
    fn multi_turn_request_matches_literal_json() {
        let body = request_body(&conversation());
        let expected = json!({
            "model": "test-model",
            "max_tokens": 1024,
            "messages": [
                {"role": "system", "content": "You are careful."},
                {"role": "user", "content": "Do task t1."},
                {"role": "assistant", "content": "Reading two files.", "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_a", "content": "alpha"},
                {"role": "tool", "tool_call_id": "call_b", "content": "ERROR: no such file"},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "Continue."}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file in the workspace.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
            }}]
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn trailing_notice_is_final_user_message_and_not_in_system() {
        let mut req = conversation();
        req.turns.truncate(4); // ends with tool results
        req.trailing_notice = Some("NOTICE: 70% spent".into());
        let body = request_body(&req);
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(
            msgs.last().unwrap(),
            &json!({"role": "user", "content": "NOTICE: 70% spent"})
        );
        assert_eq!(msgs[0]["role"], "system");
        assert!(!msgs[0]["content"].as_str().unwrap().contains("NOTICE"));
    }

    #[test]
    fn json_schema_becomes_response_format_and_empty_text_with_calls_is_null() {
        let mut req = conversation();
        req.json_schema =
            Some(json!({"type": "object", "properties": {"score": {"type": "number"}}}));
        req.turns = vec![Turn::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "t".into(),
                input: json!({"__unparsed": "{bad"}),
            }],
        }];
        req.tools.clear();
        let body = request_body(&req);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "reply",
                   "schema": {"type": "object", "properties": {"score": {"type": "number"}}}, "strict": true}})
        );
        assert!(body.get("tools").is_none());
        let m = &body["messages"][1];
        assert_eq!(m["content"], Value::Null);
        // History always carries valid JSON arguments.
        let args = m["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(args).unwrap(),
            json!({"__unparsed": "{bad"})
        );
    }

    #[test]
    fn cached_tokens_are_mapped_without_double_billing() {
        let body = br#"{"id":"x","model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},
            "finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,
            "prompt_tokens_details":{"cached_tokens":800}}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 200,
                output_tokens: 50,
                cache_read_input_tokens: 800,
                cache_creation_input_tokens: 0
            }
        );
        assert_eq!(r.usage.input_tokens + r.usage.cache_read_input_tokens, 1000);
        assert_eq!(
            (r.text.as_str(), r.stop_reason, r.model.as_str()),
            ("hi", StopReason::EndTurn, "qwen")
        );

        // No details (llama.cpp) or null cached_tokens: all prompt tokens are input.
        for details in [
            "",
            r#","prompt_tokens_details":null"#,
            r#","prompt_tokens_details":{"cached_tokens":null}"#,
        ] {
            let b = format!(
                r#"{{"choices":[{{"message":{{"content":"x"}},"finish_reason":"length"}}],"usage":{{"prompt_tokens":7,"completion_tokens":3{details}}}}}"#
            );
            let r = parse_response(b.as_bytes()).unwrap();
            assert_eq!(
                r.usage,
                Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                    ..Default::default()
                }
            );
            assert_eq!(r.stop_reason, StopReason::MaxTokens);
        }
    }

    #[test]
    fn tool_calls_parse_and_malformed_arguments_become_unparsed() {
        let body = br#"{"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a\"}"}},
            {"id":"call_2","type":"function","function":{"name":"write_file","arguments":"{\"path\": \"a\", "}},
            {"id":"call_3","type":"function","function":{"name":"list","arguments":""}},
            {"type":"function","function":{"name":"x","arguments":"[1]"}}
        ]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.text, "");
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.tool_calls[0].input, json!({"path": "a"}));
        assert_eq!(
            r.tool_calls[1].input,
            json!({"__unparsed": "{\"path\": \"a\", "})
        );
        assert_eq!(r.tool_calls[2].input, json!({}));
        assert_eq!(r.tool_calls[3].input, json!({"__unparsed": "[1]"}));
        assert_eq!(r.tool_calls[3].id, "call_3");
    }

    #[test]
    fn stop_with_tool_calls_is_tool_use() {
        let body = br#"{"choices":[{"message":{"content":"","tool_calls":[{"id":"a","function":{"name":"t","arguments":"{}"}}]},
            "finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        assert_eq!(
            parse_response(body).unwrap().stop_reason,
            StopReason::ToolUse
        );
    }

    #[test]
    fn refusals_parse_as_normal_replies() {
        let body = br#"{"model":"m","choices":[{"message":{"role":"assistant","content":null,
            "refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":5}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.stop_reason, StopReason::Refusal);
        assert_eq!(r.text, "I can't help with that.");

        let body =
            br#"{"choices":[{"message":{"content":"filtered"},"finish_reason":"content_filter"}],
            "usage":{"prompt_tokens":4,"completion_tokens":0}}"#;
        assert_eq!(
            parse_response(body).unwrap().stop_reason,
            StopReason::Refusal
        );
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let cases: &[&[u8]] = &[
            b"",
            b"<html>502</html>",
            br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tok"#,
            br#"{"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":{},"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":[{"message":{"role":"assistant"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#,
            br#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":"1","completion_tokens":1}}"#,
            br#"{"choices":[{"message":{"content":7}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"choices":[{"message":{"tool_calls":[{"function":{}}]}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            br#"{"error":{"message":"model not loaded","type":"server_error"}}"#,
            b"null",
        ];
        for c in cases {
            assert!(
                parse_response(c).is_err(),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn render_is_inverse_of_parse() {
        let r = scripted();
        let body = render_response(&r);
        assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert_eq!(body["usage"]["prompt_tokens"], 400);
        assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 300);
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(parse_response(body.to_string().as_bytes()).unwrap(), r);

        // Malformed arguments can be scripted and come back as __unparsed.
        let mut bad = r.clone();
        bad.tool_calls[0].input = json!({"__unparsed": "{\"path\": "});
        let body = render_response(&bad);
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"path\": "
        );
        assert_eq!(parse_response(body.to_string().as_bytes()).unwrap(), bad);

        for sr in [
            StopReason::EndTurn,
            StopReason::MaxTokens,
            StopReason::Refusal,
            StopReason::Other("x".into()),
        ] {
            let r2 = ScriptedReply {
                stop_reason: sr,
                tool_calls: vec![],
                text: "t".into(),
                ..r.clone()
            };
            assert_eq!(
                parse_response(render_response(&r2).to_string().as_bytes()).unwrap(),
                r2
            );
        }
    }
}
