//! The guarantee map (suites/guarantees.toml): every promise README.md,
//! ARCHITECTURE.md and every document under docs/ make, with the suite cases, gates,
//! chaos invariants, faults scenarios and broken variants that would fail if it broke;
//! checked against the suites, the docs, the chaos invariants and the
//! variants, and rendered to docs/guarantees.md (`bench guarantees`).
//!
//! Why a suite case and not a cargo test: the bench exists to fail *another*
//! harness that breaks a promise, and our unit tests do not run on it. A
//! case-run does; so does a chaos kill, which is the only honest exercise of
//! a promise about kills and power cuts (`chaos_only` says why, per entry).

use crate::audit::AuditGate;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The suites whose cases count (the full suite `scripts/suite` gates on).
pub const SUITES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];
/// The class of a promise the bench makes about itself.
pub const BENCH_CLASS: &str = "bench";
/// The scenarios `bench faults` runs (its findings name them).
pub const FAULT_DISK_FULL: &str = "disk-full";
pub const FAULT_SLOW_CHECK: &str = "slow-check";
pub const FAULT_CLOCK_STEP: &str = "clock-step";
pub const FAULT_SCENARIOS: [&str; 3] = [FAULT_DISK_FULL, FAULT_SLOW_CHECK, FAULT_CLOCK_STEP];
/// Words that make a sentence in a scanned document a promise to account for.
pub const PROMISE_WORDS: [&str; 7] = [
    "never",
    "always",
    "every",
    "hard cap",
    "nothing outside",
    "exactly one",
    "at most",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Map {
    /// Documents, or directories of them (every `*.md` inside, read
    /// recursively), whose every promise-word sentence must hold a quote
    /// of a promise (or of a `not_a_promise`): whole, so a promise made in
    /// a new section or a new doc is not missed.
    pub scan: Vec<String>,
    /// Documents under a scanned directory that are not read, each with why
    /// (docs/guarantees.md is this map rendered: its sentences are ours).
    #[serde(default)]
    pub skip: Vec<Skipped>,
    #[serde(rename = "promise")]
    pub promises: Vec<Promise>,
    #[serde(rename = "not_a_promise", default)]
    pub waived: Vec<Waived>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub doc: String,
    pub why: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Promise {
    pub id: String,
    pub class: String,
    /// The promise in one sentence, as docs/guarantees.md shows it.
    pub promise: String,
    /// Where the docs make it: text that must be in the doc, as written.
    pub quotes: Vec<Quote>,
    /// Suite cases that fail if it breaks; each lists `id` in its `covers`.
    #[serde(default)]
    pub cases: Vec<String>,
    /// `audit.<name>` (every case-run) or `expect.<field>` (set in at least
    /// one of `cases`): the gates that fail.
    #[serde(default)]
    pub gates: Vec<String>,
    /// chaos invariants (`bench chaos`) that fail.
    #[serde(default)]
    pub chaos: Vec<String>,
    /// `bench faults` scenarios (a real full disk, a check slower than the
    /// clock) whose findings fail.
    #[serde(default)]
    pub faults: Vec<String>,
    /// Broken variants (`bench self-test`, `bench chaos --self-test`) that
    /// break it and are caught.
    #[serde(default)]
    pub variants: Vec<String>,
    /// Why no one-line variant breaks it, when `variants` is empty.
    pub no_variant: Option<String>,
    /// Why only chaos or `bench faults` can exercise it (a kill, a power
    /// cut, a full disk), when `cases` is empty.
    pub chaos_only: Option<String>,
    /// Steps of `.ci/run` (as written there, never the cargo tests of
    /// `scripts/test`) that run the bench binary end to end and fail when
    /// it breaks: for a promise the bench makes about itself.
    #[serde(default)]
    pub ci: Vec<String>,
    /// Tests of the bench binary (`<file>::<fn>`, under bench/tests/) that
    /// run it as a user does and fail when it breaks: for a promise the
    /// bench makes about itself.
    #[serde(default)]
    pub tests: Vec<String>,
    /// Why a promise of class `bench` (the bench's word about itself, not
    /// the harness's) has no suite case: a suite case judges a harness, and
    /// this promise holds whatever harness runs.
    pub bench_only: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quote {
    pub doc: String,
    pub text: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waived {
    pub doc: String,
    pub text: String,
    pub why: String,
}

/// Why the map, or a file it is checked against, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// A file or directory (`what`, as the message names it) unreadable.
    #[error("{what}: {cause}")]
    Read { what: String, cause: std::io::Error },
    /// A case.toml that is not TOML.
    #[error("{what}: {cause}")]
    Toml {
        what: String,
        cause: Box<toml::de::Error>,
    },
    /// The map itself refused by the strict loader.
    #[error("{what}: {cause}")]
    Map {
        what: String,
        cause: Box<strict::Error>,
    },
}

/// Every suite case by id.
type Cases = BTreeMap<String, CaseFacts>;

/// What a suite case sets that a promise's `gates` may name.
#[derive(Debug, Clone, Default)]
struct CaseFacts {
    /// Its `covers`.
    covers: BTreeSet<String>,
    /// Its `[expect]` keys.
    expect: BTreeSet<String>,
    /// How many `[[step]]` it has (each the gate `step[<n>]`, from 0).
    steps: usize,
    /// What its stop report is judged on (`stop_report.<field>`): `signal`
    /// when its `[interrupt]` sends a stop request (the signal and that the
    /// run is resumable are then always checked), and each key of its
    /// `[interrupt.stop_report]`.
    stop_report: BTreeSet<String>,
}

/// The signals of an `[interrupt]` that are stop requests (a stop report
/// is judged), as case.toml spells them.
const STOP_SIGNALS: [&str; 3] = ["SIGTERM", "SIGINT", "SIGHUP"];

/// What the checks read besides the map: the repository's files.
pub struct Repo {
    pub root: PathBuf,
}

impl Repo {
    fn read(&self, rel: &str) -> Result<String, MapError> {
        std::fs::read_to_string(self.root.join(rel)).map_err(|cause| MapError::Read {
            what: rel.to_string(),
            cause,
        })
    }

    /// Case id -> (its `covers`, its `[expect]` keys), for every suite case.
    fn cases(&self) -> Result<Cases, MapError> {
        let mut out = BTreeMap::new();
        for s in SUITES {
            let dir = self.root.join("suites").join(s);
            let rd = std::fs::read_dir(&dir).map_err(|cause| MapError::Read {
                what: dir.display().to_string(),
                cause,
            })?;
            for e in rd.flatten() {
                let p = e.path().join("case.toml");
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                let v: toml::Table = text.parse().map_err(|cause| MapError::Toml {
                    what: p.display().to_string(),
                    cause: Box::new(cause),
                })?;
                let strings = |k: &str| -> BTreeSet<String> {
                    v.get(k)
                        .and_then(|x| x.as_array())
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let expect = v
                    .get("expect")
                    .and_then(|x| x.as_table())
                    .map(|t| t.keys().cloned().collect())
                    .unwrap_or_default();
                let id = v.get("id").and_then(|x| x.as_str()).unwrap_or_default();
                let facts = CaseFacts {
                    covers: strings("covers"),
                    expect,
                    steps: v.get("step").and_then(|x| x.as_array()).map_or(0, Vec::len),
                    stop_report: stop_report_facts(&v),
                };
                out.insert(id.to_string(), facts);
            }
        }
        Ok(out)
    }
}

/// `stop_report.<field>` names a case's `[interrupt]` judges: `signal` for
/// a stop request, and each key of its `[interrupt.stop_report]`.
fn stop_report_facts(case: &toml::Table) -> BTreeSet<String> {
    let Some(i) = case.get("interrupt").and_then(|x| x.as_table()) else {
        return BTreeSet::new();
    };
    let signal = i
        .get("signal")
        .and_then(|x| x.as_str())
        .unwrap_or("SIGKILL");
    if !STOP_SIGNALS.contains(&signal) {
        return BTreeSet::new();
    }
    let mut out: BTreeSet<String> = i
        .get("stop_report")
        .and_then(|x| x.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    out.insert(STOP_SIGNAL_GATE.to_string());
    out
}

/// The `stop_report.<field>` every stop request is judged on: the signal
/// it names and that it is resumable.
const STOP_SIGNAL_GATE: &str = "signal";

pub fn load(path: &Path) -> Result<Map, MapError> {
    let what = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|cause| MapError::Read {
        what: what(),
        cause,
    })?;
    strict::from_str(strict::Format::Toml, &text).map_err(|cause| MapError::Map {
        what: what(),
        cause: Box::new(cause),
    })
}

/// Whitespace folded to single spaces: quotes are compared as prose, not
/// as line breaks.
fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The names that may follow `audit.` in `gates`, as an error lists them
/// (`goal_met_implies_predicate|confined|...`).
fn audit_gate_names() -> String {
    let names: Vec<&str> = AuditGate::ALL.iter().map(|g| g.as_str()).collect();
    names.join("|")
}

/// Docs read once each, whitespace folded: many quotes name the same doc.
struct Docs<'r> {
    repo: &'r Repo,
    read: BTreeMap<String, String>,
}

impl Docs<'_> {
    fn get(&mut self, name: &str) -> Result<String, MapError> {
        if !self.read.contains_key(name) {
            self.read
                .insert(name.to_string(), fold(&self.repo.read(name)?));
        }
        Ok(self.read[name].clone())
    }
}

/// What a promise's entries may name: the suite cases (with their `covers`
/// and `[expect]` keys), the chaos invariants and the broken variants.
struct Known<'a> {
    cases: Cases,
    /// .ci/run's text.
    ci_run: String,
    /// Each test file a promise's `tests` names, read.
    test_files: BTreeMap<String, String>,
    invariants: BTreeSet<&'a str>,
    variants: BTreeSet<&'a str>,
}

/// Every problem with the map, each naming the entry and the field.
pub fn problems(map: &Map, repo: &Repo) -> Result<Vec<String>, MapError> {
    let mut out = vec![];
    let mut docs = Docs {
        repo,
        read: BTreeMap::new(),
    };
    let mut test_files = BTreeMap::new();
    for file in map
        .promises
        .iter()
        .flat_map(|p| &p.tests)
        .filter_map(|t| t.split_once("::"))
        .map(|(f, _)| f)
    {
        if let Ok(text) = std::fs::read_to_string(repo.root.join(file)) {
            test_files.insert(file.to_string(), text);
        }
    }
    let known = Known {
        cases: repo.cases()?,
        ci_run: repo.read(".ci/run")?,
        test_files,
        invariants: chaos::invariant::Invariant::ALL
            .iter()
            .map(|i| i.as_str())
            .collect(),
        variants: harness::mutants::Mutant::ALL
            .iter()
            .map(|m| m.as_str())
            .chain(harness::simfs::Broken::NAMES)
            .collect(),
    };
    let mut ids = BTreeSet::new();
    for p in &map.promises {
        let at = format!("promise {:?}", p.id);
        if !ids.insert(p.id.clone()) {
            out.push(format!("{at}: the id is used twice"));
        }
        if p.quotes.is_empty() {
            out.push(format!(
                "{at}: quotes is empty: name where README.md, docs/harness.md or ARCHITECTURE.md makes it"
            ));
        }
        for q in &p.quotes {
            if !docs.get(&q.doc)?.contains(&fold(&q.text)) {
                out.push(format!(
                    "{at}: quotes: {:?} is not in {} (the doc changed: update the map)",
                    q.text, q.doc
                ));
            }
        }
        out.extend(coverage_problems(&at, p, &known));
    }
    // The other direction: every broken variant the self-tests run breaks
    // a promise the map names, so the map and the self-tests agree.
    let named: BTreeSet<&str> = map
        .promises
        .iter()
        .flat_map(|p| p.variants.iter().map(String::as_str))
        .collect();
    for v in &known.variants {
        if !named.contains(v) {
            out.push(format!("broken variant {v:?} breaks no promise of the map: name it in the promise it breaks"));
        }
    }
    for w in &map.waived {
        if !docs.get(&w.doc)?.contains(&fold(&w.text)) {
            out.push(format!("not_a_promise: {:?} is not in {}", w.text, w.doc));
        }
    }
    for sk in &map.skip {
        if !repo.root.join(&sk.doc).is_file() {
            out.push(format!("skip: {} is not a file", sk.doc));
        }
    }
    for doc in scanned_docs(map, repo)? {
        let text = repo.read(&doc)?;
        for sentence in unaccounted(map, &doc, &text) {
            out.push(format!("{doc}: a promise with no entry: {sentence:?} (add it to a promise's quotes, or to not_a_promise with why)"));
        }
    }
    Ok(out)
}

/// What is wrong with what would fail if promise `p` (named `at`) broke:
/// its suite cases, gates, chaos invariants and broken variants.
fn coverage_problems(at: &str, p: &Promise, known: &Known) -> Vec<String> {
    let mut out = vec![];
    let kinds = [p.chaos_only.is_some(), p.bench_only.is_some()];
    match (p.cases.is_empty(), kinds) {
        (true, [false, false]) => out.push(format!("{at}: cases is empty: a promise needs a suite case that fails when it breaks (cargo tests do not count: they do not run against another harness)")),
        (true, [true, false]) if p.chaos.is_empty() && p.faults.is_empty() => out.push(format!("{at}: chaos_only, but neither chaos nor faults names what fails")),
        (true, [false, true]) if p.ci.is_empty() && p.tests.is_empty() => out.push(format!("{at}: bench_only, but neither ci nor tests names what fails")),
        (true, [true, true]) => out.push(format!("{at}: chaos_only and bench_only: drop one")),
        (false, [a, b]) if a || b => out.push(format!("{at}: chaos_only or bench_only with suite cases: drop one")),
        _ => {}
    }
    if p.bench_only.is_some() && p.class != BENCH_CLASS {
        out.push(format!("{at}: bench_only is for the bench's word about itself (class {BENCH_CLASS:?}); a promise about the harness needs a suite case, a chaos invariant or a faults scenario"));
    }
    out.extend(bench_gate_problems(at, p, known));
    for c in &p.cases {
        match known.cases.get(c) {
            None => out.push(format!("{at}: cases: no suite case {c:?} in suites/{{{}}}", SUITES.join(","))),
            Some(f) if !f.covers.contains(&p.id) => out.push(format!(
                "{at}: cases: {c:?} does not list {:?} in its covers (suites/*/{c}/case.toml): a case says what it tests",
                p.id
            )),
            Some(_) => {}
        }
    }
    if !p.cases.is_empty() && p.gates.is_empty() {
        out.push(format!("{at}: gates is empty: name the check of its cases that fails when it breaks (audit.<name>, expect.<field>, step[<n>], stop_report.<field> or replay.<field>)"));
    }
    out.extend(gate_problems(at, p, known));
    for i in &p.chaos {
        if !known.invariants.contains(i.as_str()) {
            out.push(format!(
                "{at}: chaos: no invariant {i:?} (chaos/src/invariant.rs)"
            ));
        }
    }
    for f in &p.faults {
        if !FAULT_SCENARIOS.contains(&f.as_str()) {
            out.push(format!(
                "{at}: faults: no scenario {f:?} (bench faults runs {})",
                FAULT_SCENARIOS.join(", ")
            ));
        }
    }
    for v in &p.variants {
        if !known.variants.contains(v.as_str()) {
            out.push(format!("{at}: variants: no broken variant {v:?} (harness::mutants, harness::simfs::Broken)"));
        }
    }
    if p.variants.is_empty() && p.no_variant.is_none() {
        out.push(format!(
            "{at}: variants is empty and no_variant does not say why"
        ));
    }
    out
}

/// A `ci` entry is a step of `.ci/run` other than the cargo tests; a
/// `tests` entry names a function of a test file of the bench.
fn bench_gate_problems(at: &str, p: &Promise, known: &Known) -> Vec<String> {
    let mut out = vec![];
    for c in &p.ci {
        if c.starts_with("scripts/test") || !known.ci_run.lines().any(|l| l.contains(c.as_str())) {
            out.push(format!("{at}: ci: {c:?} is not a step of .ci/run (the cargo tests of scripts/test do not count)"));
        }
    }
    for t in &p.tests {
        let found = t.split_once("::").is_some_and(|(file, func)| {
            file.starts_with("bench/tests/")
                && known
                    .test_files
                    .get(file)
                    .is_some_and(|text| text.contains(&format!("fn {func}(")))
        });
        if !found {
            out.push(format!("{at}: tests: {t:?} is not bench/tests/<file>::<fn> with that function in that file"));
        }
    }
    out
}

/// A gate names an audit check, an `[expect]` field one of the promise's
/// cases sets, a `[[step]]` of one of them (`step[<n>]`, numbered from 0
/// as bench/src/steps.rs names its check), what the stop report of one of
/// them is judged on (`stop_report.<field>`), or a recording condition the
/// replay compares on every case-run (`replay.<field>`): a gate no case
/// sets would never fail.
fn gate_problems(at: &str, p: &Promise, known: &Known) -> Vec<String> {
    let mut out = vec![];
    let any_case = |f: &dyn Fn(&CaseFacts) -> bool| {
        p.cases
            .iter()
            .any(|c| known.cases.get(c).is_some_and(|x| f(x)))
    };
    for g in &p.gates {
        match g.split_once('.') {
            // Only a gate the audit runs (one list: `AuditGate`).
            Some(("audit", _)) if AuditGate::of_check(g).is_some() => {}
            Some(("expect", field)) => {
                if !any_case(&|f| f.expect.contains(field)) {
                    out.push(format!(
                        "{at}: gates: {g:?} is set in none of its cases' [expect]"
                    ));
                }
            }
            Some(("stop_report", field)) => {
                if !any_case(&|f| f.stop_report.contains(field)) {
                    out.push(format!("{at}: gates: {g:?}: none of its cases has an [interrupt] stop request (SIGTERM, SIGINT, SIGHUP) that judges it ({STOP_SIGNAL_GATE:?} is always judged; other fields are keys of [interrupt.stop_report])"));
                }
            }
            Some(("replay", field)) => out.extend(replay_gate_problem(at, g, field, p)),
            None if step_gate(g).is_some() => {
                let n = step_gate(g).unwrap_or_default();
                if !any_case(&|f| f.steps > n) {
                    out.push(format!(
                        "{at}: gates: {g:?}: none of its cases has a [[step]] number {n} (counted from 0)"
                    ));
                }
            }
            _ => out.push(format!(
                "{at}: gates: {g:?} is neither audit.<{}>, expect.<field>, step[<n>], stop_report.<field> nor replay.<field>",
                audit_gate_names()
            )),
        }
    }
    out
}

/// `step[<n>]`'s number.
fn step_gate(g: &str) -> Option<usize> {
    g.strip_prefix("step[")?.strip_suffix(']')?.parse().ok()
}

/// `replay.<field>` names a recording condition the replay server compares
/// (harness::model::conditions::ConditionField), and needs a case-run.
fn replay_gate_problem(at: &str, g: &str, field: &str, p: &Promise) -> Option<String> {
    use harness::model::conditions::ConditionField;
    if !ConditionField::ALL.iter().any(|c| c.as_str() == field) {
        let fields: Vec<&str> = ConditionField::ALL.iter().map(|c| c.as_str()).collect();
        return Some(format!(
            "{at}: gates: {g:?}: no recording condition {field:?} (the replay compares {})",
            fields.join(", ")
        ));
    }
    p.cases.is_empty().then(|| {
        format!("{at}: gates: {g:?}: the replay compares a case-run's requests, and the promise names no suite case")
    })
}

/// Every document `scan` names (a directory: each `*.md` under it), as
/// paths relative to the root, sorted, less `skip`.
fn scanned_docs(map: &Map, repo: &Repo) -> Result<Vec<String>, MapError> {
    let skipped: BTreeSet<&str> = map.skip.iter().map(|s| s.doc.as_str()).collect();
    let mut out = BTreeSet::new();
    let mut dirs: Vec<String> = vec![];
    for entry in &map.scan {
        if repo.root.join(entry).is_dir() {
            dirs.push(entry.clone());
        } else {
            out.insert(entry.clone());
        }
    }
    while let Some(dir) = dirs.pop() {
        let path = repo.root.join(&dir);
        let rd = std::fs::read_dir(&path).map_err(|cause| MapError::Read {
            what: dir.clone(),
            cause,
        })?;
        for e in rd.flatten() {
            let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
            if e.path().is_dir() {
                dirs.push(rel);
            } else if rel.ends_with(".md") {
                out.insert(rel);
            }
        }
    }
    Ok(out
        .into_iter()
        .filter(|d| !skipped.contains(d.as_str()))
        .collect())
}

/// The sentences of `doc` (its prose: code blocks left out) that use a
/// promise word and hold no quote of the map for that doc.
fn unaccounted(map: &Map, doc: &str, text: &str) -> Vec<String> {
    let quotes: Vec<String> = map
        .promises
        .iter()
        .flat_map(|p| p.quotes.iter().map(|q| (&q.doc, &q.text)))
        .chain(map.waived.iter().map(|w| (&w.doc, &w.text)))
        .filter(|(d, _)| d.as_str() == doc)
        .map(|(_, t)| fold(t))
        .collect();
    sentences(&prose(text))
        .into_iter()
        .filter(|s| {
            let lower = s.to_lowercase();
            PROMISE_WORDS.iter().any(|w| has_word(&lower, w))
        })
        .filter(|s| !quotes.iter().any(|q| s.contains(q.as_str())))
        .collect()
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// A document's prose: code blocks and heading lines left out (a heading
/// is a title, not a sentence; each line ends a sentence so a title never
/// runs into the paragraph under it).
fn prose(doc: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || line.starts_with('#') {
            out.push_str("\n\n");
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Sentences, whitespace folded: split after `.`, `!`, `?`, `:` or `;`
/// before a capital, a backtick, a `*`, `(` or a list dash.
fn sentences(text: &str) -> Vec<String> {
    let t = fold(text);
    let mut out = vec![];
    let mut cur = String::new();
    let chars: Vec<char> = t.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        cur.push(*c);
        let ends = matches!(c, '.' | '!' | '?' | ':' | ';')
            && chars.get(i + 1) == Some(&' ')
            && chars
                .get(i + 2)
                .is_some_and(|n| n.is_uppercase() || matches!(n, '`' | '*' | '(' | '-' | '|'));
        if ends {
            out.push(cur.trim().to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// docs/guarantees.md: every promise with what fails when it breaks.
pub fn render(map: &Map) -> String {
    let mut s = String::from("# What the bench holds the harness to\n\nGenerated by `bench guarantees` from `suites/guarantees.toml`; `.ci/run` fails when this file is stale, when a promise names no suite case (or, for a kill or power cut, no chaos invariant), when one with suite cases names no gate (an audit check, an `[expect]` field, a `step[<n>]`, a `stop_report.<field>` or a `replay.<field>`), when a case it names does not exist or does not list the promise in its `covers`, or when a sentence of README.md, ARCHITECTURE.md or any document under docs/ that promises (never, always, every, hard cap, nothing outside, exactly one, at most) has no entry.\n\n");
    let with_cases = map.promises.iter().filter(|p| !p.cases.is_empty()).count();
    let bench_only = map
        .promises
        .iter()
        .filter(|p| p.bench_only.is_some())
        .count();
    s.push_str(&format!(
        "{} promises: {} with suite cases, {} exercised by chaos or faults only, {} the bench's word about itself (held by a CI step or a test of the bench binary); {} with a broken variant the bench catches.\n\n",
        map.promises.len(),
        with_cases,
        map.promises.len() - with_cases - bench_only,
        bench_only,
        map.promises.iter().filter(|p| !p.variants.is_empty()).count()
    ));
    s.push_str("| promise | class | suite cases | gates | chaos or faults | broken variants |\n|---|---|---|---|---|---|\n");
    let code = |v: &[String]| {
        v.iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for p in &map.promises {
        let cases = if !p.cases.is_empty() {
            code(&p.cases)
        } else if let Some(why) = &p.bench_only {
            let gates: Vec<String> = p.ci.iter().chain(&p.tests).cloned().collect();
            format!("bench only: {why} Held by {}", code(&gates))
        } else {
            let by = if p.chaos.is_empty() {
                "faults"
            } else {
                "chaos"
            };
            format!("{by} only: {}", p.chaos_only.as_deref().unwrap_or(""))
        };
        let chaos: Vec<String> = p
            .chaos
            .iter()
            .cloned()
            .chain(p.faults.iter().map(|f| format!("bench faults {f}")))
            .collect();
        let variants = if p.variants.is_empty() {
            format!("none: {}", p.no_variant.as_deref().unwrap_or(""))
        } else {
            code(&p.variants)
        };
        s.push_str(&format!(
            "| **{}**: {} | {} | {} | {} | {} | {} |\n",
            p.id,
            p.promise.replace('|', "\\|"),
            p.class,
            cases,
            code(&p.gates),
            code(&chaos),
            variants.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn promise(id: &str, class: &str) -> Promise {
        Promise {
            id: id.into(),
            class: class.into(),
            promise: "p".into(),
            quotes: vec![],
            cases: vec![],
            gates: vec![],
            chaos: vec![],
            faults: vec![],
            variants: vec![],
            no_variant: Some("none".into()),
            chaos_only: None,
            ci: vec![],
            tests: vec![],
            bench_only: None,
        }
    }

    fn known(ci_run: &str, tests: &[(&str, &str)]) -> Known<'static> {
        Known {
            cases: Cases::new(),
            ci_run: ci_run.into(),
            test_files: tests
                .iter()
                .map(|(f, t)| (f.to_string(), t.to_string()))
                .collect(),
            invariants: BTreeSet::new(),
            variants: BTreeSet::new(),
        }
    }

    /// A promise's `audit.` gate must be one the audit runs: every
    /// `AuditGate` is accepted, anything else refused with the list.
    #[test]
    fn an_audit_gate_is_one_the_audit_runs() {
        let known = known("", &[]);
        let mut p = promise("p", "c");
        p.gates = AuditGate::ALL.iter().map(|g| g.check_name()).collect();
        assert_eq!(gate_problems("p", &p, &known), Vec::<String>::new());
        p.gates = vec!["audit.page_unsafe".into(), "audit.".into()];
        let problems = gate_problems("p", &p, &known);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("audit.<goal_met_implies_predicate|confined|"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_whole_doc_is_scanned_without_its_code_or_headings() {
        let map = Map {
            scan: vec![],
            skip: vec![],
            promises: vec![],
            waived: vec![],
        };
        let doc = "# Spend never passes\n\nThe cap always holds.\n```\nnever in code\n```\n## Later\nA check never reads /home.\n";
        assert_eq!(
            unaccounted(&map, "d.md", doc),
            vec!["The cap always holds.", "A check never reads /home."]
        );
    }

    #[test]
    fn a_directory_is_every_md_under_it_less_skip() {
        let root = std::env::temp_dir().join(format!("guarantees-scan-{}", std::process::id()));
        std::fs::create_dir_all(root.join("docs/deep")).unwrap();
        for f in [
            "README.md",
            "docs/a.md",
            "docs/deep/b.md",
            "docs/gen.md",
            "docs/x.json",
        ] {
            std::fs::write(root.join(f), "text").unwrap();
        }
        let map = Map {
            scan: vec!["README.md".into(), "docs".into()],
            skip: vec![Skipped {
                doc: "docs/gen.md".into(),
                why: "generated".into(),
            }],
            promises: vec![],
            waived: vec![],
        };
        let docs = scanned_docs(&map, &Repo { root: root.clone() }).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(docs, vec!["README.md", "docs/a.md", "docs/deep/b.md"]);
    }

    #[test]
    fn the_bench_word_needs_a_ci_step_or_a_bench_test_never_the_cargo_tests() {
        let k = known(
            "scripts/test\nscripts/flaky-check target/bench/flaky\n",
            &[("bench/tests/integration/run.rs", "fn merged() {}")],
        );
        let mut p = promise("b", BENCH_CLASS);
        p.bench_only = Some("the bench's own".into());
        assert!(coverage_problems("b", &p, &k)[0].contains("neither ci nor tests"));
        p.ci = vec!["scripts/test".into()];
        assert!(coverage_problems("b", &p, &k)[0].contains("not a step of .ci/run"));
        p.ci = vec!["scripts/flaky-check".into()];
        p.tests = vec!["bench/tests/integration/run.rs::merged".into()];
        assert!(coverage_problems("b", &p, &k).is_empty());
        p.tests = vec!["bench/tests/integration/run.rs::gone".into()];
        assert!(coverage_problems("b", &p, &k)[0].contains("tests:"));
        // A promise about the harness cannot be waved through as the bench's.
        let mut h = promise("h", "money");
        h.bench_only = Some("x".into());
        h.ci = vec!["scripts/flaky-check".into()];
        assert!(coverage_problems("h", &h, &k)
            .iter()
            .any(|m| m.contains("a promise about the harness needs a suite case")));
    }

    #[test]
    fn a_faults_scenario_must_be_one_bench_faults_runs() {
        let k = known("", &[]);
        let mut p = promise("f", "durability");
        p.chaos_only = Some("a real disk".into());
        p.faults = vec![FAULT_DISK_FULL.into()];
        assert!(coverage_problems("f", &p, &k).is_empty());
        p.faults = vec!["flood".into()];
        assert!(coverage_problems("f", &p, &k)[0].contains("no scenario \"flood\""));
    }

    #[test]
    fn a_promise_with_cases_names_a_gate_of_a_kind_its_cases_have() {
        let mut k = known("", &[]);
        let facts = CaseFacts {
            covers: ["g".to_string()].into(),
            expect: BTreeSet::new(),
            steps: 2,
            stop_report: ["signal".to_string(), "cut_contains".to_string()].into(),
        };
        k.cases.insert("c".into(), facts);
        let mut p = promise("g", "endings");
        p.cases = vec!["c".into()];
        assert!(coverage_problems("g", &p, &k)[0].contains("gates is empty"));
        p.gates = [
            "step[1]",
            "stop_report.signal",
            "stop_report.cut_contains",
            "replay.tools",
        ]
        .map(String::from)
        .to_vec();
        assert!(coverage_problems("g", &p, &k).is_empty());
        for bad in [
            "step[2]",
            "step[x]",
            "stop_report.in_flight_task",
            "replay.colour",
            "expect.ending",
        ] {
            p.gates = vec![bad.into()];
            let found = coverage_problems("g", &p, &k);
            assert!(
                found.len() == 1 && found[0].contains(&format!("gates: {bad:?}")),
                "{bad}: {found:?}"
            );
        }
    }

    #[test]
    fn only_a_stop_request_makes_a_stop_report_gate() {
        let case = |t: &str| stop_report_facts(&t.parse::<toml::Table>().unwrap());
        assert!(case("id = \"c\"").is_empty());
        assert!(case("[interrupt]\nat = \"x:1\"").is_empty());
        let hup = case("[interrupt]\nat = \"x:1\"\nsignal = \"SIGHUP\"\nstop_report = { in_flight_task = \"t1\" }");
        assert_eq!(hup, ["in_flight_task", "signal"].map(String::from).into());
    }

    #[test]
    fn sentences_split_where_prose_does() {
        let s = sentences("The cap holds. It is `hard`: every call. A.B stays one.");
        assert_eq!(
            s,
            vec![
                "The cap holds.",
                "It is `hard`: every call.",
                "A.B stays one."
            ]
        );
    }

    #[test]
    fn a_word_is_a_word() {
        assert!(has_word("spend never passes", "never"));
        assert!(!has_word("everything", "every"));
        assert!(has_word("hard cap.", "hard cap"));
    }
}
