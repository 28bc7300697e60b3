//! `bench record`: run cases live against a model endpoint and write what
//! the model answered as cassettes, so the same traffic replays offline.
//!
//!     bench record --endpoint URL --protocol openai|anthropic --model M
//!                  (--case ID|DIR | --suite DIR) [--runs N] [--temperature T]
//!                  [--seed S] [--api-key-env NAME] --max-usd X [--max-tokens N]
//!                  [--max-concurrency K] [--prices FILE] --out recordings/<name>
//!
//! Each case runs N times through the real harness binary, exactly as `bench
//! run` runs it (a fresh copy, `harness run --spec --state-dir --base-url`),
//! with an overlay on its run.toml: `model.protocol = P`, `model.planner /
//! executor / judge = M`, `model.temperature = T`, and for run i `model.seed
//! = S + i` (openai only; the Messages API has no seed). `--prices` adds
//! price entries to the case's table (a local model: 0). The harness talks
//! to the bench's live proxy, which adds the API key, enforces the
//! command-wide cap and keeps the traffic; `<out>/<case-id>.json` is written
//! as soon as a case's runs are all in, then read back with `Cassette::load`.
//! Case-run directories and `live.json` go under `--work`.
//!
//! Exit codes: 0 every case recorded with all its runs; 1 the cap was
//! reached or some run or cassette could not be recorded (the rest is
//! written); 2 usage error (a flag, or a case's spec that the overlay makes
//! invalid, named by file and field); 3 no case to record, no harness
//! binary, or the proxy could not start.

use crate::batch::{self, Batch};
use crate::cli::ProtocolArg;
use crate::events::{Lines, Terminal};
use crate::exit::ExitStatus;
use crate::live::{self, recorder::Recorder, LiveTarget};
use crate::suite::{Case, LoadError};
use clap::Args;
use harness::model::Protocol;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args, Debug, Clone)]
pub struct RecordArgs {
    /// The model endpoint (OpenAI-compatible base URL ends in /v1; Anthropic's has none).
    #[arg(long)]
    pub endpoint: String,
    #[arg(long, value_enum)]
    pub protocol: ProtocolArg,
    /// The model name sent to the endpoint, for planner, executor and judge.
    #[arg(long)]
    pub model: String,
    /// One case: a case directory (holding case.toml), or a case id under --suite (default suites).
    #[arg(long)]
    pub case: Option<String>,
    /// A suite root (suites/, its four categories) or a category directory
    /// (suites/live): every case in it, or the --case id.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// Only the cases of this category of --suite.
    #[arg(long)]
    pub category: Option<String>,
    /// Live case-runs per case = run variants in its cassette.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Sampling temperature (above 0 so the runs differ).
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f64,
    /// Sampling seed of run 0; run i uses seed + i (openai only).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Name of the environment variable holding the API key (never the key itself).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Command-wide spending cap in USD over every case-run.
    #[arg(long)]
    pub max_usd: f64,
    /// Command-wide cap in tokens: the guard for a model priced at $0.
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// Case-runs (and upstream requests) at once.
    #[arg(long, default_value_t = 1)]
    pub max_concurrency: usize,
    /// TOML price table added to each case's: [prices."<model>"] input_usd_per_mtok, output_usd_per_mtok.
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Where the cassettes go: <out>/<case-id>.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Case-run directories (copies, state dirs) and live.json.
    #[arg(long, default_value = "target/bench/record")]
    pub work: PathBuf,
    /// The harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    errln!("bench record: {msg}");
    ExitCode::from(ExitStatus::Usage)
}

fn unloadable(msg: impl std::fmt::Display) -> ExitCode {
    errln!("bench record: {msg}");
    ExitCode::from(ExitStatus::Unloadable)
}

pub fn run(args: RecordArgs) -> ExitCode {
    batch::block_on("record", ExitStatus::Unloadable, run_async(args))
}

/// Why there is no case to record.
#[derive(Debug, thiserror::Error)]
enum NoCase {
    #[error("{0}")]
    Load(LoadError),
    #[error("--case {id}: {first}")]
    CaseNotLoaded { id: String, first: LoadError },
    #[error("--case {id:?}: no such case directory or case id under {}", .root.display())]
    NoSuchCase { id: String, root: PathBuf },
    #[error("no case to record under {}{}", .root.display(),
        .first.as_ref().map(|e| format!(" (first problem: {e})")).unwrap_or_default())]
    Empty {
        root: PathBuf,
        first: Option<LoadError>,
    },
}

