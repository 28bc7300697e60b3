//! `bench flaky`: tell noise from regressions. Every selected case is rerun
//! `--reruns` times in each lane of `plan` (as written, identical, new fault
//! seeds, scaled latency) through the real harness; per case the runs as
//! written give the pass rate, its Wilson interval and pass^k, and the lanes
//! give the cause (`evidence`), which names its remedy. A `known_flaky`
//! marker whose cause the evidence confirms is accepted; one whose cause no
//! longer reproduces is reported as fixed. With `--baseline DIR` (a previous
//! flaky.json or a `bench run` summary.json) each case whose pass rate fell
//! is marked with Fisher's exact test of the fall.
//!
//! Exit codes: 0 no case is flaky beyond its marker; 1 some case is (flaky
//! and unmarked, or marked for another cause), or the report could not be
//! written; 2 usage; 3 the suite, the harness or the baseline could not be
//! loaded.

use crate::batch::{self, LaneJob, Reported};
use crate::case_run::{self, Overlay, RunRecord, Target};
use crate::events::{CaseMeta, Event, Fanout, Lines, Reporter, Terminal};
use crate::exit::ExitStatus;
use crate::suite::{self, Case};
use bench::flaky::report::{FlakyReport, MarkerStatus};
use bench::flaky::{build_report, plan, read_baseline, Settings};
use clap::Args;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Reruns a lane at most: 4 lanes of this many per case bound a command.
pub const RERUNS_MAX: u32 = 100;

#[derive(Args, Debug, Clone)]
pub struct FlakyArgs {
    /// Suite root holding category directories.
    #[arg(long, default_value = "suites")]
    pub suite: PathBuf,
    /// Only this category.
    #[arg(long)]
    pub category: Option<String>,
    /// Only this case id.
    #[arg(long)]
    pub case: Option<String>,
    /// Reruns per lane (the runs as written, and each evidence lane).
    #[arg(long, default_value_t = 10)]
    pub reruns: u32,
    /// A previous run: a directory holding flaky.json, or a `bench run`
    /// output holding summary.json.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    #[arg(long, default_value_t = 4)]
    pub max_concurrency: usize,
    #[arg(long, default_value = "target/bench/flaky")]
    pub out: PathBuf,
    /// The harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
}

pub fn run(args: FlakyArgs) -> ExitCode {
    batch::block_on("flaky", ExitStatus::Unloadable, run_async(args))
}

/// What the command runs on, once the arguments are checked and loaded.
struct Inputs {
    baseline: Option<HashMap<String, (u64, u64)>>,
    harness_bin: PathBuf,
    cases: Vec<Case>,
    plan: plan::Plan,
}

/// Check the arguments and load the baseline, the harness and the suite;
/// Err is the exit code, the reason already printed.
fn load(args: &FlakyArgs) -> Result<Inputs, ExitCode> {
    if args.reruns == 0 || args.reruns > RERUNS_MAX {
        errln!("bench flaky: --reruns must be 1..={RERUNS_MAX}");
        return Err(ExitCode::from(ExitStatus::Usage));
    }
    if args.max_concurrency == 0 {
        errln!("bench flaky: --max-concurrency must be at least 1");
        return Err(ExitCode::from(ExitStatus::Usage));
    }
    let unloadable = |e: &dyn std::fmt::Display| {
        errln!("bench flaky: {e}");
        ExitCode::from(ExitStatus::Unloadable)
    };
    let baseline = match args.baseline.as_deref().map(read_baseline).transpose() {
        Ok(b) => b,
        Err(e) => {
            errln!("bench flaky: --baseline: {e}");
            return Err(ExitCode::from(ExitStatus::Unloadable));
        }
    };
    let harness_bin = batch::harness_bin(args.harness.as_deref()).map_err(|e| unloadable(&e))?;
    let loaded =
        suite::load_suite(&args.suite, args.category.as_deref()).map_err(|e| unloadable(&e))?;
    for e in &loaded.errors {
        errln!("bench flaky: case not loaded: {e}");
    }
    let mut cases: Vec<Case> = loaded.cases;
    if let Some(id) = &args.case {
        cases.retain(|c| c.id() == id);
    }
    if cases.is_empty() {
        errln!(
            "bench flaky: no cases to run under {}",
            args.suite.display()
        );
        return Err(ExitCode::from(ExitStatus::Unloadable));
    }
    let plan = plan::Plan::new(&cases, args.reruns).map_err(|e| unloadable(&e))?;
    Ok(Inputs {
        baseline,
        harness_bin,
        cases,
        plan,
    })
}

async fn run_async(args: FlakyArgs) -> ExitCode {
    let Inputs {
        baseline,
        harness_bin,
        cases,
        plan,
    } = match load(&args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        errln!("bench flaky: cannot create {}: {e}", args.out.display());
        return ExitCode::from(ExitStatus::Usage);
    }
    let out = std::fs::canonicalize(&args.out).unwrap_or(args.out.clone());
    let t0 = std::time::Instant::now();
    let servers = Arc::new(plan.start(&cases).await);
    let records = run_plan(
        &plan,
        &cases,
        servers,
        &harness_bin,
        &out,
        args.max_concurrency,
    )
    .await;
    let wall_ms = t0.elapsed().as_millis() as u64;
    let settings = Settings {
        suite: &args.suite,
        reruns: args.reruns,
        baseline: args.baseline.as_deref(),
    };
    let report = build_report(
        &settings,
        &cases,
        &plan,
        &records,
        baseline.as_ref(),
        wall_ms,
    );
    let written = std::fs::write(
        out.join("flaky.json"),
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
    )
    .and_then(|_| std::fs::write(out.join("flaky.md"), report.markdown()));
    print_outcome(&report, wall_ms, &out);
    if let Err(e) = written {
        errln!(
            "bench flaky: cannot write the report under {}: {e}",
            out.display()
        );
        return ExitCode::from(ExitStatus::WriteFailed);
    }
    ExitCode::from(ExitStatus::gate(report.passed, ExitStatus::Failed))
}

