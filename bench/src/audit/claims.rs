//! Gates on what the report claims: a GOAL_MET the bench's own predicate run
//! backs (`audit.goal_met_implies_predicate`), and a report that agrees with
//! itself, the process and the spec (`audit.report_consistent`).

use super::money::{raise_taken, run_cap};
use super::{json, GateResult, Gathered};
use harness::ending::Ending;
use harness::report::Report;
use std::collections::BTreeSet;

/// `audit.goal_met_implies_predicate`: a GOAL_MET report must be backed by
/// the predicate the bench re-ran on the post-run workspace, and the report's
/// `predicate_met` must agree. Other endings claim nothing and pass.
pub fn check_goal_met_implies_predicate(report: &Report, g: &Gathered) -> GateResult {
    let ending = report.ending.as_str();
    if report.ending != Ending::GoalMet {
        return GateResult::pass(format!("ending {ending} claims no goal"));
    }
    let rerun = match g.predicate.as_ref().map(|p| &p.passed) {
        None => return GateResult::fail("GOAL_MET, but the bench did not re-run the predicate"),
        Some(Err(e)) => {
            return GateResult::fail(format!(
                "GOAL_MET, but the bench's predicate run failed to run: {e}"
            ))
        }
        Some(Ok(p)) => *p,
    };
    GateResult {
        passed: rerun && report.predicate_met,
        detail: format!(
            "GOAL_MET; the bench's predicate run on the post-run workspace: {}; report.predicate_met: {}",
            if rerun { "met" } else { "NOT met" },
            report.predicate_met
        ),
    }
}

/// `audit.report_consistent`: the report agrees with itself, with the
/// process and with the spec: exit codes, class and alert of the ending,
/// verified tasks among those admitted, the spec's cap, and no unmet-goal
/// ending reporting the predicate met.
pub fn check_report_consistent(report: &Report, g: &Gathered) -> GateResult {
    let mut bad = ending_disagreements(report);
    let ending_s = report.ending.as_str();
    match g.exit_code {
        None => bad.push("the process exit code was not gathered".into()),
        Some(c) if c != report.exit_code => bad.push(format!(
            "the process exited {c}, report.exit_code is {}",
            report.exit_code
        )),
        Some(_) => {}
    }
    let verified: BTreeSet<&String> = report.verified.iter().map(|t| &t.id).collect();
    match &g.events {
        None => bad.push(g.events_unread("the admitted tasks were not gathered")),
        Some(ev) => {
            let stray: Vec<&String> = verified
                .iter()
                .copied()
                .filter(|v| !ev.admitted.contains(*v))
                .collect();
            if !stray.is_empty() {
                bad.push(format!(
                    "verified {stray:?} were never admitted (admitted: {:?})",
                    ev.admitted
                ));
            }
        }
    }
    let whose = match raise_taken(g) {
        Some(_) => "the raise's (ledger journal)",
        None => "the spec's",
    };
    match run_cap(g) {
        Some(s) if (report.hard_cap_usd - s).abs() <= 1e-9 => {}
        None => bad.push("the spec's hard cap was not read".into()),
        Some(s) => bad.push(format!(
            "report.hard_cap_usd {} is not {whose} {s}",
            json(&report.hard_cap_usd),
        )),
    }
    GateResult::unless(&bad, || {
        format!(
            "{ending_s}, exit {}, {} verified among the admitted, cap {} is {whose}",
            report.exit_code,
            verified.len(),
            json(&report.hard_cap_usd)
        )
    })
}

/// Where the report's exit code, class, alert and `predicate_met` are not
/// what its ending makes them. The ending is one of the seven by type: a
/// report.json naming another never parsed (the runner fails the case-run
/// on it).
fn ending_disagreements(report: &Report) -> Vec<String> {
    let mut bad = vec![];
    let e = report.ending;
    let ending_s = e.as_str();
    if report.exit_code != e.exit_code() {
        bad.push(format!(
            "report.exit_code {} is not {ending_s}'s {}",
            report.exit_code,
            e.exit_code()
        ));
    }
    if report.class != e.class() {
        bad.push(format!(
            "report.class {} is not {ending_s}'s {}",
            json(&report.class),
            json(&e.class())
        ));
    }
    if report.alert != e.alert() {
        bad.push(format!(
            "report.alert {} is not {ending_s}'s {}",
            json(&report.alert),
            json(&e.alert())
        ));
    }
    // Every check of should_stop runs the predicate first: only an
    // error out of a lap can end a run whose predicate passes.
    if e != Ending::GoalMet && e != Ending::UnrecoverableError && report.predicate_met {
        bad.push(format!(
            "ending {ending_s} with report.predicate_met = true"
        ));
    }
    bad
}
