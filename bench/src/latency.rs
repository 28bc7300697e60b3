//! What a case's `latency_cap_ms` judges, and the figures beside it.
//!
//! A case-run's wall time is the change's time plus whatever the machine
//! adds: on a shared runner at load 10 to 20 a happy case-run took 21.8 s
//! against its 20 s cap with no change to the harness (issue 48, item 6).
//! So a replayed case-run's cap judges what a change controls:
//!
//!   judged = model time + harness CPU time
//!
//! - model time: how long the replay server held answers back on purpose
//!   (recorded latency x `latency_scale`, an injected latency, a dripped
//!   body), overlapping holds counted once and cut when the run's last
//!   process ended (replay::server::model_time). It is what the model would
//!   have cost on any machine.
//! - harness CPU: user + system time of every harness process of the
//!   case-run and of the children each waited for (its checks), read from
//!   the kernel's rusage when the process exits (`cpu_at_exit`). CPU time
//!   does not grow when the process waits for a core, so load leaves it
//!   nearly unchanged; a change that makes the harness compute more shows.
//!
//! Chosen over a measure calibrated against the machine at the start of the
//! run: load moves during a run (a calibration at the start is wrong by the
//! end), and dividing wall time by a slowdown factor would also divide the
//! time a run spends blocked, which no load explains.
//!
//! What it does not see: time the harness spends blocked on something other
//! than the model (a sleep, a check that hangs, a lock). Cases about such
//! wall-clock behaviour say so by covering `wall-clock` ([`WALL_CLOCK_COVER`]):
//! their cap judges wall time, as before. A live case-run's cap judges wall
//! time too (a live endpoint's time is not separable from the machine's).
//! Wall time is kept beside the judged figure in every record and output.

use crate::suite::Case;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A case that covers this guarantee tests the wall clock itself (a run cut
/// at its limit, a hung check cut at the deadline): its cap judges wall time.
pub const WALL_CLOCK_COVER: &str = "wall-clock";

/// Which time a case-run's latency cap judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The replayed model time plus the harness's own CPU time.
    ModelPlusCpu,
    /// Wall time: the case covers `wall-clock`.
    WallClockCase,
    /// Wall time: a live (or hybrid) case-run, its endpoint's real time.
    WallLive,
    /// Wall time: the harness's CPU time could not be read.
    WallNoCpu,
}

impl Measure {
    /// Why wall time was judged, in words; None when it was not.
    fn wall_because(self) -> Option<&'static str> {
        match self {
            Measure::ModelPlusCpu => None,
            Measure::WallClockCase => Some("the case covers wall-clock"),
            Measure::WallLive => Some("a live endpoint"),
            Measure::WallNoCpu => Some("no CPU figure for the harness"),
        }
    }
}

/// A case-run's latency: the judged figure, what it is made of, and wall
/// time beside it. `RunRecord::latency_ms` is `judged_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    /// Which time the cap judged.
    pub measure: Measure,
    /// The figure the cap judged, in ms.
    pub judged_ms: u64,
    /// Wall time of the harness process(es), in ms.
    pub wall_ms: u64,
    /// Replayed model time, in ms (0 live or unreplayed).
    pub model_ms: u64,
    /// Harness CPU time (user + system, with its waited-for children), in
    /// ms; None when it could not be read.
    pub cpu_ms: Option<u64>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Seconds with one decimal, as the outputs print latency.
fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

impl Latency {
    /// The latency of a case-run of `case` whose processes took `wall`, were
    /// served `model` of replayed model time (None: live) and used `cpu`.
    pub fn judge(
        case: &Case,
        wall: Duration,
        model: Option<Duration>,
        cpu: Option<Duration>,
    ) -> Latency {
        let covers_wall_clock = case.file.covers.iter().any(|c| c == WALL_CLOCK_COVER);
        let measure = match (model, cpu) {
            _ if covers_wall_clock => Measure::WallClockCase,
            (None, _) => Measure::WallLive,
            (Some(_), None) => Measure::WallNoCpu,
            (Some(_), Some(_)) => Measure::ModelPlusCpu,
        };
        let model_ms = model.map_or(0, ms);
        let cpu_ms = cpu.map(ms);
        let judged_ms = match measure {
            Measure::ModelPlusCpu => model_ms.saturating_add(cpu_ms.unwrap_or(0)),
            _ => ms(wall),
        };
        Latency {
            measure,
            judged_ms,
            wall_ms: ms(wall),
            model_ms,
            cpu_ms,
        }
    }

