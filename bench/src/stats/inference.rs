//! The inference behind `bench ab`, after Evan Miller, "Adding Error Bars to
//! Evals" (arXiv 2411.00640): the case is the unit; runs are averaged within
//! a case first; arms are compared on per-case paired differences.
//!
//! statrs supplies the distributions and special functions (Student's t for
//! the interval and its p-value, the incomplete beta and log-gamma under the
//! noncentral t, mean and variance). What statrs lacks is written here by
//! hand and says so: the paired swap / sign-flip permutation test, Holm's
//! step-down adjustment, the noncentral t CDF, power and the minimum
//! detectable effect, the clustered Wilson interval and the variance
//! decomposition. Every one is checked against SciPy / statsmodels reference
//! values (bench/tests/fixtures/ab/make_fixtures.py -> reference.json).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::Statistics;

/// Two-sided significance level of every test and interval (95%).
pub const ALPHA: f64 = 0.05;
/// Power the minimum detectable effect is computed for.
pub const POWER: f64 = 0.80;
/// Up to this many cases the permutation distribution is enumerated exactly
/// (2^20 = 1M sign patterns, well under a second); above it, Monte Carlo.
pub const EXACT_MAX_CASES: usize = 20;

/// Mean; NaN when empty (statrs).
pub fn mean(x: &[f64]) -> f64 {
    x.iter().mean()
}

/// Sample variance, n - 1 in the denominator; NaN below two values (statrs).
pub fn sample_var(x: &[f64]) -> f64 {
    x.iter().variance()
}

