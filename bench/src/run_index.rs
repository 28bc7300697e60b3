//! `bench index`: one static page over many `bench run` outputs, oldest
//! first: when each ran, at which commit, its pass rate and cost, and per
//! case a row of marks across the runs (its history), each mark and case
//! name a link to that case's run page, with a filter (failed, flaky or
//! passed last; category) and a text search (harness::page::filter: one
//! inline script allowed by its hash, no server), and for each case that
//! failed last the command that reruns it.

use crate::summary::{Outcome, Summary};
use harness::page::html::document_with_filter;
use maud::{html, Markup};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Runs one page shows at most (the oldest are left out, and it says so).
pub const INDEX_RUNS_MAX: usize = 200;

/// One `bench run` output as the index reads it.
pub struct IndexedRun {
    pub dir: PathBuf,
    /// When summary.json was written (its mtime), UTC.
    pub written: chrono::DateTime<chrono::Utc>,
    pub summary: Summary,
}

/// Read each directory's summary.json; an unreadable one is an error that
/// names it. Sorted oldest first.
pub fn read_runs(dirs: &[PathBuf]) -> Result<Vec<IndexedRun>, IndexError> {
    let mut runs = dirs
        .iter()
        .map(|d| {
            let summary = Summary::read(d)?;
            let path = d.join("summary.json");
            let written = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .map_err(|source| IndexError::Written { path, source })?;
            Ok(IndexedRun {
                dir: d.clone(),
                written: written.into(),
                summary,
            })
        })
        .collect::<Result<Vec<_>, IndexError>>()?;
    runs.sort_by_key(|r| r.written);
    Ok(runs)
}

