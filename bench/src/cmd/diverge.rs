//! `bench diverge`: did the agent's trajectory change? Compares two sets of
//! recordings case by case and variant by variant, or a committed set
//! against a fresh live run of the same cases.
//!
//!     bench diverge --recorded DIR (--against DIR | --endpoint URL --protocol P
//!                   --model M --max-usd X [--max-tokens N] [--temperature T]
//!                   [--seed S] [--runs N] [--suite DIR] [--work DIR])
//!                   [--threshold 0.9] [--out DIR]
//!
//! The three questions of a replay (design seed §10): `bench run` replaying
//! the recordings answers "did my code change?"; `bench diverge` over two
//! recordings of the same cases answers "did the model's behaviour change?"
//! (another temperature, seed, model or prompt); `--endpoint` answers "is it
//! still happening?" by recording the cases again, now. The verdict is a cheap
//! overlap score (Jaccard, LCS) below `--threshold`, not a judge call: it costs
//! nothing, reproduces exactly, and says where the runs part.
//!
//! A set is a directory of cassettes, `<case-id>.json` (what `bench record`
//! writes). What is read from each run variant (`trajectory`), how it is
//! compared and what counts as diverged (`compare`), the math
//! (`similarity`) and the outputs (`render`) are modules of their own.
//! Outputs in `--out`: diverge.json (`compare::DivergeReport`, the contract),
//! diverge.md (worst first, with each diverged variant's first parting point
//! side by side) and the table on stdout.
//!
//! Live mode runs the recorded set's cases (found in `--suite`, default
//! suites/live, by the cassettes' case ids) through the live core `bench
//! record` uses (`live::overlay`, the proxy, the command-wide cap, the
//! recorder, `batch`), writes the new cassettes to `<out>/recorded/` and
//! live.json to `<out>/`, then compares. Defaults come from the recorded set:
//! as many runs as its cassettes have variants, its temperature and seed
//! when every cassette agrees (so the rerun asks the same thing again).
//!
//! Exit codes (`bench::exit`): 0 nothing diverged; 1 some case diverged
//! (`Diverged`); 2 usage; 3 a set cannot be read (a missing directory, a
//! cassette that does not parse: the error names the file and the field),
//! the live run could not start, or the outputs could not be written.

mod render;

use crate::batch;
use crate::cli::ProtocolArg;
use crate::exit::ExitStatus;
use crate::live;
use bench::diverge::live::LiveRequest;
use bench::diverge::{compare, trajectory};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct DivergeArgs {
    /// The reference set: a directory of cassettes (<case-id>.json), e.g. recordings/live.
    #[arg(long)]
    pub recorded: PathBuf,
    /// The set to compare with it: another directory of cassettes.
    #[arg(
        long,
        conflicts_with = "endpoint",
        required_unless_present = "endpoint"
    )]
    pub against: Option<PathBuf>,
    /// A variant whose calls, tasks or step sequence overlap less than this (0..=1) diverged.
    #[arg(long, default_value_t = 0.9)]
    pub threshold: f64,
    /// Where diverge.json and diverge.md go (and, live, recorded/ and live.json).
    #[arg(long, default_value = "target/bench/diverge")]
    pub out: PathBuf,
    /// Live: record the recorded set's cases again against this endpoint, then compare.
    #[arg(long, requires_all = ["protocol", "model", "max_usd"])]
    pub endpoint: Option<String>,
    #[arg(long, value_enum, requires = "endpoint")]
    pub protocol: Option<ProtocolArg>,
    /// Live: the model name for planner, executor and judge.
    #[arg(long, requires = "endpoint")]
    pub model: Option<String>,
    /// Live: command-wide spending cap in USD over every case-run.
    #[arg(long, requires = "endpoint")]
    pub max_usd: Option<f64>,
    /// Live: command-wide cap in tokens (the guard for a model priced at $0).
    #[arg(long, requires = "endpoint")]
    pub max_tokens: Option<u64>,
    /// Live: name of the environment variable holding the API key (never the key).
    #[arg(long, requires = "endpoint")]
    pub api_key_env: Option<String>,
    /// Live: sampling temperature (default: the recorded set's, when its cassettes agree).
    #[arg(long, requires = "endpoint")]
    pub temperature: Option<f64>,
    /// Live: seed of run 0, run i uses seed + i (default: the recorded set's, when they agree).
    #[arg(long, requires = "endpoint")]
    pub seed: Option<u64>,
    /// Live: case-runs per case (default: the most variants a recorded cassette has).
    #[arg(long, requires = "endpoint")]
    pub runs: Option<u32>,
    /// Live: case-runs (and upstream requests) at once.
    #[arg(long, default_value_t = 1)]
    pub max_concurrency: usize,
    /// Live: TOML price table added to each case's (a local model: 0).
    #[arg(long, requires = "endpoint")]
    pub prices: Option<PathBuf>,
    /// Live: where the cases are found by the cassettes' case ids.
    #[arg(long, default_value = "suites/live")]
    pub suite: PathBuf,
    /// Live: case-run directories (copies, state dirs).
    #[arg(long, default_value = "target/bench/diverge-work")]
    pub work: PathBuf,
    /// Live: the harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
}

