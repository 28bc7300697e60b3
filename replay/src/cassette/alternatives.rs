//! Conditional replies: several interactions of one run may share a call
//! key when all but at most one carry `when_request_contains`. A request is
//! answered by the first (in file order) whose text occurs in one of the
//! request body's JSON string values, else by the one without a condition.
//!
//! Why string values and not the raw body: the body travels JSON-escaped,
//! so a condition with a quote, a newline or a non-ASCII character would
//! never occur in the raw bytes as written. Decoded strings are what the
//! model reads (system prompt, turns, tool results), which is what a
//! scripted model that "reads its prompt" conditions on.
//!
//! The rules a set of alternatives must follow are checked once, here, for
//! both the cassette (`Cassette::check`) and the scenario it is compiled
//! from (`Scenario::to_cassette`), so an ambiguous set is refused before a
//! server could serve one of its replies by accident.

use std::collections::HashMap;

use serde_json::Value;

use super::error::CassetteErrorKind;

/// Longest condition accepted, in bytes: a condition is a distinctive
/// substring of a prompt, never a whole prompt.
pub const MAX_CONDITION_BYTES: usize = 4096;
/// Most replies one call key may have in one run: each request scans its
/// key's conditions, so the scan is bounded.
pub const MAX_ALTERNATIVES_PER_KEY: usize = 64;

/// The text a request's conditions are matched against: every JSON string
/// value of its body, decoded; a body that is not JSON is one string (its
/// bytes, lossily decoded), so a condition still means "occurs in what was
/// sent".
#[derive(Debug, Clone, Default)]
pub struct RequestText {
    strings: Vec<String>,
}

impl RequestText {
    pub fn from_body(body: &[u8]) -> RequestText {
        let mut strings = Vec::new();
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => collect_strings(v, &mut strings),
            Err(_) => strings.push(String::from_utf8_lossy(body).into_owned()),
        }
        RequestText { strings }
    }

    /// `needle` occurs within one of the request's string values.
    pub fn contains(&self, needle: &str) -> bool {
        self.strings.iter().any(|s| s.contains(needle))
    }
}

/// Moves the strings out (no copies): the body is parsed only to be searched.
fn collect_strings(v: Value, out: &mut Vec<String>) {
    // An explicit stack, not recursion: serde_json already bounds nesting
    // at 128 levels, and a loop keeps this independent of that.
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, v)| v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The reply for a request among one call key's alternatives (`condition`
/// reads an alternative's `when_request_contains`): the first conditional
/// one whose text occurs in the request, else the unconditional one, else
/// None. The body is parsed only when some alternative has a condition, so
/// a key with one plain reply (every cassette before conditions existed)
/// costs what it always did.
pub fn choose<'a, T>(
    alternatives: &'a [T],
    condition: impl Fn(&T) -> Option<&str>,
    body: &[u8],
) -> Option<&'a T> {
    if alternatives.iter().all(|a| condition(a).is_none()) {
        return alternatives.first();
    }
    let text = RequestText::from_body(body);
    alternatives
        .iter()
        .find(|a| condition(a).is_some_and(|c| text.contains(c)))
        .or_else(|| alternatives.iter().find(|a| condition(a).is_none()))
}

/// Why a set of alternatives is refused: the offending item (its index in
/// the list), the field within it, and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltRefusal {
    pub index: usize,
    pub field: &'static str,
    pub kind: CassetteErrorKind,
    pub message: String,
}

#[derive(Default)]
struct Group<'a> {
    /// Items with this key so far, in order.
    count: usize,
    unconditional: Option<usize>,
    conditions: Vec<(&'a str, usize)>,
    role: Option<(&'a str, usize)>,
}

/// Checks one run's items as they come, in order: a call key's replies are
/// at most [`MAX_ALTERNATIVES_PER_KEY`], at most one without a condition,
/// no condition empty, too long, repeated, or shadowed by an earlier one
/// (a condition containing an earlier condition is never served: every
/// request it matches, the earlier one matches first), and all of one role.
/// `list` is the items' field path (`runs[0].interactions`), `key_field`
/// the key's field name there, `run` the run index: every message names
/// the run, the call key and where the other item is.
pub struct AlternativesCheck<'a> {
    list: &'a str,
    key_field: &'static str,
    run: usize,
    groups: HashMap<&'a str, Group<'a>>,
}

/// The condition field's name, the same in cassettes and scenarios.
pub const CONDITION_FIELD: &str = "when_request_contains";

