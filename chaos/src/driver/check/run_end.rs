//! The checks at the end of a run, on the final disk and the final report:
//! the money the provider billed and the calls in flight at a kill, a
//! partially applied migration never reported verified, the ending's alert,
//! and every verified task verifying on the final workspace and outbox.

use super::{is_refusal, Checks};
use crate::cases::Case;
use crate::compaction;
use crate::driver::observe::{Paths, Proc};
use crate::harness_files::{self, quoted, Report};
use crate::invariant::Invariant;
use crate::oracle::{self, Effect, Journal};
use std::collections::{BTreeMap, BTreeSet};

/// What the trial learned along the way that the end-of-run checks need.
pub(in crate::driver) struct RunSoFar<'a> {
    /// What the replay server answered, priced: what the provider bills.
    pub billed: f64,
    /// Journal seq -> worst case of every call in flight at a kill.
    pub inflight_reserves: &'a BTreeMap<u64, f64>,
    pub partial_seen: &'a BTreeSet<String>,
    /// An injected I/O fault was planned (the journal may lack a record).
    pub io_fault: bool,
    /// The journal-damage stratum damaged `ledger.jsonl`.
    pub journal_damaged: bool,
}

/// Every end-of-run check; `last` is the process that ended the run and
/// `report` its report.json. Returns the refusal's `error_kind` when the
/// run ended refusing to resume.
pub(in crate::driver) fn final_checks(
    ck: &mut Checks,
    last: &Proc,
    case: &Case,
    p: &Paths,
    so_far: &RunSoFar,
    report: Option<&Report>,
) -> Option<String> {
    let idx = last.idx;
    let Some(r) = report else {
        ck.fail(
            Invariant::ReportAgrees,
            idx,
            "the run ended without a report.json".into(),
        );
        return None;
    };
    let refusal = is_refusal(r, &last.spawn);
    if !refusal {
        // A finished run is re-reported from its final checkpoint, never
        // from the journal: after the bench damaged the journal of a run
        // that had already finished (a kill while report.json was written,
        // the last record torn), the report cannot equal the damaged
        // journal; trial.rs still holds it to what the journal had committed
        // before the damage.
        let rereported_after_damage = so_far.journal_damaged && !last.spawn.resumable();
        money_never_forgotten(ck, idx, p, so_far, r, rereported_after_damage);
        compactions_agree(ck, last, case, r);
    }
    let verified = r.verified_ids();
    partial_never_verified(ck, idx, case, so_far.partial_seen, &verified);
    alert_delivered(ck, idx, p, r);
    report_agrees(ck, last, case, p, r, &verified);
    refusal.then(|| r.error_kind.clone()).flatten()
}

/// ledger_never_forgets: the report covers what the provider billed, equals
/// the journal, and books every call in flight at a kill at its worst case.
fn money_never_forgotten(
    ck: &mut Checks,
    idx: usize,
    p: &Paths,
    so_far: &RunSoFar,
    r: &Report,
    rereported_after_damage: bool,
) {
    let journal = Journal::read(&p.state.join("ledger.jsonl"));
    let spent = r.spend();
    let billed = so_far.billed;
    if spent + 1e-6 < billed {
        ck.fail(Invariant::LedgerNeverForgets, idx, format!("the provider billed ${billed:.6} for the calls it answered but the report shows ${spent:.6}: money was forgotten"));
    }
    // (Not after an injected write error: then the journal could not take
    // what the report must still show.)
    if !so_far.io_fault && !rereported_after_damage && (spent - journal.booked()).abs() > 1e-6 {
        ck.fail(
            Invariant::LedgerNeverForgets,
            idx,
            format!(
                "report spend ${spent:.6} != journal booked ${:.6}",
                journal.booked()
            ),
        );
    }
    for (seq, worst) in so_far.inflight_reserves {
        match journal.records.get(seq) {
            Some((c, basis)) if (c - worst).abs() < 1e-9 && basis == "worst_case" => {}
            other => ck.fail(Invariant::LedgerNeverForgets, idx, format!("call {seq} was in flight at a kill (worst ${worst:.6}) but the journal books {other:?}, not its worst case")),
        }
    }
    if !so_far.inflight_reserves.is_empty() {
        ck.ex(Invariant::LedgerNeverForgets);
    }
}

