//! The suite's page: `<out>/report.html` beside summary.md, for the
//! engineer whose gate failed. The verdict, the category table with Wilson
//! intervals and flaky counts, each failed case with its expected and
//! actual ending and failed checks, and one click from any case-run to that
//! run's own morning page (the harness's report.html in its state dir, by
//! a relative link, so the directory can be moved or served as it is).
//!
//! The same `Summary` as summary.json and summary.md; the run page's
//! document, style sheet and number formats (`harness::page`), so the two
//! pages read alike. Markup through maud: every value is escaped.

use crate::record::RunRecord;
use crate::summary::Outcome;
use crate::summary::{
    known_flaky_words, policy_words, runs_passed, CaseRecord, CategoryTotals, Summary,
};
use harness::page::fmt::{pct, usd4};
use harness::page::html::document_with_filter;
use maud::{html, Markup};
use std::path::{Component, Path, PathBuf};

pub const FILE_NAME: &str = "report.html";

/// `to` as a link from a page in `from_dir`: relative when both are on one
/// root (`cases/x/run-0/state/report.html`, `../shard-1/cases/...`), else
/// the absolute path. Both are taken as given, made absolute against the
/// current directory, never resolved through links.
pub fn relative_link(from_dir: &Path, to: &Path) -> String {
    let abs = |p: &Path| -> PathBuf {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        // Lexically: `a/./b/../c` is `a/c`.
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                c => out.push(c),
            }
        }
        out
    };
    let (from, to) = (abs(from_dir), abs(to));
    let (f, t): (Vec<Component>, Vec<Component>) =
        (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return to.display().to_string();
    }
    let mut parts: Vec<String> = vec!["..".into(); f.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    // Each segment as a URL path segment: a `#`, `?` or space in a case id
    // stays part of the path.
    parts
        .iter()
        .map(|p| encode_segment(p))
        .collect::<Vec<_>>()
        .join("/")
}

fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn outcome_cell(c: &CaseRecord) -> Markup {
    match (c.passed, c.outcome) {
        (true, Outcome::Passed) => html! { span.ok { "passed" } },
        (true, _) => html! { span.warn { "passed, flaky" } },
        (false, Outcome::Flaky) => html! { span.bad { "FAILED, flaky" } },
        (false, _) => html! { span.bad { "FAILED" } },
    }
}

fn totals_row(name: &str, t: &CategoryTotals, required: bool) -> Markup {
    let [mean, p95, cost] = t.stats.cells();
    html! {
        tr {
            th scope="row" { (name) @if required { " " span.muted { "(required)" } } }
            td.num { (t.passed) } td.num { (t.total) }
            td.num { @if t.flaky > 0 { span.warn { (t.flaky) } } @else { "0" } }
            td.num { (pct(t.pass_rate, 1.0)) }
            td.num { "[" (format!("{:.1}%", 100.0 * t.wilson_95[0])) ", " (format!("{:.1}%", 100.0 * t.wilson_95[1])) "]" }
            td.num { (mean) } td.num { (p95) } td.num { (cost) }
        }
    }
}

/// The page for `s`, whose files are written to `out` (links are relative
/// to it).
pub fn suite_page(s: &Summary, out: &Path) -> String {
    let total: u64 = s.categories.values().map(|t| t.total).sum();
    let passed: u64 = s.categories.values().map(|t| t.passed).sum();
    let verdict = if s.passed { "PASS" } else { "FAIL" };
    let categories: Vec<&str> = s.categories.keys().map(String::as_str).collect();
    let body = html! {
        (page_header(s, verdict, passed, total))
        @if !s.load_errors.is_empty() {
            section aria-labelledby="load-errors" {
                h2 #load-errors { "Cases that could not be loaded" }
                ul { @for e in &s.load_errors { li { code { (e.file) } ": " (e.field) ": expected " (e.expected) } } }
            }
        }
        (harness::page::filter::form(&categories))
        (failures_section(s, out))
        (categories_section(s))
        (flaky_sections(s))
        (cases_section(s, out))
        footer { "Written by bench beside summary.json and summary.md (the same summary). " (s.case_runs) " case-runs in " (format!("{:.1}", s.wall_ms as f64 / 1000.0)) " s." }
    };
    let html = document_with_filter(
        &format!("bench run: {verdict}, {passed}/{total} cases"),
        body,
    )
    .into_string();
    // A failure's detail can quote what the model or a check wrote: no
    // control byte reaches the page (maud escapes markup, not ESC or BEL).
    harness::text::printable(&html).into_owned()
}

