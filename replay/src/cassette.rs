//! Cassettes: recorded (or hand-scripted) model traffic for one eval case,
//! the `harness-cassette/1` JSON format documented in recordings/README.md.
//!
//! Loading is strict because a cassette is test input that people edit by
//! hand: every error names the file, the JSON field path and what was
//! expected, and a cassette carrying anything that looks like a credential is
//! refused outright (recordings get committed; keys must never be).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use model::types::{CallRole, Protocol};

/// The value of the `format` field this code reads and writes.
pub const FORMAT: &str = "harness-cassette/1";
/// Largest cassette file accepted, so a stray multi-GB file in the tree
/// cannot take the bench down.
pub const MAX_CASSETTE_BYTES: u64 = 16 * 1024 * 1024;
/// Most interactions (over all runs) in one cassette.
pub const MAX_INTERACTIONS: usize = 20_000;
/// Most run variants in one cassette.
pub const MAX_RUNS: usize = 1_000;
/// Most scripted faults before one real response.
pub const MAX_FAULTS_BEFORE: usize = 16;
/// Longest recorded latency accepted (10 minutes): longer is a typo.
pub const MAX_LATENCY_MS: u64 = 600_000;
/// Most cassette files under one recordings tree.
pub const MAX_CASSETTE_FILES: usize = 10_000;
/// Longest case id; case ids end up in URLs and file names.
pub const MAX_CASE_ID_LEN: usize = 128;

/// The endpoint path a protocol's requests go to (after the base URL).
pub fn endpoint_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "/v1/messages",
        Protocol::Openai => "/v1/chat/completions",
    }
}

// ---------------------------------------------------------------------------
// The format
// ---------------------------------------------------------------------------

/// One cassette file: all recorded traffic of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    /// Always [`FORMAT`]; a future incompatible format gets a new value.
    pub format: String,
    /// The case id; also the `<case>` segment of the replay URL.
    pub case: String,
    pub protocol: Protocol,
    pub model: String,
    pub made: Made,
    /// Run variants; `runs[i].run == i`. A request for run r is served from
    /// variant `r % runs.len()`.
    pub runs: Vec<RunRecording>,
}

/// Provenance: how, when and by whom the cassette was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Made {
    pub how: MadeHow,
    /// RFC 3339 timestamp or a plain `YYYY-MM-DD` date.
    pub when: String,
    /// Free text: the tool or person that made it.
    pub by: String,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub notes: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MadeHow {
    /// Written by hand or by a script; request bodies are usually null.
    Scripted,
    /// Captured from a live endpoint by a recording proxy.
    Recorded,
}

/// One run variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecording {
    pub run: u32,
    pub interactions: Vec<Interaction>,
    /// For a recorded variant: how the live run that produced it ended. A
    /// replay of the same traffic must end the same way (the live suite's
    /// `ending = "recorded"` gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
}

/// How a recorded live run ended, as its harness reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOutcome {
    /// One of the seven endings, e.g. `"NO_PROGRESS"`.
    pub ending: String,
    pub exit_code: i32,
    /// The report's `predicate_met` (the harness ran the predicate).
    pub predicate_met: bool,
    /// Model calls answered, and the tokens the ledger booked (all four fields summed).
    pub calls: u64,
    pub tokens: u64,
}

/// One model call and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    pub role: CallRole,
    /// Position within the run (`plan/0`, `execute/t3/a0/2`, ...): the match key.
    pub call_key: String,
    pub request: RecordedRequest,
    pub response: RecordedResponse,
    /// Wall time the live endpoint took; replayed times the latency scale.
    #[serde(default)]
    pub latency_ms: u64,
    /// Responses served on HTTP attempts 0..k-1 before `response`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults_before: Vec<RecordedResponse>,
}

/// What was sent. Only `path` (and `method`) take part in default matching;
/// `body_sha256` is checked in strict mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    #[serde(default = "default_method")]
    pub method: String,
    pub path: String,
    /// Non-secret request headers, for people reading the cassette.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The request body (keys sorted), or null for hand-written cassettes.
    #[serde(default)]
    pub body: Option<Value>,
    /// SHA-256 hex of `canonical_json(body)`; null when unknown.
    #[serde(default)]
    pub body_sha256: Option<String>,
}

fn default_method() -> String {
    "POST".to_string()
}

/// A response to serve (the real one, or a scripted fault).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body, served as compact JSON. Null (with no body_raw) = empty body.
    #[serde(default)]
    pub body: Option<Value>,
    /// A non-JSON body, served byte for byte. Excludes `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_raw: Option<String>,
}

