//! Measuring the budget curve: the whole suite once per level with every
//! case's hard cap and visible task budget scaled to the level
//! (`Overlay::budget_scale`), through the same batch runner as `bench run`,
//! each case-run observed from its record and its report.json, then the
//! analysis.

use super::analysis::{self, KneeReport, RunObs};
use crate::batch::Batch;
use crate::case_run::{Overlay, RunRecord};
use crate::suite;
use harness::ending::Ending;
use std::path::{Path, PathBuf};

/// A measurement to make, its flags checked.
pub struct Plan {
    pub suite: PathBuf,
    /// Distinct, highest first.
    pub levels: Vec<f64>,
    pub runs_per_case: u32,
    pub out: PathBuf,
    pub max_concurrency: usize,
    pub harness_bin: PathBuf,
    pub bootstrap_reps: usize,
    pub seed: u64,
    pub sensitivity: f64,
}

/// A measurement made: the report, every case-run's figures, where they
/// go, and what was left out.
pub struct Measured {
    pub report: KneeReport,
    pub obs: Vec<RunObs>,
    /// The output root, created and canonical.
    pub out: PathBuf,
    /// Cases that did not load (named on stderr as they were found).
    pub cases_not_loaded: usize,
    /// When the first level started.
    pub started: std::time::Instant,
}

/// Why nothing could be measured.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The suite could not be loaded.
    #[error("{0}")]
    Suite(String),
    #[error("no cases to run under {0}")]
    NoCases(String),
    /// The replay servers or the output root could not be set up.
    #[error(transparent)]
    Batch(#[from] crate::batch::BatchError),
}

/// Every level in turn, then the analysis.
pub async fn measure(plan: &Plan) -> Result<Measured, MeasureError> {
    let loaded =
        suite::load_suite(&plan.suite, None).map_err(|e| MeasureError::Suite(e.to_string()))?;
    for e in &loaded.errors {
        errln!("bench knee: case not loaded: {e}");
    }
    if loaded.cases.is_empty() {
        return Err(MeasureError::NoCases(plan.suite.display().to_string()));
    }
    let b = Batch::start(
        loaded.cases,
        plan.harness_bin.clone(),
        &plan.out,
        plan.runs_per_case,
        plan.max_concurrency,
    )
    .await?;
    let started = std::time::Instant::now();
    let mut obs: Vec<RunObs> = vec![];
    for (li, &level) in plan.levels.iter().enumerate() {
        let t0 = std::time::Instant::now();
        let this = measure_level(&b, level).await;
        errln!("{}", level_line(&this, (li, plan.levels.len()), level, t0));
        obs.extend(this);
    }
    analysis::fill_planned(&mut obs);
    let report = analysis::analyze(
        &plan.suite.display().to_string(),
        plan.runs_per_case,
        &plan.levels,
        &obs,
        plan.bootstrap_reps,
        plan.seed,
        plan.sensitivity,
    );
    Ok(Measured {
        report,
        obs,
        out: b.out.clone(),
        cases_not_loaded: loaded.errors.len(),
        started,
    })
}

/// One level: every case-run with the caps scaled, under
/// levels/level-<L>/, each observed, and each that is not a data point
/// named on stderr as it is found.
async fn measure_level(b: &Batch, level: f64) -> Vec<RunObs> {
    let overlay = Overlay {
        table: Default::default(),
        budget_scale: Some(level),
        ..Default::default()
    };
    let per_case = b
        .run(
            &overlay,
            &b.out.join("levels").join(format!("level-{level}")),
            &mut crate::events::Quiet,
        )
        .await;
    let mut this: Vec<RunObs> = vec![];
    for (c, runs) in b.cases.iter().zip(&per_case) {
        for rec in runs {
            let o = observe(level, c.id(), rec);
            match (&o.not_comparable, &o.error) {
                (Some(f), _) => errln!(
                    "bench knee: level {level} {} run {}: not comparable, not a data point: {}",
                    c.id(),
                    rec.run,
                    f.describe()
                ),
                (None, Some(e)) => {
                    errln!("bench knee: level {level} {} run {}: {e}", c.id(), rec.run)
                }
                (None, None) => {}
            }
            this.push(o);
        }
    }
    if this.len() as u64 != b.total() {
        errln!(
            "bench knee: level {level}: {} of {} case-runs came back (a run task panicked)",
            this.len(),
            b.total()
        );
    }
    this
}