impl<'a> AlternativesCheck<'a> {
    pub fn new(list: &'a str, key_field: &'static str, run: usize) -> Self {
        AlternativesCheck {
            list,
            key_field,
            run,
            groups: HashMap::new(),
        }
    }

    /// Admit item `index` with `key`, its condition and its role.
    pub fn admit(
        &mut self,
        index: usize,
        key: &'a str,
        condition: Option<&'a str>,
        role: &'a str,
    ) -> Result<(), AltRefusal> {
        let (list, key_field, run) = (self.list, self.key_field, self.run);
        let refuse = |field, kind, message: String| {
            Err(AltRefusal {
                index,
                field,
                kind,
                message,
            })
        };
        let at = |i: usize| format!("{list}[{i}]");
        let g = self.groups.entry(key).or_default();
        if g.count >= MAX_ALTERNATIVES_PER_KEY {
            return refuse(
                key_field,
                CassetteErrorKind::Limit,
                format!("(run {run}, call_key \"{key}\") has more than {MAX_ALTERNATIVES_PER_KEY} replies; the limit is {MAX_ALTERNATIVES_PER_KEY} per call key"),
            );
        }
        if let Some((first_role, first)) = g.role {
            if first_role != role {
                return refuse(
                    "role",
                    CassetteErrorKind::InvalidValue,
                    format!("is {role}, but (run {run}, call_key \"{key}\") is {first_role} at {}; every reply of one call key has its role", at(first)),
                );
            }
        }
        match condition {
            None => {
                if let Some(first) = g.unconditional {
                    return refuse(
                        key_field,
                        CassetteErrorKind::Duplicate,
                        format!("duplicate (run {run}, call_key \"{key}\"): already at {}; a call key has at most one reply without `{CONDITION_FIELD}` (give the others a condition)", at(first)),
                    );
                }
                g.unconditional = Some(index);
            }
            Some(c) => {
                if let Some((kind, message)) = condition_problem(g, c, run, key, &at) {
                    return refuse(CONDITION_FIELD, kind, message);
                }
                g.conditions.push((c, index));
            }
        }
        g.count += 1;
        g.role.get_or_insert((role, index));
        Ok(())
    }
}

