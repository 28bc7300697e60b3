//! Validity of `bench ab`'s statistics, shown by simulation rather than
//! claimed. Every simulated comparison goes through `analysis::metric`, the
//! code `bench ab` reports with. Seeds are fixed, so each rate below is a
//! reproducible number, not a flaky draw.
//!
//! - A/A: both arms draw from the same distribution; the share of
//!   comparisons called significant at alpha = 0.05 must lie in [0.03, 0.07]
//!   for every metric, on the Monte Carlo path (30 cases) and on the exact
//!   path (12 cases).
//! - Power: with a true effect equal to the MDE that `inference::mde`
//!   computes for the true standard deviation, the share of significant
//!   comparisons must be 0.80 within +-0.03 (2,000 comparisons: the standard
//!   error of a simulated power of 0.8 is 0.009, so 0.03 is 3.4 SE); at half
//!   the MDE it must match `inference::power` within the same tolerance; and
//!   the MDE reported from the observed variance must average within 5% of
//!   the true-variance MDE.

use super::analysis::{metric, CasePair, Code, Obs, Settings, METRICS};
use crate::stats::inference::{self, POWER};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr_free::*;

/// rand 0.8 without rand_distr: the two draws the generator needs.
mod rand_distr_free {
    use rand::Rng;
    /// Standard normal by Box-Muller.
    pub fn normal<R: Rng>(rng: &mut R) -> f64 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub fn bernoulli<R: Rng>(rng: &mut R, p: f64) -> bool {
        rng.gen::<f64>() < p
    }
}

/// A case of a realistic suite: its own pass probability (most cases pass
/// almost always, some are flaky, a few mostly fail), its own cost level,
/// tasks, and latency; runs vary around those.
#[derive(Debug, Clone, Copy)]
struct CaseTruth {
    pass: f64,
    cost: f64,
    tasks: u64,
    latency_ms: f64,
}

fn draw_case(rng: &mut ChaCha8Rng) -> CaseTruth {
    let u: f64 = rng.gen();
    let pass = if u < 0.4 {
        rng.gen_range(0.85..0.99)
    } else if u < 0.8 {
        rng.gen_range(0.35..0.85)
    } else {
        rng.gen_range(0.05..0.35)
    };
    CaseTruth {
        pass,
        cost: 0.05 * (0.8 * normal(rng)).exp(),
        tasks: rng.gen_range(1..=4),
        latency_ms: 800.0 * (0.5 * normal(rng)).exp(),
    }
}

/// One run of a case; `shift` adds a known effect to the cost (the power check).
fn draw_run(rng: &mut ChaCha8Rng, t: &CaseTruth, cost_shift: f64) -> Obs {
    let passed = bernoulli(rng, t.pass);
    let verified = (0..t.tasks).filter(|_| bernoulli(rng, t.pass)).count() as u64;
    Obs {
        live_calls: None,
        passed,
        score: if passed { 1.0 } else { rng.gen_range(0.0..0.8) },
        cost_usd: t.cost * (0.3 * normal(rng)).exp() + cost_shift,
        latency_ms: (t.latency_ms * (0.25 * normal(rng)).exp()) as u64,
        verified,
        failure: None,
        fault: None,
    }
}

fn aa_comparison(rng: &mut ChaCha8Rng, n: usize, k: usize) -> Vec<CasePair> {
    (0..n)
        .map(|i| {
            let t = draw_case(rng);
            let a = (0..k).map(|_| draw_run(rng, &t, 0.0)).collect();
            let b = (0..k).map(|_| draw_run(rng, &t, 0.0)).collect();
            CasePair {
                id: format!("c{i}"),
                category: "happy".into(),
                a,
                b,
            }
        })
        .collect()
}

/// Share of `m` A/A comparisons of n cases x k runs called significant, per metric.
fn aa_rates(n: usize, k: usize, m: usize, seed: u64) -> Vec<(&'static str, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // 199 Monte Carlo draws: with the observed pattern that makes 200, and
    // 200 x 0.05 is a whole number, so the Monte Carlo test keeps its level;
    // bench ab itself draws 10,000. The bootstrap enters no p-value (only
    // intervals and the ratio metric's MDE), so a token 20 resamples here.
    let s = Settings {
        seed,
        mc_reps: 199,
        bootstrap_reps: 20,
    };
    let mut hits = [0usize; METRICS.len()];
    for j in 0..m {
        let cases = aa_comparison(&mut rng, n, k);
        let refs: Vec<&CasePair> = cases.iter().collect();
        for (h, def) in hits.iter_mut().zip(METRICS.iter()) {
            let r = metric(
                def,
                &refs,
                &Settings {
                    seed: seed + j as u64,
                    ..s
                },
                "sim",
            );
            if matches!(r.verdict_code, Code::Better | Code::Worse) {
                *h += 1;
            }
        }
    }
    METRICS
        .iter()
        .zip(hits)
        .map(|(d, h)| (d.name, h as f64 / m as f64))
        .collect()
}

