//! Live mode of `bench diverge`: record the recorded set's cases again
//! through the live core `bench record` uses (`live::overlay`, the proxy,
//! the command-wide cap, the recorder, `batch`), into `<out>/recorded/`,
//! with live.json in `<out>/`. Defaults come from the recorded set: as many
//! runs as its cassettes have variants, its temperature and seed when every
//! cassette agrees (so the rerun asks the same thing again).

use super::trajectory::Set;
use crate::batch::{self, Batch};
use crate::case_run::Overlay;
use crate::events::{Lines, Terminal};
use crate::exit::ExitStatus;
use crate::live::{self, recorder::Recorder, LiveSettings, LiveTarget};
use crate::suite::Case;
use harness::model::Protocol;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The live flags, as the command parsed them.
#[derive(Debug, Clone)]
pub struct LiveRequest {
    pub endpoint: String,
    pub protocol: Protocol,
    pub model: String,
    pub max_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
    pub runs: Option<u32>,
    pub max_concurrency: usize,
    pub prices: Option<PathBuf>,
    pub suite: PathBuf,
    pub work: PathBuf,
    pub harness: Option<PathBuf>,
    pub out: PathBuf,
}

/// Why the live run did not leave a set to compare; each kind is its own
/// exit status.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A flag, or a default the recorded set cannot give (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The cases, the harness or the endpoint cannot be had, or nothing was
    /// recorded (exit 3).
    #[error("{0}")]
    Unloadable(String),
}

impl LiveError {
    pub fn status(&self) -> ExitStatus {
        match self {
            LiveError::Usage(_) => ExitStatus::Usage,
            LiveError::Unloadable(_) => ExitStatus::Unloadable,
        }
    }
}

fn usage(m: impl std::fmt::Display) -> LiveError {
    LiveError::Usage(m.to_string())
}

fn unloadable(m: impl std::fmt::Display) -> LiveError {
    LiveError::Unloadable(m.to_string())
}

/// Temperature, seed and runs, the flags' or the recorded set's.
#[derive(Debug, Clone, Copy)]
struct Sampling {
    temperature: f64,
    seed: Option<u64>,
    runs: u32,
}

/// Everything the live run needs, checked before the proxy starts.
struct LivePlan {
    settings: LiveSettings,
    sampling: Sampling,
    overlay: Overlay,
    harness_bin: PathBuf,
    cases: Vec<Case>,
}

/// One value every cassette of the set agrees on, or None.
fn agreed<T: PartialEq + Copy>(values: impl Iterator<Item = T>) -> Result<Option<T>, ()> {
    let mut seen: Option<T> = None;
    for v in values {
        match seen {
            None => seen = Some(v),
            Some(s) if s == v => {}
            Some(_) => return Err(()),
        }
    }
    Ok(seen)
}

/// Record the recorded set's cases again into `<out>/recorded/`. Ok when
/// there is something to compare (a run the cap cut short is missing from
/// the new set and shows as diverged).
pub async fn record(req: &LiveRequest, set: &Set) -> Result<(), LiveError> {
    let plan = plan(req, set)?;
    let proxy = live::start_proxy(&plan.settings, req.max_concurrency)
        .await
        .map_err(unloadable)?;
    let recorder = Recorder::new(
        &req.out.join("recorded"),
        live::provenance("bench diverge", proxy.upstream_host()),
        plan.sampling.runs,
    )
    .map(Arc::new)
    .map_err(usage)?;
    let target = LiveTarget::new(
        proxy.clone(),
        None,
        Some(recorder.clone()),
        plan.sampling.seed,
        plan.settings.api_key_env.clone(),
    );
    errln!(
        "bench diverge: {} case(s) x {} run(s) live against {} ({} {}, temperature {}), cap {}",
        plan.cases.len(),
        plan.sampling.runs,
        proxy.upstream_host(),
        req.protocol.as_str(),
        req.model,
        plan.sampling.temperature,
        plan.settings.caps.describe()
    );
    let b = Batch::start_live(
        plan.cases,
        target.clone(),
        plan.harness_bin,
        &req.work,
        plan.sampling.runs,
        req.max_concurrency,
    )
    .map_err(unloadable)?;
    let mut terminal = Terminal::new(b.total(), "live case-runs", Lines::Live);
    b.run(&plan.overlay, &b.out, &mut terminal).await;
    terminal.finish();
    let report = live::LiveReport::collect(&target, recorder.finish());
    report_live(&report, &req.out);
    if report.recordings.iter().all(|w| w.path.is_none()) {
        return Err(unloadable(
            "the live run recorded no cassette; nothing to compare",
        ));
    }
    Ok(())
}

