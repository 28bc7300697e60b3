//! The seven endings. Every exit of a run is exactly one of these; the class,
//! exit code and alert action are exhaustive `match`es with no wildcard arm, so
//! adding an ending without deciding how it is reported fails to compile. (The
//! seed's Python does this with a module-level set-equality assert; the
//! compiler does it for us.)

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Ending {
    GoalMet,
    BudgetExhausted,
    TimeLimit,
    DriftDetected,
    NoProgress,
    QueueEmptyGoalUnmet,
    UnrecoverableError,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Class {
    Success,
    Partial,
    Failure,
}

/// What the ending does to a human. Only drift pages: it is the one ending
/// where the run was actively spending money on the wrong problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Alert {
    None,
    Alert,
    Page,
}

crate::wire::wire_names! {
    /// Machine-readable cause of an UNRECOVERABLE_ERROR: report.json's and
    /// the final checkpoint's `error_kind`, the `kind` of an early `ending`
    /// event. Readers (the bench, chaos) act on these names.
    pub enum ErrorKind {
        RecordingMiss = "recording_miss",
        HttpRejected = "http_rejected",
        ModelUnavailable = "model_unavailable",
        EndpointConfig = "endpoint_config",
        GoalTampered = "goal_tampered",
        StateTampered = "state_tampered",
        CheckpointWrite = "checkpoint_write",
        LedgerJournal = "ledger_journal",
        BilledAboveReserve = "billed_above_reserve",
        Internal = "internal",
        StateDir = "state_dir",
        StateDirLock = "state_dir_lock",
        Workspace = "workspace",
        WriteNotDurable = "write_not_durable",
        LapsExhausted = "laps_exhausted",
        Panic = "panic",
        CheckpointUnreadable = "checkpoint_unreadable",
        CheckpointUnparseable = "checkpoint_unparseable",
        CheckpointChecksumMismatch = "checkpoint_checksum_mismatch",
        CheckpointSchemaMismatch = "checkpoint_schema_mismatch",
        CheckpointGoalMismatch = "checkpoint_goal_mismatch",
        CheckpointBodyInvalid = "checkpoint_body_invalid",
    }
}

/// An error kind reads as its name, so `report.error_kind.as_deref()` is the
/// string on disk.
impl std::ops::Deref for ErrorKind {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// Exit code of `harness run` when the spec (or the command line) is rejected
/// before anything runs. Distinct from every ending's code. (sysexits EX_USAGE.)
pub const EXIT_SPEC_REJECTED: i32 = 64;

impl Ending {
    /// Every ending, in the priority order `should_stop` checks them
    /// (UNRECOVERABLE_ERROR last: nothing returns it from a check, it is the
    /// classification of an error out of the loop body or of a refused load).
    pub const ALL: [Ending; 7] = [
        Ending::GoalMet,
        Ending::BudgetExhausted,
        Ending::TimeLimit,
        Ending::DriftDetected,
        Ending::NoProgress,
        Ending::QueueEmptyGoalUnmet,
        Ending::UnrecoverableError,
    ];

    pub fn class(self) -> Class {
        match self {
            Ending::GoalMet => Class::Success,
            Ending::BudgetExhausted => Class::Partial,
            Ending::TimeLimit => Class::Partial,
            Ending::DriftDetected => Class::Failure,
            Ending::NoProgress => Class::Failure,
            Ending::QueueEmptyGoalUnmet => Class::Failure,
            Ending::UnrecoverableError => Class::Failure,
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Ending::GoalMet => 0,
            Ending::BudgetExhausted => 2,
            Ending::TimeLimit => 2,
            Ending::DriftDetected => 3,
            Ending::NoProgress => 3,
            Ending::QueueEmptyGoalUnmet => 3,
            Ending::UnrecoverableError => 4,
        }
    }