/// Why condition `c` of a reply of (`run`, `key`) cannot be admitted beside
/// the group's earlier conditions (`at` names an earlier item): empty, too
/// long, or never served because an earlier condition matches first.
fn condition_problem(
    g: &Group<'_>,
    c: &str,
    run: usize,
    key: &str,
    at: &dyn Fn(usize) -> String,
) -> Option<(CassetteErrorKind, String)> {
    if c.trim().is_empty() {
        return Some((
            CassetteErrorKind::InvalidValue,
            format!("is empty (run {run}, call_key \"{key}\"); expected text the request must contain, or leave the field out for the reply served otherwise"),
        ));
    }
    if c.len() > MAX_CONDITION_BYTES {
        return Some((
            CassetteErrorKind::Limit,
            format!(
                "is {} bytes (run {run}, call_key \"{key}\"); the limit is {MAX_CONDITION_BYTES}",
                c.len()
            ),
        ));
    }
    if let Some((_, first)) = g.conditions.iter().find(|(e, _)| *e == c) {
        return Some((
            CassetteErrorKind::Duplicate,
            format!("duplicate condition {c:?} (run {run}, call_key \"{key}\"): already at {}, which is tried first, so this reply could never be served", at(*first)),
        ));
    }
    if let Some((earlier, first)) = g.conditions.iter().find(|(e, _)| c.contains(e)) {
        return Some((
            CassetteErrorKind::InvalidValue,
            format!("{c:?} (run {run}, call_key \"{key}\") contains {earlier:?} of {}, which is tried first: every request this matches, that one matches, so this reply could never be served (put it first)", at(*first)),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_match_decoded_string_values_not_raw_bytes() {
        let body = serde_json::to_vec(&json!({
            "system": "plain",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "say \"hi\"\nthen é"}]}],
            "max_tokens": 12
        }))
        .unwrap();
        let t = RequestText::from_body(&body);
        assert!(t.contains("say \"hi\"\nthen é"), "escapes decoded");
        assert!(!t.contains("max_tokens"), "keys are not content");
        assert!(!t.contains("12"), "numbers are not content");
        assert!(!t.contains("plainsay"), "no match across two values");
        // Not JSON: the bytes themselves.
        assert!(RequestText::from_body(b"not json: abc").contains("abc"));
    }

    #[test]
    fn the_first_matching_condition_wins_then_the_unconditional_one() {
        let alts = [(Some("alpha"), 0), (None, 1), (Some("beta"), 2)];
        let pick =
            |body: Value| choose(&alts, |a| a.0, &serde_json::to_vec(&body).unwrap()).map(|a| a.1);
        assert_eq!(pick(json!({"s": "beta and alpha"})), Some(0), "file order");
        assert_eq!(pick(json!({"s": "only beta"})), Some(2));
        assert_eq!(pick(json!({"s": "neither"})), Some(1));
        let no_default = [(Some("alpha"), 0)];
        assert_eq!(
            choose(&no_default, |a| a.0, b"{\"s\": \"neither\"}").map(|a| a.1),
            None
        );
        let plain = [(None, 7)];
        assert_eq!(
            choose(&plain, |a| a.0, b"not even json").map(|a| a.1),
            Some(7)
        );
    }

    fn admit_all(
        items: &[(&'static str, Option<&'static str>, &'static str)],
    ) -> Result<(), AltRefusal> {
        let mut c = AlternativesCheck::new("runs[0].interactions", "call_key", 0);
        for (i, (k, w, r)) in items.iter().enumerate() {
            c.admit(i, k, *w, r)?;
        }
        Ok(())
    }

    #[test]
    fn an_unambiguous_set_is_admitted() {
        admit_all(&[
            ("execute/t1/a0/0", Some("lesson"), "execute"),
            ("plan/0", None, "plan"),
            ("execute/t1/a0/0", None, "execute"),
            ("execute/t1/a0/0", Some("other"), "execute"),
            ("execute/t2/a0/0", Some("only conditional"), "execute"),
        ])
        .unwrap();
    }

    #[test]
    fn ambiguous_sets_are_refused_naming_run_key_field_and_the_other_item() {
        let e = admit_all(&[("k/0", None, "plan"), ("k/0", None, "plan")]).unwrap_err();
        assert_eq!(
            (e.index, e.field, e.kind),
            (1, "call_key", CassetteErrorKind::Duplicate)
        );
        assert!(
            e.message.contains("run 0, call_key \"k/0\"")
                && e.message.contains("runs[0].interactions[0]"),
            "{}",
            e.message
        );

        let e = admit_all(&[("k/0", Some("  "), "plan")]).unwrap_err();
        assert_eq!((e.index, e.field), (0, "when_request_contains"));
        assert!(e.message.starts_with("is empty"), "{}", e.message);

        let e = admit_all(&[
            ("k/0", Some("x1"), "plan"),
            ("k/0", None, "plan"),
            ("k/0", Some("x1"), "plan"),
        ])
        .unwrap_err();
        assert_eq!(
            (e.index, e.field, e.kind),
            (2, "when_request_contains", CassetteErrorKind::Duplicate)
        );
        assert!(
            e.message.contains("duplicate condition \"x1\"")
                && e.message.contains("interactions[0]"),
            "{}",
            e.message
        );

        let e =
            admit_all(&[("k/0", Some("abc"), "plan"), ("k/0", Some("xabcx"), "plan")]).unwrap_err();
        assert_eq!((e.index, e.field), (1, "when_request_contains"));
        assert!(e.message.contains("never be served"), "{}", e.message);

        let e = admit_all(&[("k/0", Some("a"), "plan"), ("k/0", None, "execute")]).unwrap_err();
        assert_eq!((e.index, e.field), (1, "role"));

        let long = "x".repeat(MAX_CONDITION_BYTES + 1);
        let mut c = AlternativesCheck::new("runs[0].interactions", "call_key", 0);
        let e = c.admit(0, "k/0", Some(&long), "plan").unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::Limit);

        let conds: Vec<String> = (0..=MAX_ALTERNATIVES_PER_KEY)
            .map(|i| format!("c{i:03}"))
            .collect();
        let mut c = AlternativesCheck::new("runs[0].interactions", "call_key", 0);
        let mut last = Ok(());
        for (i, w) in conds.iter().enumerate() {
            last = c.admit(i, "k/0", Some(w), "plan");
            if last.is_err() {
                break;
            }
        }
        let e = last.unwrap_err();
        assert_eq!(
            (e.index, e.kind),
            (MAX_ALTERNATIVES_PER_KEY, CassetteErrorKind::Limit)
        );
    }
}