/// The table, each case flaky beyond its marker with its remedy, each
/// marker that no longer reproduces, and the one-line verdict.
fn print_outcome(report: &FlakyReport, wall_ms: u64, out: &Path) {
    outln!("{}", report.table());
    for c in report
        .cases
        .iter()
        .filter(|c| c.marker_status == MarkerStatus::BeyondMarker)
    {
        outln!(
            "FLAKY {}: {} ({}). {}",
            c.id,
            c.cause.map(|x| x.as_str()).unwrap_or("?"),
            c.evidence,
            c.cause.map(|x| x.remedy()).unwrap_or_default()
        );
    }
    for c in report
        .cases
        .iter()
        .filter(|c| c.marker_status == MarkerStatus::Fixed)
    {
        outln!(
            "FIXED {}: the marker's cause no longer reproduces: remove the marker ({})",
            c.id,
            c.evidence
        );
    }
    outln!(
        "bench flaky: {}: {} flaky ({} known, {} beyond their marker) of {} cases; {} case-runs in {:.1} s; {}",
        if report.passed { "PASS" } else { "FAIL" },
        report.totals.flaky,
        report.totals.known,
        report.totals.beyond_marker,
        report.totals.cases,
        report.case_runs,
        wall_ms as f64 / 1000.0,
        out.join("flaky.md").display()
    );
}

/// Every rerun of the plan on one pool (the batch's one place events are
/// made), each answered by its own server. Returns, per case, its records.
async fn run_plan(
    plan: &plan::Plan,
    cases: &[Case],
    servers: Arc<Vec<Result<Arc<harness::replay::ReplayServer>, plan::Unserved>>>,
    harness_bin: &Path,
    out: &Path,
    max_concurrency: usize,
) -> Vec<Vec<RunRecord>> {
    let server_of: Arc<HashMap<(usize, u32), usize>> = Arc::new(
        plan.reruns
            .iter()
            .map(|r| ((r.case, r.url_run), r.server))
            .collect(),
    );
    let jobs: Vec<LaneJob> = plan.reruns.iter().map(|r| (0, r.case, r.url_run)).collect();
    let metas: Vec<CaseMeta> = cases.iter().map(CaseMeta::of).collect();
    let cases_arc = Arc::new(cases.to_vec());
    let (hb, out_dir) = (harness_bin.to_path_buf(), out.to_path_buf());
    let overlay = Arc::new(Overlay::default());
    let work = move |(lane, ci, run): LaneJob| {
        let (cases, servers, server_of, hb, out, ov) = (
            cases_arc.clone(),
            servers.clone(),
            server_of.clone(),
            hb.clone(),
            out_dir.clone(),
            overlay.clone(),
        );
        async move {
            let c = &cases[ci];
            let server = server_of
                .get(&(ci, run))
                .and_then(|&i| servers.get(i))
                .cloned()
                .unwrap_or(Err(plan::Unserved::Unplanned));
            let rec = match server {
                Ok(s) => case_run::run_case(c, run, &Target::Replay(s), &hb, &out, &ov).await,
                Err(unserved) => RunRecord::faulted(
                    c,
                    run,
                    crate::bench_fault::BenchFault::ReplayServerUnavailable {
                        detail: unserved.to_string(),
                    },
                    String::new(),
                ),
            };
            (lane, ci, rec)
        }
    };
    let mut progress = CaseProgress::new(plan, cases);
    let mut terminal = Terminal::new(jobs.len() as u64, "case-runs", Lines::Progress);
    let settings = Reported {
        cases: &metas,
        runs_per_case: plan.runs_per_case(),
        max_concurrency,
        stop_on_failure: false,
    };
    let mut fan = Fanout(vec![&mut terminal, &mut progress]);
    let mut lanes = batch::run_lanes(settings, jobs, work, &mut [&mut fan]).await;
    terminal.finish();
    lanes.pop().unwrap_or_default()
}

/// One line per case when its last rerun is in (CI and pipes; a terminal
/// has the bar).
struct CaseProgress {
    expected: Vec<usize>,
    done: Vec<usize>,
    passed: Vec<usize>,
    cases_done: usize,
    quiet: bool,
}

impl CaseProgress {
    fn new(plan: &plan::Plan, cases: &[Case]) -> CaseProgress {
        let mut expected = vec![0; cases.len()];
        for r in &plan.reruns {
            expected[r.case] += 1;
        }
        CaseProgress {
            done: vec![0; cases.len()],
            passed: vec![0; cases.len()],
            expected,
            cases_done: 0,
            quiet: crate::events::progress_bar(0, "").is_some(),
        }
    }
}

impl Reporter for CaseProgress {
    fn report(&mut self, event: &Event<'_>) {
        if let Event::CaseRunFinished {
            case_index,
            case,
            record,
        } = event
        {
            let i = *case_index;
            self.done[i] += 1;
            self.passed[i] += record.passed as usize;
            if self.done[i] == self.expected[i] {
                self.cases_done += 1;
                if !self.quiet {
                    errln!(
                        "[{}/{} cases] {}: {}/{} case-runs passed",
                        self.cases_done,
                        self.expected.len(),
                        case.id,
                        self.passed[i],
                        self.done[i]
                    );
                }
            }
        }
    }
}