impl RecordedResponse {
    /// The bytes to put on the wire.
    pub fn body_bytes(&self) -> Vec<u8> {
        if let Some(raw) = &self.body_raw {
            return raw.as_bytes().to_vec();
        }
        match &self.body {
            // Serialising a Value cannot fail (all keys are strings).
            Some(v) => serde_json::to_vec(v).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

/// Response headers the replay server never replays: they describe the
/// original connection/encoding, and the server sets its own.
pub const HOP_BY_HOP_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "content-encoding",
    "upgrade",
];

// ---------------------------------------------------------------------------
// Canonical JSON
// ---------------------------------------------------------------------------

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

fn json_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// SHA-256 hex of [`canonical_json`].
pub fn body_sha256(v: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(v).as_bytes()))
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

// ---------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------

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
fn find_secret(v: &Value, path: &mut Vec<PathSeg>) -> Option<(String, String)> {
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

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// What kind of thing is wrong with a cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CassetteErrorKind {
    Io,
    TooLarge,
    BadJson,
    MissingField,
    UnknownField,
    InvalidValue,
    Duplicate,
    Secret,
    Limit,
}

/// An error that names the file, the field (a JSON path like
/// `runs[0].interactions[2].role`) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassetteError {
    pub file: PathBuf,
    /// JSON path of the offending field; None when the whole file is at fault.
    pub field: Option<String>,
    pub kind: CassetteErrorKind,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl CassetteError {
    fn new(
        file: &Path,
        field: Option<String>,
        kind: CassetteErrorKind,
        message: impl Into<String>,
    ) -> Self {
        CassetteError {
            file: file.to_path_buf(),
            field,
            kind,
            line: None,
            column: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for CassetteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, " (line {l}, column {c})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for CassetteError {}

/// Every error found while loading a recordings tree (all files are checked,
/// so one run of `bench serve` shows every broken cassette).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingsError {
    pub errors: Vec<CassetteError>,
}

impl fmt::Display for RecordingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        write!(f, "{n} cassette error{}:", if n == 1 { "" } else { "s" })?;
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RecordingsError {}

// ---------------------------------------------------------------------------
// JSON paths (for errors)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum PathSeg {
    Key(String),
    Index(usize),
}

fn render_path(segs: &[PathSeg]) -> String {
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
fn map_serde_error(file: &Path, text: &str, err: &serde_json::Error) -> CassetteError {
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

// ---------------------------------------------------------------------------
// Loading, validating, saving
// ---------------------------------------------------------------------------

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn valid_case_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_CASE_ID_LEN
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
        && s != "."
        && s != ".."
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

fn check_headers(
    file: &Path,
    base: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(), CassetteError> {
    use wiremock::http::{HeaderName, HeaderValue};
    for (k, v) in headers {
        let field = format!("{base}.headers[{}]", json_string(k));
        if HeaderName::from_bytes(k.as_bytes()).is_err() {
            return Err(CassetteError::new(
                file,
                Some(field),
                CassetteErrorKind::InvalidValue,
                "not a valid HTTP header name",
            ));
        }
        if HeaderValue::from_str(v).is_err() {
            return Err(CassetteError::new(
                file,
                Some(field),
                CassetteErrorKind::InvalidValue,
                "not a valid HTTP header value (visible ASCII only)",
            ));
        }
    }
    Ok(())
}

fn check_response(file: &Path, base: &str, r: &RecordedResponse) -> Result<(), CassetteError> {
    if !(100..=599).contains(&r.status) {
        return Err(CassetteError::new(
            file,
            Some(format!("{base}.status")),
            CassetteErrorKind::InvalidValue,
            format!(
                "status {} is out of range; expected an HTTP status 100..=599",
                r.status
            ),
        ));
    }
    check_headers(file, base, &r.headers)?;
    if r.body_raw.is_some() && r.body.is_some() {
        return Err(CassetteError::new(
            file,
            Some(format!("{base}.body_raw")),
            CassetteErrorKind::InvalidValue,
            "give either `body` (JSON) or `body_raw` (a string served verbatim), not both",
        ));
    }
    Ok(())
}

impl Cassette {
    /// An empty cassette to fill with [`Cassette::push`] (for a recording
    /// proxy or a generator).
    pub fn new(
        case: impl Into<String>,
        protocol: Protocol,
        model: impl Into<String>,
        made: Made,
    ) -> Cassette {
        Cassette {
            format: FORMAT.to_string(),
            case: case.into(),
            protocol,
            model: model.into(),
            made,
            runs: Vec::new(),
        }
    }

    /// Append an interaction to run `run`, creating run variants up to it.
    pub fn push(&mut self, run: u32, interaction: Interaction) {
        while self.runs.len() <= run as usize {
            let n = self.runs.len() as u32;
            self.runs.push(RunRecording {
                run: n,
                interactions: Vec::new(),
                outcome: None,
            });
        }
        self.runs[run as usize].interactions.push(interaction);
    }

    /// Read and check one cassette file.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let path = path.as_ref();
        let io_err = |e: std::io::Error| {
            CassetteError::new(
                path,
                None,
                CassetteErrorKind::Io,
                format!("cannot read: {e}"),
            )
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.len() > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!(
                    "file is {} bytes; the limit is {MAX_CASSETTE_BYTES}",
                    meta.len()
                ),
            ));
        }
        let bytes = std::fs::read(path).map_err(io_err)?;
        // The file may have grown between metadata() and read().
        if bytes.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!("file exceeds {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            CassetteError::new(
                path,
                None,
                CassetteErrorKind::BadJson,
                format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
            )
        })?;
        Cassette::from_json_str(&text, path)
    }

