//! Reading a JSON object out of a model's reply: the planner, the drift judge
//! and the lesson call all ask for one and all get prose around it at times.
//! A module of its own so agent, drift and lessons share it without naming
//! each other.

use serde_json::Value;

/// Find the first JSON object in a model's text (it may be fenced or have
/// prose around it). Bounded: scans at most 1 MiB.
pub fn extract_json_object(text: &str) -> Option<Value> {
    let text = if text.len() > 1 << 20 {
        &text[..text.floor_char_boundary(1 << 20)]
    } else {
        text
    };
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text.trim()) {
        return Some(v);
    }
    for (i, _) in text.match_indices('{') {
        let mut de = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        if let Some(Ok(v @ Value::Object(_))) = de.next() {
            return Some(v);
        }
    }
    None
}
