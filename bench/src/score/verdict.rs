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
    latency_ms: u64,
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
    if latency_ms > case.file.latency_cap_ms {
        failures.push(format!(
            "latency {latency_ms} ms over the {} ms cap",
            case.file.latency_cap_ms
        ));
    }
    if cost > case.file.cost_cap_usd {
        failures.push(format!(
            "cost ${cost:.6} over the ${} cap",
            case.file.cost_cap_usd
        ));
    }
    let passed = ending_ok
        && gates_ok
        && score >= PASS_SCORE
        && latency_ms <= case.file.latency_cap_ms
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
    use std::path::Path;

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
        let v = verdict(&case, 0, &report, &cs, 1);
        assert!(v.passed, "{v:?}");
        cs.push(check(
            "request_contains_in_order.judge/5".into(),
            false,
            "\"<original_goal>\" not found".into(),
        ));
        let v = verdict(&case, 0, &report, &cs, 1);
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
        let v = verdict(&case, 0, &report, &cs, 1);
        assert!(v.passed, "{v:?}");
        assert!((v.score - 5.0 / 6.0).abs() < 1e-12, "{}", v.score);
        // ... until the score falls under the line.
        cs.push(check("files_contain.d".into(), false, "missing".into()));
        assert!(!verdict(&case, 0, &report, &cs, 1).passed);
    }
}
