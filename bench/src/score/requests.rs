//! What the harness sent the model: where the budget notice sits, what a
//! request carries in order, what it must not carry.

#[cfg(test)]
use super::check::CheckKind;
use super::check::{check, Check};
use crate::suite::Expect;
use harness::replay::Captured;
use serde_json::Value;

pub const NOTICE_MARKER: &str = "[harness budget notice]";

/// Where the notice sits in one request body: Some(true) when it is the last
/// content of the last message and not in the system prompt, Some(false) when
/// it is elsewhere, None when the request carries no notice.
pub fn notice_position(body: &str) -> Option<bool> {
    if !body.contains(NOTICE_MARKER) {
        return None;
    }
    let v: Value = serde_json::from_str(body).ok()?;
    let system_has = v["system"].to_string().contains(NOTICE_MARKER)
        || v["messages"]
            .as_array()
            .and_then(|m| m.first())
            .is_some_and(|m| {
                m["role"] == "system" && m["content"].to_string().contains(NOTICE_MARKER)
            });
    let last = v["messages"].as_array().and_then(|m| m.last());
    let at_end = match last.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.contains(NOTICE_MARKER),
        Some(Value::Array(blocks)) => blocks.last().is_some_and(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains(NOTICE_MARKER))
        }),
        _ => false,
    };
    Some(at_end && !system_has)
}

pub(super) fn notice_at_end(e: &Expect, requests: &[Captured], out: &mut Vec<Check>) {
    if let Some(w) = e.notice_at_end {
        let positions: Vec<bool> = requests
            .iter()
            .filter_map(|c| notice_position(&c.body))
            .collect();
        let passed = if w {
            !positions.is_empty() && positions.iter().all(|p| *p)
        } else {
            positions.is_empty()
        };
        out.push(check(
            "notice_at_end".into(),
            passed,
            format!(
                "{} request(s) carried the notice; at the end of the messages in {}",
                positions.len(),
                positions.iter().filter(|p| **p).count()
            ),
        ));
    }
}

pub(super) fn checks(e: &Expect, requests: &[Captured], out: &mut Vec<Check>) {
    if let Some(v) = &e.request_contains_in_order {
        for ro in v {
            let body = requests
                .iter()
                .rev()
                .find(|c| c.call_key == ro.call_key)
                .map(|c| c.body.as_str());
            let (passed, detail) = match body {
                None => (
                    false,
                    format!("no request with call key {:?} was sent", ro.call_key),
                ),
                Some(b) => {
                    let mut at = 0;
                    let mut missing = None;
                    for s in &ro.strings {
                        match b[at..].find(s.as_str()) {
                            Some(i) => at += i + s.len(),
                            None => {
                                missing = Some(s.clone());
                                break;
                            }
                        }
                    }
                    match missing {
                        None => (true, format!("{:?} in order", ro.strings)),
                        Some(s) => (
                            false,
                            format!("{s:?} not found (in order) in the {} request", ro.call_key),
                        ),
                    }
                }
            };
            out.push(check(
                format!("request_contains_in_order.{}", ro.call_key),
                passed,
                detail,
            ));
        }
    }
    if let Some(v) = &e.request_excludes {
        for rx in v {
            out.push(request_excludes_check(rx, requests));
        }
    }
}

/// Whether `call_key` is what `pattern` names: the exact key, or every key
/// starting with what comes before a trailing `*` (`judge/*`).
pub fn call_key_matches(pattern: &str, call_key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => call_key.starts_with(prefix),
        None => call_key == pattern,
    }
}

/// `request_excludes`: no request (any attempt) whose call key matches
/// carries any of the strings. A pattern that matched no request is a
/// failure, not a vacuous pass: the check must see what it guards.
fn request_excludes_check(rx: &crate::suite::RequestExcludes, requests: &[Captured]) -> Check {
    let matching: Vec<&Captured> = requests
        .iter()
        .filter(|c| call_key_matches(&rx.call_key, &c.call_key))
        .collect();
    let mut found = vec![];
    for c in &matching {
        for s in &rx.strings {
            if c.body.contains(s.as_str()) {
                found.push(format!("{s:?} in {} (attempt {})", c.call_key, c.attempt));
            }
        }
    }
    let (passed, detail) = if matching.is_empty() {
        (
            false,
            format!("no request with call key {:?} was sent", rx.call_key),
        )
    } else if found.is_empty() {
        (
            true,
            format!("none of {:?} in {} request(s)", rx.strings, matching.len()),
        )
    } else {
        (false, format!("must not carry: {}", found.join(", ")))
    };
    check(format!("request_excludes.{}", rx.call_key), passed, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notice_position_reads_both_protocols() {
        let a = r#"{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"task"},{"type":"text","text":"[harness budget notice] 72%"}]}]}"#;
        assert_eq!(notice_position(a), Some(true));
        let wrong = r#"{"system":"[harness budget notice] 72%","messages":[{"role":"user","content":"task"}]}"#;
        assert_eq!(notice_position(wrong), Some(false));
        let o = r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"t"},{"role":"user","content":"[harness budget notice] 80%"}]}"#;
        assert_eq!(notice_position(o), Some(true));
        assert_eq!(notice_position(r#"{"messages":[]}"#), None);
    }

    fn captured(call_key: &str, attempt: u32, body: &str) -> Captured {
        Captured {
            call_key: call_key.into(),
            attempt,
            body: body.into(),
        }
    }

    #[test]
    fn request_excludes_fails_on_any_matching_attempt_and_on_nothing_to_see() {
        let rx = crate::suite::RequestExcludes {
            call_key: "judge/*".into(),
            strings: vec!["<history>".into()],
        };
        let clean = [
            captured("execute/t1/a0/0", 0, "<history>t0 verified</history>"),
            captured("judge/5", 0, "<original_goal>g</original_goal>"),
        ];
        let c = request_excludes_check(&rx, &clean);
        assert!(c.passed, "{c:?}");
        assert_eq!(c.kind, CheckKind::Gate);
        let dirty = [
            captured("judge/5", 0, "<original_goal>g</original_goal>"),
            captured(
                "judge/5",
                1,
                "<original_goal>g</original_goal><history>x</history>",
            ),
        ];
        let c = request_excludes_check(&rx, &dirty);
        assert!(!c.passed && c.detail.contains("attempt 1"), "{c:?}");
        // No judge request at all: the check saw nothing, so it fails.
        let c = request_excludes_check(&rx, &clean[..1]);
        assert!(!c.passed && c.detail.contains("no request"), "{c:?}");
        assert!(call_key_matches("judge/5", "judge/5"));
        assert!(!call_key_matches("judge/5", "judge/50"));
        assert!(call_key_matches("execute/t1/*", "execute/t1/a0/3"));
    }
}
