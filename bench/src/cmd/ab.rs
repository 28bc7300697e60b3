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
//! Statistics: the tests in bench/src/stats/inference.rs; cmd/ab/ holds
//! analysis (metrics, categories, guard) and render (ab.md, the table, the
//! forest plot).
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

mod analysis;
use crate::stats::inference;
mod render;
#[cfg(test)]
mod sim;

use crate::exit::ExitStatus;
use crate::outputs::SummaryFiles;
use crate::runner::{self, Overlay, Servers, Target};
use crate::suite::{self, Case};
use analysis::{CasePair, Obs, Settings};
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The A/B suite: its cassettes record the retries a config change can ask
/// for (suites/ab/gen_ab.py). The main suite records one attempt per task.
pub const DEFAULT_SUITE: &str = "suites/ab";
/// The per-arm summary.json uses `bench run`'s default case policy (a case
/// passes when 2 of 3 runs pass; adversarial cases must pass every run).
/// The comparison itself never uses it: it compares run-level pass shares.
const CASE_PASS_POLICY: f64 = 0.66;

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
    #[arg(long, default_value_t = analysis::DEFAULT_SEED)]
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

/// One arm's configuration, as loaded from its file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ArmConfig {
    pub path: String,
    pub name: String,
    pub description: String,
    /// The overlay exactly as laid over run.toml, as TOML text.
    pub overlay: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_scale: Option<f64>,
    #[serde(skip)]
    pub applied: Overlay,
}

/// Read a config file: a TOML table of run-spec settings plus an optional
/// `[ab]` table (name, description, budget_scale).
pub fn load_config(path: &Path) -> Result<ArmConfig, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{shown}: cannot read the config: {e}"))?;
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        format!(
            "{shown}{}: not valid TOML: {}",
            line.map(|l| format!(" line {l}")).unwrap_or_default(),
            e.message()
        )
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let (mut name, mut description, mut budget_scale) = (stem, String::new(), None);
    if let Some(ab) = table.remove("ab") {
        let ab = ab.as_table().ok_or_else(|| {
            format!(
                "{shown}: field `ab`: expected a table ([ab]), found a {}",
                ab.type_str()
            )
        })?;
        for (k, v) in ab {
            match (k.as_str(), v) {
                ("name", toml::Value::String(s)) => name = s.clone(),
                ("description", toml::Value::String(s)) => description = s.trim().to_string(),
                ("budget_scale", v) => {
                    let f = v
                        .as_float()
                        .or(v.as_integer().map(|i| i as f64))
                        .filter(|f| f.is_finite() && *f > 0.0);
                    budget_scale = Some(f.ok_or_else(|| format!("{shown}: field `ab.budget_scale`: expected a positive number, found {v}"))?);
                }
                ("name" | "description", v) => {
                    return Err(format!(
                        "{shown}: field `ab.{k}`: expected a string, found a {}",
                        v.type_str()
                    ))
                }
                _ => {
                    return Err(format!(
                    "{shown}: field `ab.{k}`: unknown; [ab] takes name, description, budget_scale"
                ))
                }
            }
        }
    }
    let overlay = toml::to_string(&table).map_err(|e| format!("{shown}: {e}"))?;
    Ok(ArmConfig {
        path: shown,
        name,
        description,
        overlay,
        budget_scale,
        applied: Overlay {
            table,
            budget_scale,
            ..Default::default()
        },
    })
}

/// Lay the config over every case's run.toml and parse the result as the
/// harness would, so a config typo is a usage error naming the config file
/// and the field, not 2 x N failed case-runs. A case whose own spec does not
/// parse is skipped here (it fails in both arms and `bench run` reports it).
pub fn check_config_against(cfg: &ArmConfig, cases: &[Case]) -> Result<(), String> {
    for c in cases {
        let spec = c.dir.join("run.toml");
        let Ok(text) = std::fs::read_to_string(&spec) else {
            continue;
        };
        if harness::spec::RunSpec::parse(&text, &spec.display().to_string(), &c.dir).is_err() {
            continue;
        }
        let laid = cfg
            .applied
            .apply(&text)
            .map_err(|e| format!("{}: cannot be applied to {}: {e}", cfg.path, spec.display()))?;
        if let Err(e) = harness::spec::RunSpec::parse(&laid, &cfg.path, &c.dir) {
            return Err(format!(
                "{}: field `{}`: expected {} (laid over {})",
                cfg.path,
                e.field,
                e.expected,
                spec.display()
            ));
        }
    }
    Ok(())
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

/// ab.json's `schema_version`: the format of docs/schemas/ab.schema.json.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything written to ab.json besides the analysis.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AbRun {
    /// This file's format version (`SCHEMA_VERSION`): raised when a
    /// field changes meaning or goes away. A file written before the field
    /// existed reads as 0.
    #[serde(default)]
    pub schema_version: u32,
    #[serde(flatten)]
    pub analysis: analysis::Analysis,
    pub a: ArmConfig,
    pub b: ArmConfig,
    pub suite: String,
    pub category: Option<String>,
    pub git_rev: String,
    pub suite_hash: String,
    pub load_errors: Vec<String>,
    pub case_runs: u64,
    pub wall_ms: u64,
    /// Live or hybrid: each arm's model traffic (replayed, live, dollars,
    /// measured case-runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<[analysis::ArmTraffic; 2]>,
}

