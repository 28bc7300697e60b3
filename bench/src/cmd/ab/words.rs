//! What `bench ab`'s outputs say in words beside their tables, shared by
//! ab.md, ab.html and forest.svg so the three never tell different stories:
//! how to read the comparison, what the verdict names (the marks the forest
//! plot draws), where an interval and the test disagree and which one the
//! verdict judged on, and a changed recording condition in words (never as
//! a digest).

use crate::stats::inference::{min_attainable_p, ALPHA};
use bench::ab::analysis::{Analysis, Code, MetricDef, MetricResult, METRICS};
use bench::bench_fault::BenchFault;
use harness::model::{ConditionField, Difference};

/// The page's and ab.md's opening: what the comparison is and how to read
/// its figures, before any figure.
pub const HOW_TO_READ: [&str; 4] = [
    "A is the baseline config, B the change; both arms ran the same cases the same number of times, run r of each replaying the same recording variant and fault seed, so every figure is B - A paired case by case.",
    "Each row gives B - A with its 95% interval: an interval wholly left or right of 0 is a difference this many cases can see; one that crosses 0 is not.",
    "The verdict calls B better or worse on a metric only when the permutation test's p is below 0.05 and the interval is on the same side of 0; where the two disagree, a line below says which way and why. Besides the statistics, one adversarial case that passed every A run and failed a B run is a regression on its own.",
    "A case is left out (not comparable) when a run of it ended in the bench's own machinery, for instance when B's requests differ from what the recording observed; then it measures neither arm.",
];

/// A recording condition that differs, as a person says it: the field in
/// words, the values where they are readable (a prompt or a tool list is
/// compared by digest, and a digest tells a reader nothing).
pub fn condition_words(d: &Difference) -> String {
    let values = format!("recorded {}, requested {}", d.recorded, d.requested);
    match d.field {
        ConditionField::Model => format!("the model differs ({values})"),
        ConditionField::Temperature => format!("the temperature differs ({values})"),
        ConditionField::Seed => format!("the sampling seed differs ({values})"),
        ConditionField::MaxTokens => format!("the length limit (max_tokens) differs ({values})"),
        ConditionField::System => "the system prompt differs".into(),
        ConditionField::Tools => "the tool list differs".into(),
        ConditionField::Other => {
            "another request setting differs (tool_choice, top_p, stop sequences or the like)"
                .into()
        }
    }
}

/// Why a case-run is not comparable, in words: the short cause a sentence
/// names (a changed condition in words, not the call it was first seen at).
pub fn cause_words(f: &BenchFault) -> String {
    match f {
        BenchFault::OtherConditions { difference, .. } => condition_words(difference),
        BenchFault::RecordingMiss {
            call_key: Some(k), ..
        } => format!("the run asked for a call the recording lacks ({k})"),
        BenchFault::RecordingMiss { call_key: None, .. } => {
            "the run made a call the recording has no answer for".into()
        }
        BenchFault::ReplayServerUnavailable { .. } => "the replay server was not there".into(),
        BenchFault::LiveCapReached { .. } => "the live cap was reached".into(),
        BenchFault::LiveNotMeasured { .. } => "the endpoint did not answer the model call".into(),
        BenchFault::CaseSetup { .. } => "the bench could not set the case-run up".into(),
        BenchFault::Interrupted { signal } => format!("the command was interrupted by {signal}"),
    }
}

/// A faulted run's line in a table: the cause in words, and where a
/// changed condition was first seen.
pub fn fault_words(f: &BenchFault) -> String {
    match f {
        BenchFault::OtherConditions {
            call_key,
            difference,
        } => format!("{} (first at call {call_key})", condition_words(difference)),
        other => other.describe(),
    }
}

