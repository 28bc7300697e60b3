//! `bench run`: run the eval suites through the real harness binary and gate
//! a deploy on full-suite pass.
//!
//! With `--endpoint` the case-runs go live through the bench's proxy
//! (bench/src/live/) instead of replay servers, under the command-wide
//! `--max-usd` / `--max-tokens` cap; `--record DIR` also writes the traffic
//! as cassettes. Cases need no cassette then.
//!
//! Exit codes: 0 every case passed; 1 some case failed or a case file could
//! not be loaded (the rest still ran), or (live) the command-wide cap was
//! reached; 3 the suite itself could not be loaded (no such directory, no
//! cases, a filter matching nothing, no harness binary, the proxy could not
//! start); 2 usage error.

use crate::runner;
use crate::suite::{self, Case};
use crate::summary::{case_record, Summary};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub const EXIT_FAILED: u8 = 1;
pub const EXIT_SUITE_UNLOADABLE: u8 = 3;
pub const RUNS_PER_CASE_MAX: u32 = 100;
pub const CONCURRENCY_MAX: usize = 64;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Suite root holding happy/ edge/ adversarial/ regression/.
    #[arg(long, default_value = "suites")]
    pub suite: PathBuf,
    /// Run only these categories (repeat the flag or separate by commas).
    /// Without it the gate runs every category of the suite, and a missing
    /// or empty one is exit 3.
    #[arg(long, value_delimiter = ',')]
    pub category: Vec<String>,
    /// Run only this case id.
    #[arg(long)]
    pub case: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub runs_per_case: u32,
    /// `i/n`: run the cases whose stable id hash falls in shard i of n (1-based).
    #[arg(long)]
    pub shard: Option<String>,
    /// Case-runs at once (default 4; 1 with --endpoint, where it also
    /// bounds the upstream requests in flight).
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    #[arg(long, default_value = "target/bench/run")]
    pub out: PathBuf,
    /// JUnit XML path (default: <out>/junit.xml).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Non-adversarial cases pass when at least this share of their runs pass
    /// (adversarial cases must pass every run).
    #[arg(long, default_value_t = 0.66)]
    pub pass_rate: f64,
    /// The harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
}

/// Stable shard of a case id: the first 8 bytes of its SHA-256, mod n.
pub fn shard_of(id: &str, n: u32) -> u32 {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(id.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(b) % n as u64) as u32
}

pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard: expected i/n like 1/2, found {s:?}"))?;
    let i: u32 = i
        .trim()
        .parse()
        .map_err(|_| format!("--shard: {i:?} is not a number"))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard: {n:?} is not a number"))?;
    if n == 0 || i == 0 || i > n {
        return Err(format!("--shard: expected 1 <= i <= n, found {i}/{n}"));
    }
    Ok((i, n))
}

pub fn config_hash(cases: &[Case], runs_per_case: u32, pass_rate: f64) -> String {
    use sha2::{Digest, Sha256};
    let mut ids: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| (c.id(), c.content_sha256.as_str()))
        .collect();
    ids.sort();
    let mut h = Sha256::new();
    for (id, sha) in ids {
        h.update(format!("{id}={sha};").as_bytes());
    }
    h.update(format!("runs_per_case={runs_per_case};pass_rate={pass_rate}").as_bytes());
    hex::encode(h.finalize())
}

pub fn git_rev(dir: &Path) -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

pub fn run(args: RunArgs) -> ExitCode {
    crate::batch::block_on("run", EXIT_SUITE_UNLOADABLE, run_async(args))
}

