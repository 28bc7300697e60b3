//! The comparison, and diverge.json: `DivergeReport` is the contract (CI
//! and scripts/diverge-check read it); diverge.md and the table are rendered
//! from it (`render`).
//!
//! Cases pair by case id, variants by run index (`runs[i]` against
//! `runs[i]`: run i of a recording used seed + i, so the same index is the
//! same draw). Per variant pair: the multiset Jaccard of the steps that are
//! tool calls, the set Jaccard of the tasks planned, the LCS similarity of
//! the step sequences (tool calls and text-only replies alike), ending
//! changed, and the token ratio. A variant pair is **diverged** when any of
//! the three similarities is below the threshold or its ending changed.
//!
//! A case or variant present on one side only is reported as such and
//! counts as **diverged**: the question is "did the behaviour change", and a
//! run that is there on one side and not the other is a change (a live run
//! cut by the cap, a case that stopped recording); skipping it would report
//! "no divergence" for exactly the runs that went wrong. A case is as
//! diverged as its worst variant.

use super::similarity::{first_parting, multiset_jaccard, sequence_similarity, set_jaccard};
use super::trajectory::{CaseTrajectories, Set, Step, Trajectory, NOT_RECORDED};
use serde::{Deserialize, Serialize};

/// diverge.json's `schema`.
pub const SCHEMA: &str = "bench-diverge/1";

/// The same thing on the two sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sides<T> {
    pub recorded: T,
    pub against: T,
}

/// Which side a case or variant is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    OnlyRecorded,
    OnlyAgainst,
}

/// A field no cassette holds, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotRecorded {
    pub field: String,
    pub why: String,
}

/// One step as shown at a parting point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepView {
    pub call_key: String,
    /// `tool(canonical args)`, `(no tool call)`, `(unreadable reply, ...)`.
    pub call: String,
}

/// Where two trajectories part: the first step index whose calls differ;
/// a side that has ended there is None.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parting {
    pub step: usize,
    pub recorded: Option<StepView>,
    pub against: Option<StepView>,
}

/// How a variant ended, per side (None: not in the cassette).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndView {
    pub ending: Option<String>,
    pub exit_code: Option<i32>,
    pub predicate_met: Option<bool>,
    /// Model calls answered (outcome), else the cassette's interactions.
    pub calls: u64,
    /// Tokens the ledger booked (outcome), else summed over the replies.
    pub tokens: u64,
    pub tokens_from: TokensFrom,
    pub tasks_planned: Vec<String>,
    pub tasks_started: Vec<String>,
    /// Calls per started task; None with no task started.
    pub calls_per_task: Option<f64>,
    pub steps: usize,
    /// Steps that are tool calls.
    pub tool_calls: usize,
    pub steps_cut: usize,
    pub malformed_plans: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokensFrom {
    Outcome,
    Replies,
}

/// One run variant of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantDiff {
    pub run: u32,
    pub presence: Presence,
    pub diverged: bool,
    /// Why it diverged, in words (empty when it did not).
    pub reasons: Vec<String>,
    /// Multiset Jaccard of the (tool, canonical args) calls.
    pub calls_jaccard: Option<f64>,
    /// Jaccard of the planned task ids.
    pub tasks_jaccard: Option<f64>,
    /// LCS(a, b) / max(|a|, |b|) over the steps.
    pub sequence_similarity: Option<f64>,
    /// The lowest of the three.
    pub similarity: Option<f64>,
    /// None when either side has no recorded ending.
    pub ending_changed: Option<bool>,
    /// Tokens against / recorded; None when recorded is 0 or a side is missing.
    pub cost_ratio: Option<f64>,
    pub first_parting: Option<Parting>,
    pub recorded: Option<EndView>,
    pub against: Option<EndView>,
}

/// One case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseDiff {
    pub case: String,
    pub presence: Presence,
    pub diverged: bool,
    pub reasons: Vec<String>,
    /// The worst variant's similarity; None when nothing could be compared.
    pub similarity: Option<f64>,
    pub variants: Sides<usize>,
    pub variants_diverged: usize,
    pub ending_changed: bool,
    /// Tokens against / recorded over the variants on both sides.
    pub cost_ratio: Option<f64>,
    pub made: Sides<Option<MadeView>>,
    pub runs: Vec<VariantDiff>,
}

/// A cassette's sampling settings, per side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MadeView {
    pub model: String,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub cases: usize,
    pub cases_diverged: usize,
    pub cases_only_recorded: usize,
    pub cases_only_against: usize,
    pub variants: usize,
    pub variants_diverged: usize,
    pub variants_one_side_only: usize,
    pub endings_changed: usize,
    pub worst_similarity: Option<f64>,
    pub tokens: Sides<u64>,
}

