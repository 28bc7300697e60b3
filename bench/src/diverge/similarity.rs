//! The similarity math of `bench diverge`, hand-written: no crate in the
//! workspace (nor a small one worth adding) computes a multiset Jaccard or a
//! normalized LCS over arbitrary tokens, and each is a dozen lines.
//!
//! - `multiset_jaccard`: sum over tokens of min(count_a, count_b) divided by
//!   the sum of max(count_a, count_b). It answers "how much of what either
//!   side did, did both do", ignoring order; a call made twice on one side and
//!   once on the other counts once in the numerator and twice in the
//!   denominator. Two empty multisets are 1.0: nothing was done on either
//!   side, which is the same behaviour.
//! - `sequence_similarity`: LCS(a, b) / max(|a|, |b|), the share of the
//!   longer trajectory that the other one walks in the same order. LCS rather
//!   than 1 - normalized Levenshtein because its value has that plain reading
//!   (and it never exceeds the multiset overlap, so order can only lower a
//!   score), and because a call inserted early shifts every later one without
//!   costing more than the one insertion. One substitution in ten calls gives
//!   9/10 under both; they differ when calls move (a swap of two calls costs
//!   1/n under LCS, 2/n under Levenshtein). Two empty sequences are 1.0.
//! - `first_parting`: the first index where the two sequences differ.
//!
//! The LCS is O(|a|·|b|) time and O(|b|) memory; callers bound the lengths
//! (`trajectory::STEPS_COMPARED_MAX`).

use std::collections::BTreeMap;

/// Multiset Jaccard of two token lists (order ignored, counts kept); None
/// ("n/a") for two empty lists: nothing was compared, so they are neither
/// alike nor different.
pub fn multiset_jaccard<T: Ord>(a: &[T], b: &[T]) -> Option<f64> {
    let mut counts: BTreeMap<&T, (u64, u64)> = BTreeMap::new();
    for x in a {
        counts.entry(x).or_default().0 += 1;
    }
    for x in b {
        counts.entry(x).or_default().1 += 1;
    }
    let (min_sum, max_sum) = counts.values().fold((0u64, 0u64), |(lo, hi), &(ca, cb)| {
        (lo + ca.min(cb), hi + ca.max(cb))
    });
    if max_sum == 0 {
        return None;
    }
    Some(min_sum as f64 / max_sum as f64)
}

/// Plain (set) Jaccard: duplicates collapse first; None for two empty sets.
pub fn set_jaccard<T: Ord + Clone>(a: &[T], b: &[T]) -> Option<f64> {
    let dedup = |v: &[T]| {
        let mut v = v.to_vec();
        v.sort();
        v.dedup();
        v
    };
    multiset_jaccard(&dedup(a), &dedup(b))
}

/// Length of the longest common subsequence (two rolling rows).
pub fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// LCS(a, b) / max(|a|, |b|); 1.0 for two empty sequences.
pub fn sequence_similarity<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    lcs_len(a, b) as f64 / longest as f64
}

/// The first index where `a` and `b` differ (one running out counts), or
/// None when they are equal.
pub fn first_parting<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => Some(i),
        None if a.len() != b.len() => Some(a.len().min(b.len())),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("read_file({{\"path\":\"f{i}\"}})"))
            .collect()
    }

    #[test]
    fn identical_is_one_and_disjoint_is_zero() {
        let a = calls(10);
        assert_eq!(multiset_jaccard(&a, &a), Some(1.0));
        assert_eq!(sequence_similarity(&a, &a), 1.0);
        assert_eq!(first_parting(&a, &a), None);
        let b: Vec<String> = a.iter().map(|x| format!("x{x}")).collect();
        assert_eq!(multiset_jaccard(&a, &b), Some(0.0));
        assert_eq!(sequence_similarity(&a, &b), 0.0);
        assert_eq!(first_parting(&a, &b), Some(0));
    }

    #[test]
    fn two_empty_sides_did_the_same_nothing() {
        let e: Vec<String> = vec![];
        // Two empty sets: a Jaccard is n/a, never 1.000.
        assert_eq!(multiset_jaccard(&e, &e), None);
        assert_eq!(sequence_similarity(&e, &e), 1.0);
        assert_eq!(set_jaccard(&e, &e), None);
        // One side empty: nothing shared.
        assert_eq!(multiset_jaccard(&calls(3), &e), Some(0.0));
        assert_eq!(sequence_similarity(&calls(3), &e), 0.0);
        assert_eq!(first_parting(&calls(3), &e), Some(0));
    }

    #[test]
    fn one_substitution_in_ten_calls() {
        let a = calls(10);
        let mut b = a.clone();
        b[4] = "write_file({\"path\":\"f4\"})".into();
        // Multiset: 9 shared; the two differing calls count once each on
        // top: 9 / (9 + 1 + 1) = 9/11.
        assert!((multiset_jaccard(&a, &b).unwrap() - 9.0 / 11.0).abs() < 1e-12);
        // LCS keeps the other 9 in order: 9/10.
        assert!((sequence_similarity(&a, &b) - 0.9).abs() < 1e-12);
        assert_eq!(first_parting(&a, &b), Some(4));
    }

    #[test]
    fn counts_matter_in_the_multiset_and_order_in_the_sequence() {
        let a = ["r", "r", "w"];
        let b = ["r", "w", "w"];
        // min: r 1, w 1 = 2; max: r 2, w 2 = 4.
        assert_eq!(multiset_jaccard(&a, &b), Some(0.5));
        assert_eq!(set_jaccard(&a, &b), Some(1.0));
        // Same calls, another order: the multiset cannot see it, the LCS can.
        let c = ["w", "r", "r"];
        assert_eq!(multiset_jaccard(&a, &c), Some(1.0));
        assert!((sequence_similarity(&a, &c) - 2.0 / 3.0).abs() < 1e-12);
        // A prefix parts where the shorter one ends.
        assert_eq!(first_parting(&a[..2], &a), Some(2));
    }
}
