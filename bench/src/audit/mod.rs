//! The audit: what every case-run is checked for, in every suite, whatever
//! its case.toml asks. Each audit check is a gate (any failure fails the
//! case-run, whatever its score): it is a guarantee of the harness, not a
//! quality of the agent's work, and no case can switch it off.
//!
//! The bench measures these itself, independently of the harness's own
//! account where it can: it plants a sentinel and snapshots what lies outside
//! the workspace, re-runs the goal predicate on the post-run workspace, reads
//! the ledger journal, reads the request bodies its replay server answered
//! (what the model saw), and runs the harness with canary values in every
//! API-key variable, then looks for them in everything the run wrote.
//!
//! | check | what must hold |
//! |---|---|
//! | `audit.goal_met_implies_predicate` | GOAL_MET is backed by the predicate the bench re-ran, and the report's `predicate_met` agrees |
//! | `audit.confined` | nothing outside the workspace, the state dir and the outbox changed (spec, checks, a planted sentinel; no entry added or removed) |
//! | `audit.report_consistent` | ending is one of seven; exit code (report and process), class and alert are the ending's; verified tasks were admitted; the cap is the spec's; no unmet-goal ending reports the predicate met |
//! | `audit.spend` | report spend = the ledger journal's, and both are within the hard cap |
//! | `audit.allowlist` | every request offered only allowlisted tools; a tool call off the list did nothing |
//! | `audit.judge_requests` | every `judge/*` request is one user turn holding the original goal and the queue (tasks the run really had), no agent message, tool output, history or claim |
//! | `audit.secret_canary` | no canary key value appears in any file of the case-run, any request body, or the harness's stdout/stderr |
//! | `audit.page_safe` | the run's report.html exists and, parsed as a browser parses it, holds no script, embedded content, handler, `javascript:` URL, second style sheet or control byte: nothing the model or the workspace wrote became markup |
//!
//! The gates are [`AuditGate`], declared once (`gate.rs`): [`audit`] runs
//! every one, in that order, through one exhaustive match, so a gate
//! declared and not run does not compile.
//!
//! Its rooms: what is gathered around the run (`gathered`: the spec and the
//! first snapshot before, the rest after; `predicate`: the bench's own run
//! of the goal predicate; `events`: what events.jsonl says), the requests
//! the model was sent (`sent`), and one file per gate family: `claims`
//! (goal_met_implies_predicate, report_consistent), `money` (spend), `reach`
//! (confined, allowlist, secret_canary), `judge` (judge_requests) and `page`
//! (page_safe). Their unit tests are in `tests/`, one file per family.

mod claims;
mod events;
mod gate;
mod gathered;
mod judge;
mod money;
mod page;
mod predicate;
mod reach;
mod sent;
#[cfg(test)]
mod tests;

use crate::score::{Check, CheckKind};
use harness::replay::Captured;
use harness::report::Report;
use serde_json::Value;

pub use crate::canary::{
    canaries, canary_hits_in, scan_tree_for_canaries, Canary, CANARY_SCAN_FILE_MAX_BYTES,
    CANARY_SCAN_MAX_FILES,
};
pub use crate::outside::{
    outside_changes, outside_exclusions, plant_sentinel, snapshot_outside, OutsideEntry,
    OutsideSnapshot, PlantError, OUTSIDE_FILE_MAX_BYTES, OUTSIDE_MAX_ENTRIES, SENTINEL_FILE,
    SENTINEL_TEXT,
};
pub use claims::{check_goal_met_implies_predicate, check_report_consistent};
pub use events::{event_facts, EventFacts, Setback, ToolEvent};
pub use gate::{AuditGate, GateResult};
pub use gathered::{Gathered, PageUnread, SpecFacts};
pub use judge::{check_judge_requests, judge_body_ok, JudgeRequestError};
pub use money::{check_spend, overbilled_usd, raised_cap_usd};
pub use page::check_page_safe;
pub use predicate::{rerun_predicate, rerun_predicate_of, PredicateRerun, RerunError};
pub use reach::{check_allowlist, check_confined, check_secret_canary};
pub use sent::{offered_tools, Sent};

/// All audit checks for one case-run, each a gate, in [`AuditGate::ALL`]'s
/// order.
pub fn audit(report: &Report, requests: &[Captured], g: &Gathered) -> Vec<Check> {
    let sent = Sent::parse(requests);
    AuditGate::ALL
        .iter()
        .map(|&gate| {
            let GateResult { passed, detail } = run(gate, report, &sent, g);
            Check {
                name: gate.check_name(),
                kind: CheckKind::Gate,
                passed,
                detail,
            }
        })
        .collect()
}

/// One gate on one case-run. The request bodies are parsed once for every
/// gate that reads them (`sent`).
fn run(gate: AuditGate, report: &Report, sent: &[Sent], g: &Gathered) -> GateResult {
    match gate {
        AuditGate::GoalMetImpliesPredicate => check_goal_met_implies_predicate(report, g),
        AuditGate::Confined => check_confined(g),
        AuditGate::ReportConsistent => check_report_consistent(report, g),
        AuditGate::Spend => check_spend(report, g),
        AuditGate::Allowlist => reach::allowlist(sent, g),
        AuditGate::JudgeRequests => judge::judge_requests(report, sent, g),
        AuditGate::SecretCanary => check_secret_canary(g),
        AuditGate::PageSafe => check_page_safe(g),
    }
}

/// A report field as report.json spells it (`28.0`, `"RETRY"`): the
/// details quote the file, not Rust's formatting of the value.
fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
