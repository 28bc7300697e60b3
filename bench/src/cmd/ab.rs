//! `bench ab`: paired A/B comparison of two configurations over the suite.
//!
//! A config is a TOML file laid over every case's run.toml (the `Overlay`
//! of `bench run`'s runner): e.g. `[loop] loop_cap = 4`. An optional `[ab]`
//! table names the arm and may scale the budget; it is not part of the
//! overlay. Both arms run the same cases, each case `--runs-per-case` times;
//! run r of either arm replays cassette variant r % n with run r's fault
//! seed, so the arms are paired run by run as well as case by case. Case-runs
//! of both arms are interleaved in a seeded random order so that machine
//! load drifts over the comparison fall on both arms alike.
//!
//! Statistics: the tests in bench/src/stats/inference.rs; the library's
//! bench/src/ab/ holds the configs, the run and the analysis (metrics,
//! categories, guard); cmd/ab/ the rendering (ab.md, the table, the forest
//! plot, ab.html and the words they share), which stays with the command
//! because it is the command's output.
//!
//! Only what can be compared is compared: a case with any case-run, in
//! either arm, that ended in the bench's own machinery (`bench_fault`: a
//! recording miss because the config changed the traffic, no replay server,
//! a failed setup, the live cap) is "not comparable", listed with the fault
//! (the missing call key for a miss) and left out of every statistic and of
//! the regression guard. Above `analysis::NOT_COMPARABLE_SHARE_MAX` of the
//! cases the verdict is "not comparable" (exit 3), never "B regresses".
//!
//! With `--endpoint` both arms run live through the bench's proxy (one
//! command-wide cap over both arms; `--record DIR` writes each arm's traffic
//! into DIR/a/ and DIR/b/, one recordings tree per arm). Once the cap refuses
//! a call no new case-run starts; those case-runs are not comparable (the
//! cap, not the config, ended them), and a capped comparison exits 1.
//!
//! With `--hybrid` (and `--endpoint`, `--protocol`, `--max-usd`) each
//! case-run replays its recording while its requests match it and goes live
//! from the first call that does not (`live::proxy::hybrid`): an arm that
//! changes the model or a prompt is measured live where it differs, never
//! answered with replies recorded for other conditions. Each arm's traffic is
//! written under OUT/<arm>/hybrid/ (cassettes/ for `bench diverge`, suite/ to
//! replay offline: `--suite-b OUT/b/hybrid/suite` on the next comparison).
//!
//! Exit codes: 0 B is not worse anywhere; 1 B regresses (the guard, or a
//! gated metric significantly worse), or the live cap was reached; 2 usage
//! error or the comparison could not be made (bad flag, unreadable or
//! invalid config, no suite, no cases, no harness binary, no replay server),
//! with a message naming the file and field; 3 not comparable: more than
//! the share of cases ended in the bench's machinery.

mod forest;
mod page;
mod render;
mod words;

use crate::exit::ExitStatus;
use bench::ab::config::{load_config, ConfigError};
pub use bench::ab::run::AbRun;
use bench::ab::run::{CompareError, Plan};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The A/B suite: its cassettes record the retries a config change can ask
/// for (suites/ab/gen_ab.py). The main suite records one attempt per task.
pub const DEFAULT_SUITE: &str = "suites/ab";

#[derive(Args, Debug, Clone)]
pub struct AbArgs {
    /// Config of arm A (the baseline): a TOML overlay on every case's run.toml.
    #[arg(long = "a", value_name = "CONFIG")]
    pub a: PathBuf,
    /// Config of arm B (the change).
    #[arg(long = "b", value_name = "CONFIG")]
    pub b: PathBuf,
    /// Suite root holding happy/ edge/ adversarial/ regression/ (default:
    /// the A/B suite, recorded for the retries a config change asks for).
    #[arg(long, default_value = DEFAULT_SUITE)]
    pub suite: PathBuf,
    /// Arm B's own suite: the same case ids, recorded for B's conditions
    /// (e.g. what a `--hybrid` comparison wrote to OUT/b/hybrid/suite). A
    /// case in only one of the two suites is left out, and said so.
    #[arg(long, value_name = "SUITE")]
    pub suite_b: Option<PathBuf>,
    #[arg(long)]
    pub category: Option<String>,
    #[arg(long, default_value_t = 3)]
    pub runs_per_case: u32,
    /// Seeds the run order, the Monte Carlo permutations and the bootstrap.
    #[arg(long, default_value_t = bench::ab::analysis::DEFAULT_SEED)]
    pub seed: u64,
    #[arg(long, default_value = "target/bench/ab")]
    pub out: PathBuf,
    /// Case-runs at once (default 4; 1 with --endpoint).
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// The harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
}

