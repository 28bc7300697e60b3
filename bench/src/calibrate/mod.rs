//! Calibration of the drift detectors on hand-labeled queues (`bench
//! calibrate`): the labeled set (`queues`), the detectors (`lexical`, the
//! model-free baseline; `judge`, the harness's own drift request against a
//! live endpoint or recordings of a real model) and the figures that say
//! whether a detector separates the labels (`metrics`).
//!
//! The command (bench/src/cmd/calibrate.rs) turns its flags into one
//! [`Plan`], calls [`measure`] and renders the [`Calibration`] it returns.
//! Without a live endpoint or recordings the judge is NOT MEASURED (issue
//! 9): no number in any report comes from anything but a real model's
//! answers.

pub mod judge;
pub mod lexical;
pub mod metrics;
pub mod queues;

use harness::ledger::PriceTable;
use metrics::{DetectorEntry, DetectorInput, DetectorReport, NotMeasured, Obs};
use queues::{Label, LabeledSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// calibration.json.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub n_queues: usize,
    pub n_aligned: usize,
    pub n_drifted: usize,
    pub queues_dir: String,
    pub runs: u32,
    pub bands: Bands,
    pub warnings: Vec<String>,
    pub note: String,
    pub detectors: BTreeMap<String, DetectorEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bands {
    pub prune_above: f64,
    pub halt_above: f64,
}

/// Which detectors a calibration measures (`--detector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detectors {
    Judge,
    Lexical,
    All,
}

/// Where the judge's answers come from: a live endpoint or recordings.
#[derive(Debug, Clone)]
pub enum JudgeSource {
    Live(judge::LiveSource),
    Replay(judge::ReplaySource),
}

/// One calibration, every flag already checked: what to measure, on which
/// labeled set, with which judge.
#[derive(Debug, Clone)]
pub struct Plan {
    pub set: LabeledSet,
    /// The labeled set's directory, as reported in calibration.json.
    pub queues_dir: PathBuf,
    pub detectors: Detectors,
    pub runs: u32,
    pub judge: JudgeSource,
    /// The recordings directory, named in the how-to when the judge is not
    /// measured.
    pub recordings: PathBuf,
    pub prices: PriceTable,
}

/// What [`measure`] found: the calibration.json value, every measured
/// detector's report (for the ROC plot), and whether a detector asked for
/// could not be measured (exit 3).
#[derive(Debug, Clone)]
pub struct Measured {
    pub calibration: Calibration,
    pub reports: Vec<(String, DetectorReport)>,
    pub not_measured_fails: bool,
}

/// The judge's `kind` line, the same whether measured or not.
const JUDGE_KIND: &str =
    "LLM judge: the harness's drift request, fresh context, (goal, queue) only";

/// The lexical detector on every queue, `runs` times. Deterministic, so the
/// runs only differ in measured latency; they are kept so `--runs N` reports
/// the same structure for every detector.
pub fn run_lexical(set: &LabeledSet, runs: u32) -> DetectorInput {
    let runs = (0..runs.max(1))
        .map(|_| {
            set.queues
                .iter()
                .map(|q| {
                    let tasks: Vec<(String, String)> = q
                        .queue
                        .iter()
                        .map(|t| (t.id.clone(), t.description.clone()))
                        .collect();
                    let started = Instant::now();
                    let c = lexical::check(&q.goal, &tasks);
                    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                    Ok(Obs {
                        score: c.drift_score,
                        off_goal: c.off_goal_task_ids,
                        cost_usd: Some(0.0),
                        latency_ms,
                    })
                })
                .collect()
        })
        .collect();
    DetectorInput {
        name: "lexical".into(),
        kind: "model-free baseline: goal/task word overlap".into(),
        source: format!(
            "computed here (stem-set cosine per task, full credit at {}, off-goal below {} credit)",
            lexical::FULL_CREDIT_COSINE,
            lexical::OFF_GOAL_BELOW_CREDIT
        ),
        model: None,
        runs,
    }
}

pub fn judge_input(run: &judge::JudgeRun) -> DetectorInput {
    DetectorInput {
        name: "judge".into(),
        kind: JUDGE_KIND.into(),
        source: run.source.clone(),
        model: Some(format!("{} ({})", run.model, run.protocol.as_str())),
        runs: run
            .checks
            .iter()
            .map(|row| {
                row.iter()
                    .map(|c| {
                        c.outcome.as_ref().map_err(|e| e.clone()).map(|dc| Obs {
                            score: dc.drift_score,
                            off_goal: dc.off_goal_task_ids.clone(),
                            cost_usd: c.cost_usd,
                            latency_ms: c.latency_ms as f64,
                        })
                    })
                    .collect()
            })
            .collect(),
    }
}