/// diverge.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DivergeReport {
    pub schema: String,
    /// `recorded` (two sets of recordings) or `live` (the against set was
    /// recorded by this command).
    pub mode: String,
    pub sets: Sides<String>,
    pub threshold: f64,
    pub diverged: bool,
    pub totals: Totals,
    pub not_recorded: Vec<NotRecorded>,
    /// Worst first: diverged before not, then by similarity, then case id.
    pub cases: Vec<CaseDiff>,
    /// Wall time of the comparison (and of the live run, in live mode).
    pub wall_ms: u64,
}

fn end_view(t: &Trajectory) -> EndView {
    let (calls, tokens, tokens_from) = match &t.outcome {
        Some(o) => (o.calls, o.tokens, TokensFrom::Outcome),
        None => (t.interactions as u64, t.reply_tokens, TokensFrom::Replies),
    };
    let tool_calls = t.steps.iter().filter(|s| is_tool_call(s)).count();
    EndView {
        ending: t.outcome.as_ref().map(|o| o.ending.clone()),
        exit_code: t.outcome.as_ref().map(|o| o.exit_code),
        predicate_met: t.outcome.as_ref().map(|o| o.predicate_met),
        calls,
        tokens,
        tokens_from,
        tasks_planned: t.tasks_planned.clone(),
        tasks_started: t.tasks_started.clone(),
        calls_per_task: (!t.tasks_started.is_empty())
            .then(|| calls as f64 / t.tasks_started.len() as f64),
        steps: t.steps.len(),
        tool_calls,
        steps_cut: t.steps_cut,
        malformed_plans: t.malformed_plans.clone(),
    }
}

/// A step that is a tool call (not a text-only or unreadable reply).
fn is_tool_call(s: &Step) -> bool {
    !s.token.starts_with('(')
}

fn ratio(against: u64, recorded: u64) -> Option<f64> {
    (recorded > 0).then(|| against as f64 / recorded as f64)
}

fn view(s: &Step) -> StepView {
    StepView {
        call_key: s.call_key.clone(),
        call: s.token.clone(),
    }
}

/// One variant pair.
pub fn compare_variant(r: &Trajectory, a: &Trajectory, threshold: f64) -> VariantDiff {
    let calls = |t: &Trajectory| -> Vec<String> {
        t.steps
            .iter()
            .filter(|s| is_tool_call(s))
            .map(|s| s.token.clone())
            .collect()
    };
    let tokens =
        |t: &Trajectory| -> Vec<String> { t.steps.iter().map(|s| s.token.clone()).collect() };
    let calls_jaccard = multiset_jaccard(&calls(r), &calls(a));
    let tasks_jaccard = set_jaccard(&r.tasks_planned, &a.tasks_planned);
    let (rt, at) = (tokens(r), tokens(a));
    let seq = sequence_similarity(&rt, &at);
    // A Jaccard over two empty sets is n/a (None): it takes no part.
    let similarity = [calls_jaccard, tasks_jaccard]
        .into_iter()
        .flatten()
        .fold(seq, f64::min);
    let first_parting = first_parting(&rt, &at).map(|i| Parting {
        step: i,
        recorded: r.steps.get(i).map(view),
        against: a.steps.get(i).map(view),
    });
    let ending_changed = match (&r.outcome, &a.outcome) {
        (Some(x), Some(y)) => Some(x.ending != y.ending),
        _ => None,
    };
    let mut reasons = Vec::new();
    for (name, v) in [
        ("calls Jaccard", calls_jaccard),
        ("tasks Jaccard", tasks_jaccard),
        ("sequence similarity", Some(seq)),
    ] {
        let Some(v) = v else { continue };
        if v < threshold {
            reasons.push(format!("{name} {v:.3} < {threshold}"));
        }
    }
    if ending_changed == Some(true) {
        let e = |t: &Trajectory| {
            t.outcome
                .as_ref()
                .map(|o| o.ending.clone())
                .unwrap_or_default()
        };
        reasons.push(format!("ending {} -> {}", e(r), e(a)));
    }
    let (rv, av) = (end_view(r), end_view(a));
    VariantDiff {
        run: r.run,
        presence: Presence::Both,
        diverged: !reasons.is_empty(),
        reasons,
        calls_jaccard,
        tasks_jaccard,
        sequence_similarity: Some(seq),
        similarity: Some(similarity),
        ending_changed,
        cost_ratio: ratio(av.tokens, rv.tokens),
        first_parting,
        recorded: Some(rv),
        against: Some(av),
    }
}

