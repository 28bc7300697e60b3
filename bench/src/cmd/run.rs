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

use crate::batch::RUNS_PER_CASE_MAX;
use crate::events::{Fanout, Lines, Terminal};
use crate::exit::ExitStatus;
use crate::outputs::{finish_outputs, live_outputs, SummaryFiles};
use crate::runner;
use crate::suite::{self, Case};
use crate::summary::{config_hash, git_rev, Summary};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Run only these cases: ids or patterns where `*` is any run of
    /// characters and `?` one (`happy-*`, `edge-drift-*`); repeat the flag or
    /// separate by commas. Each must match a case.
    #[arg(long, value_delimiter = ',')]
    pub case: Vec<String>,
    /// Run only the cases that did not pass in an earlier run's output
    /// directory (its summary.json): failed, flaky under the policy,
    /// faulted or interrupted.
    #[arg(long, value_name = "OUT_DIR")]
    pub rerun_failed: Option<PathBuf>,
    /// Case-runs per case (default 3, as the gate runs it: the 2-of-3 pass
    /// policy and the flaky detection rest on more than one run).
    #[arg(long, default_value_t = DEFAULT_RUNS_PER_CASE)]
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

/// Does case `id` match `pattern` (`*` any run of characters, `?` one)?
/// Written here rather than a glob crate: case ids are `[A-Za-z0-9._-]`
/// (suite.rs), so there are no classes, escapes or separators to handle,
/// and no glob crate is in the tree.
pub fn id_matches(pattern: &str, id: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), id.chars().collect());
    // The classic two-pointer wildcard match, backtracking to the last `*`.
    let (mut i, mut j, mut star, mut from) = (0, 0, None, 0);
    while j < s.len() {
        if i < p.len() && (p[i] == '?' || p[i] == s[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            from = j;
            i += 1;
        } else if let Some(k) = star {
            i = k + 1;
            from += 1;
            j = from;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
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

/// `bench run`'s runs per case: the gate's, so a CI job written from
/// `--help` gates on the same policy as `scripts/suite`.
pub const DEFAULT_RUNS_PER_CASE: u32 = 3;

pub fn run(args: RunArgs) -> ExitCode {
    crate::batch::block_on("run", ExitStatus::Unloadable, run_async(args))
}

async fn run_async(args: RunArgs) -> ExitCode {
    if args.runs_per_case == 0 || args.runs_per_case > RUNS_PER_CASE_MAX {
        errln!("bench run: --runs-per-case must be 1..={RUNS_PER_CASE_MAX}");
        return ExitCode::from(ExitStatus::Usage);
    }
    if !(0.0..=1.0).contains(&args.pass_rate) {
        errln!("bench run: --pass-rate must be in [0, 1]");
        return ExitCode::from(ExitStatus::Usage);
    }
    let shard = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s,
        Err(e) => {
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let live = match args.live.settings() {
        Ok(l) => l,
        Err(e) => {
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let max_concurrency = match args.max_concurrency {
        Some(0) => {
            errln!("bench run: --max-concurrency must be at least 1");
            return ExitCode::from(ExitStatus::Usage);
        }
        Some(k) => k,
        None if live.is_some() => 1,
        None => 4,
    };
    let harness_bin = match crate::batch::harness_bin(args.harness.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let required = categories_required(&args.suite, &args.category);
    let hybrid = live.as_ref().and_then(|l| l.hybrid);
    // A hybrid run replays first: every case needs its recording.
    let live_load = live.is_some() && hybrid.is_none();
    let loaded = match load_categories(&args.suite, &args.category, live_load) {
        Ok(s) => s,
        Err(e) => {
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    if let Err(e) = check_categories_present(&args.suite, &required, args.category.is_empty()) {
        errln!("bench run: {e}");
        return ExitCode::from(ExitStatus::Unloadable);
    }
    for e in &loaded.errors {
        errln!("bench run: case not loaded: {e}");
    }
    let all_ids: Vec<String> = {
        let mut v: Vec<String> = loaded.cases.iter().map(|c| c.id().to_string()).collect();
        v.sort();
        v
    };
    let hash = config_hash(&loaded.cases, args.runs_per_case, args.pass_rate);
    let mut cases: Vec<Case> = loaded.cases;
    let mut wanted = args.case.clone();
    if let Some(dir) = &args.rerun_failed {
        match crate::summary::Summary::read(dir) {
            Ok(s) if s.not_passed().is_empty() => {
                outln!(
                    "bench run: every case passed in {}: nothing to rerun",
                    dir.display()
                );
                return ExitCode::SUCCESS;
            }
            Ok(s) => wanted.extend(s.not_passed()),
            Err(e) => {
                errln!("bench run: --rerun-failed: {e}");
                return ExitCode::from(ExitStatus::Usage);
            }
        }
    }
    if !wanted.is_empty() {
        if let Some(p) = wanted
            .iter()
            .find(|p| !cases.iter().any(|c| id_matches(p, c.id())))
        {
            errln!(
                "bench run: --case {p:?}: no case under {} matches",
                args.suite.display()
            );
            return ExitCode::from(ExitStatus::Unloadable);
        }
        cases.retain(|c| wanted.iter().any(|p| id_matches(p, c.id())));
    }
    if let Some((i, n)) = shard {
        cases.retain(|c| shard_of(c.id(), n) == i - 1);
    }
    if cases.is_empty() && loaded.errors.is_empty() {
        errln!("bench run: no cases to run under {}", args.suite.display());
        return ExitCode::from(ExitStatus::Unloadable);
    }
    let live_target = match &live {
        None => None,
        Some(l) => {
            let proxy = match crate::live::start_proxy(l, max_concurrency).await {
                Ok(p) => p,
                Err(e) => {
                    errln!("bench run: {e}");
                    return ExitCode::from(ExitStatus::Unloadable);
                }
            };
            if let Some(protocol) = hybrid {
                let servers = match runner::Servers::start(&cases).await {
                    Ok(s) => std::sync::Arc::new(s),
                    Err(e) => {
                        errln!("bench run: cannot start the replay server: {e}");
                        return ExitCode::from(ExitStatus::Unloadable);
                    }
                };
                let prov = crate::live::provenance("bench run --hybrid", proxy.upstream_host());
                let dir = args.out.join("hybrid").join("cassettes");
                let recorder =
                    match crate::live::recorder::Recorder::new(&dir, prov, args.runs_per_case) {
                        Ok(r) => r.hybrid(),
                        Err(e) => {
                            errln!("bench run: {e}");
                            return ExitCode::from(ExitStatus::Usage);
                        }
                    };
                Some(crate::live::LiveTarget::hybrid(
                    proxy,
                    None,
                    std::sync::Arc::new(recorder),
                    servers,
                    protocol,
                    l.api_key_env.clone(),
                ))
            } else {
                let recorder = match &args.live.record {
                    None => None,
                    Some(dir) => {
                        let prov =
                            crate::live::provenance("bench run --record", proxy.upstream_host());
                        match crate::live::recorder::Recorder::new(dir, prov, args.runs_per_case) {
                            Ok(r) => Some(std::sync::Arc::new(r)),
                            Err(e) => {
                                errln!("bench run: {e}");
                                return ExitCode::from(ExitStatus::Usage);
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
        }
    };
    let hybrid_cases = match hybrid {
        Some(_) => cases.clone(),
        None => vec![],
    };
    let _out_lock = match crate::outputs::lock_out_dir(&args.out, "bench run") {
        Ok(l) => l,
        Err(e) => {
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    // A reused --out starts empty of case dirs: an earlier run's would sit
    // beside this run's summary, which does not name them. This process
    // holds the out dir (the lock above), so no other run is writing there.
    let old_cases = args.out.join("cases");
    if old_cases.is_dir() {
        if let Err(e) = std::fs::remove_dir_all(&old_cases) {
            errln!(
                "bench run: cannot clear {} of an earlier run: {e}",
                old_cases.display()
            );
            return ExitCode::from(ExitStatus::Usage);
        }
    }
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
            errln!("bench run: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let head = Summary {
        schema_version: crate::summary::SCHEMA_VERSION,
        passed: false,
        cases: vec![],
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
        wall_ms: 0,
        case_runs_per_s: 0.0,
        interrupted: None,
    };
    let mut terminal = Terminal::new(batch.total(), "case-runs", Lines::Gate);
    let mut files = SummaryFiles::new(head, &args.out, args.junit.as_deref());
    batch
        .run(
            &runner::Overlay::default(),
            &batch.out,
            &mut Fanout(vec![&mut terminal, &mut files]),
        )
        .await;
    terminal.finish();
    let code = finish_outputs(files, &args.out);
    match &live_target {
        Some(t) => {
            let code = live_outputs(t, &args.out, "run").unwrap_or(code);
            if hybrid.is_none() {
                return code;
            }
            let dir = args.out.join("hybrid");
            match crate::outputs::hybrid_outputs(t, &hybrid_cases, &dir, "run") {
                Ok(()) => code,
                Err(e) => {
                    errln!("{e}");
                    ExitCode::from(ExitStatus::Unloadable)
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::id_matches;

    #[test]
    fn ids_and_patterns_match_as_written() {
        for (p, id, want) in [
            ("happy-a", "happy-a", true),
            ("happy-a", "happy-ab", false),
            ("happy-*", "happy-a", true),
            ("happy-*", "happy-", true),
            ("*-a", "edge-x-a", true),
            ("h?ppy-*", "happy-z", true),
            ("h?ppy-*", "hppy-z", false),
            ("*drift*0-5*", "edge-drift-exactly-0-5-prunes", true),
            ("*", "", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
        ] {
            assert_eq!(id_matches(p, id), want, "{p} vs {id}");
        }
    }
}
