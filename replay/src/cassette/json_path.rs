//! Field paths for errors: `runs[0].interactions[2].role`, rendered from a
//! walk of the document, or recovered from the byte offset serde_json
//! reports (it names a line and column, never the field).

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

/// The JSON path open at byte `offset` of `text`: used to turn serde_json's
/// line/column into a field name. serde_json reports data errors just after
/// the offending token: after a value (invalid value), after a key (unknown
/// field), or after an object's closing brace (missing field). Scanning the
/// tokens before that offset leaves the innermost frame pointing at exactly
/// that value, key or object.
fn path_at_offset(text: &str, offset: usize) -> String {
    enum Frame {
        Obj {
            key: Option<String>,
            expect_key: bool,
        },
        Arr {
            idx: usize,
        },
    }
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < b.len() && i < offset {
        match b[i] {
            b'{' => {
                stack.push(Frame::Obj {
                    key: None,
                    expect_key: true,
                });
                i += 1;
            }
            b'[' => {
                stack.push(Frame::Arr { idx: 0 });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Arr { idx }) => *idx += 1,
                    Some(Frame::Obj { expect_key, .. }) => *expect_key = true,
                    None => {}
                }
                i += 1;
            }
            b':' => {
                if let Some(Frame::Obj { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                if let Some(Frame::Obj {
                    key,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    let raw = &text[start..i];
                    *key = Some(
                        serde_json::from_str::<String>(raw)
                            .unwrap_or_else(|_| raw.trim_matches('"').to_string()),
                    );
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                while i < b.len() && !b",:]} \t\r\n".contains(&b[i]) {
                    i += 1;
                }
            }
        }
    }
    let mut segs = Vec::new();
    for frame in stack {
        match frame {
            Frame::Obj { key: Some(k), .. } => segs.push(PathSeg::Key(k)),
            Frame::Obj { key: None, .. } => {}
            Frame::Arr { idx } => segs.push(PathSeg::Index(idx)),
        }
    }
    render_path(&segs)
}

/// Byte offset of serde_json's (1-based line, 0-based-byte column).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(p) => start += p + 1,
            None => break,
        }
    }
    (start + column).min(text.len())
}

/// Turn a serde_json error on `text` into a CassetteError naming the field.
pub(super) fn map_serde_error(file: &Path, text: &str, err: &serde_json::Error) -> CassetteError {
    use serde_json::error::Category;
    let line = err.line();
    let column = err.column();
    // serde_json appends " at line L column C"; we print our own.
    let full = err.to_string();
    let msg = match full.rfind(" at line ") {
        Some(p) => full[..p].to_string(),
        None => full,
    };
    let (kind, field, message) = match err.classify() {
        Category::Syntax | Category::Eof => (
            CassetteErrorKind::BadJson,
            None,
            format!("not valid JSON: {msg}"),
        ),
        Category::Io => (CassetteErrorKind::Io, None, msg),
        Category::Data => {
            let off = offset_of(text, line, column);
            if msg.starts_with("missing field") {
                let object = path_at_offset(text, off);
                let missing = msg.split('`').nth(1).unwrap_or("?").to_string();
                let field = if object.is_empty() {
                    missing.clone()
                } else {
                    format!("{object}.{missing}")
                };
                (
                    CassetteErrorKind::MissingField,
                    Some(field),
                    format!("required field `{missing}` is missing"),
                )
            } else if msg.starts_with("unknown field") {
                (
                    CassetteErrorKind::UnknownField,
                    Some(path_at_offset(text, off)),
                    format!("{msg} (harness-cassette/1 has no such field)"),
                )
            } else {
                let field = path_at_offset(text, off);
                let last = field
                    .rsplit(['.', '['])
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(']')
                    .to_string();
                let message = if msg.starts_with("unknown variant") {
                    // "unknown variant `gemini`, expected `anthropic` or `openai`"
                    // -> "unknown protocol "gemini"; expected `anthropic` or `openai`"
                    let got = msg.split('`').nth(1).unwrap_or("?");
                    let expected = msg.split_once("expected ").map(|x| x.1).unwrap_or("");
                    let what = match last.as_str() {
                        "role" => "role",
                        "protocol" => "protocol",
                        "how" => "made.how",
                        _ => "value",
                    };
                    format!("unknown {what} \"{got}\"; expected {expected}")
                } else {
                    msg
                };
                (CassetteErrorKind::InvalidValue, Some(field), message)
            }
        }
    };
    CassetteError {
        file: file.to_path_buf(),
        field,
        kind,
        line: Some(line),
        column: Some(column + 1),
        message,
    }
}
