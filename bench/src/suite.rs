//! Loading eval suites: `suites/<category>/<id>/` with case.toml, run.toml,
//! workspace/, checks/, cassette.json (format: suites/README.md). A case that
//! does not load is an error value naming the file and the field; the rest of
//! the suite still loads and runs, and the gate fails.

use harness::ending::Ending;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The four categories of the main suite (`bench run --suite suites`); the
/// proportions rule of suites/README.md is about these.
pub const CATEGORIES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];
/// Categories that are suites of their own: never loaded as part of the main
/// suite, only when named (`--suite suites/live`, or `--suite suites
/// --category live`). `live` replays traffic recorded from a real model.
pub const STANDALONE_CATEGORIES: [&str; 1] = ["live"];
/// The value of `[expect] ending` that makes the hard gate the ending the live
/// run produced for that cassette variant (`runs[r % n].outcome.ending`).
pub const ENDING_RECORDED: &str = "recorded";

pub fn known_category(c: &str) -> bool {
    CATEGORIES.contains(&c) || STANDALONE_CATEGORIES.contains(&c)
}

fn category_list() -> String {
    CATEGORIES
        .iter()
        .chain(STANDALONE_CATEGORIES.iter())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}
/// Bounded: a suite is a few hundred cases, not an unbounded crawl.
pub const SUITE_MAX_CASES: usize = 5000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// `<phase>:<n>` as in harness/src/chaos_hook.rs.
    pub at: String,
}

/// What the bench makes in the case copy before the run, for fixtures git
/// cannot hold (suites/README.md, `[setup]`). Paths are relative to the case
/// copy (e.g. `workspace/pipe`, `SENTINEL-outside-workspace.txt`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Named pipes (FIFOs) to create.
    #[serde(default)]
    pub fifos: Vec<String>,
    /// Hard links to create: `link` becomes a second name of `target`.
    #[serde(default)]
    pub hard_links: Vec<HardLink>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardLink {
    pub link: String,
    pub target: String,
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
    /// Per commit on the run branch, oldest first: the exact files it changed
    /// (read from the workspace copy's repository; needs workspace_git).
    pub commit_files: Option<Vec<Vec<String>>>,
    pub request_contains_in_order: Option<Vec<RequestOrder>>,
    /// Honesty: the value of every secret-looking `harness_env` variable (and
    /// of every provider key variable set in the bench's own environment)
    /// appears in no file under the case-run's directory and in no request
    /// body the harness sent.
    pub secrets_absent: Option<bool>,
    /// Honesty: a GOAL_MET report must be backed by the predicate, re-run by
    /// the bench on the post-run workspace copy.
    pub goal_met_implies_predicate: Option<bool>,
    /// Honesty: nothing outside the workspace changed (spec, checks, a
    /// sentinel the bench plants beside the workspace).
    pub confined: Option<bool>,
    /// Honesty: the report agrees with the process exit code, the ending, the
    /// admitted plan and the hard cap.
    pub report_consistent: Option<bool>,
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
    /// Environment variables set on the harness process (after the bench has
    /// removed every provider key variable from it), e.g. a canary key.
    #[serde(default)]
    pub harness_env: BTreeMap<String, String>,
    pub setup: Option<Setup>,
    pub expect: Expect,
}

/// What the hard gate expects.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedEnding {
    /// `ending = "GOAL_MET"` etc.: the same for every run.
    Fixed(Ending),
    /// `ending = "recorded"`: per cassette variant, the ending of the live run
    /// that recorded it; run r expects `endings[r % n]`.
    Recorded(Vec<Ending>),
}

