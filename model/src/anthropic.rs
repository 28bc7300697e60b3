//! Anthropic Messages API adapter (`POST {base}/v1/messages`). Pure functions.

use serde_json::{json, Map, Value};

use super::types::{ModelRequest, StopReason, ToolCall, Turn, Usage};
use super::{deterministic_id, opt_u64, parse_object, req_u64, short, ParsedReply, ScriptedReply};

/// The instruction appended to `system` when the caller wants JSON. Anthropic
/// has no response_format, so the schema is stated in words and the harness
/// parses the reply text as JSON.
pub(crate) fn json_instruction(schema: &Value) -> String {
    let printed = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "Answer with a single JSON object and nothing else (no prose, no code fences). \
         It must match this JSON Schema, with its fields in the order the schema lists them:\n{printed}"
    )
}

/// Build the request body. Consecutive turns that map to the same role are
/// merged into one message: the API requires tool results for one assistant
/// turn to come back in ONE user message, and merging a user turn into it keeps
/// roles alternating.
pub fn request_body(req: &ModelRequest) -> Value {
    let messages = messages(req);
    let system = system_text(req);
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(req.max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), json!(system));
    }
    body.insert(
        "messages".into(),
        Value::Array(
            messages
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        ),
    );
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(
                req.tools
                    .iter()
                    .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                    .collect(),
            ),
        );
    }
    Value::Object(body)
}

/// The turns as (role, content blocks), consecutive same-role turns merged,
/// the trailing notice last.
fn messages(req: &ModelRequest) -> Vec<(&'static str, Vec<Value>)> {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            // The API rejects empty content; a turn with nothing to say is dropped.
            return;
        }
        match messages.last_mut() {
            Some((r, content)) if *r == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    };
    for turn in &req.turns {
        match turn {
            Turn::User { text } => push("user", text_block(text)),
            Turn::Assistant { text, tool_calls } => {
                let mut blocks = text_block(text);
                blocks.extend(tool_calls.iter().map(
                    |c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}),
                ));
                push("assistant", blocks);
            }
            Turn::ToolResult {
                call_id,
                content,
                is_error,
            } => push(
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
                ],
            ),
        }
    }
    // The volatile notice goes LAST so the cached prefix (system, tools, earlier
    // messages) stays byte-identical between calls.
    if let Some(notice) = &req.trailing_notice {
        let block = json!({"type": "text", "text": notice});
        match messages.last_mut() {
            Some((r, content)) if *r == "user" => content.push(block),
            _ => messages.push(("user", vec![block])),
        }
    }
    messages
}

/// The system prompt, with the JSON instruction appended when the caller
/// wants JSON (the API has no response_format).
fn system_text(req: &ModelRequest) -> String {
    let mut system = req.system.clone();
    if let Some(schema) = &req.json_schema {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&json_instruction(schema));
    }
    system
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        vec![]
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// Parse a Messages API reply. Unknown block types (thinking, ...) are ignored;
/// a missing `content` array or `usage` is an error, because a reply we cannot
/// bill is treated as unparseable (retried and booked at worst case).
pub fn parse_response(body: &[u8]) -> Result<ParsedReply, String> {
    let obj = parse_object(body)?;
    if let Some(err) = obj.get("error") {
        return Err(format!("body is an error object: {}", short(err)));
    }
    let content = match obj.get("content") {
        Some(Value::Array(a)) => a,
        Some(other) => return Err(format!("content is not an array: {}", short(other))),
        None => return Err("content is missing".into()),
    };
    let mut texts: Vec<&str> = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = block
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("content[{i}] text block has no text"))?;
                if !t.is_empty() {
                    texts.push(t);
                }
            }
            Some("tool_use") => tool_calls.push(tool_use(i, block)?),
            Some(_) => {}
            None => return Err(format!("content[{i}] has no type: {}", short(block))),
        }
    }
    let stop_reason = match obj.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.into()),
        None => StopReason::Other(String::new()),
    };
    let usage = usage(obj.get("usage"))?;
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(ParsedReply {
        text: texts.join("\n"),
        tool_calls,
        stop_reason,
        usage,
        model,
    })
}

