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
use crate::case_run;
use crate::events::{Fanout, Lines, Terminal};
use crate::exit::ExitStatus;
use crate::outputs::{finish_outputs, live_outputs, SummaryFiles};
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
/// Least similarity (normalized Levenshtein, 0..1) for a near miss to be
/// suggested: a typo or two in an id of 20 characters, not any id at all.
pub const NEAR_MISS_MIN_SIMILARITY: f64 = 0.7;

/// The id most like `pattern` (its wildcards taken as typed), when it is
/// like enough to be the one meant.
pub fn nearest_id<'a>(pattern: &str, ids: &'a [String]) -> Option<&'a str> {
    let p = pattern.replace(['*', '?'], "");
    (ids.iter())
        .map(|id| (strsim::normalized_levenshtein(&p, id), id))
        .filter(|(sim, _)| *sim >= NEAR_MISS_MIN_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, id)| id.as_str())
}

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

/// A `--shard` that is not `i/n` with 1 <= i <= n.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("--shard: expected i/n like 1/2, found {0:?}")]
    Form(String),
    #[error("--shard: {0:?} is not a number")]
    Number(String),
    #[error("--shard: expected 1 <= i <= n, found {0}/{1}")]
    Range(u32, u32),
}

pub fn parse_shard(s: &str) -> Result<(u32, u32), ShardError> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| ShardError::Form(s.to_string()))?;
    let i: u32 = i
        .trim()
        .parse()
        .map_err(|_| ShardError::Number(i.to_string()))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| ShardError::Number(n.to_string()))?;
    if n == 0 || i == 0 || i > n {
        return Err(ShardError::Range(i, n));
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
    let plan = match RunPlan::of(&args) {
        Ok(p) => p,
        Err(early) => return early.exit(),
    };
    plan.run().await.unwrap_or_else(Early::exit)
}

/// Why `bench run` ends before its batch has run: the reason (said on
/// stderr after `bench run: `) and the exit status, or an earlier run with
/// nothing left to rerun (a success, said on stdout).
enum Early {
    Stop(ExitStatus, String),
    NothingToRerun(PathBuf),
}

impl Early {
    fn usage(e: impl std::fmt::Display) -> Early {
        Early::Stop(ExitStatus::Usage, e.to_string())
    }

    fn unloadable(e: impl std::fmt::Display) -> Early {
        Early::Stop(ExitStatus::Unloadable, e.to_string())
    }

    fn exit(self) -> ExitCode {
        match self {
            Early::Stop(status, why) => {
                errln!("bench run: {why}");
                ExitCode::from(status)
            }
            Early::NothingToRerun(dir) => {
                outln!(
                    "bench run: every case passed in {}: nothing to rerun",
                    dir.display()
                );
                ExitCode::SUCCESS
            }
        }
    }
}

/// Everything `bench run` was asked, checked and resolved once, before
/// anything starts: the cases selected, the harness binary, the live
/// settings and the settings the summary records. The rest of the command
/// reads this value, never the arguments.
struct RunPlan {
    cases: Vec<Case>,
    selected: Selected,
    harness_bin: PathBuf,
    live: Option<crate::live::LiveSettings>,
    /// `--record DIR` (live, not hybrid): where the traffic is recorded.
    record: Option<PathBuf>,
    max_concurrency: usize,
    runs_per_case: u32,
    pass_rate: f64,
    shard: Option<String>,
    suite: PathBuf,
    out: PathBuf,
    junit: Option<PathBuf>,
}

/// What the suite's loading and the selection leave for the summary: the
/// categories asked for, every case id of the suite, its hash and the case
/// files that did not load.
struct Selected {
    required: Vec<String>,
    all_ids: Vec<String>,
    config_hash: String,
    load_errors: Vec<suite::LoadError>,
}