/// Where a run's own page is, relative to the suite's page in `out`.
fn run_page_link(out: &Path, state_dir: &str) -> String {
    relative_link(out, &Path::new(state_dir).join(harness::page::FILE_NAME))
}

/// The verdict and the facts of the run.
fn page_header(s: &Summary, verdict: &str, passed: u64, total: u64) -> Markup {
    html! {
        header {
            p.muted { "bench run: the suite's page" }
            div class={ "verdict " (if s.passed { "success" } else { "failure" }) } role="status" {
                div.name { (verdict) }
                p {
                    (passed) "/" (total) " cases passed, " (s.case_runs) " case-runs (" (s.runs_per_case) " per case)"
                    @if let Some(x) = &s.shard { ", shard " (x) }
                    "."
                }
                @if !s.passed { p { "The gate fails: every required category must be present and every case must pass (an adversarial case every run; any other at least " (pct(s.pass_rate_policy, 1.0)) " of its runs)." } }
            }
            dl.facts {
                dt { "Written" } dd { (chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")) }
                dt { "Suite revision" } dd { code { (s.git_rev) } }
                dt { "Config" } dd { code { (&s.config_hash[..s.config_hash.len().min(16)]) } }
                dt { "Categories required" } dd { (s.categories_required.join(", ")) }
            }
        }
    }
}

/// The table per category.
fn categories_section(s: &Summary) -> Markup {
    html! {
        section aria-labelledby="categories" {
            h2 #categories { "By category" }
            div.scroll { table #category-table {
                caption { "Cases passed per category, with the 95% Wilson interval of the pass rate; latency and cost over the case-runs whose harness wrote a report. " (s.overall.stats.latency_note()) }
                thead { tr {
                    th scope="col" { "category" } th.num scope="col" { "passed" } th.num scope="col" { "total" } th.num scope="col" { "flaky" }
                    th.num scope="col" { "pass rate" } th.num scope="col" { "Wilson 95%" } th.num scope="col" { "mean latency" } th.num scope="col" { "p95 latency" } th.num scope="col" { "mean cost per case-run" }
                } }
                tbody {
                    @for (k, t) in &s.categories { (totals_row(k, t, s.categories_required.contains(k))) }
                }
                tfoot { (totals_row("all", &s.overall, false)) }
            } }
        }
    }
}

/// A case's words for the filter: failed, flaky or passed.
fn status_words(c: &CaseRecord) -> &'static str {
    match (c.passed, c.outcome) {
        (true, Outcome::Passed) => "passed",
        (true, _) => "passed flaky",
        (false, Outcome::Flaky) => "failed flaky",
        (false, _) => "failed",
    }
}

/// Every failed case with its failed runs, runs that failed the same way
/// folded into one row ("runs 0-2: same cause").
fn failures_section(s: &Summary, out: &Path) -> Markup {
    html! {
        @let failed: Vec<&CaseRecord> = s.cases.iter().filter(|c| !c.passed).collect();
        section aria-labelledby="failures" {
            h2 #failures { "Failures" }
            @if failed.is_empty() { p.ok { "No case failed." } }
            @for c in &failed {
                article.failure data-row="" data-status=(status_words(c)) data-category=(c.category) {
                    h3 { code { (c.id) } " " span.muted { "(" (c.category) ")" } }
                    p { (c.title) } p { (outcome_cell(c)) ", " (runs_passed(c)) " runs passed: " (policy_words(c, s.pass_rate_policy)) "." }
                    div.scroll { table.runs {
                        caption { "The failed runs of " (c.id) }
                        thead { tr { th scope="col" { "runs" } th scope="col" { "expected ending" } th scope="col" { "actual ending" } th.num scope="col" { "score (passes at " (format!("{:.2}", crate::score::PASS_SCORE)) ")" } th scope="col" { "what failed" } th scope="col" { "the runs' pages" } } }
                        tbody { @for g in fold_failed(c) {
                            (failed_runs_row(&g, out))
                        } }
                    } }
                }
            }
        }
    }
}

/// What makes two failed runs the same failure on the page: their endings,
/// score, cause and what failed, all as shown.
fn failure_key(r: &RunRecord) -> String {
    let checks: Vec<String> = (r.checks.iter().filter(|ch| !ch.passed))
        .map(|ch| format!("{}: {}", ch.name, ch.detail))
        .collect();
    format!(
        "{}|{}|{}|{:.2}|{:?}|{:?}|{:?}",
        r.expected_ending,
        r.ending_name(),
        r.exit_code,
        r.score,
        r.cause,
        checks,
        r.failures
    )
}

