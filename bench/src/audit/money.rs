//! The money gate (`audit.spend`): the report's spend is the ledger
//! journal's and within the run's cap; and the journal readings it (and
//! `audit.report_consistent`'s cap) rests on.

use super::{json, GateResult, Gathered};
use harness::report::Report;

/// Relative tolerance for comparing two sums of the same costs.
const SPEND_REL_TOLERANCE: f64 = 1e-9;

/// How much the records of a ledger journal billed above their own
/// reservations (the reserve lines with the same `seq`; the last reserve of a
/// seq, since a call re-reserves per attempt). Read with the harness's one
/// journal parser.
pub fn overbilled_usd(journal: &[u8]) -> f64 {
    use harness::ledger::journal::{parse, JournalEntry};
    let mut reserved: std::collections::HashMap<u64, f64> = Default::default();
    let mut over = 0.0;
    for line in parse(journal).lines {
        match line.entry {
            JournalEntry::Reserve { seq, worst_usd, .. } => {
                reserved.insert(seq, worst_usd);
            }
            JournalEntry::Record { seq, cost_usd, .. } => {
                if let Some(w) = reserved.get(&seq) {
                    over += (cost_usd - w).max(0.0);
                }
            }
            JournalEntry::Release { .. } | JournalEntry::Limit { .. } => {}
        }
    }
    over
}

/// The hard cap of the journal's last `limit` line that raised it, read
/// with the harness's one journal parser: an operator's raise is the run's
/// cap from then on (the spec's cap until there is one).
pub fn raised_cap_usd(journal: &[u8]) -> Option<f64> {
    use harness::ledger::journal::{parse, JournalEntry};
    use harness::ledger::LimitKind;
    parse(journal)
        .lines
        .into_iter()
        .filter_map(|l| match l.entry {
            JournalEntry::Limit {
                limit: LimitKind::HardCapUsd,
                new,
                ..
            } => Some(new),
            _ => None,
        })
        .last()
}

/// The run's hard cap: the journal's last raise when it is the one the
/// bench asked for, else the spec's.
pub(super) fn run_cap(g: &Gathered) -> Option<f64> {
    g.spec.as_ref().map(|s| match raise_taken(g) {
        Some(c) => c,
        None => s.hard_cap_usd,
    })
}

/// The journal's raise of the cap, when the bench asked for exactly it.
pub(super) fn raise_taken(g: &Gathered) -> Option<f64> {
    match (g.journal_raised_cap_usd, g.raise_asked_usd) {
        (Some(j), Some(a)) if j == a => Some(j),
        _ => None,
    }
}

/// `audit.spend`: the report's spend is what the ledger journal books (the
/// journal is what survives a crash; a report that says less forgot money),
/// and neither passes the spec's hard cap. The one excess allowed is what a
/// reply billed above its own reservation (an endpoint reporting usage its
/// request could not produce), and only on a run that ended on it
/// (UNRECOVERABLE_ERROR, `billed_above_reserve`): had every reply billed
/// within its reservation the spend would still be within the cap.
pub fn check_spend(report: &Report, g: &Gathered) -> GateResult {
    let mut bad = vec![];
    let spend = report.spend_usd;
    let Some(cap) = run_cap(g) else {
        return GateResult::fail("the spec's hard cap was not read");
    };
    let ended_on_overbill =
        report.error_kind == Some(harness::ending::ErrorKind::BilledAboveReserve);
    let over = g.journal_overbilled_usd;
    let cap = if ended_on_overbill { cap + over } else { cap };
    if !(spend.is_finite() && spend >= 0.0) {
        bad.push(format!(
            "report.spend_usd {} is not a dollar figure",
            json(&spend)
        ));
    } else if spend > cap * (1.0 + SPEND_REL_TOLERANCE) {
        bad.push(format!("report spend ${spend:.6} is over the ${cap} cap"));
    }
    match g.journal {
        None if spend > 0.0 => bad.push(format!(
            "the report spent ${spend:.6} but no ledger journal holds it"
        )),
        None => {}
        Some((booked, open)) => {
            let held = booked + open;
            if held > cap * (1.0 + SPEND_REL_TOLERANCE) {
                bad.push(format!(
                    "the ledger journal holds ${held:.6} (booked ${booked:.6} + ${open:.6} in flight), over the ${cap} cap"
                ));
            }
            if (spend - held).abs() > SPEND_REL_TOLERANCE * held.max(1e-6) {
                bad.push(format!(
                    "report spend ${spend:.6} is not the journal's ${held:.6} (booked ${booked:.6} + ${open:.6} in flight)"
                ));
            }
        }
    }
    GateResult::unless(&bad, || {
        format!(
            "spend {} = the journal's, within the ${cap} cap",
            json(&spend)
        )
    })
}
