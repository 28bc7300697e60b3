//! From the case-runs of two arms to the comparison: per-metric paired
//! differences, intervals, p-values, MDEs and verdicts, the same per
//! category with Holm-adjusted p-values, and the regression guard. Pure
//! functions of the runs, so the simulations in `sim` exercise exactly the
//! code that `bench ab` reports with.

use crate::bench_fault::BenchFault;
use crate::case_run::RunRecord;
use crate::stats::inference::{self, Permutation, VarianceParts, ALPHA};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the comparison needs from one case-run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Obs {
    pub passed: bool,
    pub score: f64,
    pub cost_usd: f64,
    pub latency_ms: u64,
    pub verified: u64,
    /// The first failure message, to explain a flipped case.
    pub failure: Option<String>,
    /// The run ended in the bench's machinery (a replay miss, ...): its case
    /// is not comparable and leaves every statistic.
    #[serde(default)]
    pub fault: Option<BenchFault>,
    /// Live or hybrid: how its model calls were answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_calls: Option<crate::live::LiveCalls>,
}

impl From<&RunRecord> for Obs {
    fn from(r: &RunRecord) -> Obs {
        Obs {
            passed: r.passed,
            score: r.score,
            cost_usd: r.cost_usd,
            latency_ms: r.latency_ms,
            verified: r.verified,
            failure: r.failures.first().cloned(),
            fault: r.bench_fault.clone(),
            live_calls: r.live_calls.clone(),
        }
    }
}

/// One arm's model traffic in a live or hybrid comparison: what its verdict
/// rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmTraffic {
    pub arm: Arm,
    pub case_runs: u64,
    /// Case-runs measured under their own conditions: every call answered
    /// by a recording that saw it or by the live model (no bench fault).
    pub measured: u64,
    pub calls_replayed: u64,
    pub calls_live: u64,
    pub live_usd: f64,
    /// Case-runs with at least one live call.
    pub case_runs_live: u64,
    /// `case run N: why` for each case-run that was not measured.
    pub not_measured: Vec<String>,
}

/// Per arm, its traffic; None when no case-run went through the live proxy.
pub fn traffic(pairs: &[CasePair]) -> Option<[ArmTraffic; 2]> {
    let any = pairs
        .iter()
        .flat_map(|p| p.a.iter().chain(&p.b))
        .any(|o| o.live_calls.is_some());
    if !any {
        return None;
    }
    let of = |arm: Arm| {
        let mut t = ArmTraffic {
            arm,
            case_runs: 0,
            measured: 0,
            calls_replayed: 0,
            calls_live: 0,
            live_usd: 0.0,
            case_runs_live: 0,
            not_measured: vec![],
        };
        for p in pairs {
            let obs = if arm == Arm::A { &p.a } else { &p.b };
            for (run, o) in obs.iter().enumerate() {
                t.case_runs += 1;
                let calls = o.live_calls.clone().unwrap_or_default();
                t.calls_replayed += calls.replayed;
                t.calls_live += calls.live;
                t.live_usd += calls.live_usd;
                t.case_runs_live += u64::from(calls.live > 0);
                match &o.fault {
                    None => t.measured += 1,
                    Some(f) => t
                        .not_measured
                        .push(format!("{} run {run}: {}", p.id, f.describe())),
                }
            }
        }
        t
    };
    Some([of(Arm::A), of(Arm::B)])
}

pub use crate::bench_fault::NOT_COMPARABLE_SHARE_MAX;

/// Which arm of the comparison a case-run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    A,
    B,
}

impl Arm {
    pub fn label(self) -> &'static str {
        match self {
            Arm::A => "A",
            Arm::B => "B",
        }
    }
}

/// One case-run of a not-comparable case that ended in the bench's machinery.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FaultedRun {
    pub arm: Arm,
    pub run: u32,
    pub fault: BenchFault,
}

/// A case left out of every statistic: some case-run of it, in either arm,
/// ended in the bench's machinery (the runs that did are listed).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NotComparableCase {
    pub id: String,
    pub category: String,
    pub runs: Vec<FaultedRun>,
}

/// How much of the suite the comparison could use.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparability {
    /// Cases that ran in both arms (comparable + not comparable).
    pub n_cases_run: usize,
    pub n_not_comparable: usize,
    pub share_not_comparable: f64,
    pub share_max: f64,
    /// False: too many cases are not comparable; the verdict is "not comparable".
    pub comparable: bool,
    /// "k of n cases not comparable: <what would fix it>", or None when k = 0.
    pub note: Option<String>,
}

/// Split the cases into the comparable ones and those with a faulted run.
pub fn split_comparable(cases: &[CasePair]) -> (Vec<CasePair>, Vec<NotComparableCase>) {
    let mut ok = vec![];
    let mut not = vec![];
    for c in cases {
        let runs: Vec<FaultedRun> = [(Arm::A, &c.a), (Arm::B, &c.b)]
            .into_iter()
            .flat_map(|(arm, obs)| {
                obs.iter().enumerate().filter_map(move |(r, o)| {
                    o.fault.clone().map(|fault| FaultedRun {
                        arm,
                        run: r as u32,
                        fault,
                    })
                })
            })
            .collect();
        if runs.is_empty() {
            ok.push(c.clone());
        } else {
            not.push(NotComparableCase {
                id: c.id.clone(),
                category: c.category.clone(),
                runs,
            });
        }
    }
    (ok, not)
}

/// The comparability of a split, with the verdict's note.
pub fn comparability(n_run: usize, not: &[NotComparableCase]) -> Comparability {
    let k = not.len();
    let share = if n_run == 0 {
        0.0
    } else {
        k as f64 / n_run as f64
    };
    let mut remedies: Vec<String> = not
        .iter()
        .flat_map(|c| c.runs.iter().map(|r| r.fault.remedy("both arms")))
        .collect();
    remedies.sort();
    remedies.dedup();
    Comparability {
        n_cases_run: n_run,
        n_not_comparable: k,
        share_not_comparable: share,
        share_max: NOT_COMPARABLE_SHARE_MAX,
        comparable: k < n_run && share <= NOT_COMPARABLE_SHARE_MAX + 1e-12,
        note: (k > 0).then(|| {
            format!(
                "{k} of {n_run} cases not comparable: {}",
                remedies.join("; ")
            )
        }),
    }
}

