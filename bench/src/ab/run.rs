//! Running a comparison: both arms over the same cases, each case
//! `runs_per_case` times, case-runs of both arms interleaved in a seeded
//! random order on the bench's one pool, then the analysis. Run r of either
//! arm replays cassette variant r % n with run r's fault seed, so the arms
//! are paired run by run as well as case by case.

use super::analysis::{self, CasePair, Obs, Settings};
use super::config::{check_config_against, ArmConfig, ConfigError};
use crate::case_run::{self, Overlay, Servers, Target};
use crate::live::{LiveSettings, LiveTarget};
use crate::outputs::SummaryFiles;
use crate::suite::{self, Case};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The per-arm summary.json uses `bench run`'s default case policy (a case
/// passes when 2 of 3 runs pass; adversarial cases must pass every run).
/// The comparison itself never uses it: it compares run-level pass shares.
const CASE_PASS_POLICY: f64 = 0.66;

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

/// A comparison to make, its flags checked and its configs loaded.
pub struct Plan {
    pub a: ArmConfig,
    pub b: ArmConfig,
    pub suite: PathBuf,
    /// Arm B's own suite: the same case ids, recorded for B's conditions.
    pub suite_b: Option<PathBuf>,
    pub category: Option<String>,
    pub runs_per_case: u32,
    pub seed: u64,
    pub out: PathBuf,
    pub max_concurrency: usize,
    pub harness_bin: PathBuf,
    /// Live (or hybrid): the endpoint, its caps and the protocol.
    pub live: Option<LiveSettings>,
    /// Live: write each arm's traffic under this directory's a/ and b/.
    pub record: Option<PathBuf>,
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The suite (or --suite-b) could not be loaded.
    #[error("{0}")]
    Suite(String),
    #[error("no cases to compare under {0}")]
    NoCases(String),
    #[error("no replay server for case {0}")]
    NoReplayServer(String),
    /// The live proxy or a recorder could not start.
    #[error("{0}")]
    Live(String),
    #[error(transparent)]
    RecordDir(#[from] crate::live::recorder::RecordDirError),
    #[error("{path}: {source}")]
    Out {
        path: String,
        source: std::io::Error,
    },
}

/// A comparison made: the report, where it goes, and, live, each arm's
/// target (its traffic and recordings are written after the report).
pub struct Compared {
    pub report: AbRun,
    pub out: PathBuf,
    cases: Arc<[Vec<Case>; 2]>,
    live_arms: Option<[Arc<LiveTarget>; 2]>,
    hybrid: bool,
}

/// Each case's target in each arm, and the arms' live targets when live.
struct Targets {
    of_case: Arc<Vec<[Target; 2]>>,
    live_arms: Option<[Arc<LiveTarget>; 2]>,
}

/// Run both arms and analyze: the whole comparison but its rendering.
pub async fn compare(plan: Plan) -> Result<Compared, CompareError> {
    let Loaded {
        a: cases_a,
        b: cases_b,
        errors: load_errors,
    } = load_cases(&plan)?;
    for e in &load_errors {
        errln!("bench ab: case not loaded (left out of both arms): {e}");
    }
    check_config_against(&plan.a, &cases_a)?;
    check_config_against(&plan.b, &cases_b)?;
    let suite_hash = crate::summary::config_hash(&cases_a, plan.runs_per_case, 0.0);
    let cases = Arc::new([cases_a, cases_b]);
    let targets = start_targets(&plan, &cases).await?;
    std::fs::create_dir_all(&plan.out).map_err(|source| CompareError::Out {
        path: plan.out.display().to_string(),
        source,
    })?;
    let out = std::fs::canonicalize(&plan.out).unwrap_or(plan.out.clone());

    let t0 = std::time::Instant::now();
    let pairs = run_arms(&plan, &cases, &targets.of_case, &out).await;
    let wall_ms = t0.elapsed().as_millis() as u64;

    let settings = Settings {
        seed: plan.seed,
        ..Settings::default()
    };
    let report = AbRun {
        schema_version: SCHEMA_VERSION,
        analysis: analysis::analyze(&pairs, &settings),
        suite: plan.suite.display().to_string(),
        category: plan.category.clone(),
        git_rev: crate::summary::git_rev(&plan.suite),
        suite_hash,
        load_errors,
        case_runs: pairs.iter().map(|p| (p.a.len() + p.b.len()) as u64).sum(),
        wall_ms,
        traffic: analysis::traffic(&pairs),
        a: plan.a,
        b: plan.b,
    };
    Ok(Compared {
        report,
        out,
        cases,
        live_arms: targets.live_arms,
        hybrid: plan.live.as_ref().and_then(|l| l.hybrid).is_some(),
    })
}

impl Compared {
    /// Live: each arm's traffic report and recordings (hybrid: the suite to
    /// replay next time). True when the live cap stopped an arm.
    pub fn write_live_outputs(&self) -> Result<bool, CompareError> {
        let mut capped = false;
        let Some(arms) = &self.live_arms else {
            return Ok(capped);
        };
        for ((lane, t), arm_cases) in ["a", "b"].iter().zip(arms).zip(self.cases.iter()) {
            if let Some(code) = crate::outputs::live_outputs(t, &self.out.join(lane), "ab") {
                capped |= code != std::process::ExitCode::SUCCESS;
            }
            if self.hybrid {
                crate::outputs::hybrid_outputs(t, arm_cases, &hybrid_dir(&self.out, lane), "ab")
                    .map_err(CompareError::Live)?;
            }
        }
        Ok(capped)
    }
}

/// Each arm's cases, in the same order, and a line for each case left out
/// of both arms.
struct Loaded {
    a: Vec<Case>,
    b: Vec<Case>,
    errors: Vec<String>,
}

/// Each arm's cases (B's from --suite-b when given, paired by id) and the
/// lines for the cases left out of both arms.
fn load_cases(plan: &Plan) -> Result<Loaded, CompareError> {
    let hybrid = plan.live.as_ref().and_then(|l| l.hybrid);
    let category = plan.category.as_deref();
    let loaded = match &plan.live {
        // A hybrid run replays first: every case needs its recording.
        Some(_) if hybrid.is_none() => crate::live::load_suite_live(&plan.suite, category),
        _ => suite::load_suite(&plan.suite, category),
    }
    .map_err(|e| CompareError::Suite(e.to_string()))?;
    let mut load_errors: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
    let [cases_a, cases_b] = match &plan.suite_b {
        None => [loaded.cases.clone(), loaded.cases],
        Some(dir) => {
            let b =
                suite::load_suite(dir, category).map_err(|e| CompareError::Suite(e.to_string()))?;
            load_errors.extend(b.errors.iter().map(|e| e.to_string()));
            let (pa, pb, unpaired) = pair_suites(loaded.cases, b.cases);
            load_errors.extend(unpaired);
            [pa, pb]
        }
    };
    if cases_a.is_empty() {
        return Err(CompareError::NoCases(plan.suite.display().to_string()));
    }
    Ok(Loaded {
        a: cases_a,
        b: cases_b,
        errors: load_errors,
    })
}

/// The replay servers (one set per arm: captures are kept per (case, URL
/// run), and the arms run the same run numbers interleaved, so a shared
/// server let one arm's case-run drain the other's requests and a recording
/// miss then named no call key), or the live proxy, or both for hybrid.
async fn start_targets(plan: &Plan, cases: &Arc<[Vec<Case>; 2]>) -> Result<Targets, CompareError> {
    let hybrid = plan.live.as_ref().and_then(|l| l.hybrid);
    let mut per_arm = Vec::new();
    if plan.live.is_none() || hybrid.is_some() {
        for arm_cases in cases.iter() {
            per_arm.push(Arc::new(Servers::start(arm_cases).await));
        }
    }
    let Some(l) = &plan.live else {
        return Ok(Targets {
            of_case: Arc::new(replay_targets(&per_arm, cases)?),
            live_arms: None,
        });
    };
    let proxy = crate::live::start_proxy(l, plan.max_concurrency)
        .await
        .map_err(CompareError::Live)?;
    let arms = [
        live_arm(plan, l, &proxy, per_arm.first(), "a")?,
        live_arm(plan, l, &proxy, per_arm.get(1), "b")?,
    ];
    let of_case = cases[0]
        .iter()
        .map(|_| [Target::Live(arms[0].clone()), Target::Live(arms[1].clone())])
        .collect();
    Ok(Targets {
        of_case: Arc::new(of_case),
        live_arms: Some(arms),
    })
}

/// Each case's replay server in each arm.
fn replay_targets(
    per_arm: &[Arc<Servers>],
    cases: &[Vec<Case>; 2],
) -> Result<Vec<[Target; 2]>, CompareError> {
    (0..cases[0].len())
        .map(|ci| {
            let of = |arm: usize| {
                per_arm[arm]
                    .for_case(&cases[arm][ci])
                    .ok_or_else(|| CompareError::NoReplayServer(cases[arm][ci].id().to_string()))
            };
            Ok([Target::Replay(of(0)?), Target::Replay(of(1)?)])
        })
        .collect()
}

/// Arm `lane`'s live target: hybrid (its replay servers first, recorded
/// under OUT/<lane>/hybrid/), or plainly live, recorded under
/// --record/<lane> when asked.
fn live_arm(
    plan: &Plan,
    l: &LiveSettings,
    proxy: &Arc<crate::live::proxy::LiveProxy>,
    servers: Option<&Arc<Servers>>,
    lane: &str,
) -> Result<Arc<LiveTarget>, CompareError> {
    use crate::live::recorder::Recorder;
    let by = |what: &str| {
        crate::live::provenance(
            &format!("bench ab {what} (arm {lane})"),
            proxy.upstream_host(),
        )
    };
    if let (Some(protocol), Some(servers)) = (l.hybrid, servers) {
        let recorder = Recorder::new(
            &hybrid_dir(&plan.out, lane).join("cassettes"),
            by("--hybrid"),
            plan.runs_per_case,
        )
        .map_err(CompareError::RecordDir)?
        .hybrid();
        return Ok(LiveTarget::hybrid(
            proxy.clone(),
            Some(lane),
            Arc::new(recorder),
            servers.clone(),
            protocol,
            l.api_key_env.clone(),
        ));
    }
    let recorder = match &plan.record {
        None => None,
        Some(dir) => Some(Arc::new(
            Recorder::new(&dir.join(lane), by("--record"), plan.runs_per_case)
                .map_err(CompareError::RecordDir)?,
        )),
    };
    Ok(LiveTarget::new(
        proxy.clone(),
        Some(lane),
        recorder,
        None,
        l.api_key_env.clone(),
    ))
}

/// Where a hybrid comparison writes arm `lane`'s traffic.
fn hybrid_dir(out: &Path, lane: &str) -> PathBuf {
    out.join(lane).join("hybrid")
}

/// What one case-run needs, shared by every worker of the pool.
struct ArmWork {
    cases: Arc<[Vec<Case>; 2]>,
    targets: Arc<Vec<[Target; 2]>>,
    overlays: [Overlay; 2],
    roots: [PathBuf; 2],
    harness_bin: PathBuf,
}

impl ArmWork {
    /// One case-run of one arm; live, once the command-wide cap refused a
    /// call, a case-run not started is a bench fault (not comparable).
    async fn run(
        &self,
        (arm, ci, r): crate::batch::LaneJob,
    ) -> (usize, usize, case_run::RunRecord) {
        let case = &self.cases[arm][ci];
        let target = &self.targets[ci][arm];
        let stopped = match target {
            Target::Live(l) => l.stopped().inspect(|_| l.note_not_started(case.id(), r)),
            Target::Replay(_) => None,
        };
        let rec = match stopped {
            Some(why) => case_run::RunRecord::faulted(
                case,
                r,
                crate::bench_fault::BenchFault::LiveCapReached { detail: why },
                String::new(),
            ),
            None => {
                case_run::run_case(
                    case,
                    r,
                    target,
                    &self.harness_bin,
                    &self.roots[arm],
                    &self.overlays[arm],
                )
                .await
            }
        };
        (arm, ci, rec)
    }
}

/// Every (arm, case, run), shuffled by the seed so that machine load
/// drifting over the comparison falls on both arms alike.
fn shuffled_jobs(n_cases: usize, runs_per_case: u32, seed: u64) -> Vec<crate::batch::LaneJob> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut jobs: Vec<crate::batch::LaneJob> = (0..n_cases)
        .flat_map(|ci| (0..runs_per_case).flat_map(move |r| [(0, ci, r), (1, ci, r)]))
        .collect();
    jobs.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    jobs
}