    /// e.g. "latency 1.8 s judged (model 1.2 s + harness CPU 0.6 s)", or
    /// "latency 3.4 s judged (wall: the case covers wall-clock)".
    pub fn judged_words(&self) -> String {
        match self.measure.wall_because() {
            None => format!(
                "latency {} judged (model {} + harness CPU {})",
                secs(self.judged_ms),
                secs(self.model_ms),
                secs(self.cpu_ms.unwrap_or(0))
            ),
            Some(why) => format!("latency {} judged (wall: {why})", secs(self.judged_ms)),
        }
    }

    /// The judged figure and wall time beside it, e.g. "latency 1.8 s
    /// judged (model 1.2 s + harness CPU 0.6 s); wall 13.5 s".
    pub fn words(&self) -> String {
        match self.measure {
            Measure::ModelPlusCpu => {
                format!("{}; wall {}", self.judged_words(), secs(self.wall_ms))
            }
            _ => self.judged_words(),
        }
    }

    /// For a progress line: "1834 ms judged (model + CPU), wall 13500 ms",
    /// or "3400 ms wall (judged: the case covers wall-clock)".
    pub fn short(&self) -> String {
        match self.measure.wall_because() {
            None => format!(
                "{} ms judged (model + CPU), wall {} ms",
                self.judged_ms, self.wall_ms
            ),
            Some(why) => format!("{} ms wall (judged: {why})", self.wall_ms),
        }
    }

    /// The failure a cap of `cap_ms` gives, or None when it holds.
    pub fn over_cap(&self, cap_ms: u64) -> Option<String> {
        (self.judged_ms > cap_ms).then(|| {
            let wall = match self.measure {
                Measure::ModelPlusCpu => format!("; wall {}", secs(self.wall_ms)),
                _ => String::new(),
            };
            format!(
                "{} over the {} cap ({} ms > {cap_ms} ms){wall}",
                self.judged_words(),
                secs(cap_ms),
                self.judged_ms
            )
        })
    }
}

