//! `bench merge DIR... --out DIR`: combine sharded `bench run` outputs. Checks
//! that the shards come from the same config hash, are disjoint and together
//! complete, then recomputes every total from the raw per-case records (never
//! an average of shard figures) and writes the same outputs as an unsharded run.

use crate::summary::Summary;
use clap::Args;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Shard output directories (each holding summary.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

pub fn merge(parts: Vec<Summary>) -> Result<Summary, String> {
    let first = parts.first().ok_or("no shards given")?;
    let mut seen = BTreeSet::new();
    let mut merged = Summary {
        cases: vec![],
        load_errors: vec![],
        shard: None,
        wall_ms: 0,
        ..first.clone()
    };
    for (i, p) in parts.iter().enumerate() {
        if p.config_hash != first.config_hash {
            return Err(format!(
                "shard {} has config hash {} but shard 1 has {}: not the same suite and settings",
                i + 1,
                p.config_hash,
                first.config_hash
            ));
        }
        if p.suite_case_ids != first.suite_case_ids {
            return Err(format!(
                "shard {} was run over a different case list",
                i + 1
            ));
        }
        for c in &p.cases {
            if !seen.insert(c.id.clone()) {
                return Err(format!("case {} appears in more than one shard", c.id));
            }
            merged.cases.push(c.clone());
        }
        for e in &p.load_errors {
            if !merged.load_errors.contains(e) {
                merged.load_errors.push(e.clone());
            }
        }
        merged.wall_ms = merged.wall_ms.max(p.wall_ms);
    }
    let want: BTreeSet<String> = first.suite_case_ids.iter().cloned().collect();
    let missing: Vec<&String> = want.difference(&seen).collect();
    if !missing.is_empty() {
        return Err(format!("the shards are not complete: missing {missing:?}"));
    }
    merged.finish();
    merged.case_runs_per_s = if merged.wall_ms == 0 {
        0.0
    } else {
        merged.case_runs as f64 / (merged.wall_ms as f64 / 1000.0)
    };
    Ok(merged)
}

pub fn run(args: MergeArgs) -> ExitCode {
    let mut parts = vec![];
    for d in &args.dirs {
        let p = d.join("summary.json");
        match std::fs::read(&p)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Summary>(&b).map_err(|e| e.to_string()))
        {
            Ok(s) => parts.push(s),
            Err(e) => {
                eprintln!("bench merge: {}: {e}", p.display());
                return ExitCode::from(crate::run_cmd::EXIT_SUITE_UNLOADABLE);
            }
        }
    }
    match merge(parts) {
        Ok(m) => crate::run_cmd::finish_outputs(&m, &args.out, args.junit.as_deref()),
        Err(e) => {
            eprintln!("bench merge: {e}");
            ExitCode::from(crate::run_cmd::EXIT_SUITE_UNLOADABLE)
        }
    }
}
