//! The oracle's invariant checks on one trial: after every process
//! ([`process`]) and on the final disk at the end of the run ([`run_end`]),
//! collected per [`Invariant`] by [`Checks`].

pub(super) mod ckpt_writes;
pub(super) mod ending;
pub(super) mod process;
pub(super) mod refusal;
pub(super) mod run_end;
pub(super) mod stop;

use super::observe::Obs;
use crate::harness_files::Report;
use crate::invariant::Invariant;
use std::collections::BTreeSet;

/// Slack for comparing dollar amounts summed in different orders.
pub(super) const EPS: f64 = 1e-9;

/// The `error_kind`s of a refused checkpoint.
pub(super) const REFUSAL_KINDS: [&str; 6] = [
    "checkpoint_unreadable",
    "checkpoint_unparseable",
    "checkpoint_checksum_mismatch",
    "checkpoint_schema_mismatch",
    "checkpoint_goal_mismatch",
    "checkpoint_body_invalid",
];

/// A report of a run that refused to resume (a bad checkpoint frame, a
/// ledger journal it cannot trust) rather than one that ran.
pub(super) fn is_refusal(report: &Report, spawn: &Obs) -> bool {
    let kind = report.error_kind();
    REFUSAL_KINDS.contains(&kind)
        || (kind == "ledger_journal"
            && (spawn.journal.bad_line.is_some()
                || report
                    .detail
                    .as_deref()
                    .unwrap_or("")
                    .contains("but the checkpoint recorded")))
}

/// Accumulates one trial's findings per invariant.
pub(super) struct Checks {
    /// The invariants not vacuous on this kill.
    pub exercised: BTreeSet<Invariant>,
    pub found: Vec<(Invariant, usize, String)>,
}

impl Checks {
    pub fn new() -> Checks {
        Checks {
            exercised: BTreeSet::new(),
            found: vec![],
        }
    }
    /// The invariant was not vacuous on this kill.
    pub fn ex(&mut self, inv: Invariant) {
        self.exercised.insert(inv);
    }
    /// A violation found by process `process` (at most three kept per
    /// invariant: the first ones say what went wrong).
    pub fn fail(&mut self, inv: Invariant, process: usize, detail: String) {
        self.exercised.insert(inv);
        if self.found.iter().filter(|(i, ..)| *i == inv).count() < 3 {
            self.found.push((inv, process, detail));
        }
    }
}