/// A variant on one side only.
fn one_sided(t: &Trajectory, presence: Presence) -> VariantDiff {
    let (where_, v) = match presence {
        Presence::OnlyRecorded => ("only in the recorded set", (Some(end_view(t)), None)),
        _ => ("only in the against set", (None, Some(end_view(t)))),
    };
    VariantDiff {
        run: t.run,
        presence,
        diverged: true,
        reasons: vec![format!("run {} is {where_}", t.run)],
        calls_jaccard: None,
        tasks_jaccard: None,
        sequence_similarity: None,
        similarity: None,
        ending_changed: None,
        cost_ratio: None,
        first_parting: None,
        recorded: v.0,
        against: v.1,
    }
}

fn made(c: &CaseTrajectories) -> MadeView {
    MadeView {
        model: c.model.clone(),
        temperature: c.temperature,
        seed: c.seed,
    }
}

/// One case; either side may be missing (not both).
pub fn compare_case(
    id: &str,
    r: Option<&CaseTrajectories>,
    a: Option<&CaseTrajectories>,
    threshold: f64,
) -> CaseDiff {
    let empty: &[Trajectory] = &[];
    let rr = r.map_or(empty, |c| &c.runs[..]);
    let ar = a.map_or(empty, |c| &c.runs[..]);
    let mut runs = Vec::new();
    for i in 0..rr.len().max(ar.len()) {
        runs.push(match (rr.get(i), ar.get(i)) {
            (Some(x), Some(y)) => compare_variant(x, y, threshold),
            (Some(x), None) => one_sided(x, Presence::OnlyRecorded),
            (None, Some(y)) => one_sided(y, Presence::OnlyAgainst),
            (None, None) => unreachable!("i < the longer side's length"),
        });
    }
    let presence = match (r, a) {
        (Some(_), Some(_)) => Presence::Both,
        (Some(_), None) => Presence::OnlyRecorded,
        _ => Presence::OnlyAgainst,
    };
    let mut reasons = Vec::new();
    match presence {
        Presence::OnlyRecorded => reasons.push("case only in the recorded set".to_string()),
        Presence::OnlyAgainst => reasons.push("case only in the against set".to_string()),
        Presence::Both => {}
    }
    let variants_diverged = runs.iter().filter(|v| v.diverged).count();
    if presence == Presence::Both && variants_diverged > 0 {
        reasons.push(format!(
            "{variants_diverged} of {} variant(s) diverged",
            runs.len()
        ));
    }
    let both: Vec<&VariantDiff> = runs
        .iter()
        .filter(|v| v.presence == Presence::Both)
        .collect();
    let similarity = both.iter().filter_map(|v| v.similarity).reduce(f64::min);
    let tok = |f: fn(&VariantDiff) -> Option<&EndView>| -> u64 {
        both.iter().filter_map(|v| f(v)).map(|e| e.tokens).sum()
    };
    let cost_ratio = ratio(tok(|v| v.against.as_ref()), tok(|v| v.recorded.as_ref()));
    CaseDiff {
        case: id.to_string(),
        presence,
        diverged: presence != Presence::Both || variants_diverged > 0,
        reasons,
        similarity,
        variants: Sides {
            recorded: rr.len(),
            against: ar.len(),
        },
        variants_diverged,
        ending_changed: runs.iter().any(|v| v.ending_changed == Some(true)),
        cost_ratio,
        made: Sides {
            recorded: r.map(made),
            against: a.map(made),
        },
        runs,
    }
}

/// Worst first: diverged cases, then by similarity (nothing compared counts
/// as the lowest), then by case id, so the order is total and stable.
fn worst_first(a: &CaseDiff, b: &CaseDiff) -> std::cmp::Ordering {
    b.diverged
        .cmp(&a.diverged)
        .then(
            a.similarity
                .unwrap_or(-1.0)
                .total_cmp(&b.similarity.unwrap_or(-1.0)),
        )
        .then(a.case.cmp(&b.case))
}

