//! What `bench ab` shows as text: ab.md (for a PR or a CI step summary)
//! and the terminal table (tabled); the parent writes them with ab.json,
//! forest.svg (super::forest) and ab.html (super::page). The words beside
//! the figures (how to read them, what the verdict names, where a test and
//! an interval disagree, a changed condition) are super::words', the same
//! in every output.

use super::words;
use crate::stats::inference::ClusteredWilson;
use bench::ab::analysis::{
    Analysis, Arm, ArmTraffic, MetricDef, MetricResult, NotComparableCase, METRICS,
};
use bench::ab::run::AbRun;

fn def(name: &str) -> &'static MetricDef {
    METRICS
        .iter()
        .find(|d| d.name == name)
        .unwrap_or(&METRICS[0])
}

fn ci_text(d: &MetricDef, ci: [f64; 2]) -> String {
    if !(ci[0].is_finite() && ci[1].is_finite()) {
        return "n/a".into();
    }
    format!(
        "[{}, {}]",
        d.show_delta(ci[0], true),
        d.show_delta(ci[1], true)
    )
}

fn p_text(p: f64) -> String {
    if !p.is_finite() {
        "n/a".into()
    } else if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

fn wilson_text(w: &Option<ClusteredWilson>) -> String {
    w.map(|w| format!(" [{:.1}, {:.1}]", 100.0 * w.lo, 100.0 * w.hi))
        .unwrap_or_default()
}

/// Arm A / arm B as shown: a pass rate carries its Wilson 95% interval.
fn arm_values(name: &str, m: &MetricResult) -> (String, String) {
    let d = def(name);
    (
        format!("{}{}", d.show_value(m.a), wilson_text(&m.wilson_a)),
        format!("{}{}", d.show_value(m.b), wilson_text(&m.wilson_b)),
    )
}

pub(super) fn metric_rows(r: &AbRun) -> Vec<[String; 8]> {
    METRICS
        .iter()
        .filter_map(|d| r.analysis.metrics.get(d.name).map(|m| (d, m)))
        .map(|(d, m)| {
            let (a, b) = arm_values(d.name, m);
            let label = if d.gated {
                d.label.to_string()
            } else {
                format!("{} (not gated)", d.label)
            };
            [
                label,
                a,
                b,
                d.show_delta(m.delta, true),
                ci_text(d, m.ci),
                p_text(m.p),
                d.show_delta(m.mde, false),
                m.verdict.clone(),
            ]
        })
        .collect()
}

pub(super) const METRIC_HEAD: [&str; 8] = [
    "metric",
    "A",
    "B",
    "B - A",
    "95% CI",
    "p",
    "MDE (80%)",
    "verdict",
];

pub(super) fn category_rows(r: &AbRun) -> Vec<[String; 9]> {
    let d = def("pass_rate");
    r.analysis
        .categories
        .iter()
        .map(|(name, c)| {
            [
                name.clone(),
                c.n_cases.to_string(),
                format!("{}{}", d.show_value(c.a), wilson_text(&c.wilson_a)),
                format!("{}{}", d.show_value(c.b), wilson_text(&c.wilson_b)),
                d.show_delta(c.delta, true),
                ci_text(d, c.ci),
                p_text(c.p),
                p_text(c.p_holm),
                c.verdict.clone(),
            ]
        })
        .collect()
}

pub(super) const CATEGORY_HEAD: [&str; 9] = [
    "category",
    "cases",
    "A pass rate",
    "B pass rate",
    "B - A",
    "95% CI",
    "p",
    "p (Holm)",
    "verdict",
];

pub(super) fn header(r: &AbRun) -> String {
    let c = &r.analysis.comparability;
    let cases = if c.n_not_comparable == 0 {
        format!("{} cases", r.analysis.n_cases)
    } else {
        format!(
            "{} comparable cases of {} ({} not comparable under replay)",
            r.analysis.n_cases, c.n_cases_run, c.n_not_comparable
        )
    };
    // With no comparable case the analysis has no runs per case of its own.
    let runs = match r.analysis.runs_per_case {
        0 => r.case_runs as usize / (2 * c.n_cases_run.max(1)),
        n => n,
    };
    format!(
        "A = {} ({}), B = {} ({}); {cases} x {runs} runs per arm ({} case-runs), seed {}",
        r.a.name, r.a.path, r.b.name, r.b.path, r.case_runs, r.analysis.seed
    )
}

/// A not-comparable case's faulted runs, grouped by arm and fault:
/// ("B", "0, 1, 2", "recording miss: no recording for call_key execute/t1/a1/0").
pub(super) fn fault_groups(c: &NotComparableCase) -> Vec<(&'static str, String, String)> {
    let mut groups: Vec<(Arm, String, Vec<u32>)> = vec![];
    for f in &c.runs {
        let what = words::fault_words(&f.fault);
        match groups
            .iter_mut()
            .find(|(arm, w, _)| *arm == f.arm && *w == what)
        {
            Some(g) => g.2.push(f.run),
            None => groups.push((f.arm, what, vec![f.run])),
        }
    }
    groups
        .into_iter()
        .map(|(arm, what, runs)| {
            let runs: Vec<String> = runs.iter().map(u32::to_string).collect();
            (arm.label(), runs.join(", "), what)
        })
        .collect()
}

/// The terminal view: both tables, the regressions and the verdict.
pub fn terminal(r: &AbRun) -> String {
    use tabled::{builder::Builder, settings::Style};
    let table = |head: &[&str], rows: Vec<Vec<String>>| {
        let mut b = Builder::default();
        b.push_record(head.iter().map(|s| s.to_string()));
        for row in rows {
            b.push_record(row);
        }
        let mut t = b.build();
        t.with(Style::sharp());
        t.to_string()
    };
    let mut s = format!("bench ab: {}\n", header(r));
    // With nothing compared every cell would be n/a: the tables are left out.
    if r.analysis.n_cases > 0 {
        s.push_str(&table(
            &METRIC_HEAD,
            metric_rows(r).into_iter().map(Vec::from).collect(),
        ));
        s.push_str(
            "\npass rate by category (Wilson 95% in brackets; p adjusted by Holm across categories)\n",
        );
        s.push_str(&table(
            &CATEGORY_HEAD,
            category_rows(r).into_iter().map(Vec::from).collect(),
        ));
        s.push('\n');
    }
    if let Some([what, _]) = words::no_verdict(&r.analysis) {
        s.push_str(&format!("{what}\n"));
    }
    for c in &r.analysis.not_comparable {
        for (arm, runs, what) in fault_groups(c) {
            s.push_str(&format!(
                "NOT COMPARABLE {} ({}): arm {arm} run(s) {runs}: {what}\n",
                c.id, c.category
            ));
        }
    }
    for g in &r.analysis.regressions {
        s.push_str(&format!(
            "REGRESSION {} {}: {}\n",
            g.kind, g.subject, g.detail
        ));
    }
    for g in &r.analysis.regressions_among_comparable {
        s.push_str(&format!(
            "among the comparable cases (no verdict): {} {}: {}\n",
            g.kind, g.subject, g.detail
        ));
    }
    for l in traffic_lines(r) {
        s.push_str(&l);
        s.push('\n');
    }
    s.push_str(&format!("verdict: {}", r.analysis.verdict));
    s
}

/// Per arm, how its model calls were answered (live and hybrid runs).
pub(super) fn traffic_lines(r: &AbRun) -> Vec<String> {
    let Some(t) = &r.traffic else {
        return vec![];
    };
    t.iter()
        .map(|t| {
            format!(
                "arm {}: {} calls replayed, {} live (${:.4}); {} of {} case-runs went live; {} of {} measured under their own conditions",
                t.arm.label(),
                t.calls_replayed,
                t.calls_live,
                t.live_usd,
                t.case_runs_live,
                t.case_runs,
                t.measured,
                t.case_runs
            )
        })
        .collect()
}

fn md_table<const N: usize>(head: &[&str; N], rows: &[[String; N]]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(N));
    for row in rows {
        s.push_str(&format!(
            "| {} |\n",
            row.iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    s
}

pub fn markdown(r: &AbRun) -> String {
    let a = &r.analysis;
    let mut s = format!(
        "## bench ab: {}\n\n**How to read this report.** {}\n\n{}\n\n",
        a.verdict,
        words::HOW_TO_READ.join(" "),
        header(r)
    );
    s.push_str(&md_arms(r));
    if let Some([what, remedy]) = words::no_verdict(a) {
        s.push_str(&format!("\n**{what}** {remedy}\n"));
    }
    if let Some(t) = &r.traffic {
        s.push_str(&md_traffic(t));
    }
    if a.n_cases > 0 {
        s.push_str(&md_figures(r));
    }
    if !a.not_comparable.is_empty() {
        s.push_str(&md_not_comparable(a));
    }
    // With nothing compared, every table below would be n/a.
    if a.n_cases > 0 {
        s.push_str(&md_regressions(a));
        s.push_str(&md_category_metrics(a));
        s.push_str(&md_uncertainty(a));
        s.push_str(&md_cases(a));
    }
    s.push_str(&md_method(r));
    if !r.load_errors.is_empty() {
        s.push_str("\nCases not loaded (left out of both arms):\n");
        for e in &r.load_errors {
            s.push_str(&format!("- {e}\n"));
        }
    }
    s
}

/// The metric and category tables, where their tests and intervals
/// disagree, and the forest plot with what it marks.
fn md_figures(r: &AbRun) -> String {
    let a = &r.analysis;
    let mut s = String::from("\n### Metrics (B - A, paired by case)\n\n");
    s.push_str(&md_table(&METRIC_HEAD, &metric_rows(r)));
    s.push_str("\n### Pass rate by category\n\n");
    s.push_str(&md_table(&CATEGORY_HEAD, &category_rows(r)));
    let split = words::disagreements(a);
    if !split.is_empty() {
        s.push_str("\n### Where an interval and its test disagree\n\n");
        for line in &split {
            s.push_str(&format!("- {line}\n"));
        }
    }
    s.push_str("\n![forest plot](forest.svg)\n");
    let marks = words::marks(a);
    if !marks.is_empty() {
        s.push_str("\nMarked on the plot (what the verdict names):\n\n");
        for m in &marks {
            s.push_str(&format!("- {}\n", m.text));
        }
    }
    s
}

/// Each arm's name, file, description and the overlay as laid, so the
/// report says what was compared without the config files at hand.
fn md_arms(r: &AbRun) -> String {
    let mut s = String::new();
    for (arm, c) in [("A", &r.a), ("B", &r.b)] {
        s.push_str(&format!(
            "- **{arm}: {}** (`{}`){}\n",
            c.name,
            c.path,
            if c.description.is_empty() {
                String::new()
            } else {
                format!(": {}", c.description.replace('\n', " "))
            }
        ));
        let overlay = c.overlay.trim();
        if !overlay.is_empty() {
            s.push_str(&format!(
                "  ```toml\n  {}\n  ```\n",
                overlay.replace('\n', "\n  ")
            ));
        }
        if let Some(f) = c.budget_scale {
            s.push_str(&format!("  budget scaled x{f}\n"));
        }
    }
    s
}

/// Live or hybrid: how each arm's calls were answered.
fn md_traffic(t: &[ArmTraffic; 2]) -> String {
    let mut s = String::from("\n### Model traffic\n\nEach arm's calls: answered by a recording that saw the request (replayed), or sent to the endpoint (live). Only case-runs measured under their own conditions enter the verdict; the rest are listed under Not comparable.\n\n");
    let rows: Vec<[String; 6]> = t
        .iter()
        .map(|t| {
            [
                t.arm.label().to_string(),
                t.calls_replayed.to_string(),
                t.calls_live.to_string(),
                format!("${:.4}", t.live_usd),
                format!("{} of {}", t.case_runs_live, t.case_runs),
                format!("{} of {}", t.measured, t.case_runs),
            ]
        })
        .collect();
    s.push_str(&md_table(
        &[
            "arm",
            "calls replayed",
            "calls live",
            "live $",
            "case-runs that went live",
            "measured",
        ],
        &rows,
    ));
    s
}

/// The cases left out, with why, so a reader sees what the verdict skipped.
fn md_not_comparable(a: &Analysis) -> String {
    let mut s = format!(
        "\n### Not comparable under replay\n\n{}. These cases are left out of every statistic above and of the regression guard: a case-run of theirs ended in the bench's own machinery (for a recording miss: the config changed the traffic and the cassette has no answer for the call named), which says nothing about either arm. Above {:.0}% of the cases the comparison gives no verdict.\n\n",
        a.comparability.note.as_deref().unwrap_or_default(),
        100.0 * a.comparability.share_max
    );
    let rows: Vec<[String; 5]> = a
        .not_comparable
        .iter()
        .flat_map(|c| {
            fault_groups(c).into_iter().map(move |(arm, runs, what)| {
                [
                    c.id.clone(),
                    c.category.clone(),
                    arm.to_string(),
                    runs,
                    what,
                ]
            })
        })
        .collect();
    s.push_str(&md_table(
        &["case", "category", "arm", "runs", "fault"],
        &rows,
    ));
    s
}

/// The guard's findings, or what it checked when it found none.
fn md_regressions(a: &Analysis) -> String {
    let mut s = String::from("\n### Regressions\n\n");
    if !a.regressions_among_comparable.is_empty() {
        s.push_str("No verdict (not comparable). Among the comparable cases the guard found:\n\n");
        for g in &a.regressions_among_comparable {
            s.push_str(&format!("- **{}** `{}`: {}\n", g.kind, g.subject, g.detail));
        }
    } else if a.regressions.is_empty() {
        s.push_str("None: no category's pass rate drops significantly (Holm), no adversarial case that passed every A run fails a B run, no gated metric is significantly worse.\n");
    }
    for g in &a.regressions {
        s.push_str(&format!("- **{}** `{}`: {}\n", g.kind, g.subject, g.detail));
    }
    s
}

fn md_category_metrics(a: &Analysis) -> String {
    let mut s =
        String::from("\n### Every metric by category (p adjusted by Holm across categories)\n\n");
    let mut rows: Vec<[String; 7]> = vec![];
    for (cat, c) in &a.categories {
        for d in &METRICS {
            if let Some(m) = c.metrics.get(d.name) {
                rows.push([
                    cat.clone(),
                    d.label.into(),
                    d.show_delta(m.delta, true),
                    ci_text(d, m.ci),
                    p_text(m.p),
                    p_text(m.p_holm.unwrap_or(f64::NAN)),
                    m.verdict.clone(),
                ]);
            }
        }
    }
    s.push_str(&md_table(
        &[
            "category", "metric", "B - A", "95% CI", "p", "p (Holm)", "verdict",
        ],
        &rows,
    ));
    s
}

/// Per metric, the share of run noise and what more runs or more cases
/// would buy: tells an underpowered comparison what to add.
fn md_uncertainty(a: &Analysis) -> String {
    let mut s = String::from("\n### Where the uncertainty comes from\n\n");
    let mut rows: Vec<[String; 6]> = vec![];
    for d in &METRICS {
        if let Some(v) = a.metrics.get(d.name).and_then(|m| m.variance.as_ref()) {
            let sd = |x: f64| d.show_delta(x, false);
            rows.push([
                d.label.into(),
                format!("{:.0}%", 100.0 * v.within_share),
                sd(v.se),
                sd(v.se_double_runs),
                sd(v.se_double_cases),
                v.advice.clone(),
            ]);
        }
    }
    s.push_str(&md_table(
        &[
            "metric",
            "run noise share",
            "SE now",
            "SE, 2x runs",
            "SE, 2x cases",
            "what would help",
        ],
        &rows,
    ));
    s.push_str("\nBetween-case variance is how much the true B - A effect differs from case to case; within-case variance is run-to-run noise of the paired difference (run r of A and B replay the same variant and fault seed). Var(case mean) = between + within / runs, so more runs shrink only the second term.\n");
    s
}

fn md_cases(a: &Analysis) -> String {
    let mut s = String::from("\n### Cases\n\n");
    let rows: Vec<[String; 8]> = a
        .cases
        .iter()
        .map(|c| {
            [
                c.id.clone(),
                c.category.clone(),
                c.a_passed.clone(),
                c.b_passed.clone(),
                format!("${:.4}", c.a_cost_usd),
                format!("${:.4}", c.b_cost_usd),
                format!("{:.2}", c.a_verified),
                format!("{:.2}", c.b_verified),
            ]
        })
        .collect();
    s.push_str(&md_table(
        &[
            "case",
            "category",
            "A runs passed",
            "B runs passed",
            "A cost/run",
            "B cost/run",
            "A verified/run",
            "B verified/run",
        ],
        &rows,
    ));
    s
}

/// The method in prose with this comparison's own numbers (resamples,
/// draws, seed, suite hash), so the report can be reproduced and checked.
pub(super) fn md_method(r: &AbRun) -> String {
    let a = &r.analysis;
    format!(
        "\n### Method\n\n\
Evan Miller, \"Adding Error Bars to Evals\" (arXiv 2411.00640): the case is the unit. Each case's runs are averaged first, then arms are compared on per-case paired differences B - A. \
Intervals: paired t (statrs StudentsT), 95%; for cost per verified task (a ratio of sums) a case bootstrap ({} resamples, percentile); latency is compared on a log scale (a ratio of geometric means). \
p: paired permutation test (each case's arms swapped), exact up to 20 cases, otherwise {} Monte Carlo draws; mid-p (ties count half), because pass shares of a few runs are lumpy and the conventional p is conservative there (both are in ab.json). \
Categories: Holm-adjusted across categories. Pass rates: Wilson 95% on the effective number of runs (Kish design effect from the intra-case correlation). \
MDE: the effect a two-sided paired t test detects with 80% power at alpha 0.05 for the observed variance (noncentral t, solved exactly). \
B better / B worse needs p < 0.05 and the 95% CI on the same side of 0 (when they disagree the verdict says so). \
A verdict says \"no difference detectable at this size\" only when the MDE is within the effect of interest (pass rate and score 5 points, costs 10% of A, latency 10%); otherwise \"underpowered\". \
Gate (exit 1): a category's pass rate drops with Holm p < 0.05; an adversarial case passed every A run and failed a B run; or a gated metric is significantly worse (latency is reported, not gated: on replayed traffic it is process wall time on a shared machine). \
Not comparable: a case with a case-run (either arm) that ended in the bench's own machinery (a recording miss, no replay server, a failed setup, the live cap) is left out of every statistic and of the gate; above {:.0}% of the cases there is no verdict (exit 3). \
Seed {} (run order, permutations, bootstrap); suite `{}`{}, git `{}`, suite hash `{}`.\n",
        a.bootstrap_resamples,
        a.monte_carlo_draws,
        100.0 * a.comparability.share_max,
        a.seed,
        r.suite,
        r.category.as_ref().map(|c| format!(" (category {c})")).unwrap_or_default(),
        r.git_rev,
        &r.suite_hash[..r.suite_hash.len().min(16)]
    )
}

/// Why ab.json, ab.md or forest.svg could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A drawing step of plotters failed (its error is generic over the
    /// backend, so it is kept as its text).
    #[error("{0}")]
    Plot(String),
    #[error("ab.json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}
