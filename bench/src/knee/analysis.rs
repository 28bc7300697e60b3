//! From the case-runs measured at each budget level to the knee table: per
//! level spend, verified tasks, verified pass rate, cost per verified task
//! with a case-bootstrap interval and the share of runs that ended
//! BUDGET_EXHAUSTED; the knee (Kneedle on pass rate against spend); the
//! cheapest level; and how often each level is the knee when the cases are
//! resampled. Pure: no I/O, so every figure is testable from numbers.

use crate::bench_fault::BenchFault;
use crate::case_run::ending_or_none;
use crate::stats::kneedle;
use crate::stats::{case_bootstrap, percentile_interval};
use harness::ending::Ending;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const CI_LEVEL: f64 = 0.95;

pub const PASS_RATE_DEFINITION: &str = "verified / (verified + parked + queue_left), each summed over the case-runs at a level \
(report.json: `verified` and `parked` list tasks, `queue_left` the tasks still queued when the run ended). Tasks pruned by the \
drift gate and tasks the admission check rejected are in neither sum. A case-run whose cap could not pay for its planning call \
has no plan of its own (all three are 0); it counts the tasks the same case-run planned at the other levels (the replayed plan \
is the same at every level), so a cap too small to plan shows as planned work not done instead of leaving the denominator. \
A level with nothing planned has pass rate 0.";

pub const COST_DEFINITION: &str = "spend / verified over all case-runs at a level (the seed's cost per completed and verified \
task: the money of the whole night over the tasks it verified); undefined when nothing was verified. The interval is a 95% \
percentile interval over resamples of whole cases (each case with all its runs), resamples with no verified task dropped.";

/// One case-run at one budget level, as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunObs {
    pub level: f64,
    pub case: String,
    pub run: u32,
    /// None when the case-run reached no ending (written `<none>`).
    #[serde(with = "crate::case_run::ending_or_none")]
    pub ending: Option<Ending>,
    pub spend_usd: f64,
    pub hard_cap_usd: f64,
    pub verified: u64,
    pub parked: u64,
    pub queue_left: u64,
    /// The pass-rate denominator this run contributes (see PASS_RATE_DEFINITION).
    pub planned: u64,
    /// Set when `planned` was taken from the same case-run at another level.
    pub planned_borrowed: bool,
    /// Why the run has no usable report (it counts as an error, not as data).
    pub error: Option<String>,
    /// The run ended in the bench's machinery (a level that changed the
    /// traffic so the cassette missed, ...): not a data point, and its case
    /// leaves every level (see `case_matrix`).
    #[serde(default)]
    pub not_comparable: Option<BenchFault>,
    pub state_dir: String,
}

/// A case-run at a level that ended in the bench's machinery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotComparableRun {
    pub case: String,
    pub level: f64,
    pub run: u32,
    pub fault: BenchFault,
}

