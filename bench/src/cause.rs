//! The one line a failing case-run leads with: its root cause, so the
//! person reading the FAIL line, summary.md, the JUnit message or the suite
//! page sees why before the follow-on failures (ending, score, cost) it
//! caused. The earliest in the run that applies:
//!
//! 1. a check that could not run (events.jsonl: a verify whose outcome is
//!    `could_not_run`, with the OS error or the shell's status and output):
//!    it does not end the run, so whatever ended it came later, often
//!    because of it (a retry the recording does not hold);
//! 2. the bench's own machinery: a failed setup, a recording miss, a call
//!    replayed under other conditions, the live cap (`BenchFault`). A
//!    recording miss is told as its causal chain: the first setback the
//!    recording did not foresee (a verify that found the work not done,
//!    with the check's name and output tail; a plan task refused, with
//!    why), then "the run then asked for <call>, which the recording
//!    lacks". Only a miss with no such setback before it (the recording ran
//!    out on the path it recorded) is "not an agent failure";
//! 3. the harness's own error that ended the run (report.json `error_kind`
//!    and `detail`: billed above reserve, a tampered goal, ...);
//! 4. no report at all (a harness crash): set where the runner finds it.
//!
//! Read from typed sources only (the fault enum, the report's closed
//! `ErrorKind`, the harness's event type, the cassette's call keys); no
//! message is matched.

use crate::audit::{EventFacts, Setback};
use crate::bench_fault::BenchFault;
use harness::report::Report;

/// Whether the case-run's recording (its cassette variant) holds a call
/// key starting with the given prefix, for telling a setback the recording
/// foresaw from one it did not. None for a live case-run (no recording).
pub type Recorded<'a> = Option<&'a dyn Fn(&str) -> bool>;

/// The root cause of a case-run, if one of the above applies.
pub fn root_cause(
    fault: Option<&BenchFault>,
    report: &Report,
    events: Option<&EventFacts>,
    recorded: Recorded<'_>,
) -> Option<String> {
    if let Some(first) = events.and_then(|e| e.checks_not_run.first()) {
        return Some(first.clone());
    }
    if let Some(f) = fault {
        return Some(match f {
            BenchFault::RecordingMiss { call_key, detail } => {
                recording_miss(call_key.as_deref(), detail, events, recorded)
            }
            other => other.describe(),
        });
    }
    let kind = report.error_kind?;
    let detail = report.detail.as_deref().unwrap_or("(no detail)");
    Some(format!("harness error {}: {detail}", kind.as_str()))
}

/// A recording miss told from its first event: the setback that took the
/// run off the recording, then the call it asked for; or, with none, the
/// miss itself, which is then the recording's and not the agent's.
fn recording_miss(
    call_key: Option<&str>,
    detail: &str,
    events: Option<&EventFacts>,
    recorded: Recorded<'_>,
) -> String {
    let asked = match call_key {
        Some(k) => format!("the run then asked for {k}, which the recording lacks"),
        None => format!("the run then made a call the recording could not answer ({detail})"),
    };
    let what = if detail.is_empty() {
        format!(
            "recording miss: no recording for call_key {}",
            call_key.unwrap_or("?")
        )
    } else {
        detail.to_string()
    };
    // Without the recording's keys no setback can be told foreseen or not,
    // and nobody's failure is claimed.
    let Some(held) = recorded else {
        return what;
    };
    let setbacks = events.map_or(&[][..], |e| &e.setbacks[..]);
    match setbacks.iter().find(|s| unforeseen(s, held)) {
        Some(s) => format!("{}; {asked}", describe(s)),
        None => {
            format!("{what} (the recording ran out on the path it recorded; not an agent failure)")
        }
    }
}

/// `s` on one line (a check's output tail has many): its non-blank lines,
/// trimmed, joined by " | ", so the FAIL line, summary.md's run line and
/// the JUnit message stay one line each.
fn one_line(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join(" | ")
}

/// A setback the recording did not foresee: a failed verify whose retry
/// the recording does not hold and after which no other call was
/// answered (the run left the recording there); a refused task the
/// recording holds calls of (it was recorded as admitted).
fn unforeseen(s: &Setback, held: &dyn Fn(&str) -> bool) -> bool {
    match s {
        Setback::VerifyFailed {
            task,
            attempt,
            answered_after,
            ..
        } => !answered_after && !held(&format!("execute/{task}/a{}/", attempt + 1)),
        Setback::TaskRejected { id, .. } => held(&format!("execute/{id}/")),
    }
}

