//! One case-run: a case run once through the real `harness` binary as a
//! subprocess (the deployable artifact and its exit code are what is
//! tested), against an in-process replay server on loopback, or (live) the
//! bench's proxy to a real endpoint (`Target`). Every case-run gets a fresh
//! copy of the case (spec, workspace, checks) and its own state dir under
//! the output directory, so nothing a run does can leak into another or
//! into the suite.
//!
//! `run_case` below is the whole control flow; each phase is a room:
//! `prepare` (the private copy, the audit's first look, the invocation and
//! the `Schedule`), `schedule` (every harness process the schedule names,
//! each through `process`; `pause` holds the test hooks an `[interrupt]`
//! needs), `collect` (what the ended harness left) and `judge` (checks,
//! audit, verdict, bench fault). The values one phase hands the next are
//! declared here.

mod collect;
mod judge;
mod pause;
mod prepare;
mod process;
mod schedule;

use crate::audit::{self, Canary};
use crate::bench_fault::BenchFault;
pub use crate::harness_bin::default_harness_bin;
pub use crate::record::{ending_or_none, RunRecord};
use crate::score::commits::CommitFiles;
use crate::score::Check;
pub use crate::servers::{start_server, Servers, CASE_RUNS_PER_SERVER};
pub use crate::spec_overlay::Overlay;
use crate::suite::Case;
use harness::invocation::HarnessInvocation;
use harness::replay::ReplayServer;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a case-run's `--base-url` points: a replay server answering from
/// the case's cassette, or the live proxy (bench/src/live/) forwarding to a
/// real endpoint under the command-wide cap.
#[derive(Clone)]
pub enum Target {
    Replay(Arc<ReplayServer>),
    Live(Arc<crate::live::LiveTarget>),
}

/// Run one case once and score it. Never panics: an infrastructure failure
/// is a failed run whose failure says what went wrong. A phase that cannot
/// go on returns the case-run's record, failed or faulted, as its `Err`,
/// and the rest do not run.
pub async fn run_case(
    case: &Case,
    run: u32,
    target: &Target,
    harness_bin: &Path,
    out_root: &Path,
    overlay: &Overlay,
) -> RunRecord {
    let dir = out_root
        .join("cases")
        .join(case.id())
        .join(format!("run-{run}"));
    let cr = CaseRun {
        case,
        run,
        target,
        harness_bin,
        dir,
    };
    let (mut p, schedule) = match cr.prepare(overlay).await {
        Ok(x) => x,
        Err(rec) => return *rec,
    };
    let ran = match cr.processes(&mut p, schedule).await {
        Ok(r) => r,
        Err(rec) => return *rec,
    };
    let collected = match cr.collect(&mut p, &ran).await {
        Ok(c) => c,
        Err(rec) => return *rec,
    };
    cr.after_steps(&mut p).await;
    cr.judge(p, ran, collected)
}

/// One case-run in flight: who it is and where it goes, and the records a
/// phase that cannot go on leaves (each phase returns one as its `Err`, so
/// the phases read as a straight line; boxed, as an `Err` is best small).
struct CaseRun<'a> {
    case: &'a Case,
    run: u32,
    target: &'a Target,
    harness_bin: &'a Path,
    dir: PathBuf,
}

impl CaseRun<'_> {
    fn state_dir(&self) -> String {
        self.dir.join("state").display().to_string()
    }

    /// The harness's failure: the case-run failed.
    fn fail(&self, msg: String) -> Box<RunRecord> {
        let rec = RunRecord::failed(self.case, self.run, msg, self.state_dir());
        Box::new(rec)
    }

    /// The bench could not prepare the case-run: no data about the harness.
    fn setup_fault(&self, detail: impl std::fmt::Display) -> Box<RunRecord> {
        let fault = BenchFault::CaseSetup {
            detail: detail.to_string(),
        };
        let rec = RunRecord::faulted(self.case, self.run, fault, self.state_dir());
        Box::new(rec)
    }
}

/// Which harness processes a case-run starts, chosen once by `prepare`
/// from the case's `[interrupt]` or `[raise]` (the suite loader allows at
/// most one): the scored process always runs last.
enum Schedule<'a> {
    /// The scored process alone.
    Plain,
    /// First a process on the test-hooked harness, killed or asked to stop
    /// at its pause point; the scored process resumes what it left.
    Interrupted(Interrupted<'a>),
    /// First the plain command to its first ending on the limit; the scored
    /// process is the same command raising it, on the same state dir.
    Raised(Raised),
}

struct Interrupted<'a> {
    interrupt: &'a crate::suite::Interrupt,
    /// The harness with pause points (crate::case_run::pause).
    hooked: PathBuf,
}

