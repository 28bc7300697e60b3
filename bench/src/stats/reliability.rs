//! How reliably a case passes across reruns, and whether its pass rate fell
//! against an earlier run: `bench flaky`.
//!
//! statrs has the hypergeometric distribution but neither tau-bench's pass^k
//! estimator nor Fisher's exact test, so both are written here.

use statrs::distribution::{DiscreteCDF, Hypergeometric};

/// pass^k (tau-bench): the probability that k runs drawn from the case's
/// runs all pass, estimated without bias from `passed` of `runs` as
/// C(passed, k) / C(runs, k). `None` when k is 0 or more than the runs.
/// pass^1 is the pass rate; pass^k falls fast for a case that fails now and
/// then, which is what an average hides.
pub fn pass_hat_k(passed: u64, runs: u64, k: u64) -> Option<f64> {
    if k == 0 || k > runs || passed > runs {
        return None;
    }
    // C(c, k) / C(n, k) = prod_{i<k} (c - i) / (n - i); 0 once c < k.
    Some((0..k).fold(1.0, |acc, i| {
        acc * (passed.saturating_sub(i)) as f64 / (runs - i) as f64
    }))
}

/// Fisher's exact test, one-sided: the probability, if both samples had the
/// same pass rate, of the new sample passing `new_passed` of `new_runs` or
/// fewer, given the passes of both together (the hypergeometric law). Small
/// when the new pass rate really fell; 3/3 then 2/3 gives 0.5: shown as a
/// fall, never called significant. `None` for an empty sample.
pub fn fisher_fell(new_passed: u64, new_runs: u64, old_passed: u64, old_runs: u64) -> Option<f64> {
    if new_runs == 0 || old_runs == 0 || new_passed > new_runs || old_passed > old_runs {
        return None;
    }
    let h = Hypergeometric::new(new_runs + old_runs, new_passed + old_passed, new_runs).ok()?;
    Some(h.cdf(new_passed).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn pass_hat_k_is_the_share_of_k_subsets_that_all_pass() {
        // 8 of 10: pass^1 = 0.8, pass^3 = C(8,3)/C(10,3) = 56/120.
        assert!(close(pass_hat_k(8, 10, 1).unwrap(), 0.8));
        assert!(close(pass_hat_k(8, 10, 3).unwrap(), 56.0 / 120.0));
        // pass^N is 1 only when every run passed.
        assert!(close(pass_hat_k(10, 10, 10).unwrap(), 1.0));
        assert!(close(pass_hat_k(9, 10, 10).unwrap(), 0.0));
        assert!(close(pass_hat_k(2, 10, 3).unwrap(), 0.0));
        assert_eq!(pass_hat_k(3, 3, 4), None);
        assert_eq!(pass_hat_k(3, 3, 0), None);
    }

    #[test]
    fn fisher_matches_hand_computed_tails() {
        // 3/3 then 2/3: N=6, K=5, n=3. P(X<=2) = 1 - C(5,3)/C(6,3) = 0.5.
        assert!(close(fisher_fell(2, 3, 3, 3).unwrap(), 0.5));
        // 10/10 then 5/10: P(X<=5) with N=20, K=15, n=10
        // = C(15,5)C(5,5)/C(20,10) = 3003/184756 (X >= 5 always).
        assert!(close(
            fisher_fell(5, 10, 10, 10).unwrap(),
            3003.0 / 184756.0
        ));
        // No fall: the tail is 1.
        assert!(close(fisher_fell(3, 3, 2, 3).unwrap(), 1.0));
        assert_eq!(fisher_fell(0, 0, 3, 3), None);
    }
}
