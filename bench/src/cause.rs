//! The one line a failing case-run leads with: its root cause, so the
//! person reading the FAIL line, summary.md, the JUnit message or the suite
//! page sees why before the follow-on failures (ending, score, cost) it
//! caused. The earliest in the run that applies:
//!
//! 1. a check that could not run (events.jsonl: a verify whose outcome is
//!    `could_not_run`, with the OS error or the shell's status and output):
//!    it does not end the run, so whatever ended it came later, often
//!    because of it (a retry the recording does not hold);
//! 2. the bench's own machinery: a failed setup, a recording miss (the call
//!    key and the nearest recorded one, from the replay's miss), a call
//!    replayed under other conditions, the live cap (`BenchFault`);
//! 3. the harness's own error that ended the run (report.json `error_kind`
//!    and `detail`: billed above reserve, a tampered goal, ...);
//! 4. no report at all (a harness crash): set where the runner finds it.
//!
//! Read from typed sources only (the fault enum, the report's closed
//! `ErrorKind`, the harness's event type); no message is matched.

use crate::audit::EventFacts;
use crate::bench_fault::BenchFault;
use harness::report::Report;

/// The root cause of a case-run, if one of the above applies.
pub fn root_cause(
    fault: Option<&BenchFault>,
    report: &Report,
    events: Option<&EventFacts>,
) -> Option<String> {
    if let Some(first) = events.and_then(|e| e.checks_not_run.first()) {
        return Some(first.clone());
    }
    if let Some(f) = fault {
        return Some(match f {
            // The harness's detail carries the replay's miss message: the
            // call key and the nearest recorded key.
            BenchFault::RecordingMiss { detail, .. } if !detail.is_empty() => detail.clone(),
            other => other.describe(),
        });
    }
    let kind = report.error_kind?;
    let detail = report.detail.as_deref().unwrap_or("(no detail)");
    Some(format!("harness error {}: {detail}", kind.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ending::{Ending, ErrorKind};

    fn report(kind: Option<ErrorKind>, detail: Option<&str>) -> Report {
        let s = harness::state::RunState::example(1);
        Report::build(
            &s,
            "g",
            Ending::UnrecoverableError,
            detail.map(str::to_string),
            kind,
            false,
            0,
        )
    }

    #[test]
    fn the_earliest_cause_leads() {
        let events = EventFacts {
            checks_not_run: vec![
                "check \"tests\" could not run (not started): Permission denied (os error 13)"
                    .into(),
            ],
            ..EventFacts::default()
        };
        let clean = report(None, None);
        let billed = report(
            Some(ErrorKind::BilledAboveReserve),
            Some("call execute/t1/a0/0 billed $0.02 above its $0.01 reserve"),
        );
        let c = root_cause(None, &billed, Some(&EventFacts::default())).unwrap();
        assert!(
            c.starts_with("harness error billed_above_reserve: call execute/t1/a0/0"),
            "{c}"
        );
        // The bench's machinery before the error it ended the run with.
        let fault = BenchFault::LiveCapReached {
            detail: "cap $1 reached".into(),
        };
        assert_eq!(
            root_cause(Some(&fault), &billed, None).unwrap(),
            "live cap reached: cap $1 reached"
        );
        // A check that could not run came before both (and often caused them).
        for f in [None, Some(&fault)] {
            let c = root_cause(f, &billed, Some(&events)).unwrap();
            assert!(c.contains("Permission denied"), "{c}");
        }
        assert!(root_cause(None, &clean, Some(&events))
            .unwrap()
            .contains("Permission denied"));
        // Nothing to say: no cause line.
        assert_eq!(root_cause(None, &clean, Some(&EventFacts::default())), None);
    }
}
