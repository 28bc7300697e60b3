//! From a case's reruns to a cause: which condition, when it varied, made
//! the verdict vary. Pure: the trials in, the finding out.
//!
//! Each lane varies one thing against the identical reruns (see `plan`), so
//! the cause is read from where the verdict moves, in this order:
//!
//! 1. every failing run failed only on latency (over its cap, or a
//!    TIME_LIMIT the case does not expect): `timing`;
//! 2. every failing run failed only on a score within `SCORER_MARGIN` of
//!    the line: `scorer`;
//! 3. identical reruns disagree: `unstable` (nothing varied);
//! 4. the fault-seed lane disagrees: `fault`;
//! 5. the latency lane disagrees, or differs from the identical reruns:
//!    `timing`;
//! 6. the runs as written disagree within one cassette variant (only their
//!    fault draws differ): `fault` when the case has a fault plan, else
//!    `unstable`; across variants, each variant agreeing: `variant`;
//! 7. anything else that moves (lanes that each agree but differ from one
//!    another): `fault` if the fault lane is the odd one, else `unstable`.
//!
//! Case-runs that ended in the bench's own machinery (`bench_fault`) are no
//! evidence either way: they are counted and left out.

use crate::case_run::RunRecord;
use crate::known_flaky::{Cause, SCORER_MARGIN};
use crate::score::{CheckKind, PASS_SCORE};
use crate::suite::Case;
use serde::{Deserialize, Serialize};

/// What a lane varies against the identical reruns.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// The case as written: run r replays variant r % n with run r's fault
    /// draws (what `bench run --runs-per-case N` sees). pass^k comes from here.
    AsWritten,
    /// Run 0's variant and fault draws every time: only the rerun differs.
    Identical,
    /// Run 0's variant, the case's fault plan under a new seed per rerun.
    FaultSeeds,
    /// Run 0's variant, the replayed latency scaled up step by step.
    Latency,
}

impl Lane {
    pub const ALL: [Lane; 4] = [
        Lane::AsWritten,
        Lane::Identical,
        Lane::FaultSeeds,
        Lane::Latency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Lane::AsWritten => "as_written",
            Lane::Identical => "identical",
            Lane::FaultSeeds => "fault_seeds",
            Lane::Latency => "latency",
        }
    }
}

/// Why a run failed, in the terms the causes need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// Everything held but the latency cap, or the run hit its wall clock
    /// when the case expects another ending.
    Latency,
    /// Everything held but the score, which is within the margin below the line.
    NearLine,
    /// The ending, a gate, the cost, or a score far below the line.
    Other,
}

/// One case-run of the plan, as the cause needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub lane: Lane,
    pub rerun: u32,
    /// The cassette variant that answered.
    pub variant: u32,
    /// What the lane set: the fault seed or the latency factor, for the words.
    pub setting: Option<f64>,
    /// `None`: passed.
    pub failure: Option<Failure>,
    pub bench_fault: bool,
    pub latency_ms: u64,
    pub score: f64,
}

impl Trial {
    fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// Why `rec` failed (None when it passed), from its typed fields and the
/// case's caps: the same terms as `score::verdict`.
pub fn failure_of(case: &Case, rec: &RunRecord) -> Option<Failure> {
    if rec.passed {
        return None;
    }
    let ending_ok = rec.ending == Some(rec.expected_ending);
    let gates_ok = rec
        .checks
        .iter()
        .all(|c| c.kind == CheckKind::Scored || c.passed);
    let cost_ok = rec.cost_usd <= case.file.cost_cap_usd;
    let latency_ok = rec.latency_ms <= case.file.latency_cap_ms;
    let clock = rec.ending == Some(harness::ending::Ending::TimeLimit) && !ending_ok;
    let score_ok = rec.score >= PASS_SCORE;
    if clock || (ending_ok && gates_ok && cost_ok && score_ok && !latency_ok) {
        return Some(Failure::Latency);
    }
    // 7/10 is 0.7 and 0.8 - 0.1 is 0.7000000000000001: the margin is
    // compared with a tolerance, or a score exactly at its edge falls out.
    let near = rec.score >= PASS_SCORE - SCORER_MARGIN - 1e-9;
    if ending_ok && gates_ok && cost_ok && latency_ok && near {
        return Some(Failure::NearLine);
    }
    Some(Failure::Other)
}

/// Whether the case's runs agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// Every run passed.
    Passes,
    /// Every run failed: not flaky, broken (`bench run` is the tool).
    FailsEveryRun,
    /// Some passed, some failed.
    Flaky,
    /// Every run ended in the bench's own machinery.
    NoEvidence,
}