    pub fn alert(self) -> Alert {
        match self {
            Ending::GoalMet => Alert::None,
            Ending::BudgetExhausted => Alert::Alert,
            Ending::TimeLimit => Alert::Alert,
            Ending::DriftDetected => Alert::Page,
            Ending::NoProgress => Alert::Alert,
            Ending::QueueEmptyGoalUnmet => Alert::Alert,
            Ending::UnrecoverableError => Alert::Alert,
        }
    }

    /// What the ending means to the operator reading the morning report,
    /// and what to do about it.
    pub fn meaning(self) -> &'static str {
        match self {
            Ending::GoalMet => "The goal's predicate passed, checked by the harness: the work is done and verified.",
            Ending::BudgetExhausted => "The hard cap stopped the run: the next call's worst case would have crossed it. What was verified is kept; raise the cap or shrink the goal to go on.",
            Ending::TimeLimit => "The wall clock ran out. What was verified is kept; a re-run of the same command resumes from the checkpoint.",
            Ending::DriftDetected => "The queue drifted from the original goal past the halt band: the run was spending money on the wrong problem. A human must look at the queue before it runs again.",
            Ending::NoProgress => "Tasks kept failing verification or being parked with no verified progress: the run stopped instead of looping.",
            Ending::QueueEmptyGoalUnmet => "Every task was done or parked, yet the goal's predicate still fails: the plan did not cover the goal.",
            Ending::UnrecoverableError => "The harness could not go on safely (see the detail and its kind); nothing was guessed. Fix the cause, then re-run the same command.",
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Ending::GoalMet => "GOAL_MET",
            Ending::BudgetExhausted => "BUDGET_EXHAUSTED",
            Ending::TimeLimit => "TIME_LIMIT",
            Ending::DriftDetected => "DRIFT_DETECTED",
            Ending::NoProgress => "NO_PROGRESS",
            Ending::QueueEmptyGoalUnmet => "QUEUE_EMPTY_GOAL_UNMET",
            Ending::UnrecoverableError => "UNRECOVERABLE_ERROR",
        }
    }

    pub fn parse(s: &str) -> Option<Ending> {
        Ending::ALL.iter().copied().find(|e| e.as_str() == s)
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_the_seed() {
        let table: Vec<(&str, Class, i32, Alert)> = Ending::ALL
            .iter()
            .map(|e| (e.as_str(), e.class(), e.exit_code(), e.alert()))
            .collect();
        assert_eq!(
            table,
            vec![
                ("GOAL_MET", Class::Success, 0, Alert::None),
                ("BUDGET_EXHAUSTED", Class::Partial, 2, Alert::Alert),
                ("TIME_LIMIT", Class::Partial, 2, Alert::Alert),
                ("DRIFT_DETECTED", Class::Failure, 3, Alert::Page),
                ("NO_PROGRESS", Class::Failure, 3, Alert::Alert),
                ("QUEUE_EMPTY_GOAL_UNMET", Class::Failure, 3, Alert::Alert),
                ("UNRECOVERABLE_ERROR", Class::Failure, 4, Alert::Alert),
            ]
        );
    }

    #[test]
    fn only_drift_pages_and_only_goal_met_is_silent() {
        for e in Ending::ALL {
            assert_eq!(e.alert() == Alert::Page, e == Ending::DriftDetected, "{e}");
            assert_eq!(e.alert() == Alert::None, e == Ending::GoalMet, "{e}");
        }
    }

    #[test]
    fn error_kinds_travel_as_their_names_and_nothing_else_parses() {
        for k in ErrorKind::ALL {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::json!(k.as_str())
            );
            assert_eq!(ErrorKind::parse(k.as_str()), Some(*k));
        }
        assert!(serde_json::from_str::<ErrorKind>("\"recording\"").is_err());
    }

    #[test]
    fn names_round_trip_and_spec_exit_code_is_distinct() {
        for e in Ending::ALL {
            assert_eq!(Ending::parse(e.as_str()), Some(e));
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::json!(e.as_str())
            );
            assert_ne!(e.exit_code(), EXIT_SPEC_REJECTED);
        }
    }
}
