//! The bench's statistics, pure functions only (no I/O, no bench types), each
//! checked against reference values in its tests. statrs supplies the
//! distributions; what it lacks is written by hand here:
//!
//! - this file: the Wilson interval (`summary`, `ab`), the case bootstrap and
//!   its percentile interval, AUC (Mann-Whitney) with the Hanley-McNeil
//!   interval, Brier, ROC, Youden's threshold and its leave-one-out
//!   (`calibrate`);
//! - `inference`: `bench ab`'s paired t, swap / sign-flip permutation tests,
//!   Holm, the noncentral t CDF, power and MDE, the clustered Wilson interval
//!   and the variance decomposition (SciPy / statsmodels fixtures);
//! - `kneedle`: the knee of a concave curve (`bench knee`);
//! - `reliability`: pass^k and Fisher's exact test of a fallen pass rate
//!   (`bench flaky`).

pub mod inference;
pub mod kneedle;
pub mod reliability;

/// Wilson score interval for a binomial proportion (95% by default z=1.96).
/// statrs has no Wilson interval; this is the textbook formula
/// (Wilson 1927): centre (p + z^2/2n) / (1 + z^2/n), half-width
/// z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n). n = 0 gives [0, 1].
pub fn wilson(successes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n_f = n as f64;
    let p = successes as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = z * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

pub const Z95: f64 = 1.959963984540054;

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn matches_statsmodels_reference_values() {
        // statsmodels.stats.proportion.proportion_confint(k, n, method="wilson"),
        // computed with statsmodels 0.14 on this machine.
        let (lo, hi) = wilson(8, 10, Z95);
        assert!(
            (lo - 0.4901624).abs() < 1e-6 && (hi - 0.9433178).abs() < 1e-6,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(0, 5, Z95);
        assert!(
            lo.abs() < 1e-12 && (hi - 0.4344825).abs() < 1e-6,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(52, 52, Z95);
        assert!(
            (lo - 0.9312077639).abs() < 1e-9 && (hi - 1.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(33, 34, Z95);
        assert!(
            (lo - 0.8508442671).abs() < 1e-9 && (hi - 0.9947890937).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0, Z95), (0.0, 1.0));
    }
}

/// Case bootstrap: resample whole cases (the unit of analysis) with
/// replacement `reps` times with a fixed seed, and return the statistic of
/// each resample. statrs has no bootstrap. Deterministic for a given seed.
pub fn case_bootstrap<T, F>(cases: &[T], reps: usize, seed: u64, stat: F) -> Vec<f64>
where
    F: Fn(&[&T]) -> f64,
{
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = cases.len();
    let mut out = Vec::with_capacity(reps);
    if n == 0 {
        return out;
    }
    let mut sample: Vec<&T> = Vec::with_capacity(n);
    for _ in 0..reps {
        sample.clear();
        for _ in 0..n {
            sample.push(&cases[rng.gen_range(0..n)]);
        }
        out.push(stat(&sample));
    }
    out
}

/// Percentile interval [lo, hi] at `level` (e.g. 0.95) from bootstrap
/// replicates; non-finite replicates (e.g. a ratio with a zero denominator)
/// are dropped and counted by the caller if it cares.
pub fn percentile_interval(reps: &[f64], level: f64) -> (f64, f64) {
    let mut v: Vec<f64> = reps.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let a = (1.0 - level) / 2.0;
    let q = |p: f64| {
        let pos = p * (v.len() - 1) as f64;
        let (i, f) = (pos.floor() as usize, pos.fract());
        if i + 1 < v.len() {
            v[i] * (1.0 - f) + v[i + 1] * f
        } else {
            v[i]
        }
    };
    (q(a), q(1.0 - a))
}

// ---------------------------------------------------------------------------
// ROC statistics for `bench calibrate`. statrs has no ROC, AUC, Hanley-McNeil
// standard error, Youden threshold or Brier score, so they are written here by
// hand; each is checked against scikit-learn / SciPy reference values
// (bench/tests/fixtures/calibrate/make_reference.py -> reference.json).
//
// Convention throughout: a higher score means "more likely positive", and a
// threshold t classifies `score > t` as positive, strictly, the way the
// harness's drift bands do (exactly 0.3 does not prune).
// ---------------------------------------------------------------------------

/// Area under the ROC curve as the Mann-Whitney probability
/// P(score of a random positive > score of a random negative), ties counted
/// one half. Equals scikit-learn's `roc_auc_score`. NaN when either group is
/// empty (there is no curve). O(n_pos * n_neg), which is nothing at the sizes
/// a hand-labelled set has.
pub fn auc_mann_whitney(pos: &[f64], neg: &[f64]) -> f64 {
    if pos.is_empty() || neg.is_empty() {
        return f64::NAN;
    }
    let mut wins = 0.0;
    for &p in pos {
        for &n in neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (pos.len() as f64 * neg.len() as f64)
}

/// Hanley & McNeil (1982) standard error of an AUC, from the AUC and the two
/// group sizes: Q1 = A/(2-A), Q2 = 2A^2/(1+A),
/// SE^2 = (A(1-A) + (n_pos-1)(Q1-A^2) + (n_neg-1)(Q2-A^2)) / (n_pos n_neg).
/// It is a normal approximation: at A = 1 (or 0) it gives SE = 0, a
/// degenerate interval, which callers should say out loud.
pub fn hanley_mcneil_se(auc: f64, n_pos: usize, n_neg: usize) -> f64 {
    if n_pos == 0 || n_neg == 0 || !auc.is_finite() {
        return f64::NAN;
    }
    let (a, np, nn) = (auc, n_pos as f64, n_neg as f64);
    let q1 = a / (2.0 - a);
    let q2 = 2.0 * a * a / (1.0 + a);
    let var = (a * (1.0 - a) + (np - 1.0) * (q1 - a * a) + (nn - 1.0) * (q2 - a * a)) / (np * nn);
    var.max(0.0).sqrt()
}

/// AUC +- z * Hanley-McNeil SE, clipped to [0, 1].
pub fn auc_interval(auc: f64, n_pos: usize, n_neg: usize, z: f64) -> (f64, f64) {
    let se = hanley_mcneil_se(auc, n_pos, n_neg);
    ((auc - z * se).max(0.0), (auc + z * se).min(1.0))
}

/// Brier score: mean squared difference between a score read as a
/// probability and the 0/1 outcome. Equals scikit-learn's
/// `brier_score_loss`. NaN for no data.
pub fn brier(scores: &[f64], positive: &[bool]) -> f64 {
    let n = scores.len().min(positive.len());
    if n == 0 {
        return f64::NAN;
    }
    scores
        .iter()
        .zip(positive)
        .map(|(s, &y)| (s - if y { 1.0 } else { 0.0 }).powi(2))
        .sum::<f64>()
        / n as f64
}

/// One point of an ROC curve: classifying `score > threshold` as positive.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RocPoint {
    pub threshold: f64,
    pub fpr: f64,
    pub tpr: f64,
}

/// (true positive rate, false positive rate) at `score > t`.
pub fn rates_at(scores: &[f64], positive: &[bool], t: f64) -> (f64, f64) {
    let (mut tp, mut fp, mut p, mut n) = (0usize, 0usize, 0usize, 0usize);
    for (&s, &y) in scores.iter().zip(positive) {
        if y {
            p += 1;
            tp += usize::from(s > t);
        } else {
            n += 1;
            fp += usize::from(s > t);
        }
    }
    let rate = |k: usize, d: usize| {
        if d == 0 {
            f64::NAN
        } else {
            k as f64 / d as f64
        }
    };
    (rate(tp, p), rate(fp, n))
}

/// Candidate thresholds that produce every distinct split of the scores: a
/// value below the smallest score (everything positive), the midpoints
/// between consecutive distinct scores, and the largest score (nothing
/// positive). Midpoints, not the scores themselves, so that a held-out score
/// equal to a training score is not classified by an accident of `>`.
pub fn candidate_thresholds(scores: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = scores.iter().copied().filter(|s| s.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    let Some((&first, &last)) = v.first().zip(v.last()) else {
        return vec![];
    };
    let mut out = Vec::with_capacity(v.len() + 1);
    out.push(first - 1.0);
    out.extend(v.windows(2).map(|w| (w[0] + w[1]) / 2.0));
    out.push(last);
    out
}

/// The ROC curve from (0,0) to (1,1), one point per candidate threshold, in
/// ascending FPR.
pub fn roc_curve(scores: &[f64], positive: &[bool]) -> Vec<RocPoint> {
    let mut pts: Vec<RocPoint> = candidate_thresholds(scores)
        .into_iter()
        .rev()
        .map(|t| {
            let (tpr, fpr) = rates_at(scores, positive, t);
            RocPoint {
                threshold: t,
                fpr,
                tpr,
            }
        })
        .collect();
    pts.sort_by(|a, b| a.fpr.total_cmp(&b.fpr).then(a.tpr.total_cmp(&b.tpr)));
    pts
}

/// The threshold maximizing Youden's J = TPR - FPR over the candidate
/// thresholds, and J there. Ties go to the SMALLEST threshold: the drift
/// detector's known failure is the false negative (a plausible chain reads as
/// reasonable), so among equally good cut points the more sensitive one wins.
/// None when either class is missing.
pub fn youden_threshold(scores: &[f64], positive: &[bool]) -> Option<(f64, f64)> {
    if !positive.iter().any(|&y| y) || positive.iter().all(|&y| y) {
        return None;
    }
    let mut best: Option<(f64, f64)> = None;
    for t in candidate_thresholds(scores) {
        let (tpr, fpr) = rates_at(scores, positive, t);
        let j = tpr - fpr;
        // Ascending thresholds: only a strictly better J replaces, so the
        // smallest threshold keeps a tie. The epsilon keeps float noise in
        // k/n differences from breaking ties.
        if best.is_none_or(|(_, bj)| j > bj + 1e-12) {
            best = Some((t, j));
        }
    }
    best
}

/// Leave-one-out Youden: for each item, the threshold is chosen on the other
/// n-1 items and then applied to the held-out one, so no item is scored by a
/// threshold it helped choose. Returns, per item, the threshold chosen
/// without it and whether it was then classified correctly (None for a fold
/// where the other items miss a class).
pub fn loo_youden(scores: &[f64], positive: &[bool]) -> Vec<Option<(f64, bool)>> {
    (0..scores.len())
        .map(|i| {
            let s: Vec<f64> = scores
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, &x)| x)
                .collect();
            let y: Vec<bool> = positive
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, &x)| x)
                .collect();
            youden_threshold(&s, &y).map(|(t, _)| (t, (scores[i] > t) == positive[i]))
        })
        .collect()
}