/// What the reruns of one case show.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub stability: Stability,
    pub cause: Option<Cause>,
    /// The evidence in one sentence.
    pub evidence: String,
}

fn tally<'a>(ts: impl Iterator<Item = &'a Trial>) -> (usize, usize) {
    ts.fold((0, 0), |(p, n), t| (p + t.passed() as usize, n + 1))
}

fn mixed(t: (usize, usize)) -> bool {
    t.0 > 0 && t.0 < t.1
}

fn in_lane<'a>(ev: &'a [&'a Trial], lane: Lane) -> impl Iterator<Item = &'a Trial> + 'a {
    ev.iter().copied().filter(move |t| t.lane == lane)
}

fn found(cause: Cause, evidence: String) -> Finding {
    Finding {
        stability: Stability::Flaky,
        cause: Some(cause),
        evidence,
    }
}

/// "<lane> passes p/n", the evidence's words for one lane.
fn words(ev: &[&Trial], lane: Lane) -> String {
    let (p, n) = tally(in_lane(ev, lane));
    format!("{} passes {p}/{n}", lane_words(lane))
}

/// The cause, from the trials of one case. `has_faults`: the case has a
/// fault plan (its runs as written differ in their fault draws).
pub fn find(trials: &[Trial], has_faults: bool) -> Finding {
    let ev: Vec<&Trial> = trials.iter().filter(|t| !t.bench_fault).collect();
    let all = tally(ev.iter().copied());
    if let Some(f) = not_flaky(all) {
        return f;
    }
    let failing: Vec<&Trial> = ev.iter().copied().filter(|t| !t.passed()).collect();
    if let Some(f) = one_kind_of_failure(&ev, &failing, all) {
        return f;
    }
    by_lane(&ev, has_faults)
}

/// The runs agree (or none is evidence): no cause to look for.
fn not_flaky(all: (usize, usize)) -> Option<Finding> {
    let (stability, evidence) = match all {
        (_, 0) => (
            Stability::NoEvidence,
            "every case-run ended in the bench's own machinery".into(),
        ),
        (p, n) if p == n => (Stability::Passes, format!("all {n} case-runs passed")),
        (0, n) => (
            Stability::FailsEveryRun,
            format!("all {n} case-runs failed: not flaky, broken"),
        ),
        _ => return None,
    };
    Some(Finding {
        stability,
        cause: None,
        evidence,
    })
}

/// Every failing run failed the same narrow way (latency alone, or its
/// score just under the line): the cause is that, whatever the lanes say.
fn one_kind_of_failure(ev: &[&Trial], failing: &[&Trial], all: (usize, usize)) -> Option<Finding> {
    if failing.iter().all(|t| t.failure == Some(Failure::Latency)) {
        let slowest_pass = (ev.iter())
            .filter(|t| t.passed())
            .map(|t| t.latency_ms)
            .max()
            .unwrap_or(0);
        let fastest_fail = failing.iter().map(|t| t.latency_ms).min().unwrap_or(0);
        return Some(found(
            Cause::Timing,
            format!(
                "every failing run failed on latency or the wall clock alone ({} of {}; passing runs took up to {slowest_pass} ms, failing ones from {fastest_fail} ms){}",
                failing.len(),
                all.1,
                first_factor_failing(ev)
                    .map(|f| format!("; the latency lane fails from {f:.2}x"))
                    .unwrap_or_default()
            ),
        ));
    }
    if failing.iter().all(|t| t.failure == Some(Failure::NearLine)) {
        let lo = failing
            .iter()
            .map(|t| t.score)
            .fold(f64::INFINITY, f64::min);
        return Some(found(
            Cause::Scorer,
            format!(
                "every failing run failed on its score alone, at {lo:.2} against the {PASS_SCORE:.2} line ({} of {})",
                failing.len(),
                all.1
            ),
        ));
    }
    None
}