/// compaction_at_most_once: the report lists the compaction attempts of
/// the final checkpoint, each once and in order, and an `ok` one at what the
/// provider billed for its call.
fn compactions_agree(ck: &mut Checks, last: &Proc, case: &Case, r: &Report) {
    let idx = last.idx;
    let keys: Vec<String> = r
        .compactions
        .iter()
        .map(|c| c.call_key.clone().unwrap_or_default())
        .collect();
    if let Some(s) = last.end.ckpt.state().filter(|s| s.finished.is_some()) {
        if let Err(e) = compaction::records_in_order(&keys, s.compaction_attempts) {
            ck.fail(
                Invariant::CompactionAtMostOnce,
                idx,
                format!("the report {e} (the final checkpoint's count)"),
            );
        }
    }
    for c in &r.compactions {
        let (Some(key), Some("ok"), Some(cost)) = (&c.call_key, c.outcome.as_deref(), c.cost_usd)
        else {
            continue;
        };
        let billed = case.cost_usd.get(key).copied().unwrap_or(0.0);
        if (cost - billed).abs() > 1e-9 {
            ck.fail(Invariant::CompactionAtMostOnce, idx, format!("the report books {key} (ok) at ${cost:.6}, but the provider bills ${billed:.6} for it"));
        }
    }
}

/// partial_migration_parked: never reported done.
fn partial_never_verified(
    ck: &mut Checks,
    idx: usize,
    case: &Case,
    partial_seen: &BTreeSet<String>,
    verified: &[String],
) {
    for m in partial_seen {
        if let Some(t) = case
            .tasks
            .iter()
            .find(|(_, v)| v["kind"] == "migration_state" && v["name"] == m.as_str())
            .map(|(t, _)| t)
        {
            if verified.contains(t) {
                ck.fail(Invariant::PartialMigrationParked, idx, format!("migration {m} was seen partially applied yet its task {t} is reported verified"));
            }
        }
    }
}

/// one_of_seven_endings: the ending's alert action happened (a human is told).
fn alert_delivered(ck: &mut Checks, idx: usize, p: &Paths, r: &Report) {
    if r.alert.as_deref().is_none_or(|a| a == "none") {
        return;
    }
    let delivered = harness_files::alerted_endings(&p.state)
        .iter()
        .any(|e| Some(e.as_str()) == r.ending.as_deref());
    if !delivered {
        ck.fail(
            Invariant::OneOfSevenEndings,
            idx,
            format!(
                "the run ended {} (alert action {}) but no alert for it is in alerts.jsonl",
                quoted(&r.ending),
                quoted(&r.alert)
            ),
        );
    }
}

/// report_agrees: every verified task verifies on the final workspace and
/// outbox, GOAL_MET only when the predicate passes there, and the report
/// and the final checkpoint agree.
fn report_agrees(
    ck: &mut Checks,
    last: &Proc,
    case: &Case,
    p: &Paths,
    r: &Report,
    verified: &[String],
) {
    let idx = last.idx;
    ck.ex(Invariant::ReportAgrees);
    for t in verified {
        verified_on_disk(ck, last, case, p, t);
    }
    if r.ending.as_deref() == Some(harness::ending::Ending::GoalMet.as_str())
        && goal_predicate_fails(p)
    {
        ck.fail(
            Invariant::ReportAgrees,
            idx,
            "report says GOAL_MET but the goal predicate fails on the final workspace".into(),
        );
    }
    if let Some(f) = last.end.ckpt.state().and_then(|s| s.finished.as_ref()) {
        if Some(f.ending.as_str()) != r.ending.as_deref() {
            ck.fail(
                Invariant::ReportAgrees,
                idx,
                format!(
                    "report says {} but the final checkpoint says {:?}",
                    quoted(&r.ending),
                    f.ending
                ),
            );
        }
    }
}

/// Task `t`, reported verified, is done on the final disk (and a post is
/// in the outbox exactly once).
fn verified_on_disk(ck: &mut Checks, last: &Proc, case: &Case, p: &Paths, t: &str) {
    let idx = last.idx;
    let Some(v) = case.tasks.get(t) else {
        ck.fail(
            Invariant::ReportAgrees,
            idx,
            format!("report lists {t} as verified, a task no plan ever proposed"),
        );
        return;
    };
    let e = oracle::effect(v, &p.ws, &p.outbox, &case.migrations);
    if e != Effect::Done {
        ck.fail(
            Invariant::ReportAgrees,
            idx,
            format!(
                "report lists {t} as verified but the disk says {} ({e:?}) for {v}",
                e.wire()
            ),
        );
    }
    if v["kind"] == "outbox_has" {
        let n = last
            .end
            .outbox
            .get(v["key"].as_str().unwrap_or(""))
            .copied()
            .unwrap_or(0);
        if n != 1 {
            ck.fail(
                Invariant::ReportAgrees,
                idx,
                format!("{t} is verified by a post, and the outbox holds {n} posts with its key"),
            );
        }
    }
}

/// The spec's goal predicate, run on the final workspace, fails (a spec
/// that does not load or names no check proves nothing either way).
fn goal_predicate_fails(p: &Paths) -> bool {
    let Ok(spec) = harness::spec::RunSpec::load(&p.spec) else {
        return false;
    };
    let c = match &spec.predicate {
        harness::spec::Predicate::Command(c) => Some(c.clone()),
        harness::spec::Predicate::Check(n) => spec.checks.get(n).cloned(),
    };
    c.is_some_and(|c| !harness::check::run_check(&c, &p.ws).passed)
}