/// The cases left out, their causes grouped: "arm B: the system prompt
/// differs (22 cases)".
fn causes(a: &Analysis) -> Vec<String> {
    let mut groups: Vec<(String, Vec<&str>)> = vec![];
    for c in &a.not_comparable {
        for r in &c.runs {
            let key = format!("arm {}: {}", r.arm.label(), cause_words(&r.fault));
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, ids)) if ids.contains(&c.id.as_str()) => {}
                Some((_, ids)) => ids.push(&c.id),
                None => groups.push((key, vec![&c.id])),
            }
        }
    }
    groups
        .into_iter()
        .map(|(k, ids)| format!("{k} ({} case{})", ids.len(), plural(ids.len())))
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What would make the left-out cases comparable, each remedy once.
fn remedies(a: &Analysis) -> Vec<String> {
    let mut v: Vec<String> = (a.not_comparable.iter())
        .flat_map(|c| c.runs.iter().map(|r| r.fault.remedy("both arms")))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// When the comparison gives no verdict because too few cases could be
/// compared: one sentence saying so and naming what changed, and one with
/// the remedy. None when there is a verdict.
pub fn no_verdict(a: &Analysis) -> Option<[String; 2]> {
    let c = &a.comparability;
    if c.comparable {
        return None;
    }
    let causes = causes(a).join("; ");
    let first = if a.n_cases == 0 {
        format!(
            "Nothing here can be compared: none of the {} cases ran clean in both arms ({causes}), so no case measures the change.",
            c.n_cases_run
        )
    } else {
        format!(
            "No verdict: {} of {} cases could not be compared ({causes}), more than the {:.0}% a verdict allows; the {} that could are shown below for information only.",
            c.n_not_comparable,
            c.n_cases_run,
            100.0 * c.share_max,
            a.n_cases
        )
    };
    let second = format!("To compare: {}.", remedies(a).join("; or "));
    Some([first, second])
}

/// What the verdict names, for the forest plot to mark: a panel (metric)
/// and a row in it (None: all cases; Some: a category).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub metric: &'static str,
    pub row: Option<String>,
    /// A regression (red) or an improvement (green).
    pub regress: bool,
    pub text: String,
}

fn metric_name(name: &str) -> &'static str {
    METRICS
        .iter()
        .find(|d| d.name == name)
        .map_or(METRICS[0].name, |d| d.name)
}

/// Every regression the guard found (or, with no verdict, found among the
/// comparable cases), and every gated metric the verdict calls B better
/// on: each is a mark on the plot, so the plot shows what the verdict says.
pub fn marks(a: &Analysis) -> Vec<Mark> {
    let no_verdict = !a.comparability.comparable;
    let regs = if no_verdict {
        &a.regressions_among_comparable
    } else {
        &a.regressions
    };
    let tag = if no_verdict { " (no verdict)" } else { "" };
    let mut out: Vec<Mark> = regs
        .iter()
        .map(|g| match g.kind {
            "adversarial_case" => Mark {
                metric: "pass_rate",
                row: Some(
                    (a.cases.iter().find(|c| c.id == g.subject))
                        .map_or("adversarial".into(), |c| c.category.clone()),
                ),
                regress: true,
                text: format!(
                    "regression{tag}: adversarial case {} passed every A run and failed a B run",
                    g.subject
                ),
            },
            "category_pass_rate" => Mark {
                metric: "pass_rate",
                row: Some(g.subject.clone()),
                regress: true,
                text: format!(
                    "regression{tag}: {} pass rate falls (Holm p < {ALPHA})",
                    g.subject
                ),
            },
            _ => Mark {
                metric: metric_name(&g.subject),
                row: None,
                regress: true,
                text: format!("regression{tag}: B significantly worse on {}", g.subject),
            },
        })
        .collect();
    if !no_verdict {
        for d in METRICS.iter().filter(|d| d.gated) {
            if a.metrics.get(d.name).map(|m| m.verdict_code) == Some(Code::Better) {
                out.push(Mark {
                    metric: d.name,
                    row: None,
                    regress: false,
                    text: format!("B significantly better on {}", d.label),
                });
            }
        }
    }
    out
}

