//! ab.html: the comparison's page, beside ab.md, for the engineer who
//! asked "is B worse?". How to read it first, then the verdict, then (when
//! anything could be compared) where an interval and its test disagree,
//! the forest plot with what the verdict names marked on it, the
//! regressions, and the tables. When nothing could be compared the page
//! says so in one sentence naming what changed, in words, and shows no
//! table of n/a.
//!
//! The run page's document, style sheet and CSP (`harness::page`): no
//! script, nothing fetched; markup through maud, every value escaped; the
//! plot is plotters' SVG inlined in an outer `<svg role="img">` with its
//! text alternative.

use super::render::{
    category_rows, fault_groups, header, md_method, metric_rows, traffic_lines, CATEGORY_HEAD,
    METRIC_HEAD,
};
use super::words::{self, Mark};
use bench::ab::analysis::Analysis;
use bench::ab::run::AbRun;
use harness::page::html::{document, figure};
use maud::{html, Markup};

pub const FILE_NAME: &str = "ab.html";

/// The verdict box's word and colour: (class, name).
fn verdict_class(a: &Analysis) -> (&'static str, &'static str) {
    if !a.comparability.comparable {
        ("partial", "NOT COMPARABLE")
    } else if !a.regressions.is_empty() {
        ("failure", "B REGRESSES")
    } else if a.verdict.starts_with("B better") {
        ("success", "B BETTER")
    } else if a.verdict.starts_with("inconclusive") {
        ("partial", "INCONCLUSIVE")
    } else {
        ("success", "NO DIFFERENCE")
    }
}

/// The page for `r`; `marks` and `svg` are what forest.svg was drawn with.
pub fn ab_page(r: &AbRun, marks: &[Mark], svg: &str) -> String {
    let a = &r.analysis;
    let (class, name) = verdict_class(a);
    let body = html! {
        header {
            p.muted { "bench ab: the comparison's page (the same data as ab.json and ab.md)" }
            section #how aria-labelledby="how-to-read" {
                h2 #how-to-read { "How to read this page" }
                ul { @for line in words::HOW_TO_READ { li { (line) } } }
            }
            div class={ "verdict " (class) } role="status" {
                div.name { (name) }
                // No verdict: why, in words, and what would give one (the
                // verdict's own line says the same with the remedies only).
                @if let Some([what, remedy]) = words::no_verdict(a) {
                    p #not-comparable-why { strong { (what) } }
                    p #verdict-line { (remedy.replace('`', "")) }
                } @else {
                    p #verdict-line { (a.verdict) }
                }
                p.muted { (header(r)) }
            }
            (arms(r))
        }
        @for l in traffic_lines(r) { p { (l) } }
        @if a.n_cases > 0 {
            (disagreements(a))
            (forest(r, marks, svg))
            (regressions(a))
            (tables(r))
        }
        @if !a.not_comparable.is_empty() { (not_comparable(a)) }
        @if a.n_cases > 0 { (cases(a)) }
        details #method {
            summary { "Method" }
            p { (md_method(r).trim_start_matches("\n### Method\n\n").replace('`', "")) }
        }
        @if !r.load_errors.is_empty() {
            section aria-labelledby="load-errors" {
                h2 #load-errors { "Cases not loaded (left out of both arms)" }
                ul { @for e in &r.load_errors { li { (e) } } }
            }
        }
        footer { "Written by bench ab beside ab.json and ab.md. " (r.case_runs) " case-runs in " (format!("{:.1}", r.wall_ms as f64 / 1000.0)) " s." }
    };
    let html = document(&format!("bench ab: {}", a.verdict), body).into_string();
    // A fault's detail can quote what a harness wrote: no control byte
    // reaches the page (maud escapes markup, not ESC or BEL).
    harness::text::printable(&html).into_owned()
}

/// Each arm: its name, file and the overlay it lays.
fn arms(r: &AbRun) -> Markup {
    html! {
        dl.facts {
            @for (arm, c) in [("A (baseline)", &r.a), ("B (the change)", &r.b)] {
                dt { (arm) }
                dd {
                    strong { (c.name) } " " code { (c.path) }
                    @if !c.description.is_empty() { ": " (c.description) }
                    @if !c.overlay.trim().is_empty() { pre.wrap { code { (c.overlay.trim()) } } }
                    @if let Some(f) = c.budget_scale { " budget scaled x" (f) }
                }
            }
        }
    }
}

