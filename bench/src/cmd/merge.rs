//! `bench merge DIR... --out DIR`: combine sharded `bench run` outputs. Checks
//! that the shards come from the same config hash, are disjoint and together
//! complete, that their union holds every category the run was asked for
//! (`categories_required`), then recomputes every total from the raw per-case records (never
//! an average of shard figures) and writes the same outputs as an unsharded run,
//! through the same reporter (`outputs::SummaryFiles`, fed by `outputs::replay`).

use crate::exit::ExitStatus;
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

/// Why the shards do not merge into one run; the text is what the command
/// prints.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shards given")]
    NoShards,
    #[error("shard {shard} has config hash {hash} but shard 1 has {first}: not the same suite and settings")]
    ConfigHash {
        shard: usize,
        hash: String,
        first: String,
    },
    #[error("shard {shard} was asked for categories {asked:?} but shard 1 for {first:?}: not the same run")]
    Categories {
        shard: usize,
        asked: Vec<String>,
        first: Vec<String>,
    },
    #[error("shard {0} was run over a different case list")]
    CaseList(usize),
    #[error("case {0} appears in more than one shard")]
    Duplicate(String),
    #[error("the shards are not complete: missing {0:?}")]
    Missing(Vec<String>),
    #[error("the shards record no required categories (categories_required is empty): cannot check the merge is the whole gate")]
    NoRequired,
    #[error(
        "the shards' union lacks a case of {lacking:?}, which the run was asked for ({required:?})"
    )]
    Lacking {
        lacking: Vec<String>,
        required: Vec<String>,
    },
}

/// Shard `i` (0-based) was made by the same run as the first: same config,
/// same categories asked for, same case list.
fn same_run(i: usize, p: &Summary, first: &Summary) -> Result<(), MergeError> {
    if p.config_hash != first.config_hash {
        return Err(MergeError::ConfigHash {
            shard: i + 1,
            hash: p.config_hash.to_string(),
            first: first.config_hash.to_string(),
        });
    }
    if p.categories_required != first.categories_required {
        return Err(MergeError::Categories {
            shard: i + 1,
            asked: p.categories_required.clone(),
            first: first.categories_required.clone(),
        });
    }
    if p.suite_case_ids != first.suite_case_ids {
        return Err(MergeError::CaseList(i + 1));
    }
    Ok(())
}

/// The shards record what the run was asked for; their union must hold a
/// case of each such category (a shard run over a suite that lost a
/// category must not merge into a passing gate).
fn whole_gate(merged: &Summary, first: &Summary) -> Result<(), MergeError> {
    let present: BTreeSet<&str> = merged.cases.iter().map(|c| c.category.as_str()).collect();
    let lacking: Vec<String> = first
        .categories_required
        .iter()
        .filter(|c| !present.contains(c.as_str()))
        .cloned()
        .collect();
    if first.categories_required.is_empty() {
        return Err(MergeError::NoRequired);
    }
    if !lacking.is_empty() {
        return Err(MergeError::Lacking {
            lacking,
            required: first.categories_required.clone(),
        });
    }
    Ok(())
}