fn students_t(df: f64) -> Option<StudentsT> {
    if !df.is_finite() || df <= 0.0 {
        return None;
    }
    StudentsT::new(0.0, 1.0, df).ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedT {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub se: f64,
    pub df: f64,
    pub t: f64,
    pub p: f64,
    pub ci: [f64; 2],
}

/// Paired t on per-case differences `d` (B - A): the mean, its standard
/// error, the two-sided p and the `level` interval. Zero spread is handled
/// without dividing by zero: identical arms give p = 1 and the interval
/// [0, 0]; a constant non-zero shift gives p = 0 and a point interval.
pub fn paired_t(d: &[f64], level: f64) -> PairedT {
    let n = d.len();
    let m = mean(d);
    let sd = sample_var(d).sqrt();
    let df = n as f64 - 1.0;
    let nan = PairedT {
        n,
        mean: m,
        sd,
        se: f64::NAN,
        df,
        t: f64::NAN,
        p: f64::NAN,
        ci: [f64::NAN, f64::NAN],
    };
    let Some(dist) = students_t(df) else {
        return nan;
    };
    let se = sd / (n as f64).sqrt();
    if se == 0.0 {
        let (t, p) = if m == 0.0 {
            (0.0, 1.0)
        } else {
            (f64::INFINITY.copysign(m), 0.0)
        };
        return PairedT {
            se,
            t,
            p,
            ci: [m, m],
            ..nan
        };
    }
    let t = m / se;
    let p = (2.0 * dist.sf(t.abs())).min(1.0);
    let q = dist.inverse_cdf(1.0 - (1.0 - level) / 2.0);
    PairedT {
        se,
        t,
        p,
        ci: [m - q * se, m + q * se],
        ..nan
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Permutation {
    /// Two-sided mid-p: P(|T*| > |t|) + P(|T*| = |t|) / 2. What verdicts use.
    pub p: f64,
    /// The conventional P(|T*| >= |t|), what SciPy's permutation_test returns.
    pub p_conventional: f64,
    /// "exact" or "monte carlo".
    pub method: &'static str,
    /// Sign patterns enumerated (exact) or drawn (Monte Carlo).
    pub resamples: u64,
}

/// Paired swap permutation test (statrs has none; written by hand). Case i
/// adds `a[i]` to arm A's sums and `b[i]` to arm B's; under the null
/// hypothesis the two arms are exchangeable within each case, so the null
/// distribution swaps them case by case. `stat(sum_a, sum_b)` is the test
/// statistic, two-sided. For a mean difference (K = 1, a = 0, b = d) this is
/// the sign-flip test.
///
/// Exact up to EXACT_MAX_CASES cases: every one of the 2^m swap patterns of
/// the m cases whose two sides differ (swapping an identical pair changes
/// nothing, so leaving them out gives the same distribution). Above that,
/// `mc_reps` random patterns from a ChaCha8 stream seeded with `seed`, the
/// observed pattern counted as one of them (Phipson & Smyth 2010: a Monte
/// Carlo p is never 0).
///
/// Why mid-p: per-case pass shares are multiples of 1/runs, so the
/// permutation distribution is lumpy and the conventional p (ties count in
/// full) is conservative: in the A/A simulation of a 12-case suite it calls
/// 1.8% of comparisons significant at alpha = 0.05 instead of 5%, which
/// costs power exactly where suites are small (categories). Counting ties
/// half (Lancaster's mid-p) brings that to 4.3% and leaves continuous
/// metrics, which have no ties, as they were; both are reported. When no
/// case differs at all the arms agree exactly and p = 1.
///
/// `abs_tol` absorbs floating-point noise when a permuted statistic equals
/// the observed one in exact arithmetic (such values are ties).
pub fn swap_test<const K: usize>(
    a: &[[f64; K]],
    b: &[[f64; K]],
    stat: impl Fn(&[f64; K], &[f64; K]) -> f64,
    abs_tol: f64,
    mc_reps: usize,
    seed: u64,
) -> Permutation {
    let n = a.len().min(b.len());
    let mut sa = [0.0; K];
    let mut sb = [0.0; K];
    for i in 0..n {
        for k in 0..K {
            sa[k] += a[i][k];
            sb[k] += b[i][k];
        }
    }
    let obs = stat(&sa, &sb);
    if !obs.is_finite() {
        return Permutation {
            p: f64::NAN,
            p_conventional: f64::NAN,
            method: "undefined",
            resamples: 0,
        };
    }
    let differing: Vec<usize> = (0..n).filter(|&i| a[i] != b[i]).collect();
    if differing.is_empty() {
        return Permutation {
            p: 1.0,
            p_conventional: 1.0,
            method: "exact",
            resamples: 1,
        };
    }
    let mut tally = Tally::new(obs, abs_tol);
    let swaps = Swaps {
        a,
        b,
        differing: &differing,
        sums: (sa, sb),
    };
    let (method, total) = if n <= EXACT_MAX_CASES {
        ("exact", swaps.exact(&stat, &mut tally))
    } else {
        let drawn = swaps.monte_carlo(&stat, &mut tally, mc_reps, seed);
        ("monte carlo", drawn)
    };
    let [more, ties] = tally.count;
    let t = total as f64;
    Permutation {
        p: (more as f64 + 0.5 * ties as f64) / t,
        p_conventional: (more + ties) as f64 / t,
        method,
        resamples: total,
    }
}

/// [more extreme, tie] counts of the permuted statistics; a value within
/// the band around |obs| is a tie (floating-point noise on an exact tie).
struct Tally {
    lo: f64,
    hi: f64,
    count: [u64; 2],
}

impl Tally {
    fn new(obs: f64, abs_tol: f64) -> Tally {
        Tally {
            lo: obs.abs() * (1.0 - 1e-9) - abs_tol,
            hi: obs.abs() * (1.0 + 1e-9) + abs_tol,
            // the observed pattern is a tie with itself
            count: [0, 1],
        }
    }

    fn add(&mut self, v: f64) {
        let v = v.abs();
        if v > self.hi {
            self.count[0] += 1;
        } else if v >= self.lo {
            self.count[1] += 1;
        }
    }
}

/// The cases whose two sides differ, and the arms' observed sums: what
/// every swap pattern starts from.
struct Swaps<'a, const K: usize> {
    a: &'a [[f64; K]],
    b: &'a [[f64; K]],
    differing: &'a [usize],
    sums: ([f64; K], [f64; K]),
}

impl<const K: usize> Swaps<'_, K> {
    /// Every pattern but the observed one (already tallied), in Gray code
    /// order: pattern k differs from k-1 in one case, so each step swaps one
    /// case's contribution instead of re-summing all of them. Returns the
    /// number of patterns, the observed one included.
    fn exact(&self, stat: &impl Fn(&[f64; K], &[f64; K]) -> f64, tally: &mut Tally) -> u64 {
        let m = self.differing.len();
        let mut swapped = vec![false; m];
        let (mut xa, mut xb) = self.sums;
        let total: u64 = 1u64 << m;
        for k in 1..total {
            let j = k.trailing_zeros() as usize;
            let i = self.differing[j];
            let sign = if swapped[j] { -1.0 } else { 1.0 };
            swapped[j] = !swapped[j];
            for c in 0..K {
                let delta = sign * (self.b[i][c] - self.a[i][c]);
                xa[c] += delta;
                xb[c] -= delta;
            }
            tally.add(stat(&xa, &xb));
        }
        total
    }

    /// `mc_reps` random patterns, 64 cases' coin flips per draw of the
    /// seeded stream. Returns the draws plus the observed pattern.
    fn monte_carlo(
        &self,
        stat: &impl Fn(&[f64; K], &[f64; K]) -> f64,
        tally: &mut Tally,
        mc_reps: usize,
        seed: u64,
    ) -> u64 {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..mc_reps {
            let (mut xa, mut xb) = self.sums;
            let mut bits = 0u64;
            for (j, &i) in self.differing.iter().enumerate() {
                if j % 64 == 0 {
                    bits = rng.gen();
                }
                if bits & 1 == 1 {
                    for c in 0..K {
                        let delta = self.b[i][c] - self.a[i][c];
                        xa[c] += delta;
                        xb[c] -= delta;
                    }
                }
                bits >>= 1;
            }
            tally.add(stat(&xa, &xb));
        }
        mc_reps as u64 + 1
    }
}

/// Sign-flip permutation test of the mean of per-case differences `d`.
pub fn sign_flip(d: &[f64], mc_reps: usize, seed: u64) -> Permutation {
    let a: Vec<[f64; 1]> = vec![[0.0]; d.len()];
    let b: Vec<[f64; 1]> = d.iter().map(|x| [*x]).collect();
    let scale = d.iter().map(|x| x.abs()).sum::<f64>() / d.len().max(1) as f64;
    let n = d.len().max(1) as f64;
    swap_test(
        &a,
        &b,
        |sa, sb| (sb[0] - sa[0]) / n,
        1e-12 * scale,
        mc_reps,
        seed,
    )
}

/// Smallest two-sided conventional p an exact sign-flip test can reach with
/// n cases: the observed pattern and its mirror out of 2^n. At or above
/// ALPHA (n <= 5) the comparison cannot show anything, whatever the data
/// (the mid-p floor, half of it, would let 5 cases through on a tie-free
/// lucky draw: the verdict uses this stricter floor).
pub fn min_attainable_p(n: usize) -> f64 {
    if n >= 64 {
        return 0.0;
    }
    (2.0 / (1u64 << n) as f64).min(1.0)
}

/// Holm's step-down adjustment (statrs has none; written by hand): sort the
/// m p-values, multiply the j-th smallest by (m - j), carry the running
/// maximum, cap at 1. Non-finite p-values are left out of m and stay NaN.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_finite()).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = idx.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// CDF of the noncentral t distribution, P(T <= t) for `df` degrees of
/// freedom and noncentrality `ncp`. statrs has only the central t; this is
/// Lenth's algorithm AS 243 (Applied Statistics 38, 1989), the one R's `pnt`
/// uses, on statrs's regularized incomplete beta and log-gamma functions.
/// Accurate to ~1e-12 for the moderate noncentralities a power analysis
/// meets (|ncp| < 37).
pub fn noncentral_t_cdf(t: f64, df: f64, ncp: f64) -> f64 {
    use statrs::function::{beta::beta_reg, gamma::ln_gamma};
    if df.is_nan() || df <= 0.0 || !t.is_finite() || !ncp.is_finite() {
        return f64::NAN;
    }
    let (tt, del, lower) = if t >= 0.0 {
        (t, ncp, true)
    } else {
        (-t, -ncp, false)
    };
    let normal_lower = |z: f64| 0.5 * statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2);
    let x = tt * tt / (tt * tt + df);
    let mut tnc = 0.0;
    if x > 0.0 {
        let lambda = del * del;
        let mut p = 0.5 * (-0.5 * lambda).exp();
        let mut q = (2.0 / std::f64::consts::PI).sqrt() * p * del;
        let mut s = 0.5 - p;
        let mut a = 0.5;
        let b = 0.5 * df;
        let rxb = (1.0 - x).powf(b);
        let albeta = 0.5 * std::f64::consts::PI.ln() + ln_gamma(b) - ln_gamma(0.5 + b);
        let mut xodd = beta_reg(a, b, x);
        let mut godd = 2.0 * rxb * (a * x.ln() - albeta).exp();
        let bx = b * x;
        let mut xeven = if bx < f64::EPSILON { bx } else { 1.0 - rxb };
        let mut geven = bx * rxb;
        tnc = p * xodd + q * xeven;
        for it in 1..=1000 {
            a += 1.0;
            xodd -= godd;
            xeven -= geven;
            godd *= x * (a + b - 1.0) / a;
            geven *= x * (a + b - 0.5) / (a + 0.5);
            p *= lambda / (2.0 * it as f64);
            q *= lambda / (2.0 * it as f64 + 1.0);
            tnc += p * xodd + q * xeven;
            s -= p;
            if s <= 0.0 && it > 1 {
                break;
            }
            if (2.0 * s * (xodd - godd)).abs() < 1e-12 && it > 1 {
                break;
            }
        }
    }
    tnc += normal_lower(-del);
    let tnc = tnc.clamp(0.0, 1.0);
    if lower {
        tnc
    } else {
        1.0 - tnc
    }
}

