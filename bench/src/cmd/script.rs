//! `bench script`: compile hand-written scenarios (`scenario.json`) into
//! cassettes in the replay format, stating the recording conditions of the
//! case's run spec; `--check` that committed cassettes are what their
//! scenarios compile to (so the two never drift apart); and
//! `--migrate-recorded`, the one-time rewrite of a recorded cassette from
//! before recording conditions (bench::scripted holds the work).

use crate::exit::ExitStatus;
use bench::scripted::{compile, migrate_recorded, targets, write_compiled};
use clap::Args;
use harness::model::ConditionField;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ScriptArgs {
    /// Case directories (holding scenario.json and run.toml) or scenario
    /// files. A case directory's cassette is written next to it as
    /// cassette.json. With --migrate-recorded: cassette files.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Write here instead (only with a single path).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not write: fail if any cassette differs from what its scenario compiles to.
    #[arg(long, conflicts_with = "migrate_recorded")]
    pub check: bool,
    /// Rewrite recorded cassettes of the format before recording conditions
    /// (harness-cassette/1) in place, reading each role's conditions from
    /// its recorded request bodies.
    #[arg(long)]
    pub migrate_recorded: bool,
    /// With --migrate-recorded: the run spec the recording was made under,
    /// for roles recorded without request bodies.
    #[arg(long, requires = "migrate_recorded")]
    pub spec: Option<PathBuf>,
    /// With --migrate-recorded: a request field the recorded replies are
    /// declared indifferent to (repeatable; e.g. `seed` for a recording
    /// whose run i used seed S+i, which the run variant already carries).
    #[arg(long, requires = "migrate_recorded", value_parser = parse_field)]
    pub indifferent_to: Vec<ConditionField>,
}

/// A --indifferent-to that names no request field; clap shows the text.
#[derive(Debug, thiserror::Error)]
#[error("expected one of {}", ConditionField::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", "))]
struct UnknownField;

fn parse_field(s: &str) -> Result<ConditionField, UnknownField> {
    ConditionField::ALL
        .into_iter()
        .find(|f| f.as_str() == s)
        .ok_or(UnknownField)
}

pub fn run(args: ScriptArgs) -> ExitCode {
    if args.out.is_some() && args.paths.len() != 1 {
        errln!("bench script: --out takes exactly one path");
        return ExitCode::from(ExitStatus::Usage);
    }
    let mut bad = 0;
    for p in &args.paths {
        if args.migrate_recorded {
            match migrate_recorded(p, args.spec.as_deref(), &args.indifferent_to) {
                Ok(said) => outln!("{said}"),
                Err(e) => {
                    errln!("bench script --migrate-recorded: {e}");
                    bad += 1;
                }
            }
            continue;
        }
        let (src, default_out) = targets(p);
        let out = args.out.clone().unwrap_or(default_out);
        let result = if args.check {
            compile(&src).map_err(|e| e.to_string()).and_then(|text| {
                let current = std::fs::read_to_string(&out).unwrap_or_default();
                if current == text {
                    Ok(())
                } else {
                    Err(format!(
                        "{} is not what {} compiles to; run `bench script {}`",
                        out.display(),
                        src.display(),
                        p.display()
                    ))
                }
            })
        } else {
            write_compiled(&src, &out)
                .map(|_| outln!("wrote {}", out.display()))
                .map_err(|e| e.to_string())
        };
        if let Err(e) = result {
            let mode = if args.check { " --check" } else { "" };
            errln!("bench script{mode}: {e}");
            bad += 1;
        }
    }
    if bad > 0 {
        ExitCode::from(ExitStatus::Failed)
    } else {
        ExitCode::SUCCESS
    }
}
