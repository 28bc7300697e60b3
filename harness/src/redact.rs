//! The one redaction filter. Every text the harness writes (report.json, the
//! checkpoint, events.jsonl, the outbox, the alerts line, the stdout summary)
//! and every tool observation the model reads passes through it, so the value
//! of a key variable the harness knows never lands in a file or a prompt, even
//! when something upstream (a check that printed its environment, a model that
//! repeated it) carried it this far.
//!
//! It is defence in depth, not the first line: checks already run with a
//! clean environment ([`crate::check`]), and the model client reads its key
//! at call time and never logs it. What the filter knows is the values of
//! [`PROVIDER_KEY_VARS`] in the harness's environment plus any variable named
//! with [`watch_env_var`] (the spec's `model.api_key_env`).
//!
//! The same name rules decide which variables the spec may pass to checks:
//! [`looks_secret`] is what `spec` refuses in `[check_env] pass`.

use serde_json::Value;
use std::borrow::Cow;
use std::sync::RwLock;

/// The environment variables model providers and their SDKs read keys from.
/// The bench removes every one of them from the harness subprocess's
/// environment, and the filter redacts their values wherever they are set.
pub const PROVIDER_KEY_VARS: [&str; 17] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "COHERE_API_KEY",
    "XAI_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
];

/// A value shorter than this is not treated as a secret: real keys are tens
/// of characters, and redacting every "1" or "dev" in a report would make it
/// unreadable without protecting anything.
pub const SECRET_MIN_BYTES: usize = 8;

/// What a redacted value is replaced with (the variable's NAME, never a part
/// of the value).
pub fn marker(var: &str) -> String {
    format!("[REDACTED:{var}]")
}

/// Does an environment variable's name say it holds a secret? Case-insensitive:
/// `*_KEY`, `*API_KEY*`, `*APIKEY*`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`,
/// `*PASSWD*`, `*CREDENTIAL*`, `*PRIVATE_KEY*`, and every [`PROVIDER_KEY_VARS`]
/// name. A name that matches is never passed to a check.
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    PROVIDER_KEY_VARS.contains(&n.as_str())
        || n.ends_with("_KEY")
        || n == "KEY"
        || n.contains("API_KEY")
        || n.contains("APIKEY")
        || n.ends_with("_TOKEN")
        || n == "TOKEN"
        || n.contains("SECRET")
        || n.contains("PASSWORD")
        || n.contains("PASSWD")
        || n.contains("CREDENTIAL")
        || n.contains("PRIVATE_KEY")
}

struct Secret {
    var: String,
    value: String,
    /// The value's searcher, built once: every string of every request,
    /// event and checkpoint passes through `text`, and building a searcher
    /// per string per secret was a tenth of a run's instructions (callgrind).
    finder: memchr::memmem::Finder<'static>,
    /// The searcher of the value as JSON writes it inside a string (its
    /// escaped form): [`to_json_vec`]'s fast path looks for it in the bytes.
    json_finder: memchr::memmem::Finder<'static>,
}

/// The known secret values: None until first use, then the provider
/// variables' values, plus what `watch_env_var` added.
static SECRETS: RwLock<Option<Vec<Secret>>> = RwLock::new(None);

fn with_secrets<R>(f: impl FnOnce(&[Secret]) -> R) -> R {
    {
        let g = SECRETS.read().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = g.as_ref() {
            return f(s);
        }
    }
    let mut g = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    let s = g.get_or_insert_with(|| {
        let mut v = Vec::new();
        for name in PROVIDER_KEY_VARS {
            add(&mut v, name);
        }
        v
    });
    f(s)
}

fn add(v: &mut Vec<Secret>, var: &str) {
    if let Ok(value) = std::env::var(var) {
        if value.len() >= SECRET_MIN_BYTES && !v.iter().any(|s| s.value == value) {
            let quoted = serde_json::to_string(&value).unwrap_or_default();
            let escaped = quoted.trim_start_matches('"').trim_end_matches('"');
            v.push(Secret {
                var: var.to_string(),
                finder: memchr::memmem::Finder::new(value.as_bytes()).into_owned(),
                json_finder: memchr::memmem::Finder::new(escaped.as_bytes()).into_owned(),
                value,
            });
        }
    }
}

/// Also redact the value of `var` (the spec's `model.api_key_env`). Read now:
/// the harness's environment does not change during a run.
pub fn watch_env_var(var: &str) {
    with_secrets(|_| ()); // make sure the provider variables are loaded first
    let mut g = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = g.as_mut() {
        add(v, var);
    }
}

/// True when some secret value is known (the filter has work to do).
pub fn active() -> bool {
    with_secrets(|s| !s.is_empty())
}

/// `text` with every known secret value replaced by its marker.
pub fn text(text: &str) -> Cow<'_, str> {
    with_secrets(|secrets| {
        let mut out: Cow<'_, str> = Cow::Borrowed(text);
        for s in secrets {
            // A string shorter than the secret cannot hold it (most strings
            // of a request: keys, roles, ids).
            if out.len() >= s.value.len() && s.finder.find(out.as_bytes()).is_some() {
                out = Cow::Owned(out.replace(s.value.as_str(), &marker(&s.var)));
            }
        }
        out
    })
}

/// [`text`] into an owned String (for fields that are moved into a value).
pub fn string(s: String) -> String {
    match text(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(o) => o,
    }
}

