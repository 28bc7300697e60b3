//! Loading eval suites: `suites/<category>/<id>/` with case.toml, run.toml,
//! workspace/, checks/, cassette.json (format: suites/README.md). A case that
//! does not load is an error value naming the file and the field; the rest of
//! the suite still loads and runs, and the gate fails.

use harness::ending::Ending;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CATEGORIES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];
/// Bounded: a suite is a few hundred cases, not an unbounded crawl.
pub const SUITE_MAX_CASES: usize = 5000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// `<phase>:<n>` as in harness/src/chaos_hook.rs.
    pub at: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestOrder {
    pub call_key: String,
    pub strings: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub ending: String,
    pub predicate_met: Option<bool>,
    pub verified: Option<Vec<String>>,
    pub verified_count: Option<usize>,
    pub parked: Option<Vec<String>>,
    pub parked_reason_contains: Option<BTreeMap<String, String>>,
    pub pruned: Option<Vec<String>>,
    pub queue_left: Option<Vec<String>>,
    pub outbox_total: Option<usize>,
    pub outbox_key_count: Option<BTreeMap<String, usize>>,
    pub outbox_contains: Option<Vec<String>>,
    pub spend_usd_min: Option<f64>,
    pub spend_usd_max: Option<f64>,
    pub report: Option<BTreeMap<String, toml::Value>>,
    pub detail_contains: Option<String>,
    pub drift_bands: Option<Vec<String>>,
    pub files_contain: Option<BTreeMap<String, String>>,
    pub files_absent: Option<Vec<String>>,
    pub notice_at_end: Option<bool>,
    pub min_budget_notices: Option<u64>,
    pub commits_count: Option<usize>,
    pub request_contains_in_order: Option<Vec<RequestOrder>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub id: String,
    pub category: String,
    pub title: String,
    #[serde(default)]
    pub covers: Vec<String>,
    pub latency_cap_ms: u64,
    pub cost_cap_usd: f64,
    pub faults: Option<String>,
    pub latency_scale: Option<f64>,
    pub workspace_git: Option<bool>,
    pub cassette: Option<String>,
    pub interrupt: Option<Interrupt>,
    pub expect: Expect,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub dir: PathBuf,
    pub file: CaseFile,
    pub ending: Ending,
    pub cassette: harness::replay::Cassette,
    pub cassette_path: PathBuf,
    /// SHA-256 over every file of the case (config hash input).
    pub content_sha256: String,
}

impl Case {
    pub fn id(&self) -> &str {
        &self.file.id
    }
    pub fn category(&self) -> &str {
        &self.file.category
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadError {
    pub file: String,
    pub field: String,
    pub expected: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: field `{}`: {}",
            self.file, self.field, self.expected
        )
    }
}

/// Top-level report.json fields an expectation may name.
pub fn report_fields() -> Vec<String> {
    let s = harness::state::RunState::example(0);
    let r = harness::report::Report::build(&s, "g", Ending::GoalMet, None, None, true, 0);
    match serde_json::to_value(r) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => vec![],
    }
}

fn err(file: &Path, field: &str, expected: impl Into<String>) -> LoadError {
    LoadError {
        file: file.display().to_string(),
        field: field.into(),
        expected: expected.into(),
    }
}

