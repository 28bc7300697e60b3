//! Everything that can go wrong inside a lap, as values, and the class each
//! belongs to (`LapError::classify`); `policy::respond` maps a class to the
//! loop's response.

use crate::checkpoint::SaveError;
use crate::ending::ErrorKind;
use crate::goal::GoalTampered;
use crate::ledger::{BilledAboveReserve, BudgetExceeded, LedgerError, ReserveError};
use crate::model::types::ModelError;
use nix::sys::signal::Signal;

/// Everything that can go wrong inside a lap, as values. `classify` is the
/// only place that maps them to the loop's two responses.
#[derive(Debug, thiserror::Error)]
pub enum LapError {
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    #[error("{0}")]
    Model(#[from] ModelError),
    #[error("{0}")]
    Goal(#[from] GoalTampered),
    #[error("{0}")]
    State(#[from] crate::state_seal::StateTampered),
    #[error("{0}")]
    Checkpoint(#[from] SaveError),
    #[error("{0}")]
    Ledger(#[from] LedgerError),
    #[error("{0}")]
    BilledAboveReserve(#[from] BilledAboveReserve),
    #[error("{0}")]
    Internal(String),
    /// The run's wall clock ran out inside the lap (a check or tool was cut
    /// by it, or it ran out between steps). Not an error of anything: the
    /// top of the loop turns it into TIME_LIMIT (or an ending above it).
    #[error("the run's wall clock ran out during {during}")]
    WallClock { during: String },
    /// The run was asked to stop (crate::stop) and this is a safe point:
    /// not an error and not an ending; the run is suspended.
    #[error("the run was asked to stop ({signal}) during {during}")]
    Stopped { signal: Signal, during: String },
}

impl From<ReserveError> for LapError {
    fn from(e: ReserveError) -> Self {
        match e {
            ReserveError::Budget(b) => LapError::Budget(b),
            ReserveError::NoPrice(m) => LapError::Internal(format!("no price for model {m:?}")),
            ReserveError::Journal(j) => LapError::Ledger(j),
        }
    }
}

pub enum Classified {
    /// The ledger refused the next call: not broken, a PARTIAL.
    Blocked,
    /// The run's wall clock ran out during a model call: a PARTIAL too.
    TimeUp,
    Unrecoverable {
        kind: ErrorKind,
        detail: String,
    },
    /// The wall clock ran out mid-lap: the priority order decides the ending.
    WallClock {
        detail: String,
    },
    /// A stop request: no ending; the run is suspended (crate::stop).
    Stopped(Signal),
}

impl LapError {
    pub fn classify(self) -> Classified {
        match self {
            LapError::Budget(_) => Classified::Blocked,
            LapError::Model(ModelError::Deadline { .. }) => Classified::TimeUp,
            LapError::Model(ModelError::RecordingMiss { detail }) => Classified::Unrecoverable {
                kind: ErrorKind::RecordingMiss,
                detail: format!(
                    "recording miss (the replay had no recording for this call): {detail}"
                ),
            },
            LapError::Model(e @ ModelError::Rejected { .. }) => Classified::Unrecoverable {
                kind: ErrorKind::HttpRejected,
                detail: e.to_string(),
            },
            LapError::Model(e @ ModelError::RetriesExhausted { .. }) => Classified::Unrecoverable {
                kind: ErrorKind::ModelUnavailable,
                detail: e.to_string(),
            },
            LapError::Model(e @ ModelError::Config(_)) => Classified::Unrecoverable {
                kind: ErrorKind::EndpointConfig,
                detail: e.to_string(),
            },
            LapError::Goal(e) => Classified::Unrecoverable {
                kind: ErrorKind::GoalTampered,
                detail: e.to_string(),
            },
            LapError::State(e) => Classified::Unrecoverable {
                kind: ErrorKind::StateTampered,
                detail: e.to_string(),
            },
            LapError::Checkpoint(e) => Classified::Unrecoverable {
                kind: ErrorKind::CheckpointWrite,
                detail: e.to_string(),
            },
            LapError::Ledger(e) => Classified::Unrecoverable {
                kind: ErrorKind::LedgerJournal,
                detail: e.to_string(),
            },
            LapError::BilledAboveReserve(e) => Classified::Unrecoverable {
                kind: ErrorKind::BilledAboveReserve,
                detail: e.to_string(),
            },
            LapError::Internal(d) => Classified::Unrecoverable {
                kind: ErrorKind::Internal,
                detail: d,
            },
            e @ LapError::WallClock { .. } => Classified::WallClock {
                detail: e.to_string(),
            },
            LapError::Stopped { signal, .. } => Classified::Stopped(signal),
        }
    }
}

/// A check cut short with no verdict (crate::check's `cut_short`): the
/// stop request's doing if one is pending, else the wall clock's.
pub(super) fn cut_short(during: String) -> LapError {
    match crate::stop::requested() {
        Some(signal) => LapError::Stopped { signal, during },
        None => LapError::WallClock { during },
    }
}