    /// Parse and check a cassette from text; `source` is only used in errors.
    pub fn from_json_str(text: &str, source: &Path) -> Result<Cassette, CassetteError> {
        if text.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                source,
                None,
                CassetteErrorKind::TooLarge,
                format!("more than {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let mut cassette: Cassette =
            serde_json::from_str(text).map_err(|e| map_serde_error(source, text, &e))?;
        cassette.check(source)?;
        cassette.fill_hashes();
        Ok(cassette)
    }

    /// Fill in `body_sha256` where a body is present but the hash is not
    /// (derivable, so a hand-edited body does not need a hand-computed hash).
    fn fill_hashes(&mut self) {
        for run in &mut self.runs {
            for it in &mut run.interactions {
                if let (Some(body), None) = (&it.request.body, &it.request.body_sha256) {
                    it.request.body_sha256 = Some(body_sha256(body));
                }
            }
        }
    }

    /// Every check `load` and `save` make: format, limits, secrets, field
    /// values, duplicates. `file` is only used to name the file in errors.
    pub fn check(&self, file: &Path) -> Result<(), CassetteError> {
        use CassetteErrorKind::*;
        let err = |field: &str, kind, msg: String| {
            Err(CassetteError::new(file, Some(field.to_string()), kind, msg))
        };

        // Secrets first: a cassette with a key in it is refused whatever else is wrong.
        let doc = serde_json::to_value(self)
            .map_err(|e| CassetteError::new(file, None, InvalidValue, e.to_string()))?;
        if let Some((field, what)) = find_secret(&doc, &mut Vec::new()) {
            return Err(CassetteError::new(
                file,
                Some(field),
                Secret,
                format!("{what}; cassettes must not contain credentials (record through redact_headers/redact_json)"),
            ));
        }

        if self.format != FORMAT {
            return err(
                "format",
                InvalidValue,
                format!("is \"{}\"; expected \"{FORMAT}\"", self.format),
            );
        }
        if !valid_case_id(&self.case) {
            return err(
                "case",
                InvalidValue,
                format!(
                    "\"{}\" is not a valid case id; expected 1..={MAX_CASE_ID_LEN} characters from A-Z a-z 0-9 - _ . (it becomes a URL segment)",
                    self.case
                ),
            );
        }
        if self.model.trim().is_empty() {
            return err(
                "model",
                InvalidValue,
                "is empty; expected the model name".to_string(),
            );
        }
        if !looks_like_date(&self.made.when) {
            return err(
                "made.when",
                InvalidValue,
                format!(
                    "\"{}\" is not a date; expected RFC 3339 or YYYY-MM-DD",
                    self.made.when
                ),
            );
        }
        if let Some(t) = self.made.temperature {
            if !t.is_finite() || t < 0.0 {
                return err(
                    "made.temperature",
                    InvalidValue,
                    format!("{t}; expected a non-negative number or null"),
                );
            }
        }
        if self.runs.is_empty() {
            return err(
                "runs",
                InvalidValue,
                "is empty; expected at least one run variant".to_string(),
            );
        }
        if self.runs.len() > MAX_RUNS {
            return err(
                "runs",
                Limit,
                format!(
                    "has {} run variants; the limit is {MAX_RUNS}",
                    self.runs.len()
                ),
            );
        }
        let total: usize = self.runs.iter().map(|r| r.interactions.len()).sum();
        if total > MAX_INTERACTIONS {
            return err(
                "runs",
                Limit,
                format!("has {total} interactions; the limit is {MAX_INTERACTIONS} per cassette"),
            );
        }
        let endpoint = endpoint_path(self.protocol);
        for (ri, run) in self.runs.iter().enumerate() {
            if run.run as usize != ri {
                return err(
                    &format!("runs[{ri}].run"),
                    InvalidValue,
                    format!(
                        "is {}; expected {ri} (runs are numbered 0, 1, 2, ... in order)",
                        run.run
                    ),
                );
            }
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (ii, it) in run.interactions.iter().enumerate() {
                let base = format!("runs[{ri}].interactions[{ii}]");
                if it.call_key.trim().is_empty() {
                    return err(
                        &format!("{base}.call_key"),
                        InvalidValue,
                        "is empty; expected e.g. \"plan/0\"".to_string(),
                    );
                }
                if let Some(first) = seen.insert(&it.call_key, ii) {
                    return err(
                        &format!("{base}.call_key"),
                        Duplicate,
                        format!(
                            "duplicate (run {ri}, call_key \"{}\"): already at runs[{ri}].interactions[{first}]",
                            it.call_key
                        ),
                    );
                }
                if !it.request.method.eq_ignore_ascii_case("POST") {
                    return err(
                        &format!("{base}.request.method"),
                        InvalidValue,
                        format!("is \"{}\"; expected \"POST\"", it.request.method),
                    );
                }
                if it.request.path != endpoint {
                    return err(
                        &format!("{base}.request.path"),
                        InvalidValue,
                        format!(
                            "is \"{}\"; a {} cassette expects \"{endpoint}\"",
                            it.request.path,
                            self.protocol.as_str()
                        ),
                    );
                }
                check_headers(file, &format!("{base}.request"), &it.request.headers)?;
                if let Some(h) = &it.request.body_sha256 {
                    if !is_hex64(h) {
                        return err(
                            &format!("{base}.request.body_sha256"),
                            InvalidValue,
                            "expected 64 lowercase hex characters or null".to_string(),
                        );
                    }
                    if let Some(body) = &it.request.body {
                        let actual = body_sha256(body);
                        if &actual != h {
                            return err(
                                &format!("{base}.request.body_sha256"),
                                InvalidValue,
                                format!(
                                    "does not match the canonical SHA-256 of `request.body` ({actual}); fix or null it"
                                ),
                            );
                        }
                    }
                }
                check_response(file, &format!("{base}.response"), &it.response)?;
                if it.latency_ms > MAX_LATENCY_MS {
                    return err(
                        &format!("{base}.latency_ms"),
                        Limit,
                        format!("is {}; the limit is {MAX_LATENCY_MS}", it.latency_ms),
                    );
                }
                if it.faults_before.len() > MAX_FAULTS_BEFORE {
                    return err(
                        &format!("{base}.faults_before"),
                        Limit,
                        format!(
                            "has {} entries; the limit is {MAX_FAULTS_BEFORE}",
                            it.faults_before.len()
                        ),
                    );
                }
                for (fi, f) in it.faults_before.iter().enumerate() {
                    check_response(file, &format!("{base}.faults_before[{fi}]"), f)?;
                }
            }
        }
        Ok(())
    }

    /// Write the cassette pretty-printed, atomically (temp file in the same
    /// directory, fsync, rename, fsync the directory), after the same checks
    /// `load` makes: a cassette that would be refused is never written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CassetteError> {
        let path = path.as_ref();
        self.check(path)?;
        let mut text = serde_json::to_string_pretty(self).map_err(|e| {
            CassetteError::new(path, None, CassetteErrorKind::InvalidValue, e.to_string())
        })?;
        text.push('\n');
        if text.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!("would exceed {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let io = |what: &str, e: std::io::Error| {
            CassetteError::new(path, None, CassetteErrorKind::Io, format!("{what}: {e}"))
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cassette.json".into());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        // Hidden and not *.json, so load_dir never picks up a half-written temp.
        let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            Ok(())
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("writing temp file", e));
        }
        if let Err(e) = std::fs::rename(&tmp, path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("renaming temp file into place", e));
        }
        // Make the rename itself durable; best effort where directories
        // cannot be opened for sync.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Interaction {
    /// Build an interaction from one observed exchange, the way a recording
    /// proxy should: request body key-sorted and hashed, secrets removed
    /// from headers and bodies, a non-JSON response body kept as `body_raw`.
    #[allow(clippy::too_many_arguments)]
    pub fn from_exchange<K, V, I>(
        role: CallRole,
        call_key: impl Into<String>,
        protocol: Protocol,
        request_body: &Value,
        status: u16,
        response_headers: I,
        response_body: &[u8],
        latency_ms: u64,
    ) -> Interaction
    where
        K: AsRef<str>,
        V: AsRef<str>,
        I: IntoIterator<Item = (K, V)>,
    {
        let mut req = sorted_value(request_body);
        redact_json(&mut req);
        let (body, body_raw) = match serde_json::from_slice::<Value>(response_body) {
            Ok(mut v) => {
                redact_json(&mut v);
                (Some(sorted_value(&v)), None)
            }
            Err(_) => (
                None,
                Some(String::from_utf8_lossy(response_body).into_owned()),
            ),
        };
        Interaction {
            role,
            call_key: call_key.into(),
            request: RecordedRequest {
                method: default_method(),
                path: endpoint_path(protocol).to_string(),
                headers: BTreeMap::new(),
                body_sha256: Some(body_sha256(&req)),
                body: Some(req),
            },
            response: RecordedResponse {
                status,
                headers: redact_headers(response_headers),
                body,
                body_raw,
            },
            latency_ms,
            faults_before: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------
// The index over many cassettes
// ---------------------------------------------------------------------------

/// One loaded cassette plus its O(1) index.
#[derive(Debug, Clone)]
pub struct CaseRecording {
    /// Where it came from (file path, or a label for in-memory cassettes).
    pub source: PathBuf,
    pub cassette: Cassette,
    /// Per run variant: call_key -> index into `runs[v].interactions`.
    index: Vec<HashMap<String, usize>>,
}

impl CaseRecording {
    pub fn variants(&self) -> u32 {
        self.cassette.runs.len() as u32
    }

    /// The variant serving run index `run`: `run % variants`.
    pub fn variant_for(&self, run: u32) -> u32 {
        // check() guarantees at least one run; max(1) keeps this panic-free anyway.
        run % self.variants().max(1)
    }

    /// The interaction recorded at (variant, call_key), if any.
    pub fn get_variant(&self, variant: u32, call_key: &str) -> Option<&Interaction> {
        let i = *self.index.get(variant as usize)?.get(call_key)?;
        self.cassette
            .runs
            .get(variant as usize)?
            .interactions
            .get(i)
    }

    /// Call keys recorded in one variant (for nearest-match diagnostics).
    pub fn call_keys(&self, variant: u32) -> impl Iterator<Item = &str> {
        self.index
            .get(variant as usize)
            .into_iter()
            .flat_map(|m| m.keys().map(String::as_str))
    }
}

/// Every loaded cassette, indexed by case id, then run variant, then
/// call_key: a lookup is two hash probes and never scans recordings.
/// (Nested maps rather than one map keyed by a (case, run, call_key) tuple so
/// lookups can borrow the request's &str without allocating.)
#[derive(Debug, Clone, Default)]
pub struct Recordings {
    cases: HashMap<String, CaseRecording>,
    interactions: usize,
}

impl Recordings {
    pub fn new() -> Recordings {
        Recordings::default()
    }

    /// Add a cassette after checking it; `source` names it in errors. Refuses
    /// a second cassette for the same case id.
    pub fn add(
        &mut self,
        cassette: Cassette,
        source: impl Into<PathBuf>,
    ) -> Result<(), CassetteError> {
        let source = source.into();
        cassette.check(&source)?;
        let mut cassette = cassette;
        cassette.fill_hashes();
        self.insert_checked(cassette, source)
    }

    /// Index a cassette that has already passed `check` (load_dir: `load`
    /// checked it, and checking twice would hash every body twice).
    fn insert_checked(&mut self, cassette: Cassette, source: PathBuf) -> Result<(), CassetteError> {
        if let Some(existing) = self.cases.get(&cassette.case) {
            return Err(CassetteError::new(
                &source,
                Some("case".into()),
                CassetteErrorKind::Duplicate,
                format!(
                    "case \"{}\" is already recorded in {}; one cassette per case",
                    cassette.case,
                    existing.source.display()
                ),
            ));
        }
        let index = cassette
            .runs
            .iter()
            .map(|r| {
                r.interactions
                    .iter()
                    .enumerate()
                    .map(|(i, it)| (it.call_key.clone(), i))
                    .collect()
            })
            .collect();
        self.interactions += cassette
            .runs
            .iter()
            .map(|r| r.interactions.len())
            .sum::<usize>();
        self.cases.insert(
            cassette.case.clone(),
            CaseRecording {
                source,
                cassette,
                index,
            },
        );
        Ok(())
    }

    /// Build from in-memory cassettes (tests, generators).
    pub fn from_cassettes<I, P>(cassettes: I) -> Result<Recordings, RecordingsError>
    where
        I: IntoIterator<Item = (P, Cassette)>,
        P: Into<PathBuf>,
    {
        let mut rec = Recordings::new();
        let mut errors = Vec::new();
        for (src, c) in cassettes {
            if let Err(e) = rec.add(c, src) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(rec)
        } else {
            Err(RecordingsError { errors })
        }
    }

    /// Load every `*.json` file under `dir`, recursively (hidden entries,
    /// non-JSON files like README.md and symlinked directories are skipped).
    /// Every file is checked and every error reported; any error fails the load.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Recordings, RecordingsError> {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        let mut errors = Vec::new();
        collect_json_files(dir, &mut files, &mut errors);
        if files.len() > MAX_CASSETTE_FILES {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Limit,
                format!(
                    "{} cassette files; the limit is {MAX_CASSETTE_FILES}",
                    files.len()
                ),
            ));
            return Err(RecordingsError { errors });
        }
        if files.is_empty() && errors.is_empty() {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Io,
                "no *.json cassettes found under this directory",
            ));
        }
        let mut rec = Recordings::new();
        for f in files {
            match Cassette::load(&f) {
                Ok(c) => {
                    if let Err(e) = rec.insert_checked(c, f) {
                        errors.push(e);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(rec)
        } else {
            Err(RecordingsError { errors })
        }
    }

    pub fn case(&self, case: &str) -> Option<&CaseRecording> {
        self.cases.get(case)
    }

    /// O(1): the interaction for (case, run index, call_key), run mapped to
    /// its variant `run % n`.
    pub fn get(&self, case: &str, run: u32, call_key: &str) -> Option<&Interaction> {
        let c = self.cases.get(case)?;
        c.get_variant(c.variant_for(run), call_key)
    }

    pub fn cases(&self) -> impl Iterator<Item = &CaseRecording> {
        self.cases.values()
    }

    pub fn case_ids(&self) -> impl Iterator<Item = &str> {
        self.cases.keys().map(String::as_str)
    }

    /// Give up the index and hand back the cassettes (the replay server
    /// moves them into its own prepared form instead of copying bodies).
    pub fn into_cases(self) -> Vec<CaseRecording> {
        self.cases.into_values().collect()
    }

    pub fn case_count(&self) -> usize {
        self.cases.len()
    }

    pub fn interaction_count(&self) -> usize {
        self.interactions
    }
}

fn collect_json_files(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<CassetteError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Io,
                format!("cannot read directory: {e}"),
            ));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    // Sorted so errors and duplicate-case reports are deterministic.
    paths.sort();
    for p in paths {
        let hidden = p
            .file_name()
            .map(|n| n.to_string_lossy().starts_with('.'))
            .unwrap_or(true);
        if hidden {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            collect_json_files(&p, files, errors);
            if files.len() > MAX_CASSETTE_FILES {
                return;
            }
        } else if p.extension().is_some_and(|e| e == "json")
            && std::fs::metadata(&p).map(|m| m.is_file()).unwrap_or(false)
        {
            files.push(p);
        }
    }
}

