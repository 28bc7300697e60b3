//! A batch of case-runs: every case `runs_per_case` times through the real
//! harness with one overlay, at most `max_concurrency` at a time. `bench run`
//! runs one batch with no overlay; `bench knee` runs one per budget level,
//! each into its own directory so the state dirs never collide. What to show
//! while it runs, and the files it leaves, are the caller's reporters'
//! (`events`): the batch emits typed events (batch started, case-run started
//! and finished, case finished with its outcome, batch finished). A live batch (`Batch::start_live`) sends its case-runs through
//! the live proxy instead, and starts no new case-run once the command-wide
//! cap has refused a call (those count as failed, "not started").

use crate::bench_fault::BenchFault;
use crate::case_run::{self, Overlay, RunRecord, Servers, Target};
use crate::events::{CaseMeta, Event, Reporter};
pub use crate::harness_bin::{
    build_harness, harness_bin, has_test_hooks, interrupt_harness, HarnessBinError,
    TEST_VARIANTS_BIN,
};
use crate::live::LiveTarget;
use crate::suite::Case;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Most runs of one case a command takes (`--runs-per-case`, `--runs`).
pub const RUNS_PER_CASE_MAX: u32 = 100;
/// Most case-runs at once (`--max-concurrency`).
pub const CONCURRENCY_MAX: usize = 64;

/// Run a subcommand's async body on a multi-threaded runtime; a runtime that
/// cannot start is exit `on_error` with the reason on stderr. SIGINT,
/// SIGTERM and SIGHUP stop the command cleanly (crate::interrupt: no new
/// case-run, the harnesses in flight asked to stop, what finished written);
/// an interrupted command exits 128 + the signal.
pub fn block_on<F: Future<Output = ExitCode>>(
    cmd: &'static str,
    on_error: crate::exit::ExitStatus,
    body: F,
) -> ExitCode {
    // Before the runtime's threads start: they inherit the blocked signals.
    if let Err(e) = crate::interrupt::install(cmd) {
        errln!("bench {cmd}: {e}");
        return on_error.into();
    }
    let code = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(body),
        Err(e) => {
            errln!("bench {cmd}: cannot start the runtime: {e}");
            on_error.into()
        }
    };
    match crate::interrupt::requested() {
        Some(sig) => ExitCode::from(crate::interrupt::exit_code(sig)),
        None => code,
    }
}

/// Every case index below `n` exactly once: those of `first` (in range,
/// first occurrence) in their order, then the rest ascending.
fn case_order(n: usize, first: &[usize]) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for &ci in first.iter().chain(&(0..n).collect::<Vec<_>>()) {
        if ci < n && !seen[ci] {
            seen[ci] = true;
            order.push(ci);
        }
    }
    order
}