impl RunPlan {
    /// The plan of `args`: its values checked (usage errors first, then the
    /// harness binary), the suite loaded and the cases selected.
    fn of(args: &RunArgs) -> Result<RunPlan, Early> {
        if args.runs_per_case == 0 || args.runs_per_case > RUNS_PER_CASE_MAX {
            return Err(Early::usage(format_args!(
                "--runs-per-case must be 1..={RUNS_PER_CASE_MAX}"
            )));
        }
        if !(0.0..=1.0).contains(&args.pass_rate) {
            return Err(Early::usage("--pass-rate must be in [0, 1]"));
        }
        let shard = (args.shard.as_deref().map(parse_shard).transpose()).map_err(Early::usage)?;
        let live = args.live.settings().map_err(Early::usage)?;
        let max_concurrency = match args.max_concurrency {
            Some(0) => return Err(Early::usage("--max-concurrency must be at least 1")),
            Some(k) => k,
            None if live.is_some() => 1,
            None => 4,
        };
        let harness_bin =
            crate::batch::harness_bin(args.harness.as_deref()).map_err(Early::unloadable)?;
        // A hybrid run replays first: every case needs its recording.
        let live_load = live.as_ref().is_some_and(|l| l.hybrid.is_none());
        let (cases, selected) = select_cases(args, live_load, shard)?;
        Ok(RunPlan {
            cases,
            selected,
            harness_bin,
            live,
            record: args.live.record.clone(),
            max_concurrency,
            runs_per_case: args.runs_per_case,
            pass_rate: args.pass_rate,
            shard: args.shard.clone(),
            suite: args.suite.clone(),
            out: args.out.clone(),
            junit: args.junit.clone(),
        })
    }

    fn hybrid(&self) -> Option<harness::model::Protocol> {
        self.live.as_ref().and_then(|l| l.hybrid)
    }

    /// Run the plan: the live target (when live), the out dir held and
    /// cleared, the batch, its outputs. Returns the command's exit code.
    async fn run(self) -> Result<ExitCode, Early> {
        let live_target = match &self.live {
            None => None,
            Some(l) => Some(self.live_target(l).await?),
        };
        let hybrid_cases = match self.hybrid() {
            Some(_) => self.cases.clone(),
            None => vec![],
        };
        let _out_lock =
            crate::outputs::lock_out_dir(&self.out, "bench run").map_err(Early::usage)?;
        // Replayed only: a live batch keeps the suite's order.
        let first = match &live_target {
            None => longest_first(&self.out, &self.cases),
            Some(_) => Vec::new(),
        };
        clear_earlier_cases(&self.out)?;
        let head = self.summary_head();
        let (out, junit, hybrid) = (self.out.clone(), self.junit.clone(), self.hybrid());
        let batch = match &live_target {
            Some(t) => crate::batch::Batch::start_live(
                self.cases,
                t.clone(),
                self.harness_bin,
                &out,
                self.runs_per_case,
                self.max_concurrency,
            )
            .map_err(Early::unloadable)?,
            None => {
                let (h, r, k) = (self.harness_bin, self.runs_per_case, self.max_concurrency);
                (crate::batch::Batch::start(self.cases, h, &out, r, k).await)
                    .map_err(Early::unloadable)?
            }
        };
        let mut terminal = Terminal::new(batch.total(), "case-runs", Lines::Gate);
        let mut files = SummaryFiles::new(head, &out, junit.as_deref());
        let mut reporters = Fanout(vec![&mut terminal, &mut files]);
        let overlay = case_run::Overlay::default();
        (batch.run_ordered(&overlay, &batch.out, &first, &mut reporters)).await;
        terminal.finish();
        let code = finish_outputs(files, &out);
        Ok(match &live_target {
            Some(t) => live_exit(t, code, hybrid.is_some(), &hybrid_cases, &out),
            None => code,
        })
    }

    /// The live target the case-runs go through: the proxy, and a hybrid
    /// run's replay servers and recorder or a `--record` run's recorder.
    async fn live_target(
        &self,
        l: &crate::live::LiveSettings,
    ) -> Result<std::sync::Arc<crate::live::LiveTarget>, Early> {
        use crate::live::recorder::Recorder;
        let proxy = crate::live::start_proxy(l, self.max_concurrency)
            .await
            .map_err(Early::unloadable)?;
        let Some(protocol) = self.hybrid() else {
            let recorder = match &self.record {
                None => None,
                Some(dir) => {
                    let prov = crate::live::provenance("bench run --record", proxy.upstream_host());
                    let r = Recorder::new(dir, prov, self.runs_per_case).map_err(Early::usage)?;
                    Some(std::sync::Arc::new(r))
                }
            };
            let key = l.api_key_env.clone();
            return Ok(crate::live::LiveTarget::new(
                proxy, None, recorder, None, key,
            ));
        };
        let servers = case_run::Servers::start(&self.cases).await;
        let prov = crate::live::provenance("bench run --hybrid", proxy.upstream_host());
        let dir = self.out.join("hybrid").join("cassettes");
        let recorder = Recorder::new(&dir, prov, self.runs_per_case).map_err(Early::usage)?;
        Ok(crate::live::LiveTarget::hybrid(
            proxy,
            None,
            std::sync::Arc::new(recorder.hybrid()),
            std::sync::Arc::new(servers),
            protocol,
            l.api_key_env.clone(),
        ))
    }

