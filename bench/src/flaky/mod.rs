//! `bench flaky`'s analysis: from each case's reruns (the runs as written
//! and the evidence lanes of [`plan`]) to its pass rate, Wilson interval,
//! pass^k, cause ([`evidence`]) and marker status, the report
//! ([`report`]); and a baseline to compare against. The command
//! (cmd/flaky.rs) runs the plan and renders.

pub mod evidence;
pub mod plan;
pub mod report;

use crate::case_run::RunRecord;
use crate::known_flaky::Cause;
use crate::stats::reliability::{fisher_fell, pass_hat_k};
use crate::stats::{wilson, Z95};
use crate::suite::Case;
use evidence::{Lane, Stability, Trial};
use report::{Baseline, CaseFlakiness, FlakyReport, LaneResult, MarkerStatus, PassHat, Totals};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Why `--baseline` could not be read; the text is what the error line says.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
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
pub fn read_baseline(dir: &Path) -> Result<HashMap<String, (u64, u64)>, BaselineError> {
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
    args: &Settings,
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

/// The command line's part in the report.
pub struct Settings<'a> {
    pub suite: &'a Path,
    /// Reruns per lane: the k of pass^k.
    pub reruns: u32,
    /// The --baseline given, named in the report.
    pub baseline: Option<&'a Path>,
}

/// The report from every case's records: per case its pass rate, interval,
/// pass^k, cause and marker status, sorted worst first, and the totals.
pub fn build_report(
    args: &Settings,
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
        git_rev: crate::summary::git_rev(args.suite),
        reruns: args.reruns,
        passed: totals.beyond_marker == 0,
        totals,
        case_runs: records.iter().map(|r| r.len() as u64).sum(),
        wall_ms,
        baseline: args.baseline.map(|p| p.display().to_string()),
        cases: out,
    }
}
