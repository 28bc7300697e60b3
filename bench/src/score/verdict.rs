//! The verdict on one case-run: the expected ending, every gate, the score
//! over the scored checks, and the latency and cost caps.

use super::check::{Check, CheckKind};
use crate::suite::Case;
use harness::report::Report;
use serde::{Deserialize, Serialize};

pub const PASS_SCORE: f64 = 0.8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub ending_ok: bool,
    pub score: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// `run` is the case-run index: for `ending = "recorded"` it picks the
/// cassette variant whose live ending is the gate.
pub fn verdict(
    case: &Case,
    run: u32,
    report: &Report,
    checks: &[Check],
    latency: &crate::latency::Latency,
) -> Verdict {
    let got = report.ending.as_str();
    let want = case.expected_ending(run);
    let ending_ok = got == want.as_str();
    let gates_ok = checks
        .iter()
        .all(|c| c.kind == CheckKind::Scored || c.passed);
    let score = score_of(ending_ok, checks);
    let cost = report.spend_usd;
    let mut failures = vec![];
    if !ending_ok {
        failures.push(ending_failure(case, run, want, got));
    }
    // Gates first: the failure that decided the verdict is named first.
    for c in checks
        .iter()
        .filter(|c| !c.passed && c.kind == CheckKind::Gate)
    {
        failures.push(format!("gate {}: {}", c.name, c.detail));
    }
    for c in checks
        .iter()
        .filter(|c| !c.passed && c.kind == CheckKind::Scored)
    {
        failures.push(format!("{}: {}", c.name, c.detail));
    }
    // The cap judges what a change controls (model time plus the harness's
    // CPU time, or wall time where the case is about the wall clock), and
    // the failure says which (bench/src/latency.rs).
    let over_cap = latency.over_cap(case.file.latency_cap_ms);
    let latency_ok = over_cap.is_none();
    failures.extend(over_cap);
    if cost > case.file.cost_cap_usd {
        failures.push(format!(
            "cost ${cost:.6} over the ${} cap",
            case.file.cost_cap_usd
        ));
    }
    let passed = ending_ok
        && gates_ok
        && score >= PASS_SCORE
        && latency_ok
        && cost <= case.file.cost_cap_usd;
    Verdict {
        ending_ok,
        score,
        passed,
        failures,
    }
}

/// The share of scored checks passed; 0 when the ending is wrong, 1 when
/// nothing is scored (the ending and gates decide alone).
fn score_of(ending_ok: bool, checks: &[Check]) -> f64 {
    let scored: Vec<&Check> = checks
        .iter()
        .filter(|c| c.kind == CheckKind::Scored)
        .collect();
    let ok = scored.iter().filter(|c| c.passed).count();
    if !ending_ok {
        0.0
    } else if scored.is_empty() {
        1.0
    } else {
        ok as f64 / scored.len() as f64
    }
}

/// The wrong ending said, with the recorded variant that set the
/// expectation when the case expects the live run's ending.
fn ending_failure(case: &Case, run: u32, want: harness::ending::Ending, got: &str) -> String {
    let how = match &case.expected {
        crate::suite::ExpectedEnding::Fixed(_) => String::new(),
        crate::suite::ExpectedEnding::Recorded(v) => format!(
            " (the live run recorded as variant {} of {})",
            run as usize % v.len().max(1),
            v.len()
        ),
    };
    format!("ending: expected {want}{how}, got {got}")
}

#[cfg(test)]
mod tests {
    use super::super::check::check;
    use super::*;
    use crate::latency::Latency;
    use std::path::Path;
    use std::time::Duration;

    fn case_expecting(ending: &str) -> Case {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut c = crate::suite::load_case(
            &repo.join("suites/happy/happy-search-p95-index"),
            "happy",
            &crate::suite::report_fields(),
        )
        .expect("a committed case loads");
        c.file.expect.ending = ending.into();
        c
    }

    /// A case-run of 1 ms, however judged.
    fn quick() -> Latency {
        Latency::judge(
            &case_expecting("GOAL_MET"),
            Duration::from_millis(1),
            Some(Duration::ZERO),
            Some(Duration::from_millis(1)),
        )
    }

