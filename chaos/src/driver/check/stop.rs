//! stop_honored (sigterm mode): what a process asked to stop left behind.

use super::Checks;
use crate::driver::observe::{Paths, Proc};
use crate::harness_files::Event;
use crate::invariant::Invariant;
use crate::oracle::Ckpt;
use crate::proc::{is_stop_code, Outcome};

/// A process sent SIGTERM exited 143 and left a stop report (no ending), a
/// checkpoint to resume from, and no ending published; or, stopped while it
/// was already publishing an ending, it ended (the ending checks hold it
/// to that). Twice: 143 at once, and the report is optional.
pub(in crate::driver) fn check_stop(ck: &mut Checks, pr: &Proc, p: &Paths) {
    let Outcome::Stopped { at, code, twice } = &pr.outcome else {
        return;
    };
    ck.ex(Invariant::StopHonored);
    let inv = Invariant::StopHonored;
    let idx = pr.idx;
    let term = harness::stop::exit_code(nix::sys::signal::Signal::SIGTERM);
    if !is_stop_code(*code) {
        // It ended: an ending's code (held to its report by the ending checks).
        return;
    }
    // Stopped before the run started (before its state dir was touched):
    // the harness says so on stderr and writes nothing, as it must; the
    // next process starts the run. Seen by chaos: a random-timing SIGTERM
    // 4.2 ms after spawn, during the spec's load.
    if pr.events.is_empty()
        && pr.end.ckpt.bytes() == pr.spawn.ckpt.bytes()
        && pr.end.events_len == pr.spawn.events_len
    {
        if *code != term {
            ck.fail(
                inv,
                idx,
                format!("sent SIGTERM at {at} before the run started; exited {code}, not {term}"),
            );
        }
        return;
    }
    if *code != term {
        ck.fail(
            inv,
            idx,
            format!("sent SIGTERM at {at}; exited {code}, not {term}"),
        );
    }
    // Twice: the second signal may have cut an ending being published
    // (exit at once, as a SIGKILL would leave it; the resume re-reports).
    if pr.events.contains(&Event::Ended) && !*twice {
        ck.fail(
            inv,
            idx,
            format!("sent SIGTERM at {at}; exited {code} (stopped) but published an ending event"),
        );
    }
    if !matches!(pr.end.ckpt, Ckpt::Valid(..)) && !*twice {
        ck.fail(
            inv,
            idx,
            format!(
                "sent SIGTERM at {at}; stopped with no whole checkpoint on disk to resume from"
            ),
        );
    }
    stop_report(ck, idx, p, at, *code, *twice);
    if !pr.events.contains(&Event::Stopped) && !*twice {
        ck.fail(
            inv,
            idx,
            format!("sent SIGTERM at {at}; no `stopped` event in events.jsonl"),
        );
    }
}

/// The stop report a stopped process left: its signal and exit, no task
/// both in flight and settled, and never readable as an ended run's report.
fn stop_report(ck: &mut Checks, idx: usize, p: &Paths, at: &str, code: i32, twice: bool) {
    let inv = Invariant::StopHonored;
    match harness::report::StoppedReport::load(&p.state) {
        Ok(r) => {
            if r.stopped.signal != "SIGTERM" || r.stopped.exit_code != code {
                ck.fail(
                    inv,
                    idx,
                    format!(
                        "sent SIGTERM at {at}; the stop report names {} (exit {})",
                        r.stopped.signal, r.stopped.exit_code
                    ),
                );
            }
            if let Some(t) = &r.in_flight_task {
                if r.verified.contains(t) || r.parked.contains(t) {
                    ck.fail(inv, idx, format!("sent SIGTERM at {at}; task {t} is in flight and also settled in the stop report"));
                }
            }
            if harness::report::Report::load(&p.state).is_ok() {
                ck.fail(
                    inv,
                    idx,
                    "a stop report was read as an ended run's report".into(),
                );
            }
        }
        Err(e) if !twice => {
            ck.fail(
                inv,
                idx,
                format!("sent SIGTERM at {at}; exited {code} with no stop report: {e}"),
            );
        }
        Err(_) => {} // the second signal came before it was written
    }
}