/// Why a batch could not start: said as the command's reason.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("the [interrupt] cases need the test-variants harness: {0}")]
    InterruptHarness(HarnessBinError),
    #[error("cannot create {}: {source}", .dir.display())]
    CreateOut {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Where a batch's case-runs get their model answers.
pub enum Source {
    Replay(Servers),
    Live(Arc<LiveTarget>),
}

pub struct Batch {
    pub cases: Arc<Vec<Case>>,
    pub source: Arc<Source>,
    pub harness_bin: PathBuf,
    /// The output root, created and canonical.
    pub out: PathBuf,
    pub runs_per_case: u32,
    pub max_concurrency: usize,
}

impl Batch {
    /// Start the replay servers for `cases` and create the output root.
    /// Errors say which of the two failed.
    pub async fn start(
        cases: Vec<Case>,
        harness_bin: PathBuf,
        out: &Path,
        runs_per_case: u32,
        max_concurrency: usize,
    ) -> Result<Batch, BatchError> {
        let servers = Servers::start(&cases).await;
        Self::with_source(
            cases,
            Source::Replay(servers),
            harness_bin,
            out,
            runs_per_case,
            max_concurrency,
        )
    }

    /// A batch whose case-runs go live through `live` (no cassette needed).
    pub fn start_live(
        cases: Vec<Case>,
        live: Arc<LiveTarget>,
        harness_bin: PathBuf,
        out: &Path,
        runs_per_case: u32,
        max_concurrency: usize,
    ) -> Result<Batch, BatchError> {
        Self::with_source(
            cases,
            Source::Live(live),
            harness_bin,
            out,
            runs_per_case,
            max_concurrency,
        )
    }

    fn with_source(
        cases: Vec<Case>,
        source: Source,
        harness_bin: PathBuf,
        out: &Path,
        runs_per_case: u32,
        max_concurrency: usize,
    ) -> Result<Batch, BatchError> {
        // The killed half of an `[interrupt]` case needs the test-variants
        // harness: resolved (and built, with cargo's progress, if missing)
        // here, before the first case-run, never from inside one while the
        // others wait. `interrupt_harness` caches it for the case-runs.
        if cases.iter().any(|c| c.file.interrupt.is_some()) {
            interrupt_harness(&harness_bin).map_err(BatchError::InterruptHarness)?;
        }
        std::fs::create_dir_all(out).map_err(|source| BatchError::CreateOut {
            dir: out.to_path_buf(),
            source,
        })?;
        let out = std::fs::canonicalize(out).unwrap_or(out.to_path_buf());
        Ok(Batch {
            cases: Arc::new(cases),
            source: Arc::new(source),
            harness_bin,
            out,
            runs_per_case,
            max_concurrency,
        })
    }

    pub fn total(&self) -> u64 {
        self.cases.len() as u64 * self.runs_per_case as u64
    }

    /// Run every case-run with `overlay`, case-run directories under
    /// `<out>/cases/<id>/run-<r>/`, each finished one reported to `reporter`.
    /// Returns the records per case (in the order of `cases`), each case's
    /// runs sorted by run index.
    pub async fn run(
        &self,
        overlay: &Overlay,
        out: &Path,
        reporter: &mut dyn Reporter,
    ) -> Vec<Vec<RunRecord>> {
        self.run_inner(overlay, out, false, &[], reporter).await
    }

    /// [`Batch::run`], the cases in `first` (indices into the batch's
    /// cases) taken before the rest, which follow in their order: `bench
    /// run` starts the cases its previous run found longest first, so a
    /// case that waits on a wall clock overlaps the others' work instead of
    /// ending the batch alone.
    pub async fn run_ordered(
        &self,
        overlay: &Overlay,
        out: &Path,
        first: &[usize],
        reporter: &mut dyn Reporter,
    ) -> Vec<Vec<RunRecord>> {
        self.run_inner(overlay, out, false, first, reporter).await
    }

    /// [`Batch::run`], but no new case-run starts once one has failed (the
    /// ones in flight finish): for a gate that only needs to know whether
    /// anything fails (`bench self-test --first-catch`). The cases in
    /// `first` (indices into the batch's cases) are taken before the rest,
    /// which follow in their order; every case is still run until one fails.
    pub async fn run_until_failure(
        &self,
        overlay: &Overlay,
        out: &Path,
        first: &[usize],
        reporter: &mut dyn Reporter,
    ) -> Vec<Vec<RunRecord>> {
        self.run_inner(overlay, out, true, first, reporter).await
    }

    async fn run_inner(
        &self,
        overlay: &Overlay,
        out: &Path,
        stop_on_failure: bool,
        first: &[usize],
        reporter: &mut dyn Reporter,
    ) -> Vec<Vec<RunRecord>> {
        // Case by case, run 0 first, so a live batch stopped by its cap has
        // run the earliest ones: the run variants a recording keeps must be
        // 0..n-1. `first` only moves whole cases to the front.
        let jobs: Vec<(usize, u32)> = case_order(self.cases.len(), first)
            .into_iter()
            .flat_map(|ci| (0..self.runs_per_case).map(move |r| (ci, r)))
            .collect();
        let (cases, source, hb, out_dir, ov) = (
            self.cases.clone(),
            self.source.clone(),
            self.harness_bin.clone(),
            out.to_path_buf(),
            Arc::new(overlay.clone()),
        );
        let work = move |(ci, r): (usize, u32)| {
            let (cases, source, hb, out, ov) = (
                cases.clone(),
                source.clone(),
                hb.clone(),
                out_dir.clone(),
                ov.clone(),
            );
            async move {
                let c = &cases[ci];
                if let Some(sig) = crate::interrupt::requested() {
                    let fault = BenchFault::Interrupted {
                        signal: sig.to_string(),
                    };
                    return (ci, RunRecord::faulted(c, r, fault, String::new()));
                }
                let target = match &*source {
                    Source::Replay(servers) => servers
                        .server_for_next_run(c)
                        .await
                        .map(Target::Replay)
                        .map_err(|detail| BenchFault::ReplayServerUnavailable { detail }),
                    Source::Live(live) => match live.stopped() {
                        Some(why) => {
                            live.note_not_started(c.id(), r);
                            Err(BenchFault::LiveCapReached { detail: why })
                        }
                        None => Ok(Target::Live(live.clone())),
                    },
                };
                let rec = match target {
                    Ok(t) => case_run::run_case(c, r, &t, &hb, &out, &ov).await,
                    Err(fault) => RunRecord::faulted(c, r, fault, String::new()),
                };
                (ci, rec)
            }
        };
        let metas: Vec<CaseMeta> = self.cases.iter().map(CaseMeta::of).collect();
        let settings = Reported {
            cases: &metas,
            runs_per_case: self.runs_per_case,
            max_concurrency: self.max_concurrency,
            stop_on_failure,
        };
        run_reported(settings, jobs, work, reporter).await
    }
}

/// How [`run_lanes`] runs a batch's jobs.
pub struct Reported<'a> {
    pub cases: &'a [CaseMeta],
    pub runs_per_case: u32,
    pub max_concurrency: usize,
    /// Start no new case-run once one has failed.
    pub stop_on_failure: bool,
}