/// Why `bench ab` could not compare (a usage error, exit 2).
#[derive(Debug, thiserror::Error)]
enum AbError {
    #[error("--runs-per-case must be 1..={0}")]
    RunsPerCase(u32),
    #[error("--max-concurrency must be at least 1")]
    MaxConcurrency,
    /// The live flags do not make a live run.
    #[error("{0}")]
    Live(String),
    #[error("harness binary {0} not found; build it with `cargo build --release --workspace` or pass --harness")]
    NoHarness(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error(transparent)]
    Render(#[from] render::RenderError),
}

pub fn run(args: AbArgs) -> ExitCode {
    // Interrupted, the arms' unfinished case-runs are bench faults (not
    // comparable), and the exit is 128 + the signal (crate::batch::block_on).
    if let Err(e) = bench::interrupt::install("ab") {
        errln!("bench ab: {e}");
        return ExitCode::from(ExitStatus::Usage);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("bench ab: cannot start the runtime: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let code = match rt.block_on(run_async(args)) {
        Ok(code) => code,
        Err(e) => {
            errln!("bench ab: {e}");
            ExitCode::from(ExitStatus::Usage)
        }
    };
    match bench::interrupt::requested() {
        Some(sig) => ExitCode::from(bench::interrupt::exit_code(sig)),
        None => code,
    }
}

/// The flags checked and the configs loaded, in the order their errors are
/// reported.
fn plan_of(args: AbArgs) -> Result<Plan, AbError> {
    if args.runs_per_case == 0 || args.runs_per_case > crate::batch::RUNS_PER_CASE_MAX {
        return Err(AbError::RunsPerCase(crate::batch::RUNS_PER_CASE_MAX));
    }
    let live = args.live.settings().map_err(AbError::Live)?;
    let max_concurrency = match args.max_concurrency {
        Some(0) => return Err(AbError::MaxConcurrency),
        Some(k) => k,
        None if live.is_some() => 1,
        None => 4,
    };
    let a = load_config(&args.a)?;
    let b = load_config(&args.b)?;
    let harness_bin = args
        .harness
        .clone()
        .unwrap_or_else(crate::case_run::default_harness_bin);
    if !harness_bin.is_file() {
        return Err(AbError::NoHarness(harness_bin.display().to_string()));
    }
    Ok(Plan {
        a,
        b,
        suite: args.suite,
        suite_b: args.suite_b,
        category: args.category,
        runs_per_case: args.runs_per_case,
        seed: args.seed,
        out: args.out,
        max_concurrency,
        harness_bin,
        live,
        record: args.live.record,
    })
}

async fn run_async(args: AbArgs) -> Result<ExitCode, AbError> {
    let compared = bench::ab::run::compare(plan_of(args)?).await?;
    let (report, out) = (&compared.report, &compared.out);
    write_all(report, out)?;
    outln!("{}", render::terminal(report));
    let capped = compared.write_live_outputs()?;
    // The last lines say where the outputs are, like `bench run`'s.
    outln!("summary    {}", out.join("ab.md").display());
    outln!("report     {}", out.join(page::FILE_NAME).display());
    Ok(if !report.analysis.comparability.comparable {
        ExitCode::from(ExitStatus::NotComparable)
    } else if report.analysis.regressions.is_empty() && !capped {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Regressed)
    })
}

/// Write ab.json, ab.md, forest.svg and ab.html into `out`; ab.md also
/// goes to the CI step summary when there is one.
fn write_all(r: &AbRun, out: &Path) -> Result<(), render::RenderError> {
    let write = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        harness::durable::atomic_write(&path, bytes).map_err(|source| render::RenderError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    let json = serde_json::to_vec_pretty(r)?;
    write("ab.json", &json)?;
    let md = render::markdown(r);
    write("ab.md", md.as_bytes())?;
    let marks = words::marks(&r.analysis);
    let svg = forest::svg(r, &marks).map_err(|e| render::RenderError::Plot(e.to_string()))?;
    write("forest.svg", svg.as_bytes())?;
    let html = page::ab_page(r, &marks, &svg);
    write(page::FILE_NAME, html.as_bytes())?;
    if let Ok(p) = std::env::var("GITHUB_STEP_SUMMARY") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = f.write_all(md.as_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ab: AbArgs,
    }

    /// The default `--suite` is the one the README and the configs README
    /// document, so the user's command compares on the suite recorded for it.
    #[test]
    fn the_default_suite_is_the_one_the_readme_documents() {
        let cli = Cli::try_parse_from(["ab", "--a", "x.toml", "--b", "y.toml"]).unwrap();
        assert_eq!(cli.ab.suite, PathBuf::from(DEFAULT_SUITE));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for doc in ["README.md", "bench/configs/README.md"] {
            let text = std::fs::read_to_string(root.join(doc)).unwrap();
            let usage = text
                .lines()
                .find(|l| l.trim_start().starts_with("bench ab --a"))
                .unwrap_or_else(|| panic!("{doc} has no `bench ab` usage line"));
            assert!(
                usage.contains(&format!("[--suite DIR (default {DEFAULT_SUITE})]"))
                    || usage.contains(&format!("[--suite {DEFAULT_SUITE}]")),
                "{doc}: {usage}"
            );
        }
    }
}
