//! The run's clock. The wall-clock limit counts elapsed time, never dates:
//! within a process the monotonic clock (`Instant`), which no NTP step,
//! `date -s` or suspended VM moves; across resumes, the elapsed time the
//! checkpoint carries (`RunState::elapsed_ms`, written with every
//! checkpoint). Time while no harness process ran (between a kill and its
//! resume) is not counted, and the time since the last checkpoint of a
//! killed process is lost (at most one step's worth): the limit errs
//! toward letting a resumed run finish its work, never toward a clock that
//! jumped. `now_unix_ms` is for timestamps people read (events, reports),
//! never for a limit.

use std::time::Instant;

/// Milliseconds since the Unix epoch on the realtime clock: a timestamp to
/// read, which a clock step moves; never used to measure a duration.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The machine's offset from UTC now, in seconds east (the TZ variable or
/// /etc/localtime, as the C library reads them); 0 when it cannot tell.
/// For the page's local times only: never for a limit.
pub fn local_utc_offset_s() -> i32 {
    let now = (now_unix_ms() / 1000) as libc::time_t;
    // SAFETY: tzset and localtime_r read the zone into `tm`, a local we own;
    // localtime_r is the reentrant form (no shared static result).
    unsafe {
        tzset();
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff as i32
    }
}

extern "C" {
    /// POSIX: reads TZ into the C library's zone (the libc crate does not
    /// declare it on unix).
    fn tzset();
}

/// How long the run has run: what earlier processes carried plus this
/// process's monotonic time.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    started: Instant,
    /// `now_unix_ms` at the start: read only by the broken variant
    /// `realtime-elapsed` (harness::mutants), never by the real clock.
    started_unix_ms: u64,
    carried_ms: u64,
}

impl RunClock {
    /// A clock that goes on from `carried_ms` (0 for a new run; the
    /// checkpoint's `elapsed_ms` for a resume).
    pub fn resume_from(carried_ms: u64) -> RunClock {
        RunClock {
            started: Instant::now(),
            started_unix_ms: now_unix_ms(),
            carried_ms,
        }
    }

    pub fn elapsed_ms(&self) -> u64 {
        let here = if crate::mutants::active(crate::mutants::Mutant::RealtimeElapsed) {
            now_unix_ms().saturating_sub(self.started_unix_ms)
        } else {
            u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
        };
        self.carried_ms.saturating_add(here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_goes_on_from_what_was_carried_and_only_forward() {
        let c = RunClock::resume_from(5_000);
        let a = c.elapsed_ms();
        assert!(a >= 5_000);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = c.elapsed_ms();
        assert!(b >= a + 20, "{a} -> {b}");
        // Nothing here reads the realtime clock: a step of it cannot move b.
        assert!(b < 5_000 + 60_000);
    }
}