/// Run every (case, run, arm) through the harness, interleaved in a seeded
/// random order, and pair the results by case. The arms are the two lanes
/// of one batch (`batch::run_lanes`): each arm's events go to the terminal
/// the arms share (`events::Arm`) and to that arm's summary files, which
/// write its case-runs under out/a or out/b as a `bench run` would.
async fn run_arms(
    plan: &Plan,
    cases: &Arc<[Vec<Case>; 2]>,
    target_of: &Arc<Vec<[Target; 2]>>,
    out: &Path,
) -> Vec<CasePair> {
    use crate::events::{Arm, CaseMeta, Fanout, Lines, Terminal};
    let jobs = shuffled_jobs(cases[0].len(), plan.runs_per_case, plan.seed);
    let roots = [out.join("a"), out.join("b")];
    let total = jobs.len() as u64;
    let w = Arc::new(ArmWork {
        cases: cases.clone(),
        targets: target_of.clone(),
        overlays: [plan.a.applied.clone(), plan.b.applied.clone()],
        roots: roots.clone(),
        harness_bin: plan.harness_bin.clone(),
    });
    let work = move |job: crate::batch::LaneJob| {
        let w = w.clone();
        async move { w.run(job).await }
    };
    let metas: Vec<CaseMeta> = cases[0].iter().map(CaseMeta::of).collect();
    let terminal = std::cell::RefCell::new(Terminal::new(total, "case-runs", Lines::Paired));
    let [mut files_a, mut files_b] = [&roots[0], &roots[1]]
        .map(|root| SummaryFiles::new(arm_summary_head(&cases[0], plan), root, None).drill_down());
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
        runs_per_case: plan.runs_per_case,
        max_concurrency: plan.max_concurrency,
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
    pairs_of(&cases[0], per_arm)
}

/// Each case's records in both arms, as the analysis reads them.
fn pairs_of(cases: &[Case], per_arm: Vec<Vec<Vec<case_run::RunRecord>>>) -> Vec<CasePair> {
    cases
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
fn arm_summary_head(cases: &[Case], plan: &Plan) -> crate::summary::Summary {
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
        git_rev: crate::summary::git_rev(&plan.suite),
        config_hash: crate::summary::config_hash(cases, plan.runs_per_case, pass_rate),
        runs_per_case: plan.runs_per_case,
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
