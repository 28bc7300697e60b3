//! The money side of one model call's attempts: the `AttemptGate` the
//! harness hands to `ModelClient::call_gated`.
//!
//! One reservation pays for one attempt that may bill. An attempt that
//! bills nothing (a refused connection, a 429, a 5xx) leaves its reservation
//! standing for the next attempt; an attempt that may have been billed for
//! an unknown amount (a garbled 200, a reset after sending, a timeout while
//! the server works) is booked at its worst case, and the next attempt
//! reserves again first, which the ledger may refuse: the call then stops
//! and the run ends BUDGET_EXHAUSTED, never over the cap.

use std::time::Instant;

use super::{CallBound, Ledger, Reservation, ReserveError};
use crate::model::gate::{AttemptGate, Billing};
use crate::model::types::CallRole;

pub struct AttemptReserve<'a> {
    ledger: &'a mut Ledger,
    role: CallRole,
    call_key: String,
    model: String,
    bound: CallBound,
    /// The reservation the next (or current) attempt is paid from.
    open: Option<Reservation>,
    deadline: Option<Instant>,
}

impl<'a> AttemptReserve<'a> {
    /// `first` is the reservation made for attempt 0 of a `role` call (by
    /// the caller, so a refusal there is the call never starting), `bound`
    /// the bound it was made from. `deadline` is the run's clock (`None`: no
    /// wall-clock bound).
    pub fn new(
        ledger: &'a mut Ledger,
        role: CallRole,
        first: Reservation,
        bound: CallBound,
        deadline: Option<Instant>,
    ) -> AttemptReserve<'a> {
        AttemptReserve {
            ledger,
            role,
            call_key: first.call_key.clone(),
            model: first.model.clone(),
            bound,
            open: Some(first),
            deadline,
        }
    }

    /// The reservation still open when the call returned: the successful
    /// attempt's (book its usage) or the last attempt's when it billed
    /// nothing (release it). `None` when the last attempt was booked at its
    /// worst case, or a re-reservation was refused.
    pub fn into_open(self) -> Option<Reservation> {
        self.open
    }
}

impl AttemptGate for AttemptReserve<'_> {
    type Stop = ReserveError;

    fn before_attempt(&mut self, attempt: u32) -> Result<(), ReserveError> {
        if self.open.is_none() {
            self.open = Some(self.ledger.reserve_attempt(
                self.role,
                &self.call_key,
                &self.model,
                &self.bound,
                attempt,
            )?);
        }
        Ok(())
    }

    fn after_failed_attempt(
        &mut self,
        _attempt: u32,
        billing: Billing,
    ) -> Result<(), ReserveError> {
        if billing == Billing::Unknown {
            if let Some(r) = self.open.take() {
                self.ledger.book_worst(r)?;
            }
        }
        Ok(())
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}