/// Power of the two-sided paired t test at ALPHA for a true mean
/// difference `effect`, per-case standard deviation `sd`, n cases: both
/// tails of the noncentral t (statrs has no power analysis; written by hand
/// on `noncentral_t_cdf`). Checked against statsmodels' TTestPower.
pub fn power(effect: f64, sd: f64, n: usize) -> f64 {
    let df = n as f64 - 1.0;
    let Some(dist) = students_t(df) else {
        return f64::NAN;
    };
    let ncp = effect.abs() * (n as f64).sqrt() / sd;
    if !ncp.is_finite() {
        return if effect == 0.0 { ALPHA } else { 1.0 };
    }
    let crit = dist.inverse_cdf(1.0 - ALPHA / 2.0);
    (1.0 - noncentral_t_cdf(crit, df, ncp)) + noncentral_t_cdf(-crit, df, ncp)
}

/// Minimum detectable effect at ALPHA (two-sided) with POWER, for a standard
/// error `se` with `df` degrees of freedom: the effect whose noncentral-t
/// power is exactly POWER, solved by bisection on the noncentrality (statrs
/// has no power analysis; written by hand). Matches statsmodels'
/// TTestPower.solve_power to 1e-6. The familiar closed form
/// (t_{1-alpha/2} + t_{power}) * se starts the bracket.
pub fn mde_from_se(se: f64, df: f64) -> f64 {
    if df.is_nan() || df < 1.0 || !se.is_finite() {
        return f64::NAN;
    }
    if se == 0.0 {
        return 0.0;
    }
    let Some(dist) = students_t(df) else {
        return f64::NAN;
    };
    let crit = dist.inverse_cdf(1.0 - ALPHA / 2.0);
    let pw = |ncp: f64| (1.0 - noncentral_t_cdf(crit, df, ncp)) + noncentral_t_cdf(-crit, df, ncp);
    let guess = crit + dist.inverse_cdf(POWER);
    let (mut lo, mut hi) = (0.0, guess * 2.0 + 1.0);
    while pw(hi) < POWER && hi < 1e6 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if pw(mid) < POWER {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo < 1e-12 * hi {
            break;
        }
    }
    0.5 * (lo + hi) * se
}