/// The cases to record: `--case DIR`, or the suite (filtered by category
/// and `--case ID`); cases with no cassette yet load too.
fn load_cases(args: &RecordArgs) -> Result<(Vec<Case>, Vec<LoadError>), NoCase> {
    if let Some(c) = &args.case {
        let p = Path::new(c);
        if p.join("case.toml").is_file() {
            // The category is the parent directory's name, as in a suite.
            let category = std::fs::canonicalize(p)
                .ok()
                .and_then(|d| {
                    d.parent()
                        .and_then(|x| x.file_name())
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_default();
            return live::load_case_live(p, &category)
                .map(|c| (vec![c], vec![]))
                .map_err(NoCase::Load);
        }
    }
    let root = args
        .suite
        .clone()
        .unwrap_or_else(|| PathBuf::from("suites"));
    let s = live::load_suite_live(&root, args.category.as_deref()).map_err(NoCase::Load)?;
    let (mut cases, mut errors) = (s.cases, s.errors);
    if let Some(id) = &args.case {
        cases.retain(|c| c.id() == id);
        errors.retain(|e| {
            Path::new(&e.file)
                .components()
                .any(|x| x.as_os_str() == id.as_str())
        });
        if cases.is_empty() {
            return Err(match errors.into_iter().next() {
                Some(first) => NoCase::CaseNotLoaded {
                    id: id.clone(),
                    first,
                },
                None => NoCase::NoSuchCase {
                    id: id.clone(),
                    root,
                },
            });
        }
    }
    if cases.is_empty() {
        return Err(NoCase::Empty {
            root,
            first: errors.into_iter().next(),
        });
    }
    Ok((cases, errors))
}

/// The flags that need no file or network: each out of range is a usage
/// error, said before anything starts.
fn check_flags(args: &RecordArgs, proto: Protocol) -> Result<(), ExitCode> {
    if args.runs == 0 || args.runs > crate::batch::RUNS_PER_CASE_MAX {
        return Err(usage(format!(
            "--runs {}: expected 1..={}",
            args.runs,
            crate::batch::RUNS_PER_CASE_MAX
        )));
    }
    if !(args.temperature.is_finite() && (0.0..=2.0).contains(&args.temperature)) {
        return Err(usage(format!(
            "--temperature {}: expected 0..=2",
            args.temperature
        )));
    }
    if args.seed.is_some() && proto == Protocol::Anthropic {
        return Err(usage(
            "--seed: the Anthropic Messages API takes no seed; leave it out",
        ));
    }
    if args.max_concurrency == 0 || args.max_concurrency > crate::batch::CONCURRENCY_MAX {
        return Err(usage(format!(
            "--max-concurrency {}: expected 1..={}",
            args.max_concurrency,
            crate::batch::CONCURRENCY_MAX
        )));
    }
    if args.case.is_none() && args.suite.is_none() {
        return Err(usage("give --case ID|DIR or --suite DIR"));
    }
    if args.model.trim().is_empty() {
        return Err(usage("--model: expected the model name"));
    }
    Ok(())
}

/// Everything a recording needs before the proxy starts.
struct Prepared {
    settings: live::LiveSettings,
    overlay: crate::case_run::Overlay,
    harness_bin: PathBuf,
    cases: Vec<Case>,
    load_errors: Vec<LoadError>,
}

/// The flags checked, the live settings, the overlay, the harness and the
/// cases (each checked under the overlay); Err is the exit code, the reason
/// already printed.
fn prepare(args: &RecordArgs, proto: Protocol) -> Result<Prepared, ExitCode> {
    check_flags(args, proto)?;
    let settings = live::settings(
        &args.endpoint,
        args.api_key_env.as_deref(),
        Some(args.max_usd),
        args.max_tokens,
    )
    .map_err(usage)?;
    let prices = match &args.prices {
        Some(p) => Some(crate::prices::load_price_table(p).map_err(usage)?),
        None => None,
    };
    let overlay = live::overlay::overlay(proto, &args.model, args.temperature, prices.as_ref());
    let harness_bin =
        batch::harness_bin(args.harness.as_deref()).map_err(|e| unloadable(e.to_string()))?;
    let (cases, load_errors) = load_cases(args).map_err(unloadable)?;
    for e in &load_errors {
        errln!("bench record: case not loaded: {e}");
    }
    live::overlay::check_cases(&cases, &overlay, args.seed, &args.model, args.max_tokens)
        .map_err(usage)?;
    Ok(Prepared {
        settings,
        overlay,
        harness_bin,
        cases,
        load_errors,
    })
}

async fn run_async(args: RecordArgs) -> ExitCode {
    let proto = live::overlay::protocol(args.protocol);
    let Prepared {
        settings,
        overlay: ov,
        harness_bin,
        cases,
        load_errors,
    } = match prepare(&args, proto) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let proxy = match live::start_proxy(&settings, args.max_concurrency).await {
        Ok(p) => p,
        Err(e) => return unloadable(e),
    };
    let recorder = match Recorder::new(
        &args.out,
        live::provenance("bench record", proxy.upstream_host()),
        args.runs,
    ) {
        Ok(r) => Arc::new(r),
        Err(e) => return usage(e),
    };
    let target = LiveTarget::new(
        proxy.clone(),
        None,
        Some(recorder.clone()),
        args.seed,
        settings.api_key_env.clone(),
    );
    let ids: Vec<String> = cases.iter().map(|c| c.id().to_string()).collect();
    errln!(
        "bench record: {} case(s) x {} run(s) live against {} ({} {}), cap {}",
        cases.len(),
        args.runs,
        proxy.upstream_host(),
        proto.as_str(),
        args.model,
        settings.caps.describe()
    );
    let b = match Batch::start_live(
        cases,
        target.clone(),
        harness_bin,
        &args.work,
        args.runs,
        args.max_concurrency,
    ) {
        Ok(b) => b,
        Err(e) => return unloadable(e),
    };
    let mut terminal = Terminal::new(b.total(), "live case-runs", Lines::Live);
    let per_case = b.run(&ov, &b.out, &mut terminal).await;
    terminal.finish();
    let written = recorder.finish();
    outln!("{}", table(&ids, &per_case, &written, args.runs));
    let report = live::LiveReport::collect(&target, written);
    outcome(&report, &b.out, args.runs, load_errors.is_empty())
}

/// The live report's lines and live.json; success only when the cap was not
/// reached, every case has all its runs recorded and every case loaded.
fn outcome(report: &live::LiveReport, out: &Path, runs: u32, all_loaded: bool) -> ExitCode {
    for l in report.lines() {
        outln!("{l}");
    }
    match report.write(out) {
        Ok(p) => outln!("live       {}", p.display()),
        Err(e) => errln!("bench record: cannot write live.json: {e}"),
    }
    let complete = report
        .recordings
        .iter()
        .all(|w| w.path.is_some() && w.runs_recorded == runs);
    if report.cap_reached.is_none() && complete && all_loaded {
        ExitCode::SUCCESS
    } else {
        if report.cap_reached.is_none() && !complete {
            outln!("bench record: some runs were not recorded (see above)");
        }
        ExitCode::from(ExitStatus::Incomplete)
    }
}

/// Tokens a case-run's ledger booked (all four fields), from its report.
fn tokens_of(r: &crate::case_run::RunRecord) -> u64 {
    std::fs::read(Path::new(&r.state_dir).join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| serde_json::from_value::<harness::model::Usage>(v["usage"].clone()).ok())
        .map_or(0, |u| u.total())
}

/// Endings per case and run, and what was recorded.
fn table(
    ids: &[String],
    per_case: &[Vec<crate::case_run::RunRecord>],
    written: &[live::recorder::CaseWritten],
    runs: u32,
) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    let mut head = vec!["case".to_string()];
    head.extend((0..runs).map(|r| format!("run {r}")));
    head.extend(["tokens".into(), "$".into(), "recorded".into()]);
    b.push_record(head);
    for (id, recs) in ids.iter().zip(per_case) {
        let mut row = vec![id.clone()];
        for r in 0..runs {
            row.push(
                recs.iter()
                    .find(|x| x.run == r)
                    .map(|x| x.ending_name().to_string())
                    .unwrap_or_else(|| "-".into()),
            );
        }
        let cost: f64 = recs.iter().map(|r| r.cost_usd).sum();
        let w = written.iter().find(|w| &w.case == id);
        row.push(recs.iter().map(tokens_of).sum::<u64>().to_string());
        row.push(format!("{cost:.6}"));
        row.push(match w {
            Some(w) if w.path.is_some() => format!("{}/{runs} runs", w.runs_recorded),
            Some(_) => "no".into(),
            None => "-".into(),
        });
        b.push_record(row);
    }
    let mut t = b.build();
    t.with(Style::sharp());
    t.to_string()
}