fn describe(s: &Setback) -> String {
    match s {
        Setback::VerifyFailed {
            task, attempt, why, ..
        } => format!(
            "task {task}'s verify failed after attempt {}: {}",
            attempt + 1,
            one_line(why)
        ),
        Setback::TaskRejected { id, origin, reason } => {
            format!(
                "the {origin} named task {id}, which was refused: {}",
                one_line(reason)
            )
        }
    }
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
        let c = root_cause(None, &billed, Some(&EventFacts::default()), None).unwrap();
        assert!(
            c.starts_with("harness error billed_above_reserve: call execute/t1/a0/0"),
            "{c}"
        );
        // The bench's machinery before the error it ended the run with.
        let fault = BenchFault::LiveCapReached {
            detail: "cap $1 reached".into(),
        };
        assert_eq!(
            root_cause(Some(&fault), &billed, None, None).unwrap(),
            "live cap reached: cap $1 reached"
        );
        // A check that could not run came before both (and often caused them).
        for f in [None, Some(&fault)] {
            let c = root_cause(f, &billed, Some(&events), None).unwrap();
            assert!(c.contains("Permission denied"), "{c}");
        }
        assert!(root_cause(None, &clean, Some(&events), None)
            .unwrap()
            .contains("Permission denied"));
        // Nothing to say: no cause line.
        assert_eq!(
            root_cause(None, &clean, Some(&EventFacts::default()), None),
            None
        );
    }

    fn miss(key: &str) -> BenchFault {
        BenchFault::RecordingMiss {
            call_key: Some(key.into()),
            detail: format!("recording miss: no recording for call_key {key:?}"),
        }
    }

    fn failed(task: &str, attempt: u32, answered_after: bool) -> Setback {
        Setback::VerifyFailed {
            task: task.into(),
            attempt,
            why: "check \"tests\" failed (exit 1): Ran 3 tests\n\nFAILED (failures=2)".into(),
            answered_after,
        }
    }

    fn cause_of(setbacks: Vec<Setback>, recorded: &[&str], key: &str) -> String {
        let events = EventFacts {
            setbacks,
            ..EventFacts::default()
        };
        let held = |p: &str| recorded.iter().any(|k| k.starts_with(p));
        let r = report(Some(ErrorKind::RecordingMiss), Some("miss"));
        root_cause(Some(&miss(key)), &r, Some(&events), Some(&held)).unwrap()
    }

    #[test]
    fn a_recording_miss_leads_with_the_setback_the_recording_did_not_foresee() {
        let rec = [
            "plan/0",
            "execute/t1/a0/0",
            "execute/t2/a0/0",
            "execute/t2/a1/0",
        ];
        // A failed verify whose retry the recording lacks, the retry asked.
        let c = cause_of(vec![failed("t1", 0, false)], &rec, "execute/t1/a1/0");
        assert_eq!(
            c,
            "task t1's verify failed after attempt 1: check \"tests\" failed (exit 1): Ran 3 tests | FAILED (failures=2); the run then asked for execute/t1/a1/0, which the recording lacks"
        );
        // A failed verify the recording foresaw (it holds the retry) or went
        // on past (another task's call answered after it) is no cause: the
        // later unforeseen one is, else the recording ran out on its path.
        let c = cause_of(
            vec![failed("t2", 0, false), failed("t1", 0, false)],
            &rec,
            "execute/t1/a1/0",
        );
        assert!(c.starts_with("task t1's verify failed"), "{c}");
        let c = cause_of(vec![failed("t1", 0, true)], &rec, "plan/1");
        assert!(
            c.ends_with("(the recording ran out on the path it recorded; not an agent failure)"),
            "{c}"
        );
        // A refused task the recording holds calls of (it was recorded as
        // admitted) is the cause; one it holds none of was refused there too.
        let refused = |id: &str| Setback::TaskRejected {
            id: id.into(),
            origin: "plan".into(),
            reason: "check \"unit\" is not defined by the spec".into(),
        };
        let c = cause_of(vec![refused("t9"), refused("t1")], &rec, "replan/0");
        assert_eq!(
            c,
            "the plan named task t1, which was refused: check \"unit\" is not defined by the spec; the run then asked for replan/0, which the recording lacks"
        );
        // Without the recording's keys nobody's failure is claimed.
        let events = EventFacts {
            setbacks: vec![failed("t1", 0, false)],
            ..EventFacts::default()
        };
        let r = report(Some(ErrorKind::RecordingMiss), Some("miss"));
        let c = root_cause(Some(&miss("x")), &r, Some(&events), None).unwrap();
        assert_eq!(c, "recording miss: no recording for call_key \"x\"");
    }
}
