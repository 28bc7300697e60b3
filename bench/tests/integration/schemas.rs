//! docs/schemas/ against the files they describe: every committed case file
//! (case.toml, run.toml, scenario.json) and every committed output
//! (reports/**: ab.json, flaky.json, and summary.json or report.json where
//! one is committed), plus a summary.json and report.json written now.
//! The schemas are checked against the types by `bench schemas --check`
//! (and its unit test); this checks the files against the schemas, so a
//! field renamed in a type fails one of the two.

use crate::common::{bench_run, repo};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file formats with a schema: the file name each is found under.
const FORMATS: [(&str, &str); 7] = [
    ("case.toml", "case"),
    ("run.toml", "run"),
    ("scenario.json", "scenario"),
    ("report.json", "report"),
    ("summary.json", "summary"),
    ("ab.json", "ab"),
    ("flaky.json", "flaky"),
];

/// Where committed cases and outputs are: every file named in `FORMATS`
/// under these directories is checked.
const ROOTS: [&str; 4] = ["suites", "chaos/cases", "bench/tests/fixtures", "reports"];

/// The committed schemas, compiled (draft 2020-12, what schemars writes).
struct Validator {
    schemas: boon::Schemas,
    index: BTreeMap<&'static str, boon::SchemaIndex>,
}

impl Validator {
    fn new() -> Validator {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        let mut index = BTreeMap::new();
        for (_, name) in FORMATS {
            let path = repo().join(format!("docs/schemas/{name}.schema.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (run `bench schemas`)", path.display()));
            let json: Value = serde_json::from_str(&text).unwrap();
            let url = format!("file://{}", path.display());
            compiler.add_resource(&url, json).unwrap();
            let i = compiler
                .compile(&url, &mut schemas)
                .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            index.insert(name, i);
        }
        Validator { schemas, index }
    }

    /// What is wrong with `path` (a file of the format `name`), if anything.
    fn problem(&self, name: &str, path: &Path) -> Option<String> {
        let value = match read(path) {
            Ok(v) => v,
            Err(e) => return Some(format!("{}: {e}", path.display())),
        };
        self.schemas
            .validate(&value, self.index[name])
            .err()
            .map(|e| format!("{}: not a valid {name} file: {e:#}", path.display()))
    }
}

/// A file's content as JSON (TOML converted value by value).
fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if path.extension().is_some_and(|x| x == "toml") {
        let t: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
        serde_json::to_value(t).map_err(|e| e.to_string())
    } else {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }
}

/// Every file under `dir` whose name has a schema, with the schema's name;
/// a case's `workspace/` (the agent's files, whatever their names) is not
/// looked into.
fn files(dir: &Path, out: &mut Vec<(&'static str, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if e.file_name() != "workspace" {
                files(&p, out);
            }
        } else if let Some((_, name)) = FORMATS.iter().find(|(f, _)| e.file_name() == *f) {
            out.push((name, p));
        }
    }
}

#[test]
fn every_committed_case_and_output_matches_its_schema() {
    let v = Validator::new();
    let mut all = vec![];
    for root in ROOTS {
        files(&repo().join(root), &mut all);
    }
    let count = |name: &str| all.iter().filter(|(n, _)| *n == name).count();
    // The walk found what is committed (a moved directory would check nothing).
    for name in ["case", "run", "scenario", "ab", "flaky"] {
        assert!(
            count(name) > 0,
            "no committed {name} file found under {ROOTS:?}"
        );
    }
    assert!(
        count("case") >= 100,
        "only {} case.toml files",
        count("case")
    );
    let problems: Vec<String> = all
        .iter()
        .filter_map(|(name, path)| v.problem(name, path))
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {} files do not match docs/schemas/:\n{}",
        problems.len(),
        all.len(),
        problems.join("\n")
    );
}

/// No summary.json or report.json is committed: one case-run writes both.
#[test]
fn a_fresh_summary_and_report_match_their_schemas() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    let id = "happy-fix-failing-pricing-test";
    harness::workspace::copy_tree(
        &repo().join("suites/happy").join(id),
        &suite.join("happy").join(id),
    )
    .unwrap();
    let out = t.path().join("out");
    let (code, summary, log) = bench_run(&suite, &out, &["--category", "happy"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(summary["schema_version"], bench::summary::SCHEMA_VERSION);
    let state_dir = summary["cases"][0]["runs"][0]["state_dir"]
        .as_str()
        .unwrap();
    let report = Path::new(state_dir).join("report.json");
    let r = read(&report).unwrap();
    assert_eq!(r["schema_version"], harness::report::SCHEMA_VERSION);
    let v = Validator::new();
    for (name, path) in [("summary", out.join("summary.json")), ("report", report)] {
        assert_eq!(v.problem(name, &path), None);
    }
}

/// The closed vocabularies are in the schemas, so an editor flags a wrong
/// value: a tool run.toml's `[tools] allow` names that the harness does not
/// have, and a verify kind in a scenario call's `plan`.
#[test]
fn a_wrong_tool_name_or_verify_kind_is_flagged_by_the_schema() {
    let v = Validator::new();
    let t = tempfile::tempdir().unwrap();
    let case = repo().join("suites/happy/happy-backup-script-path-vars");
    let spec = std::fs::read_to_string(case.join("run.toml")).unwrap();
    let run = t.path().join("run.toml");
    std::fs::write(&run, &spec).unwrap();
    assert_eq!(v.problem("run", &run), None);
    std::fs::write(&run, spec.replace("\"list_files\"", "\"list_fils\"")).unwrap();
    let e = v.problem("run", &run).expect("list_fils flagged");
    assert!(e.contains("/tools/allow/2"), "{e}");
    let mut sc = read(&case.join("scenario.json")).unwrap();
    let plan = |kind: &str| serde_json::json!({"tasks": [{"id": "t1", "description": "d", "verify": {"kind": kind, "name": "backup"}}]});
    let scenario = t.path().join("scenario.json");
    sc["runs"][0]["calls"][0]["plan"] = plan("check");
    sc["runs"][0]["calls"][0]
        .as_object_mut()
        .unwrap()
        .remove("text");
    std::fs::write(&scenario, sc.to_string()).unwrap();
    assert_eq!(v.problem("scenario", &scenario), None);
    sc["runs"][0]["calls"][0]["plan"] = plan("chek");
    std::fs::write(&scenario, sc.to_string()).unwrap();
    let e = v.problem("scenario", &scenario).expect("chek flagged");
    assert!(e.contains("/runs/0/calls/0/plan"), "{e}");
}
