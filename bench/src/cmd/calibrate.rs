//! `bench calibrate`: measure the drift detectors on hand-labeled queues
//! before anyone trusts a threshold.
//!
//! The seed: the drift check has a false-negative bias (a plausible chain
//! reads as reasonable), so calibrate it on ~20 labeled queues (half aligned,
//! half drifted at known severity) and report agreement before trusting the
//! prune (> 0.3) and halt (> 0.5) bands; if it cannot separate the labels,
//! say so and do not ship the threshold.
//!
//! Detectors, side by side:
//! - `lexical`: word overlap between goal and tasks (bench/src/calibrate/lexical.rs);
//!   model-free, measured for real on every run, in CI.
//! - `judge`: the harness's own judge request (bench/src/calibrate/judge.rs), against
//!   a live endpoint or against recordings of a real model. Without either,
//!   it is reported as NOT MEASURED with how to record it (issue 9): no
//!   number in any report comes from anything but a real model's answers.
//!
//! Outputs in --out: calibration.json, calibration.md, roc.svg; a summary
//! table on stdout.
//!
//! Exit codes: 0 every detector asked for was measured, or (with
//! `--detector all`) the judge has no recordings yet and is reported as not
//! measured; 1 outputs could not be written; 2 usage error or a bad labeled
//! set (every error named by file and field); 3 a detector asked for could
//! not be measured (`--detector judge` with no recordings, or recordings that
//! are refused: scripted, stale, incomplete).

mod plot;
pub mod render;

use crate::cli::ProtocolArg;
use crate::exit::ExitStatus;
use crate::live;
use crate::prices;
use bench::calibrate::metrics::{self, DetectorEntry};
use bench::calibrate::{judge, queues, Calibration, Detectors, JudgeSource, Plan};
use clap::{Args, ValueEnum};
use harness::model::Protocol;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs per queue: more is a waste of a labeled set this small.
pub const RUNS_MAX: u32 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DetectorArg {
    Judge,
    Lexical,
    All,
}

/// `--structured-output`: the two dialects of schema-constrained JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StructuredArg {
    JsonSchema,
    JsonObject,
}

#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// The labeled set: one TOML file per queue (see suites/drift-calibration/README.md).
    #[arg(long, default_value = "suites/drift-calibration")]
    pub queues: PathBuf,
    #[arg(long, value_enum, default_value_t = DetectorArg::All)]
    pub detector: DetectorArg,
    /// A live judge endpoint (OpenAI-compatible base URL ends in /v1; Anthropic has none).
    #[arg(long)]
    pub endpoint: Option<String>,
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// The judge model name sent to the endpoint.
    #[arg(long)]
    pub model: Option<String>,
    /// Name of the env var holding the endpoint's API key (never the key itself).
    #[arg(long)]
    pub api_key_env: Option<String>,
    #[arg(long, default_value_t = 120_000)]
    pub timeout_ms: u64,
    /// With --endpoint (required there): command-wide spending cap in USD over
    /// every judge call, priced with the --prices table.
    #[arg(long)]
    pub max_usd: Option<f64>,
    /// With --endpoint: command-wide cap in tokens (the guard for a model
    /// priced at $0 or not priced at all).
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// With --endpoint: judge calls in flight at once.
    #[arg(long, default_value_t = 1)]
    pub max_concurrency: usize,
    /// With --endpoint: sampling temperature sent with every judge call (as a
    /// run spec's `[model] temperature`); unset, the endpoint's default.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// With --endpoint: how schema-constrained output is asked for, as a run
    /// spec's `[model] structured_output` (`json-object` for llama-cpp-python).
    #[arg(long, value_enum, default_value_t = StructuredArg::JsonSchema)]
    pub structured_output: StructuredArg,
    /// With --endpoint: record the judge's answers into DIR/calibration-<model>.json.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Recordings of a real judge (calibration-*.json cassettes), replayed when there is no --endpoint.
    #[arg(long, default_value = judge::DEFAULT_RECORDINGS)]
    pub recordings: PathBuf,
    /// Which calibration-* cassette to replay when --recordings holds several.
    #[arg(long)]
    pub judge_case: Option<String>,
    /// Checks per queue; the first is the headline, the rest measure run-to-run spread.
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// TOML price table: [prices."<model>"] input_usd_per_mtok, output_usd_per_mtok.
    #[arg(long)]
    pub prices: Option<PathBuf>,
    #[arg(long, default_value = "target/bench/calibrate")]
    pub out: PathBuf,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    errln!("bench calibrate: {msg}");
    ExitCode::from(ExitStatus::Usage)
}