/// The cause from which lane is mixed, in order of how little that lane
/// varied: identical reruns, then fault seeds, latency, the runs as written,
/// and last the lanes disagreeing with each other.
fn by_lane(ev: &[&Trial], has_faults: bool) -> Finding {
    let lanes: Vec<(Lane, (usize, usize))> = Lane::ALL
        .iter()
        .map(|&l| (l, tally(in_lane(ev, l))))
        .filter(|(_, t)| t.1 > 0)
        .collect();
    let lane = |l: Lane| lanes.iter().find(|(x, _)| *x == l).map(|(_, t)| *t);
    if lane(Lane::Identical).is_some_and(mixed) {
        return found(
            Cause::Unstable,
            format!(
                "{}: nothing varied but the rerun",
                words(ev, Lane::Identical)
            ),
        );
    }
    if lane(Lane::FaultSeeds).is_some_and(mixed) {
        let bad: Vec<String> = in_lane(ev, Lane::FaultSeeds)
            .filter(|t| !t.passed())
            .filter_map(|t| t.setting.map(|s| format!("{s}")))
            .collect();
        return found(
            Cause::Fault,
            format!(
                "{}; failing seeds: {}",
                words(ev, Lane::FaultSeeds),
                bad.join(", ")
            ),
        );
    }
    let identical_passes = lane(Lane::Identical).map(|t| t.0 == t.1);
    if let Some(lat) = lane(Lane::Latency) {
        // Mixed, or failing throughout where identical reruns pass.
        if mixed(lat) || (lat.0 == 0 && identical_passes == Some(true)) {
            return found(
                Cause::Timing,
                format!(
                    "{}{}",
                    words(ev, Lane::Latency),
                    first_factor_failing(ev)
                        .map(|f| format!(", failing from {f:.2}x the replayed latency"))
                        .unwrap_or_default()
                ),
            );
        }
    }
    if lane(Lane::AsWritten).is_some_and(mixed) {
        return by_variant(ev, has_faults);
    }
    // Each lane agrees with itself, yet the lanes differ.
    let summary = lanes
        .iter()
        .map(|(l, _)| words(ev, *l))
        .collect::<Vec<_>>()
        .join("; ");
    match lane(Lane::FaultSeeds) {
        Some(f) if Some(f.0 == f.1) != identical_passes => found(
            Cause::Fault,
            format!("every new fault seed gives the other verdict: {summary}"),
        ),
        _ => found(Cause::Unstable, format!("the lanes disagree: {summary}")),
    }
}

