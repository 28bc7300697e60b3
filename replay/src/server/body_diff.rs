//! Strict mode: a request matches only if its body's canonical hash is the
//! recording's. A bare hash mismatch would say nothing a person can act
//! on, so the miss names the first JSON path where the bodies differ, with
//! both values clipped around the change.

use serde_json::Value;

use super::cases::ServeInteraction;
use crate::cassette::{body_sha256, canonical_json};

/// Longest rendered value in a strict-mode body diff.
const DIFF_VALUE_CHARS: usize = 60;

/// Strict mode: the canonical hash of the incoming body must equal the recording's.
pub(super) fn strict_check(it: &ServeInteraction, raw: &[u8]) -> Result<(), String> {
    let got: Value = serde_json::from_slice(raw).map_err(|e| {
        format!("strict mode: the request body is not JSON ({e}), so it cannot match a recorded body hash")
    })?;
    let Some(recorded_hash) = &it.body_sha256 else {
        return Err("strict mode: this recording has no body_sha256 (hand-written cassette), so no body can match; \
                    run without --strict or re-record the case"
            .to_string());
    };
    let got_hash = body_sha256(&got);
    if &got_hash == recorded_hash {
        return Ok(());
    }
    let detail = match &it.body {
        Some(recorded) => match first_difference(recorded, &got) {
            Some(d) => d,
            // Same value, different hash: only possible if the recorded hash
            // came from elsewhere; say so rather than inventing a diff.
            None => {
                format!("canonical bodies are equal but the recorded hash {recorded_hash} was not computed from them")
            }
        },
        None => {
            format!(
                "recorded body not stored; recorded sha256 {} vs got {}",
                short(recorded_hash),
                short(&got_hash)
            )
        }
    };
    Err(format!("body hash mismatch (strict): {detail}"))
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// The first JSON path (in canonical, key-sorted order) where two bodies
/// differ, with both values: `system: recorded "You are..." vs got "You were..."`.
pub fn first_difference(recorded: &Value, got: &Value) -> Option<String> {
    let mut path = String::new();
    diff_at(recorded, got, &mut path)
}

fn diff_at(a: &Value, b: &Value, path: &mut String) -> Option<String> {
    let here = |p: &str| {
        if p.is_empty() {
            "(root)".to_string()
        } else {
            p.to_string()
        }
    };
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                let found = match (ma.get(k.as_str()), mb.get(k.as_str())) {
                    (Some(x), Some(y)) => diff_at(x, y, path),
                    (x, y) => Some(format!(
                        "{}: recorded {} vs got {}",
                        path,
                        render_opt(x),
                        render_opt(y)
                    )),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Array(xa), Value::Array(xb)) => {
            for i in 0..xa.len().max(xb.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = match (xa.get(i), xb.get(i)) {
                    (Some(x), Some(y)) => diff_at(x, y, path),
                    (x, y) => Some(format!(
                        "{}: recorded {} vs got {}",
                        path,
                        render_opt(x),
                        render_opt(y)
                    )),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::String(x), Value::String(y)) if x != y => {
            let (rx, ry) = render_string_pair(x, y);
            Some(format!("{}: recorded {rx} vs got {ry}", here(path)))
        }
        (x, y) if x != y => Some(format!(
            "{}: recorded {} vs got {}",
            here(path),
            render(x),
            render(y)
        )),
        _ => None,
    }
}

fn render_opt(v: Option<&Value>) -> String {
    v.map(render).unwrap_or_else(|| "(absent)".to_string())
}

fn render(v: &Value) -> String {
    clip(&canonical_json(v))
}

/// Both strings shown around their first differing character, so a change
/// deep inside a long system prompt is visible in the message.
fn render_string_pair(x: &str, y: &str) -> (String, String) {
    let first = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
    let start = first.saturating_sub(20);
    (quote_window(x, start), quote_window(y, start))
}

/// `s` from char `start`, clipped, as a JSON string literal (clipped before
/// quoting so an escape sequence is never cut in half).
fn quote_window(s: &str, start: usize) -> String {
    let tail: String = s.chars().skip(start).take(DIFF_VALUE_CHARS).collect();
    let more = s.chars().count() > start + DIFF_VALUE_CHARS;
    let quoted = serde_json::to_string(&tail).unwrap_or_default();
    let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
    format!(
        "\"{}{inner}{}\"",
        if start > 0 { "..." } else { "" },
        if more { "..." } else { "" }
    )
}

fn clip(s: &str) -> String {
    if s.chars().count() <= DIFF_VALUE_CHARS {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(DIFF_VALUE_CHARS).collect();
        out.push_str("...");
        out
    }
}
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::server::ReplayOptions;
    use serde_json::json;

    #[tokio::test]
    async fn reworded_prompt_matches_by_default_but_not_in_strict_mode() {
        let reworded = system_body("You were a careful planner.");
        let exact = system_body("You are a careful planner.");
        let c = reqwest::Client::new();

        let lax = server(fast()).await;
        let got = call(
            &c,
            &lax.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &reworded,
        )
        .await;
        assert_eq!(got.status, 200);

        let strict = server(ReplayOptions {
            strict: true,
            ..fast()
        })
        .await;
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &exact,
        )
        .await;
        assert_eq!(got.status, 200, "exact body matches in strict mode");
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &reworded,
        )
        .await;
        let msg = got.miss_message();
        assert!(msg.contains("body hash mismatch"), "{msg}");
        assert!(
            msg.contains("system: recorded \"You are a careful planner.\" vs got \"You were a careful planner.\""),
            "{msg}"
        );
        // A hand-written recording (no hash) is a strict miss that says why.
        let got = call(
            &c,
            &strict.base_url_for(CASE, 0),
            "/v1/messages",
            "judge",
            "judge/0",
            0,
            &exact,
        )
        .await;
        assert!(got.miss_message().contains("no body_sha256"));
        assert_eq!(strict.counters().misses, 2);
    }

    #[test]
    fn body_diff_names_the_first_differing_path() {
        let a = json!({"system": "s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10});
        let b = json!({"system": "s", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 10});
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "messages[0].content: recorded \"hi\" vs got \"hello\""
        );
        let c = json!({"system": "s", "messages": [], "max_tokens": 10, "tools": []});
        assert_eq!(
            first_difference(&a, &c).unwrap(),
            "messages[0]: recorded {\"content\":\"hi\",\"role\":\"user\"} vs got (absent)"
        );
        assert_eq!(
            first_difference(&json!(1), &json!("1")).unwrap(),
            "(root): recorded 1 vs got \"1\""
        );
        assert_eq!(first_difference(&a, &a), None);
        let long_a = format!("{}The answer is yes.", "x".repeat(500));
        let long_b = format!("{}The answer is no.", "x".repeat(500));
        let d = first_difference(&json!({"system": long_a}), &json!({"system": long_b})).unwrap();
        assert!(
            d.contains("The answer is yes") && d.contains("The answer is no"),
            "{d}"
        );
        assert!(d.len() < 200, "{d}");
    }
}