/// Content block `i`, a `tool_use`, as a tool call.
fn tool_use(i: usize, block: &Value) -> Result<ToolCall, String> {
    let id = block
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("content[{i}] tool_use has no id"))?;
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("content[{i}] tool_use has no name"))?;
    let input = match block.get("input") {
        Some(v @ Value::Object(_)) => v.clone(),
        // Same contract as OpenAI: non-object input never reaches a tool.
        Some(other) => json!({"__unparsed": other.to_string()}),
        None => json!({}),
    };
    Ok(ToolCall {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn usage(u: Option<&Value>) -> Result<Usage, String> {
    match u {
        Some(u @ Value::Object(_)) => Ok(Usage {
            input_tokens: req_u64(u, "input_tokens", "usage")?,
            output_tokens: req_u64(u, "output_tokens", "usage")?,
            cache_creation_input_tokens: opt_u64(u, "cache_creation_input_tokens", "usage")?,
            cache_read_input_tokens: opt_u64(u, "cache_read_input_tokens", "usage")?,
        }),
        Some(other) => Err(format!("usage is not an object: {}", short(other))),
        None => Err("usage is missing".into()),
    }
}

/// Render a scripted reply as the API would send it. The id is derived from
/// the content, so the same reply always renders to the same bytes.
pub fn render_response(reply: &ScriptedReply) -> Value {
    let mut content = text_block(&reply.text);
    content.extend(
        reply
            .tool_calls
            .iter()
            .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})),
    );
    let stop_reason = match &reply.stop_reason {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::Refusal => "refusal",
        StopReason::Other(s) => s.as_str(),
    };
    let u = &reply.usage;
    let mut body = json!({
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
        },
    });
    let id = format!("msg_{}", deterministic_id(&body));
    body["id"] = json!(id);
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::{conversation, scripted};
    use crate::types::{CallRole, ModelRequest};

    #[test]
    fn multi_turn_request_matches_literal_json() {
        let body = request_body(&conversation());
        let expected = json!({
            "model": "test-model",
            "max_tokens": 1024,
            "system": "You are careful.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Do task t1."}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading two files."},
                    {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "a.txt"}},
                    {"type": "tool_use", "id": "call_b", "name": "read_file", "input": {"path": "b.txt"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_a", "content": "alpha", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "call_b", "content": "no such file", "is_error": true}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": "Continue."}]}
            ],
            "tools": [{
                "name": "read_file",
                "description": "Read a file in the workspace.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
            }]
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn trailing_notice_is_last_block_of_final_user_message_and_not_in_system() {
        let mut req = conversation();
        req.trailing_notice = Some("NOTICE: 70% of budget spent".into());
        let body = request_body(&req);
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 5, "appended to the existing final user message");
        let last = msgs.last().unwrap();
        assert_eq!(last["role"], "user");
        let blocks = last["content"].as_array().unwrap();
        assert_eq!(
            blocks.last().unwrap(),
            &json!({"type": "text", "text": "NOTICE: 70% of budget spent"})
        );
        assert!(!body["system"].as_str().unwrap().contains("NOTICE"));
    }

    #[test]
    fn trailing_notice_after_assistant_or_tool_results_adds_or_extends_user_message() {
        let mut req = conversation();
        req.turns.truncate(5); // ends with assistant "Done."
        req.trailing_notice = Some("N".into());
        let body = request_body(&req);
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            last,
            json!({"role": "user", "content": [{"type": "text", "text": "N"}]})
        );

        req.turns.truncate(4); // ends with tool results: the notice follows them in the same message
        let body = request_body(&req);
        let msgs = body["messages"].as_array().unwrap();
        let blocks = msgs.last().unwrap()["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0]["type"], "tool_result");
        assert_eq!(blocks[2], json!({"type": "text", "text": "N"}));

        // No turns at all: the notice is the only message.
        let req = ModelRequest {
            turns: vec![],
            trailing_notice: Some("N".into()),
            ..conversation()
        };
        assert_eq!(
            request_body(&req)["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "N"}]}])
        );
    }

    #[test]
    fn json_schema_is_stated_in_system_and_tools_omitted_when_empty() {
        let req = ModelRequest {
            role: CallRole::Judge,
            call_key: "judge/0".into(),
            model: "m".into(),
            system: "Judge drift.".into(),
            turns: vec![Turn::User { text: "q".into() }],
            tools: vec![],
            max_tokens: 50,
            json_schema: Some(
                json!({"type": "object", "properties": {"score": {"type": "number"}}}),
            ),
            trailing_notice: None,
        };
        let body = request_body(&req);
        let system = body["system"].as_str().unwrap();
        assert!(system.starts_with("Judge drift.\n\n"));
        assert!(system.contains("single JSON object"));
        assert!(system.contains("schema lists them"));
        assert!(system.contains("\"score\""));
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn parses_all_four_usage_fields_and_tool_use() {
        let body = br#"{
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Writing."},
                {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"path": "a"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 11, "output_tokens": 22, "cache_creation_input_tokens": 33, "cache_read_input_tokens": 44}
        }"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.text, "Writing.");
        assert_eq!(
            r.tool_calls,
            vec![ToolCall {
                id: "toolu_1".into(),
                name: "write_file".into(),
                input: json!({"path": "a"})
            }]
        );
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 11,
                output_tokens: 22,
                cache_creation_input_tokens: 33,
                cache_read_input_tokens: 44
            }
        );
        assert_eq!(r.model, "claude-x");
    }

    #[test]
    fn missing_cache_fields_are_zero_and_stop_reasons_map() {
        for (wire, want) in [
            ("end_turn", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("refusal", StopReason::Refusal),
            ("pause_turn", StopReason::Other("pause_turn".into())),
        ] {
            let body = json!({"content": [], "stop_reason": wire, "model": "m",
                              "usage": {"input_tokens": 1, "output_tokens": 2}});
            let r = parse_response(body.to_string().as_bytes()).unwrap();
            assert_eq!(r.stop_reason, want);
            assert_eq!(
                r.usage,
                Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    ..Default::default()
                }
            );
        }
    }

    #[test]
    fn refusal_is_a_normal_reply() {
        let body = br#"{"model":"m","content":[{"type":"text","text":"I can't help with that."}],
                        "stop_reason":"refusal","usage":{"input_tokens":5,"output_tokens":6}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.stop_reason, StopReason::Refusal);
        assert_eq!(r.text, "I can't help with that.");
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let cases: &[&[u8]] = &[
            b"",
            b"not json",
            br#"{"content": [{"type": "text", "text": "hi"}], "usage": {"input_tok"#,
            br#"[1,2]"#,
            br#"{"usage": {"input_tokens": 1, "output_tokens": 1}}"#,
            br#"{"content": "x", "usage": {"input_tokens": 1, "output_tokens": 1}}"#,
            br#"{"content": []}"#,
            br#"{"content": [], "usage": {"input_tokens": -1, "output_tokens": 1}}"#,
            br#"{"content": [{"type": "tool_use", "name": "x"}], "usage": {"input_tokens": 1, "output_tokens": 1}}"#,
            br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            &[0xff, 0xfe, 0x00],
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
    fn render_is_inverse_of_parse_with_deterministic_id() {
        let r = scripted();
        let body = render_response(&r);
        assert!(body["id"].as_str().unwrap().starts_with("msg_"));
        assert_eq!(body["usage"]["cache_read_input_tokens"], 300);
        assert_eq!(parse_response(body.to_string().as_bytes()).unwrap(), r);
        assert_eq!(render_response(&r), body);
        let mut other = r.clone();
        other.text = "different".into();
        assert_ne!(render_response(&other)["id"], body["id"]);
        for sr in [
            StopReason::EndTurn,
            StopReason::MaxTokens,
            StopReason::Refusal,
            StopReason::Other("x".into()),
        ] {
            let r2 = ScriptedReply {
                stop_reason: sr,
                tool_calls: vec![],
                ..r.clone()
            };
            assert_eq!(
                parse_response(render_response(&r2).to_string().as_bytes()).unwrap(),
                r2
            );
        }
    }
}