/// Measure every detector the plan asks for and put the figures together.
pub fn measure(plan: &Plan) -> Measured {
    let mut inputs: Vec<DetectorInput> = Vec::new();
    let mut not_measured: BTreeMap<String, NotMeasured> = BTreeMap::new();
    let mut not_measured_fails = false;
    if matches!(plan.detectors, Detectors::Lexical | Detectors::All) {
        inputs.push(run_lexical(&plan.set, plan.runs));
    }
    if matches!(plan.detectors, Detectors::Judge | Detectors::All) {
        match measure_judge(plan) {
            Ok(input) => inputs.push(input),
            Err(u) => {
                // Under --detector all, "no recordings yet" is the expected
                // state until issue 9, and the lexical baseline is still
                // measured; anything else (refused, bad flags) is a failure.
                not_measured_fails |= plan.detectors == Detectors::Judge
                    || !matches!(u, judge::Unavailable::NoRecordings(_));
                not_measured.insert("judge".into(), judge_not_measured(plan, &u));
            }
        }
    }
    let mut detectors: BTreeMap<String, DetectorEntry> = BTreeMap::new();
    let mut reports = Vec::new();
    for input in &inputs {
        let r = metrics::evaluate(&plan.set, input);
        reports.push((input.name.clone(), r.clone()));
        detectors.insert(input.name.clone(), DetectorEntry::Measured(Box::new(r)));
    }
    for (n, nm) in not_measured {
        detectors.insert(n, DetectorEntry::NotMeasured(nm));
    }
    Measured {
        calibration: calibration(plan, detectors),
        reports,
        not_measured_fails,
    }
}

fn calibration(plan: &Plan, detectors: BTreeMap<String, DetectorEntry>) -> Calibration {
    let set = &plan.set;
    Calibration {
        n_queues: set.queues.len(),
        n_aligned: set.count(Label::Aligned),
        n_drifted: set.count(Label::Drifted),
        queues_dir: plan.queues_dir.display().to_string(),
        runs: plan.runs,
        bands: Bands {
            prune_above: metrics::PRUNE_ABOVE,
            halt_above: metrics::HALT_ABOVE,
        },
        warnings: set.warnings.clone(),
        note: metrics::small_sample_note(set.queues.len()),
        detectors,
    }
}

/// The judge's answers as a detector input; what was recorded and what is
/// not priced is said on stderr, where the run's other notes go.
fn measure_judge(plan: &Plan) -> Result<DetectorInput, judge::Unavailable> {
    let run = run_judge(plan)?;
    if let Some(p) = &run.recorded_to {
        errln!(
            "bench calibrate: recorded the judge's answers to {}",
            p.display()
        );
    }
    if !run.priced {
        errln!("bench calibrate: model {:?} has no price in the table: cost per check is reported as not priced (pass --prices)", run.model);
    }
    Ok(judge_input(&run))
}

/// The not-measured entry, with the reason and how to record, both also on
/// stderr.
fn judge_not_measured(plan: &Plan, u: &judge::Unavailable) -> NotMeasured {
    let how_to = judge::how_to_record(&plan.recordings);
    errln!(
        "bench calibrate: judge: NOT MEASURED: {}\n{how_to}",
        u.message()
    );
    NotMeasured {
        measured: false,
        kind: JUDGE_KIND.into(),
        auc: None,
        verdict: "not measured: no figures without a real model's answers".into(),
        reason: u.message().to_string(),
        how_to,
    }
}

fn run_judge(plan: &Plan) -> Result<judge::JudgeRun, judge::Unavailable> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| judge::Unavailable::Config(format!("cannot start the async runtime: {e}")))?;
    match &plan.judge {
        JudgeSource::Live(src) => {
            rt.block_on(judge::run_live(&plan.set, src, plan.runs, &plan.prices))
        }
        JudgeSource::Replay(src) => rt
            .block_on(judge::run_replay(&plan.set, src, plan.runs, &plan.prices))
            .map(|(run, _)| run),
    }
}
