//! Test machinery: a panic at a named point of the run, to prove that a
//! panic anywhere is an ending (tests/hooked/panics.rs). Compiled in only with the
//! `fault-injection` cargo feature, which the production build never enables
//! (the `harness-test-variants` binary, copied to target/test-variants); without it
//! [`panic_point`] is an empty inline function and nothing reads the
//! environment.
//!
//! With the feature, `HARNESS_PANIC_AT=<point>:<n>[,<point>:<n>...]` panics
//! the n-th time (1-based, in this process) the run reaches `<point>` (a list
//! can panic twice: in the loop, then while ending it). Points: every chaos
//! phase (`crate::chaos_hook::Phase` names, e.g. `temp_written` = a
//! checkpoint or report write in flight, `during_model_call` = a call
//! reserved but not booked) and the ones in [`POINTS`].

/// Points of the run besides the chaos phases.
pub const POINTS: [&str; 5] = [
    // the top of a lap, after should_stop said go on
    "lap",
    // finish: before the in-flight task is settled
    "finish_start",
    // finish: after the final checkpoint, before the alert and the report
    "finish_after_checkpoint",
    // the re-report of a finished run
    "rereport",
    // the ending after a panic (a panic while handling a panic)
    "after_panic",
];

pub const PANIC_AT_ENV: &str = "HARNESS_PANIC_AT";

#[cfg(feature = "fault-injection")]
#[track_caller]
pub fn panic_point(point: &str) {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static TARGETS: OnceLock<Vec<(String, u64)>> = OnceLock::new();
    static COUNTS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    let targets = TARGETS.get_or_init(|| {
        std::env::var(PANIC_AT_ENV)
            .unwrap_or_default()
            .split(',')
            .filter_map(|t| {
                let (p, n) = t.split_once(':')?;
                Some((p.to_string(), n.parse().ok()?))
            })
            .collect()
    });
    let Some(n) = targets.iter().find(|(p, _)| p == point).map(|(_, n)| n) else {
        return;
    };
    let hit = {
        let mut m = COUNTS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let c = m.entry(point.to_string()).or_insert(0);
        *c += 1;
        *c == *n
    };
    if hit {
        panic!("injected panic at {point} (occurrence {n})");
    }
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn panic_point(_point: &str) {}