/// One case's runs in both arms; run r of A and run r of B replay the same
/// cassette variant and fault seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CasePair {
    pub id: String,
    pub category: String,
    pub a: Vec<Obs>,
    pub b: Vec<Obs>,
}

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub seed: u64,
    /// Monte Carlo permutation draws above EXACT_MAX_CASES cases.
    pub mc_reps: usize,
    pub bootstrap_reps: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: DEFAULT_SEED,
            mc_reps: 10_000,
            bootstrap_reps: 4_000,
        }
    }
}

/// arXiv 2411.00640, the paper this follows.
pub const DEFAULT_SEED: u64 = 241_100_640;

#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Mean over cases of the per-case mean of a per-run value.
    Mean(fn(&Obs) -> f64),
    /// Total spend / total verified tasks in an arm (a ratio of sums).
    CostPerVerified,
}

/// The smallest effect worth detecting, against which the MDE is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sesoi {
    Absolute(f64),
    /// A share of arm A's value.
    Relative(f64),
}

#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// Gated metrics fail the command when B is significantly worse.
    pub gated: bool,
    pub kind: Kind,
    pub sesoi: Sesoi,
}

fn pass_value(o: &Obs) -> f64 {
    o.passed as u8 as f64
}
fn score_value(o: &Obs) -> f64 {
    o.score
}
fn cost_value(o: &Obs) -> f64 {
    o.cost_usd
}
/// Latency is compared on a log scale (a ratio of geometric means): latency
/// is right-skewed and a change is multiplicative. 0 ms (a run that never
/// started) is floored at 1 ms so the log is finite.
fn log_latency(o: &Obs) -> f64 {
    (o.latency_ms.max(1) as f64).ln()
}

/// The metrics, in report order. Latency is reported but not gated: on
/// replayed traffic it is the harness process's wall time on a shared
/// machine, noise that a same-config comparison flags 5% of the time by
/// design, and nothing an engineer's config change is judged by.
pub const METRICS: [MetricDef; 5] = [
    MetricDef {
        name: "pass_rate",
        label: "pass rate",
        unit: "share of case-runs passed",
        higher_is_better: true,
        gated: true,
        kind: Kind::Mean(pass_value),
        sesoi: Sesoi::Absolute(0.05),
    },
    MetricDef {
        name: "score",
        label: "score",
        unit: "mean check score, 0 to 1",
        higher_is_better: true,
        gated: true,
        kind: Kind::Mean(score_value),
        sesoi: Sesoi::Absolute(0.05),
    },
    MetricDef {
        name: "cost_per_case",
        label: "cost per case-run",
        unit: "USD per case-run",
        higher_is_better: false,
        gated: true,
        kind: Kind::Mean(cost_value),
        sesoi: Sesoi::Relative(0.10),
    },
    MetricDef {
        name: "latency",
        label: "latency",
        unit: "ln(ms); a and b are geometric means in ms",
        higher_is_better: false,
        gated: false,
        kind: Kind::Mean(log_latency),
        sesoi: Sesoi::Absolute(0.09531017980432493),
    },
    MetricDef {
        name: "cost_per_verified_task",
        label: "cost per verified task",
        unit: "USD per verified task",
        higher_is_better: false,
        gated: true,
        kind: Kind::CostPerVerified,
        sesoi: Sesoi::Relative(0.10),
    },
];

