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
use super::AbRun;
use bench::ab::analysis::Analysis;
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
                p #verdict-line { (a.verdict) }
                p.muted { (header(r)) }
            }
            @if let Some([what, remedy]) = words::no_verdict(a) {
                p.note #not-comparable-why { strong { (what) } " " (remedy) }
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