/// The runs as written are mixed: per cassette variant, either the verdict
/// follows the variant, or runs of one variant differ (fault draws when
/// the case has a fault plan, the harness otherwise).
fn by_variant(ev: &[&Trial], has_faults: bool) -> Finding {
    let mut variants: Vec<(u32, (usize, usize))> = vec![];
    for t in in_lane(ev, Lane::AsWritten) {
        match variants.iter_mut().find(|(v, _)| *v == t.variant) {
            Some((_, c)) => *c = (c.0 + t.passed() as usize, c.1 + 1),
            None => variants.push((t.variant, (t.passed() as usize, 1))),
        }
    }
    variants.sort();
    let per_variant = variants
        .iter()
        .map(|(v, (p, n))| format!("variant {v} passes {p}/{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    if variants.iter().any(|(_, t)| mixed(*t)) {
        return match has_faults {
            true => found(
                Cause::Fault,
                format!(
                    "runs of one cassette variant differ only in their fault draws: {per_variant}"
                ),
            ),
            false => found(
                Cause::Unstable,
                format!("runs of one cassette variant, with no fault plan, differ: {per_variant}"),
            ),
        };
    }
    found(
        Cause::Variant,
        format!("the verdict follows the recorded variant: {per_variant}"),
    )
}

fn lane_words(l: Lane) -> &'static str {
    match l {
        Lane::AsWritten => "as written",
        Lane::Identical => "identical reruns",
        Lane::FaultSeeds => "new fault seeds",
        Lane::Latency => "scaled latency",
    }
}