/// The whole comparison.
pub fn compare(recorded: &Set, against: &Set, threshold: f64, mode: &str) -> DivergeReport {
    let mut ids: Vec<&String> = recorded.cases.keys().chain(against.cases.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut cases: Vec<CaseDiff> = ids
        .iter()
        .map(|id| {
            compare_case(
                id,
                recorded.cases.get(*id),
                against.cases.get(*id),
                threshold,
            )
        })
        .collect();
    cases.sort_by(worst_first);
    let variants = || cases.iter().flat_map(|c| c.runs.iter());
    let side_tokens = |f: fn(&VariantDiff) -> Option<&EndView>| -> u64 {
        variants().filter_map(f).map(|e| e.tokens).sum()
    };
    let totals = Totals {
        cases: cases.len(),
        cases_diverged: cases.iter().filter(|c| c.diverged).count(),
        cases_only_recorded: cases
            .iter()
            .filter(|c| c.presence == Presence::OnlyRecorded)
            .count(),
        cases_only_against: cases
            .iter()
            .filter(|c| c.presence == Presence::OnlyAgainst)
            .count(),
        variants: variants().count(),
        variants_diverged: variants().filter(|v| v.diverged).count(),
        variants_one_side_only: variants().filter(|v| v.presence != Presence::Both).count(),
        endings_changed: variants()
            .filter(|v| v.ending_changed == Some(true))
            .count(),
        worst_similarity: cases.iter().filter_map(|c| c.similarity).reduce(f64::min),
        tokens: Sides {
            recorded: side_tokens(|v| v.recorded.as_ref()),
            against: side_tokens(|v| v.against.as_ref()),
        },
    };
    DivergeReport {
        schema: SCHEMA.to_string(),
        mode: mode.to_string(),
        sets: Sides {
            recorded: recorded.dir.display().to_string(),
            against: against.dir.display().to_string(),
        },
        threshold,
        diverged: totals.cases_diverged > 0,
        totals,
        not_recorded: NOT_RECORDED
            .iter()
            .map(|(f, w)| NotRecorded {
                field: f.to_string(),
                why: w.to_string(),
            })
            .collect(),
        cases,
        wall_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::trajectory::Outcome;
    use super::*;

    fn traj(run: u32, steps: &[&str], tasks: &[&str], ending: &str) -> Trajectory {
        Trajectory {
            run,
            tasks_planned: tasks.iter().map(|s| s.to_string()).collect(),
            tasks_started: vec!["t1".into()],
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, s)| Step {
                    call_key: format!("execute/t1/a0/{i}"),
                    token: s.to_string(),
                })
                .collect(),
            steps_cut: 0,
            malformed_plans: vec![],
            outcome: Some(Outcome {
                ending: ending.into(),
                exit_code: 0,
                predicate_met: true,
                calls: 4,
                tokens: 100,
            }),
            reply_tokens: 0,
            interactions: 4,
        }
    }

    #[test]
    fn identical_variants_do_not_diverge() {
        let t = traj(0, &["r(a)", "w(b)", "(no tool call)"], &["t1"], "GOAL_MET");
        let d = compare_variant(&t, &t, 0.9);
        assert!(!d.diverged, "{:?}", d.reasons);
        assert_eq!(d.similarity, Some(1.0));
        assert_eq!(d.first_parting, None);
        assert_eq!(d.cost_ratio, Some(1.0));
    }

    #[test]
    fn one_call_changed_parts_at_its_step() {
        let r = traj(0, &["r(a)", "w(b)", "w(c)"], &["t1"], "GOAL_MET");
        let a = traj(0, &["r(a)", "w(x)", "w(c)"], &["t1"], "GOAL_MET");
        let d = compare_variant(&r, &a, 0.9);
        assert!(d.diverged);
        // Multiset: 2 shared of 4 distinct-with-counts = 0.5; LCS 2/3.
        assert_eq!(d.calls_jaccard, Some(0.5));
        let p = d.first_parting.unwrap();
        assert_eq!(p.step, 1);
        assert_eq!(p.recorded.unwrap().call, "w(b)");
        assert_eq!(p.against.unwrap().call, "w(x)");
    }

    #[test]
    fn an_ending_change_alone_diverges() {
        let r = traj(0, &["r(a)"], &["t1"], "GOAL_MET");
        let a = traj(0, &["r(a)"], &["t1"], "NO_PROGRESS");
        let d = compare_variant(&r, &a, 0.9);
        assert!(d.diverged);
        assert_eq!(d.similarity, Some(1.0));
        assert_eq!(d.ending_changed, Some(true));
    }

    #[test]
    fn a_missing_variant_or_case_is_diverged_never_skipped() {
        let c = |n: u32| CaseTrajectories {
            file: "c.json".into(),
            model: "m".into(),
            temperature: None,
            seed: None,
            runs: (0..n)
                .map(|i| traj(i, &["r(a)"], &["t1"], "GOAL_MET"))
                .collect(),
        };
        let (two, three) = (c(2), c(3));
        let d = compare_case("c", Some(&three), Some(&two), 0.9);
        assert!(d.diverged);
        assert_eq!(d.variants_diverged, 1);
        assert_eq!(d.runs[2].presence, Presence::OnlyRecorded);
        let d = compare_case("c", None, Some(&two), 0.9);
        assert!(d.diverged);
        assert_eq!(d.presence, Presence::OnlyAgainst);
        assert_eq!(d.similarity, None);
    }
}