struct Raised {
    raise: crate::suite::Raise,
    /// The raising command (`--raise-cap-usd` or `--raise-wall-clock-s`)
    /// and its process bound (a raised clock is its wall clock).
    inv: HarnessInvocation,
    limit: Duration,
    /// The ending the first run must reach for the raise to be taken.
    want: harness::ending::Ending,
}

/// What `prepare` made: the case's private copy, the audit's first look, and
/// the invocation that runs the harness on it.
struct Prepared {
    case_copy: PathBuf,
    ws: PathBuf,
    state: PathBuf,
    /// The run whose recorded variant answers (a replay server may pin it):
    /// the expected ending and the bench-fault diagnosis are read from it.
    served: u32,
    session: Option<crate::live::Session>,
    gathered: audit::Gathered,
    watched: Vec<Canary>,
    /// The bound on one harness process.
    limit: Duration,
    inv: HarnessInvocation,
    /// The case's `[[step]]` gates, as they ran.
    step_checks: Vec<Check>,
}

/// What the processes left: the scored one, the time every process of the
/// case-run took, and a `[raise]` case's first ending.
struct Ran {
    spawned: process::Spawned,
    took: Took,
    raised: Option<(crate::suite::Raise, FirstEnding)>,
}

/// What the first run of a `[raise]` case ended on (its report.json).
#[derive(Debug, Clone, Copy)]
struct FirstEnding {
    ending: harness::ending::Ending,
    spend_usd: f64,
}

/// The time every harness process of a case-run took, summed: wall time,
/// CPU time (None when one process's could not be read) and when the last
/// one ended (bench/src/latency.rs judges from these).
#[derive(Debug, Clone, Copy)]
struct Took {
    wall: Duration,
    cpu: Option<Duration>,
    ended: Instant,
}

impl Took {
    fn of(s: &process::Spawned) -> Took {
        Took {
            wall: s.elapsed,
            cpu: s.cpu,
            ended: s.ended,
        }
    }

    /// This process's time and then `next`'s.
    fn then(self, next: Took) -> Took {
        Took {
            wall: self.wall + next.wall,
            cpu: self.cpu.zip(next.cpu).map(|(a, b)| a + b),
            ended: next.ended,
        }
    }
}

/// What `collect` read back after the harness ended.
struct Collected {
    report: harness::report::Report,
    outbox: Vec<harness::outbox::OutboxEntry>,
    requests: Vec<harness::replay::Captured>,
    live_end: Option<crate::live::RunEnd>,
    commits: Option<usize>,
    commit_files: Option<CommitFiles>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ending::Ending;
    use serde::{Deserialize, Serialize};

    #[test]
    fn an_ending_is_written_by_name_or_as_none_and_read_back_strictly() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct R {
            #[serde(with = "ending_or_none")]
            ending: Option<Ending>,
        }
        let written = |e| serde_json::to_string(&R { ending: e }).unwrap();
        // The spellings summary.json and case_runs.json always had.
        assert_eq!(written(None), r#"{"ending":"<none>"}"#);
        assert_eq!(
            written(Some(Ending::BudgetExhausted)),
            r#"{"ending":"BUDGET_EXHAUSTED"}"#
        );
        for e in Ending::ALL.map(Some).into_iter().chain([None]) {
            assert_eq!(serde_json::from_str::<R>(&written(e)).unwrap().ending, e);
        }
        let e = serde_json::from_str::<R>(r#"{"ending":"BUDGET_EXHAUSTD"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown ending"), "{e}");
    }

    /// A group's server is replaced every CASE_RUNS_PER_SERVER case-runs
    /// (so what wiremock retains per request is freed with the old one),
    /// and the retired server still answers the case-runs that hold it.
    #[tokio::test]
    async fn a_fresh_replay_server_every_case_runs_per_server() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/happy");
        let case = crate::suite::load_case(
            &root.join("happy-search-p95-index"),
            "happy",
            &crate::suite::report_fields(),
        )
        .unwrap();
        let servers = Servers::start(std::slice::from_ref(&case)).await;
        let first = servers.server_for_next_run(&case).await.unwrap();
        for _ in 1..CASE_RUNS_PER_SERVER {
            let s = servers.server_for_next_run(&case).await.unwrap();
            assert!(Arc::ptr_eq(&s, &first));
        }
        let next = servers.server_for_next_run(&case).await.unwrap();
        assert!(
            !Arc::ptr_eq(&next, &first),
            "no fresh server after {CASE_RUNS_PER_SERVER}"
        );
        let url = format!("{}/v1/messages", first.base_url_for(case.id(), 0));
        let r = reqwest::Client::new()
            .post(url)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_ne!(r.status().as_u16(), 0);
        assert_eq!(first.counters().served + first.counters().misses, 1);
    }
}