/// MDE for n cases whose per-case differences have standard deviation `sd`.
pub fn mde(sd: f64, n: usize) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    mde_from_se(sd / (n as f64).sqrt(), n as f64 - 1.0)
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ClusteredWilson {
    pub p: f64,
    pub lo: f64,
    pub hi: f64,
    /// Intra-case correlation of run outcomes (one-way ANOVA estimator, clamped to [0, 1]).
    pub icc: f64,
    /// Effective number of independent trials: runs / (1 + (K - 1) ICC).
    pub n_eff: u64,
    pub k_eff: u64,
}

/// Wilson 95% interval for a pass rate measured as K runs of each of n cases
/// (statrs has no Wilson interval; written by hand around the existing
/// `crate::stats::wilson`). Runs of one case are correlated, so counting
/// nK independent trials would overstate precision and counting n cases
/// would throw information away. The Kish design effect 1 + (K - 1) ICC
/// gives the effective sample size between the two; it is floored to an
/// integer and the successes rounded, then the ordinary Wilson interval
/// applies. At the two extremes this is exact: ICC = 0 is Wilson on runs,
/// ICC = 1 (every case passes all or none of its runs) is Wilson on cases.
/// No variation at all leaves the ICC undefined: count cases (conservative).
pub fn wilson_clustered(runs: &[Vec<bool>]) -> ClusteredWilson {
    let n = runs.len();
    let k = runs.iter().map(Vec::len).min().unwrap_or(0);
    let total: usize = runs.iter().map(|r| r.len()).sum();
    let passed: usize = runs.iter().map(|r| r.iter().filter(|x| **x).count()).sum();
    if n == 0 || total == 0 {
        return ClusteredWilson {
            p: f64::NAN,
            lo: 0.0,
            hi: 1.0,
            icc: f64::NAN,
            n_eff: 0,
            k_eff: 0,
        };
    }
    let p = passed as f64 / total as f64;
    let equal = runs.iter().all(|r| r.len() == k);
    let icc = if k < 2 || n < 2 || !equal {
        1.0 // one run per case, or ragged runs: the case is the only safe unit
    } else {
        let kf = k as f64;
        let means: Vec<f64> = runs
            .iter()
            .map(|r| r.iter().filter(|x| **x).count() as f64 / kf)
            .collect();
        let msb = kf * means.iter().map(|m| (m - p) * (m - p)).sum::<f64>() / (n - 1) as f64;
        let ssw: f64 = runs
            .iter()
            .zip(&means)
            .map(|(r, m)| r.iter().map(|x| (*x as u8 as f64 - m).powi(2)).sum::<f64>())
            .sum();
        let msw = ssw / (n as f64 * (kf - 1.0));
        let denom = msb + (kf - 1.0) * msw;
        if denom == 0.0 {
            1.0
        } else {
            ((msb - msw) / denom).clamp(0.0, 1.0)
        }
    };
    let per_case = total as f64 / n as f64;
    let deff = 1.0 + (per_case - 1.0) * icc;
    let n_eff = ((total as f64 / deff) + 1e-9).floor().max(1.0) as u64;
    let k_eff = (p * n_eff as f64).round() as u64;
    let (lo, hi) = crate::stats::wilson(k_eff, n_eff, crate::stats::Z95);
    ClusteredWilson {
        p,
        lo,
        hi,
        icc,
        n_eff,
        k_eff,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VarianceParts {
    pub n_cases: usize,
    pub runs_per_case: usize,
    /// Mean over cases of the run-to-run variance of the paired difference.
    pub within_case: f64,
    /// Variance of the true per-case differences: var(case means) - within/K, floored at 0.
    pub between_case: f64,
    /// Share of the variance of a case mean that comes from run noise.
    pub within_share: f64,
    /// Standard error of the mean difference now ...
    pub se: f64,
    /// ... with twice the runs per case (only the within part shrinks) ...
    pub se_double_runs: f64,
    /// ... and with twice the cases (everything shrinks by sqrt 2).
    pub se_double_cases: f64,
    pub advice: String,
}

/// Split the variance of the per-case mean difference into between-case and
/// within-case (run) parts, the one-way random-effects decomposition
/// (statrs has none; written by hand). `runs[i][r]` is run r's B - A
/// difference in case i (runs are paired by index: both arms replay the
/// same variant and fault seed for run r).
/// Var(case mean) = between + within / K, so doubling the runs only shrinks
/// the second term, doubling the cases shrinks both.
pub fn decompose(runs: &[Vec<f64>]) -> Option<VarianceParts> {
    let n = runs.len();
    let k = runs.iter().map(Vec::len).min()?;
    if n < 2 || k < 2 || runs.iter().any(|r| r.len() != k) {
        return None;
    }
    let kf = k as f64;
    let within = mean(&runs.iter().map(|r| sample_var(r)).collect::<Vec<_>>());
    let means: Vec<f64> = runs.iter().map(|r| mean(r)).collect();
    let means_var = sample_var(&means);
    let between = (means_var - within / kf).max(0.0);
    let nf = n as f64;
    let se = (means_var / nf).sqrt();
    let se_double_runs = ((between + within / (2.0 * kf)) / nf).sqrt();
    let se_double_cases = (means_var / (2.0 * nf)).sqrt();
    let within_share = if means_var > 0.0 {
        (within / kf / means_var).min(1.0)
    } else {
        f64::NAN
    };
    let advice = if se.is_nan() || se <= 0.0 {
        "no variance: the arms agree on every run".to_string()
    } else {
        let gain = |x: f64| 100.0 * (1.0 - x / se);
        let runs_gain = gain(se_double_runs);
        let cases_gain = gain(se_double_cases);
        if runs_gain >= 0.8 * cases_gain {
            format!("run noise dominates ({:.0}% of the variance): doubling runs per case narrows the interval by {runs_gain:.0}%, about as much as doubling the cases ({cases_gain:.0}%) and needs no new cases", 100.0 * within_share)
        } else {
            format!("cases differ more than runs do ({:.0}% of the variance is between cases): doubling the cases narrows the interval by {cases_gain:.0}%, doubling runs per case only by {runs_gain:.0}%", 100.0 * (1.0 - within_share))
        }
    };
    Some(VarianceParts {
        n_cases: n,
        runs_per_case: k,
        within_case: within,
        between_case: between,
        within_share,
        se,
        se_double_runs,
        se_double_cases,
        advice,
    })
}

#[cfg(test)]
mod tests {
    //! Every function above against the SciPy / statsmodels values in
    //! bench/tests/fixtures/ab/reference.json (made by make_fixtures.py
    //! beside it).
    use super::*;
    use serde_json::Value;

    fn reference() -> Value {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ab/reference.json");
        serde_json::from_slice(&std::fs::read(&p).expect("reference.json"))
            .expect("reference.json is JSON")
    }
    fn nums(v: &Value) -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    }
    fn close(got: f64, want: f64, tol: f64, what: &str) {
        assert!(
            (got - want).abs() <= tol,
            "{what}: got {got}, want {want} (tolerance {tol})"
        );
    }

    #[test]
    fn paired_t_matches_scipy_ttest_rel() {
        for case in reference()["paired_t"].as_array().unwrap() {
            let d = nums(&case["d"]);
            let r = paired_t(&d, 0.95);
            close(r.mean, case["mean"].as_f64().unwrap(), 1e-12, "mean");
            close(r.sd, case["sd"].as_f64().unwrap(), 1e-12, "sd");
            close(r.t, case["t"].as_f64().unwrap(), 1e-9, "t");
            close(r.p, case["p"].as_f64().unwrap(), 1e-9, "p");
            let ci = nums(&case["ci"]);
            close(r.ci[0], ci[0], 1e-9, "ci lo");
            close(r.ci[1], ci[1], 1e-9, "ci hi");
        }
    }

    #[test]
    fn paired_t_degenerate_inputs_are_values_not_panics() {
        let same = paired_t(&[0.0; 5], 0.95);
        assert_eq!((same.p, same.ci), (1.0, [0.0, 0.0]));
        let shift = paired_t(&[0.5; 5], 0.95);
        assert_eq!((shift.p, shift.ci), (0.0, [0.5, 0.5]));
        assert!(paired_t(&[1.0], 0.95).p.is_nan());
        assert!(paired_t(&[], 0.95).mean.is_nan());
    }

    #[test]
    fn exact_sign_flip_matches_scipy_permutation_test() {
        for case in reference()["sign_flip_exact"].as_array().unwrap() {
            let d = nums(&case["d"]);
            let r = sign_flip(&d, 0, 1);
            assert_eq!(r.method, "exact");
            close(
                r.p_conventional,
                case["p"].as_f64().unwrap(),
                1e-12,
                &format!("exact p for {d:?}"),
            );
            close(
                r.p,
                case["p_mid"].as_f64().unwrap(),
                1e-12,
                &format!("exact mid-p for {d:?}"),
            );
        }
    }

    #[test]
    fn monte_carlo_sign_flip_matches_scipy_within_tolerance() {
        // 30 cases: Monte Carlo. With 20,000 draws the standard error of p
        // near 0.02 is 0.001; the stated tolerance is 0.005 (5 SE).
        let r = reference();
        let case = &r["sign_flip_mc"];
        let d = nums(&case["d"]);
        let got = sign_flip(&d, 20_000, 2411_00640);
        assert_eq!(got.method, "monte carlo");
        close(
            got.p_conventional,
            case["p"].as_f64().unwrap(),
            0.005,
            "Monte Carlo p",
        );
        // no ties in continuous data: mid-p is the conventional p less half a draw
        close(
            got.p,
            got.p_conventional - 0.5 / 20_001.0,
            1e-12,
            "Monte Carlo mid-p",
        );
        // fixed seed: reproducible to the bit
        assert_eq!(got, sign_flip(&d, 20_000, 2411_00640));
    }

    #[test]
    fn monte_carlo_agrees_with_brute_force_enumeration_just_above_the_exact_limit() {
        // 21 distinct non-zero differences: one above EXACT_MAX_CASES, so
        // sign_flip draws; the reference enumerates all 2^21 patterns here.
        let d: Vec<f64> = (0..21)
            .map(|i| ((i * 37 % 11) as f64 - 4.0) / 10.0 + 0.05)
            .collect();
        let mc = sign_flip(&d, 40_000, 9);
        assert_eq!(mc.method, "monte carlo");
        let obs: f64 = d.iter().sum::<f64>();
        let hits = (0u64..(1 << 21))
            .filter(|mask| {
                d.iter()
                    .enumerate()
                    .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
                    .sum::<f64>()
                    .abs()
                    >= obs.abs() * (1.0 - 1e-9)
            })
            .count();
        // 40,000 draws: SE of p <= 0.0025; tolerance 0.008
        close(
            mc.p_conventional,
            hits as f64 / (1u64 << 21) as f64,
            0.008,
            "MC vs enumeration",
        );
    }

    #[test]
    fn ratio_swap_test_and_bootstrap_match_the_references() {
        for case in reference()["ratio_swap"].as_array().unwrap() {
            let (sa, va, sb, vb) = (
                nums(&case["spend_a"]),
                nums(&case["verified_a"]),
                nums(&case["spend_b"]),
                nums(&case["verified_b"]),
            );
            let a: Vec<[f64; 2]> = sa.iter().zip(&va).map(|(s, v)| [*s, *v]).collect();
            let b: Vec<[f64; 2]> = sb.iter().zip(&vb).map(|(s, v)| [*s, *v]).collect();
            let r = swap_test(&a, &b, |x, y| y[0] / y[1] - x[0] / x[1], 1e-12, 0, 1);
            close(
                r.p_conventional,
                case["p"].as_f64().unwrap(),
                1e-12,
                "ratio swap p",
            );
            close(
                r.p,
                case["p_mid"].as_f64().unwrap(),
                1e-12,
                "ratio swap mid-p",
            );
            // paired case bootstrap (crate::stats) against SciPy's
            // bootstrap(paired=True, method="percentile"): different
            // generators, so a tolerance of 10% of the interval width.
            let idx: Vec<usize> = (0..a.len()).collect();
            let reps = crate::stats::case_bootstrap(&idx, 20_000, 5, |s| {
                let (mut x, mut y) = ([0.0; 2], [0.0; 2]);
                for &&i in s {
                    for k in 0..2 {
                        x[k] += a[i][k];
                        y[k] += b[i][k];
                    }
                }
                y[0] / y[1] - x[0] / x[1]
            });
            let (lo, hi) = crate::stats::percentile_interval(&reps, 0.95);
            let want = nums(&case["bootstrap_ci"]);
            let tol = 0.10 * (want[1] - want[0]);
            close(lo, want[0], tol, "bootstrap lo");
            close(hi, want[1], tol, "bootstrap hi");
            close(
                y_minus_x(&sa, &va, &sb, &vb),
                case["delta"].as_f64().unwrap(),
                1e-12,
                "delta",
            );
        }
    }
    fn y_minus_x(sa: &[f64], va: &[f64], sb: &[f64], vb: &[f64]) -> f64 {
        sb.iter().sum::<f64>() / vb.iter().sum::<f64>()
            - sa.iter().sum::<f64>() / va.iter().sum::<f64>()
    }

    #[test]
    fn case_bootstrap_of_a_mean_and_percentile_interval_match() {
        let r = reference();
        let d = nums(&r["bootstrap_mean"]["d"]);
        let reps = crate::stats::case_bootstrap(&d, 20_000, 17, |s| {
            s.iter().map(|x| **x).sum::<f64>() / s.len() as f64
        });
        let (lo, hi) = crate::stats::percentile_interval(&reps, 0.95);
        let want = nums(&r["bootstrap_mean"]["ci"]);
        let tol = 0.05 * (want[1] - want[0]);
        close(lo, want[0], tol, "bootstrap mean lo");
        close(hi, want[1], tol, "bootstrap mean hi");
        // numpy.quantile's default (linear) interpolation, exactly
        let (lo, hi) = crate::stats::percentile_interval(&nums(&r["percentile"]["reps"]), 0.95);
        close(
            lo,
            r["percentile"]["lo"].as_f64().unwrap(),
            1e-12,
            "percentile lo",
        );
        close(
            hi,
            r["percentile"]["hi"].as_f64().unwrap(),
            1e-12,
            "percentile hi",
        );
    }

    #[test]
    fn holm_matches_statsmodels_multipletests() {
        for case in reference()["holm"].as_array().unwrap() {
            let got = holm(&nums(&case["p"]));
            for (g, w) in got.iter().zip(nums(&case["adjusted"])) {
                close(*g, w, 1e-12, "holm");
            }
        }
        let with_nan = holm(&[0.01, f64::NAN, 0.04]);
        assert!(with_nan[1].is_nan());
        close(with_nan[0], 0.02, 1e-15, "holm with NaN");
    }

    #[test]
    fn mde_power_and_noncentral_t_match_statsmodels_and_scipy() {
        let r = reference();
        for case in r["mde"].as_array().unwrap() {
            let n = case["n"].as_u64().unwrap() as usize;
            let want = case["effect_sd_units"].as_f64().unwrap();
            let got = mde(1.0, n);
            assert!(
                (got / want - 1.0).abs() <= 1e-6,
                "MDE n={n}: got {got}, statsmodels {want}"
            );
            close(power(got, 1.0, n), POWER, 1e-9, "power at the MDE");
        }
        for case in r["noncentral_t"].as_array().unwrap() {
            let (t, df, ncp) = (
                case["t"].as_f64().unwrap(),
                case["df"].as_f64().unwrap(),
                case["ncp"].as_f64().unwrap(),
            );
            close(
                noncentral_t_cdf(t, df, ncp),
                case["cdf"].as_f64().unwrap(),
                1e-10,
                &format!("nct cdf({t}, {df}, {ncp})"),
            );
        }
        for case in r["power"].as_array().unwrap() {
            let n = case["n"].as_u64().unwrap() as usize;
            let got = power(case["effect_sd_units"].as_f64().unwrap(), 1.0, n);
            close(
                got,
                case["power"].as_f64().unwrap(),
                1e-9,
                &format!("power n={n}"),
            );
        }
    }

    #[test]
    fn clustered_wilson_matches_statsmodels_wilson_on_the_effective_counts() {
        for case in reference()["wilson_clustered"].as_array().unwrap() {
            let runs: Vec<Vec<bool>> = case["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    r.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64() == Some(1))
                        .collect()
                })
                .collect();
            let w = wilson_clustered(&runs);
            close(w.icc, case["icc"].as_f64().unwrap(), 1e-12, "icc");
            assert_eq!(
                (w.n_eff, w.k_eff),
                (
                    case["n_eff"].as_u64().unwrap(),
                    case["k_eff"].as_u64().unwrap()
                )
            );
            close(w.lo, case["lo"].as_f64().unwrap(), 1e-9, "wilson lo");
            close(w.hi, case["hi"].as_f64().unwrap(), 1e-9, "wilson hi");
        }
    }

    #[test]
    fn variance_decomposition_matches_numpy() {
        let r = reference();
        let v = &r["variance"];
        let runs: Vec<Vec<f64>> = v["runs"].as_array().unwrap().iter().map(nums).collect();
        let got = decompose(&runs).unwrap();
        close(
            got.within_case,
            v["within"].as_f64().unwrap(),
            1e-12,
            "within",
        );
        close(
            got.between_case,
            v["between"].as_f64().unwrap(),
            1e-12,
            "between",
        );
        close(
            got.se * got.se * runs.len() as f64,
            v["case_means_var"].as_f64().unwrap(),
            1e-12,
            "case means var",
        );
        assert!(got.se_double_cases < got.se && got.se_double_runs <= got.se);
        assert!(
            decompose(&[vec![1.0, 2.0]]).is_none(),
            "one case: no decomposition"
        );
    }

    #[test]
    fn min_attainable_p_is_the_exact_floor() {
        assert!(min_attainable_p(5) > ALPHA && min_attainable_p(6) < ALPHA);
        let d = [0.1, 0.2, 0.3, 0.4, 0.5];
        close(
            sign_flip(&d, 0, 1).p_conventional,
            min_attainable_p(5),
            1e-15,
            "floor",
        );
        // identical arms: nothing to permute, p = 1
        assert_eq!(sign_flip(&[0.0; 7], 0, 1).p, 1.0);
    }
}
