//! Canonical JSON (model::canonical, shared with the recording conditions)
//! and the request-body hash strict replay compares.

use serde_json::Value;

pub use model::canonical::canonical_json;

pub(super) fn json_string(s: &str) -> String {
    model::canonical::json_string(s)
}

/// SHA-256 hex of [`canonical_json`].
pub fn body_sha256(v: &Value) -> String {
    model::canonical::canonical_sha256(v)
}

/// A copy of `v` with object keys in sorted order, so a pretty-printed
/// cassette diffs cleanly even if serde_json's `preserve_order` gets enabled.
pub fn sorted_value(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), sorted_value(&map[k.as_str()]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_value).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let a: Value = serde_json::from_str(
            r#"{ "b": 1, "a": {"d": [1, 2, {"z": null, "y": "é\n"}], "c": true} }"#,
        )
        .unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":true,"d":[1,2,{"y":"é\n","z":null}]},"b":1}"#
        );
        let b: Value =
            serde_json::from_str(r#"{"a":{"c":true,"d":[1,2,{"z":null,"y":"é\n"}]},"b":1}"#)
                .unwrap();
        assert_eq!(body_sha256(&a), body_sha256(&b));
        assert_eq!(
            body_sha256(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
