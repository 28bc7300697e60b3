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

mod compare;
mod render;
mod similarity;
mod trajectory;

use crate::batch::{self, Batch};
use crate::cli::ProtocolArg;
use crate::events::{Lines, Terminal};
use crate::exit::ExitStatus;
use crate::live::{self, recorder::Recorder, LiveTarget};
use clap::Args;
use harness::model::Protocol;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
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

fn write_outputs(out: &Path, r: &compare::DivergeReport) -> Result<(), String> {
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out {}: cannot create: {e}", out.display()))?;
    let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())? + "\n";
    for (name, text) in [("diverge.json", json), ("diverge.md", render::markdown(r))] {
        let p = out.join(name);
        harness::durable::atomic_write(&p, text.as_bytes())
            .map_err(|e| format!("{}: cannot write: {e}", p.display()))?;
    }
    Ok(())
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

/// Live mode: record the recorded set's cases again into `<out>/recorded/`.
/// SUCCESS when there is something to compare (a run the cap cut short is
/// missing from the new set and shows as diverged), else the failing code.
async fn record_live(args: &DivergeArgs, set: &trajectory::Set) -> ExitCode {
    let usage = |m: String| fail(ExitStatus::Usage, m);
    let unloadable = |m: String| fail(ExitStatus::Unloadable, m);
    let (Some(endpoint), Some(p), Some(model)) = (&args.endpoint, args.protocol, &args.model)
    else {
        return usage("--endpoint needs --protocol, --model and --max-usd".into());
    };
    let proto = live::overlay::protocol(p);
    let temperature = match args.temperature {
        Some(t) => t,
        None => match agreed(set.cases.values().map(|c| c.temperature.map(f64::to_bits))) {
            Ok(Some(Some(bits))) => f64::from_bits(bits),
            _ => {
                return usage(format!(
                    "--temperature: the cassettes in {} do not agree on one recorded temperature; give it",
                    set.dir.display()
                ))
            }
        },
    };
    if !(temperature.is_finite() && (0.0..=2.0).contains(&temperature)) {
        return usage(format!("--temperature {temperature}: expected 0..=2"));
    }
    let seed = match args.seed {
        Some(s) => Some(s),
        None if proto == Protocol::Anthropic => None,
        None => agreed(set.cases.values().map(|c| c.seed))
            .ok()
            .flatten()
            .flatten(),
    };
    if seed.is_some() && proto == Protocol::Anthropic {
        return usage("--seed: the Anthropic Messages API takes no seed; leave it out".into());
    }
    let runs = args.runs.unwrap_or_else(|| {
        set.cases
            .values()
            .map(|c| c.runs.len() as u32)
            .max()
            .unwrap_or(1)
    });
    if runs == 0 || runs > batch::RUNS_PER_CASE_MAX {
        return usage(format!(
            "--runs {runs}: expected 1..={}",
            batch::RUNS_PER_CASE_MAX
        ));
    }
    if args.max_concurrency == 0 || args.max_concurrency > batch::CONCURRENCY_MAX {
        return usage(format!(
            "--max-concurrency {}: expected 1..={}",
            args.max_concurrency,
            batch::CONCURRENCY_MAX
        ));
    }
    let settings = match live::settings(
        endpoint,
        args.api_key_env.as_deref(),
        args.max_usd,
        args.max_tokens,
    ) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let prices = match &args.prices {
        Some(p) => match crate::prices::load_price_table(p) {
            Ok(t) => Some(t),
            Err(e) => return usage(e),
        },
        None => None,
    };
    let ov = live::overlay::overlay(proto, model, temperature, prices.as_ref());
    let harness_bin = match batch::harness_bin(args.harness.as_deref()) {
        Ok(p) => p,
        Err(e) => return unloadable(e.to_string()),
    };
    // The cases, by the recorded cassettes' ids; one the suite lacks is an
    // error (comparing it against nothing would say "diverged" for a typo).
    let suite = match live::load_suite_live(&args.suite, None) {
        Ok(s) => s,
        Err(e) => return unloadable(format!("--suite: {e}")),
    };
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
        let why = suite
            .errors
            .iter()
            .find(|e| missing.iter().any(|m| e.file.contains(m)))
            .map(|e| format!(" (first problem: {e})"))
            .unwrap_or_default();
        return unloadable(format!(
            "--suite {}: no case for {} of the recorded set's case ids: {}{why}",
            args.suite.display(),
            missing.len(),
            missing.join(", ")
        ));
    }
    if let Err(e) = live::overlay::check_cases(&cases, &ov, seed, model, args.max_tokens) {
        return usage(e);
    }
    let proxy = match live::start_proxy(&settings, args.max_concurrency).await {
        Ok(p) => p,
        Err(e) => return unloadable(e),
    };
    let dir = args.out.join("recorded");
    let recorder = match Recorder::new(
        &dir,
        live::provenance("bench diverge", proxy.upstream_host()),
        runs,
    ) {
        Ok(r) => Arc::new(r),
        Err(e) => return usage(e),
    };
    let target = LiveTarget::new(
        proxy.clone(),
        None,
        Some(recorder.clone()),
        seed,
        settings.api_key_env.clone(),
    );
    errln!(
        "bench diverge: {} case(s) x {runs} run(s) live against {} ({} {model}, temperature {temperature}), cap {}",
        cases.len(),
        proxy.upstream_host(),
        proto.as_str(),
        settings.caps.describe()
    );
    let b = match Batch::start_live(
        cases,
        target.clone(),
        harness_bin,
        &args.work,
        runs,
        args.max_concurrency,
    ) {
        Ok(b) => b,
        Err(e) => return unloadable(e),
    };
    let mut terminal = Terminal::new(b.total(), "live case-runs", Lines::Live);
    b.run(&ov, &b.out, &mut terminal).await;
    terminal.finish();
    let written = recorder.finish();
    let report = live::LiveReport::collect(&target, written);
    for l in report.lines() {
        outln!("{l}");
    }
    if let Err(e) = std::fs::create_dir_all(&args.out)
        .map_err(|e| e.to_string())
        .and_then(|_| report.write(&args.out))
    {
        errln!("bench diverge: cannot write live.json: {e}");
    }
    if report.recordings.iter().all(|w| w.path.is_none()) {
        return unloadable("the live run recorded no cassette; nothing to compare".into());
    }
    ExitCode::SUCCESS
}
