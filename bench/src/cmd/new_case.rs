//! `bench new-case --category C --id ID [--suite DIR] [--from CASE]`: a
//! runnable case to start from. Without `--from`, a small template (a
//! changelog line the agent adds, checked by a script) whose files explain
//! each field in comments; with `--from`, a copy of another case under the
//! new id. Either way the cassette is compiled and the case loaded before
//! anything is shown as done, so it passes `bench run --case ID` as
//! written. Refused without writing anything: an unknown category, an id
//! that is not a valid directory name or that the suite already has, a
//! `--from` that is not a case.

use crate::exit::ExitStatus;
use bench::scripted;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The gate's four categories: a new case is one of them.
const CATEGORIES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];

#[derive(Args, Debug)]
pub struct NewCaseArgs {
    /// happy, edge, adversarial or regression.
    #[arg(long)]
    pub category: String,
    /// The case id: its directory name and the `<case>` of its replay URL
    /// (1-128 characters of A-Z a-z 0-9 - _ .).
    #[arg(long)]
    pub id: String,
    /// The suite the case is added to.
    #[arg(long, default_value = "suites")]
    pub suite: PathBuf,
    /// Start from a copy of this case directory instead of the template.
    #[arg(long, value_name = "CASE_DIR")]
    pub from: Option<PathBuf>,
}