/// A case's failed runs, those that failed the same way together, in the
/// order of their first run.
fn fold_failed(c: &CaseRecord) -> Vec<Vec<&RunRecord>> {
    let mut groups: Vec<(String, Vec<&RunRecord>)> = vec![];
    for r in c.runs.iter().filter(|r| !r.passed) {
        let k = failure_key(r);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    groups.into_iter().map(|(_, v)| v).collect()
}

/// "run 3", "runs 0-2", "runs 0, 2, 4": consecutive runs as a range.
pub fn runs_words(runs: &[u32]) -> String {
    let mut parts: Vec<String> = vec![];
    let mut i = 0;
    while i < runs.len() {
        let mut j = i;
        while j + 1 < runs.len() && runs[j + 1] == runs[j] + 1 {
            j += 1;
        }
        parts.push(if j >= i + 2 {
            format!("{}-{}", runs[i], runs[j])
        } else if j == i + 1 {
            format!("{}, {}", runs[i], runs[j])
        } else {
            runs[i].to_string()
        });
        i = j + 1;
    }
    let s = if runs.len() == 1 { "run" } else { "runs" };
    format!("{s} {}", parts.join(", "))
}

/// Failed runs that failed the same way: their endings, score, what failed
/// (the root cause first), said once, and a link to each run's page.
fn failed_runs_row(g: &[&RunRecord], out: &Path) -> Markup {
    let r = g[0];
    let runs: Vec<u32> = g.iter().map(|r| r.run).collect();
    html! {
        tr {
            td { (runs_words(&runs)) @if g.len() > 1 { ": " span.muted { "same cause" } } }
            td { code { (r.expected_ending) } }
            td { code { (r.ending_name()) } " (exit " (r.exit_code) ")" }
            td.num {
                (format!("{:.2}", r.score))
                @if r.score < crate::score::PASS_SCORE { " " span.warn { "below the line" } }
            }
            td {
                // The root cause first; what it caused below.
                @if let Some(cause) = &r.cause { p.warn.cause { strong { "cause: " } (cause) } }
                @let checks: Vec<_> = r.checks.iter().filter(|ch| !ch.passed).collect();
                ul {
                    @for ch in &checks { li { "check " code { (ch.name) } ": " (ch.detail) } }
                    // What failed outside the checks (no report, a bench fault), when no check says it.
                    @if checks.is_empty() { @for f in &r.failures { li { (f) } } }
                }
                // Which time the latency cap judged, and wall time beside it.
                @if let Some(l) = r.latency { p.muted { (l.words()) } }
            }
            td { @for (i, x) in g.iter().enumerate() {
                @if i > 0 { ", " }
                @if x.state_dir.is_empty() { span.muted { "run " (x.run) ": no state dir" } }
                @else { a href=(run_page_link(out, &x.state_dir)) { @if g.len() > 1 { "run " (x.run) } @else { "report.html" } } }
            } }
        }
    }
}

/// The flaky cases and those marked `known_flaky`.
fn flaky_sections(s: &Summary) -> Markup {
    html! {
        @let flaky: Vec<&CaseRecord> = s.cases.iter().filter(|c| c.outcome == Outcome::Flaky).collect();
        @if !flaky.is_empty() {
            section aria-labelledby="flaky" {
                h2 #flaky { "Flaky" }
                p { "Cases that passed some runs but not all, whatever the policy made of them." }
                ul { @for c in &flaky { li { code { (c.id) } " (" (c.category) "): " (runs_passed(c)) " runs passed; " (policy_words(c, s.pass_rate_policy)) } } }
            }
        }
        @if s.cases.iter().any(|c| c.known_flaky.is_some()) {
            section aria-labelledby="known-flaky" {
                h2 #known-flaky { "Known flaky" }
                p { "Cases marked " code { "known_flaky" } " in case.toml: run and judged like every case, never hidden." }
                ul { @for c in &s.cases { @if let Some(w) = known_flaky_words(c) { li { code { (c.id) } " (" (c.category) "): " (w) } } } }
            }
        }
    }
}

/// Every case and links to each of its runs' pages.
fn cases_section(s: &Summary, out: &Path) -> Markup {
    html! {
        section aria-labelledby="cases" {
            h2 #cases { "Every case" }
            div.scroll { table #case-table {
                caption { "Each case and its runs; each run links to its own morning page" }
                thead { tr { th scope="col" { "case" } th scope="col" { "category" } th scope="col" { "outcome" } th.num scope="col" { "runs passed" } th scope="col" { "runs" } } }
                tbody { @for c in &s.cases {
                    tr.case data-row="" data-status=(status_words(c)) data-category=(c.category) {
                        td { code { (c.id) } } td { (c.category) } td { (outcome_cell(c)) } td.num { (runs_passed(c)) }
                        td { @for r in &c.runs {
                            @if r.state_dir.is_empty() { span.muted { "run " (r.run) } }
                            @else { a href=(run_page_link(out, &r.state_dir)) title={ "run " (r.run) ": " (r.ending_name()) ", " (usd4(r.cost_usd)) @if let Some(l) = r.latency { ", " (l.words()) } } { "run " (r.run) (if r.passed { "" } else { " ✗" }) } }
                            " "
                        } }
                    }
                } }
            } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{relative_link, suite_page};
    use crate::case_run::RunRecord;
    use crate::events::CaseMeta;
    use crate::score::{Check, CheckKind};
    use crate::summary::{case_record, totals_of, Summary};
    use scraper::{Html, Selector};
    use std::path::Path;

    const HOSTILE: &str = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";

    fn run(run: u32, passed: bool, state_dir: &str) -> RunRecord {
        RunRecord {
            live_calls: None,
            latency: None,
            run,
            ending: Some(if passed {
                harness::ending::Ending::GoalMet
            } else {
                harness::ending::Ending::NoProgress
            }),
            exit_code: if passed { 0 } else { 3 },
            passed,
            score: if passed { 1.0 } else { 0.0 },
            cost_usd: 0.1013,
            latency_ms: 12,
            expected_ending: harness::ending::Ending::GoalMet,
            checks: vec![Check {
                name: "ending".into(),
                kind: CheckKind::Gate,
                passed,
                detail: format!(
                    "expected GOAL_MET, got NO_PROGRESS; the model said {HOSTILE}\u{1b}[2J\u{7}"
                ),
            }],
            failures: vec![],
            state_dir: state_dir.into(),
            verified: 1,
            bench_fault: None,
            cause: None,
        }
    }

    fn summary(out: &Path) -> Summary {
        let meta = |id: &str, category: &str| CaseMeta {
            id: id.into(),
            category: category.into(),
            title: HOSTILE.into(),
            ..Default::default()
        };
        let dir = |id: &str, r: u32| {
            out.join(format!("cases/{id}/run-{r}/state"))
                .display()
                .to_string()
        };
        let cases = vec![
            case_record(
                &meta("steady", "happy"),
                vec![
                    run(0, true, &dir("steady", 0)),
                    run(1, true, &dir("steady", 1)),
                ],
                0.6,
            ),
            case_record(
                &meta("wobbly", "adversarial"),
                vec![
                    run(0, true, &dir("wobbly", 0)),
                    run(1, false, &dir("wobbly", 1)),
                ],
                0.6,
            ),
        ];
        let mut s = Summary {
            schema_version: crate::summary::SCHEMA_VERSION,
            passed: false,
            cases,
            categories: Default::default(),
            overall: totals_of(&[]),
            p95_definition: String::new(),
            categories_required: vec!["adversarial".into(), "happy".into()],
            git_rev: "abc".into(),
            config_hash: "0123456789abcdef0123".into(),
            runs_per_case: 2,
            pass_rate_policy: 0.6,
            shard: None,
            suite_case_ids: vec!["steady".into(), "wobbly".into()],
            load_errors: vec![],
            case_runs: 4,
            wall_ms: 1000,
            case_runs_per_s: 4.0,
            interrupted: None,
        };
        s.finish();
        s
    }

    #[test]
    fn the_suite_page_holds_the_categories_each_failure_and_a_link_to_each_run_and_escapes_what_it_shows(
    ) {
        let out = Path::new("/srv/bench/run");
        let page = suite_page(&summary(out), out);
        assert!(
            !page.contains('\u{1b}') && !page.contains('\u{7}'),
            "a control byte on the page"
        );
        let doc = Html::parse_document(&page);
        let sel = |s: &str| Selector::parse(s).unwrap();
        let text = |s: &str| {
            doc.select(&sel(s))
                .map(|e| e.text().collect::<String>())
                .collect::<Vec<_>>()
        };
        assert_eq!(text(".verdict .name"), ["FAIL"]);
        assert_eq!(doc.select(&sel("#category-table tbody tr")).count(), 2);
        assert!(text("#category-table tfoot").concat().contains("all"));
        // The adversarial case failed one run: its expected and actual
        // ending, the failed check, and a link to that run's page.
        let failure = text("article.failure").concat();
        assert!(
            failure.contains("wobbly")
                && failure.contains("GOAL_MET")
                && failure.contains("NO_PROGRESS"),
            "{failure}"
        );
        assert!(
            failure.contains("check ending: expected GOAL_MET"),
            "{failure}"
        );
        // Its score beside the line a case-run must reach.
        assert!(
            failure.contains("score (passes at 0.80)") && failure.contains("0.00 below the line"),
            "{failure}"
        );
        assert!(
            text("dl.facts").concat().contains(" UTC"),
            "the page says when it was written"
        );
        let links: Vec<&str> = doc
            .select(&sel("article.failure a"))
            .filter_map(|a| a.value().attr("href"))
            .collect();
        assert_eq!(links, ["cases/wobbly/run-1/state/report.html"]);
        assert_eq!(
            doc.select(&sel("#case-table a")).count(),
            4,
            "one link per case-run"
        );
        // What a case or a model wrote is text: the one script is the
        // page's filter.
        assert_eq!(doc.select(&sel("script")).count(), 1);
        assert_eq!(doc.select(&sel("img")).count(), 0);
        assert!(text("body").concat().contains(HOSTILE));
    }

    /// Failures come first; runs that failed the same way are one row with
    /// a link to each; the page's one script is the filter, allowed by its
    /// hash and nothing else; every row carries what the filter reads.
    #[test]
    fn failures_come_first_folded_by_cause_and_the_filter_is_the_one_script() {
        let out = Path::new("/srv/bench/run");
        let mut s = summary(out);
        let dir = |r: u32| {
            out.join(format!("cases/wobbly/run-{r}/state"))
                .display()
                .to_string()
        };
        let wobbly = s.cases.iter_mut().find(|c| c.id == "wobbly").unwrap();
        wobbly.runs = (0..4)
            .map(|r| run(r, false, &dir(r)))
            .chain([run(4, true, &dir(4))])
            .collect();
        wobbly.runs[3].checks[0].detail = "expected GOAL_MET, got TIME_LIMIT".into();
        let page = suite_page(&s, out);
        let doc = Html::parse_document(&page);
        let sel = |s: &str| Selector::parse(s).unwrap();
        let h2: Vec<String> = doc.select(&sel("h2")).map(|h| h.text().collect()).collect();
        assert_eq!(h2[0], "Failures", "{h2:?}");
        let rows: Vec<String> = doc
            .select(&sel("article.failure tbody tr td:first-child"))
            .map(|t| t.text().collect())
            .collect();
        assert_eq!(rows, ["runs 0-2: same cause", "run 3"]);
        let links = doc.select(&sel("article.failure a")).count();
        assert_eq!(links, 4, "a link to each failed run's page");
        let scripts: Vec<String> = doc
            .select(&sel("script"))
            .map(|e| e.text().collect())
            .collect();
        assert_eq!(scripts, [harness::page::filter::SCRIPT]);
        let csp = doc
            .select(&sel("meta[http-equiv=Content-Security-Policy]"))
            .next()
            .unwrap();
        assert_eq!(
            csp.value().attr("content"),
            Some(harness::page::filter::csp().as_str())
        );
        assert_eq!(doc.select(&sel("form#filters[hidden]")).count(), 1);
        let mut statuses: Vec<&str> = doc
            .select(&sel("#case-table tr[data-row]"))
            .filter_map(|r| r.value().attr("data-status"))
            .collect();
        statuses.sort();
        assert_eq!(statuses, ["failed flaky", "passed"]);
    }

    #[test]
    fn consecutive_runs_read_as_a_range() {
        assert_eq!(super::runs_words(&[3]), "run 3");
        assert_eq!(super::runs_words(&[0, 1, 2]), "runs 0-2");
        assert_eq!(super::runs_words(&[0, 1, 4, 6, 7, 8]), "runs 0, 1, 4, 6-8");
    }

    #[test]
    fn a_case_run_page_is_linked_relative_to_the_suite_page() {
        let l = |a: &str, b: &str| relative_link(Path::new(a), Path::new(b));
        assert_eq!(
            l("/o/run", "/o/run/cases/x/run-0/state/report.html"),
            "cases/x/run-0/state/report.html"
        );
        assert_eq!(
            l("/o/merged", "/o/shard-1/cases/x/report.html"),
            "../shard-1/cases/x/report.html"
        );
        assert_eq!(
            l("/o/run/./", "/o/run/a b/#1/report.html"),
            "a%20b/%231/report.html"
        );
    }
}
