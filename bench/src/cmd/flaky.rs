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

mod evidence;
mod plan;
pub(crate) mod report;

use crate::batch::{self, LaneJob, Reported};
use crate::events::{CaseMeta, Event, Fanout, Lines, Reporter, Terminal};
use crate::exit::ExitStatus;
use crate::known_flaky::Cause;
use crate::runner::{self, Overlay, RunRecord, Target};
use crate::stats::reliability::{fisher_fell, pass_hat_k};
use crate::stats::{wilson, Z95};
use crate::suite::{self, Case};
use clap::Args;
use evidence::{Lane, Stability, Trial};
use report::{Baseline, CaseFlakiness, FlakyReport, LaneResult, MarkerStatus, PassHat, Totals};
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
    let report = build_report(&args, &cases, &plan, &records, baseline.as_ref(), wall_ms);
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
    servers: Arc<Vec<Result<Arc<harness::replay::ReplayServer>, String>>>,
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
                .unwrap_or_else(|| Err("no server planned for this case-run".into()));
            let rec = match server {
                Ok(s) => runner::run_case(c, run, &Target::Replay(s), &hb, &out, &ov).await,
                Err(detail) => RunRecord::faulted(
                    c,
                    run,
                    crate::bench_fault::BenchFault::ReplayServerUnavailable { detail },
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

/// Why `--baseline` could not be read; the text is what the error line says.
#[derive(Debug, thiserror::Error)]
enum BaselineError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: field `{field}`: {message}", .path.display())]
    Parse {
        path: PathBuf,
        field: String,
        message: String,
    },
    #[error("{}: neither flaky.json nor summary.json is there", .0.display())]
    Missing(PathBuf),
}

/// A previous run's per-case (passed, runs): flaky.json's runs as written,
/// or a `bench run` summary's runs.
fn read_baseline(dir: &Path) -> Result<HashMap<String, (u64, u64)>, BaselineError> {
    let read = |name: &str| -> Option<Result<String, BaselineError>> {
        let path = dir.join(name);
        path.exists().then(|| {
            std::fs::read_to_string(&path).map_err(|source| BaselineError::Read { path, source })
        })
    };
    let named = |name: &str, e: strict::Error| BaselineError::Parse {
        path: dir.join(name),
        field: e.field().unwrap_or_else(|| "(file)".into()),
        message: e.message,
    };
    if let Some(text) = read("flaky.json") {
        let r: FlakyReport =
            strict::from_str(strict::Format::Json, &text?).map_err(|e| named("flaky.json", e))?;
        return Ok(r
            .cases
            .into_iter()
            .map(|c| (c.id, (c.passed, c.runs)))
            .collect());
    }
    if let Some(text) = read("summary.json") {
        let s: crate::summary::Summary =
            strict::from_str(strict::Format::Json, &text?).map_err(|e| named("summary.json", e))?;
        return Ok(s
            .cases
            .into_iter()
            .map(|c| {
                let p = c.runs.iter().filter(|r| r.passed).count() as u64;
                (c.id, (p, c.runs.len() as u64))
            })
            .collect());
    }
    Err(BaselineError::Missing(dir.to_path_buf()))
}

fn mean(xs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = xs.collect::<Option<Vec<f64>>>()?;
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One case's reruns as evidence trials, in plan order (a rerun with no
/// record is left out).
fn trials_of(c: &Case, ci: usize, plan: &plan::Plan, recs: &[RunRecord]) -> Vec<Trial> {
    let by_run: HashMap<u32, &RunRecord> = recs.iter().map(|r| (r.run, r)).collect();
    let variants = c.cassette.runs.len().max(1) as u32;
    let mut trials: Vec<Trial> = vec![];
    for r in plan.reruns.iter().filter(|r| r.case == ci) {
        let Some(rec) = by_run.get(&r.url_run) else {
            continue;
        };
        let served = if r.lane == Lane::AsWritten {
            r.url_run
        } else {
            0
        };
        trials.push(Trial {
            lane: r.lane,
            rerun: r.rerun,
            variant: served % variants,
            setting: r.setting,
            failure: evidence::failure_of(c, rec),
            bench_fault: rec.bench_fault.is_some(),
            latency_ms: rec.latency_ms,
            score: rec.score,
        });
    }
    trials
}

/// What a lane varied, for the report: the settings it swept.
fn lane_varied(lane: Lane, variants: u32, settings: &[f64]) -> String {
    match lane {
        Lane::AsWritten => {
            format!("run r replays variant r % {variants}, with run r's fault draws")
        }
        Lane::Identical => "run 0's variant and fault draws every time".into(),
        Lane::FaultSeeds => format!(
            "run 0's variant, fault seeds {}..{}",
            settings.first().copied().unwrap_or(0.0),
            settings.last().copied().unwrap_or(0.0)
        ),
        Lane::Latency => format!(
            "run 0's variant, replayed latency x{:.2}..x{:.2}",
            settings.first().copied().unwrap_or(1.0),
            settings.last().copied().unwrap_or(1.0)
        ),
    }
}

/// Per lane that ran: its runs and passes, bench faults counted apart (they
/// are no evidence about the case).
fn lane_results(trials: &[Trial], variants: u32) -> Vec<LaneResult> {
    Lane::ALL
        .into_iter()
        .filter_map(|lane| {
            let ts: Vec<&Trial> = trials.iter().filter(|t| t.lane == lane).collect();
            if ts.is_empty() {
                return None;
            }
            let ev: Vec<&&Trial> = ts.iter().filter(|t| !t.bench_fault).collect();
            let settings: Vec<f64> = ts.iter().filter_map(|t| t.setting).collect();
            Some(LaneResult {
                lane,
                runs: ev.len() as u64,
                passed: ev.iter().filter(|t| t.failure.is_none()).count() as u64,
                bench_faults: (ts.len() - ev.len()) as u64,
                varied: lane_varied(lane, variants, &settings),
            })
        })
        .collect()
}

/// A marker is accepted only when the evidence confirms its cause.
fn marker_status(
    finding: &evidence::Finding,
    marker: Option<&crate::known_flaky::KnownFlaky>,
) -> MarkerStatus {
    match (finding.stability, marker, finding.cause) {
        (Stability::Flaky, Some(m), Some(cause)) if m.cause == cause => MarkerStatus::Known,
        (Stability::Flaky, _, _) => MarkerStatus::BeyondMarker,
        (_, Some(_), _) => MarkerStatus::Fixed,
        (_, None, _) => MarkerStatus::Clean,
    }
}

/// The case's baseline, with Fisher's exact test when its pass rate fell.
fn baseline_of(base: Option<&(u64, u64)>, passed: u64, runs: u64) -> Option<Baseline> {
    base.map(|&(bp, bn)| {
        let fell =
            runs > 0 && bn > 0 && (passed as f64 / runs as f64) < (bp as f64 / bn as f64) - 1e-12;
        Baseline {
            passed: bp,
            runs: bn,
            fell,
            p_value: if fell {
                fisher_fell(passed, runs, bp, bn)
            } else {
                None
            },
        }
    })
}

/// One case's row of the report from its records.
fn case_flakiness(
    args: &FlakyArgs,
    (ci, c): (usize, &Case),
    plan: &plan::Plan,
    recs: &[RunRecord],
    baseline: Option<&HashMap<String, (u64, u64)>>,
) -> CaseFlakiness {
    let n = args.reruns as u64;
    let trials = trials_of(c, ci, plan, recs);
    let finding = evidence::find(&trials, c.file.faults.is_some());
    let lanes = lane_results(&trials, c.cassette.runs.len().max(1) as u32);
    let aw = lanes.iter().find(|l| l.lane == Lane::AsWritten);
    let (passed, runs) = aw.map(|l| (l.passed, l.runs)).unwrap_or((0, 0));
    let (lo, hi) = wilson(passed, runs, Z95);
    let pass_hat = PassHat {
        k1: pass_hat_k(passed, runs, 1),
        k3: pass_hat_k(passed, runs, 3),
        kn: pass_hat_k(passed, runs, n),
    };
    let marker = c.file.known_flaky.clone();
    let marker_status = marker_status(&finding, marker.as_ref());
    let example_failure = recs
        .iter()
        .find(|r| !r.passed && r.bench_fault.is_none())
        .map(|r| r.state_dir.clone());
    CaseFlakiness {
        id: c.id().to_string(),
        category: c.category().to_string(),
        title: c.file.title.clone(),
        runs,
        passed,
        pass_rate: if runs == 0 {
            0.0
        } else {
            passed as f64 / runs as f64
        },
        wilson_95: [lo, hi],
        pass_hat,
        stability: finding.stability,
        cause: finding.cause,
        evidence: finding.evidence,
        remedy: finding.cause.map(|x| x.remedy().to_string()),
        marker,
        marker_status,
        lanes,
        not_run: plan.skipped[ci]
            .iter()
            .map(|(l, why)| format!("{}: {why}", l.as_str()))
            .collect(),
        baseline: baseline_of(baseline.and_then(|b| b.get(c.id())), passed, runs),
        example_failure,
    }
}

fn totals(out: &[CaseFlakiness], records: &[Vec<RunRecord>]) -> Totals {
    let count = |f: &dyn Fn(&CaseFlakiness) -> bool| out.iter().filter(|c| f(c)).count() as u64;
    let mut by_cause = std::collections::BTreeMap::<Cause, u64>::new();
    for c in out.iter().filter(|c| c.stability == Stability::Flaky) {
        if let Some(x) = c.cause {
            *by_cause.entry(x).or_default() += 1;
        }
    }
    Totals {
        cases: out.len() as u64,
        flaky: count(&|c| c.stability == Stability::Flaky),
        known: count(&|c| c.marker_status == MarkerStatus::Known),
        beyond_marker: count(&|c| c.marker_status == MarkerStatus::BeyondMarker),
        fixed: count(&|c| c.marker_status == MarkerStatus::Fixed),
        fails_every_run: count(&|c| c.stability == Stability::FailsEveryRun),
        bench_faults: records
            .iter()
            .flatten()
            .filter(|r| r.bench_fault.is_some())
            .count() as u64,
        by_cause,
        pass_hat: PassHat {
            k1: mean(out.iter().map(|c| c.pass_hat.k1)),
            k3: mean(out.iter().map(|c| c.pass_hat.k3)),
            kn: mean(out.iter().map(|c| c.pass_hat.kn)),
        },
    }
}

fn build_report(
    args: &FlakyArgs,
    cases: &[Case],
    plan: &plan::Plan,
    records: &[Vec<RunRecord>],
    baseline: Option<&HashMap<String, (u64, u64)>>,
    wall_ms: u64,
) -> FlakyReport {
    let mut out: Vec<CaseFlakiness> = cases
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let recs = records.get(ci).map(Vec::as_slice).unwrap_or(&[]);
            case_flakiness(args, (ci, c), plan, recs, baseline)
        })
        .collect();
    out.sort_by(|a, b| {
        let key = |c: &CaseFlakiness| (c.pass_hat.kn.unwrap_or(0.0), c.pass_rate);
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.id.cmp(&b.id))
    });
    let totals = totals(&out, records);
    FlakyReport {
        schema_version: report::SCHEMA_VERSION,
        schema: report::SCHEMA.into(),
        suite: args.suite.display().to_string(),
        git_rev: crate::summary::git_rev(&args.suite),
        reruns: args.reruns,
        passed: totals.beyond_marker == 0,
        totals,
        case_runs: records.iter().map(|r| r.len() as u64).sum(),
        wall_ms,
        baseline: args.baseline.as_ref().map(|p| p.display().to_string()),
        cases: out,
    }
}