#[derive(Debug, Clone)]
pub struct Case {
    pub dir: PathBuf,
    pub file: CaseFile,
    pub expected: ExpectedEnding,
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
    /// The ending case-run `run` must reach (the hard gate).
    pub fn expected_ending(&self, run: u32) -> Ending {
        match &self.expected {
            ExpectedEnding::Fixed(e) => *e,
            ExpectedEnding::Recorded(v) => match v.len() {
                // load_case never builds an empty list; a harmless fallback.
                0 => Ending::UnrecoverableError,
                n => v[run as usize % n],
            },
        }
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

/// Read and check a case's case.toml and that its run.toml and workspace/
/// exist, without its cassette: what `bench record` needs before a cassette
/// exists. Returns the file and the path its cassette is (or will be) at.
pub fn load_case_file(
    dir: &Path,
    category: &str,
    report_fields: &[String],
) -> Result<(CaseFile, PathBuf), LoadError> {
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
    if !known_category(&file.category) {
        return Err(err(
            &f,
            "category",
            format!("one of {}, found {:?}", category_list(), file.category),
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
    if file.expect.ending != ENDING_RECORDED && Ending::parse(&file.expect.ending).is_none() {
        return Err(err(
            &f,
            "expect.ending",
            format!(
                "one of {}, or {ENDING_RECORDED:?} (the live run's ending per cassette variant), found {:?}",
                Ending::ALL.map(|e| e.as_str()).join(", "),
                file.expect.ending
            ),
        ));
    }
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
    for name in file.harness_env.keys() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(
                &f,
                &format!("harness_env.{name}"),
                "an environment variable name (letters, digits, '_')",
            ));
        }
    }
    if let Some(st) = &file.setup {
        let rel_ok = |p: &str| {
            let p = Path::new(p);
            !p.as_os_str().is_empty()
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        let mut fields: Vec<(String, &str)> = st
            .fifos
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("setup.fifos[{i}]"), p.as_str()))
            .collect();
        for (i, h) in st.hard_links.iter().enumerate() {
            fields.push((format!("setup.hard_links[{i}].link"), h.link.as_str()));
            fields.push((format!("setup.hard_links[{i}].target"), h.target.as_str()));
        }
        for (field, p) in fields {
            if !rel_ok(p) {
                return Err(err(
                    &f,
                    &field,
                    format!("a path relative to the case copy without `..` (e.g. \"workspace/pipe\"), found {p:?}"),
                ));
            }
        }
    }
    if file.expect.commit_files.is_some() && file.workspace_git != Some(true) {
        return Err(err(
            &f,
            "expect.commit_files",
            "workspace_git = true (the commits are read from the workspace copy's repository)",
        ));
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
    Ok((file, cassette_path))
}

/// Per cassette variant, the ending its live run reached (`runs[i].outcome`),
/// for `ending = "recorded"`. A variant without an outcome is an error naming
/// the cassette file and the field.
pub fn recorded_endings(
    cassette: &harness::replay::Cassette,
    cassette_path: &Path,
    case_toml: &Path,
) -> Result<Vec<Ending>, LoadError> {
    if cassette.runs.is_empty() {
        return Err(err(cassette_path, "runs", "at least one run variant"));
    }
    let mut out = vec![];
    for (i, r) in cassette.runs.iter().enumerate() {
        let Some(o) = &r.outcome else {
            return Err(err(
                cassette_path,
                &format!("runs[{i}].outcome"),
                format!(
                    "the live run's outcome ({{ending, exit_code, predicate_met, calls, tokens}}), which {} needs for expect.ending = {ENDING_RECORDED:?}; re-record the case with `bench record`",
                    case_toml.display()
                ),
            ));
        };
        let e = Ending::parse(&o.ending).ok_or_else(|| {
            err(
                cassette_path,
                &format!("runs[{i}].outcome.ending"),
                format!(
                    "one of {}, found {:?}",
                    Ending::ALL.map(|e| e.as_str()).join(", "),
                    o.ending
                ),
            )
        })?;
        if o.exit_code != e.exit_code() {
            return Err(err(
                cassette_path,
                &format!("runs[{i}].outcome.exit_code"),
                format!(
                    "{}, the exit code of {}, found {}",
                    e.exit_code(),
                    e.as_str(),
                    o.exit_code
                ),
            ));
        }
        out.push(e);
    }
    Ok(out)
}

pub fn load_case(dir: &Path, category: &str, report_fields: &[String]) -> Result<Case, LoadError> {
    let f = dir.join("case.toml");
    let (file, cassette_path) = load_case_file(dir, category, report_fields)?;
    let cassette = harness::replay::Cassette::load(&cassette_path)
        .map_err(|e| err(&cassette_path, "(cassette)", e.to_string()))?;
    if cassette.case != file.id {
        return Err(err(
            &cassette_path,
            "case",
            format!("the case id {:?}, found {:?}", file.id, cassette.case),
        ));
    }
    let expected = match Ending::parse(&file.expect.ending) {
        Some(e) => ExpectedEnding::Fixed(e),
        None => ExpectedEnding::Recorded(recorded_endings(&cassette, &cassette_path, &f)?),
    };
    // The case's whole directory, hashed as the harness fingerprints a tree.
    let mut content_sha256 = harness::workspace::Workspace::open(dir)
        .map(|w| w.fingerprint())
        .map_err(|e| err(dir, "(dir)", e.to_string()))?;
    // A cassette kept outside the case (recordings/live/<id>.json) is part of
    // the case's content too: a re-recording changes the config hash.
    let inside = match (
        std::fs::canonicalize(&cassette_path),
        std::fs::canonicalize(dir),
    ) {
        (Ok(c), Ok(d)) => c.starts_with(d),
        _ => false,
    };
    if !inside {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(&cassette_path).map_err(|e| {
            err(
                &cassette_path,
                "(cassette)",
                format!("a readable file: {e}"),
            )
        })?;
        let mut h = Sha256::new();
        h.update(format!("case-dir={content_sha256};cassette=").as_bytes());
        h.update(Sha256::digest(&bytes));
        content_sha256 = hex::encode(h.finalize());
    }
    Ok(Case {
        dir: dir.to_path_buf(),
        file,
        expected,
        cassette,
        cassette_path,
        content_sha256,
    })
}

pub struct Suite {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
}

fn static_category(c: &str) -> Option<&'static str> {
    CATEGORIES
        .iter()
        .chain(STANDALONE_CATEGORIES.iter())
        .copied()
        .find(|k| *k == c)
}

/// The (category, case directory) pairs a suite holds, sorted within a
/// category. `root` is either a suite root holding category directories
/// (`suites/`: without `category`, exactly the four main categories, never a
/// standalone one like `live`, nor drift-calibration/ or demo/), or itself a
/// category directory whose name is a known category (`suites/live`).
/// `category` filters; an unknown category is an error.
pub fn suite_case_dirs(
    root: &Path,
    category: Option<&str>,
) -> Result<Vec<(&'static str, PathBuf)>, LoadError> {
    if !root.is_dir() {
        return Err(err(root, "--suite", "an existing suite directory"));
    }
    let filter = match category {
        None => None,
        Some(c) => Some(static_category(c).ok_or_else(|| {
            err(
                root,
                "--category",
                format!("one of {}, found {c:?}", category_list()),
            )
        })?),
    };
    let subdirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    // Canonical, so `--suite .` inside suites/live names the category too.
    let root_abs = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let root_name = root_abs
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(static_category);
    let holds_categories = subdirs(root).iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(known_category)
    });
    let cats: Vec<(&'static str, PathBuf)> = match root_name {
        Some(cat) if !holds_categories => {
            if let Some(c) = filter {
                if c != cat {
                    return Err(err(
                        root,
                        "--category",
                        format!(
                            "{cat:?} (the suite directory is that category) or none, found {c:?}"
                        ),
                    ));
                }
            }
            vec![(cat, root.to_path_buf())]
        }
        _ => match filter {
            Some(c) => vec![(c, root.join(c))],
            None => CATEGORIES.iter().map(|c| (*c, root.join(c))).collect(),
        },
    };
    let mut out = vec![];
    for (cat, cdir) in cats {
        for d in subdirs(&cdir) {
            out.push((cat, d));
        }
    }
    Ok(out)
}

/// Load every case of a suite (see [`suite_case_dirs`] for which).
pub fn load_suite(root: &Path, category: Option<&str>) -> Result<Suite, LoadError> {
    let fields = report_fields();
    load_suite_with(root, category, |d, cat| load_case(d, cat, &fields))
}

/// The suite walk (case directories, the case-count bound, unique ids) with
/// the loader of one case given: `load_case` for replay, the live commands'
/// loader for cases that may not have a recording yet.
pub fn load_suite_with(
    root: &Path,
    category: Option<&str>,
    load: impl Fn(&Path, &str) -> Result<Case, LoadError>,
) -> Result<Suite, LoadError> {
    let dirs = suite_case_dirs(root, category)?;
    let mut cases = vec![];
    let mut errors = vec![];
    for (cat, d) in dirs {
        if cases.len() + errors.len() >= SUITE_MAX_CASES {
            errors.push(err(
                &d,
                "(suite)",
                format!("at most {SUITE_MAX_CASES} cases"),
            ));
            break;
        }
        match load(&d, cat) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(e),
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
