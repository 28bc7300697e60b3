//! `bench guarantees [--check]`: the guarantee map (suites/guarantees.toml,
//! bench::guarantees) checked against the suites, the docs, the chaos
//! invariants and the broken variants, and rendered to docs/guarantees.md.
//! With `--check` (CI) nothing is written: exit 1 on any problem or when
//! docs/guarantees.md is not what the map renders to.

use crate::exit::ExitStatus;
use bench::guarantees::{self, Repo};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GuaranteesArgs {
    /// The map.
    #[arg(long, default_value = "suites/guarantees.toml")]
    pub map: PathBuf,
    /// The repository root its paths are relative to.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// The rendered page.
    #[arg(long, default_value = "docs/guarantees.md")]
    pub out: PathBuf,
    /// Write nothing; fail on a problem or a stale page.
    #[arg(long)]
    pub check: bool,
}

pub fn run(args: GuaranteesArgs) -> ExitCode {
    let map = match guarantees::load(&args.map) {
        Ok(m) => m,
        Err(e) => {
            errln!("bench guarantees: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let repo = Repo {
        root: args.root.clone(),
    };
    let problems = match guarantees::problems(&map, &repo) {
        Ok(p) => p,
        Err(e) => {
            errln!("bench guarantees: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    for p in &problems {
        errln!("bench guarantees: {p}");
    }
    let page = guarantees::render(&map);
    let with_cases = map.promises.iter().filter(|p| !p.cases.is_empty()).count();
    outln!(
        "bench guarantees: {} promises ({with_cases} with suite cases), {} problem(s)",
        map.promises.len(),
        problems.len()
    );
    if args.check {
        let on_disk = std::fs::read_to_string(&args.out).unwrap_or_default();
        if on_disk != page {
            errln!(
                "bench guarantees: {} is not what {} renders to: run `bench guarantees` and commit it",
                args.out.display(),
                args.map.display()
            );
            return ExitCode::from(ExitStatus::Failed);
        }
    } else if let Err(e) = std::fs::write(&args.out, &page) {
        errln!("bench guarantees: {}: {e}", args.out.display());
        return ExitCode::from(ExitStatus::Failed);
    } else {
        outln!("wrote {}", args.out.display());
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Failed)
    }
}