/// Run the case-runs `jobs` (case index, run) on [`pool`] and report the
/// batch's events to `reporter` (the order `events::Event` promises), from
/// this task. `work` runs one case-run. Returns the records per case (in the
/// order of `cases`), each case's runs sorted by run index. A batch of one
/// lane ([`run_lanes`]).
async fn run_reported<W, Fut>(
    s: Reported<'_>,
    jobs: Vec<(usize, u32)>,
    work: W,
    reporter: &mut dyn Reporter,
) -> Vec<Vec<RunRecord>>
where
    W: Fn((usize, u32)) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (usize, RunRecord)> + Send + 'static,
{
    let jobs = jobs.into_iter().map(|(ci, r)| (0, ci, r)).collect();
    let work = move |(_, ci, r): LaneJob| {
        let run = work((ci, r));
        async move {
            let (ci, rec) = run.await;
            (0, ci, rec)
        }
    };
    let mut lanes = run_lanes(s, jobs, work, &mut [reporter]).await;
    lanes.pop().unwrap_or_default()
}

/// One case-run of a batch of several lanes: (lane, case index, run).
pub type LaneJob = (usize, usize, u32);

/// A batch whose case-runs fall in several lanes over the same cases and
/// runs (`bench ab`'s two arms, interleaved on one pool): each lane is a
/// batch of its own to its reporter (`reporters[lane]`), with the event
/// order `events::Event` promises, and they all finish together. `work`
/// runs one case-run and says its lane and case. Returns, per lane, the
/// records per case, each case's runs sorted by run index. The one place a
/// batch's events are made, whatever runs the case-runs (the harness, or a
/// test's stand-in).
pub async fn run_lanes<W, Fut>(
    s: Reported<'_>,
    jobs: Vec<LaneJob>,
    work: W,
    reporters: &mut [&mut dyn Reporter],
) -> Vec<Vec<Vec<RunRecord>>>
where
    W: Fn(LaneJob) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (usize, usize, RunRecord)> + Send + 'static,
{
    let t0 = std::time::Instant::now();
    let (n, lanes) = (s.cases.len(), reporters.len());
    assert!(
        jobs.iter()
            .all(|&(l, ci, r)| l < lanes && ci < n && r < s.runs_per_case),
        "a job outside the batch's lanes, cases and runs"
    );
    report_started(&s, &jobs, reporters);
    let plan = jobs.clone();
    let mut per_case: Vec<Vec<Vec<RunRecord>>> = vec![vec![vec![]; n]; lanes];
    let mut finished = vec![vec![false; n]; lanes];
    // A worker that panicked leaves its case-run without a record (and
    // the others finish the queue); `total()` tells the caller.
    pool_observed(jobs, s.max_concurrency, work, |p| match p {
        Pooled::Started(j) => {
            let (lane, ci, run) = plan[j];
            reporters[lane].report(&Event::CaseRunStarted {
                case_index: ci,
                case: &s.cases[ci],
                run,
            });
            Flow::Continue
        }
        Pooled::Done((lane, ci, rec)) => {
            assert!(lane < lanes && ci < n, "a record outside the batch");
            let stop = s.stop_on_failure && !rec.passed;
            let reporter = &mut *reporters[lane];
            reporter.report(&Event::CaseRunFinished {
                case_index: ci,
                case: &s.cases[ci],
                record: &rec,
            });
            let (per_case, finished) = (&mut per_case[lane], &mut finished[lane]);
            per_case[ci].push(rec);
            if per_case[ci].len() as u64 == s.runs_per_case as u64 {
                finish_case(ci, s.cases, per_case, finished, reporter);
            }
            if stop {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
    })
    .await;
    let wall_ms = t0.elapsed().as_millis() as u64;
    report_finished(s.cases, &mut per_case, &mut finished, reporters, wall_ms);
    per_case
}

/// Every lane's reporter hears its batch start, with its own share of the
/// jobs as its total.
fn report_started(s: &Reported<'_>, jobs: &[LaneJob], reporters: &mut [&mut dyn Reporter]) {
    for (lane, reporter) in reporters.iter_mut().enumerate() {
        reporter.report(&Event::BatchStarted {
            cases: s.cases,
            runs_per_case: s.runs_per_case,
            total: jobs.iter().filter(|j| j.0 == lane).count() as u64,
        });
    }
}

/// Every lane's batch finishes: first the cases whose runs did not all come
/// back (a worker panicked, or the batch stopped at a failure), with what
/// they have, so each case finishes exactly once.
fn report_finished(
    cases: &[CaseMeta],
    per_case: &mut [Vec<Vec<RunRecord>>],
    finished: &mut [Vec<bool>],
    reporters: &mut [&mut dyn Reporter],
    wall_ms: u64,
) {
    for (lane, reporter) in reporters.iter_mut().enumerate() {
        // The cases whose runs did not all come back finish with what they have.
        for ci in 0..cases.len() {
            if !finished[lane][ci] {
                finish_case(
                    ci,
                    cases,
                    &mut per_case[lane],
                    &mut finished[lane],
                    *reporter,
                );
            }
        }
        assert!(
            finished[lane].iter().all(|f| *f),
            "every case finishes once"
        );
        reporter.report(&Event::BatchFinished { wall_ms });
    }
}

/// Sort case `ci`'s runs and report it finished (once).
fn finish_case(
    ci: usize,
    cases: &[CaseMeta],
    per_case: &mut [Vec<RunRecord>],
    finished: &mut [bool],
    reporter: &mut dyn Reporter,
) {
    assert!(!finished[ci], "case {} finished twice", cases[ci].id);
    finished[ci] = true;
    per_case[ci].sort_by_key(|r| r.run);
    reporter.report(&Event::CaseFinished {
        case_index: ci,
        case: &cases[ci],
        runs: &per_case[ci],
        outcome: crate::record::Outcome::of(&per_case[ci]),
    });
}

/// What the consumer of a finished job tells [`pool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Start no new job (the ones in flight finish and are still handed over).
    Stop,
}

/// What [`pool_observed`] hands its consumer.
#[derive(Debug)]
pub enum Pooled<T> {
    /// A worker took the job at this index (in the order given) and starts
    /// it; always before that job's `Done`.
    Started(usize),
    /// A job's result.
    Done(T),
}

/// The bench's one worker pool: at most `max_concurrency` (clamped to
/// 1..=`CONCURRENCY_MAX`) jobs at a time, started in the order given, each
/// result handed to `done` on this task as it finishes. The case-run batch,
/// `bench ab`'s interleaved arms and `bench calibrate`'s live judge all run
/// on it.
pub async fn pool<J, T, W, Fut, D>(jobs: Vec<J>, max_concurrency: usize, work: W, mut done: D)
where
    J: Send + 'static,
    T: Send + 'static,
    W: Fn(J) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
    D: FnMut(T) -> Flow,
{
    pool_observed(jobs, max_concurrency, work, |p| match p {
        Pooled::Started(_) => Flow::Continue,
        Pooled::Done(t) => done(t),
    })
    .await
}

/// [`pool`], also telling `done` when each job starts (the batch's
/// `CaseRunStarted`). A job's `Started` and `Done` travel on one channel
/// from the one worker that runs it, so `Started` always comes first.
pub async fn pool_observed<J, T, W, Fut, D>(
    jobs: Vec<J>,
    max_concurrency: usize,
    work: W,
    mut done: D,
) where
    J: Send + 'static,
    T: Send + 'static,
    W: Fn(J) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
    D: FnMut(Pooled<T>) -> Flow,
{
    let workers = max_concurrency
        .clamp(1, CONCURRENCY_MAX)
        .min(jobs.len().max(1));
    let queue = Arc::new(std::sync::Mutex::new(
        jobs.into_iter()
            .enumerate()
            .collect::<std::collections::VecDeque<(usize, J)>>(),
    ));
    let work = Arc::new(work);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Pooled<T>>();
    for _ in 0..workers {
        let (queue, work, tx) = (queue.clone(), work.clone(), tx.clone());
        tokio::spawn(async move {
            loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some((i, job)) = next else { break };
                if tx.send(Pooled::Started(i)).is_err() {
                    break;
                }
                if tx.send(Pooled::Done(work(job).await)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    while let Some(p) = rx.recv().await {
        if done(p) == Flow::Stop {
            queue.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{case_order, run_lanes, run_reported, LaneJob, Reported};

    #[test]
    fn a_missing_harness_binary_is_a_typed_error_that_says_what_to_do() {
        use super::{harness_bin, HarnessBinError};
        let p = std::path::Path::new("/nonexistent/harness");
        let e = harness_bin(Some(p)).unwrap_err();
        assert!(
            matches!(&e, HarnessBinError::NotFound(q) if q == p),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "harness binary /nonexistent/harness not found; build it with `cargo build --release --workspace` or pass --harness"
        );
    }
    use crate::case_run::RunRecord;
    use crate::events::{CaseMeta, Event, Reporter};
    use crate::summary::Outcome;

    /// What a reporter saw, by case index and run.
    #[derive(Debug, Clone, PartialEq)]
    enum Seen {
        BatchStarted(u64),
        RunStarted(usize, u32),
        RunFinished(usize, u32),
        CaseFinished(usize, Outcome, Vec<u32>),
        BatchFinished,
    }

    #[derive(Default)]
    struct Log(Vec<Seen>);

    impl Reporter for Log {
        fn report(&mut self, e: &Event<'_>) {
            self.0.push(match e {
                Event::BatchStarted { total, .. } => Seen::BatchStarted(*total),
                Event::CaseRunStarted {
                    case_index, run, ..
                } => Seen::RunStarted(*case_index, *run),
                Event::CaseRunFinished {
                    case_index, record, ..
                } => Seen::RunFinished(*case_index, record.run),
                Event::CaseFinished {
                    case_index,
                    runs,
                    outcome,
                    ..
                } => {
                    Seen::CaseFinished(*case_index, *outcome, runs.iter().map(|r| r.run).collect())
                }
                Event::BatchFinished { .. } => Seen::BatchFinished,
            });
        }
    }

    fn meta(id: &str) -> CaseMeta {
        CaseMeta {
            id: id.into(),
            category: "happy".into(),
            ..Default::default()
        }
    }

    fn record(run: u32, passed: bool) -> RunRecord {
        RunRecord {
            live_calls: None,
            latency: None,
            run,
            ending: Some(harness::ending::Ending::GoalMet),
            exit_code: 0,
            passed,
            score: if passed { 1.0 } else { 0.0 },
            cost_usd: 0.0,
            latency_ms: 1,
            expected_ending: harness::ending::Ending::GoalMet,
            checks: vec![],
            failures: vec![],
            state_dir: String::new(),
            verified: 1,
            bench_fault: None,
            cause: None,
        }
    }

    /// Run `jobs` over `cases` with 2 runs each through the batch's event
    /// maker; case-run (ci, r) passes unless `fails(ci, r)`, and takes
    /// `slow_ms` halved per run (later runs finish first).
    async fn reported(
        cases: &[CaseMeta],
        jobs: Vec<(usize, u32)>,
        max_concurrency: usize,
        stop_on_failure: bool,
        slow_ms: u64,
        fails: fn(usize, u32) -> bool,
    ) -> (Vec<Vec<RunRecord>>, Vec<Seen>) {
        let work = move |(ci, r): (usize, u32)| async move {
            tokio::time::sleep(std::time::Duration::from_millis(slow_ms >> r)).await;
            (ci, record(r, !fails(ci, r)))
        };
        let mut log = Log::default();
        let s = Reported {
            cases,
            runs_per_case: 2,
            max_concurrency,
            stop_on_failure,
        };
        let per_case = run_reported(s, jobs, work, &mut log).await;
        (per_case, log.0)
    }

    fn at(log: &[Seen], s: &Seen) -> usize {
        let hits: Vec<usize> = (0..log.len()).filter(|&i| log[i] == *s).collect();
        assert_eq!(hits.len(), 1, "{s:?} once in {log:?}");
        hits[0]
    }

    /// The order `Event` promises: the batch starts first and finishes
    /// last; each case-run starts once, before it finishes; each case
    /// finishes once, after every run it reports, and reports exactly the
    /// runs that finished. Returns each case's outcome.
    fn check_order(log: &[Seen], n_cases: usize) -> Vec<Outcome> {
        assert!(
            matches!(log.first(), Some(Seen::BatchStarted(_))),
            "{log:?}"
        );
        assert_eq!(log.last(), Some(&Seen::BatchFinished), "{log:?}");
        let batch_events = |s: &Seen| matches!(s, Seen::BatchStarted(_) | Seen::BatchFinished);
        assert_eq!(log.iter().filter(|s| batch_events(s)).count(), 2, "{log:?}");
        for (i, s) in log.iter().enumerate() {
            if let Seen::RunFinished(ci, r) = s {
                assert!(at(log, &Seen::RunStarted(*ci, *r)) < i, "{log:?}");
            }
        }
        (0..n_cases)
            .map(|ci| {
                let done: Vec<usize> = (0..log.len())
                    .filter(|&i| matches!(&log[i], Seen::CaseFinished(c, ..) if *c == ci))
                    .collect();
                assert_eq!(done.len(), 1, "case {ci} finishes once: {log:?}");
                let Seen::CaseFinished(_, outcome, runs) = &log[done[0]] else {
                    unreachable!()
                };
                let mut finished: Vec<u32> = (log.iter())
                    .filter_map(|s| match s {
                        Seen::RunFinished(c, r) if *c == ci => Some(*r),
                        _ => None,
                    })
                    .collect();
                finished.sort();
                assert_eq!(runs, &finished, "case {ci}: {log:?}");
                for r in runs {
                    assert!(at(log, &Seen::RunFinished(ci, *r)) < done[0], "{log:?}");
                }
                *outcome
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reporter_sees_runs_start_then_finish_then_the_case_and_a_split_case_is_flaky() {
        let cases = [meta("steady"), meta("wobbly"), meta("broken")];
        let jobs: Vec<(usize, u32)> = (0..3).flat_map(|ci| [(ci, 0), (ci, 1)]).collect();
        // wobbly: run 0 passes, run 1 fails; broken: both fail.
        let (per_case, log) = reported(&cases, jobs, 3, false, 20, |ci, r| {
            (ci == 1 && r == 1) || ci == 2
        })
        .await;
        assert_eq!(log.first(), Some(&Seen::BatchStarted(6)), "{log:?}");
        assert_eq!(log.len(), 1 + 6 * 2 + 3 + 1, "{log:?}");
        // steady passed both runs, wobbly one of two (flaky), broken none.
        assert_eq!(
            check_order(&log, 3),
            [Outcome::Passed, Outcome::Flaky, Outcome::Failed],
            "{log:?}"
        );
        // The records come back per case, sorted by run.
        let runs: Vec<Vec<(u32, bool)>> = (per_case.iter())
            .map(|rs| rs.iter().map(|r| (r.run, r.passed)).collect())
            .collect();
        assert_eq!(
            runs,
            [
                vec![(0, true), (1, true)],
                vec![(0, true), (1, false)],
                vec![(0, false), (1, false)]
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_stopped_at_its_first_failure_still_finishes_every_case_once() {
        let cases = [meta("first"), meta("never-started")];
        let jobs: Vec<(usize, u32)> = (0..2).flat_map(|ci| [(ci, 0), (ci, 1)]).collect();
        let (per_case, log) = reported(&cases, jobs, 1, true, 400, |ci, r| ci == 0 && r == 0).await;
        // One worker: (0, 0) fails; what it took before the stop reached
        // the queue still finishes. Every case finishes once, with the runs
        // it has (maybe none), before the batch does.
        let outcomes = check_order(&log, 2);
        assert_ne!(outcomes[0], Outcome::Passed, "{log:?}");
        assert!(per_case.iter().map(Vec::len).sum::<usize>() < 4, "{log:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_lane_of_an_interleaved_batch_is_a_whole_batch_to_its_reporter() {
        let cases = [meta("one"), meta("two")];
        // Lanes interleaved job by job, as `bench ab` shuffles its arms.
        let jobs: Vec<LaneJob> = (0..2)
            .flat_map(|ci| (0..2).flat_map(move |r| [(1, ci, r), (0, ci, r)]))
            .collect();
        // Lane 1 fails case "two" run 1; lane 0 passes everything.
        let work = |(lane, ci, r): LaneJob| async move {
            tokio::time::sleep(std::time::Duration::from_millis(10 >> r)).await;
            (lane, ci, record(r, !(lane == 1 && ci == 1 && r == 1)))
        };
        let (mut l0, mut l1) = (Log::default(), Log::default());
        let s = Reported {
            cases: &cases,
            runs_per_case: 2,
            max_concurrency: 3,
            stop_on_failure: false,
        };
        let per_lane = run_lanes(s, jobs, work, &mut [&mut l0, &mut l1]).await;
        for log in [&l0.0, &l1.0] {
            assert_eq!(log.first(), Some(&Seen::BatchStarted(4)), "{log:?}");
            assert_eq!(log.len(), 1 + 4 * 2 + 2 + 1, "{log:?}");
        }
        assert_eq!(check_order(&l0.0, 2), [Outcome::Passed, Outcome::Passed]);
        assert_eq!(check_order(&l1.0, 2), [Outcome::Passed, Outcome::Flaky]);
        // Each lane's records are its own, per case, sorted by run.
        let passed: Vec<Vec<Vec<(u32, bool)>>> = (per_lane.iter())
            .map(|l| {
                l.iter()
                    .map(|rs| rs.iter().map(|r| (r.run, r.passed)).collect())
                    .collect()
            })
            .collect();
        assert_eq!(
            passed,
            [
                vec![vec![(0, true), (1, true)], vec![(0, true), (1, true)]],
                vec![vec![(0, true), (1, true)], vec![(0, true), (1, false)]],
            ]
        );
    }

    #[test]
    fn case_order_puts_the_prior_catchers_first_and_keeps_every_case_once() {
        assert_eq!(case_order(5, &[]), [0, 1, 2, 3, 4]);
        assert_eq!(case_order(5, &[3, 1]), [3, 1, 0, 2, 4]);
        // Out of range and repeated indices are ignored, never dropped cases.
        assert_eq!(case_order(4, &[2, 9, 2, 0]), [2, 0, 1, 3]);
        assert_eq!(case_order(0, &[1]), Vec::<usize>::new());
    }
}
