//! The guarantee map (suites/guarantees.toml): every promise README.md,
//! docs/harness.md and ARCHITECTURE.md make about the harness, with the suite cases, gates,
//! chaos invariants and broken variants that would fail if it broke;
//! checked against the suites, the docs, the chaos invariants and the
//! variants, and rendered to docs/guarantees.md (`bench guarantees`).
//!
//! Why a suite case and not a cargo test: the bench exists to fail *another*
//! harness that breaks a promise, and our unit tests do not run on it. A
//! case-run does; so does a chaos kill, which is the only honest exercise of
//! a promise about kills and power cuts (`chaos_only` says why, per entry).

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The suites whose cases count (the full suite `scripts/suite` gates on).
pub const SUITES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];
/// Words that make a sentence in a scanned section a promise to account for.
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
    /// Doc sections whose every promise-word sentence must hold a quote
    /// of a promise (or of a `not_a_promise`).
    pub scan: Vec<Section>,
    #[serde(rename = "promise")]
    pub promises: Vec<Promise>,
    #[serde(rename = "not_a_promise", default)]
    pub waived: Vec<Waived>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub doc: String,
    pub heading: String,
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
    /// Broken variants (`bench self-test`, `bench chaos --self-test`) that
    /// break it and are caught.
    #[serde(default)]
    pub variants: Vec<String>,
    /// Why no one-line variant breaks it, when `variants` is empty.
    pub no_variant: Option<String>,
    /// Why only chaos can exercise it (a kill, a power cut), when `cases`
    /// is empty.
    pub chaos_only: Option<String>,
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
    /// A scanned section the doc no longer has.
    #[error("{doc}: no section {heading:?}")]
    NoSection { doc: String, heading: String },
}

/// Every suite case by id: its `covers` and its `[expect]` keys.
type Cases = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

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
                out.insert(id.to_string(), (strings("covers"), expect));
            }
        }
        Ok(out)
    }
}

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

/// The names that may follow `audit.` in `gates`.
pub const AUDIT_GATES: [&str; 8] = [
    "goal_met_implies_predicate",
    "confined",
    "report_consistent",
    "spend",
    "allowlist",
    "judge_requests",
    "secret_canary",
    "page_safe",
];

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
    let known = Known {
        cases: repo.cases()?,
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
    for s in &map.scan {
        for sentence in unaccounted(map, &repo.read(&s.doc)?, s)? {
            out.push(format!("{} \"{}\": a promise with no entry: {sentence:?} (add it to a promise's quotes, or to not_a_promise with why)", s.doc, s.heading));
        }
    }
    Ok(out)
}

/// What is wrong with what would fail if promise `p` (named `at`) broke:
/// its suite cases, gates, chaos invariants and broken variants.
fn coverage_problems(at: &str, p: &Promise, known: &Known) -> Vec<String> {
    let mut out = vec![];
    match (p.cases.is_empty(), &p.chaos_only) {
        (true, None) => out.push(format!("{at}: cases is empty: a promise needs a suite case that fails when it breaks (cargo tests do not count: they do not run against another harness)")),
        (true, Some(_)) if p.chaos.is_empty() => out.push(format!("{at}: chaos_only, but chaos names no invariant")),
        (false, Some(_)) => out.push(format!("{at}: chaos_only with suite cases: drop one")),
        _ => {}
    }
    for c in &p.cases {
        match known.cases.get(c) {
            None => out.push(format!("{at}: cases: no suite case {c:?} in suites/{{{}}}", SUITES.join(","))),
            Some((covers, _)) if !covers.contains(&p.id) => out.push(format!(
                "{at}: cases: {c:?} does not list {:?} in its covers (suites/*/{c}/case.toml): a case says what it tests",
                p.id
            )),
            Some(_) => {}
        }
    }
    out.extend(gate_problems(at, p, known));
    for i in &p.chaos {
        if !known.invariants.contains(i.as_str()) {
            out.push(format!(
                "{at}: chaos: no invariant {i:?} (chaos/src/invariant.rs)"
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

/// A gate names an audit check, or an `[expect]` field one of the
/// promise's cases sets (a gate no case sets would never fail).
fn gate_problems(at: &str, p: &Promise, known: &Known) -> Vec<String> {
    let mut out = vec![];
    for g in &p.gates {
        match g.split_once('.') {
            Some(("audit", name)) if AUDIT_GATES.contains(&name) => {}
            Some(("expect", field)) => {
                let set = p
                    .cases
                    .iter()
                    .any(|c| known.cases.get(c).is_some_and(|(_, e)| e.contains(field)));
                if !set {
                    out.push(format!(
                        "{at}: gates: {g:?} is set in none of its cases' [expect]"
                    ));
                }
            }
            _ => out.push(format!(
                "{at}: gates: {g:?} is neither audit.<{}> nor expect.<field>",
                AUDIT_GATES.join("|")
            )),
        }
    }
    out
}

/// The sentences of `section` that use a promise word and hold no quote of
/// the map for that doc.
fn unaccounted(map: &Map, text: &str, section: &Section) -> Result<Vec<String>, MapError> {
    let body = section_text(text, &section.heading).ok_or_else(|| MapError::NoSection {
        doc: section.doc.clone(),
        heading: section.heading.clone(),
    })?;
    let quotes: Vec<String> = map
        .promises
        .iter()
        .flat_map(|p| p.quotes.iter().map(|q| (&q.doc, &q.text)))
        .chain(map.waived.iter().map(|w| (&w.doc, &w.text)))
        .filter(|(d, _)| **d == section.doc)
        .map(|(_, t)| fold(t))
        .collect();
    Ok(sentences(&body)
        .into_iter()
        .filter(|s| {
            let lower = s.to_lowercase();
            PROMISE_WORDS.iter().any(|w| has_word(&lower, w))
        })
        .filter(|s| !quotes.iter().any(|q| s.contains(q.as_str())))
        .collect())
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The text under `heading` (any level), up to the next heading, code
/// blocks left out.
fn section_text(doc: &str, heading: &str) -> Option<String> {
    let mut out = None::<String>;
    let mut in_code = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let h = h.trim_start_matches('#').trim();
            if out.is_some() {
                break;
            }
            if h == heading {
                out = Some(String::new());
            }
            continue;
        }
        if let Some(o) = &mut out {
            o.push_str(line);
            o.push('\n');
        }
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
    let mut s = String::from("# What the bench holds the harness to\n\nGenerated by `bench guarantees` from `suites/guarantees.toml`; `.ci/run` fails when this file is stale, when a promise names no suite case (or, for a kill or power cut, no chaos invariant), when a case it names does not exist or does not list the promise in its `covers`, or when a sentence of README.md, docs/harness.md or ARCHITECTURE.md that promises (never, always, every, hard cap, nothing outside, exactly one, at most) has no entry.\n\n");
    let with_cases = map.promises.iter().filter(|p| !p.cases.is_empty()).count();
    s.push_str(&format!(
        "{} promises: {} with suite cases, {} exercised by chaos only; {} with a broken variant the bench catches.\n\n",
        map.promises.len(),
        with_cases,
        map.promises.len() - with_cases,
        map.promises.iter().filter(|p| !p.variants.is_empty()).count()
    ));
    s.push_str("| promise | class | suite cases | gates | chaos | broken variants |\n|---|---|---|---|---|---|\n");
    let code = |v: &[String]| {
        v.iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for p in &map.promises {
        let cases = if p.cases.is_empty() {
            format!("chaos only: {}", p.chaos_only.as_deref().unwrap_or(""))
        } else {
            code(&p.cases)
        };
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
            code(&p.chaos),
            variants.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