pub fn merge(parts: Vec<Summary>) -> Result<Summary, MergeError> {
    let first = parts.first().ok_or(MergeError::NoShards)?;
    let mut seen = BTreeSet::new();
    let mut merged = Summary {
        schema_version: crate::summary::SCHEMA_VERSION,
        cases: vec![],
        load_errors: vec![],
        shard: None,
        wall_ms: 0,
        ..first.clone()
    };
    for (i, p) in parts.iter().enumerate() {
        same_run(i, p, first)?;
        for c in &p.cases {
            if !seen.insert(c.id.clone()) {
                return Err(MergeError::Duplicate(c.id.clone()));
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
    let missing: Vec<String> = want.difference(&seen).cloned().collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing(missing));
    }
    whole_gate(&merged, first)?;
    merged.finish();
    merged.case_runs_per_s = if merged.wall_ms == 0 {
        0.0
    } else {
        merged.case_runs as f64 / (merged.wall_ms as f64 / 1000.0)
    };
    Ok(merged)
}

pub fn run(args: MergeArgs) -> ExitCode {
    // Writing the merge into one of its own shards would overwrite that
    // shard's summary with the union: refused, whatever the spelling.
    if let Ok(out) = std::fs::canonicalize(&args.out) {
        if let Some(d) = args
            .dirs
            .iter()
            .find(|d| std::fs::canonicalize(d).is_ok_and(|d| d == out))
        {
            errln!(
                "bench merge: --out {} is the shard dir {}: the merge would overwrite it; give another --out",
                args.out.display(),
                d.display()
            );
            return ExitCode::from(ExitStatus::Usage);
        }
    }
    let mut parts = vec![];
    for d in &args.dirs {
        match Summary::read(d) {
            Ok(s) => parts.push(s),
            Err(e) => {
                errln!("bench merge: {e}");
                return ExitCode::from(ExitStatus::Unloadable);
            }
        }
    }
    match merge(parts) {
        Ok(m) => {
            // The same reporter as an unsharded run's, fed the merged
            // records as that run's events.
            let head = Summary {
                schema_version: crate::summary::SCHEMA_VERSION,
                cases: vec![],
                ..m.clone()
            };
            let mut files =
                crate::outputs::SummaryFiles::new(head, &args.out, args.junit.as_deref());
            crate::outputs::replay(&m, &mut files);
            crate::outputs::finish_outputs(files, &args.out)
        }
        Err(e) => {
            errln!("bench merge: {e}");
            ExitCode::from(ExitStatus::Unloadable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case_run::RunRecord;
    use crate::summary::{CaseRecord, Outcome};

    fn case(id: &str, category: &str) -> CaseRecord {
        CaseRecord {
            id: id.into(),
            category: category.into(),
            title: String::new(),
            covers: vec![],
            passed: true,
            outcome: Outcome::Passed,
            score: 1.0,
            known_flaky: None,
            runs: vec![RunRecord {
                live_calls: None,
                latency: None,
                run: 0,
                ending: Some(harness::ending::Ending::GoalMet),
                exit_code: 0,
                passed: true,
                score: 1.0,
                cost_usd: 0.1,
                latency_ms: 10,
                expected_ending: harness::ending::Ending::GoalMet,
                checks: vec![],
                failures: vec![],
                state_dir: String::new(),
                verified: 1,
                bench_fault: None,
                cause: None,
            }],
        }
    }

    fn shard(cases: Vec<CaseRecord>, ids: &[&str], required: &[&str]) -> Summary {
        let mut s = Summary {
            schema_version: crate::summary::SCHEMA_VERSION,
            passed: false,
            cases,
            categories: Default::default(),
            overall: crate::summary::totals_of(&[]),
            p95_definition: String::new(),
            categories_required: required.iter().map(|c| c.to_string()).collect(),
            git_rev: "x".into(),
            config_hash: "h".into(),
            runs_per_case: 1,
            pass_rate_policy: 0.66,
            shard: Some("1/2".into()),
            suite_case_ids: ids.iter().map(|c| c.to_string()).collect(),
            load_errors: vec![],
            case_runs: 0,
            wall_ms: 1,
            case_runs_per_s: 0.0,
            interrupted: None,
        };
        s.finish();
        s
    }

    #[test]
    fn shards_whose_union_lacks_a_required_category_are_refused() {
        let four = ["happy", "edge", "adversarial", "regression"];
        let ids = ["a", "b", "c"];
        // Complete by case ids, but no adversarial case anywhere.
        let parts = vec![
            shard(vec![case("a", "happy"), case("b", "edge")], &ids, &four),
            shard(vec![case("c", "regression")], &ids, &four),
        ];
        let e = merge(parts).unwrap_err().to_string();
        assert!(e.contains("lacks a case of [\"adversarial\"]"), "{e}");
        // The same shards asked for three categories merge.
        let three = ["happy", "edge", "regression"];
        let parts = vec![
            shard(vec![case("a", "happy"), case("b", "edge")], &ids, &three),
            shard(vec![case("c", "regression")], &ids, &three),
        ];
        let m = merge(parts).unwrap();
        assert!(m.passed);
        assert_eq!(m.overall.total, 3);
        // Shards asked for different categories are not one run.
        let parts = vec![
            shard(vec![case("a", "happy"), case("b", "edge")], &ids, &three),
            shard(vec![case("c", "regression")], &ids, &four),
        ];
        assert!(merge(parts)
            .unwrap_err()
            .to_string()
            .contains("asked for categories"));
        // A shard that records nothing required cannot vouch for the gate.
        let parts = vec![shard(vec![case("a", "happy")], &["a"], &[])];
        assert!(merge(parts)
            .unwrap_err()
            .to_string()
            .contains("categories_required"));
    }
}
