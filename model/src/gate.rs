//! The seam between the client's retry loop and whoever pays for the
//! attempts. The client knows what each attempt came to on the wire; it does
//! not know about dollars or the run's clock. An [`AttemptGate`] does: the
//! harness's gate (`ledger::AttemptReserve`) books an attempt that may have
//! been billed for an unknown amount at its worst case and reserves again
//! before the next one (a reserve the ledger may refuse), and it hands the
//! client the run's deadline so no attempt, and no backoff sleep, outlives
//! the wall clock.
//!
//! `ModelClient::call` is `call_gated` with [`Ungated`]: no money, no
//! deadline, the behaviour the bench's judge calibration relies on.

use std::convert::Infallible;
use std::time::Instant;

use super::types::ModelError;

/// What a failed attempt may have cost, as far as the client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// Definitely not billed: the connection was never made, or the server
    /// answered with a status that bills nothing (4xx, 429, 5xx), or the
    /// replay server said it has no recording.
    NotBilled,
    /// May have been billed, for an amount nobody can know: HTTP 200 whose
    /// body could not be parsed or read to the end, or a transport failure
    /// after the request may have reached the server (a reset after sending,
    /// a timeout while the server was working).
    Unknown,
}

/// Consulted by `ModelClient::call_gated` around every attempt.
pub trait AttemptGate {
    /// Why the gate stopped the call (e.g. the ledger refused the next
    /// reserve). Returned to the caller as [`CallError::Stopped`].
    type Stop;

    /// Before attempt `attempt` (0-based) is made, the first one included.
    /// `Err` ends the call; the attempt is not made.
    fn before_attempt(&mut self, attempt: u32) -> Result<(), Self::Stop>;

    /// After attempt `attempt` failed (it will be retried or the call will
    /// give up). Not called for the attempt that succeeded, nor for a fatal
    /// answer (4xx, recording miss), which bills nothing.
    fn after_failed_attempt(&mut self, attempt: u32, billing: Billing) -> Result<(), Self::Stop>;

    /// The instant by which the whole call must be over. Every attempt is
    /// cut at it (connect, a server dripping its body, all of it) and no
    /// backoff sleep goes past it. `None`: only the request timeout bounds
    /// an attempt.
    fn deadline(&self) -> Option<Instant> {
        None
    }
}

/// A call's failure: the model side, or the gate's own stop.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError<S> {
    Model(ModelError),
    Stopped(S),
}

/// No money, no clock: every attempt allowed, only timeouts bound it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ungated;

impl AttemptGate for Ungated {
    type Stop = Infallible;
    fn before_attempt(&mut self, _attempt: u32) -> Result<(), Infallible> {
        Ok(())
    }
    fn after_failed_attempt(&mut self, _attempt: u32, _billing: Billing) -> Result<(), Infallible> {
        Ok(())
    }
}
