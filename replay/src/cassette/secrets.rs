//! What counts as a credential in a cassette: the names and the value shapes
//! that are refused on load, and the redaction a recording proxy applies
//! before it writes one (recordings get committed; keys must never be).

use std::collections::BTreeMap;

use serde_json::Value;

use super::headers::HOP_BY_HOP_HEADERS;
use super::json_path::{render_path, PathSeg};

/// Header / JSON key names that carry credentials. Compared
/// case-insensitively with `_` treated as `-`.
pub const SECRET_NAMES: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "set-cookie",
    "proxy-authorization",
];

/// Whether a header or JSON key name carries credentials.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase().replace('_', "-");
    SECRET_NAMES.contains(&n.as_str())
}

/// If `s` contains something that looks like a bearer token or an `sk-` /
/// `sk-ant-` API key, say which. Requires a word boundary, a minimum length
/// and at least one digit, so prose ("ask-me", "Bearer tokens are...") passes.
pub fn looks_like_secret(s: &str) -> Option<&'static str> {
    let b = s.as_bytes();
    let is_tok = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    let is_bearer_tok = |c: u8| c.is_ascii_alphanumeric() || b"-_.~+/=".contains(&c);
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_tok(b[i - 1]);
        if boundary && b[i..].starts_with(b"sk-") {
            let end = b[i..]
                .iter()
                .position(|&c| !is_tok(c))
                .map_or(b.len(), |p| i + p);
            let tok = &b[i + 3..end];
            if tok.len() >= 20 && tok.iter().any(u8::is_ascii_digit) {
                return Some(if b[i..].starts_with(b"sk-ant-") {
                    "an sk-ant- API key"
                } else {
                    "an sk- API key"
                });
            }
        }
        if boundary
            && b.len() - i >= 7
            && b[i..i + 6].eq_ignore_ascii_case(b"bearer")
            && b[i + 6] == b' '
        {
            let mut j = i + 6;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            let end = b[j..]
                .iter()
                .position(|&c| !is_bearer_tok(c))
                .map_or(b.len(), |p| j + p);
            let tok = &b[j..end];
            if tok.len() >= 16 && tok.iter().any(u8::is_ascii_digit) {
                return Some("a bearer token");
            }
        }
        i += 1;
    }
    None
}

/// Headers as a recording proxy should write them: secret-bearing headers
/// and headers whose value looks like a key are dropped (not masked: a
/// masked `authorization` would still be refused at load), hop-by-hop
/// headers are dropped, names are lowercased.
pub fn redact_headers<K, V, I>(headers: I) -> BTreeMap<String, String>
where
    K: AsRef<str>,
    V: AsRef<str>,
    I: IntoIterator<Item = (K, V)>,
{
    headers
        .into_iter()
        .filter_map(|(k, v)| {
            let name = k.as_ref().trim().to_ascii_lowercase();
            let value = v.as_ref();
            if is_secret_name(&name)
                || looks_like_secret(value).is_some()
                || HOP_BY_HOP_HEADERS.contains(&name.as_str())
            {
                None
            } else {
                Some((name, value.to_string()))
            }
        })
        .collect()
}

/// Remove secret-named keys from a JSON body (recursively) and replace
/// string values that look like keys with `"[redacted]"`, for a recording
/// proxy to call before writing.
pub fn redact_json(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !is_secret_name(k));
            for item in map.values_mut() {
                redact_json(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::String(s) if looks_like_secret(s).is_some() => *s = "[redacted]".to_string(),
        _ => {}
    }
}

/// First secret anywhere in the document: (path, what).
pub(super) fn find_secret(v: &Value, path: &mut Vec<PathSeg>) -> Option<(String, String)> {
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                path.push(PathSeg::Key(k.clone()));
                if is_secret_name(k) {
                    let p = render_path(path);
                    path.pop();
                    return Some((p, format!("\"{k}\" is a secret-bearing name")));
                }
                let found = find_secret(item, path);
                path.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(PathSeg::Index(i));
                let found = find_secret(item, path);
                path.pop();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::String(s) => {
            looks_like_secret(s).map(|what| (render_path(path), format!("value looks like {what}")))
        }
        _ => None,
    }
}
