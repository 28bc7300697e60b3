//! One strict loader for the files people write and tools record: the run
//! spec and case.toml (TOML), cassettes (JSON).
//!
//! [`from_str`] deserializes a `T` that derives `Deserialize` (with
//! `#[serde(deny_unknown_fields)]`, so a misspelt key is an error and not a
//! silent default) and turns every failure into an [`Error`] value: which
//! field (the path serde_path_to_error tracked, `checks.t.command[0]`), what
//! kind of mistake ([`Kind`]: syntax, missing, unknown, wrong type, ...), what
//! the file has there ([`Error::found`], the value's type in the format's own
//! words), the format's own message and where in the text.
//!
//! Callers turn that into their own error (`SpecError`, `LoadError`,
//! `CassetteError`) by matching on [`Kind`]; none of them parses serde's
//! message text. This crate is the one place that does (serde's
//! `de::Error` constructors only hand a format a string), and it depends
//! only on the wording of serde's own constructors, which is
//! `serde::de::Error`'s contract since 1.0.
//!
//! ```
//! #[derive(serde::Deserialize, Debug)]
//! #[serde(deny_unknown_fields)]
//! struct Budget {
//!     hard_cap_usd: f64,
//! }
//! let e = strict::from_str::<Budget>(strict::Format::Toml, "hard_cap_usd = \"lots\"").unwrap_err();
//! assert_eq!(e.kind, strict::Kind::InvalidType);
//! assert_eq!(e.field().as_deref(), Some("hard_cap_usd"));
//! assert_eq!(e.found, Some("string"));
//! ```
//!
//! It also holds [`wire_names!`] (module `wire`), the one way the harness
//! and the bench declare a closed vocabulary that travels as strings.

mod wire;

use serde::de::DeserializeOwned;
pub use serde_path_to_error::Segment;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// What is wrong. Paths are in [`Error::path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The text is not TOML / JSON at all (or JSON with trailing characters):
    /// no field was reached.
    Syntax,
    /// A required field is absent. The path is its table's; `field` is its
    /// name.
    Missing { field: String },
    /// A field the type does not have. The path ends with it; `known` is
    /// every field the table has, in declaration order.
    Unknown { field: String, known: Vec<String> },
    /// A string that is none of an enum's variants (`expected`, in
    /// declaration order).
    UnknownVariant {
        variant: String,
        expected: Vec<String>,
    },
    /// A value of another type than the field's ([`Error::found`] says which).
    InvalidType,
    /// A value of the right type that the field's type refuses (a negative
    /// number for an unsigned field, 70000 for a u16).
    InvalidValue,
    /// An array or tuple of the wrong length.
    InvalidLength,
    /// A field given twice (JSON; TOML calls that a syntax error).
    Duplicate { field: String },
    /// A message of a type's own `Deserialize` impl.
    Other,
}

/// Where in the text: a byte offset and its 1-based line and column (the
/// column counts bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub byte: usize,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone)]
pub struct Error {
    pub format: Format,
    pub kind: Kind,
    /// The path to the offending value, as serde_path_to_error tracked it:
    /// for `Missing`, the table that lacks the field; for `Unknown`, ending
    /// with the unknown key; empty for `Syntax`.
    pub path: Vec<Segment>,
    /// The type of the value at `path` in the format's own words (TOML:
    /// string, integer, float, boolean, datetime, array, table; JSON: null,
    /// boolean, number, string, array, object). None for `Syntax` and
    /// `Missing`.
    pub found: Option<&'static str>,
    /// The format's own message, without its position.
    pub message: String,
    pub at: Option<Position>,
}

