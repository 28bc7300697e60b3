//! docs/cases.md, the case format reference, stays true to the types: every
//! field of case.toml (and of each of its tables), of a scenario and of a
//! scripted call, every verify kind with its fields, every call-key role and
//! every tool is named in it, in backticks. The names come from the code:
//! the field lists serde derives (read through a deserializer that records
//! them), `VerifyKind::ALL`, `ALLOWED_KINDS`, `CallRole::ALL` and
//! `ALL_TOOL_NAMES`; a field added to a type without a line in the doc fails
//! here.

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The field names serde derives for `T` (a plain struct): `Deserialize`
/// hands them to `deserialize_struct`, which records them and stops.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Recorder<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Recorder<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Recorder(&mut fields));
    assert!(
        !fields.is_empty(),
        "{}: no field list (not a plain struct?)",
        std::any::type_name::<T>()
    );
    fields
}

fn doc() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cases.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every name that is not in the doc as `` `name` ``, with where it comes from.
fn missing(doc: &str, what: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .map(|n| format!("{what}: `{n}`"))
        .collect()
}

#[test]
fn every_case_field_verify_kind_call_role_and_tool_is_in_docs_cases_md() {
    use crate::suite::{
        CaseFile, Expect, HardLink, Interrupt, Raise, RequestExcludes, RequestOrder, Setup, Step,
        StopReportExpect,
    };
    use harness::scenario::{Scenario, ScriptCall, ScriptRun, ScriptTool};
    let doc = doc();
    let names = |f: &'static [&'static str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut gaps = vec![];
    gaps.extend(missing(&doc, "case.toml", names(fields_of::<CaseFile>())));
    gaps.extend(missing(&doc, "[[step]]", names(fields_of::<Step>())));
    gaps.extend(missing(
        &doc,
        "[interrupt.stop_report]",
        names(fields_of::<StopReportExpect>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml [expect]",
        names(fields_of::<Expect>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml [interrupt]",
        names(fields_of::<Interrupt>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml [raise]",
        names(fields_of::<Raise>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml setup",
        names(fields_of::<Setup>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml setup.hard_links",
        names(fields_of::<HardLink>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml expect.request_contains_in_order",
        names(fields_of::<RequestOrder>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml expect.request_excludes",
        names(fields_of::<RequestExcludes>()),
    ));
    gaps.extend(missing(
        &doc,
        "case.toml known_flaky",
        names(fields_of::<crate::known_flaky::KnownFlaky>()),
    ));
    gaps.extend(missing(
        &doc,
        "scenario.json",
        names(fields_of::<Scenario>()),
    ));
    gaps.extend(missing(
        &doc,
        "scenario.json runs[]",
        names(fields_of::<ScriptRun>()),
    ));
    gaps.extend(missing(
        &doc,
        "scenario.json calls[]",
        names(fields_of::<ScriptCall>()),
    ));
    gaps.extend(missing(
        &doc,
        "scenario.json tools[]",
        names(fields_of::<ScriptTool>()),
    ));
    gaps.extend(missing(
        &doc,
        "verify kind (VerifyKind::ALL)",
        harness::verify::VerifyKind::ALL
            .iter()
            .map(|k| k.as_str().to_string()),
    ));
    // Each kind with its fields, as the harness tells the planner.
    gaps.extend(missing(
        &doc,
        "verify kind and fields (ALLOWED_KINDS)",
        harness::verify::ALLOWED_KINDS.iter().map(|k| k.to_string()),
    ));
    gaps.extend(missing(
        &doc,
        "call key role (CallRole::ALL)",
        harness::model::types::CallRole::ALL
            .iter()
            .map(|r| format!("{}/", r.as_str())),
    ));
    gaps.extend(missing(
        &doc,
        "tool (ALL_TOOL_NAMES)",
        harness::tools::ALL_TOOL_NAMES.iter().map(|t| t.to_string()),
    ));
    assert!(
        gaps.is_empty(),
        "docs/cases.md does not name these (write a line for each):\n  {}",
        gaps.join("\n  ")
    );
}

#[test]
fn the_field_recorder_reads_what_serde_derives() {
    let f = fields_of::<crate::suite::RequestOrder>();
    assert_eq!(f, ["call_key", "strings"]);
    let e = fields_of::<crate::suite::Expect>();
    assert_eq!(e.first(), Some(&"ending"));
    assert!(e.contains(&"request_excludes"), "{e:?}");
}