impl MetricDef {
    /// A value in the metric's own terms (a or b).
    pub fn show_value(&self, x: f64) -> String {
        if !x.is_finite() {
            return "n/a".into();
        }
        match self.name {
            "pass_rate" => format!("{:.1}%", 100.0 * x),
            "score" => format!("{x:.3}"),
            "latency" => format!("{x:.0} ms"),
            _ => format!("${x:.4}"),
        }
    }
    /// A difference B - A (or an MDE, unsigned) in the metric's own terms.
    pub fn show_delta(&self, x: f64, signed: bool) -> String {
        if !x.is_finite() {
            return "n/a".into();
        }
        match (self.name, signed) {
            ("pass_rate", true) => format!("{:+.1} pts", 100.0 * x),
            ("pass_rate", false) => format!("{:.1} pts", 100.0 * x),
            ("score", true) => format!("{x:+.3}"),
            ("score", false) => format!("{x:.3}"),
            // on the log scale: shown as a percentage change of the geometric mean
            ("latency", true) => format!("{:+.1}%", 100.0 * (x.exp() - 1.0)),
            ("latency", false) => format!("{:.1}%", 100.0 * (x.exp() - 1.0)),
            (_, true) => format!("{}${:.4}", if x < 0.0 { "-" } else { "+" }, x.abs()),
            (_, false) => format!("${x:.4}"),
        }
    }
    fn sesoi_for(&self, a: f64) -> f64 {
        match self.sesoi {
            Sesoi::Absolute(x) => x,
            Sesoi::Relative(f) => f * a.abs(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    Better,
    Worse,
    NoDifference,
    Underpowered,
    /// The permutation test and the interval disagree.
    Mixed,
    Undefined,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricResult {
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub gated: bool,
    pub n_cases: usize,
    pub a: f64,
    pub b: f64,
    pub delta: f64,
    pub ci: [f64; 2],
    /// "paired t" or "case bootstrap (percentile)".
    pub ci_method: &'static str,
    /// The permutation mid-p the verdict uses.
    pub p: f64,
    /// The conventional permutation p (ties count in full; conservative).
    pub p_conventional: f64,
    pub p_method: String,
    /// The paired t p-value, for reference (None for ratio-of-sums metrics).
    pub p_t: Option<f64>,
    /// Holm-adjusted across categories (categories only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_holm: Option<f64>,
    pub mde: f64,
    /// The smallest effect of interest the MDE is judged against.
    pub effect_of_interest: f64,
    /// Power to detect the effect of interest at this size (mean metrics).
    pub power_at_effect_of_interest: Option<f64>,
    pub verdict: String,
    pub verdict_code: Code,
    /// Every case has the same runs-average in both arms (nothing to test).
    pub identical: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_bootstrap: Option<[f64; 2]>,
    /// B / A: exp(delta) for the log-scale latency, a ratio of sums for cost per verified task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_ci: Option<[f64; 2]>,
    /// Wilson 95% intervals on each arm's pass rate (pass rate only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wilson_a: Option<inference::ClusteredWilson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wilson_b: Option<inference::ClusteredWilson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variance: Option<VarianceParts>,
}

/// Verdict for one metric. Significant means the permutation p < ALPHA and
/// the 95% interval excludes 0 on the same side: B better or B worse by the
/// sign. Requiring both keeps the verdict consistent with the interval
/// printed next to it (an intersection of two level-ALPHA tests is still a
/// level-ALPHA test); when they disagree, typically because every differing
/// case moved the same way but one case's size dominates the mean, the
/// verdict says so. Not significant: "no difference detectable at this
/// size" only when the comparison could have seen an effect of interest
/// (MDE <= the effect of interest, and enough cases to reach p < ALPHA);
/// otherwise it is called underpowered, never "no difference".
pub fn verdict(def: &MetricDef, r: &MetricResult, p: f64) -> (Code, String) {
    let (delta, ci, mde, sesoi, n) = (r.delta, r.ci, r.mde, r.effect_of_interest, r.n_cases);
    if !delta.is_finite() || !p.is_finite() {
        return (
            Code::Undefined,
            "undefined: no comparable value in one arm".into(),
        );
    }
    if r.identical {
        // Not an inference: every case's runs agree across the arms. There
        // is no variance to compute an MDE from, so none is claimed.
        return (
            Code::NoDifference,
            format!("identical: no case differs between the arms ({n} cases)"),
        );
    }
    if p < ALPHA && delta != 0.0 {
        let b_higher = delta > 0.0;
        let ci_agrees = if b_higher { ci[0] > 0.0 } else { ci[1] < 0.0 };
        if !ci_agrees {
            return (Code::Mixed, format!("inconclusive: p = {p:.4} but the 95% CI includes 0 (a few cases dominate the mean)"));
        }
        return if b_higher == def.higher_is_better {
            (Code::Better, "B better".into())
        } else {
            (Code::Worse, "B worse".into())
        };
    }
    // 5 cases or fewer cannot reach p < 0.05 in an exact sign-flip test
    // (2 / 2^5 = 0.0625), whatever the data.
    if inference::min_attainable_p(n) >= ALPHA {
        return (
            Code::Underpowered,
            format!("underpowered: {n} case(s) cannot reach p < {ALPHA}"),
        );
    }
    if mde.is_finite() && mde <= sesoi * (1.0 + 1e-9) {
        return (
            Code::NoDifference,
            format!(
                "no difference detectable at this size (MDE {})",
                def.show_delta(mde, false)
            ),
        );
    }
    (
        Code::Underpowered,
        format!(
            "underpowered: MDE {} > {} of interest",
            def.show_delta(mde, false),
            def.show_delta(sesoi, false)
        ),
    )
}

/// A different random stream per (metric, category) from the one seed.
fn stream(seed: u64, salt: &str) -> u64 {
    salt.bytes().fold(seed ^ 0x9E37_79B9_7F4A_7C15, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01B3)
    })
}

pub fn metric(def: &MetricDef, cases: &[&CasePair], s: &Settings, salt: &str) -> MetricResult {
    let seed = stream(s.seed, &format!("{}/{salt}", def.name));
    let mut r = match def.kind {
        Kind::Mean(f) => mean_metric(def, f, cases, s, seed),
        Kind::CostPerVerified => cost_per_verified_metric(def, cases, s, seed),
    };
    r.effect_of_interest = def.sesoi_for(if def.name == "latency" { 0.0 } else { r.a });

    let (code, text) = verdict(def, &r, r.p);
    r.verdict_code = code;
    r.verdict = text;
    r
}

/// A result with the arms' values and their difference, every statistic
/// still unset (NaN or None), so each kind of metric fills in only what it
/// measures.
fn base_result(def: &MetricDef, n: usize, a: f64, b: f64, delta: f64) -> MetricResult {
    MetricResult {
        unit: def.unit,
        higher_is_better: def.higher_is_better,
        gated: def.gated,
        n_cases: n,
        a,
        b,
        delta,
        ci: [f64::NAN; 2],
        ci_method: "paired t",
        p: f64::NAN,
        p_conventional: f64::NAN,
        p_method: String::new(),
        p_t: None,
        p_holm: None,
        mde: f64::NAN,
        effect_of_interest: f64::NAN,
        power_at_effect_of_interest: None,
        verdict: String::new(),
        verdict_code: Code::Undefined,
        identical: false,
        ci_bootstrap: None,
        ratio: None,
        ratio_ci: None,
        wilson_a: None,
        wilson_b: None,
        variance: None,
    }
}

/// A mean over cases of a per-run value: the paired t interval, the
/// sign-flip test on the per-case differences, the MDE and power from their
/// standard deviation, and the variance split over the paired runs.
fn mean_metric(
    def: &MetricDef,
    f: fn(&Obs) -> f64,
    cases: &[&CasePair],
    s: &Settings,
    seed: u64,
) -> MetricResult {
    let n = cases.len();
    let case_mean = |runs: &[Obs]| inference::mean(&runs.iter().map(f).collect::<Vec<_>>());
    let a: Vec<f64> = cases.iter().map(|c| case_mean(&c.a)).collect();
    let b: Vec<f64> = cases.iter().map(|c| case_mean(&c.b)).collect();
    let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y - x).collect();
    let t = inference::paired_t(&d, 1.0 - ALPHA);
    let perm = inference::sign_flip(&d, s.mc_reps, seed);
    let mut r = base_result(def, n, inference::mean(&a), inference::mean(&b), t.mean);
    r.ci = t.ci;
    r.p_t = Some(t.p);
    set_p(&mut r, &perm);
    r.identical = n > 0 && d.iter().all(|x| *x == 0.0);
    r.mde = if r.identical {
        f64::NAN
    } else if t.sd == 0.0 {
        0.0
    } else {
        inference::mde(t.sd, n)
    };
    let interest = def.sesoi_for(if def.name == "latency" { 0.0 } else { r.a });
    r.power_at_effect_of_interest =
        Some(inference::power(interest, t.sd, n)).filter(|p| p.is_finite() && t.sd > 0.0);
    let paired_runs: Vec<Vec<f64>> = cases
        .iter()
        .map(|c| c.a.iter().zip(&c.b).map(|(x, y)| f(y) - f(x)).collect())
        .collect();
    r.variance = inference::decompose(&paired_runs);
    if def.name == "pass_rate" {
        set_wilson(&mut r, cases);
    }
    if def.name == "latency" {
        set_geometric(&mut r, &t, &d, s, seed);
    }
    r
}

/// The pass rate also shows each arm's own interval, clustered by case
/// because a case's runs are not independent.
fn set_wilson(r: &mut MetricResult, cases: &[&CasePair]) {
    let runs = |pick: fn(&CasePair) -> &Vec<Obs>| {
        cases
            .iter()
            .map(|c| pick(c).iter().map(|o| o.passed).collect())
            .collect::<Vec<Vec<bool>>>()
    };
    r.wilson_a = Some(inference::wilson_clustered(&runs(|c| &c.a)));
    r.wilson_b = Some(inference::wilson_clustered(&runs(|c| &c.b)));
}

/// Latency is compared on the log scale but shown as geometric means and a
/// ratio, with a bootstrap interval beside the t interval (the log
/// differences can still be skewed).
fn set_geometric(r: &mut MetricResult, t: &inference::PairedT, d: &[f64], s: &Settings, seed: u64) {
    r.a = r.a.exp();
    r.b = r.b.exp();
    r.ratio = Some(t.mean.exp());
    r.ratio_ci = Some([t.ci[0].exp(), t.ci[1].exp()]);
    let reps = crate::stats::case_bootstrap(d, s.bootstrap_reps, seed, |x| {
        x.iter().map(|v| **v).sum::<f64>() / x.len() as f64
    });
    let (lo, hi) = crate::stats::percentile_interval(&reps, 1.0 - ALPHA);
    r.ci_bootstrap = Some([lo, hi]);
}

/// Spend over verified tasks; NaN when nothing was verified.
fn ratio_of(x: &[f64; 2]) -> f64 {
    if x[1] > 0.0 {
        x[0] / x[1]
    } else {
        f64::NAN
    }
}

/// Total spend / total verified tasks per arm: a ratio of sums, so the
/// swap test on whole cases and a case bootstrap stand in for the t
/// machinery, and the MDE comes from the bootstrap standard error.
fn cost_per_verified_metric(
    def: &MetricDef,
    cases: &[&CasePair],
    s: &Settings,
    seed: u64,
) -> MetricResult {
    let n = cases.len();
    let sums = |runs: &[Obs]| {
        [
            runs.iter().map(|o| o.cost_usd).sum::<f64>(),
            runs.iter().map(|o| o.verified as f64).sum::<f64>(),
        ]
    };
    let a: Vec<[f64; 2]> = cases.iter().map(|c| sums(&c.a)).collect();
    let b: Vec<[f64; 2]> = cases.iter().map(|c| sums(&c.b)).collect();
    let total = |v: &[[f64; 2]]| v.iter().fold([0.0, 0.0], |s, x| [s[0] + x[0], s[1] + x[1]]);
    let (ra, rb) = (ratio_of(&total(&a)), ratio_of(&total(&b)));
    let mut r = base_result(def, n, ra, rb, rb - ra);
    r.identical = n > 0 && a == b;
    r.ci_method = "case bootstrap (percentile)";
    let tol = 1e-12 * (ra.abs() + rb.abs());
    let perm = inference::swap_test(
        &a,
        &b,
        |x, y| ratio_of(y) - ratio_of(x),
        tol,
        s.mc_reps,
        seed,
    );
    set_p(&mut r, &perm);
    let (deltas, ratios) = bootstrap_ratios(&a, &b, s.bootstrap_reps, seed);
    let (lo, hi) = crate::stats::percentile_interval(&deltas, 1.0 - ALPHA);
    r.ci = [lo, hi];
    r.ci_bootstrap = Some([lo, hi]);
    r.ratio = Some(rb / ra);
    let (lo, hi) = crate::stats::percentile_interval(&ratios, 1.0 - ALPHA);
    r.ratio_ci = Some([lo, hi]);
    // MDE from the bootstrap standard error (no closed form for a
    // ratio of sums), with the same t quantiles as the mean metrics.
    let finite: Vec<f64> = deltas.into_iter().filter(|x| x.is_finite()).collect();
    let se = inference::sample_var(&finite).sqrt();
    r.mde = if r.identical {
        f64::NAN
    } else if se == 0.0 {
        0.0
    } else {
        inference::mde_from_se(se, n as f64 - 1.0)
    };
    r
}

/// Case-bootstrap resamples of B - A and B / A of the ratio of sums: one
/// pass over the resamples yields both the difference and the ratio.
fn bootstrap_ratios(
    a: &[[f64; 2]],
    b: &[[f64; 2]],
    reps: usize,
    seed: u64,
) -> (Vec<f64>, Vec<f64>) {
    let idx: Vec<usize> = (0..a.len()).collect();
    let resampled = |i: &[&usize]| {
        let (mut x, mut y) = ([0.0; 2], [0.0; 2]);
        for &&k in i {
            for c in 0..2 {
                x[c] += a[k][c];
                y[c] += b[k][c];
            }
        }
        (ratio_of(&x), ratio_of(&y))
    };
    let ratios = std::cell::RefCell::new(Vec::with_capacity(reps));
    let deltas = crate::stats::case_bootstrap(&idx, reps, seed, |i| {
        let (x, y) = resampled(i);
        ratios.borrow_mut().push(y / x);
        y - x
    });
    (deltas, ratios.into_inner())
}

fn set_p(r: &mut MetricResult, perm: &Permutation) {
    r.p = perm.p;
    r.p_conventional = perm.p_conventional;
    r.p_method = format!(
        "paired permutation mid-p, {} ({} patterns)",
        perm.method, perm.resamples
    );
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CategoryResult {
    pub n_cases: usize,
    /// The pass-rate comparison, flattened here (it is what the guard reads).
    pub a: f64,
    pub b: f64,
    pub delta: f64,
    pub ci: [f64; 2],
    pub p: f64,
    pub p_holm: f64,
    pub mde: f64,
    pub verdict: String,
    pub wilson_a: Option<inference::ClusteredWilson>,
    pub wilson_b: Option<inference::ClusteredWilson>,
    /// Every metric, each with its Holm-adjusted p.
    pub metrics: BTreeMap<String, MetricResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Regression {
    /// "category_pass_rate", "adversarial_case" or "metric".
    pub kind: &'static str,
    pub subject: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaseRow {
    pub id: String,
    pub category: String,
    pub a_passed: String,
    pub b_passed: String,
    pub a_cost_usd: f64,
    pub b_cost_usd: f64,
    pub a_verified: f64,
    pub b_verified: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Analysis {
    pub verdict: String,
    /// Over the comparable cases only; the not-comparable ones are listed
    /// in `not_comparable`.
    pub comparability: Comparability,
    pub not_comparable: Vec<NotComparableCase>,
    /// When the comparison is not comparable: what the guard found among
    /// the comparable cases (information, not a verdict; `regressions` is
    /// empty then).
    pub regressions_among_comparable: Vec<Regression>,
    pub metrics: BTreeMap<String, MetricResult>,
    pub categories: BTreeMap<String, CategoryResult>,
    pub regressions: Vec<Regression>,
    pub n_cases: usize,
    pub runs_per_case: usize,
    pub seed: u64,
    pub monte_carlo_draws: usize,
    pub bootstrap_resamples: usize,
    pub cases: Vec<CaseRow>,
}

fn runs_passed(runs: &[Obs]) -> String {
    format!(
        "{}/{}",
        runs.iter().filter(|o| o.passed).count(),
        runs.len()
    )
}

/// The comparison over the comparable cases; a case with any case-run that
/// ended in the bench's machinery is left out of every statistic and of the
/// guard, and listed (see NOT_COMPARABLE_SHARE_MAX for when that voids the
/// verdict).
pub fn analyze(cases: &[CasePair], s: &Settings) -> Analysis {
    let (comparable, not_comparable) = split_comparable(cases);
    let comparability = comparability(cases.len(), &not_comparable);
    let mut a = analyze_comparable(&comparable, s);
    match (&comparability.comparable, &comparability.note) {
        (true, None) => {}
        (true, Some(note)) => a.verdict = format!("{}; {note}", a.verdict),
        (false, note) => {
            a.regressions_among_comparable = std::mem::take(&mut a.regressions);
            a.verdict = format!(
                "not comparable: {} (more than {:.0}% of the cases; no verdict)",
                note.as_deref().unwrap_or("no comparable case"),
                100.0 * NOT_COMPARABLE_SHARE_MAX
            );
        }
    }
    a.comparability = comparability;
    a.not_comparable = not_comparable;
    a
}

fn analyze_comparable(cases: &[CasePair], s: &Settings) -> Analysis {
    let all: Vec<&CasePair> = cases.iter().collect();
    let metrics: BTreeMap<String, MetricResult> = METRICS
        .iter()
        .map(|d| (d.name.to_string(), metric(d, &all, s, "all")))
        .collect();
    let categories = per_category(cases, s);
    let mut regressions = category_regressions(&categories);
    regressions.extend(adversarial_regressions(cases));
    regressions.extend(metric_regressions(&metrics));
    let verdict = overall_verdict(&metrics, &regressions);
    Analysis {
        verdict,
        comparability: comparability(cases.len(), &[]),
        not_comparable: vec![],
        regressions_among_comparable: vec![],
        metrics,
        categories,
        regressions,
        n_cases: cases.len(),
        runs_per_case: cases
            .iter()
            .map(|c| c.a.len().min(c.b.len()))
            .min()
            .unwrap_or(0),
        seed: s.seed,
        monte_carlo_draws: s.mc_reps,
        bootstrap_resamples: s.bootstrap_reps,
        cases: case_rows(cases),
    }
}

/// Every metric per category, categories in the suite's order, each
/// metric's p Holm-adjusted across the categories (several categories are
/// several tests of the one change).
fn per_category(cases: &[CasePair], s: &Settings) -> BTreeMap<String, CategoryResult> {
    let mut names: Vec<String> = cases.iter().map(|c| c.category.clone()).collect();
    names.sort_by_key(|c| {
        crate::suite::CATEGORIES
            .iter()
            .position(|k| k == c)
            .unwrap_or(usize::MAX)
    });
    names.dedup();
    let mut per_cat: Vec<(String, BTreeMap<String, MetricResult>)> = names
        .iter()
        .map(|cat| {
            let sub: Vec<&CasePair> = cases.iter().filter(|c| &c.category == cat).collect();
            (
                cat.clone(),
                METRICS
                    .iter()
                    .map(|d| (d.name.to_string(), metric(d, &sub, s, cat)))
                    .collect(),
            )
        })
        .collect();
    holm_across(&mut per_cat);
    per_cat
        .into_iter()
        .map(|(cat, m)| (cat, category_result(m)))
        .collect()
}

/// Per metric, the Holm adjustment across the categories, and the verdict
/// judged again on the adjusted p.
fn holm_across(per_cat: &mut [(String, BTreeMap<String, MetricResult>)]) {
    for d in &METRICS {
        let ps: Vec<f64> = per_cat.iter().map(|(_, m)| m[d.name].p).collect();
        for ((_, m), adj) in per_cat.iter_mut().zip(inference::holm(&ps)) {
            let Some(r) = m.get_mut(d.name) else { continue };
            r.p_holm = Some(adj);
            let (code, text) = verdict(d, r, adj);
            r.verdict_code = code;
            r.verdict = if r.identical {
                text
            } else {
                format!("{text} (Holm)")
            };
        }
    }
}

/// A category's metrics, with its pass-rate comparison flattened on top
/// (what the guard and the table read).
fn category_result(m: BTreeMap<String, MetricResult>) -> CategoryResult {
    let pr = &m["pass_rate"];
    CategoryResult {
        n_cases: pr.n_cases,
        a: pr.a,
        b: pr.b,
        delta: pr.delta,
        ci: pr.ci,
        p: pr.p,
        p_holm: pr.p_holm.unwrap_or(f64::NAN),
        mde: pr.mde,
        verdict: pr.verdict.clone(),
        wilson_a: pr.wilson_a,
        wilson_b: pr.wilson_b,
        metrics: m,
    }
}

/// The guard's first rule: a category whose pass rate fell significantly
/// after Holm.
fn category_regressions(categories: &BTreeMap<String, CategoryResult>) -> Vec<Regression> {
    categories
        .iter()
        .filter(|(_, c)| c.delta < 0.0 && c.p_holm < ALPHA)
        .map(|(cat, c)| Regression {
            kind: "category_pass_rate",
            subject: cat.clone(),
            detail: format!(
                "{cat} pass rate {} -> {} ({}), Holm-adjusted p = {:.4}",
                pct(c.a),
                pct(c.b),
                METRICS[0].show_delta(c.delta, true),
                c.p_holm
            ),
        })
        .collect()
}

/// The guard's second rule: an adversarial case A passed every run of and
/// B failed any run of, whatever the statistics (one is a hole).
fn adversarial_regressions(cases: &[CasePair]) -> Vec<Regression> {
    let mut regressions = vec![];
    for c in cases.iter().filter(|c| c.category == "adversarial") {
        let a_all = !c.a.is_empty() && c.a.iter().all(|o| o.passed);
        if a_all && c.b.iter().any(|o| !o.passed) {
            let why =
                c.b.iter()
                    .find(|o| !o.passed)
                    .and_then(|o| o.failure.clone())
                    .unwrap_or_default();
            regressions.push(Regression {
                kind: "adversarial_case",
                subject: c.id.clone(),
                detail: format!(
                    "passed {} A runs, {} B runs; first B failure: {why}",
                    runs_passed(&c.a),
                    runs_passed(&c.b)
                ),
            });
        }
    }
    regressions
}

/// The guard's third rule: a gated metric on which B is significantly worse.
fn metric_regressions(metrics: &BTreeMap<String, MetricResult>) -> Vec<Regression> {
    METRICS
        .iter()
        .filter(|d| d.gated)
        .filter(|d| metrics[d.name].verdict_code == Code::Worse)
        .map(|d| {
            let m = &metrics[d.name];
            Regression {
                kind: "metric",
                subject: d.name.into(),
                detail: format!(
                    "{} {} -> {} ({}), p = {:.4}",
                    d.label,
                    d.show_value(m.a),
                    d.show_value(m.b),
                    d.show_delta(m.delta, true),
                    m.p
                ),
            }
        })
        .collect()
}

/// The one-line verdict: regressions first, then a better gated metric,
/// then whatever kept the comparison from a clean "no difference".
fn overall_verdict(metrics: &BTreeMap<String, MetricResult>, regressions: &[Regression]) -> String {
    let gated: Vec<(&MetricDef, &MetricResult)> = METRICS
        .iter()
        .filter(|d| d.gated)
        .map(|d| (d, &metrics[d.name]))
        .collect();
    let names_where = |code: Code| {
        gated
            .iter()
            .filter(|(_, m)| m.verdict_code == code)
            .map(|(d, _)| d.label)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !regressions.is_empty() {
        let better = names_where(Code::Better);
        format!(
            "B regresses ({} regression(s)){}",
            regressions.len(),
            if better.is_empty() {
                String::new()
            } else {
                format!(" although B is better on {better}")
            }
        )
    } else if gated.iter().any(|(_, m)| m.verdict_code == Code::Better) {
        format!(
            "B better on {}, not worse anywhere",
            names_where(Code::Better)
        )
    } else if gated.iter().any(|(_, m)| {
        matches!(
            m.verdict_code,
            Code::Underpowered | Code::Mixed | Code::Undefined
        )
    }) {
        let parts: Vec<String> = [
            (Code::Underpowered, "underpowered on"),
            (Code::Mixed, "test and interval disagree on"),
            (Code::Undefined, "undefined"),
        ]
        .iter()
        .map(|(c, what)| (names_where(*c), what))
        .filter(|(names, _)| !names.is_empty())
        .map(|(names, what)| format!("{what} {names}"))
        .collect();
        format!("inconclusive: nothing significant; {}", parts.join("; "))
    } else if gated.iter().all(|(_, m)| m.identical) {
        "no difference: every case agrees between the arms on every gated metric".into()
    } else {
        "no significant difference on any gated metric (each MDE within its effect of interest)"
            .into()
    }
}

/// One row per case for the table: runs passed, mean cost and mean
/// verified tasks in each arm.
fn case_rows(cases: &[CasePair]) -> Vec<CaseRow> {
    cases
        .iter()
        .map(|c| {
            let m = |runs: &[Obs], f: fn(&Obs) -> f64| {
                inference::mean(&runs.iter().map(f).collect::<Vec<_>>())
            };
            CaseRow {
                id: c.id.clone(),
                category: c.category.clone(),
                a_passed: runs_passed(&c.a),
                b_passed: runs_passed(&c.b),
                a_cost_usd: m(&c.a, cost_value),
                b_cost_usd: m(&c.b, cost_value),
                a_verified: m(&c.a, |o| o.verified as f64),
                b_verified: m(&c.b, |o| o.verified as f64),
            }
        })
        .collect()
}

fn pct(x: f64) -> String {
    METRICS[0].show_value(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(passed: bool, cost: f64, verified: u64) -> Obs {
        Obs {
            live_calls: None,
            passed,
            score: if passed { 1.0 } else { 0.4 },
            cost_usd: cost,
            latency_ms: 100,
            verified,
            failure: (!passed).then(|| "ending: expected GOAL_MET".into()),
            fault: None,
        }
    }
    fn pair(id: &str, cat: &str, a: Vec<Obs>, b: Vec<Obs>) -> CasePair {
        CasePair {
            id: id.into(),
            category: cat.into(),
            a,
            b,
        }
    }

    #[test]
    fn identical_arms_say_no_difference_and_no_regression() {
        let cases: Vec<CasePair> = (0..8)
            .map(|i| {
                let runs = vec![
                    obs(i % 3 != 0, 0.1 + i as f64 * 0.01, 2),
                    obs(true, 0.12, 2),
                    obs(i % 2 == 0, 0.09, 1),
                ];
                pair(
                    &format!("c{i}"),
                    if i < 4 { "happy" } else { "adversarial" },
                    runs.clone(),
                    runs,
                )
            })
            .collect();
        let a = analyze(&cases, &Settings::default());
        assert!(a.regressions.is_empty());
        for (name, m) in &a.metrics {
            assert_eq!(m.p, 1.0, "{name}");
            assert_eq!(m.delta, 0.0, "{name}");
            assert_eq!(m.verdict_code, Code::NoDifference, "{name}: {}", m.verdict);
            assert!(m.verdict.starts_with("identical"), "{name}: {}", m.verdict);
        }
        assert!(a.verdict.starts_with("no difference"), "{}", a.verdict);
    }

    #[test]
    fn an_adversarial_flip_fails_the_guard_even_when_the_headline_improves() {
        let mut cases: Vec<CasePair> = (0..12)
            .map(|i| {
                pair(
                    &format!("h{i}"),
                    "happy",
                    vec![obs(false, 0.2, 1); 3],
                    vec![obs(true, 0.1, 2); 3],
                )
            })
            .collect();
        cases.push(pair(
            "adv",
            "adversarial",
            vec![obs(true, 0.1, 1); 3],
            vec![obs(true, 0.1, 1), obs(false, 0.1, 0), obs(true, 0.1, 1)],
        ));
        let a = analyze(&cases, &Settings::default());
        assert_eq!(a.metrics["pass_rate"].verdict_code, Code::Better);
        assert_eq!(a.regressions.len(), 1, "{:?}", a.regressions);
        assert_eq!(a.regressions[0].kind, "adversarial_case");
        assert!(a.verdict.starts_with("B regresses"), "{}", a.verdict);
    }

    #[test]
    fn a_significant_category_drop_is_a_regression_after_holm() {
        // 10 edge cases all drop; 10 happy cases all improve more.
        let mut cases: Vec<CasePair> = (0..10)
            .map(|i| {
                pair(
                    &format!("e{i}"),
                    "edge",
                    vec![obs(true, 0.1, 1); 3],
                    vec![obs(false, 0.1, 0); 3],
                )
            })
            .collect();
        cases.extend((0..10).map(|i| {
            pair(
                &format!("h{i}"),
                "happy",
                vec![obs(false, 0.1, 0); 3],
                vec![obs(true, 0.1, 1); 3],
            )
        }));
        let a = analyze(&cases, &Settings::default());
        let edge = &a.categories["edge"];
        assert!(
            edge.p_holm < ALPHA && edge.p_holm >= edge.p,
            "{} {}",
            edge.p,
            edge.p_holm
        );
        assert!(
            a.regressions
                .iter()
                .any(|r| r.kind == "category_pass_rate" && r.subject == "edge"),
            "{:?}",
            a.regressions
        );
        assert!(!a.regressions.iter().any(|r| r.subject == "happy"));
    }

    #[test]
    fn small_or_noisy_comparisons_are_underpowered_not_no_difference() {
        let cases: Vec<CasePair> = (0..4)
            .map(|i| {
                pair(
                    &format!("c{i}"),
                    "happy",
                    vec![obs(i % 2 == 0, 0.1, 1); 3],
                    vec![obs(i % 2 == 1, 0.1, 1); 3],
                )
            })
            .collect();
        let a = analyze(&cases, &Settings::default());
        let m = &a.metrics["pass_rate"];
        assert_eq!(m.verdict_code, Code::Underpowered, "{}", m.verdict);
        assert!(!m.verdict.contains("no difference"));
        assert!(a.verdict.starts_with("inconclusive"), "{}", a.verdict);
    }

    #[test]
    fn cost_per_verified_task_is_a_ratio_of_sums_with_a_bootstrap_interval() {
        let cases: Vec<CasePair> = (0..10)
            .map(|i| {
                pair(
                    &format!("c{i}"),
                    "happy",
                    vec![obs(true, 0.20 + 0.01 * i as f64, 2); 3],
                    vec![obs(true, 0.15 + 0.01 * i as f64, 2); 3],
                )
            })
            .collect();
        let a = analyze(&cases, &Settings::default());
        let m = &a.metrics["cost_per_verified_task"];
        let want_a = (0..10).map(|i| 0.20 + 0.01 * i as f64).sum::<f64>() / 20.0;
        assert!((m.a - want_a).abs() < 1e-12);
        assert!(m.delta < 0.0 && m.ci[1] < 0.0, "{:?}", m.ci);
        assert_eq!(m.verdict_code, Code::Better);
        assert!(m.ratio.unwrap() < 1.0);
    }

    #[test]
    fn undefined_when_an_arm_verifies_nothing() {
        let cases: Vec<CasePair> = (0..6)
            .map(|i| {
                pair(
                    &format!("c{i}"),
                    "happy",
                    vec![obs(false, 0.1, 0); 3],
                    vec![obs(false, 0.1, 0); 3],
                )
            })
            .collect();
        let a = analyze(&cases, &Settings::default());
        assert_eq!(
            a.metrics["cost_per_verified_task"].verdict_code,
            Code::Undefined
        );
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"cost_per_verified_task\""));
    }

    fn missed() -> Obs {
        Obs {
            fault: Some(BenchFault::RecordingMiss {
                call_key: Some("execute/t1/a1/0".into()),
                detail: "no recording".into(),
            }),
            ..obs(false, 0.1, 0)
        }
    }

    /// 20 happy cases where B is cheaper, plus `k` adversarial cases that
    /// pass every A run and whose B runs all miss the replay: before the
    /// fix each was an "adversarial_case" regression.
    fn with_misses(k: usize) -> Vec<CasePair> {
        let mut cases: Vec<CasePair> = (0..20)
            .map(|i| {
                pair(
                    &format!("h{i}"),
                    "happy",
                    vec![obs(true, 0.2, 1); 3],
                    vec![obs(true, 0.1, 1); 3],
                )
            })
            .collect();
        cases.extend((0..k).map(|i| {
            pair(
                &format!("adv{i}"),
                "adversarial",
                vec![obs(true, 0.1, 1); 3],
                vec![missed(); 3],
            )
        }));
        cases
    }

    #[test]
    fn a_replay_miss_is_never_a_regression_and_leaves_every_statistic() {
        // 1 of 21 (4.8%): at most the share, so the verdict on the 20 stands
        // and says one case was left out.
        let a = analyze(&with_misses(1), &Settings::default());
        assert!(a.comparability.comparable, "{:?}", a.comparability);
        assert!(a.regressions.is_empty(), "{:?}", a.regressions);
        assert_eq!(a.n_cases, 20);
        assert_eq!(a.metrics["pass_rate"].n_cases, 20);
        assert!(!a.categories.contains_key("adversarial"));
        assert_eq!(a.not_comparable.len(), 1);
        assert_eq!(a.not_comparable[0].runs.len(), 3);
        assert!(a.not_comparable[0].runs.iter().all(|r| r.arm == Arm::B));
        assert!(
            a.verdict.starts_with("B better on cost per case-run"),
            "{}",
            a.verdict
        );
        assert!(
            a.verdict.ends_with("; 1 of 21 cases not comparable: record them live with --endpoint, or use a suite recorded for both arms"),
            "{}",
            a.verdict
        );
        // 2 of 22 (9.1%): above the share, no verdict at all.
        let a = analyze(&with_misses(2), &Settings::default());
        assert!(!a.comparability.comparable);
        assert!(
            a.verdict
                .starts_with("not comparable: 2 of 22 cases not comparable"),
            "{}",
            a.verdict
        );
        assert!(
            !a.verdict.contains("regress") && !a.verdict.contains("better"),
            "{}",
            a.verdict
        );
        assert!(a.regressions.is_empty());
    }

    #[test]
    fn the_share_boundary_is_inclusive_and_a_miss_in_either_arm_counts() {
        // 1 of 20 is exactly 5%: still comparable.
        let mut cases = with_misses(0);
        cases.truncate(19);
        let mut one = pair(
            "x",
            "edge",
            vec![obs(true, 0.1, 1); 3],
            vec![obs(true, 0.1, 1); 3],
        );
        one.a[2] = missed(); // arm A's last run only
        cases.push(one);
        let a = analyze(&cases, &Settings::default());
        assert_eq!(a.comparability.n_not_comparable, 1);
        assert!(a.comparability.comparable, "{:?}", a.comparability);
        assert_eq!(a.not_comparable[0].runs[0].arm, Arm::A);
        assert_eq!(a.not_comparable[0].runs[0].run, 2);
        // Every case faulted: nothing to compare.
        let all: Vec<CasePair> = (0..4)
            .map(|i| {
                pair(
                    &format!("m{i}"),
                    "happy",
                    vec![missed(); 2],
                    vec![missed(); 2],
                )
            })
            .collect();
        let a = analyze(&all, &Settings::default());
        assert!(!a.comparability.comparable);
        assert!(a.verdict.starts_with("not comparable"), "{}", a.verdict);
    }

    #[test]
    fn a_real_regression_among_comparable_cases_is_kept_but_no_verdict_when_too_many_miss() {
        let mut cases = with_misses(3);
        cases.push(pair(
            "adv-real",
            "adversarial",
            vec![obs(true, 0.1, 1); 3],
            vec![obs(true, 0.1, 1), obs(false, 0.1, 0), obs(true, 0.1, 1)],
        ));
        let a = analyze(&cases, &Settings::default());
        assert!(!a.comparability.comparable);
        assert!(a.regressions.is_empty());
        assert_eq!(
            a.regressions_among_comparable.len(),
            1,
            "{:?}",
            a.regressions_among_comparable
        );
        assert_eq!(a.regressions_among_comparable[0].subject, "adv-real");
        // With the misses gone the same case is a regression again.
        let cases: Vec<CasePair> = cases
            .into_iter()
            .filter(|c| !c.id.starts_with("adv") || c.id == "adv-real")
            .collect();
        let a = analyze(&cases, &Settings::default());
        assert_eq!(a.regressions.len(), 1);
        assert!(a.verdict.starts_with("B regresses"), "{}", a.verdict);
    }

    #[test]
    fn the_share_max_is_the_pass_rate_effect_of_interest() {
        assert_eq!(METRICS[0].name, "pass_rate");
        assert_eq!(METRICS[0].sesoi, Sesoi::Absolute(NOT_COMPARABLE_SHARE_MAX));
    }
}