/// The progress line after a level: what it spent and verified, how many
/// runs the budget ended, and how long it took.
fn level_line(
    this: &[RunObs],
    (li, n_levels): (usize, usize),
    level: f64,
    t0: std::time::Instant,
) -> String {
    let spend: f64 = this.iter().map(|o| o.spend_usd).sum();
    let verified: u64 = this.iter().map(|o| o.verified).sum();
    let exhausted = this
        .iter()
        .filter(|o| o.ending == Some(Ending::BudgetExhausted))
        .count();
    format!(
        "[level {}/{}] {:>4} of each cap: {} case-runs, ${spend:.2} spent, {verified} tasks verified, {exhausted} BUDGET_EXHAUSTED, {:.1}s",
        li + 1,
        n_levels,
        format!("{:.0}%", 100.0 * level),
        this.len(),
        t0.elapsed().as_secs_f64()
    )
}

/// Why a case-run's report.json gave no figures; the message names the
/// file (and the strict loader's, the field).
#[derive(Debug, thiserror::Error)]
enum ReportError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// Boxed: the strict loader's error is large (the path and the value found).
    #[error("{path}: {source}")]
    Parse {
        path: String,
        source: Box<strict::Error>,
    },
}

/// (verified, parked, queue_left, hard cap) from a report.json, read as the
/// harness's own type through the strict loader.
fn read_report(path: &Path) -> Result<(u64, u64, u64, f64), ReportError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: shown(),
        source,
    })?;
    let r: harness::report::Report =
        strict::from_str(strict::Format::Json, &text).map_err(|source| ReportError::Parse {
            path: shown(),
            source: Box::new(source),
        })?;
    let n = |v: usize| v as u64;
    Ok((
        n(r.verified.len()),
        n(r.parked.len()),
        n(r.queue_left.len()),
        r.hard_cap_usd,
    ))
}

/// A case-run's figures, from its record and its report.json. A run with
/// no readable report is an error observation naming the file and field.
pub fn observe(level: f64, case: &str, rec: &RunRecord) -> RunObs {
    let mut o = RunObs {
        level,
        case: case.to_string(),
        run: rec.run,
        ending: rec.ending,
        spend_usd: rec.cost_usd,
        hard_cap_usd: 0.0,
        verified: rec.verified,
        parked: 0,
        queue_left: 0,
        planned: 0,
        planned_borrowed: false,
        error: None,
        not_comparable: None,
        state_dir: rec.state_dir.clone(),
    };
    // A case-run the bench's machinery ended (the level changed the traffic
    // and the cassette missed, ...) is not a data point of the budget curve.
    if let Some(f) = &rec.bench_fault {
        o.error = Some(f.describe());
        o.not_comparable = Some(f.clone());
        return o;
    }
    if rec.ending.is_none() {
        o.error = Some(rec.failures.join("; "));
        return o;
    }
    match read_report(&Path::new(&rec.state_dir).join(harness::report::FILE_NAME)) {
        Ok((v, p, q, cap)) => {
            o.verified = v;
            o.parked = p;
            o.queue_left = q;
            o.hard_cap_usd = cap;
        }
        Err(e) => o.error = Some(e.to_string()),
    }
    // A run that died on an error measures the bench, not the budget.
    if o.error.is_none() && rec.ending == Some(harness::ending::Ending::UnrecoverableError) {
        o.error = Some(format!(
            "ended UNRECOVERABLE_ERROR: {}",
            rec.failures.join("; ")
        ));
    }
    o
}