/// Which time a set of case-runs' latency figures are over, counted by
/// measure: "model time + harness CPU for 12 case-runs, wall time for 1
/// case-run (the case covers wall-clock)". A run without a `latency` (a
/// summary written before it existed) counts as wall time.
pub fn judged_over(runs: impl Iterator<Item = Option<Latency>>) -> String {
    let mut counts: Vec<(Option<Measure>, usize)> = vec![];
    for m in runs.map(|r| r.map(|l| l.measure)) {
        match counts.iter_mut().find(|(w, _)| *w == m) {
            Some((_, n)) => *n += 1,
            None => counts.push((m, 1)),
        }
    }
    // Model + CPU first: the measure the caps judge unless a case says not.
    counts.sort_by_key(|(m, _)| *m != Some(Measure::ModelPlusCpu));
    let words = |m: Option<Measure>, n: usize| {
        let runs = if n == 1 { "case-run" } else { "case-runs" };
        match m.map(|m| (m, m.wall_because())) {
            Some((_, None)) => format!("model time + harness CPU for {n} {runs}"),
            Some((_, Some(why))) => format!("wall time for {n} {runs} ({why})"),
            None => format!("wall time for {n} {runs} (recorded before caps judged model + CPU)"),
        }
    };
    counts
        .iter()
        .map(|(m, n)| words(*m, *n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The CPU time (user + system) of our child `pid` and of the children it
/// waited for, once it has exited. Blocks until then. It reads the exited
/// process without reaping it (waitid with WNOWAIT, whose rusage the kernel
/// fills for a zombie), so tokio's `Child::wait` reaps it after as before
/// and never meets a pid reaped behind its back. None when `pid` is not our
/// child or was already reaped (the caller then judges wall time).
pub fn cpu_at_exit(pid: u32) -> Option<Duration> {
    // SAFETY: waitid(2) with valid pointers to zeroed plain-data structs it
    // fills; glibc's wrapper has no rusage argument, the syscall does.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe {
            libc::syscall(
                libc::SYS_waitid,
                libc::P_PID,
                pid as libc::id_t,
                &mut info as *mut libc::siginfo_t,
                libc::WEXITED | libc::WNOWAIT,
                &mut ru as *mut libc::rusage,
            )
        };
        if r == 0 {
            break;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// `cpu_at_exit` off the async threads (it blocks until `pid` exits).
pub async fn cpu_at_exit_async(pid: Option<u32>) -> Option<Duration> {
    let pid = pid?;
    tokio::task::spawn_blocking(move || cpu_at_exit(pid))
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(covers: &[&str]) -> Case {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut c = crate::suite::load_case(
            &repo.join("suites/happy/happy-search-p95-index"),
            "happy",
            &crate::suite::report_fields(),
        )
        .expect("a committed case loads");
        c.file.covers = covers.iter().map(|s| s.to_string()).collect();
        c.file.latency_cap_ms = 20_000;
        c
    }

    fn s(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_replayed_case_run_is_judged_on_model_plus_cpu_with_wall_beside() {
        let c = case(&["GOAL_MET"]);
        // The loaded machine: 21.8 s of wall, 1.2 s of model, 0.6 s of CPU.
        let l = Latency::judge(&c, s(21_800), Some(s(1_200)), Some(s(600)));
        assert_eq!(l.measure, Measure::ModelPlusCpu);
        assert_eq!((l.judged_ms, l.wall_ms), (1_800, 21_800));
        assert_eq!(
            l.words(),
            "latency 1.8 s judged (model 1.2 s + harness CPU 0.6 s); wall 21.8 s"
        );
        assert_eq!(l.over_cap(20_000), None);
        // A change that makes the harness compute 19 s more fails the cap.
        let l = Latency::judge(&c, s(22_000), Some(s(1_200)), Some(s(19_600)));
        assert_eq!(
            l.over_cap(20_000).as_deref(),
            Some("latency 20.8 s judged (model 1.2 s + harness CPU 19.6 s) over the 20.0 s cap (20800 ms > 20000 ms); wall 22.0 s")
        );
    }

    #[test]
    fn wall_time_is_judged_for_wall_clock_cases_live_runs_and_a_missing_cpu_figure() {
        let wall = s(21_000);
        let l = Latency::judge(
            &case(&["TIME_LIMIT", "wall-clock"]),
            wall,
            Some(s(3_000)),
            Some(s(100)),
        );
        assert_eq!((l.measure, l.judged_ms), (Measure::WallClockCase, 21_000));
        assert_eq!(
            l.over_cap(20_000).as_deref(),
            Some("latency 21.0 s judged (wall: the case covers wall-clock) over the 20.0 s cap (21000 ms > 20000 ms)")
        );
        let l = Latency::judge(&case(&[]), wall, None, Some(s(100)));
        assert_eq!((l.measure, l.judged_ms), (Measure::WallLive, 21_000));
        let l = Latency::judge(&case(&[]), wall, Some(s(0)), None);
        assert_eq!((l.measure, l.judged_ms), (Measure::WallNoCpu, 21_000));
        assert_eq!(
            l.words(),
            "latency 21.0 s judged (wall: no CPU figure for the harness)"
        );
    }

    #[test]
    fn a_set_of_case_runs_says_which_time_its_latency_figures_are_over() {
        let c = case(&[]);
        let cpu = Latency::judge(&c, s(9_000), Some(s(1)), Some(s(1)));
        let wall = Latency::judge(&case(&["wall-clock"]), s(9_000), Some(s(1)), Some(s(1)));
        assert_eq!(
            judged_over([Some(wall), Some(cpu), Some(cpu), None].into_iter()),
            "model time + harness CPU for 2 case-runs, wall time for 1 case-run (the case covers wall-clock), \
             wall time for 1 case-run (recorded before caps judged model + CPU)"
        );
        assert_eq!(judged_over(std::iter::empty()), "");
    }

    #[test]
    fn the_committed_wall_clock_cases_are_judged_on_wall_time() {
        // The cases whose cap is their guard against a run held past its
        // clock (a drip, a hung verify, a call cut at the limit).
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (cat, id) in [
            ("edge", "edge-time-limit"),
            ("adversarial", "adv-slow-drip-server"),
            ("regression", "regression-slow-verify-cut-at-wall-clock"),
        ] {
            let c = crate::suite::load_case(
                &repo.join("suites").join(cat).join(id),
                cat,
                &crate::suite::report_fields(),
            )
            .expect("a committed case loads");
            let l = Latency::judge(&c, s(9_000), Some(s(1)), Some(s(1)));
            assert_eq!(l.measure, Measure::WallClockCase, "{id}");
        }
    }

    #[test]
    fn cpu_at_exit_reads_a_child_that_burned_cpu_and_one_that_slept() {
        use std::process::Command;
        // A fixed amount of work (about 0.3 s of CPU, however loaded the
        // machine), then a sleep of half a second and next to no CPU.
        let mut busy = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let cpu = cpu_at_exit(busy.id()).expect("our child");
        assert!(cpu >= s(100), "{cpu:?}");
        assert!(busy.wait().unwrap().success());
        let mut sleeper = Command::new("sleep").arg("0.5").spawn().unwrap();
        let cpu = cpu_at_exit(sleeper.id()).expect("our child");
        assert!(cpu < s(100), "{cpu:?}");
        // Not reaped: the ordinary wait still gets the exit status.
        assert!(sleeper.wait().unwrap().success());
        // A reaped child is no longer ours to read.
        assert_eq!(cpu_at_exit(sleeper.id()), None);
    }
}