impl Error {
    /// The offending field as a dotted path (`budget.hard_cap_usd`,
    /// `checks.t.command[0]`): a missing field is named after its table's
    /// path. None when no field is at fault (a syntax error, a document
    /// that is not a table).
    pub fn field(&self) -> Option<String> {
        let path = render(&self.path);
        match (&self.kind, path.as_str()) {
            // A syntax error in a value names the key it is the value of
            // (`toml_key_at`); any other names none.
            (Kind::Syntax, ".") => None,
            (Kind::Missing { field }, ".") => Some(field.clone()),
            (Kind::Missing { field }, p) => Some(format!("{p}.{field}")),
            (_, ".") => None,
            (_, p) => Some(p.to_string()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(field) = self.field() {
            write!(f, "field `{field}`: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(p) = self.at {
            write!(f, " (line {}, column {})", p.line, p.column)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// A path as serde_path_to_error prints one: `a.b[0].c`, `.` when empty.
pub fn render(path: &[Segment]) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let mut out = String::new();
    for (i, s) in path.iter().enumerate() {
        if i > 0 && !matches!(s, Segment::Seq { .. }) {
            out.push('.');
        }
        out.push_str(&s.to_string());
    }
    out
}

/// Names as serde quotes a list of them (`` `a` ``, `` `a` or `b` ``,
/// `` one of `a`, `b`, `c` ``), for messages that keep serde's wording.
pub fn one_of(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [a] => format!("`{a}`"),
        [a, b] => format!("`{a}` or `{b}`"),
        all => {
            let quoted: Vec<String> = all.iter().map(|n| format!("`{n}`")).collect();
            format!("one of {}", quoted.join(", "))
        }
    }
}

/// The key toml puts a datetime under when a visitor asks for a table
/// (toml_datetime's private `FIELD`).
const TOML_DATETIME_KEY: &str = "$__toml_private_datetime";

/// A table (TOML) or object (JSON), and nothing else. serde's derived
/// structs also accept an array of their fields in order (`budget = [28.0,
/// 28800, 74700]`), which a file people write must not: wrap a struct field
/// in `Table` and an array is a type error, "expected a table".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table<T>(pub T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Table<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OnlyMap<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for OnlyMap<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(OnlyMap(std::marker::PhantomData))
            .map(Table)
    }
}

/// A `Table<T>`'s schema is `T`'s: the object `T` derives (its array form,
/// which `Table` refuses, is not in a derived schema anyway).
impl<T: schemars::JsonSchema> schemars::JsonSchema for Table<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(g)
    }
}

/// Deserialize `text` as `format` into `T`, every failure an [`Error`].
pub fn from_str<T: DeserializeOwned>(format: Format, text: &str) -> Result<T, Error> {
    match format {
        Format::Toml => from_toml(text),
        Format::Json => from_json(text),
    }
}

fn from_toml<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    let e = match serde_path_to_error::deserialize::<_, T>(toml::Deserializer::new(text)) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let path: Vec<Segment> = e.path().iter().cloned().collect();
    let inner = e.into_inner();
    let message = inner.message().to_string();
    let at = inner.span().map(|s| position(text, s.start));
    // toml parses the whole document before it deserializes anything, and
    // any TOML document is a table: the error is the syntax's exactly when
    // the text does not parse as one.
    let (kind, found) = match text.parse::<toml::Table>() {
        Err(_) => (Kind::Syntax, None),
        Ok(doc) => {
            let kind = classify(&message, &path);
            let found = match kind {
                Kind::Missing { .. } => None,
                _ => toml_type_at(&toml::Value::Table(doc), &path),
            };
            (kind, found)
        }
    };
    let mut path = match (&kind, &at) {
        // The parser knows no field; the text does, when the error is in a
        // `key = value` line's value (a number too large, an unclosed string).
        (Kind::Syntax, Some(p)) => toml_key_at(text, p.byte).unwrap_or_default(),
        (Kind::Syntax, None) => vec![],
        _ => path,
    };
    // toml hands a datetime to a table's visitor as a one-key table under a
    // private key; a path through that key is a datetime where a table was
    // expected, not a field of the user's.
    let marker = path
        .iter()
        .position(|s| matches!(s, Segment::Map { key } if key == TOML_DATETIME_KEY));
    if let Some(i) = marker {
        path.truncate(i);
        return Err(Error {
            format: Format::Toml,
            kind: Kind::InvalidType,
            path,
            found: Some("datetime"),
            message: "invalid type: datetime, expected a table".into(),
            at,
        });
    }
    Err(Error {
        format: Format::Toml,
        kind,
        path,
        found,
        message,
        at,
    })
}

fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let (path, inner) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => match de.end() {
            Ok(()) => return Ok(v),
            // Trailing characters after the value.
            Err(e) => (vec![], e),
        },
        Err(e) => (e.path().iter().cloned().collect(), e.into_inner()),
    };
    use serde_json::error::Category;
    let full = inner.to_string();
    let suffix = format!(" at line {} column {}", inner.line(), inner.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    let at = (inner.line() > 0).then(|| {
        let start = line_start(text, inner.line());
        Position {
            byte: (start + inner.column().saturating_sub(1)).min(text.len()),
            line: inner.line(),
            column: inner.column(),
        }
    });
    let (kind, found) = match inner.classify() {
        Category::Syntax | Category::Eof => (Kind::Syntax, None),
        Category::Io => (Kind::Other, None),
        Category::Data => {
            let kind = classify(&message, &path);
            let found = match kind {
                Kind::Missing { .. } => None,
                _ => serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|doc| json_type_at(&doc, &path)),
            };
            (kind, found)
        }
    };
    let path = if kind == Kind::Syntax { vec![] } else { path };
    Err(Error {
        format: Format::Json,
        kind,
        path,
        found,
        message,
        at,
    })
}