async fn run_async(args: AbArgs) -> Result<ExitCode, String> {
    if args.runs_per_case == 0 || args.runs_per_case > crate::batch::RUNS_PER_CASE_MAX {
        return Err(format!(
            "--runs-per-case must be 1..={}",
            crate::batch::RUNS_PER_CASE_MAX
        ));
    }
    let live = args.live.settings()?;
    let max_concurrency = match args.max_concurrency {
        Some(0) => return Err("--max-concurrency must be at least 1".into()),
        Some(k) => k,
        None if live.is_some() => 1,
        None => 4,
    };
    let a = load_config(&args.a)?;
    let b = load_config(&args.b)?;
    let harness_bin = args
        .harness
        .clone()
        .unwrap_or_else(runner::default_harness_bin);
    if !harness_bin.is_file() {
        return Err(format!("harness binary {} not found; build it with `cargo build --release --workspace` or pass --harness", harness_bin.display()));
    }
    let hybrid = live.as_ref().and_then(|l| l.hybrid);
    let loaded = match &live {
        // A hybrid run replays first: every case needs its recording.
        Some(_) if hybrid.is_none() => {
            crate::live::load_suite_live(&args.suite, args.category.as_deref())
        }
        _ => suite::load_suite(&args.suite, args.category.as_deref()),
    }
    .map_err(|e| e.to_string())?;
    let mut load_errors: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
    let [cases_a, cases_b] = match &args.suite_b {
        None => [loaded.cases.clone(), loaded.cases],
        Some(dir) => {
            let b = suite::load_suite(dir, args.category.as_deref()).map_err(|e| e.to_string())?;
            load_errors.extend(b.errors.iter().map(|e| e.to_string()));
            let (pa, pb, unpaired) = pair_suites(loaded.cases, b.cases);
            load_errors.extend(unpaired);
            [pa, pb]
        }
    };
    if cases_a.is_empty() {
        return Err(format!(
            "no cases to compare under {}",
            args.suite.display()
        ));
    }
    for e in &load_errors {
        errln!("bench ab: case not loaded (left out of both arms): {e}");
    }
    check_config_against(&a, &cases_a)?;
    check_config_against(&b, &cases_b)?;
    let suite_hash = crate::summary::config_hash(&cases_a, args.runs_per_case, 0.0);
    let cases = Arc::new([cases_a, cases_b]);
    // One set of servers per arm: captures are kept per (case, URL run),
    // and the arms run the same run numbers interleaved, so a shared server
    // let one arm's case-run drain the other's requests (a recording miss
    // then named no call key).
    let mut per_arm = Vec::new();
    if live.is_none() || hybrid.is_some() {
        for arm_cases in cases.iter() {
            per_arm.push(Arc::new(
                Servers::start(arm_cases)
                    .await
                    .map_err(|e| format!("cannot start the replay server: {e}"))?,
            ));
        }
    }
    let (target_of, live_arms) = match &live {
        None => {
            let t = (0..cases[0].len())
                .map(|ci| {
                    let of = |arm: usize| {
                        per_arm[arm].for_case(&cases[arm][ci]).ok_or_else(|| {
                            format!("no replay server for case {}", cases[arm][ci].id())
                        })
                    };
                    Ok([Target::Replay(of(0)?), Target::Replay(of(1)?)])
                })
                .collect::<Result<Vec<_>, String>>()?;
            (t, None)
        }
        Some(l) => {
            let proxy = crate::live::start_proxy(l, max_concurrency).await?;
            let arm = |i: usize, lane: &str| -> Result<Arc<crate::live::LiveTarget>, String> {
                let by = |what: &str| {
                    crate::live::provenance(
                        &format!("bench ab {what} (arm {lane})"),
                        proxy.upstream_host(),
                    )
                };
                if let Some(protocol) = hybrid {
                    let recorder = crate::live::recorder::Recorder::new(
                        &hybrid_dir(&args.out, lane).join("cassettes"),
                        by("--hybrid"),
                        args.runs_per_case,
                    )?
                    .hybrid();
                    return Ok(crate::live::LiveTarget::hybrid(
                        proxy.clone(),
                        Some(lane),
                        Arc::new(recorder),
                        per_arm[i].clone(),
                        protocol,
                        l.api_key_env.clone(),
                    ));
                }
                let recorder = match &args.live.record {
                    None => None,
                    Some(dir) => Some(Arc::new(crate::live::recorder::Recorder::new(
                        &dir.join(lane),
                        by("--record"),
                        args.runs_per_case,
                    )?)),
                };
                Ok(crate::live::LiveTarget::new(
                    proxy.clone(),
                    Some(lane),
                    recorder,
                    None,
                    l.api_key_env.clone(),
                ))
            };
            let arms = [arm(0, "a")?, arm(1, "b")?];
            let t = cases[0]
                .iter()
                .map(|_| [Target::Live(arms[0].clone()), Target::Live(arms[1].clone())])
                .collect();
            (t, Some(arms))
        }
    };
    let target_of = Arc::new(target_of);
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let out = std::fs::canonicalize(&args.out).unwrap_or(args.out.clone());

    let t0 = std::time::Instant::now();
    let pairs = run_arms(
        &args,
        max_concurrency,
        &cases,
        &target_of,
        &harness_bin,
        &out,
        [&a, &b],
    )
    .await;
    let wall_ms = t0.elapsed().as_millis() as u64;

    let settings = Settings {
        seed: args.seed,
        ..Settings::default()
    };
    let analysis = analysis::analyze(&pairs, &settings);
    let traffic = analysis::traffic(&pairs);
    let case_runs = pairs.iter().map(|p| (p.a.len() + p.b.len()) as u64).sum();
    let report = AbRun {
        schema_version: SCHEMA_VERSION,
        analysis,
        a,
        b,
        suite: args.suite.display().to_string(),
        category: args.category.clone(),
        git_rev: crate::summary::git_rev(&args.suite),
        suite_hash,
        load_errors,
        case_runs,
        wall_ms,
        traffic,
    };
    render::write_all(&report, &out)?;
    outln!("{}", render::terminal(&report));
    outln!("report     {}", out.join("ab.md").display());
    let mut capped = false;
    if let Some(arms) = &live_arms {
        for ((lane, t), arm_cases) in ["a", "b"].iter().zip(arms).zip(cases.iter()) {
            if let Some(code) = crate::outputs::live_outputs(t, &out.join(lane), "ab") {
                capped |= code != ExitCode::SUCCESS;
            }
            if hybrid.is_some() {
                crate::outputs::hybrid_outputs(t, arm_cases, &hybrid_dir(&out, lane), "ab")?;
            }
        }
    }
    Ok(if !report.analysis.comparability.comparable {
        ExitCode::from(ExitStatus::NotComparable)
    } else if report.analysis.regressions.is_empty() && !capped {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Regressed)
    })
}