// ---------------------------------------------------------------------------
// Nearest-match helpers (for miss messages)
// ---------------------------------------------------------------------------

/// Levenshtein distance over chars, inputs capped at 256 chars so a hostile
/// header cannot make a miss expensive.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(256).collect();
    let b: Vec<char> = b.chars().take(256).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `target` (ties broken alphabetically, so the
/// message is deterministic).
pub fn nearest<'a>(target: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(target, c), c))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn minimal(case: &str) -> String {
        format!(
            r#"{{
  "format": "harness-cassette/1",
  "case": "{case}",
  "protocol": "anthropic",
  "model": "claude-test",
  "made": {{"how": "scripted", "when": "2025-01-01", "by": "test"}},
  "runs": [
    {{
      "run": 0,
      "interactions": [
        {{
          "role": "plan",
          "call_key": "plan/0",
          "request": {{"method": "POST", "path": "/v1/messages", "body": null, "body_sha256": null}},
          "response": {{"status": 200, "headers": {{"content-type": "application/json"}}, "body": {{"ok": true}}}},
          "latency_ms": 5
        }}
      ]
    }}
  ]
}}"#
        )
    }

    fn parse(text: &str) -> Result<Cassette, CassetteError> {
        Cassette::from_json_str(text, Path::new("cases/x.json"))
    }

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

    #[test]
    fn minimal_cassette_loads() {
        let c = parse(&minimal("c1")).unwrap();
        assert_eq!(c.case, "c1");
        assert_eq!(c.runs[0].interactions[0].role, CallRole::Plan);
    }

    #[test]
    fn bad_json_names_file_line_and_column() {
        let e = parse("{\n  \"format\": \"harness-cassette/1\",\n  \"case\": oops\n}").unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::BadJson);
        assert_eq!(e.line, Some(3));
        let s = e.to_string();
        assert!(s.starts_with("cases/x.json"), "{s}");
        assert!(s.contains("line 3"), "{s}");
    }

    #[test]
    fn missing_field_names_the_field() {
        let text = minimal("c1").replace("\"call_key\": \"plan/0\",", "");
        let e = parse(&text).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::MissingField, "{e}");
        assert_eq!(
            e.field.as_deref(),
            Some("runs[0].interactions[0].call_key"),
            "{e}"
        );
        let text = minimal("c1").replace("\"model\": \"claude-test\",", "");
        let e = parse(&text).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("model"), "{e}");
        let text = minimal("c1").replace("\"by\": \"test\"", "\"byy\": \"test\"");
        let e = parse(&text).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::UnknownField, "{e}");
        assert_eq!(e.field.as_deref(), Some("made.byy"), "{e}");
    }

    #[test]
    fn unknown_protocol_and_role_name_the_field() {
        let e = parse(&minimal("c1").replace("\"anthropic\"", "\"gemini\"")).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("protocol"), "{e}");
        assert!(e.to_string().contains("unknown protocol \"gemini\""), "{e}");
        let e = parse(&minimal("c1").replace("\"role\": \"plan\"", "\"role\": \"planner\""))
            .unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("runs[0].interactions[0].role"),
            "{e}"
        );
        assert!(e.to_string().contains("unknown role \"planner\""), "{e}");
    }

    #[test]
    fn status_out_of_range_and_type_errors() {
        let e = parse(&minimal("c1").replace("\"status\": 200", "\"status\": 700")).unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("runs[0].interactions[0].response.status"),
            "{e}"
        );
        assert!(e.message.contains("out of range"), "{e}");
        let e = parse(&minimal("c1").replace("\"status\": 200", "\"status\": 70000")).unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("runs[0].interactions[0].response.status"),
            "{e}"
        );
        let e = parse(&minimal("c1").replace("\"latency_ms\": 5", "\"latency_ms\": \"5\""))
            .unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("runs[0].interactions[0].latency_ms"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_call_key_is_refused() {
        let mut c = parse(&minimal("c1")).unwrap();
        let dup = c.runs[0].interactions[0].clone();
        c.runs[0].interactions.push(dup);
        let e = c.check(Path::new("d.json")).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::Duplicate);
        assert_eq!(e.field.as_deref(), Some("runs[0].interactions[1].call_key"));
        assert!(e.to_string().contains("interactions[0]"), "{e}");
    }

    #[test]
    fn other_semantic_checks() {
        for (from, to, field) in [
            ("\"harness-cassette/1\"", "\"harness-cassette/2\"", "format"),
            ("\"case\": \"c1\"", "\"case\": \"a b\"", "case"),
            (
                "\"/v1/messages\"",
                "\"/v1/chat/completions\"",
                "runs[0].interactions[0].request.path",
            ),
            (
                "\"body_sha256\": null",
                "\"body_sha256\": \"xyz\"",
                "runs[0].interactions[0].request.body_sha256",
            ),
            (
                "\"when\": \"2025-01-01\"",
                "\"when\": \"yesterday\"",
                "made.when",
            ),
            ("\"run\": 0", "\"run\": 1", "runs[0].run"),
        ] {
            let e = parse(&minimal("c1").replace(from, to)).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{e}");
        }
        // A body hash that does not match the body.
        let text = minimal("c1").replace(
            "\"body\": null, \"body_sha256\": null",
            &format!(
                "\"body\": {{\"a\": 1}}, \"body_sha256\": \"{}\"",
                "0".repeat(64)
            ),
        );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("does not match"), "{e}");
        // A missing hash next to a body is filled in.
        let text = minimal("c1").replace(
            "\"body\": null, \"body_sha256\": null",
            "\"body\": {\"a\": 1}",
        );
        let c = parse(&text).unwrap();
        assert_eq!(
            c.runs[0].interactions[0].request.body_sha256,
            Some(body_sha256(&json!({"a": 1})))
        );
    }

    #[test]
    fn secrets_are_refused_anywhere() {
        let cases = [
            (
                "\"content-type\": \"application/json\"",
                "\"Set-Cookie\": \"a=b\"",
                "runs[0].interactions[0].response.headers.Set-Cookie",
            ),
            (
                "\"body\": {\"ok\": true}",
                "\"body\": {\"meta\": {\"API_KEY\": \"x\"}}",
                "runs[0].interactions[0].response.body.meta.API_KEY",
            ),
            (
                "\"body\": {\"ok\": true}",
                "\"body\": {\"t\": \"key sk-ant-api03-abcdefghij0123456789xyz\"}",
                "runs[0].interactions[0].response.body.t",
            ),
            (
                "\"by\": \"test\"",
                "\"by\": \"Bearer eyJhbGciOiJIUzI1NiJ9.abc123\"",
                "made.by",
            ),
            (
                "\"body\": null,",
                "\"headers\": {\"x-api-key\": \"k\"}, \"body\": null,",
                "runs[0].interactions[0].request.headers.x-api-key",
            ),
        ];
        for (from, to, field) in cases {
            let text = minimal("c1").replace(from, to);
            assert_ne!(text, minimal("c1"), "replacement applied for {field}");
            let e = parse(&text).unwrap_err();
            assert_eq!(e.kind, CassetteErrorKind::Secret, "{e}");
            assert_eq!(e.field.as_deref(), Some(field), "{e}");
            assert!(e.to_string().starts_with("cases/x.json"), "{e}");
        }
        // Prose that merely mentions the words passes.
        for ok in [
            "ask-me-anything-about-task-12345678901234567890",
            "Bearer tokens are sent in a header",
            "sk-short1",
        ] {
            assert_eq!(looks_like_secret(ok), None, "{ok}");
        }
    }

    #[test]
    fn redaction_helpers_make_a_savable_cassette() {
        let h = redact_headers([
            ("Authorization", "Bearer abcdefghijklmnop1234"),
            ("Content-Type", "application/json"),
            ("x-request-id", "sk-abcdefghijklmnopqrstuvwxyz123"),
            ("Content-Length", "12"),
            ("request-id", "req_1"),
        ]);
        assert_eq!(
            h.keys().collect::<Vec<_>>(),
            vec!["content-type", "request-id"]
        );
        let it = Interaction::from_exchange(
            CallRole::Plan,
            "plan/0",
            Protocol::Anthropic,
            &json!({"system": "s", "api_key": "zzz", "model": "m"}),
            200,
            [("set-cookie", "a=b"), ("content-type", "application/json")],
            br#"{"content": [], "id": "msg_1"}"#,
            120,
        );
        assert!(it.request.body.as_ref().unwrap().get("api_key").is_none());
        let mut c = Cassette::new(
            "rec-1",
            Protocol::Anthropic,
            "m",
            Made {
                how: MadeHow::Recorded,
                when: "2025-06-01T10:00:00Z".into(),
                by: "proxy".into(),
                temperature: Some(0.0),
                seed: None,
                notes: String::new(),
            },
        );
        c.push(0, it);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rec-1.json");
        c.save(&p).unwrap();
        let back = Cassette::load(&p).unwrap();
        assert_eq!(back, c);
        // Pretty-printed, diffable by a person.
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("\n  \"case\": \"rec-1\""), "{text}");
        // Save refuses a secret and leaves nothing behind.
        let mut bad = c.clone();
        bad.runs[0].interactions[0]
            .response
            .headers
            .insert("cookie".into(), "a".into());
        let e = bad.save(dir.path().join("bad.json")).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::Secret);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn load_dir_indexes_and_reports_every_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
        std::fs::write(dir.path().join("README.md"), "# not a cassette").unwrap();
        std::fs::write(dir.path().join("a.json"), minimal("case-a")).unwrap();
        std::fs::write(dir.path().join("sub/deeper/b.json"), minimal("case-b")).unwrap();
        let rec = Recordings::load_dir(dir.path()).unwrap();
        assert_eq!(rec.case_count(), 2);
        assert_eq!(rec.interaction_count(), 2);
        assert!(rec.get("case-b", 7, "plan/0").is_some());
        assert!(rec.get("case-b", 0, "plan/1").is_none());

        std::fs::write(dir.path().join("sub/bad.json"), "{ nope").unwrap();
        std::fs::write(dir.path().join("sub/dup.json"), minimal("case-a")).unwrap();
        let err = Recordings::load_dir(dir.path()).unwrap_err();
        assert_eq!(err.errors.len(), 2, "{err}");
        let s = err.to_string();
        assert!(
            s.contains("bad.json") && s.contains("not valid JSON"),
            "{s}"
        );
        assert!(
            s.contains("dup.json") && s.contains("already recorded in"),
            "{s}"
        );

        let empty = tempfile::tempdir().unwrap();
        assert!(Recordings::load_dir(empty.path())
            .unwrap_err()
            .to_string()
            .contains("no *.json"));
    }

    #[test]
    fn too_large_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(MAX_CASSETTE_BYTES + 1).unwrap();
        let e = Cassette::load(&p).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::TooLarge);
    }

    #[test]
    fn example_cassette_loads() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings/examples/example-fix-typo.json");
        let c = Cassette::load(&p).unwrap();
        assert_eq!(c.runs.len(), 2);
        // The checked-in hashes are the canonical hashes of the checked-in bodies.
        for run in &c.runs {
            for it in &run.interactions {
                if let Some(b) = &it.request.body {
                    assert_eq!(
                        it.request.body_sha256.as_deref(),
                        Some(body_sha256(b).as_str())
                    );
                }
            }
        }
    }

    #[test]
    fn edit_distance_and_nearest() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            nearest(
                "plan/1",
                ["plan/0", "judge/1", "execute/t1/a0/0"].into_iter()
            ),
            Some("plan/0")
        );
    }
}