/// The kind of a data error, from the wording of serde's `de::Error`
/// constructors (the formats pass them through unchanged).
fn classify(message: &str, path: &[Segment]) -> Kind {
    let quoted = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix('`'))
            .map(str::to_string)
    };
    if let Some(field) = quoted("missing field `") {
        return Kind::Missing { field };
    }
    if let Some(field) = quoted("duplicate field `") {
        return Kind::Duplicate { field };
    }
    if message.starts_with("unknown field `") {
        // The key is the path's last segment (serde_path_to_error records
        // it before the field visitor refuses it); a key may hold a
        // backtick, so it is not cut out of the message.
        let field = match path.last() {
            Some(Segment::Map { key }) => key.clone(),
            _ => message.split('`').nth(1).unwrap_or("").to_string(),
        };
        let rest = message
            .strip_prefix(&format!("unknown field `{field}`, "))
            .unwrap_or("");
        return Kind::Unknown {
            field,
            known: names(rest.strip_prefix("expected ").unwrap_or("")),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        // The expected names are identifiers; the variant is the user's text
        // and may hold anything, so it is what lies before the last marker.
        let (variant, expected) = match rest.strip_suffix("`, there are no variants") {
            Some(v) => (v.to_string(), vec![]),
            None => match rest.rfind("`, expected ") {
                Some(i) => (
                    rest[..i].to_string(),
                    names(&rest[i + "`, expected ".len()..]),
                ),
                None => (rest.trim_end_matches('`').to_string(), vec![]),
            },
        };
        return Kind::UnknownVariant { variant, expected };
    }
    if message.starts_with("invalid type: ") {
        return Kind::InvalidType;
    }
    if message.starts_with("invalid value: ") {
        return Kind::InvalidValue;
    }
    if message.starts_with("invalid length ") {
        return Kind::InvalidLength;
    }
    Kind::Other
}

/// The names of serde's `` `a` or `b` `` / `` one of `a`, `b`, `c` ``.
fn names(one_of: &str) -> Vec<String> {
    one_of
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn toml_type_at(doc: &toml::Value, path: &[Segment]) -> Option<&'static str> {
    let mut v = doc;
    for s in path {
        v = match (s, v) {
            (Segment::Map { key } | Segment::Enum { variant: key }, toml::Value::Table(t)) => {
                t.get(key)?
            }
            (Segment::Seq { index }, toml::Value::Array(a)) => a.get(*index)?,
            // A unit variant written as a string: the path ends at it.
            (Segment::Enum { .. }, _) => v,
            _ => return None,
        };
    }
    Some(v.type_str())
}

fn json_type_at(doc: &serde_json::Value, path: &[Segment]) -> Option<&'static str> {
    use serde_json::Value;
    let mut v = doc;
    for s in path {
        v = match (s, v) {
            (Segment::Map { key } | Segment::Enum { variant: key }, Value::Object(o)) => {
                o.get(key)?
            }
            (Segment::Seq { index }, Value::Array(a)) => a.get(*index)?,
            (Segment::Enum { .. }, _) => v,
            _ => return None,
        };
    }
    Some(match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    })
}

/// Byte offset where 1-based `line` starts (the end, past the last line).
fn line_start(text: &str, line: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(p) => start += p + 1,
            None => return text.len(),
        }
    }
    start
}