fn disagreements(a: &Analysis) -> Markup {
    let lines = words::disagreements(a);
    html! {
        @if !lines.is_empty() {
            section aria-labelledby="disagree" {
                h2 #disagree { "Where an interval and its test disagree" }
                ul { @for l in &lines { li { (l) } } }
            }
        }
    }
}

fn forest(r: &AbRun, marks: &[Mark], svg: &str) -> Markup {
    let mut desc = String::from("B - A with 95% intervals, all cases at the top of each panel, then each category; green: B significantly better, red: significantly worse, grey: neither.");
    if marks.is_empty() {
        desc.push_str(" The verdict names no metric or case, so nothing is marked.");
    } else {
        desc.push_str(" Marked (band and ▶), what the verdict names: ");
        desc.push_str(
            &marks
                .iter()
                .map(|m| m.text.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        );
        desc.push('.');
    }
    html! {
        section aria-labelledby="forest" {
            h2 #forest { "B - A at a glance" }
            (figure("forest-plot", "B - A per metric and category", &desc, super::forest::size(r, marks), Some(Ok(svg.to_string())), ""))
            @if !marks.is_empty() {
                ul #marks { @for m in marks {
                    li class=(if m.regress { "bad" } else { "ok" }) { (m.text) }
                } }
            }
        }
    }
}

fn regressions(a: &Analysis) -> Markup {
    let among = !a.regressions_among_comparable.is_empty();
    html! {
        section aria-labelledby="regressions" {
            h2 #regressions { "Regressions" }
            @if among {
                p { "No verdict (not comparable). Among the comparable cases the guard found:" }
                ul { @for g in &a.regressions_among_comparable { li { strong { (g.kind) } " " code { (g.subject) } ": " (g.detail) } } }
            } @else if a.regressions.is_empty() {
                p.ok { "None: no category's pass rate drops significantly (Holm), no adversarial case that passed every A run fails a B run, no gated metric is significantly worse." }
            } @else {
                ul { @for g in &a.regressions { li.bad { strong { (g.kind) } " " code { (g.subject) } ": " (g.detail) } } }
            }
        }
    }
}

/// A table of rows, every cell text.
fn table<const N: usize>(
    id: &str,
    caption: &str,
    head: &[&str; N],
    rows: &[[String; N]],
) -> Markup {
    html! {
        div.scroll { table id=(id) {
            caption { (caption) }
            thead { tr { @for h in head { th scope="col" { (h) } } } }
            tbody { @for row in rows { tr { @for c in row { td { (c) } } } } }
        } }
    }
}

fn tables(r: &AbRun) -> Markup {
    html! {
        section aria-labelledby="metrics" {
            h2 #metrics { "Metrics" }
            (table("metric-table", "B - A paired by case; a pass rate carries its Wilson 95% interval", &METRIC_HEAD, &metric_rows(r)))
            (table("category-table", "Pass rate by category (Wilson 95% in brackets; p adjusted by Holm across categories)", &CATEGORY_HEAD, &category_rows(r)))
        }
    }
}

/// The cases left out, the cause in words, runs of one cause together.
fn not_comparable(a: &Analysis) -> Markup {
    let rows: Vec<[String; 4]> = (a.not_comparable.iter())
        .flat_map(|c| {
            fault_groups(c)
                .into_iter()
                .map(move |(arm, runs, what)| [c.id.clone(), arm.to_string(), runs, what])
        })
        .collect();
    html! {
        section aria-labelledby="left-out" {
            h2 #left-out { "Cases left out (not comparable)" }
            details {
                summary { (a.not_comparable.len()) " case(s): which run of which arm, and why" }
                (table("left-out-table", "Each case left out of every statistic and of the guard", &["case", "arm", "runs", "why"], &rows))
            }
        }
    }
}