pub fn load_case(dir: &Path, category: &str, report_fields: &[String]) -> Result<Case, LoadError> {
    let f = dir.join("case.toml");
    let text = std::fs::read_to_string(&f)
        .map_err(|e| err(&f, "(file)", format!("a readable case.toml: {e}")))?;
    let file: CaseFile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        // serde names the field in its message ("missing field `x`", "unknown field `y`").
        let field = msg.split('`').nth(1).unwrap_or("(file)").to_string();
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        err(
            &f,
            &field,
            format!(
                "{msg}{}",
                line.map(|l| format!(" (line {l})")).unwrap_or_default()
            ),
        )
    })?;
    let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if file.id != dir_name {
        return Err(err(
            &f,
            "id",
            format!("the directory name {dir_name:?}, found {:?}", file.id),
        ));
    }
    if !CATEGORIES.contains(&file.category.as_str()) {
        return Err(err(
            &f,
            "category",
            format!(
                "one of {}, found {:?}",
                CATEGORIES.join(", "),
                file.category
            ),
        ));
    }
    if file.category != category {
        return Err(err(
            &f,
            "category",
            format!(
                "{category:?} (the parent directory), found {:?}",
                file.category
            ),
        ));
    }
    let ending = Ending::parse(&file.expect.ending).ok_or_else(|| {
        err(
            &f,
            "expect.ending",
            format!(
                "one of {}, found {:?}",
                Ending::ALL.map(|e| e.as_str()).join(", "),
                file.expect.ending
            ),
        )
    })?;
    if !(file.cost_cap_usd.is_finite() && file.cost_cap_usd >= 0.0) {
        return Err(err(&f, "cost_cap_usd", "a non-negative number of USD"));
    }
    if let Some(r) = &file.expect.report {
        for k in r.keys() {
            if !report_fields.iter().any(|x| x == k) {
                return Err(err(
                    &f,
                    &format!("expect.report.{k}"),
                    format!("a report.json field; known: {}", report_fields.join(", ")),
                ));
            }
        }
    }
    if let Some(b) = &file.expect.drift_bands {
        for (i, x) in b.iter().enumerate() {
            if !["aligned", "prune", "halt"].contains(&x.as_str()) {
                return Err(err(
                    &f,
                    &format!("expect.drift_bands[{i}]"),
                    format!("aligned, prune or halt, found {x:?}"),
                ));
            }
        }
    }
    if let Some(i) = &file.interrupt {
        let ok =
            i.at.split_once(':')
                .and_then(|(p, n)| {
                    Some((
                        harness::chaos_hook::Phase::parse(p)?,
                        n.parse::<u64>().ok()?,
                    ))
                })
                .is_some();
        if !ok {
            let phases: Vec<&str> = harness::chaos_hook::Phase::ALL
                .iter()
                .map(|p| p.as_str())
                .collect();
            return Err(err(
                &f,
                "interrupt.at",
                format!(
                    "<phase>:<n> with a phase among {}, found {:?}",
                    phases.join(", "),
                    i.at
                ),
            ));
        }
    }
    if let Some(fs) = &file.faults {
        harness::replay::FaultPlan::parse(fs).map_err(|e| err(&f, "faults", e.to_string()))?;
    }
    for needed in ["run.toml", "workspace"] {
        if !dir.join(needed).exists() {
            return Err(err(
                &dir.join(needed),
                "(file)",
                format!("the case's {needed}"),
            ));
        }
    }
    let cassette_path = dir.join(file.cassette.as_deref().unwrap_or("cassette.json"));
    let cassette = harness::replay::Cassette::load(&cassette_path)
        .map_err(|e| err(&cassette_path, "(cassette)", e.to_string()))?;
    if cassette.case != file.id {
        return Err(err(
            &cassette_path,
            "case",
            format!("the case id {:?}, found {:?}", file.id, cassette.case),
        ));
    }
    // The case's whole directory, hashed as the harness fingerprints a tree.
    let content_sha256 = harness::workspace::Workspace::open(dir)
        .map(|w| w.fingerprint())
        .map_err(|e| err(dir, "(dir)", e.to_string()))?;
    Ok(Case {
        dir: dir.to_path_buf(),
        file,
        ending,
        cassette,
        cassette_path,
        content_sha256,
    })
}

pub struct Suite {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
}

/// Load every case under `root/<category>/`. `category` filters; an unknown
/// category is an error.
pub fn load_suite(root: &Path, category: Option<&str>) -> Result<Suite, LoadError> {
    if !root.is_dir() {
        return Err(err(root, "--suite", "an existing suite directory"));
    }
    if let Some(c) = category {
        if !CATEGORIES.contains(&c) {
            return Err(err(
                root,
                "--category",
                format!("one of {}, found {c:?}", CATEGORIES.join(", ")),
            ));
        }
    }
    let fields = report_fields();
    let mut cases = vec![];
    let mut errors = vec![];
    for cat in CATEGORIES {
        if category.is_some_and(|c| c != cat) {
            continue;
        }
        let cdir = root.join(cat);
        let Ok(rd) = std::fs::read_dir(&cdir) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            if cases.len() + errors.len() >= SUITE_MAX_CASES {
                errors.push(err(
                    &d,
                    "(suite)",
                    format!("at most {SUITE_MAX_CASES} cases"),
                ));
                break;
            }
            match load_case(&d, cat, &fields) {
                Ok(c) => cases.push(c),
                Err(e) => errors.push(e),
            }
        }
    }
    // Ids are unique across categories (the replay server routes by id).
    let mut seen = std::collections::BTreeMap::new();
    let mut dup = vec![];
    for (i, c) in cases.iter().enumerate() {
        if let Some(j) = seen.insert(c.id().to_string(), i) {
            dup.push((i, j));
        }
    }
    for (i, j) in dup.iter().rev() {
        errors.push(err(
            &cases[*i].dir.join("case.toml"),
            "id",
            format!("a unique id; also used by {}", cases[*j].dir.display()),
        ));
    }
    let dup_idx: std::collections::BTreeSet<usize> = dup.iter().map(|(i, _)| *i).collect();
    let cases = cases
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dup_idx.contains(i))
        .map(|(_, c)| c)
        .collect();
    Ok(Suite { cases, errors })
}