/// The dotted key whose value holds byte `byte` of `text`: the line's
/// `key =` (a bare or dotted key; quoted keys are not resolved) under the
/// nearest `[table]` header above it. None when the byte is not in a value
/// of such a line. Written by hand: the toml crate reports no key for a
/// value it could not parse.
fn toml_key_at(text: &str, byte: usize) -> Option<Vec<Segment>> {
    let byte = byte.min(text.len());
    let start = text[..byte].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let eq = line.find('=')?;
    if start + eq >= byte {
        return None;
    }
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let key: Vec<&str> = line[..eq].trim().split('.').map(str::trim).collect();
    if !key.iter().all(|k| bare(k)) {
        return None;
    }
    let header = text[..start].lines().rev().find_map(|l| {
        let l = l.trim();
        let inner = l
            .strip_prefix("[[")
            .and_then(|r| r.strip_suffix("]]"))
            .or_else(|| l.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
        Some(
            inner
                .split('.')
                .map(|k| k.trim().to_string())
                .collect::<Vec<_>>(),
        )
    });
    let mut path: Vec<Segment> = header
        .unwrap_or_default()
        .into_iter()
        .filter(|k| bare(k))
        .map(|key| Segment::Map { key })
        .collect();
    path.extend(key.iter().map(|k| Segment::Map { key: k.to_string() }));
    Some(path)
}

fn position(text: &str, byte: usize) -> Position {
    let byte = byte.min(text.len());
    let before = &text.as_bytes()[..byte];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Position {
        byte,
        line,
        column: byte - start + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        name: String,
        count: Option<u16>,
        tags: Option<Vec<String>>,
        sub: Option<Sub>,
        by_name: Option<BTreeMap<String, Sub>>,
        role: Option<Role>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sub {
        a: i64,
        b: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Role {
        Plan,
        Execute,
        Judge,
    }

    fn toml(text: &str) -> Error {
        from_str::<Doc>(Format::Toml, text).unwrap_err()
    }

    fn json(text: &str) -> Error {
        from_str::<Doc>(Format::Json, text).unwrap_err()
    }

    #[test]
    fn an_unknown_field_is_named_by_its_path_with_the_known_ones() {
        for e in [
            toml("name = \"n\"\n[by_name.\"x y\"]\na = 1\nzz = 2\n"),
            json(r#"{"name": "n", "by_name": {"x y": {"a": 1, "zz": 2}}}"#),
        ] {
            assert_eq!(e.field().as_deref(), Some("by_name.x y.zz"), "{e}");
            assert_eq!(
                e.kind,
                Kind::Unknown {
                    field: "zz".into(),
                    known: vec!["a".into(), "b".into()]
                },
                "{e}"
            );
            assert_eq!(
                e.found,
                Some(if e.format == Format::Toml {
                    "integer"
                } else {
                    "number"
                })
            );
        }
        let e = toml(
            "name = \"n\"\nbo`gus = 1\n"
                .replace("bo`gus", "\"bo`gus\"")
                .as_str(),
        );
        let Kind::Unknown { field, known } = &e.kind else {
            panic!("{e}")
        };
        assert_eq!(field, "bo`gus");
        assert_eq!(known.len(), 6, "{e}");
        assert_eq!(known[0], "name");
    }

    #[test]
    fn a_wrong_type_is_named_by_its_path_with_what_is_there() {
        let e = toml("name = \"n\"\ntags = [\"a\", 2]\n");
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("tags[1]".into()), Some("integer")),
            "{e}"
        );
        // A datetime is deserialized as a map; `found` says what the file has.
        let e = toml("name = 1979-05-27\n");
        assert_eq!(
            (e.field().as_deref(), e.found),
            (Some("name"), Some("datetime")),
            "{e}"
        );
        let e = toml("name = \"n\"\nsub = \"s\"\n");
        assert_eq!(
            (e.field().as_deref(), e.found),
            (Some("sub"), Some("string")),
            "{e}"
        );
        let e = json(r#"{"name": "n", "sub": {"a": "1"}}"#);
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("sub.a".into()), Some("string")),
            "{e}"
        );
        let e = json(r#"{"name": "n", "count": 70000}"#);
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidValue, Some("count".into()), Some("number")),
            "{e}"
        );
    }

    #[test]
    fn a_missing_field_is_named_under_its_table() {
        for (e, field) in [
            (toml("count = 1\n"), "name"),
            (toml("name = \"n\"\n[sub]\nb = \"x\"\n"), "sub.a"),
            (json(r#"{"count": 1}"#), "name"),
            (
                json(r#"{"name": "n", "by_name": {"k": {}}}"#),
                "by_name.k.a",
            ),
        ] {
            assert_eq!(e.field().as_deref(), Some(field), "{e}");
            assert!(
                matches!(&e.kind, Kind::Missing { field: f } if field.ends_with(f.as_str())),
                "{e}"
            );
            assert_eq!(e.found, None);
        }
    }

    #[test]
    fn an_unknown_variant_keeps_serdes_list() {
        for e in [
            toml("name = \"n\"\nrole = \"planner\"\n"),
            json(r#"{"name": "n", "role": "planner"}"#),
        ] {
            assert_eq!(e.field().as_deref(), Some("role"), "{e}");
            let Kind::UnknownVariant { variant, expected } = &e.kind else {
                panic!("{e}")
            };
            assert_eq!(variant, "planner");
            assert_eq!(
                e.message,
                format!("unknown variant `planner`, expected {}", one_of(expected))
            );
        }
    }

    #[test]
    fn syntax_errors_name_no_field_and_say_where() {
        let e = toml("name = \"n\"\n[sub\n");
        assert_eq!((e.kind.clone(), e.field()), (Kind::Syntax, None), "{e}");
        assert_eq!(e.at.map(|p| p.line), Some(2), "{e}");
        let e = json("{\n  \"name\": oops\n}");
        assert_eq!((e.kind.clone(), e.field()), (Kind::Syntax, None), "{e}");
        let p = e.at.unwrap();
        assert_eq!((p.line, p.column), (2, 11), "{e}");
        assert_eq!(&"{\n  \"name\": oops\n}"[p.byte..p.byte + 1], "o");
        assert!(!e.message.contains("at line"), "{e}");
        // Trailing characters after a whole value are not JSON either.
        let e = json(r#"{"name": "n"} x"#);
        assert_eq!(e.kind, Kind::Syntax, "{e}");
    }

    #[test]
    fn a_position_is_its_line_and_column() {
        let e = toml("name = \"n\"\ncount = \"many\"\n");
        assert_eq!(
            e.at,
            Some(Position {
                byte: 19,
                line: 2,
                column: 9
            }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "field `count`: invalid type: string \"many\", expected u16 (line 2, column 9)"
        );
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        sub: Table<Sub>,
    }

    #[test]
    fn a_table_is_never_an_array_and_a_datetime_is_no_field() {
        let e = from_str::<Outer>(Format::Toml, "sub = [1]\n").unwrap_err();
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("sub".into()), Some("array")),
            "{e}"
        );
        let e = from_str::<Outer>(Format::Json, r#"{"sub": [1]}"#).unwrap_err();
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("sub".into()), Some("array")),
            "{e}"
        );
        // The unknown and missing fields of the table inside still name
        // themselves.
        let e = from_str::<Outer>(Format::Toml, "[sub]\na = 1\nzz = 2\n").unwrap_err();
        assert_eq!(e.field().as_deref(), Some("sub.zz"), "{e}");
        let e = from_str::<Outer>(Format::Toml, "[sub]\nb = \"x\"\n").unwrap_err();
        assert_eq!(e.field().as_deref(), Some("sub.a"), "{e}");
        let e = from_str::<Outer>(Format::Toml, "sub = 1979-05-27\n").unwrap_err();
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("sub".into()), Some("datetime")),
            "{e}"
        );
        let e = toml("name = \"n\"\nby_name = 1979-05-27\n");
        assert_eq!(
            (e.kind.clone(), e.field(), e.found),
            (Kind::InvalidType, Some("by_name".into()), Some("datetime")),
            "{e}"
        );
        let ok = from_str::<Outer>(Format::Toml, "[sub]\na = 1\n").unwrap();
        assert_eq!(ok.sub.0.a, 1);
    }

    #[test]
    fn one_of_is_serdes_wording() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(one_of(&n(&["a"])), "`a`");
        assert_eq!(one_of(&n(&["a", "b"])), "`a` or `b`");
        assert_eq!(one_of(&n(&["a", "b", "c"])), "one of `a`, `b`, `c`");
        assert_eq!(names(&one_of(&n(&["a", "b", "c"]))), n(&["a", "b", "c"]));
    }

    /// A value the parser cannot read (a number past i64, an unclosed
    /// string) is named by its key, under its table; an error that is not
    /// in a value names no field.
    #[test]
    fn a_syntax_error_in_a_value_names_its_key() {
        let e = |t: &str| from_str::<toml::Table>(Format::Toml, t).unwrap_err();
        let big = e("a = 1\nlatency_cap_ms = 18446744073709551616\n");
        assert_eq!(big.kind, Kind::Syntax);
        assert_eq!(big.field().as_deref(), Some("latency_cap_ms"), "{big}");
        let nested = e("[expect]\nending = \"GOAL_MET\"\nspend.usd_max = 99999999999999999999\n");
        assert_eq!(
            nested.field().as_deref(),
            Some("expect.spend.usd_max"),
            "{nested}"
        );
        let open = e("[model]\nexecutor = \"claude\n");
        assert_eq!(open.field().as_deref(), Some("model.executor"), "{open}");
        for no_key in ["[model\nx = 1\n", "= 3\n", "a b = 1\n"] {
            assert_eq!(e(no_key).field(), None, "{no_key:?}: {}", e(no_key));
        }
    }
}