pub fn run(args: NewCaseArgs) -> ExitCode {
    match create(&args) {
        Ok(dir) => {
            outln!("wrote {}", dir.display());
            for f in written(&dir) {
                outln!("  {f}");
            }
            outln!("names that must agree:");
            outln!(
                "  the case id {:?}: its directory name, `id` in case.toml, \"case\" in scenario.json",
                args.id
            );
            outln!("  a check's name (the template's: changelog): [checks.NAME] in run.toml, `check = \"NAME\"` under its [predicate], \"name\": \"NAME\" in scenario.json's \"verify\"");
            outln!("next:");
            outln!("  edit the goal (run.toml), the replies (scenario.json) and the gates (case.toml);");
            outln!(
                "  bench try-case {}          # one run, with the transcript",
                dir.display()
            );
            outln!(
                "  bench run --suite {} --case {}   # the gate, as CI runs it",
                args.suite.display(),
                args.id
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("bench new-case: {e}; nothing was written");
            ExitCode::from(ExitStatus::Usage)
        }
    }
}

/// Every file under `dir`, relative to it, sorted (what new-case wrote).
fn written(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.display().to_string());
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Why `bench new-case` wrote nothing (exit 2); the text is what it prints.
#[derive(Debug, thiserror::Error)]
enum NewCaseError {
    #[error("--category {0:?}: expected one of {all}", all = CATEGORIES.join(", "))]
    Category(String),
    #[error("--id {0:?}: expected 1-128 characters of A-Z a-z 0-9 - _ . (it is a directory name and a URL segment), not starting with '.'")]
    Id(String),
    #[error("--id {id:?}: {} already exists", .existing.display())]
    Exists { id: String, existing: PathBuf },
    #[error("{}: {source}", .path.display())]
    At {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The scenario did not compile (bench script's message).
    #[error("{0}")]
    Compile(bench::scripted::ScriptError),
    #[error("the new case does not load: {0}")]
    DoesNotLoad(bench::suite::LoadError),
    #[error("cannot move the case into {}: {source}", .dir.display())]
    Move {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("--from {}: no {file}; expected a scripted case directory (case.toml, run.toml, scenario.json)", .from.display())]
    NotScripted { from: PathBuf, file: &'static str },
    #[error("--from {}: {source}", .from.display())]
    Copy {
        from: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{}: {source}", .path.display())]
    Scenario {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("checks/changelog.sh: {0}")]
    Chmod(#[source] std::io::Error),
}

/// An io error named by the path it happened at.
fn at(path: &Path) -> impl FnOnce(std::io::Error) -> NewCaseError + '_ {
    move |source| NewCaseError::At {
        path: path.to_path_buf(),
        source,
    }
}

/// Write the case into a temp dir beside its final place, compile and load
/// it there, then rename it into place: a refusal at any step leaves
/// nothing behind.
fn create(args: &NewCaseArgs) -> Result<PathBuf, NewCaseError> {
    if !CATEGORIES.contains(&args.category.as_str()) {
        return Err(NewCaseError::Category(args.category.clone()));
    }
    if !valid_id(&args.id) {
        return Err(NewCaseError::Id(args.id.clone()));
    }
    if let Some(existing) = CATEGORIES
        .iter()
        .map(|c| args.suite.join(c).join(&args.id))
        .find(|d| d.exists())
    {
        return Err(NewCaseError::Exists {
            id: args.id.clone(),
            existing,
        });
    }
    let parent = args.suite.join(&args.category);
    std::fs::create_dir_all(&parent).map_err(at(&parent))?;
    // `<category>/.new-case-XXXX/<id>`: the loader wants the directory
    // named as the id; the rename into place is then one step.
    let tmp = tempfile::Builder::new()
        .prefix(".new-case-")
        .tempdir_in(&parent)
        .map_err(at(&parent))?;
    let work = tmp.path().join(&args.id);
    let schemas = schemas_from_case(&args.suite);
    match &args.from {
        Some(from) => copy_case(from, &work, &args.id, &args.category, schemas.as_deref())?,
        None => write_template(&work, &args.id, &args.category, schemas.as_deref())?,
    }
    scripted::write_compiled(&work.join("scenario.json"), &work.join("cassette.json"))
        .map_err(NewCaseError::Compile)?;
    bench::suite::load_case(&work, &args.category, &bench::suite::report_fields())
        .map_err(NewCaseError::DoesNotLoad)?;
    let dir = parent.join(&args.id);
    std::fs::rename(&work, &dir).map_err(|source| NewCaseError::Move {
        dir: dir.clone(),
        source,
    })?;
    Ok(dir)
}

fn valid_id(id: &str) -> bool {
    (1..=harness::replay::cassette::MAX_CASE_ID_LEN).contains(&id.len())
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A copy of `from` (without its cassette, which is compiled again) under
/// the new id: case.toml's `id` and `category`, scenario.json's `case`, and
/// a schema the original names (`#:schema`, `$schema`) as the new place
/// reaches it.
fn copy_case(
    from: &Path,
    to: &Path,
    id: &str,
    category: &str,
    schemas: Option<&str>,
) -> Result<(), NewCaseError> {
    for file in ["case.toml", "run.toml", "scenario.json"] {
        if !from.join(file).is_file() {
            return Err(NewCaseError::NotScripted {
                from: from.to_path_buf(),
                file,
            });
        }
    }
    harness::workspace::copy_tree(from, to).map_err(|source| NewCaseError::Copy {
        from: from.to_path_buf(),
        source,
    })?;
    let _ = std::fs::remove_file(to.join("cassette.json"));
    let case_toml = std::fs::read_to_string(to.join("case.toml"))?;
    let case_toml: String = case_toml
        .lines()
        .map(|l| {
            if l.starts_with("id = ") {
                format!("id = {id:?}")
            } else if l.starts_with("category = ") {
                format!("category = {category:?}")
            } else if l.starts_with("#:schema ") {
                schema_line(schemas, "case").trim_end().to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::write(to.join("case.toml"), case_toml)?;
    let sc_path = to.join("scenario.json");
    let mut sc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sc_path)?)
        .map_err(|source| NewCaseError::Scenario {
            path: sc_path.clone(),
            source,
        })?;
    sc["case"] = serde_json::Value::String(id.into());
    if let (Some(obj), Some(d)) = (sc.as_object_mut(), schemas) {
        if obj.contains_key("$schema") {
            obj.insert("$schema".into(), format!("{d}/scenario.schema.json").into());
        }
    }
    let text = serde_json::to_string_pretty(&sc)? + "\n";
    Ok(std::fs::write(&sc_path, text)?)
}

/// docs/schemas/ as a case directory of `suite` reaches it (`../../../docs/schemas`
/// for the repository's suites/): what an editor resolves the template's
/// `#:schema` lines and `$schema` key against. None for a suite outside a
/// checkout (the template then names no schema).
fn schemas_from_case(suite: &Path) -> Option<String> {
    let suite = std::fs::canonicalize(suite).ok()?;
    // From the case directory: `..` is its category, `../..` the suite.
    let mut up = String::from("../../");
    for d in suite.ancestors() {
        if d.join("docs/schemas/case.schema.json").is_file() {
            return Some(format!("{up}docs/schemas"));
        }
        up.push_str("../");
    }
    None
}

/// A TOML file's first line naming its schema (taplo's `#:schema`
/// directive, which editors with a TOML language server follow).
fn schema_line(schemas: Option<&str>, name: &str) -> String {
    schemas.map_or(String::new(), |d| {
        format!("#:schema {d}/{name}.schema.json\n")
    })
}

/// The template: every file a case has, each field explained where it is;
/// each names its schema when `schemas` (docs/schemas/, relative) is known.
fn write_template(
    dir: &Path,
    id: &str,
    category: &str,
    schemas: Option<&str>,
) -> Result<(), NewCaseError> {
    let w = |rel: &str, text: &str| -> Result<(), NewCaseError> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(at(parent))?;
        }
        std::fs::write(&p, text).map_err(at(&p))
    };
    w(
        "case.toml",
        &(schema_line(schemas, "case") + &template_case_toml(id, category)),
    )?;
    w(
        "run.toml",
        &(schema_line(schemas, "run") + TEMPLATE_RUN_TOML),
    )?;
    w("scenario.json", &template_scenario(id, schemas))?;
    w("workspace/CHANGELOG.md", "# Changelog\n\n## Unreleased\n")?;
    w("checks/changelog.sh", TEMPLATE_CHECK)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("checks/changelog.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .map_err(NewCaseError::Chmod)
}

/// The line the template's agent adds, and its check greps.
const TEMPLATE_LINE: &str = "- Fixed: the CSV export no longer drops the last row";

fn template_case_toml(id: &str, category: &str) -> String {
    format!(
        r#"# A suite case (docs: docs/cases.md). The bench runs the harness on a
# fresh copy of this directory against cassette.json (compiled from
# scenario.json by `bench script`) and judges the run by [expect].
id = "{id}"                # the directory name; also the cassette's `case`
category = "{category}"    # happy, edge, adversarial or regression
title = "TODO: one line a reader of the FAIL line understands"
covers = ["GOAL_MET"]      # free tags: what this case exercises
latency_cap_ms = 20000     # a case-run slower than this fails the gate
cost_cap_usd = 0.5         # a case-run that spends more fails the gate

# The gates. Each one that fails is listed under the case-run's cause.
[expect]
ending = "GOAL_MET"        # one of the seven endings
predicate_met = true       # the harness ran the goal's predicate and it held
verified = ["t1"]          # the tasks the harness verified, by id
# Files the workspace must contain after the run (path = text):
files_contain = {{ "CHANGELOG.md" = "{TEMPLATE_LINE}" }}
"#
    )
}

const TEMPLATE_RUN_TOML: &str = r#"# The harness's run spec (docs/harness.md, "Run spec"). Paths are relative
# to this file.
goal = "Add the line '- Fixed: the CSV export no longer drops the last row' under '## Unreleased' in CHANGELOG.md."
workspace = "workspace"   # the only directory the agent's tools and checks may write

# How the harness decides the goal is met: it runs this itself, never the model.
[predicate]
check = "changelog"       # a check below (or `command = [...]`)

[budget]
hard_cap_usd = 5.0        # spend never passes this
wall_clock_limit_s = 600  # the run ends TIME_LIMIT after this
task_budget_tokens = 20000

# Which model the harness calls. Under the bench the base URL is replaced by
# the replay server's; the replies come from cassette.json, no key needed.
[model]
protocol = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"   # the NAME of the variable, never the key
executor = "claude-opus-5"
judge = "claude-opus-5"
max_tokens = 4096

[prices."claude-opus-5"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0

# The tools the model may call (docs/tools.md).
[tools]
allow = ["read_file", "write_file", "list_files", "run_check"]

# A check: a command the harness runs in the workspace (its working
# directory), confined to it by the kernel, with a timeout. Exit 0 = passed.
[checks.changelog]
command = ["./checks/changelog.sh"]
timeout_s = 30
"#;

const TEMPLATE_CHECK: &str = "#!/bin/sh\n# Runs in the workspace. Exit 0 when the changelog has the line.\ngrep -qF -- '- Fixed: the CSV export no longer drops the last row' CHANGELOG.md\n";

/// The scripted model: one plan, then one task in two executor calls. Call
/// keys: `plan/0`, then `execute/<task>/a<attempt>/<turn>` (recordings/README.md).
fn template_scenario(id: &str, schemas: Option<&str>) -> String {
    let mut v = serde_json::Map::new();
    if let Some(d) = schemas {
        v.insert("$schema".into(), format!("{d}/scenario.schema.json").into());
    }
    let serde_json::Value::Object(body) = serde_json::json!({
        "case": id,
        "protocol": "anthropic",
        "model": "claude-opus-5",
        "when": "2026-12-04",
        "notes": "bench new-case template: the planner plans one task, the executor writes the line and says so",
        "runs": [{"calls": [
            {"key": "plan/0", "plan": {"tasks": [{
                "id": "t1",
                "description": "Add the fixed-export line under Unreleased in CHANGELOG.md",
                "verify": {"kind": "check", "name": "changelog"}
            }]}},
            {"key": "execute/t1/a0/0", "tools": [{"name": "write_file", "input": {
                "path": "CHANGELOG.md",
                "content": format!("# Changelog\n\n## Unreleased\n\n{TEMPLATE_LINE}\n")
            }}]},
            {"key": "execute/t1/a0/1", "text": "Added the line under Unreleased."}
        ]}]
    }) else {
        unreachable!("a json! object")
    };
    v.extend(body);
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a checkout (a directory with docs/schemas/), the template's
    /// files name their schemas by a path that resolves from the case, and
    /// the case still compiles and loads with them.
    #[test]
    fn the_template_names_its_schemas_inside_a_checkout() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("docs/schemas")).unwrap();
        std::fs::write(t.path().join("docs/schemas/case.schema.json"), "{}").unwrap();
        let args = NewCaseArgs {
            category: "happy".into(),
            id: "happy-schemas".into(),
            suite: t.path().join("suites"),
            from: None,
        };
        let dir = create(&args).unwrap();
        let first = |f: &str| {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            text.lines().next().unwrap().to_string()
        };
        assert_eq!(
            first("case.toml"),
            "#:schema ../../../docs/schemas/case.schema.json"
        );
        assert_eq!(
            first("run.toml"),
            "#:schema ../../../docs/schemas/run.schema.json"
        );
        let sc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("scenario.json")).unwrap())
                .unwrap();
        let schema = sc["$schema"].as_str().unwrap();
        assert_eq!(schema, "../../../docs/schemas/scenario.schema.json");
        assert!(dir
            .join(schema)
            .with_file_name("case.schema.json")
            .is_file());
        // A copy names the schema as its own place reaches it.
        let copy = create(&NewCaseArgs {
            category: "edge".into(),
            id: "edge-schemas".into(),
            suite: t.path().join("suites/nested"),
            from: Some(dir.clone()),
        })
        .unwrap();
        let text = std::fs::read_to_string(copy.join("case.toml")).unwrap();
        assert_eq!(
            text.lines().next(),
            Some("#:schema ../../../../docs/schemas/case.schema.json")
        );
        let sc = std::fs::read_to_string(copy.join("scenario.json")).unwrap();
        assert!(sc.contains(r#""$schema": "../../../../docs/schemas/scenario.schema.json""#));
        // Outside a checkout: no schema named.
        assert_eq!(schemas_from_case(Path::new("/")), None);
    }
}
