//! Field paths for errors (`runs[0].interactions[2].role`), and the one
//! place a [`strict::Error`] becomes a [`CassetteError`].
//!
//! The path renderer is our own rather than [`strict::render`] because a
//! cassette's keys are header names and JSON body keys, not identifiers: a
//! key with a space or a dot must stay readable as one key (`["a b"]`), and
//! the secret scan (secrets.rs) names its paths the same way.

use std::path::Path;

use super::canonical::json_string;
use super::error::{CassetteError, CassetteErrorKind};

#[derive(Debug, Clone)]
pub(super) enum PathSeg {
    Key(String),
    Index(usize),
}

pub(super) fn render_path(segs: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            PathSeg::Index(i) => out.push_str(&format!("[{i}]")),
            PathSeg::Key(k) => {
                let plain = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '/');
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                } else {
                    out.push_str(&format!("[{}]", json_string(k)));
                }
            }
        }
    }
    out
}

/// The segments of serde_path_to_error's path, as our renderer's.
fn segments(path: &[strict::Segment]) -> Vec<PathSeg> {
    path.iter()
        .map(|s| match s {
            strict::Segment::Seq { index } => PathSeg::Index(*index),
            strict::Segment::Map { key } => PathSeg::Key(key.clone()),
            strict::Segment::Enum { variant } => PathSeg::Key(variant.clone()),
            // Only a Deserialize impl that buffers (untagged, flatten) loses
            // the key; the cassette types have none, so this is a guard.
            strict::Segment::Unknown => PathSeg::Key("?".into()),
        })
        .collect()
}

/// The path of field `name` inside the object at `field` ("" at the top).
fn child(field: &str, name: &str) -> String {
    if field.is_empty() {
        name.to_string()
    } else {
        format!("{field}.{name}")
    }
}

/// What an unknown variant at `path` is called in its message. The enums
/// are named after the field that holds them: "unknown protocol "gemini";
/// expected `anthropic` or `openai`" says what to fix where serde's
/// "unknown variant" only says it is wrong.
fn variant_owner(path: &[PathSeg]) -> &'static str {
    match path.last() {
        Some(PathSeg::Key(k)) if k == "role" => "role",
        Some(PathSeg::Key(k)) if k == "protocol" => "protocol",
        Some(PathSeg::Key(k)) if k == "how" => "made.how",
        _ => "value",
    }
}

/// Turn a strict loader error on a cassette into a CassetteError naming the
/// field. The wording is the one cassette authors have seen since before
/// the strict loader existed (tests.rs pins it), so each [`strict::Kind`]
/// maps to the old message rather than to strict's Display.
pub(super) fn cassette_error(file: &Path, err: &strict::Error) -> CassetteError {
    let msg = err.message.clone();
    let path = segments(&err.path);
    let field = render_path(&path);
    let (kind, field, message) = match &err.kind {
        strict::Kind::Syntax => (
            CassetteErrorKind::BadJson,
            None,
            format!("not valid JSON: {msg}"),
        ),
        strict::Kind::Missing { field: missing } => (
            CassetteErrorKind::MissingField,
            Some(child(&field, missing)),
            format!("required field `{missing}` is missing"),
        ),
        strict::Kind::Unknown { .. } => (
            CassetteErrorKind::UnknownField,
            Some(field),
            format!("{msg} (harness-cassette/2 has no such field)"),
        ),
        strict::Kind::UnknownVariant { variant, expected } => {
            let what = variant_owner(&path);
            let expected = strict::one_of(expected);
            (
                CassetteErrorKind::InvalidValue,
                Some(field),
                format!("unknown {what} \"{variant}\"; expected {expected}"),
            )
        }
        // serde_path_to_error leaves a duplicate at its object's path (serde
        // notices it at the closing brace); the key given twice is the field
        // to fix.
        strict::Kind::Duplicate { field: twice } => (
            CassetteErrorKind::InvalidValue,
            Some(child(&field, twice)),
            msg,
        ),
        strict::Kind::InvalidType
        | strict::Kind::InvalidValue
        | strict::Kind::InvalidLength
        | strict::Kind::Other => (CassetteErrorKind::InvalidValue, Some(field), msg),
    };
    CassetteError {
        file: file.to_path_buf(),
        field,
        kind,
        // strict passes on serde_json's column, the last byte it read (the
        // offending one, or the one a data error was noticed after);
        // cassette errors have always printed the column after it, and a
        // column that moved would make old bug reports point elsewhere.
        line: err.at.map(|p| p.line),
        column: err.at.map(|p| p.column + 1),
        message,
    }
}