/// Redact every string (and object key) inside a JSON value in place. Works
/// on values, not on serialized bytes, so a secret that happens to look like
/// a number or that JSON escapes can never break or slip past the encoding.
pub fn json(v: &mut Value) {
    if !active() {
        return;
    }
    walk(v);
}

fn walk(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(o) = text(s) {
                *s = o;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(walk),
        Value::Object(m) => {
            m.values_mut().for_each(walk);
            // A key may be a secret too. Only then is the map rebuilt, in
            // order (taking each key out and appending it again was
            // quadratic in the object's size, and done for every object).
            if m.keys().any(|k| matches!(text(k), Cow::Owned(_))) {
                for (k, child) in std::mem::take(m) {
                    m.insert(string(k), child);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Serialize `value` to JSON bytes with every string redacted (pretty or not).
/// When no secret is known this is exactly `serde_json::to_vec[_pretty]`.
pub fn to_json_vec<T: serde::Serialize>(
    value: &T,
    pretty: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    if !active() {
        return if pretty {
            serde_json::to_vec_pretty(value)
        } else {
            serde_json::to_vec(value)
        };
    }
    // Fast path: JSON escapes a string character by character, so a string
    // that holds a secret holds its escaped form contiguously in the bytes.
    // When no secret's escaped form is anywhere in them, the walk below
    // would change nothing: the bytes are already the answer. (A hit, even
    // a false one inside a number, takes the walk, which is exact.) The walk
    // through a `Value` was half of a checkpoint write's instructions.
    let direct = if pretty {
        serde_json::to_vec_pretty(value)?
    } else {
        serde_json::to_vec(value)?
    };
    let clean = with_secrets(|secrets| {
        secrets
            .iter()
            .all(|s| s.json_finder.find(&direct).is_none())
    });
    if clean {
        return Ok(direct);
    }
    let mut v = serde_json::to_value(value)?;
    walk(&mut v);
    if pretty {
        serde_json::to_vec_pretty(&v)
    } else {
        serde_json::to_vec(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised() {
        for n in [
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "SSH_PRIVATE_KEY",
            "MY_APIKEY_FILE",
            "GCP_CREDENTIALS",
            "HF_TOKEN",
            "KEY",
        ] {
            assert!(looks_secret(n), "{n}");
        }
        for n in [
            "PATH",
            "PGHOST",
            "JAVA_HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
            "LANG",
        ] {
            assert!(!looks_secret(n), "{n}");
        }
    }

    // The filter's secret set is process-wide, so one test exercises it (the
    // variable name is unique to this test).
    #[test]
    fn values_are_replaced_in_text_and_json_strings_only() {
        let var = "HARNESS_REDACT_UNIT_TEST_KEY";
        let secret = "sk-unit-0123456789\"quoted\\slash";
        std::env::set_var(var, secret);
        watch_env_var(var);
        assert!(active());
        let t = format!("check printed {var}={secret} and more");
        assert_eq!(
            text(&t),
            format!("check printed {var}=[REDACTED:{var}] and more")
        );
        assert!(matches!(text("nothing here"), Cow::Borrowed(_)));
        let mut v = serde_json::json!({"a": [format!("x{secret}y"), 12345678], secret: {"n": 1}});
        json(&mut v);
        let s = v.to_string();
        assert!(!s.contains("sk-unit-0123456789"), "{s}");
        assert!(s.contains(&marker(var)), "{s}");
        assert_eq!(v["a"][1], 12345678, "numbers are never touched");
        // Redaction keeps the order of an object's keys (events.jsonl and
        // report.json read the same with a key set as without).
        let mut o = serde_json::json!({"z": 1, "a": secret, "m": {"y": 2, "b": 3}, "c": 4});
        json(&mut o);
        let keys: Vec<&str> = o.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m", "c"]);
        let inner: Vec<&str> = o["m"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(inner, ["y", "b"]);
        // ... also when a key itself is redacted (the map is rebuilt then).
        let mut k = serde_json::json!({"z": 1, secret: {"x": secret}, "c": 3});
        json(&mut k);
        let keys: Vec<String> = k.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z".to_string(), marker(var), "c".to_string()]);
        assert_eq!(k[marker(var)]["x"], marker(var));
        let bytes = to_json_vec(&serde_json::json!({"k": secret}), true).unwrap();
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back["k"], marker(var));
        // The fast path (no secret in the bytes) and the walk agree: a secret
        // that JSON escapes (quote, backslash) inside a longer string, in a
        // key, and a value with none at all.
        let hidden = serde_json::json!({"claim": format!("done; key={secret}."), "n": [1, 2]});
        let bytes = to_json_vec(&hidden, false).unwrap();
        assert!(memchr::memmem::find(&bytes, b"sk-unit-0123456789").is_none());
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back["claim"], format!("done; key={}.", marker(var)));
        let keyed = to_json_vec(&serde_json::json!({secret: 1}), false).unwrap();
        assert!(memchr::memmem::find(&keyed, b"sk-unit-0123456789").is_none());
        let plain = serde_json::json!({"claim": "nothing secret", "n": 12345678});
        assert_eq!(
            to_json_vec(&plain, false).unwrap(),
            serde_json::to_vec(&plain).unwrap()
        );
        // Short values are not secrets.
        std::env::set_var("HARNESS_REDACT_UNIT_TEST_SHORT", "abc");
        watch_env_var("HARNESS_REDACT_UNIT_TEST_SHORT");
        assert_eq!(text("abc"), "abc");
    }
}