fn fail(status: ExitStatus, msg: impl std::fmt::Display) -> ExitCode {
    errln!("bench diverge: {msg}");
    ExitCode::from(status)
}

pub fn run(args: DivergeArgs) -> ExitCode {
    let started = Instant::now();
    if !(args.threshold.is_finite() && (0.0..=1.0).contains(&args.threshold)) {
        return fail(
            ExitStatus::Usage,
            format!("--threshold {}: expected 0..=1", args.threshold),
        );
    }
    let recorded = match trajectory::load_set(&args.recorded) {
        Ok(s) => s,
        Err(e) => return fail(ExitStatus::Unloadable, format!("--recorded: {e}")),
    };
    let (against_dir, mode) = match &args.against {
        Some(d) => (d.clone(), "recorded"),
        None => {
            let code = batch::block_on(
                "diverge",
                ExitStatus::Unloadable,
                record_live(&args, &recorded),
            );
            if code != ExitCode::SUCCESS {
                return code;
            }
            (args.out.join("recorded"), "live")
        }
    };
    let against = match trajectory::load_set(&against_dir) {
        Ok(s) => s,
        Err(e) => return fail(ExitStatus::Unloadable, format!("--against: {e}")),
    };
    let mut report = compare::compare(&recorded, &against, args.threshold, mode);
    report.wall_ms = started.elapsed().as_millis().min(u64::MAX as u128) as u64;
    outln!("{}", render::table(&report));
    if let Err(e) = write_outputs(&args.out, &report) {
        return fail(ExitStatus::Unloadable, e);
    }
    let t = &report.totals;
    outln!(
        "bench diverge: {} of {} case(s) diverged ({} of {} variant(s), {} ending(s) changed), worst similarity {}, in {} ms",
        t.cases_diverged,
        t.cases,
        t.variants_diverged,
        t.variants,
        t.endings_changed,
        t.worst_similarity
            .map_or("-".into(), |v| format!("{v:.3}")),
        report.wall_ms
    );
    outln!("json       {}", args.out.join("diverge.json").display());
    outln!("md         {}", args.out.join("diverge.md").display());
    ExitStatus::gate(!report.diverged, ExitStatus::Diverged).into()
}

/// Why the report's files were not all written; each names its file.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("--out {}: cannot create: {source}", .dir.display())]
    CreateOut {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{}: cannot write: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn write_outputs(out: &Path, r: &compare::DivergeReport) -> Result<(), WriteError> {
    std::fs::create_dir_all(out).map_err(|source| WriteError::CreateOut {
        dir: out.to_path_buf(),
        source,
    })?;
    let json = serde_json::to_string_pretty(r)? + "\n";
    for (name, text) in [("diverge.json", json), ("diverge.md", render::markdown(r))] {
        let path = out.join(name);
        harness::durable::atomic_write(&path, text.as_bytes())
            .map_err(|source| WriteError::Write { path, source })?;
    }
    Ok(())
}

/// Live mode: record the recorded set's cases again into `<out>/recorded/`
/// (bench::diverge::live). SUCCESS when there is something to compare, else
/// the failing code.
async fn record_live(args: &DivergeArgs, set: &trajectory::Set) -> ExitCode {
    let (Some(endpoint), Some(p), Some(model)) = (&args.endpoint, args.protocol, &args.model)
    else {
        return fail(
            ExitStatus::Usage,
            "--endpoint needs --protocol, --model and --max-usd",
        );
    };
    let req = LiveRequest {
        endpoint: endpoint.clone(),
        protocol: live::overlay::protocol(p),
        model: model.clone(),
        max_usd: args.max_usd,
        max_tokens: args.max_tokens,
        api_key_env: args.api_key_env.clone(),
        temperature: args.temperature,
        seed: args.seed,
        runs: args.runs,
        max_concurrency: args.max_concurrency,
        prices: args.prices.clone(),
        suite: args.suite.clone(),
        work: args.work.clone(),
        harness: args.harness.clone(),
        out: args.out.clone(),
    };
    match bench::diverge::live::record(&req, set).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e.status(), e),
    }
}