/// The smallest latency factor at which a latency-lane run failed.
fn first_factor_failing(ev: &[&Trial]) -> Option<f64> {
    (ev.iter())
        .filter(|t| t.lane == Lane::Latency && !t.passed())
        .filter_map(|t| t.setting)
        .min_by(|a, b| a.total_cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(lane: Lane, rerun: u32, variant: u32, failure: Option<Failure>) -> Trial {
        Trial {
            lane,
            rerun,
            variant,
            setting: None,
            failure,
            bench_fault: false,
            latency_ms: 100,
            score: if failure.is_some() { 0.0 } else { 1.0 },
        }
    }

    fn lanes(
        aw: impl Fn(u32) -> (u32, Option<Failure>),
        other: impl Fn(Lane, u32) -> Option<Failure>,
        with: &[Lane],
    ) -> Vec<Trial> {
        let mut v = vec![];
        for r in 0..10 {
            let (variant, f) = aw(r);
            v.push(t(Lane::AsWritten, r, variant, f));
            for &l in with {
                let mut x = t(l, r, 0, other(l, r));
                x.setting = Some(1.0 + r as f64 / 9.0);
                v.push(x);
            }
        }
        v
    }

    const O: Option<Failure> = Some(Failure::Other);

    #[test]
    fn a_verdict_that_follows_the_variant_is_variant() {
        let ts = lanes(
            |r| (r % 2, if r % 2 == 1 { O } else { None }),
            |_, _| None,
            &[Lane::Identical],
        );
        let f = find(&ts, false);
        assert_eq!(f.cause, Some(Cause::Variant), "{f:?}");
        assert!(
            f.evidence.contains("variant 1 passes 0/5"),
            "{}",
            f.evidence
        );
    }

    #[test]
    fn identical_reruns_that_disagree_are_unstable_before_anything_else() {
        let ts = lanes(
            |r| (r % 2, if r % 2 == 1 { O } else { None }),
            |l, r| (l == Lane::Identical && r % 3 == 0).then_some(Failure::Other),
            &[Lane::Identical, Lane::FaultSeeds],
        );
        assert_eq!(find(&ts, true).cause, Some(Cause::Unstable));
    }

    #[test]
    fn new_fault_seeds_that_break_it_are_fault() {
        let ts = lanes(
            |r| (0, (r == 4).then_some(Failure::Other)),
            |l, r| (l == Lane::FaultSeeds && r % 4 == 1).then_some(Failure::Other),
            &[Lane::Identical, Lane::FaultSeeds],
        );
        let f = find(&ts, true);
        assert_eq!(f.cause, Some(Cause::Fault), "{f:?}");
        assert!(f.evidence.contains("failing seeds"), "{}", f.evidence);
        // One variant, no fault plan, runs as written that differ: unstable.
        let ts = lanes(
            |r| (0, (r == 4).then_some(Failure::Other)),
            |_, _| None,
            &[Lane::Identical],
        );
        assert_eq!(find(&ts, false).cause, Some(Cause::Unstable));
    }

    #[test]
    fn failures_on_latency_alone_are_timing_and_name_the_factor() {
        let ts = lanes(
            |_| (0, None),
            |l, r| (l == Lane::Latency && r >= 4).then_some(Failure::Latency),
            &[Lane::Identical, Lane::Latency],
        );
        let f = find(&ts, false);
        assert_eq!(f.cause, Some(Cause::Timing), "{f:?}");
        assert!(f.evidence.contains("from 1.44x"), "{}", f.evidence);
        // The latency lane failing on something else still points at timing.
        let ts = lanes(
            |_| (0, None),
            |l, r| (l == Lane::Latency && r >= 4).then_some(Failure::Other),
            &[Lane::Identical, Lane::Latency],
        );
        assert_eq!(find(&ts, false).cause, Some(Cause::Timing));
    }

    #[test]
    fn failures_near_the_line_alone_are_scorer() {
        let mut ts = lanes(
            |r| (r % 2, (r % 2 == 1).then_some(Failure::NearLine)),
            |_, _| None,
            &[Lane::Identical],
        );
        for x in ts.iter_mut().filter(|x| x.failure.is_some()) {
            x.score = 0.7;
        }
        let f = find(&ts, false);
        assert_eq!(f.cause, Some(Cause::Scorer), "{f:?}");
        assert!(f.evidence.contains("0.70"), "{}", f.evidence);
    }

    #[test]
    fn a_run_is_failed_on_what_it_missed() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let case = crate::suite::load_case(
            &repo.join("suites/flaky/edge/flaky-scorer"),
            "edge",
            &crate::suite::report_fields(),
        )
        .expect("the committed case loads");
        let rec = |ending: &str, score: f64, latency_ms: u64| RunRecord {
            live_calls: None,
            latency: None,
            run: 0,
            ending: crate::case_run::ending_or_none::parse(ending).unwrap(),
            exit_code: 0,
            passed: false,
            score,
            cost_usd: 0.01,
            latency_ms,
            expected_ending: harness::ending::Ending::GoalMet,
            checks: vec![],
            failures: vec![],
            state_dir: String::new(),
            verified: 1,
            bench_fault: None,
            cause: None,
        };
        // 7 of 10 soft checks: at the margin's edge, exactly.
        assert_eq!(
            failure_of(&case, &rec("GOAL_MET", 7.0 / 10.0, 10)),
            Some(Failure::NearLine)
        );
        assert_eq!(
            failure_of(&case, &rec("GOAL_MET", 0.6, 10)),
            Some(Failure::Other)
        );
        assert_eq!(
            failure_of(&case, &rec("GOAL_MET", 1.0, 30_000)),
            Some(Failure::Latency)
        );
        assert_eq!(
            failure_of(&case, &rec("TIME_LIMIT", 0.0, 10)),
            Some(Failure::Latency)
        );
        assert_eq!(
            failure_of(&case, &rec("NO_PROGRESS", 0.0, 10)),
            Some(Failure::Other)
        );
        let mut passed = rec("GOAL_MET", 1.0, 10);
        passed.passed = true;
        assert_eq!(failure_of(&case, &passed), None);
    }

    #[test]
    fn agreement_and_bench_faults_are_not_flakiness() {
        let ts = lanes(|_| (0, None), |_, _| None, &[Lane::Identical]);
        assert_eq!(find(&ts, false).stability, Stability::Passes);
        let ts = lanes(|_| (0, O), |_, _| O, &[Lane::Identical]);
        assert_eq!(find(&ts, false).stability, Stability::FailsEveryRun);
        // A bench fault among passing runs changes nothing.
        let mut ts = lanes(|_| (0, None), |_, _| None, &[Lane::Identical]);
        ts[3].failure = O;
        ts[3].bench_fault = true;
        assert_eq!(find(&ts, false).stability, Stability::Passes);
        for x in ts.iter_mut() {
            x.bench_fault = true;
        }
        assert_eq!(find(&ts, false).stability, Stability::NoEvidence);
    }
}