pub fn run(args: CalibrateArgs) -> ExitCode {
    let plan = match plan(&args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let measured = bench::calibrate::measure(&plan);
    let cal = &measured.calibration;
    if let Err(e) = write_outputs(&args.out, cal, &measured.reports) {
        errln!("bench calibrate: {e}");
        return ExitCode::from(ExitStatus::WriteFailed);
    }
    out!("{}", render::terminal(cal));
    outln!(
        "wrote {0}/calibration.json, {0}/calibration.md, {0}/roc.svg",
        args.out.display()
    );
    if measured.not_measured_fails {
        ExitCode::from(ExitStatus::NotMeasured)
    } else {
        ExitCode::SUCCESS
    }
}

/// The flags that go together, checked before anything is read: a usage
/// error names the flag, and nothing is measured.
fn check_flags(args: &CalibrateArgs) -> Result<(), ExitCode> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        return Err(usage(format!(
            "--runs {}: expected 1..={RUNS_MAX}",
            args.runs
        )));
    }
    let live = args.endpoint.is_some();
    if live && (args.protocol.is_none() || args.model.is_none()) {
        return Err(usage(
            "--endpoint needs --protocol (openai|anthropic) and --model",
        ));
    }
    if !live && (args.protocol.is_some() || args.model.is_some() || args.api_key_env.is_some()) {
        return Err(usage(
            "--protocol, --model and --api-key-env go with --endpoint",
        ));
    }
    if args.record.is_some() && !live {
        return Err(usage(
            "--record records a live endpoint's answers; it needs --endpoint",
        ));
    }
    if !live && (args.max_usd.is_some() || args.max_tokens.is_some()) {
        return Err(usage(
            "--max-usd and --max-tokens cap a live endpoint; they go with --endpoint",
        ));
    }
    if args.max_concurrency == 0 || args.max_concurrency > live::proxy::IN_FLIGHT_MAX {
        return Err(usage(format!(
            "--max-concurrency {}: expected 1..={}",
            args.max_concurrency,
            live::proxy::IN_FLIGHT_MAX
        )));
    }
    Ok(())
}

/// The one plan the library measures, from the flags: the labeled set, the
/// price table and the judge's source. Every refusal is printed here and
/// returned as the exit code.
fn plan(args: &CalibrateArgs) -> Result<Plan, ExitCode> {
    check_flags(args)?;
    let caps = match &args.endpoint {
        Some(e) => Some(
            live::settings(
                e,
                args.api_key_env.as_deref(),
                args.max_usd,
                args.max_tokens,
            )
            .map_err(usage)?
            .caps,
        ),
        None => None,
    };
    if args.detector == DetectorArg::Lexical && caps.is_some() {
        return Err(usage(
            "--endpoint is for the judge; --detector lexical needs no endpoint",
        ));
    }
    let set = queues::load_dir(&args.queues).map_err(|errors| {
        for e in &errors {
            errln!("bench calibrate: {e}");
        }
        errln!(
            "bench calibrate: {} problem(s) in the labeled set; nothing was measured",
            errors.len()
        );
        ExitCode::from(ExitStatus::Usage)
    })?;
    let prices = match &args.prices {
        Some(p) => prices::load_price_table(p).map_err(usage)?,
        None => prices::default_price_table(),
    };
    if let (Some(c), Some(m)) = (&caps, &args.model) {
        let free = judge::price_of(&prices, m)
            .is_none_or(|p| p.input_usd_per_mtok == 0.0 && p.output_usd_per_mtok == 0.0);
        if free && c.max_tokens.is_none() {
            return Err(usage(format!("model {m:?} is not priced or priced at $0, so --max-usd cannot bound it; give --max-tokens (or its price with --prices)")));
        }
    }
    Ok(Plan {
        set,
        queues_dir: args.queues.clone(),
        detectors: match args.detector {
            DetectorArg::Judge => Detectors::Judge,
            DetectorArg::Lexical => Detectors::Lexical,
            DetectorArg::All => Detectors::All,
        },
        runs: args.runs,
        judge: judge_source(args, caps),
        recordings: args.recordings.clone(),
        prices,
    })
}