/// A run directory the index cannot read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Summary(#[from] crate::summary::ReadError),
    #[error("{}: {source}", .path.display())]
    Written {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A case's mark in one run.
fn mark(o: Option<Outcome>) -> (&'static str, &'static str) {
    match o {
        Some(Outcome::Passed) => ("passed", "✓"),
        Some(Outcome::Flaky) => ("flaky", "~"),
        Some(Outcome::Failed) => ("failed", "✗"),
        None => ("absent", "·"),
    }
}

/// The page. `base` is where it is written: links to each run's summary
/// are relative to it when they can be.
pub fn render(runs: &[IndexedRun], base: &Path) -> Markup {
    let left_out = runs.len().saturating_sub(INDEX_RUNS_MAX);
    let runs = &runs[left_out..];
    // Every case any run holds, by category then id.
    let mut cases: BTreeMap<(String, String), String> = BTreeMap::new();
    for r in runs {
        for c in &r.summary.cases {
            cases.insert((c.category.clone(), c.id.clone()), c.title.clone());
        }
    }
    let categories: BTreeSet<&str> = cases.keys().map(|(c, _)| c.as_str()).collect();
    let categories: Vec<&str> = categories.into_iter().collect();
    let latest = runs.last();
    let body = html! {
        h1 { "bench runs: " (runs.len()) " run(s), " (cases.len()) " case(s)" }
        @if left_out > 0 {
            p { "The " (left_out) " oldest run(s) are left out (at most " (INDEX_RUNS_MAX) " on a page)." }
        }
        h2 { "Runs" }
        (runs_table(runs, base))
        h2 { "Cases" }
        p { "One mark per run, oldest first: ✓ passed, ~ flaky (some runs passed), ✗ failed, · not in that run. Each mark opens that case's run page in that run (its first failed case-run, else its first); the case name, its page in the latest run. The filter reads each case's latest outcome." }
        (harness::page::filter::form(&categories))
        (history_table(runs, &cases, base))
        @if let Some(r) = latest {
            @if !r.summary.passed {
                p { "Every case that did not pass in the latest run: " code { "bench run --rerun-failed " (r.dir.display()) } }
            }
        }
        style { (maud::PreEscaped(MARKS_CSS)) }
    };
    document_with_filter("bench runs", body)
}

/// A case's outcome in run `r`, None when the run did not hold it.
fn outcome(r: &IndexedRun, id: &str) -> Option<Outcome> {
    r.summary
        .cases
        .iter()
        .find(|c| c.id == id)
        .map(|c| c.outcome)
}

/// The table of runs, oldest first, each linking to its summary.md.
fn runs_table(runs: &[IndexedRun], base: &Path) -> Markup {
    let link = |r: &IndexedRun| {
        let p = r.dir.join("summary.md");
        pathdiff(&p, base).unwrap_or(p).display().to_string()
    };
    html! {
        table {
            tr { th { "#" } th { "written (UTC)" } th { "commit" } th { "verdict" } th { "cases passed" } th { "case-runs" } th { "mean cost per case-run" } th { "wall" } th { "output" } }
            @for (i, r) in runs.iter().enumerate() {
                @let s = &r.summary;
                tr {
                    td { (i + 1) }
                    td { (r.written.format("%Y-%m-%d %H:%M:%S")) }
                    td { code { (s.git_rev.chars().take(12).collect::<String>()) } }
                    td class=(if s.passed { "passed" } else { "failed" }) {
                        @if s.interrupted.is_some() { "INTERRUPTED" } @else if s.passed { "PASS" } @else { "FAIL" }
                    }
                    td { (s.overall.passed) " of " (s.overall.total) " (" (harness::page::fmt::pct(s.overall.passed as f64, s.overall.total as f64)) ")" }
                    td { (s.case_runs) }
                    td { (s.overall.stats.cost_usd_mean_per_case_run.map_or("n/a".to_string(), |c| format!("${c:.4}"))) }
                    td { (format!("{:.1} s", s.wall_ms as f64 / 1000.0)) }
                    td { a href=(link(r)) { (r.dir.display()) } }
                }
            }
        }
    }
}

/// The page of case `id` in run `r`: its first failed case-run's, else its
/// first's; None when the run did not hold it or kept no state dir.
fn case_page(r: &IndexedRun, id: &str, base: &Path) -> Option<String> {
    let c = r.summary.cases.iter().find(|c| c.id == id)?;
    let run = (c.runs.iter().find(|x| !x.passed))
        .or(c.runs.first())
        .filter(|x| !x.state_dir.is_empty())?;
    // A relative state dir is taken from the current directory, as `bench
    // run` wrote it (both are run from the repository's root).
    let page = Path::new(&run.state_dir).join(harness::page::FILE_NAME);
    Some(crate::page::relative_link(base, &page))
}

/// Every case, one mark per run, classed by its latest outcome and its
/// category for the filter.
fn history_table(
    runs: &[IndexedRun],
    cases: &BTreeMap<(String, String), String>,
    base: &Path,
) -> Markup {
    let latest = runs.last();
    html! {
        table class="history" {
            tr { th { "case" } th { "category" } th { "history" } th { "rerun" } }
            @for ((category, id), title) in cases {
                @let last = latest.and_then(|r| outcome(r, id));
                @let status = mark(last).0;
                tr class=(format!("row last-{status} cat-{category}")) data-row="" data-status=(status) data-category=(category) {
                    td title=(title) {
                        @match latest.and_then(|r| case_page(r, id, base)) {
                            Some(href) => { a href=(href) { (id) } }
                            None => { (id) }
                        }
                    }
                    td { (category) }
                    td class="marks" {
                        @for r in runs {
                            @let (class, symbol) = mark(outcome(r, id));
                            @let tip = format!("{}: {class}", r.written.format("%Y-%m-%d %H:%M"));
                            @match case_page(r, id, base) {
                                Some(href) => { a href=(href) { span class=(class) title=(tip) { (symbol) } } }
                                None => { span class=(class) title=(tip) { (symbol) } }
                            }
                        }
                    }
                    td {
                        @if matches!(last, Some(Outcome::Failed | Outcome::Flaky)) {
                            code { "bench run --case " (id) }
                        }
                    }
                }
            }
        }
    }
}

/// The marks' colours.
const MARKS_CSS: &str = ".marks span{font-family:monospace;padding:0 1px}.marks a{text-decoration:none}.marks .passed{color:#1a7f37}.marks .failed{color:#cf222e}.marks .flaky{color:#9a6700}.marks .absent{color:#999}";

/// `path` relative to the directory `base`, when both are absolute or both
/// relative (written by hand: a two-line walk, no crate needed).
fn pathdiff(path: &Path, base: &Path) -> Option<PathBuf> {
    let (p, b) = (
        std::fs::canonicalize(path).ok()?,
        std::fs::canonicalize(base).ok()?,
    );
    let common = p
        .components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .count();
    let mut out = PathBuf::new();
    for _ in b.components().skip(common) {
        out.push("..");
    }
    for c in p.components().skip(common) {
        out.push(c);
    }
    Some(out)
}