    /// The summary's settings, before any case-run: what the events do not
    /// say (`outputs::SummaryFiles`).
    fn summary_head(&self) -> Summary {
        let s = &self.selected;
        Summary {
            schema_version: crate::summary::SCHEMA_VERSION,
            passed: false,
            cases: vec![],
            categories: Default::default(),
            overall: crate::summary::totals_of(&[]),
            p95_definition: String::new(),
            categories_required: s.required.clone(),
            git_rev: git_rev(&self.suite),
            config_hash: s.config_hash.clone(),
            runs_per_case: self.runs_per_case,
            pass_rate_policy: self.pass_rate,
            shard: self.shard.clone(),
            suite_case_ids: s.all_ids.clone(),
            load_errors: s.load_errors.clone(),
            case_runs: 0,
            wall_ms: 0,
            case_runs_per_s: 0.0,
            interrupted: None,
        }
    }
}

/// Load the suite's categories and select the cases to run: `--case`
/// patterns, an earlier run's failures (`--rerun-failed`) and the shard.
/// Load errors are said on stderr and kept; a selection of nothing is an
/// error unless some case file failed to load.
fn select_cases(
    args: &RunArgs,
    live_load: bool,
    shard: Option<(u32, u32)>,
) -> Result<(Vec<Case>, Selected), Early> {
    let required = categories_required(&args.suite, &args.category);
    let loaded =
        load_categories(&args.suite, &args.category, live_load).map_err(Early::unloadable)?;
    check_categories_present(&args.suite, &required, args.category.is_empty())
        .map_err(Early::unloadable)?;
    for e in &loaded.errors {
        errln!("bench run: case not loaded: {e}");
    }
    let mut all_ids: Vec<String> = loaded.cases.iter().map(|c| c.id().to_string()).collect();
    all_ids.sort();
    let config_hash = config_hash(&loaded.cases, args.runs_per_case, args.pass_rate);
    let mut cases: Vec<Case> = loaded.cases;
    let mut wanted = args.case.clone();
    if let Some(dir) = &args.rerun_failed {
        match crate::summary::Summary::read(dir) {
            Ok(s) if s.not_passed().is_empty() => return Err(Early::NothingToRerun(dir.clone())),
            Ok(s) => wanted.extend(s.not_passed()),
            Err(e) => return Err(Early::usage(format_args!("--rerun-failed: {e}"))),
        }
    }
    if !wanted.is_empty() {
        if let Some(p) = (wanted.iter()).find(|p| !cases.iter().any(|c| id_matches(p, c.id()))) {
            // A usage error (exit 2, as README's table has it): the suite
            // loaded; the id asked for is not in it.
            let under = args.suite.display();
            let hint = nearest_id(p, &all_ids)
                .map(|n| format!("; did you mean {n}? (bench run --suite {under} --case {n})"))
                .unwrap_or_default();
            return Err(Early::usage(format_args!(
                "--case {p:?}: no case under {under} matches{hint}"
            )));
        }
        cases.retain(|c| wanted.iter().any(|p| id_matches(p, c.id())));
    }
    if let Some((i, n)) = shard {
        cases.retain(|c| shard_of(c.id(), n) == i - 1);
    }
    if cases.is_empty() && loaded.errors.is_empty() {
        let under = args.suite.display();
        return Err(Early::unloadable(format_args!(
            "no cases to run under {under}"
        )));
    }
    let selected = Selected {
        required,
        all_ids,
        config_hash,
        load_errors: loaded.errors,
    };
    Ok((cases, selected))
}