/// Run every (case, run, arm) through the harness, interleaved in a seeded
/// random order, and pair the results by case. The arms are the two lanes
/// of one batch (`batch::run_lanes`): each arm's events go to the terminal
/// the arms share (`events::Arm`) and to that arm's summary files, which
/// write its case-runs under out/a or out/b as a `bench run` would.
async fn run_arms(
    args: &AbArgs,
    max_concurrency: usize,
    cases: &Arc<[Vec<Case>; 2]>,
    target_of: &Arc<Vec<[Target; 2]>>,
    harness_bin: &Path,
    out: &Path,
    arms: [&ArmConfig; 2],
) -> Vec<CasePair> {
    use crate::events::{Arm, CaseMeta, Fanout, Lines, Terminal};
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut jobs: Vec<crate::batch::LaneJob> = (0..cases[0].len())
        .flat_map(|ci| (0..args.runs_per_case).flat_map(move |r| [(0, ci, r), (1, ci, r)]))
        .collect();
    jobs.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(args.seed));
    let overlays = Arc::new([arms[0].applied.clone(), arms[1].applied.clone()]);
    let roots = [out.join("a"), out.join("b")];
    let total = jobs.len() as u64;
    let (work_cases, work_targets, hb) =
        (cases.clone(), target_of.clone(), harness_bin.to_path_buf());
    let work_roots = Arc::new(roots.clone());
    let work = move |(arm, ci, r): crate::batch::LaneJob| {
        let (cases, target_of, overlays, roots, hb) = (
            work_cases.clone(),
            work_targets.clone(),
            overlays.clone(),
            work_roots.clone(),
            hb.clone(),
        );
        async move {
            let case = &cases[arm][ci];
            let target = &target_of[ci][arm];
            // Live: once the command-wide cap refused a call, start nothing new.
            let stopped = match target {
                Target::Live(l) => l.stopped().inspect(|_| l.note_not_started(case.id(), r)),
                Target::Replay(_) => None,
            };
            let rec = match stopped {
                Some(why) => runner::RunRecord::faulted(
                    case,
                    r,
                    crate::bench_fault::BenchFault::LiveCapReached { detail: why },
                    String::new(),
                ),
                None => runner::run_case(case, r, target, &hb, &roots[arm], &overlays[arm]).await,
            };
            (arm, ci, rec)
        }
    };
    let metas: Vec<CaseMeta> = cases[0].iter().map(CaseMeta::of).collect();
    let terminal = std::cell::RefCell::new(Terminal::new(total, "case-runs", Lines::Paired));
    let [mut files_a, mut files_b] = [&roots[0], &roots[1]]
        .map(|root| SummaryFiles::new(arm_summary_head(&cases[0], args), root, None).drill_down());
    let (mut shown_a, mut shown_b) = (
        Arm {
            name: "A",
            terminal: &terminal,
        },
        Arm {
            name: "B",
            terminal: &terminal,
        },
    );
    let (mut lane_a, mut lane_b) = (
        Fanout(vec![&mut shown_a, &mut files_a]),
        Fanout(vec![&mut shown_b, &mut files_b]),
    );
    // The bench's one pool, in the shuffled order, at the same bound as a
    // batch (`--max-concurrency`, clamped to 1..=CONCURRENCY_MAX). A worker
    // that panicked leaves its case-run without a record.
    let settings = crate::batch::Reported {
        cases: &metas,
        runs_per_case: args.runs_per_case,
        max_concurrency,
        stop_on_failure: false,
    };
    let per_arm =
        crate::batch::run_lanes(settings, jobs, work, &mut [&mut lane_a, &mut lane_b]).await;
    drop((lane_a, lane_b));
    terminal.into_inner().finish();
    for (root, files) in roots.iter().zip([files_a, files_b]) {
        if let Err(e) = files.into_summary() {
            errln!(
                "bench ab: cannot write the summary under {}: {e}",
                root.display()
            );
        }
    }
    cases[0]
        .iter()
        .enumerate()
        .map(|(ci, c)| CasePair {
            id: c.id().to_string(),
            category: c.category().to_string(),
            a: per_arm[0][ci].iter().map(Obs::from).collect(),
            b: per_arm[1][ci].iter().map(Obs::from).collect(),
        })
        .collect()
}

