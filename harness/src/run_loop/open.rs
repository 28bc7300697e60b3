//! Start-up: from a spec and a state dir to a `Runner` ready for its first
//! lap, or the one early end (`EarlyEnd`) that ends the run before any lap:
//! could not start, had already ended, or a raise refused.

use super::Raise;
use crate::checkpoint;
use crate::ending::Ending;
use crate::events::{Event, EventLog};
use crate::goal::Goal;
use crate::ledger::Ledger;
use crate::spec::RunSpec;
use crate::state::RunState;
use std::path::Path;

/// Raise the limit a finished run ended on, so it goes on from its
/// checkpoint: refused (Err, nothing changed) unless the run ended on that
/// very limit and the new value is above the old one (for the cap, the one
/// the run ended on, and above what is spent; for the clock, above the time
/// run). The same raise again (the journal's last raise of that limit is
/// this value) never journals twice: it completes a raise killed before its
/// checkpoint, else it is a plain resume or re-report. The raise is a
/// ledger journal line (when, old, new), then `finished` is cleared and the
/// checkpoint written; the goal, queue and verified tasks are untouched.
pub(super) fn raise_limit(
    state: &mut RunState,
    raise: Raise,
    spec: &RunSpec,
    ended_cap: f64,
    state_dir: &Path,
    goal: &Goal,
    events: &mut EventLog,
) -> Result<(), String> {
    use crate::ledger::LimitKind;
    let (flag, needs) = match raise.limit {
        LimitKind::HardCapUsd => ("--raise-cap-usd", Ending::BudgetExhausted),
        LimitKind::WallClockLimitS => ("--raise-wall-clock-s", Ending::TimeLimit),
    };
    let mut ledger =
        Ledger::new(spec.hard_cap_usd, spec.prices.clone()).for_protocol(spec.model.protocol);
    ledger
        .open_journal(&state_dir.join("ledger.jsonl"))
        .map_err(|e| format!("{flag}: {e}"))?;
    // The same raise again, after a process that journaled it was killed:
    // before its checkpoint (the journal holds more raises than the
    // checkpoint) the raise is completed, never journaled twice; after it
    // (the run no longer ended) the command is a resume.
    let of_limit =
        |v: &[crate::ledger::LimitRaise]| v.iter().filter(|r| r.limit == raise.limit).count();
    if ledger.raised(raise.limit) == Some(raise.to) {
        let unrecorded = of_limit(ledger.raises()) > of_limit(&state.limit_raises);
        match &state.finished {
            Some(f) if unrecorded && f.ending == needs => {
                state.finished = None;
                state.ledger = ledger.snapshot().clone();
                state.ledger.blocked = false;
                if raise.limit == LimitKind::HardCapUsd {
                    state.hard_cap_usd = raise.to;
                }
                state.limit_raises = ledger.raises().to_vec();
                goal.assert_intact().map_err(|e| e.to_string())?;
                return checkpoint::save(state_dir, state).map_err(|e| {
                    format!("{flag}: the raise is journaled but the checkpoint could not be written ({e}); run the same command again")
                });
            }
            // Taken and recorded: the run goes on, or is re-reported.
            _ if !unrecorded => return Ok(()),
            Some(_) | None => {}
        }
    }
    // Refused unless the run ended on this very limit (a run not ended, or
    // ended otherwise, may still be this very raise again: above).
    if let Some(f) = state.finished.as_ref().filter(|f| f.ending != needs) {
        return Err(format!("{flag}: the run ended {}, not {needs}: only a run that ended on this limit goes on under a raised one", f.ending));
    }
    if state.finished.is_none() {
        return Err(format!("{flag}: the run has not ended (its checkpoint holds no ending): a limit is raised only after the run ended {needs}; to resume it, run the same command without {flag}"));
    }
    let spent = ledger.spent_usd();
    let elapsed_s = state.elapsed_ms as f64 / 1000.0;
    let (old, floor, unit) = match raise.limit {
        // The cap the run ended on: the spec's or the last raise, or lower
        // when the command that ended it had --max-usd.
        LimitKind::HardCapUsd => (
            if ended_cap.is_finite() && ended_cap > 0.0 {
                ended_cap
            } else {
                ledger.hard_cap_usd()
            },
            spent,
            "spent",
        ),
        LimitKind::WallClockLimitS => (
            ledger
                .raised(LimitKind::WallClockLimitS)
                .unwrap_or(spec.wall_clock_limit_s),
            elapsed_s,
            "run so far",
        ),
    };
    if !(raise.to.is_finite() && raise.to > old && raise.to > floor) {
        return Err(format!(
            "{flag} {}: expected a number above the current limit {old} and above the {floor:.4} {unit}: a limit is only ever raised",
            raise.to
        ));
    }
    let r = ledger
        .raise(raise.limit, old, raise.to)
        .map_err(|e| format!("{flag}: the raise could not be journaled: {e}"))?;
    state.finished = None;
    state.ledger = ledger.snapshot().clone();
    state.ledger.blocked = false;
    if raise.limit == LimitKind::HardCapUsd {
        state.hard_cap_usd = raise.to;
    }
    state.limit_raises.push(r);
    events.emit(state.step, Event::LimitRaised(r));
    goal.assert_intact().map_err(|e| e.to_string())?;
    crate::chaos_hook::point(crate::chaos_hook::Phase::AfterRaiseBeforeCheckpoint);
    checkpoint::save(state_dir, state).map_err(|e| {
        format!("{flag}: the raise is journaled but the checkpoint could not be written ({e}); run the same command again")
    })
}
