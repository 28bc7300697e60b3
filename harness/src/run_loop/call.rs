//! The model call and the ledger gate: reserve the worst case, call within
//! what is left of the wall clock, book what was billed; a stop request
//! abandons the call with its reserve booked as spent.

use super::error::LapError;
use super::Runner;
use crate::chaos_hook::{point, Phase};
use crate::events::{Event, ModelCall};
use crate::ledger::{AttemptReserve, BilledAboveReserve, CallBound};
use crate::model::gate::CallError;
use crate::model::types::{ModelReply, ModelRequest};
use nix::sys::signal::Signal;

impl Runner {
    /// Reserve the worst case, call, book all four usage fields. Every
    /// attempt that may bill is paid from a reservation of its own (the gate
    /// reserves again after an attempt booked at its worst case), and the
    /// whole call is bounded by what is left of the run's wall clock.
    pub(super) async fn call_model(
        &mut self,
        mut req: ModelRequest,
        phase: Phase,
    ) -> Result<ModelReply, LapError> {
        self.goal.assert_intact()?;
        self.clock_left(|| format!("before model call {}", req.call_key))?;
        self.spec.model.bound(&mut req);
        // The bytes that go on the wire bound the tokens the model reads.
        let body_len = self.client.wire_body(&req).to_string().len() as u64;
        let bound = CallBound::for_request(self.spec.model.protocol, body_len, &req);
        let res = self.ledger.reserve(
            req.role,
            &req.call_key,
            &req.model,
            bound.input_tokens_max,
            bound.output_tokens_max,
        )?;
        if req.trailing_notice.is_some() {
            // Counted only for requests actually sent, not ones the ledger refused.
            self.state.budget_notices += 1;
        }
        point(phase); // a kill here leaves a journaled reserve: booked at worst case on resume
        if let Some(off) = self.rules.off_the_recording {
            off.apply(&mut req);
        }
        let deadline = self.clock_deadline();
        let mut gate = AttemptReserve::new(&mut self.ledger, req.role, res, bound, deadline);
        // A stop request abandons the call in flight (crate::stop).
        let result = tokio::select! {
            r = self.client.call_gated(&req, &mut gate) => r,
            signal = crate::stop::requested_wait() => {
                let open = gate.into_open();
                return Err(self.abandon_call(&req, open, signal));
            }
        };
        let open = gate.into_open();
        match result {
            Ok(reply) => {
                let Some(res) = open else {
                    return Err(LapError::Internal(format!(
                        "{}: a reply arrived with no reservation open to book it",
                        req.call_key
                    )));
                };
                let booked = self.ledger.record(res, reply.usage)?;
                point(Phase::BetweenLedgerRecordAndCheckpoint);
                self.state.ledger = self.ledger.snapshot().clone();
                self.events.emit(
                    self.state.step,
                    Event::ModelCall(ModelCall {
                        role: req.role,
                        call_key: req.call_key.clone(),
                        usage: reply.usage,
                        cost_usd: booked.cost_usd,
                        reserved_usd: booked.reserved_usd,
                        input_tokens_max: bound.input_tokens_max,
                        latency_ms: reply.latency_ms,
                        attempts: reply.attempts,
                        billed_unknown_attempts: reply.billed_unknown_attempts,
                        stop: reply.stop_reason.clone(),
                        notice: req.trailing_notice.is_some(),
                    }),
                );
                if booked.overbilled() {
                    return Err(LapError::BilledAboveReserve(BilledAboveReserve {
                        call_key: req.call_key.clone(),
                        reserved_usd: booked.reserved_usd,
                        billed_usd: booked.cost_usd,
                        input_tokens_max: bound.input_tokens_max,
                        output_tokens_max: bound.output_tokens_max,
                        spent_usd: self.ledger.spent_usd(),
                        hard_cap_usd: self.ledger.hard_cap_usd(),
                    }));
                }
                Ok(reply)
            }
            Err(e) => {
                // Still open: the last attempt billed nothing (or none was
                // made). Attempts that may have billed are already booked.
                if let Some(res) = open {
                    self.ledger.release(res)?;
                }
                self.state.ledger = self.ledger.snapshot().clone();
                let e = match e {
                    CallError::Model(m) => LapError::Model(m),
                    CallError::Stopped(r) => LapError::from(r),
                };
                self.note_model_error(&req, &e);
                Err(e)
            }
        }
    }

    /// A model call abandoned for a stop request: its open reservation (the
    /// attempt on the wire, which may bill) stays booked, at its worst case,
    /// as spent; the journal says so before the run is suspended.
    fn abandon_call(
        &mut self,
        req: &ModelRequest,
        open: Option<crate::ledger::Reservation>,
        signal: Signal,
    ) -> LapError {
        let booked = match open {
            Some(res) => match self.ledger.book_worst(res) {
                Ok(usd) => usd,
                Err(e) => return LapError::Ledger(e),
            },
            None => 0.0,
        };
        self.state.ledger = self.ledger.snapshot().clone();
        let e = LapError::Stopped {
            signal,
            during: format!(
                "model call {} (abandoned; ${booked:.6} booked as spent, its worst case)",
                req.call_key
            ),
        };
        self.note_model_error(req, &e);
        e
    }

    /// A model call that ended without a reply, in events.jsonl.
    fn note_model_error(&mut self, req: &ModelRequest, e: &LapError) {
        self.events.emit(
            self.state.step,
            Event::ModelError {
                role: req.role,
                call_key: req.call_key.clone(),
                error: e.to_string(),
            },
        );
    }

    /// When the run's wall clock runs out, as an `Instant` for the client
    /// (`None` only for a limit too far away to represent).
    fn clock_deadline(&self) -> Option<std::time::Instant> {
        let limit_ms = self.spec.wall_clock_limit_s * 1000.0;
        let left_ms = (limit_ms - self.elapsed_ms() as f64).max(0.0);
        std::time::Instant::now().checked_add(std::time::Duration::from_millis(
            left_ms.min(u64::MAX as f64) as u64,
        ))
    }
}