/// Per-level totals of some set of case-runs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub spend: f64,
    pub verified: u64,
    pub planned: u64,
    pub runs: u64,
    pub exhausted: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.spend += o.spend;
        self.verified += o.verified;
        self.planned += o.planned;
        self.runs += o.runs;
        self.exhausted += o.exhausted;
    }
    pub fn pass_rate(&self) -> f64 {
        if self.planned == 0 {
            0.0
        } else {
            self.verified as f64 / self.planned as f64
        }
    }
    pub fn cost_per_verified(&self) -> Option<f64> {
        (self.verified > 0).then(|| self.spend / self.verified as f64)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelRow {
    pub level: f64,
    pub spend_usd: f64,
    pub verified: u64,
    pub planned: u64,
    pub pass_rate: f64,
    pub cost_per_verified_usd: Option<f64>,
    pub cost_per_verified_ci: Option<[f64; 2]>,
    /// Resamples in which nothing was verified at this level (left out of the interval).
    pub ci_undefined_resamples: usize,
    pub budget_exhausted_share: f64,
    pub runs: u64,
    pub errored_runs: u64,
    /// Case-runs at this level that ended in the bench's machinery.
    pub not_comparable_runs: u64,
    pub endings: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelShare {
    pub level: f64,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frequencies {
    pub reps: usize,
    pub seed: u64,
    /// One entry per level, in the order of `levels`.
    pub levels: Vec<LevelShare>,
    /// Resamples with no knee (or no verified task anywhere, for the cheapest level).
    pub none_share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeReport {
    pub suite: String,
    /// Cases in the figures (the comparable ones).
    pub cases: usize,
    /// Cases left out of every level because a case-run of theirs, at some
    /// level, was not comparable (listed in `not_comparable`).
    pub cases_not_comparable: usize,
    pub not_comparable: Vec<NotComparableRun>,
    /// False when more than NOT_COMPARABLE_SHARE_MAX of the cases were left
    /// out: no knee and no cheapest level are claimed.
    pub comparable: bool,
    /// "k of n cases not comparable: ...", or None.
    pub not_comparable_note: Option<String>,
    pub runs_per_case: u32,
    /// Highest level first.
    pub levels: Vec<LevelRow>,
    pub knee_level: Option<f64>,
    /// The point farthest above the chord, confirmed or not: tells how far
    /// a "no knee" was from being one.
    pub knee_candidate: Option<Candidate>,
    pub min_cost_level: Option<f64>,
    pub knee_bootstrap: Frequencies,
    pub min_cost_bootstrap: Frequencies,
    pub kneedle: KneedleInfo,
    pub definitions: Definitions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub level: f64,
    /// Normalized pass rate minus normalized spend at the level.
    pub difference: f64,
    /// How far the difference must fall after it (S * mean normalized step) for a knee.
    pub drop_needed: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneedleInfo {
    pub x: String,
    pub y: String,
    pub sensitivity: f64,
    pub curve: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definitions {
    pub pass_rate: String,
    pub cost_per_verified: String,
    pub budget_exhausted_share: String,
    pub spend_usd: String,
    pub min_cost_level: String,
}

/// Fill `planned` for every observation: its own count, or for a run that
/// never planned, the most the same (case, run) planned at any level.
pub fn fill_planned(obs: &mut [RunObs]) {
    let mut best: BTreeMap<(String, u32), u64> = BTreeMap::new();
    for o in obs.iter() {
        let own = o.verified + o.parked + o.queue_left;
        let e = best.entry((o.case.clone(), o.run)).or_insert(0);
        *e = (*e).max(own);
    }
    for o in obs.iter_mut() {
        let own = o.verified + o.parked + o.queue_left;
        if own > 0 || o.error.is_some() {
            o.planned = own;
            o.planned_borrowed = false;
        } else {
            o.planned = best.get(&(o.case.clone(), o.run)).copied().unwrap_or(0);
            o.planned_borrowed = o.planned > 0;
        }
    }
}

/// Cases with a not-comparable case-run at any level.
fn not_comparable_cases(obs: &[RunObs]) -> std::collections::BTreeSet<&str> {
    obs.iter()
        .filter(|o| o.not_comparable.is_some())
        .map(|o| o.case.as_str())
        .collect()
}

/// The case matrix: for each case (sorted by id), its totals at each level.
/// Errored runs are left out of the data (they are counted per level). A
/// case with a not-comparable run at any level is left out of every level,
/// as `bench ab` leaves it out of both arms: the levels are compared over
/// the same cases, and the cases a level's traffic change drops are the
/// ones that level affects, so dropping them at that level alone would bias
/// it.
fn case_matrix(levels: &[f64], obs: &[RunObs]) -> Vec<Vec<Totals>> {
    let left_out = not_comparable_cases(obs);
    let mut m: BTreeMap<&str, Vec<Totals>> = BTreeMap::new();
    for o in obs.iter().filter(|o| !left_out.contains(o.case.as_str())) {
        let Some(l) = level_index(levels, o.level) else {
            continue;
        };
        let row = m
            .entry(o.case.as_str())
            .or_insert_with(|| vec![Totals::default(); levels.len()]);
        if o.error.is_some() {
            continue;
        }
        row[l].add(&Totals {
            spend: o.spend_usd,
            verified: o.verified,
            planned: o.planned,
            runs: 1,
            exhausted: (o.ending == Some(Ending::BudgetExhausted)) as u64,
        });
    }
    m.into_values().collect()
}

fn level_index(levels: &[f64], level: f64) -> Option<usize> {
    levels.iter().position(|l| (l - level).abs() < 1e-12)
}

fn level_totals(cases: &[&Vec<Totals>], l: usize) -> Totals {
    let mut t = Totals::default();
    for c in cases {
        t.add(&c[l]);
    }
    t
}

fn spend_and_pass_rate(per_level: &[Totals]) -> (Vec<f64>, Vec<f64>) {
    (
        per_level.iter().map(|t| t.spend).collect(),
        per_level.iter().map(|t| t.pass_rate()).collect(),
    )
}

/// The knee over per-level totals: Kneedle on (spend, pass rate).
pub fn knee_of(per_level: &[Totals], sensitivity: f64) -> Option<usize> {
    let (x, y) = spend_and_pass_rate(per_level);
    kneedle::knee(&x, &y, sensitivity)
}

/// The level with the lowest cost per verified task; on a tie the one that
/// verified more (the same price for more work).
pub fn min_cost_of(per_level: &[Totals]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, t) in per_level.iter().enumerate() {
        let Some(c) = t.cost_per_verified() else {
            continue;
        };
        best = match best {
            Some((j, b)) if b < c || (b == c && per_level[j].verified >= t.verified) => {
                Some((j, b))
            }
            _ => Some((i, c)),
        };
    }
    best.map(|(i, _)| i)
}

fn frequencies(levels: &[f64], draws: &[f64], reps: usize, seed: u64) -> Frequencies {
    let n = draws.len().max(1) as f64;
    let share = |i: usize| {
        draws
            .iter()
            .filter(|d| d.is_finite() && **d as usize == i)
            .count() as f64
            / n
    };
    Frequencies {
        reps,
        seed,
        levels: levels
            .iter()
            .enumerate()
            .map(|(i, &level)| LevelShare {
                level,
                share: share(i),
            })
            .collect(),
        none_share: draws.iter().filter(|d| !d.is_finite()).count() as f64 / n,
    }
}

/// Case-bootstrap resamples of the case matrix, every statistic from the
/// same seed, hence the same resamples: the intervals and the knee
/// frequencies describe one set of what-ifs.
struct Resampler<'a> {
    matrix: &'a [Vec<Totals>],
    levels: usize,
    reps: usize,
    seed: u64,
}

impl Resampler<'_> {
    fn draws(&self, stat: &dyn Fn(&[Totals]) -> f64) -> Vec<f64> {
        case_bootstrap(self.matrix, self.reps, self.seed, |s: &[&Vec<Totals>]| {
            let t: Vec<Totals> = (0..self.levels).map(|l| level_totals(s, l)).collect();
            stat(&t)
        })
    }
}

/// What the cases left out say: whether enough are left to claim a knee,
/// how many there were, and the note naming the remedies.
struct LeftOut {
    comparable: bool,
    cases: usize,
    note: Option<String>,
}

fn left_out(obs: &[RunObs], comparable_cases: usize) -> LeftOut {
    let left_out = not_comparable_cases(obs);
    let n_all = obs
        .iter()
        .map(|o| o.case.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let comparable = comparable_cases > 0
        && left_out.len() as f64
            <= crate::bench_fault::NOT_COMPARABLE_SHARE_MAX * n_all as f64 + 1e-9;
    let mut remedies: Vec<String> = obs
        .iter()
        .filter_map(|o| o.not_comparable.as_ref().map(|f| f.remedy("every level")))
        .collect();
    remedies.sort();
    remedies.dedup();
    LeftOut {
        comparable,
        cases: left_out.len(),
        note: (!left_out.is_empty()).then(|| {
            format!(
                "{} of {n_all} cases not comparable: {}",
                left_out.len(),
                remedies.join("; ")
            )
        }),
    }
}

/// Everything in knee.json. `levels` must be distinct; they are reported
/// highest first. `obs` must have `planned` filled (see `fill_planned`).
pub fn analyze(
    suite: &str,
    runs_per_case: u32,
    levels: &[f64],
    obs: &[RunObs],
    reps: usize,
    seed: u64,
    sensitivity: f64,
) -> KneeReport {
    let mut levels: Vec<f64> = levels.to_vec();
    levels.sort_by(|a, b| b.total_cmp(a));
    let matrix = case_matrix(&levels, obs);
    let all: Vec<&Vec<Totals>> = matrix.iter().collect();
    let per_level: Vec<Totals> = (0..levels.len()).map(|l| level_totals(&all, l)).collect();
    let boot = Resampler {
        matrix: &matrix,
        levels: levels.len(),
        reps,
        seed,
    };
    let rows: Vec<LevelRow> = levels
        .iter()
        .enumerate()
        .map(|(l, &level)| level_row(l, level, per_level[l], obs, &boot))
        .collect();
    let idx = |o: Option<usize>| o.map_or(f64::NAN, |i| i as f64);
    let knee_draws = boot.draws(&|t: &[Totals]| idx(knee_of(t, sensitivity)));
    let (x, y) = spend_and_pass_rate(&per_level);
    let knee_candidate =
        kneedle::candidate(&x, &y, sensitivity).map(|(i, difference, drop_needed)| Candidate {
            level: levels[i],
            difference,
            drop_needed,
        });
    let cost_draws = boot.draws(&|t: &[Totals]| idx(min_cost_of(t)));
    let left = left_out(obs, matrix.len());
    let comparable = left.comparable;
    KneeReport {
        suite: suite.to_string(),
        cases: matrix.len(),
        cases_not_comparable: left.cases,
        not_comparable: not_comparable_runs(obs),
        comparable,
        not_comparable_note: left.note,
        runs_per_case,
        knee_level: knee_of(&per_level, sensitivity)
            .filter(|_| comparable)
            .map(|i| levels[i]),
        knee_candidate,
        min_cost_level: min_cost_of(&per_level)
            .filter(|_| comparable)
            .map(|i| levels[i]),
        knee_bootstrap: frequencies(&levels, &knee_draws, reps, seed),
        min_cost_bootstrap: frequencies(&levels, &cost_draws, reps, seed),
        levels: rows,
        kneedle: KneedleInfo {
            x: "spend_usd (actual spend at the level, normalized on its own values)".into(),
            y: "pass_rate".into(),
            sensitivity,
            curve: "concave, increasing; offline; no smoothing".into(),
        },
        definitions: definitions(),
    }
}

/// One level's row: its totals, cost per verified task with its bootstrap
/// interval (only when the level verified anything), and its case-runs'
/// endings, errors and not-comparable runs.
fn level_row(l: usize, level: f64, t: Totals, obs: &[RunObs], boot: &Resampler) -> LevelRow {
    let cost = t.cost_per_verified();
    let draws = if cost.is_some() {
        boot.draws(&|t: &[Totals]| t[l].cost_per_verified().unwrap_or(f64::NAN))
    } else {
        vec![]
    };
    let undefined = draws.iter().filter(|d| !d.is_finite()).count();
    let ci = cost.and_then(|_| {
        let (lo, hi) = percentile_interval(&draws, CI_LEVEL);
        (lo.is_finite() && hi.is_finite()).then_some([lo, hi])
    });
    let mut endings = BTreeMap::new();
    let mut errored = 0;
    let mut not_comparable = 0;
    for o in obs.iter().filter(|o| (o.level - level).abs() < 1e-12) {
        *endings
            .entry(ending_or_none::name(o.ending).to_string())
            .or_insert(0) += 1;
        errored += (o.error.is_some() && o.not_comparable.is_none()) as u64;
        not_comparable += o.not_comparable.is_some() as u64;
    }
    LevelRow {
        level,
        spend_usd: t.spend,
        verified: t.verified,
        planned: t.planned,
        pass_rate: t.pass_rate(),
        cost_per_verified_usd: cost,
        cost_per_verified_ci: ci,
        ci_undefined_resamples: undefined,
        budget_exhausted_share: if t.runs == 0 {
            0.0
        } else {
            t.exhausted as f64 / t.runs as f64
        },
        runs: t.runs,
        errored_runs: errored,
        not_comparable_runs: not_comparable,
        endings,
    }
}

/// Every case-run that ended in the bench's machinery, with its fault.
fn not_comparable_runs(obs: &[RunObs]) -> Vec<NotComparableRun> {
    obs.iter()
        .filter_map(|o| {
            o.not_comparable.clone().map(|fault| NotComparableRun {
                case: o.case.clone(),
                level: o.level,
                run: o.run,
                fault,
            })
        })
        .collect()
}

/// What each figure in knee.json means, written into the file so it reads
/// without the code.
fn definitions() -> Definitions {
    Definitions {
        pass_rate: PASS_RATE_DEFINITION.into(),
        cost_per_verified: COST_DEFINITION.into(),
        budget_exhausted_share: "case-runs at the level whose report.json ending is BUDGET_EXHAUSTED, over the case-runs at the level".into(),
        spend_usd: "report.json spend_usd summed over the case-runs at the level. In every figure, a case-run without a usable \
report (no report.json, or UNRECOVERABLE_ERROR: it measures the bench, not the budget) is left out and counted in errored_runs; \
a case with a case-run at any level that ended in the bench's machinery (a level that changed the traffic so the cassette \
missed, ...) is left out of every level and listed in not_comparable"
            .into(),
        min_cost_level: "the level with the lowest cost per verified task (point estimate); a tie goes to the level that verified more".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(
        level: f64,
        case: &str,
        run: u32,
        ending: &str,
        spend: f64,
        v: u64,
        p: u64,
        q: u64,
    ) -> RunObs {
        RunObs {
            level,
            case: case.into(),
            run,
            ending: ending_or_none::parse(ending).unwrap(),
            spend_usd: spend,
            hard_cap_usd: level,
            verified: v,
            parked: p,
            queue_left: q,
            planned: 0,
            planned_borrowed: false,
            error: None,
            not_comparable: None,
            state_dir: String::new(),
        }
    }

    #[test]
    fn planned_is_borrowed_only_by_runs_that_never_planned() {
        let mut o = vec![
            obs(1.0, "a", 0, "GOAL_MET", 1.0, 5, 1, 0),
            obs(0.5, "a", 0, "BUDGET_EXHAUSTED", 0.5, 2, 0, 4),
            obs(0.1, "a", 0, "BUDGET_EXHAUSTED", 0.0, 0, 0, 0),
            obs(0.1, "a", 1, "BUDGET_EXHAUSTED", 0.0, 0, 0, 0),
        ];
        fill_planned(&mut o);
        assert_eq!(
            o.iter()
                .map(|x| (x.planned, x.planned_borrowed))
                .collect::<Vec<_>>(),
            vec![(6, false), (6, false), (6, true), (0, false)]
        );
    }

    #[test]
    fn per_level_figures_are_ratios_of_sums() {
        let mut o = vec![
            obs(1.0, "a", 0, "GOAL_MET", 1.0, 4, 0, 0),
            obs(1.0, "b", 0, "GOAL_MET", 3.0, 4, 0, 0),
            obs(0.5, "a", 0, "BUDGET_EXHAUSTED", 0.4, 1, 0, 3),
            obs(0.5, "b", 0, "GOAL_MET", 1.6, 4, 0, 0),
        ];
        fill_planned(&mut o);
        let r = analyze("s", 1, &[0.5, 1.0], &o, 200, 1, 1.0);
        assert_eq!(r.levels[0].level, 1.0);
        assert_eq!((r.levels[0].verified, r.levels[0].planned), (8, 8));
        assert!((r.levels[0].cost_per_verified_usd.unwrap() - 0.5).abs() < 1e-12);
        assert!((r.levels[1].pass_rate - 5.0 / 8.0).abs() < 1e-12);
        assert!((r.levels[1].cost_per_verified_usd.unwrap() - 0.4).abs() < 1e-12);
        assert!((r.levels[1].budget_exhausted_share - 0.5).abs() < 1e-12);
        assert_eq!(r.min_cost_level, Some(0.5));
        // Two points cannot have a knee.
        assert_eq!(r.knee_level, None);
        assert!((r.knee_bootstrap.none_share - 1.0).abs() < 1e-12);
        // The interval brackets the estimate; both are cost ratios of resampled cases.
        let [lo, hi] = r.levels[1].cost_per_verified_ci.unwrap();
        assert!(
            lo <= 0.4 + 1e-12 && 0.4 - 1e-12 <= hi && lo >= 0.2 - 1e-12 && hi <= 0.4 + 1e-12,
            "{lo} {hi}"
        );
    }

    #[test]
    fn nothing_verified_means_no_cost_and_no_interval() {
        let mut o = vec![
            obs(1.0, "a", 0, "GOAL_MET", 1.0, 2, 0, 0),
            obs(0.1, "a", 0, "BUDGET_EXHAUSTED", 0.05, 0, 0, 2),
        ];
        fill_planned(&mut o);
        let r = analyze("s", 1, &[1.0, 0.1], &o, 50, 1, 1.0);
        assert_eq!(r.levels[1].cost_per_verified_usd, None);
        assert_eq!(r.levels[1].cost_per_verified_ci, None);
        assert_eq!(r.levels[1].pass_rate, 0.0);
        assert_eq!(r.min_cost_level, Some(1.0));
        let json = serde_json::to_value(&r).unwrap();
        assert!(json["levels"][1]["cost_per_verified_usd"].is_null());
        assert!(json["levels"][1]["cost_per_verified_ci"].is_null());
    }

    #[test]
    fn the_knee_is_where_more_spend_stops_buying_pass_rate() {
        // Ten cases; pass rate saturates from level 0.5 while spend keeps growing.
        let shape = [
            (1.0, 2.0, 10),
            (0.75, 1.7, 10),
            (0.5, 1.3, 9),
            (0.25, 0.6, 4),
            (0.1, 0.1, 0),
        ];
        let mut o = vec![];
        for c in 0..10 {
            for &(level, spend, v) in &shape {
                // Case c verifies one task fewer at the lowest-but-one level when c is odd: noise for the bootstrap.
                let v = if level == 0.25 && c % 2 == 1 {
                    v - 1
                } else {
                    v
                };
                let ending = if v == 10 {
                    "GOAL_MET"
                } else {
                    "BUDGET_EXHAUSTED"
                };
                o.push(obs(level, &format!("c{c}"), 0, ending, spend, v, 0, 10 - v));
            }
        }
        fill_planned(&mut o);
        let r = analyze("s", 1, &[1.0, 0.75, 0.5, 0.25, 0.1], &o, 300, 7, 1.0);
        assert_eq!(r.knee_level, Some(0.5));
        assert_eq!(r.knee_candidate.as_ref().map(|c| c.level), Some(0.5));
        let total: f64 = r.knee_bootstrap.levels.iter().map(|s| s.share).sum::<f64>()
            + r.knee_bootstrap.none_share;
        assert!((total - 1.0).abs() < 1e-9);
        // Every case has the same shape, so every resample has the same knee.
        assert!(
            (r.knee_bootstrap.levels[2].share - 1.0).abs() < 1e-12,
            "{:?}",
            r.knee_bootstrap
        );
        assert_eq!(r.levels[3].budget_exhausted_share, 1.0);
        assert_eq!(r.levels[0].budget_exhausted_share, 0.0);
    }

    #[test]
    fn errored_runs_are_counted_not_used() {
        let mut o = vec![
            obs(1.0, "a", 0, "GOAL_MET", 1.0, 2, 0, 0),
            obs(1.0, "a", 1, "<none>", 0.0, 0, 0, 0),
        ];
        o[1].error = Some("no report.json".into());
        fill_planned(&mut o);
        let r = analyze("s", 2, &[1.0], &o, 10, 1, 1.0);
        assert_eq!((r.levels[0].runs, r.levels[0].errored_runs), (1, 1));
        assert_eq!(r.levels[0].endings.get("<none>"), Some(&1));
    }

    #[test]
    fn a_case_not_comparable_at_one_level_leaves_every_level() {
        let miss = BenchFault::RecordingMiss {
            call_key: Some("execute/t1/a0/2".into()),
            detail: String::new(),
        };
        let mut o: Vec<RunObs> = vec![];
        for (i, case) in ["a", "b"].iter().enumerate() {
            o.push(obs(1.0, case, 0, "GOAL_MET", 1.0 + i as f64, 3, 0, 0));
            o.push(obs(0.5, case, 0, "BUDGET_EXHAUSTED", 0.5, 1, 0, 2));
        }
        let mut bad = obs(1.0, "c", 0, "UNRECOVERABLE_ERROR", 9.0, 0, 0, 0);
        bad.not_comparable = Some(miss.clone());
        bad.error = Some(miss.describe());
        o.push(bad);
        // c's run at 0.5 is fine, but c leaves 0.5 too.
        o.push(obs(0.5, "c", 0, "BUDGET_EXHAUSTED", 0.5, 0, 0, 3));
        fill_planned(&mut o);
        let r = analyze("s", 1, &[1.0, 0.5], &o, 50, 1, 1.0);
        assert_eq!((r.cases, r.cases_not_comparable), (2, 1));
        assert_eq!(r.levels[0].spend_usd, 3.0, "{:?}", r.levels[0]);
        assert_eq!(r.levels[1].spend_usd, 1.0);
        assert_eq!(r.levels[1].planned, 6);
        assert_eq!(r.levels[0].not_comparable_runs, 1);
        assert_eq!(r.levels[0].errored_runs, 0);
        assert_eq!(r.not_comparable.len(), 1);
        assert_eq!(r.not_comparable[0].fault, miss);
        // 1 of 3 cases is far above the share: no knee and no cheapest level.
        assert!(!r.comparable);
        assert_eq!((r.knee_level, r.min_cost_level), (None, None));
        assert!(r
            .not_comparable_note
            .as_deref()
            .unwrap()
            .starts_with("1 of 3 cases not comparable: record them live with --endpoint, or use a suite recorded for every level"));
    }
}
