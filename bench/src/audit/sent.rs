//! The requests the replay server answered (what the model was sent), each
//! body parsed once, and the two readings of a body more than one gate
//! makes: the tools it offered and the text of a message's content.

use harness::replay::Captured;
use serde_json::Value;

/// Tool names a request offered the model, in either protocol's shape
/// (Anthropic `tools[].name`, OpenAI `tools[].function.name`).
pub fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A captured request with its body parsed once: the allowlist and the
/// judge rule both read every body, and parsing each body per check was a
/// seventh of the bench's own work per case-run (callgrind).
pub struct Sent<'a> {
    pub captured: &'a Captured,
    /// The body, or why it is not JSON.
    pub body: Result<Value, serde_json::Error>,
}

impl<'a> Sent<'a> {
    pub fn parse(requests: &'a [Captured]) -> Vec<Sent<'a>> {
        requests
            .iter()
            .map(|captured| Sent {
                captured,
                body: serde_json::from_str(&captured.body),
            })
            .collect()
    }
}

/// The text of a message's content in either protocol's shape (a string, or
/// an array of blocks with `text`), and whether it holds anything that is not
/// text (a tool result or tool call block).
pub(super) fn content_text(content: &Value) -> (String, bool) {
    match content {
        Value::String(s) => (s.clone(), false),
        Value::Array(blocks) => {
            let mut t = String::new();
            let mut other = false;
            for b in blocks {
                match (b["type"].as_str(), b["text"].as_str()) {
                    (Some("text") | None, Some(s)) => t.push_str(s),
                    _ => other = true,
                }
            }
            (t, other)
        }
        Value::Null => (String::new(), false),
        _ => (content.to_string(), true),
    }
}
