//! `bench index DIR...`: one static page over many `bench run` outputs
//! (bench::run_index): when each ran, at which commit, pass rate and cost,
//! every case's history across them, filters, and the rerun commands.

use crate::exit::ExitStatus;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct IndexArgs {
    /// `bench run` output directories (each holds a summary.json).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The page to write.
    #[arg(long, default_value = "target/bench/index.html")]
    pub out: PathBuf,
}

pub fn run(args: IndexArgs) -> ExitCode {
    let runs = match bench::run_index::read_runs(&args.dirs) {
        Ok(r) => r,
        Err(e) => {
            errln!("bench index: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let base = args
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if let Err(e) = std::fs::create_dir_all(base) {
        errln!("bench index: {}: {e}", base.display());
        return ExitCode::from(ExitStatus::Unloadable);
    }
    let page = bench::run_index::render(&runs, base).into_string();
    match std::fs::write(&args.out, page) {
        Ok(()) => {
            outln!("bench index: {} run(s)", runs.len());
            outln!("index      {}", args.out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("bench index: {}: {e}", args.out.display());
            ExitCode::from(ExitStatus::Unloadable)
        }
    }
}
