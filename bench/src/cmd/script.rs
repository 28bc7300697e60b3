//! `bench script`: compile hand-written scenarios (`scenario.json`) into
//! cassettes in the replay format, and `--check` that committed cassettes are
//! what their scenarios compile to (so the two never drift apart).

use crate::exit::ExitStatus;
use clap::Args;
use harness::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ScriptArgs {
    /// Case directories (holding scenario.json) or scenario files. A case
    /// directory's cassette is written next to it as cassette.json.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Write here instead (only with a single path).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not write: fail if any cassette differs from what its scenario compiles to.
    #[arg(long)]
    pub check: bool,
}

/// Compile one scenario to the pretty JSON text of its cassette, checked by
/// the same loader the replay server uses (secrets, fields, duplicates).
pub fn compile(scenario_path: &Path) -> Result<String, String> {
    let sc = Scenario::load(scenario_path)?;
    let v = sc
        .to_cassette("1970-01-01", "bench script")
        .map_err(|e| format!("{}: {e}", scenario_path.display()))?;
    let mut text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
    text.push('\n');
    harness::replay::Cassette::from_json_str(&text, scenario_path).map_err(|e| e.to_string())?;
    Ok(text)
}

fn targets(p: &Path) -> (PathBuf, PathBuf) {
    if p.is_dir() {
        (p.join("scenario.json"), p.join("cassette.json"))
    } else {
        (p.to_path_buf(), p.with_file_name("cassette.json"))
    }
}

pub fn run(args: ScriptArgs) -> ExitCode {
    if args.out.is_some() && args.paths.len() != 1 {
        eprintln!("bench script: --out takes exactly one path");
        return ExitCode::from(ExitStatus::Usage);
    }
    let mut bad = 0;
    for p in &args.paths {
        let (src, default_out) = targets(p);
        let out = args.out.clone().unwrap_or(default_out);
        match compile(&src) {
            Err(e) => {
                eprintln!("bench script: {e}");
                bad += 1;
            }
            Ok(text) if args.check => {
                let current = std::fs::read_to_string(&out).unwrap_or_default();
                if current != text {
                    eprintln!("bench script --check: {} is not what {} compiles to; run `bench script {}`", out.display(), src.display(), p.display());
                    bad += 1;
                }
            }
            Ok(text) => {
                if let Err(e) = harness::durable::atomic_write(&out, text.as_bytes()) {
                    eprintln!("bench script: cannot write {}: {e}", out.display());
                    bad += 1;
                } else {
                    println!("wrote {}", out.display());
                }
            }
        }
    }
    if bad > 0 {
        ExitCode::from(ExitStatus::Failed)
    } else {
        ExitCode::SUCCESS
    }
}