async fn run_async(args: RunArgs) -> ExitCode {
    if args.runs_per_case == 0 || args.runs_per_case > RUNS_PER_CASE_MAX {
        eprintln!("bench run: --runs-per-case must be 1..={RUNS_PER_CASE_MAX}");
        return ExitCode::from(2);
    }
    if !(0.0..=1.0).contains(&args.pass_rate) {
        eprintln!("bench run: --pass-rate must be in [0, 1]");
        return ExitCode::from(2);
    }
    let shard = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench run: {e}");
            return ExitCode::from(2);
        }
    };
    let live = match args.live.settings() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("bench run: {e}");
            return ExitCode::from(2);
        }
    };
    let max_concurrency = match args.max_concurrency {
        Some(0) => {
            eprintln!("bench run: --max-concurrency must be at least 1");
            return ExitCode::from(2);
        }
        Some(k) => k,
        None if live.is_some() => 1,
        None => 4,
    };
    let harness_bin = match crate::batch::harness_bin(args.harness.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bench run: {e}");
            return ExitCode::from(EXIT_SUITE_UNLOADABLE);
        }
    };
    let required = categories_required(&args.suite, &args.category);
    let loaded = match load_categories(&args.suite, &args.category, live.is_some()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench run: {e}");
            return ExitCode::from(EXIT_SUITE_UNLOADABLE);
        }
    };
    if let Err(e) = check_categories_present(&args.suite, &required, args.category.is_empty()) {
        eprintln!("bench run: {e}");
        return ExitCode::from(EXIT_SUITE_UNLOADABLE);
    }
    for e in &loaded.errors {
        eprintln!("bench run: case not loaded: {e}");
    }
    let all_ids: Vec<String> = {
        let mut v: Vec<String> = loaded.cases.iter().map(|c| c.id().to_string()).collect();
        v.sort();
        v
    };
    let hash = config_hash(&loaded.cases, args.runs_per_case, args.pass_rate);
    let mut cases: Vec<Case> = loaded.cases;
    if let Some(id) = &args.case {
        cases.retain(|c| c.id() == id);
        if cases.is_empty() {
            eprintln!(
                "bench run: --case {id:?}: no such case under {}",
                args.suite.display()
            );
            return ExitCode::from(EXIT_SUITE_UNLOADABLE);
        }
    }
    if let Some((i, n)) = shard {
        cases.retain(|c| shard_of(c.id(), n) == i - 1);
    }
    if cases.is_empty() && loaded.errors.is_empty() {
        eprintln!("bench run: no cases to run under {}", args.suite.display());
        return ExitCode::from(EXIT_SUITE_UNLOADABLE);
    }
    let live_target = match &live {
        None => None,
        Some(l) => {
            let proxy = match crate::live::start_proxy(l, max_concurrency).await {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("bench run: {e}");
                    return ExitCode::from(EXIT_SUITE_UNLOADABLE);
                }
            };
            let recorder = match &args.live.record {
                None => None,
                Some(dir) => {
                    let prov = crate::live::provenance("bench run --record", proxy.upstream_host());
                    match crate::live::recorder::Recorder::new(dir, prov, args.runs_per_case) {
                        Ok(r) => Some(std::sync::Arc::new(r)),
                        Err(e) => {
                            eprintln!("bench run: {e}");
                            return ExitCode::from(2);
                        }
                    }
                }
            };
            Some(crate::live::LiveTarget::new(
                proxy,
                None,
                recorder,
                None,
                l.api_key_env.clone(),
            ))
        }
    };
    let batch = match &live_target {
        Some(t) => crate::batch::Batch::start_live(
            cases,
            t.clone(),
            harness_bin,
            &args.out,
            args.runs_per_case,
            max_concurrency,
        ),
        None => {
            crate::batch::Batch::start(
                cases,
                harness_bin,
                &args.out,
                args.runs_per_case,
                max_concurrency,
            )
            .await
        }
    };
    let batch = match batch {
        Ok(b) => b,
        Err(e) => {
            eprintln!("bench run: {e}");
            return ExitCode::from(EXIT_SUITE_UNLOADABLE);
        }
    };
    let total = batch.total();
    let bar = crate::batch::progress_bar(total, "case-runs");
    let t0 = std::time::Instant::now();
    let mut done = 0u64;
    let per_case = batch
        .run(&runner::Overlay::default(), &batch.out, |ci, rec| {
            done += 1;
            let c = &batch.cases[ci];
            let line = format!(
                "[{done}/{total}] {}/{} run {}: {} ({}, {} ms, ${:.4})",
                c.category(),
                c.id(),
                rec.run,
                if rec.passed { "PASS" } else { "FAIL" },
                rec.ending,
                rec.latency_ms,
                rec.cost_usd
            );
            match &bar {
                Some(b) => {
                    b.inc(1);
                    if !rec.passed {
                        b.println(line);
                    }
                }
                None => eprintln!("{line}"),
            }
        })
        .await;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let wall_ms = t0.elapsed().as_millis() as u64;
    let mut summary = Summary {
        passed: false,
        cases: batch
            .cases
            .iter()
            .zip(per_case)
            .map(|(c, runs)| case_record(c, runs, args.pass_rate))
            .collect(),
        categories: Default::default(),
        overall: crate::summary::totals_of(&[]),
        p95_definition: String::new(),
        categories_required: required,
        git_rev: git_rev(&args.suite),
        config_hash: hash,
        runs_per_case: args.runs_per_case,
        pass_rate_policy: args.pass_rate,
        shard: args.shard.clone(),
        suite_case_ids: all_ids,
        load_errors: loaded.errors,
        case_runs: 0,
        wall_ms,
        case_runs_per_s: if wall_ms == 0 {
            0.0
        } else {
            total as f64 / (wall_ms as f64 / 1000.0)
        },
    };
    summary.finish();
    let code = finish_outputs(&summary, &args.out, args.junit.as_deref());
    match &live_target {
        Some(t) => live_outputs(t, &args.out, "run").unwrap_or(code),
        None => code,
    }
}