/// Where a hybrid comparison writes arm `lane`'s traffic.
fn hybrid_dir(out: &Path, lane: &str) -> PathBuf {
    out.join(lane).join("hybrid")
}

/// The cases both suites hold, in A's order, each arm's own; and a line for
/// each case only one of them holds.
fn pair_suites(a: Vec<Case>, mut b: Vec<Case>) -> (Vec<Case>, Vec<Case>, Vec<String>) {
    let (mut pa, mut pb, mut unpaired) = (vec![], vec![], vec![]);
    for c in a {
        match b.iter().position(|x| x.id() == c.id()) {
            Some(i) => {
                pb.push(b.remove(i));
                pa.push(c);
            }
            None => unpaired.push(format!("{}: not in --suite-b", c.id())),
        }
    }
    unpaired.extend(b.iter().map(|c| format!("{}: only in --suite-b", c.id())));
    (pa, pb, unpaired)
}

/// What an arm's summary says besides its case-runs: `bench run`'s format
/// and default case policy, for drilling into a case (same records, same
/// per-category totals).
fn arm_summary_head(cases: &[Case], args: &AbArgs) -> crate::summary::Summary {
    let pass_rate = CASE_PASS_POLICY;
    crate::summary::Summary {
        schema_version: crate::summary::SCHEMA_VERSION,
        passed: false,
        cases: vec![],
        categories: Default::default(),
        overall: crate::summary::totals_of(&[]),
        p95_definition: String::new(),
        categories_required: {
            let mut c: Vec<String> = cases.iter().map(|c| c.category().to_string()).collect();
            c.sort();
            c.dedup();
            c
        },
        git_rev: crate::summary::git_rev(&args.suite),
        config_hash: crate::summary::config_hash(cases, args.runs_per_case, pass_rate),
        runs_per_case: args.runs_per_case,
        pass_rate_policy: pass_rate,
        shard: None,
        suite_case_ids: cases.iter().map(|c| c.id().to_string()).collect(),
        load_errors: vec![],
        case_runs: 0,
        wall_ms: 0,
        case_runs_per_s: 0.0,
        interrupted: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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