fn cases(a: &Analysis) -> Markup {
    let rows: Vec<[String; 6]> = (a.cases.iter())
        .map(|c| {
            [
                c.id.clone(),
                c.category.clone(),
                c.a_passed.clone(),
                c.b_passed.clone(),
                format!("${:.4}", c.a_cost_usd),
                format!("${:.4}", c.b_cost_usd),
            ]
        })
        .collect();
    html! {
        section aria-labelledby="cases" {
            h2 #cases { "Cases" }
            (table("case-table", "Each compared case: runs passed and mean cost per run, per arm", &["case", "category", "A runs passed", "B runs passed", "A cost/run", "B cost/run"], &rows))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{forest, render, words};
    use super::*;
    use bench::ab::analysis::{analyze, CasePair, Obs, Settings};
    use bench::ab::config::ArmConfig;
    use bench::bench_fault::BenchFault;
    use harness::model::{ConditionField, Difference};
    use scraper::{Html, Selector};

    const HOSTILE: &str = "<script>alert(1)</script>\u{1b}[2J";

    fn obs(passed: bool, cost: f64) -> Obs {
        Obs {
            passed,
            score: if passed { 1.0 } else { 0.0 },
            cost_usd: cost,
            latency_ms: 500,
            verified: u64::from(passed),
            failure: (!passed).then(|| format!("ending: expected GOAL_MET; {HOSTILE}")),
            fault: None,
            live_calls: None,
        }
    }

    fn arm(name: &str) -> ArmConfig {
        ArmConfig {
            path: format!("bench/configs/{name}.toml"),
            name: name.into(),
            description: HOSTILE.into(),
            overlay: "[loop]\nloop_cap = 4".into(),
            budget_scale: None,
            applied: Default::default(),
        }
    }

    /// Ten happy cases where B is cheaper, four adversarial ones of which
    /// one B fails once: B regresses by the adversarial rule alone, while
    /// the pass rate's interval crosses 0 (grey on the plot).
    fn pairs() -> Vec<CasePair> {
        let mut v: Vec<CasePair> = (0..10)
            .map(|i| CasePair {
                id: format!("happy-{i}"),
                category: "happy".into(),
                a: (0..3)
                    .map(|r| obs(true, 0.15 + 0.001 * (i + r) as f64))
                    .collect(),
                b: (0..3)
                    .map(|r| obs(true, 0.13 + 0.001 * (i + r) as f64))
                    .collect(),
            })
            .collect();
        v.extend((0..4).map(|i| CasePair {
            id: format!("adv-{i}"),
            category: "adversarial".into(),
            a: (0..3).map(|_| obs(true, 0.2)).collect(),
            b: (0..3).map(|r| obs(!(i == 0 && r == 1), 0.2)).collect(),
        }));
        v
    }

    fn run_of(pairs: &[CasePair]) -> AbRun {
        AbRun {
            schema_version: bench::ab::run::SCHEMA_VERSION,
            analysis: analyze(pairs, &Settings::default()),
            a: arm("loop-cap-6"),
            b: arm("loop-cap-4"),
            suite: "suites/ab".into(),
            category: None,
            git_rev: "abc".into(),
            suite_hash: "0123456789abcdef0123".into(),
            load_errors: vec![],
            case_runs: pairs.len() as u64 * 6,
            wall_ms: 1000,
            traffic: None,
        }
    }

    /// The page, its marks and plot as `write_all` makes them.
    fn page(r: &AbRun) -> (String, String) {
        let marks = words::marks(&r.analysis);
        let svg = forest::svg(r, &marks).unwrap();
        (ab_page(r, &marks, &svg), svg)
    }

    fn texts(doc: &Html, s: &str) -> Vec<String> {
        doc.select(&Selector::parse(s).unwrap())
            .map(|e| e.text().collect())
            .collect()
    }

    /// Issue 48 §5: the plot said nothing where the verdict said "B
    /// regresses". The regressing case's row is flagged and banded on the
    /// plot, its reason written under it and beside it on the page.
    #[test]
    fn the_plot_marks_what_the_verdict_names_and_the_page_opens_with_how_to_read_it() {
        let r = run_of(&pairs());
        let regs = &r.analysis.regressions;
        assert!(
            regs.iter()
                .any(|g| g.kind == "adversarial_case" && g.subject == "adv-0"),
            "{regs:?}"
        );
        let (html, svg) = page(&r);
        assert!(
            svg.contains(&format!("{}adversarial (n=4)", forest::FLAG)),
            "the regressing case's row is not flagged: {svg}"
        );
        assert!(
            svg.contains("adversarial case adv-0 passed every A run and failed a B run"),
            "{svg}"
        );
        // Every regression the verdict counts is a mark.
        let marks = words::marks(&r.analysis);
        assert!(marks.iter().filter(|m| m.regress).count() >= regs.len());
        let doc = Html::parse_document(&html);
        assert_eq!(texts(&doc, ".verdict .name"), ["B REGRESSES"]);
        let h2 = texts(&doc, "h2");
        assert_eq!(h2[0], "How to read this page", "{h2:?}");
        assert!(
            html.find("how-to-read").unwrap() < html.find("class=\"verdict").unwrap(),
            "how to read comes before the verdict"
        );
        assert!(
            texts(&doc, "#marks li").concat().contains("adv-0"),
            "the mark beside the plot"
        );
        assert!(texts(&doc, "figcaption").concat().contains("adv-0"));
        // The house's page: its CSP, no script, nothing foreign, no
        // control byte, what a config or a harness wrote as text.
        assert_eq!(bench::page_safety::problems(&html), Vec::<String>::new());
        assert!(texts(&doc, "body")
            .concat()
            .contains("<script>alert(1)</script>"));
        let md = render::markdown(&r);
        assert!(
            md.contains("**How to read this report.**")
                && md.contains("Marked on the plot (what the verdict names):")
                && md.contains("adversarial case adv-0"),
            "{md}"
        );
    }

    /// An interval that excludes 0 beside a p above the line (and the
    /// reverse) is explained in one line naming what the verdict judged on.
    #[test]
    fn an_interval_and_a_test_that_disagree_are_explained_in_one_line() {
        let mut r = run_of(&pairs());
        let m = r.analysis.metrics.get_mut("pass_rate").unwrap();
        m.identical = false;
        m.ci = [-0.119, -0.002];
        m.p = 0.0633;
        let lines = words::disagreements(&r.analysis);
        let line = lines
            .iter()
            .find(|l| l.starts_with("pass rate (all cases)"))
            .unwrap_or_else(|| panic!("{lines:?}"));
        assert!(
            line.contains("excludes 0, but p = 0.0633 is not below 0.05")
                && line.contains("needs both")
                && line.contains("does not call B worse")
                && line.contains("only 1 of 14 cases differ"),
            "{line}"
        );
        let m = r.analysis.metrics.get_mut("cost_per_case").unwrap();
        m.identical = false;
        m.ci = [-0.01, 0.002];
        m.p = 0.01;
        let lines = words::disagreements(&r.analysis);
        assert!(
            lines.iter().any(|l| l.starts_with(
                "cost per case-run (all cases): p = 0.0100 is below 0.05, but the 95% interval"
            ) && l.contains("inconclusive")),
            "{lines:?}"
        );
        let (html, _) = page(&r);
        let doc = Html::parse_document(&html);
        assert_eq!(texts(&doc, "#disagree + ul li").len(), lines.len());
        assert!(render::markdown(&r).contains("### Where an interval and its test disagree"));
        // Agreement says nothing.
        let agree = run_of(&pairs());
        assert!(words::disagreements(&agree.analysis)
            .iter()
            .all(|l| !l.contains("(all cases)")));
    }

    /// Nothing comparable: one sentence naming the changed condition in
    /// words, never a digest, and no table of n/a.
    #[test]
    fn nothing_comparable_says_so_in_one_sentence_naming_the_condition_in_words() {
        let mut p = pairs();
        for c in &mut p {
            for o in &mut c.b {
                o.fault = Some(BenchFault::OtherConditions {
                    call_key: "plan/0".into(),
                    difference: Difference {
                        field: ConditionField::System,
                        recorded: "sha256 0f1e2d3c4b5a".into(),
                        requested: "sha256 a5b4c3d2e1f0".into(),
                    },
                });
            }
        }
        let r = run_of(&p);
        assert!(!r.analysis.comparability.comparable);
        let (html, _) = page(&r);
        let doc = Html::parse_document(&html);
        assert_eq!(texts(&doc, ".verdict .name"), ["NOT COMPARABLE"]);
        let why = texts(&doc, "#not-comparable-why").concat();
        assert!(
            why.starts_with("Nothing here can be compared: none of the 14 cases ran clean in both arms (arm B: the system prompt differs (14 cases))"),
            "{why}"
        );
        let remedy = texts(&doc, "#verdict-line").concat();
        assert!(remedy.contains("hybrid replay"), "the remedy: {remedy}");
        let text = texts(&doc, "body").concat();
        assert!(!text.contains("sha256"), "a digest on the page: {text}");
        assert!(!text.contains("n/a"), "a table of n/a: {text}");
        for id in ["#metric-table", "#category-table", "#forest", "#case-table"] {
            assert!(
                !html.contains(&id[1..]),
                "{id} on a page with nothing compared"
            );
        }
        let md = render::markdown(&r);
        assert!(
            md.contains("**Nothing here can be compared:")
                && md.contains("the system prompt differs"),
            "{md}"
        );
        assert!(!md.contains("sha256") && !md.contains("n/a"), "{md}");
        for (field, says) in [
            (ConditionField::Tools, "the tool list differs"),
            (
                ConditionField::Model,
                "the model differs (recorded x, requested y)",
            ),
        ] {
            let d = Difference {
                field,
                recorded: "x".into(),
                requested: "y".into(),
            };
            assert_eq!(words::condition_words(&d), says);
        }
    }
}
