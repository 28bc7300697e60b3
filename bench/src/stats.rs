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
