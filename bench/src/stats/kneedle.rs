//! Kneedle (Satopaa, Albrecht, Irwin, Raghavan: "Finding a 'Kneedle' in a
//! Haystack: Detecting Knee Points in System Behavior", ICDCS workshops
//! 2011), offline, for a concave increasing curve: here verified pass rate
//! against actual spend. Written by hand: neither statrs nor plotters has a
//! knee detector. It follows the reference implementation (the `kneed`
//! Python package 0.9, offline mode, `interp1d`: no smoothing) step by step:
//!
//! 1. sort the points by x and normalize x and y to [0, 1] on their actual
//!    values: the budget levels are unevenly spaced (1, 0.75, 0.5, 0.25,
//!    0.1) and spend is not proportional to level, so the x used is the
//!    measured spend, never the level index;
//! 2. the difference curve d = y_n - x_n (how far the curve is above the
//!    chord from the first to the last point);
//! 3. local maxima of d are knee candidates, with threshold
//!    T = d_max - S * mean(diff(x_n)); after a local minimum nothing is
//!    confirmed until the next candidate;
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

/// The difference curve in x order: (input index, d) for each point, or
/// None when there is no curve to speak of (fewer than three points, a
/// length mismatch, non-finite values, no spread in x or in y).
pub fn difference_curve(x: &[f64], y: &[f64]) -> Option<Vec<(usize, f64)>> {
    let n = x.len();
    if n < 3 || y.len() != n || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(y[a].total_cmp(&y[b])));
    let (x0, x1) = (x[order[0]], x[order[n - 1]]);
    let (y0, y1) = y
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if x1 - x0 <= 0.0 || y1 - y0 <= 0.0 {
        return None;
    }
    Some(
        order
            .into_iter()
            .map(|i| (i, (y[i] - y0) / (y1 - y0) - (x[i] - x0) / (x1 - x0)))
            .collect(),
    )
}

/// The point farthest above the chord, whether or not Kneedle confirms it:
/// (input index, d, the drop S * mean step it needs to be confirmed).
pub fn candidate(x: &[f64], y: &[f64], sensitivity: f64) -> Option<(usize, f64, f64)> {
    let c = difference_curve(x, y)?;
    let step = 1.0 / (c.len() - 1) as f64;
    c.iter()
        .filter(|p| p.1 > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(i, d)| (i, d, sensitivity * step))
}