#[test]
fn aa_false_positive_rate_is_within_3_to_7_percent_on_the_monte_carlo_path() {
    // 30 cases (> EXACT_MAX_CASES: Monte Carlo permutations), 3 runs per case.
    let rates = aa_rates(30, 3, 2000, 11);
    errln!("A/A false-positive rates, 30 cases x 3 runs, 2000 comparisons: {rates:?}");
    for (name, r) in rates {
        assert!(
            (0.03..=0.07).contains(&r),
            "{name}: A/A false-positive rate {r} outside [0.03, 0.07]"
        );
    }
}

#[test]
fn aa_false_positive_rate_is_within_3_to_7_percent_on_the_exact_path() {
    // 12 cases: every one of 2^12 sign patterns enumerated.
    let rates = aa_rates(12, 3, 2000, 12);
    errln!("A/A false-positive rates, 12 cases x 3 runs, 2000 comparisons: {rates:?}");
    for (name, r) in rates {
        assert!(
            (0.03..=0.07).contains(&r),
            "{name}: A/A false-positive rate {r} outside [0.03, 0.07]"
        );
    }
}

/// Comparisons with a known cost effect `delta` (USD per case-run): the
/// per-case difference is delta + case-level heterogeneity tau + run noise,
/// so its true standard deviation is sqrt(tau^2 + 2 sigma^2 / k).
fn power_sim(n: usize, k: usize, delta: f64, m: usize, seed: u64) -> (f64, f64) {
    let (tau, sigma) = (0.010, 0.020);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let def = METRICS
        .iter()
        .find(|d| d.name == "cost_per_case")
        .expect("cost metric");
    let mut hits = 0;
    let mut mde_sum = 0.0;
    for j in 0..m {
        let cases: Vec<CasePair> = (0..n)
            .map(|i| {
                let level = 0.10 + 0.03 * normal(&mut rng);
                let effect = delta + tau * normal(&mut rng);
                let run = |rng: &mut ChaCha8Rng, shift: f64| Obs {
                    live_calls: None,
                    passed: true,
                    score: 1.0,
                    cost_usd: level + shift + sigma * normal(rng),
                    latency_ms: 100,
                    verified: 1,
                    failure: None,
                    fault: None,
                };
                let a = (0..k).map(|_| run(&mut rng, 0.0)).collect();
                let b = (0..k).map(|_| run(&mut rng, effect)).collect();
                CasePair {
                    id: format!("c{i}"),
                    category: "happy".into(),
                    a,
                    b,
                }
            })
            .collect();
        let refs: Vec<&CasePair> = cases.iter().collect();
        let r = metric(
            def,
            &refs,
            &Settings {
                seed: seed + j as u64,
                mc_reps: 999,
                bootstrap_reps: 10,
            },
            "power",
        );
        if matches!(r.verdict_code, Code::Better | Code::Worse) {
            hits += 1;
        }
        mde_sum += r.mde;
    }
    (hits as f64 / m as f64, mde_sum / m as f64)
}

#[test]
fn simulated_power_matches_the_mde_formula() {
    let (n, k) = (30, 3);
    let sd = (0.010f64.powi(2) + 2.0 * 0.020f64.powi(2) / k as f64).sqrt();
    let true_mde = inference::mde(sd, n);
    let (observed, mean_reported_mde) = power_sim(n, k, true_mde, 2000, 21);
    errln!("power at the MDE ({true_mde:.5} USD, sd {sd:.5}, {n} cases): observed {observed:.3}, predicted {POWER}; mean reported MDE {mean_reported_mde:.5}");
    assert!(
        (observed - POWER).abs() <= 0.03,
        "observed power {observed} at the MDE, predicted {POWER} +- 0.03"
    );
    assert!(
        (mean_reported_mde / true_mde - 1.0).abs() <= 0.05,
        "reported MDE {mean_reported_mde} vs true {true_mde}"
    );

    let half = 0.5 * true_mde;
    let predicted = inference::power(half, sd, n);
    let (observed, _) = power_sim(n, k, half, 2000, 22);
    errln!("power at half the MDE: observed {observed:.3}, predicted {predicted:.3}");
    assert!(
        (observed - predicted).abs() <= 0.03,
        "observed power {observed} at MDE/2, predicted {predicted} +- 0.03"
    );
}