    fn passing(name: &str) -> Check {
        check(name.into(), true, "ok".into())
    }

    #[test]
    fn one_failed_gate_fails_the_case_run_among_many_passing_checks() {
        let case = case_expecting("GOAL_MET");
        let mut report = Report::build(
            &harness::state::RunState::example(0),
            "g",
            harness::ending::Ending::GoalMet,
            None,
            None,
            true,
            0,
        );
        report.spend_usd = 0.01;
        // Nine passing checks and one failed gate: the share is 0.9, above
        // the 0.8 line, and the case-run still fails, naming the gate.
        let mut cs: Vec<Check> = [
            "verified",
            "verified_count",
            "files_contain.a",
            "files_contain.b",
            "outbox_contains.x",
            "predicate_met",
            "parked",
            "spend_usd_max",
            "notice_at_end",
        ]
        .iter()
        .map(|n| passing(n))
        .collect();
        let v = verdict(&case, 0, &report, &cs, &quick());
        assert!(v.passed, "{v:?}");
        cs.push(check(
            "request_contains_in_order.judge/5".into(),
            false,
            "\"<original_goal>\" not found".into(),
        ));
        let v = verdict(&case, 0, &report, &cs, &quick());
        assert!(!v.passed, "{v:?}");
        assert_eq!(v.score, 1.0, "a gate is not part of the score");
        assert!(
            v.failures[0].starts_with("gate request_contains_in_order.judge/5"),
            "{:?}",
            v.failures
        );
        // A failed scored check among passing ones lowers the score only.
        cs.pop();
        cs.push(check("files_contain.c".into(), false, "missing".into()));
        let v = verdict(&case, 0, &report, &cs, &quick());
        assert!(v.passed, "{v:?}");
        assert!((v.score - 5.0 / 6.0).abs() < 1e-12, "{}", v.score);
        // ... until the score falls under the line.
        cs.push(check("files_contain.d".into(), false, "missing".into()));
        assert!(!verdict(&case, 0, &report, &cs, &quick()).passed);
    }

    #[test]
    fn the_latency_cap_judges_model_plus_cpu_time_not_the_wall_time_of_a_loaded_machine() {
        let case = case_expecting("GOAL_MET");
        assert_eq!(case.file.latency_cap_ms, 20_000);
        let mut report = Report::build(
            &harness::state::RunState::example(0),
            "g",
            harness::ending::Ending::GoalMet,
            None,
            None,
            true,
            0,
        );
        report.spend_usd = 0.01;
        let ms = Duration::from_millis;
        // The loaded machine: 21.8 s of wall time, 1.2 s of replayed model
        // time and 0.6 s of harness CPU. The cap judges 1.8 s: a pass.
        let loaded = Latency::judge(&case, ms(21_800), Some(ms(1_200)), Some(ms(600)));
        let v = verdict(&case, 0, &report, &[], &loaded);
        assert!(v.passed, "{v:?}");
        assert!(v.failures.is_empty(), "{v:?}");
        // A harness that computes 19 s more fails it, on any machine, and
        // the failure says what was judged and the wall time beside it.
        let slow = Latency::judge(&case, ms(21_800), Some(ms(1_200)), Some(ms(19_600)));
        let v = verdict(&case, 0, &report, &[], &slow);
        assert!(!v.passed, "{v:?}");
        assert_eq!(
            v.failures,
            ["latency 20.8 s judged (model 1.2 s + harness CPU 19.6 s) over the 20.0 s cap (20800 ms > 20000 ms); wall 21.8 s"]
        );
        // A case about the wall clock is judged on wall time, as before.
        let mut clock = case_expecting("GOAL_MET");
        clock
            .file
            .covers
            .push(crate::latency::WALL_CLOCK_COVER.into());
        let l = Latency::judge(&clock, ms(21_800), Some(ms(1_200)), Some(ms(600)));
        let v = verdict(&clock, 0, &report, &[], &l);
        assert!(!v.passed, "{v:?}");
        assert!(
            v.failures[0].contains("judged (wall: the case covers wall-clock)"),
            "{v:?}"
        );
    }
}