/// The categories a run asks for: those named with --category (each once,
/// in the order given), else every category the suite root covers.
pub fn categories_required(root: &Path, named: &[String]) -> Vec<String> {
    if named.is_empty() {
        return suite::categories_of_root(root)
            .into_iter()
            .map(String::from)
            .collect();
    }
    let mut out: Vec<String> = vec![];
    for c in named {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// Load the named categories (all of the root's when none is named). Each
/// is loaded with the suite's own walk; ids stay unique across them.
fn load_categories(root: &Path, named: &[String], live: bool) -> Result<suite::Suite, String> {
    let load = |cat: Option<&str>| match live {
        // Live: a case with no cassette yet loads too (it needs none).
        true => crate::live::load_suite_live(root, cat),
        false => suite::load_suite(root, cat),
    };
    if named.is_empty() {
        return load(None).map_err(|e| e.to_string());
    }
    let mut all = suite::Suite {
        cases: vec![],
        errors: vec![],
    };
    for cat in categories_required(root, named) {
        let part = load(Some(&cat)).map_err(|e| e.to_string())?;
        for c in part.cases {
            match all.cases.iter().find(|o| o.id() == c.id()) {
                Some(o) => all.errors.push(suite::LoadError {
                    file: c.dir.join("case.toml").display().to_string(),
                    field: "id".into(),
                    expected: format!("a unique id; also used by {}", o.dir.display()),
                }),
                None => all.cases.push(c),
            }
        }
        all.errors.extend(part.errors);
    }
    Ok(all)
}

/// Every required category must hold at least one case directory: a gate
/// over a suite whose adversarial/ went missing must not pass on the rest.
pub fn check_categories_present(
    root: &Path,
    required: &[String],
    all_asked: bool,
) -> Result<(), String> {
    let mut empty = vec![];
    for cat in required {
        let dirs = suite::suite_case_dirs(root, Some(cat)).map_err(|e| e.to_string())?;
        if dirs.is_empty() {
            empty.push(cat.as_str());
        }
    }
    if empty.is_empty() {
        return Ok(());
    }
    let hint = if all_asked {
        format!(
            "the gate runs every category ({}); to run fewer, name them with --category (e.g. --category {})",
            required.join(", "),
            required
                .iter()
                .filter(|c| !empty.contains(&c.as_str()))
                .cloned()
                .collect::<Vec<_>>()
                .join(",")
        )
    } else {
        "every category named with --category must hold a case".to_string()
    };
    Err(format!(
        "{}: the suite could not be loaded: category {} {} missing or empty (no case directory); {hint}",
        root.display(),
        empty
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if empty.len() == 1 { "is" } else { "are" },
    ))
}

/// After a live batch: write the recordings and `live.json`, print spend and
/// the cap. `Some(exit code)` overrides the batch's when the cap was reached
/// (1: some case-runs are incomplete) or outputs could not be written.
pub fn live_outputs(t: &crate::live::LiveTarget, out: &Path, cmd: &str) -> Option<ExitCode> {
    let written = t.recorder().map(|r| r.finish()).unwrap_or_default();
    let not_recorded = written.iter().any(|w| w.path.is_none());
    let report = crate::live::LiveReport::collect(t, written);
    for l in report.lines() {
        println!("{l}");
    }
    match report.write(out) {
        Ok(p) => println!("live       {}", p.display()),
        Err(e) => {
            eprintln!("bench {cmd}: cannot write live.json: {e}");
            return Some(ExitCode::from(EXIT_SUITE_UNLOADABLE));
        }
    }
    if report.cap_reached.is_some() || not_recorded {
        Some(ExitCode::from(EXIT_FAILED))
    } else {
        None
    }
}

/// Write the outputs, print the table and the failures, and pick the exit code.
pub fn finish_outputs(summary: &Summary, out: &Path, junit: Option<&Path>) -> ExitCode {
    if let Err(e) = summary.write(out, junit) {
        eprintln!("bench run: cannot write outputs: {e}");
        return ExitCode::from(EXIT_SUITE_UNLOADABLE);
    }
    println!("{}", summary.table());
    for l in summary.flaky_lines() {
        println!("{l}");
    }
    for c in summary.cases.iter().filter(|c| !c.passed) {
        for r in c.runs.iter().filter(|r| !r.passed) {
            println!(
                "FAIL {}/{} run {}: expected {}, got {} -- {}",
                c.category,
                c.id,
                r.run,
                r.expected_ending,
                r.ending,
                r.failures.join("; ")
            );
        }
    }
    for e in &summary.load_errors {
        println!("NOT LOADED {e}");
    }
    println!(
        "{} cases, {} case-runs in {:.1}s ({:.1} case-runs/s): {}",
        summary.cases.len(),
        summary.case_runs,
        summary.wall_ms as f64 / 1000.0,
        summary.case_runs_per_s,
        if summary.passed { "PASS" } else { "FAIL" }
    );
    println!("summary    {}", out.join("summary.md").display());
    if summary.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}