/// A live endpoint when one was given (its caps checked), else the
/// recordings.
fn judge_source(args: &CalibrateArgs, caps: Option<live::budget::Caps>) -> JudgeSource {
    match (&args.endpoint, args.protocol, &args.model, caps) {
        (Some(endpoint), Some(p), Some(model), Some(caps)) => {
            JudgeSource::Live(judge::LiveSource {
                endpoint: endpoint.clone(),
                protocol: match p {
                    ProtocolArg::Openai => Protocol::Openai,
                    ProtocolArg::Anthropic => Protocol::Anthropic,
                },
                model: model.clone(),
                api_key_env: args.api_key_env.clone(),
                timeout_ms: args.timeout_ms,
                record_dir: args.record.clone(),
                caps,
                max_concurrency: args.max_concurrency,
                sampling: harness::model::Sampling {
                    temperature: args.temperature,
                    seed: None,
                    structured_output: match args.structured_output {
                        StructuredArg::JsonSchema => harness::model::StructuredOutput::JsonSchema,
                        StructuredArg::JsonObject => harness::model::StructuredOutput::JsonObject,
                    },
                },
            })
        }
        _ => JudgeSource::Replay(judge::ReplaySource {
            dir: args.recordings.clone(),
            case: args.judge_case.clone(),
            allow_scripted: false,
            capture: false,
        }),
    }
}

/// Why the calibration's files were not all written; each names its file.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("--out {}: {source}", .dir.display())]
    CreateOut {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
}

fn write_outputs(
    out: &Path,
    cal: &Calibration,
    reports: &[(String, metrics::DetectorReport)],
) -> Result<(), WriteError> {
    std::fs::create_dir_all(out).map_err(|source| WriteError::CreateOut {
        dir: out.to_path_buf(),
        source,
    })?;
    let json = serde_json::to_string_pretty(cal)?;
    let write = |name: &str, text: &str| {
        std::fs::write(out.join(name), text).map_err(|source| WriteError::Write {
            path: out.join(name),
            source,
        })
    };
    write("calibration.json", &(json + "\n"))?;
    write("calibration.md", &render::markdown(cal))?;
    let measured: Vec<(&str, &metrics::DetectorReport)> =
        reports.iter().map(|(n, r)| (n.as_str(), r)).collect();
    let not: Vec<&str> = cal
        .detectors
        .iter()
        .filter(|(_, d)| matches!(d, DetectorEntry::NotMeasured(_)))
        .map(|(n, _)| n.as_str())
        .collect();
    Ok(plot::roc(
        &measured,
        &not,
        cal.n_aligned,
        cal.n_drifted,
        &out.join("roc.svg"),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ledger::PriceTable;

    /// The whole pipeline with two detectors, the judge being the scripted
    /// STAND-IN (test only: the command line refuses it). Checks that the
    /// judge's figures come through the same metrics and that the plot and
    /// the markdown carry every measured detector. Nothing is written outside
    /// a temp dir: stand-in figures never become a report.
    #[test]
    fn two_detectors_side_by_side_through_the_stand_in_judge() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let set = queues::load_dir(&root.join("../suites/drift-calibration")).unwrap();
        let src = judge::ReplaySource {
            dir: root.join("tests/fixtures/calibrate/stand-in-judge/recordings"),
            case: None,
            allow_scripted: true,
            capture: false,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (run, _) = rt
            .block_on(judge::run_replay(&set, &src, 2, &PriceTable::new()))
            .unwrap();
        let lex = metrics::evaluate(&set, &bench::calibrate::run_lexical(&set, 1));
        let jr = metrics::evaluate(&set, &bench::calibrate::judge_input(&run));
        // The stand-in's scores were set by hand: mild drift at <= 0.3, so
        // the prune band misses all three mild queues and one hard negative
        // (0.35) is a false alarm.
        assert_eq!(jr.detection_by_severity["mild"].above_0_3, 0);
        assert_eq!((jr.at_0_3.tp, jr.at_0_3.fp), (7, 1));
        assert!(jr.run_spread.is_some() && jr.mean_cost_usd.is_none());
        let out = tempfile::tempdir().unwrap();
        let path = out.path().join("roc.svg");
        plot::roc(&[("lexical", &lex), ("judge", &jr)], &[], 10, 10, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.contains("lexical: AUC")
                && svg.contains("judge: AUC")
                && svg.contains("judge &gt; 0.5")
        );
        let mut md = String::new();
        render::detector_md(&mut md, "judge", &jr);
        assert!(
            md.contains("SCRIPTED STAND-IN"),
            "the source line must say what it is"
        );
    }
}
