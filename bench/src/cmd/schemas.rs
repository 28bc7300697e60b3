//! `bench schemas [--out docs/schemas] [--check]`: the JSON Schemas of the
//! files people write (case.toml, run.toml, scenario.json) and of the files
//! the harness and the bench write (report.json, summary.json, ab.json,
//! flaky.json), derived from the serde types that read and write them
//! (schemars, beside serde's derives: renames, defaults and
//! `deny_unknown_fields` come from the same attributes). docs/schemas/
//! holds them committed; `--check` (and this module's test) fails when a
//! committed one is not what the types generate, so a renamed field cannot
//! leave its schema behind.

use crate::exit::ExitStatus;
use clap::Args;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{schema_for, Schema};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SchemasArgs {
    /// Where the schemas are written (or, with --check, compared).
    #[arg(long, default_value = "docs/schemas")]
    pub out: PathBuf,
    /// Write nothing; exit 1 naming each schema file that differs.
    #[arg(long)]
    pub check: bool,
}

/// Each file format's schema, by the name its file is written under
/// (`<name>.schema.json`).
fn schemas() -> Vec<(&'static str, Schema)> {
    vec![
        ("case", schema_for!(crate::suite::CaseFile)),
        ("run", harness::spec::json_schema()),
        ("scenario", scenario_schema()),
        ("report", schema_for!(harness::report::Report)),
        ("summary", schema_for!(crate::summary::Summary)),
        ("ab", numbers_may_be_null(schema_for!(super::ab::AbRun))),
        ("flaky", schema_for!(bench::flaky::report::FlakyReport)),
    ]
}

/// A plan reply as the harness reads it (harness::agent::parse_plan), for
/// the schema of a scenario call's `plan`: its verify kinds are the
/// harness's own type, so an editor flags a kind the harness does not know.
/// (The replay crate, where the scenario type lives, cannot name harness
/// types; the schema is joined here.) The harness reads more loosely than
/// this (extra keys are ignored): the schema is what a case should write.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)] // a schema, never built
struct PlanReply {
    tasks: Vec<PlanTask>,
}

#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct PlanTask {
    id: String,
    description: String,
    verify: harness::verify::Verify,
}

/// scenario.json's schema, its calls' `plan` a [`PlanReply`].
fn scenario_schema() -> Schema {
    let mut g = schemars::SchemaGenerator::default();
    let plan = g.subschema_for::<PlanReply>();
    let mut schema = g.into_root_schema_for::<harness::scenario::Scenario>();
    if let Some(p) = schema
        .get_mut("$defs")
        .and_then(|d| d.get_mut("ScriptCall"))
        .and_then(|c| c.get_mut("properties"))
        .and_then(|p| p.get_mut("plan"))
        .and_then(|p| p.as_object_mut())
    {
        p.insert("anyOf".into(), json!([plan, {"type": "null"}]));
    }
    schema
}

/// ab.json is written and never read back, and serde_json writes a
/// non-finite f64 (a variance share or a detectable effect over no data) as
/// null: each of its numbers may be null.
fn numbers_may_be_null(mut schema: Schema) -> Schema {
    let mut t = RecursiveTransform(|s: &mut Schema| {
        let widened = match s.get("type") {
            Some(Value::String(t)) if t == "number" => Some(json!(["number", "null"])),
            Some(Value::Array(ts))
                if ts.contains(&json!("number")) && !ts.contains(&json!("null")) =>
            {
                Some(Value::Array([ts.clone(), vec![json!("null")]].concat()))
            }
            _ => None,
        };
        if let Some(w) = widened {
            s.insert("type".into(), w);
        }
    });
    t.transform(&mut schema);
    schema
}

/// Every schema file as it must be: its file name and its text.
fn rendered() -> Vec<(String, String)> {
    schemas()
        .into_iter()
        .map(|(name, schema)| {
            let text = serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n";
            (format!("{name}.schema.json"), text)
        })
        .collect()
}

/// The schema files in `dir` that are missing or differ from what the types
/// generate.
fn stale(dir: &Path) -> Vec<PathBuf> {
    rendered()
        .into_iter()
        .map(|(file, text)| (dir.join(file), text))
        .filter(|(path, text)| std::fs::read_to_string(path).ok().as_ref() != Some(text))
        .map(|(path, _)| path)
        .collect()
}

pub fn run(args: SchemasArgs) -> ExitCode {
    if args.check {
        let stale = stale(&args.out);
        for path in &stale {
            errln!(
                "bench schemas: {} is not what the types generate: run `bench schemas` and commit it",
                path.display()
            );
        }
        return if stale.is_empty() {
            outln!("bench schemas: {} schemas up to date", schemas().len());
            ExitCode::SUCCESS
        } else {
            ExitCode::from(ExitStatus::Failed)
        };
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        errln!("bench schemas: {}: {e}", args.out.display());
        return ExitCode::from(ExitStatus::Failed);
    }
    for (file, text) in rendered() {
        let path = args.out.join(file);
        if let Err(e) = std::fs::write(&path, text) {
            errln!("bench schemas: {}: {e}", path.display());
            return ExitCode::from(ExitStatus::Failed);
        }
        outln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    #[test]
    fn committed_schemas_are_what_the_types_generate() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas");
        let stale = super::stale(&dir);
        assert!(
            stale.is_empty(),
            "these schemas are not what the types generate (a field renamed, added or removed?): \
             run `bench schemas` and commit docs/schemas/:\n  {}",
            stale
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
}