/// The live run's lines on stdout and live.json in `out`; a live.json that
/// cannot be written is said, not fatal: the comparison still stands.
fn report_live(report: &live::LiveReport, out: &Path) {
    for l in report.lines() {
        outln!("{l}");
    }
    if let Err(e) = std::fs::create_dir_all(out)
        .map_err(|e| e.to_string())
        .and_then(|_| report.write(out))
    {
        errln!("bench diverge: cannot write live.json: {e}");
    }
}

/// Every check before anything is spent, in the order the flags are
/// reported: sampling, runs, concurrency, the cap, prices, the harness, the
/// cases.
fn plan(req: &LiveRequest, set: &Set) -> Result<LivePlan, LiveError> {
    let sampling = sampling(req, set)?;
    if req.max_concurrency == 0 || req.max_concurrency > batch::CONCURRENCY_MAX {
        return Err(usage(format!(
            "--max-concurrency {}: expected 1..={}",
            req.max_concurrency,
            batch::CONCURRENCY_MAX
        )));
    }
    let settings = live::settings(
        &req.endpoint,
        req.api_key_env.as_deref(),
        req.max_usd,
        req.max_tokens,
    )
    .map_err(usage)?;
    let prices = match &req.prices {
        Some(p) => Some(crate::prices::load_price_table(p).map_err(usage)?),
        None => None,
    };
    let overlay = live::overlay::overlay(
        req.protocol,
        &req.model,
        sampling.temperature,
        prices.as_ref(),
    );
    let harness_bin = batch::harness_bin(req.harness.as_deref()).map_err(unloadable)?;
    let cases = cases(req, set)?;
    live::overlay::check_cases(&cases, &overlay, sampling.seed, &req.model, req.max_tokens)
        .map_err(usage)?;
    Ok(LivePlan {
        settings,
        sampling,
        overlay,
        harness_bin,
        cases,
    })
}

/// Temperature, seed and runs: each flag, or the recorded set's when every
/// cassette agrees on it, so the rerun asks the same thing again.
fn sampling(req: &LiveRequest, set: &Set) -> Result<Sampling, LiveError> {
    let temperature = match req.temperature {
        Some(t) => t,
        None => match agreed(set.cases.values().map(|c| c.temperature.map(f64::to_bits))) {
            Ok(Some(Some(bits))) => f64::from_bits(bits),
            _ => {
                return Err(usage(format!(
                    "--temperature: the cassettes in {} do not agree on one recorded temperature; give it",
                    set.dir.display()
                )))
            }
        },
    };
    if !(temperature.is_finite() && (0.0..=2.0).contains(&temperature)) {
        return Err(usage(format!(
            "--temperature {temperature}: expected 0..=2"
        )));
    }
    let anthropic = req.protocol == Protocol::Anthropic;
    let seed = match req.seed {
        Some(s) => Some(s),
        None if anthropic => None,
        None => agreed(set.cases.values().map(|c| c.seed))
            .ok()
            .flatten()
            .flatten(),
    };
    if seed.is_some() && anthropic {
        return Err(usage(
            "--seed: the Anthropic Messages API takes no seed; leave it out",
        ));
    }
    let runs = req.runs.unwrap_or_else(|| {
        (set.cases.values())
            .map(|c| c.runs.len() as u32)
            .max()
            .unwrap_or(1)
    });
    if runs == 0 || runs > batch::RUNS_PER_CASE_MAX {
        return Err(usage(format!(
            "--runs {runs}: expected 1..={}",
            batch::RUNS_PER_CASE_MAX
        )));
    }
    Ok(Sampling {
        temperature,
        seed,
        runs,
    })
}

/// The cases, by the recorded cassettes' ids; one the suite lacks is an
/// error (comparing it against nothing would say "diverged" for a typo).
fn cases(req: &LiveRequest, set: &Set) -> Result<Vec<Case>, LiveError> {
    let suite =
        live::load_suite_live(&req.suite, None).map_err(|e| unloadable(format!("--suite: {e}")))?;
    let cases: Vec<_> = suite
        .cases
        .into_iter()
        .filter(|c| set.cases.contains_key(c.id()))
        .collect();
    let missing: Vec<&str> = set
        .cases
        .keys()
        .filter(|id| !cases.iter().any(|c| c.id() == id.as_str()))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let why = (suite.errors.iter())
            .find(|e| missing.iter().any(|m| e.file.contains(m)))
            .map(|e| format!(" (first problem: {e})"))
            .unwrap_or_default();
        return Err(unloadable(format!(
            "--suite {}: no case for {} of the recorded set's case ids: {}{why}",
            req.suite.display(),
            missing.len(),
            missing.join(", ")
        )));
    }
    Ok(cases)
}