/// The knee of the points `(x[i], y[i])` as an index into the inputs, or
/// None (no difference curve, or no confirmed candidate). The inputs need
/// not be sorted.
pub fn knee(x: &[f64], y: &[f64], sensitivity: f64) -> Option<usize> {
    let curve = difference_curve(x, y)?;
    let n = curve.len();
    let order: Vec<usize> = curve.iter().map(|p| p.0).collect();
    let d: Vec<f64> = curve.iter().map(|p| p.1).collect();
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
    let mut active = true;
    for i in first..n - 1 {
        if candidate(i) {
            threshold = d[i] - sensitivity * step;
            threshold_index = i;
            active = true;
        }
        // After a local minimum the curve is climbing to another candidate:
        // no drop counts until that candidate (kneed >= 0.9).
        if is_min(i) {
            active = false;
        }
        if active && d[i + 1] < threshold {
            return Some(order[threshold_index]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed on this machine with `kneed` 0.9.0:
    /// `KneeLocator(x, y, S=1.0, curve="concave", direction="increasing",
    /// online=False).knee`, as an index. The first is the concave example
    /// of kneed's documentation; the rest are noisy saturating curves
    /// (1 - exp(-a x) + N(0, 0.05), 4-7 unevenly spaced points, numpy seed
    /// 7), keeping those whose knee lies above the chord (see the module
    /// doc for the one deliberate difference).
    #[test]
    fn matches_kneed_0_9() {
        let x: Vec<f64> = (0..10).map(|v| v as f64).collect();
        let y = [1.0, 8.0, 17.0, 24.0, 30.0, 34.0, 36.0, 37.0, 38.0, 39.0];
        assert_eq!(knee(&x, &y, 1.0), Some(4));
        let x: Vec<f64> = (0..6).map(|v| v as f64).collect();
        let y: Vec<f64> = x.iter().map(|v| 1.0 - (-v).exp()).collect();
        assert_eq!(knee(&x, &y, 1.0), Some(2));
        let table: &[(&[f64], &[f64], Option<usize>)] = &[
            (
                &[0.053, 2.252, 3.002, 7.757, 8.212, 8.736, 8.972],
                &[0.052, 0.999, 1.01, 1.005, 0.953, 0.999, 1.035],
                Some(1),
            ),
            (
                &[1.602, 2.153, 6.222, 7.927, 9.89, 9.955],
                &[0.889, 0.947, 0.99, 0.874, 0.973, 0.998],
                Some(1),
            ),
            (
                &[0.118, 1.924, 2.475, 4.969, 6.92],
                &[0.024, 0.659, 0.795, 0.909, 0.974],
                Some(2),
            ),
            (
                &[0.915, 5.098, 6.397, 7.418, 8.472, 8.803],
                &[0.664, 0.965, 1.099, 1.038, 0.94, 1.004],
                Some(2),
            ),
            (
                &[1.502, 3.794, 5.9, 6.051, 8.163, 9.787],
                &[0.845, 1.0, 0.94, 0.971, 0.99, 1.045],
                Some(1),
            ),
            (
                &[2.15, 3.004, 6.718, 8.741, 9.678],
                &[0.945, 1.048, 1.034, 0.984, 0.982],
                Some(1),
            ),
            (
                &[1.806, 1.925, 5.523, 8.841, 9.279],
                &[0.858, 0.926, 0.977, 1.058, 1.033],
                Some(1),
            ),
            (
                &[3.222, 4.677, 5.476, 8.762],
                &[1.022, 0.935, 1.017, 0.916],
                Some(0),
            ),
            (
                &[3.442, 4.282, 5.237, 6.578, 8.728],
                &[0.997, 1.02, 0.99, 0.989, 1.035],
                Some(1),
            ),
            (
                &[0.052, 1.368, 1.511, 4.189, 7.53, 8.105, 9.334],
                &[0.093, 0.902, 0.89, 0.993, 0.9, 0.943, 1.018],
                Some(1),
            ),
            (
                &[1.794, 2.715, 3.401, 3.461, 5.733, 9.481, 9.52],
                &[0.906, 0.931, 0.953, 0.961, 0.948, 1.055, 0.973],
                Some(3),
            ),
            (
                &[0.687, 4.116, 4.3, 8.782, 9.228],
                &[0.59, 0.991, 0.958, 0.984, 0.972],
                Some(1),
            ),
            (
                &[2.029, 3.327, 3.983, 9.716],
                &[0.529, 0.587, 0.634, 0.958],
                None,
            ),
            (
                &[3.067, 4.658, 4.792, 5.947, 6.593, 9.614],
                &[0.987, 0.96, 1.021, 0.973, 0.993, 0.945],
                Some(0),
            ),
            (
                &[0.467, 1.132, 5.233, 8.02, 8.777, 9.134, 9.156],
                &[0.104, 0.251, 0.795, 0.904, 0.912, 0.874, 0.834],
                Some(2),
            ),
            (
                &[0.211, 1.66, 3.106, 5.384, 6.779, 9.383],
                &[0.273, 1.012, 0.932, 1.043, 1.025, 1.044],
                Some(1),
            ),
        ];
        for (i, (x, y, want)) in table.iter().enumerate() {
            assert_eq!(
                knee(x, y, 1.0),
                *want,
                "reference case {i}: x {x:?} y {y:?}"
            );
        }
    }

    #[test]
    fn uses_actual_x_spacing_not_the_index() {
        // kneed 0.9.0: x = 0.3 (index 2) on the actual, uneven x; index 1
        // for the same y against evenly spaced x: spacing moves the knee.
        let x = [0.1, 0.2, 0.3, 2.0, 3.0];
        let y = [0.1, 0.6, 0.8, 0.95, 1.0];
        assert_eq!(knee(&x, &y, 1.0), Some(2));
        assert_eq!(knee(&[0.0, 1.0, 2.0, 3.0, 4.0], &y, 1.0), Some(1));
        // The same points in another order: the index refers to the input.
        let xs = [3.0, 0.3, 0.1, 2.0, 0.2];
        let ys = [1.0, 0.8, 0.1, 0.95, 0.6];
        assert_eq!(knee(&xs, &ys, 1.0), Some(1));
    }

    #[test]
    fn straight_convex_and_degenerate_curves_have_no_knee() {
        let x = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(knee(&x, &[0.0, 1.0, 2.0, 3.0, 4.0], 1.0), None);
        // kneed 0.9.0 answers x = 0 here (a "knee" at the first point, on
        // the chord); a convex curve has no knee of a concave one.
        assert_eq!(knee(&x, &[0.0, 0.1, 0.3, 0.9, 4.0], 1.0), None);
        assert_eq!(knee(&x, &[0.5; 5], 1.0), None);
        assert_eq!(knee(&[1.0; 5], &[0.0, 1.0, 2.0, 3.0, 4.0], 1.0), None);
        assert_eq!(knee(&[0.0, 1.0], &[0.0, 1.0], 1.0), None);
        assert_eq!(knee(&[0.0, f64::NAN, 2.0], &[0.0, 1.0, 1.0], 1.0), None);
        assert_eq!(knee(&[0.0, 1.0, 2.0], &[0.0, 1.0], 1.0), None);
    }

    #[test]
    fn the_candidate_is_reported_even_when_not_confirmed() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [0.0, 1.0 / 3.0 + 0.1, 2.0 / 3.0 + 0.05, 1.0];
        let (i, d, need) = candidate(&x, &y, 1.0).unwrap();
        assert_eq!(i, 1);
        assert!((d - 0.1).abs() < 1e-12 && (need - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(candidate(&x, &x, 1.0), None);
    }

    #[test]
    fn sensitivity_demands_a_bigger_drop() {
        // d = [0, 0.1, 0.05, 0]: confirmed only when S * mean step (S / 3)
        // is below the 0.1 drop to the end.
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [0.0, 1.0 / 3.0 + 0.1, 2.0 / 3.0 + 0.05, 1.0];
        assert_eq!(knee(&x, &y, 0.2), Some(1));
        assert_eq!(knee(&x, &y, 1.0), None);
    }
}