/// The cases' order, longest first, by the longest case-run each had in
/// the previous run written to `out` (its summary.json); a case that run
/// did not have goes first (its time is unknown), ties keep the suite's
/// order. Empty (the suite's order) when there is no previous run. The
/// suite's few cases that wait on a wall clock (a run cut at its 3 or 5 s
/// limit) then start at once and overlap the others' work; started last,
/// each held the batch seconds past the rest (issue 51).
fn longest_first(out: &Path, cases: &[Case]) -> Vec<usize> {
    let Ok(prior) = crate::summary::Summary::read(out) else {
        return Vec::new();
    };
    let took: std::collections::HashMap<&str, u64> = (prior.cases.iter())
        .map(|c| {
            (
                c.id.as_str(),
                c.runs.iter().map(|r| r.latency_ms).max().unwrap_or(0),
            )
        })
        .collect();
    let ids: Vec<&str> = cases.iter().map(|c| c.id()).collect();
    order_by_took(&ids, &took)
}

/// Indices of `ids`, the longest `took` first, an id without one first of
/// all, ties in their order.
fn order_by_took(ids: &[&str], took: &std::collections::HashMap<&str, u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(took.get(ids[i]).copied().unwrap_or(u64::MAX)));
    order
}

/// A reused --out starts empty of case dirs: an earlier run's would sit
/// beside this run's summary, which does not name them. The caller holds
/// the out dir (its lock), so no other run is writing there.
fn clear_earlier_cases(out: &Path) -> Result<(), Early> {
    let old_cases = out.join("cases");
    if old_cases.is_dir() {
        if let Err(e) = std::fs::remove_dir_all(&old_cases) {
            let old = old_cases.display();
            return Err(Early::usage(format_args!(
                "cannot clear {old} of an earlier run: {e}"
            )));
        }
    }
    Ok(())
}

/// A live run's exit: its live outputs (live.json, recordings) can turn the
/// gate's code into the cap's, and a hybrid run writes its replay suite.
fn live_exit(
    t: &crate::live::LiveTarget,
    code: ExitCode,
    hybrid: bool,
    hybrid_cases: &[Case],
    out: &Path,
) -> ExitCode {
    let code = live_outputs(t, out, "run").unwrap_or(code);
    if !hybrid {
        return code;
    }
    match crate::outputs::hybrid_outputs(t, hybrid_cases, &out.join("hybrid"), "run") {
        Ok(()) => code,
        Err(e) => {
            errln!("{e}");
            ExitCode::from(ExitStatus::Unloadable)
        }
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
fn load_categories(
    root: &Path,
    named: &[String],
    live: bool,
) -> Result<suite::Suite, suite::LoadError> {
    let load = |cat: Option<&str>| match live {
        // Live: a case with no cassette yet loads too (it needs none).
        true => crate::live::load_suite_live(root, cat),
        false => suite::load_suite(root, cat),
    };
    if named.is_empty() {
        return load(None);
    }
    let mut all = suite::Suite {
        cases: vec![],
        errors: vec![],
    };
    for cat in categories_required(root, named) {
        let part = load(Some(&cat))?;
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

/// A required category with no case, or a suite whose categories cannot be
/// listed.
#[derive(Debug, thiserror::Error)]
pub enum CategoriesError {
    #[error("{0}")]
    Load(suite::LoadError),
    #[error("{}: the suite could not be loaded: category {} {} missing or empty (no case directory); {hint}", .root.display(), .listed, if *.several { "are" } else { "is" })]
    Missing {
        root: PathBuf,
        /// The empty categories, each in backticks.
        listed: String,
        several: bool,
        hint: String,
    },
}

/// Every required category must hold at least one case directory: a gate
/// over a suite whose adversarial/ went missing must not pass on the rest.
pub fn check_categories_present(
    root: &Path,
    required: &[String],
    all_asked: bool,
) -> Result<(), CategoriesError> {
    let mut empty = vec![];
    for cat in required {
        let dirs = suite::suite_case_dirs(root, Some(cat)).map_err(CategoriesError::Load)?;
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
    Err(CategoriesError::Missing {
        root: root.to_path_buf(),
        listed: empty
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
        several: empty.len() != 1,
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::id_matches;

    /// Longest first; a case the previous run did not have before all (its
    /// time unknown); ties keep the suite's order.
    #[test]
    fn the_previous_runs_longest_cases_start_first() {
        let took =
            std::collections::HashMap::from([("a", 50), ("b", 5000), ("c", 50), ("d", 3000)]);
        assert_eq!(
            super::order_by_took(&["a", "b", "c", "d", "new"], &took),
            [4, 1, 3, 0, 2]
        );
        assert_eq!(super::order_by_took(&[], &took), Vec::<usize>::new());
    }

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