/// An interval as the tables show it.
fn ci_words(d: &MetricDef, ci: [f64; 2]) -> String {
    format!(
        "[{}, {}]",
        d.show_delta(ci[0], true),
        d.show_delta(ci[1], true)
    )
}

/// One subject's disagreement, if its interval and its p fall on
/// different sides of the line: which way, what the verdict did, and why.
fn disagreement(
    d: &MetricDef,
    m: &MetricResult,
    scope: &str,
    holm_over: Option<usize>,
    differing: Option<usize>,
) -> Option<String> {
    let p = if holm_over.is_some() { m.p_holm? } else { m.p };
    let (lo, hi) = (m.ci[0], m.ci[1]);
    if m.identical || !(p.is_finite() && lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let excludes_zero = lo > 0.0 || hi < 0.0;
    let significant = p < ALPHA;
    let p_name = if holm_over.is_some() { "p (Holm)" } else { "p" };
    let ci = ci_words(d, m.ci);
    if excludes_zero && !significant {
        let way = if (lo > 0.0) == d.higher_is_better {
            "better"
        } else {
            "worse"
        };
        let why = if min_attainable_p(m.n_cases) >= ALPHA {
            format!(
                "with {} cases the permutation test cannot go below p = {:.4}, whatever the data",
                m.n_cases,
                min_attainable_p(m.n_cases)
            )
        } else if let Some(k) = holm_over.filter(|k| *k > 1 && m.p < ALPHA) {
            format!("the p is adjusted by Holm for the {k} categories tested, the interval is not")
        } else if let Some(k) = differing.filter(|k| *k < m.n_cases) {
            format!(
                "only {k} of {} cases differ between the arms: the permutation test weighs those few, while the {} interval treats the per-case differences as near-normal and comes out narrower",
                m.n_cases, m.ci_method
            )
        } else {
            format!(
                "the {} interval and the permutation test rest on different assumptions (near-normal per-case differences; arms exchangeable within a case), and near the line they can fall on either side of it",
                m.ci_method
            )
        };
        Some(format!(
            "{} ({scope}): the 95% interval {ci} excludes 0, but {p_name} = {p:.4} is not below {ALPHA}. The verdict judges on both and needs both, so it does not call B {way} here. They differ because {why}.",
            d.label
        ))
    } else if significant && !excludes_zero {
        Some(format!(
            "{} ({scope}): {p_name} = {p:.4} is below {ALPHA}, but the 95% interval {ci} includes 0. The verdict judges on both and needs both, so it calls this inconclusive. They differ because a few cases dominate the mean: the interval widens with their spread, while the permutation test counts that most cases moved the same way.",
            d.label
        ))
    } else {
        None
    }
}

/// Every place where an interval and its p disagree, over all cases and
/// per category (categories: the Holm-adjusted p, which the guard reads).
pub fn disagreements(a: &Analysis) -> Vec<String> {
    let differing = |cat: Option<&str>| {
        (a.cases.iter())
            .filter(|c| cat.is_none_or(|k| c.category == k))
            .filter(|c| c.a_passed != c.b_passed)
            .count()
    };
    let pass_differing =
        |d: &MetricDef, cat: Option<&str>| (d.name == "pass_rate").then(|| differing(cat));
    let mut out = vec![];
    for d in &METRICS {
        if let Some(m) = a.metrics.get(d.name) {
            out.extend(disagreement(
                d,
                m,
                "all cases",
                None,
                pass_differing(d, None),
            ));
        }
    }
    let n_cat = a.categories.len();
    for (cat, c) in &a.categories {
        for d in &METRICS {
            if let Some(m) = c.metrics.get(d.name) {
                out.extend(disagreement(
                    d,
                    m,
                    cat,
                    Some(n_cat),
                    pass_differing(d, Some(cat)),
                ));
            }
        }
    }
    out
}
