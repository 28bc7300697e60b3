//! Canonical JSON: the one rendering of a document that its hash is taken
//! over, so a request matches its recording however its keys were ordered on
//! the wire (serde_json's `preserve_order` is on in this workspace, so a
//! plain `to_string` would keep the sender's order).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// JSON with object keys sorted (recursively) and no insignificant
/// whitespace: the same document always gives the same string, however its
/// keys were ordered on the wire.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                write_canonical(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // Scalars: serde_json's own compact rendering.
        other => out.push_str(&other.to_string()),
    }
}

/// A string as a JSON string literal.
pub fn json_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// SHA-256 hex of [`canonical_json`].
pub fn canonical_sha256(v: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(v).as_bytes()))
}
