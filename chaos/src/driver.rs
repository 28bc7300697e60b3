//! The kill driver: plans every kill from (seed, mode, kill index), runs the
//! real harness binary on a fresh copy of a case, kills it at a named phase,
//! inside a kill window (right after a park, during a replan, at the drift
//! check's checkpoint) or at a random time (SIGKILL through nix, confirmed by
//! waitpid), in power-loss mode rebuilds the disk as a power cut would have
//! left it, rots a committed checkpoint in the bit-rot stratum, resumes with
//! the same command (sometimes killing again during the resume) until the run
//! ends, and checks the invariants ([`Invariant`]) against an oracle that
//! knows what really happened: the operation logs, the outbox, and the
//! requests the driver's own replay server answered (which is what the
//! provider bills).

use crate::bitrot::{self, RotKind};
use crate::cases::{copy_tree, Case};
use crate::fsmodel::{self, CrashPolicy, Model, Snapshot};
pub use crate::invariant::Invariant;
use crate::oracle::{self, Ckpt, Effect, Journal};
use crate::proc::{self, Outcome, Spawn, Target};
use crate::rerun;
use crate::windows::{self, Window};
use harness::chaos_hook::Phase;
use harness::replay::{Recordings, ReplayOptions, ReplayServer};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Mode {
    #[serde(rename = "sigkill")]
    Sigkill,
    #[serde(rename = "power-loss")]
    PowerLoss,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sigkill => "sigkill",
            Mode::PowerLoss => "power-loss",
        }
    }
    fn tag(self) -> u64 {
        match self {
            Mode::Sigkill => 1,
            Mode::PowerLoss => 2,
        }
    }
}

pub const DECOY_RUN_ID: &str = "chaos-decoy-temp-file";
const DECOY_NAME: &str = ".checkpoint.json.tmp-0-chaos";
const REFUSAL_KINDS: [&str; 6] = [
    "checkpoint_unreadable",
    "checkpoint_unparseable",
    "checkpoint_checksum_mismatch",
    "checkpoint_schema_mismatch",
    "checkpoint_goal_mismatch",
    "checkpoint_body_invalid",
];
const EPS: f64 = 1e-9;

#[derive(Debug, Clone)]
pub struct Config {
    pub kills: usize,
    pub seed: u64,
    pub modes: Vec<Mode>,
    /// Only this case (directory name).
    pub case: Option<String>,
    /// Run only this kill index.
    pub replay_kill: Option<usize>,
    /// Run only the kill indexes of this stratum (its label): the first
    /// `kills` of them.
    pub stratum: Option<String>,
    pub harness_bin: PathBuf,
    /// A broken variant name (the binary must be a `chaos-broken` build).
    pub broken: Option<String>,
    pub cases_dir: PathBuf,
    pub work_dir: PathBuf,
    pub jobs: usize,
    /// Keep every trial directory (violating ones are always kept).
    pub keep: bool,
    pub proc_timeout: Duration,
    /// Processes per trial before it counts as "never ends".
    pub max_procs: usize,
    /// Extra flags the replay command must carry (e.g. the harness path).
    pub replay_extra: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct InvCount {
    pub checked: u64,
    /// Of `checked`: kills on which the invariant was not vacuous.
    pub exercised: u64,
    pub violated: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub kill: usize,
    pub mode: Mode,
    pub case: String,
    pub invariant: String,
    pub process: usize,
    pub stratum: String,
    pub detail: String,
    pub replay: String,
    pub trial_dir: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ModeReport {
    pub mode: String,
    pub kills: u64,
    pub signals_sent: u64,
    pub confirmed_kills: u64,
    pub exited_before_signal: u64,
    pub power_cuts: u64,
    pub resumes: u64,
    pub kills_during_resume: u64,
    pub by_phase: BTreeMap<String, u64>,
    /// Kill indexes per stratum (label).
    pub by_stratum: BTreeMap<String, u64>,
    pub io_faults: BTreeMap<String, u64>,
    /// Committed checkpoints rotted by the bit-rot stratum, per kind.
    pub bit_rot: BTreeMap<String, u64>,
    /// Ledger journals damaged by the journal-damage stratum, per kind.
    pub journal_damage: BTreeMap<String, u64>,
    pub invariants: BTreeMap<String, InvCount>,
    pub endings: BTreeMap<String, u64>,
    pub refusals: BTreeMap<String, u64>,
    pub violations: Vec<Violation>,
    pub wall_s: f64,
}

/// Per-case counts from one clean run: how often each phase is reached, how
/// many write and fsync operations happen, how long it takes, and the kill
/// targets of each window (`windows::find`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Calibration {
    pub phases: BTreeMap<String, u64>,
    pub writes: u64,
    pub fsyncs: u64,
    pub wall_us: u64,
    /// The clean run's ending, from its report.json.
    pub ending: String,
    /// Window label -> (phase, occurrence) kill targets.
    pub windows: BTreeMap<String, Vec<windows::Target>>,
}

/// A clean calibration run (no fault injected) that did not reach its case's
/// expected ending: a finding about the harness under test.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationFailure {
    pub case: String,
    pub expected_ending: String,
    /// From report.json; None when the run wrote none.
    pub ending: Option<String>,
    pub exit_code: Option<i32>,
    pub error_kind: Option<String>,
    pub detail: Option<String>,
    /// How the process ended (exit code, hung, ...).
    pub process: String,
    pub trial_dir: String,
}

impl CalibrationFailure {
    pub fn describe(&self) -> String {
        let got = match &self.ending {
            Some(e) => format!(
                "ended {e} (exit {}{})",
                self.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".into()),
                self.error_kind
                    .as_ref()
                    .map(|k| format!(", error_kind {k}"))
                    .unwrap_or_default()
            ),
            None => format!("wrote no report.json ({})", self.process),
        };
        format!(
            "case {}: with no fault injected, the harness {got}{}; the case expects {}. The harness under test failed to reach the case's expected ending without any fault injected: a finding about the harness, not the case (its files: {})",
            self.case,
            self.detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default(),
            self.expected_ending,
            self.trial_dir
        )
    }
}

/// Why the driver could not start its kills.
#[derive(Debug, Clone)]
pub enum PrepareError {
    /// A case (or `--case`) cannot be used: fix the case.
    Case(String),
    /// The bench itself cannot run (no harness binary, no work dir, no
    /// replay server).
    Setup(String),
    /// The harness failed the clean calibration run of one or more cases.
    Calibration(Vec<CalibrationFailure>),
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrepareError::Case(e) => write!(f, "fix the case: {e}"),
            PrepareError::Setup(e) => write!(f, "{e}"),
            PrepareError::Calibration(v) => {
                for (i, c) in v.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "HARNESS FAILED {}", c.describe())?;
                }
                Ok(())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stratum {
    Phase(Phase),
    Window(Window),
    RandomTiming,
    IoError,
    BitRot,
    JournalDamage,
}

/// How the journal-damage stratum damages `ledger.jsonl` before a resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalDamage {
    /// The last line loses a random suffix, newline included (a power cut
    /// mid-append, or a tail the disk lost): a torn tail the harness must
    /// book conservatively, never drop.
    TornLastLine,
    /// A line of garbage before the last line (a disk that returned the
    /// wrong block): the resume must be refused, with the journal's money.
    GarbageLine,
}

impl JournalDamage {
    pub fn as_str(self) -> &'static str {
        match self {
            JournalDamage::TornLastLine => "torn_last_line",
            JournalDamage::GarbageLine => "garbage_line",
        }
    }
}

impl Stratum {
    pub fn label(&self) -> String {
        match self {
            Stratum::Phase(p) => p.as_str().to_string(),
            Stratum::Window(w) => w.as_str().to_string(),
            Stratum::RandomTiming => "random_timing".into(),
            Stratum::IoError => "io_error".into(),
            Stratum::BitRot => "bit_rot".into(),
            Stratum::JournalDamage => "journal_damage".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct TrialPlan {
    pub k: usize,
    pub mode: Mode,
    pub case: usize,
    pub stratum: Stratum,
    pub first: Target,
    /// For the during_resume_verify stratum: the resume is paused there.
    pub resume_target: Option<Target>,
    /// For the bit-rot stratum: the committed checkpoint on disk at the
    /// first resume that has one is rotted this way before it starts.
    pub rot: Option<RotKind>,
    /// For the journal-damage stratum: the ledger journal is damaged this
    /// way before the first resume whose journal has a complete line.
    pub journal_damage: Option<JournalDamage>,
    pub rng_seed: u64,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Phases reached only through their window stratum: on their own they
/// would duplicate it (every occurrence of them is inside the window).
fn window_only(p: Phase) -> bool {
    matches!(
        p,
        Phase::AfterParkBeforeCheckpoint | Phase::AfterDriftGateBeforeCheckpoint
    )
}

/// Every kill index gets one of these, in a seed-shuffled cycle: the named
/// phases, the three kill windows, random timing, bit rot, and (power loss
/// only) I/O errors.
pub fn strata(mode: Mode) -> Vec<Stratum> {
    let mut v: Vec<Stratum> = Phase::ALL
        .iter()
        .filter(|p| !window_only(**p))
        .map(|p| Stratum::Phase(*p))
        .collect();
    v.extend(Window::ALL.iter().map(|w| Stratum::Window(*w)));
    v.push(Stratum::RandomTiming);
    v.push(Stratum::BitRot);
    v.push(Stratum::JournalDamage);
    if mode == Mode::PowerLoss {
        v.push(Stratum::IoError);
    }
    v
}

/// Phases at which a task is in flight, usable to set up a resume kill.
const SETUP_PHASES: [Phase; 4] = [
    Phase::AfterPostBeforeCheckpoint,
    Phase::BetweenMigrationSteps,
    Phase::DuringModelCall,
    Phase::AfterParkBeforeCheckpoint,
];

/// In the bit-rot stratum, the share of trials whose first process runs to
/// the end (the rot then hits the finished run's checkpoint: the machine's
/// disk rots overnight after the run); the others are killed first at a
/// random phase and the checkpoint on disk at the next resume rots.
const BIT_ROT_AFTER_END_SHARE: f64 = 0.25;

/// The plan of kill `k`: a pure function of (seed, mode, k, case filter and
/// the cases' calibration), so `--replay-kill k` reruns exactly this kill.
pub fn plan(
    seed: u64,
    mode: Mode,
    k: usize,
    cases: &[Case],
    calib: &[Calibration],
    only: Option<usize>,
) -> TrialPlan {
    let order_seed = mix(seed ^ mix(mode.tag()));
    let mut order = strata(mode);
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(order_seed));
    let stratum = order[k % order.len()].clone();
    let rng_seed = mix(order_seed ^ mix(k as u64 + 1));
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let mut case = rng.gen_range(0..cases.len());
    let count = |c: usize, p: Phase| calib[c].phases.get(p.as_str()).copied().unwrap_or(0);
    let reachable =
        |p: Phase| -> Vec<usize> { (0..cases.len()).filter(|c| count(*c, p) > 0).collect() };
    let pick_case_for = |p: Phase, rng: &mut ChaCha8Rng| {
        if let Some(o) = only {
            return o;
        }
        let r = reachable(p);
        if r.contains(&case) || r.is_empty() {
            case
        } else {
            r[rng.gen_range(0..r.len())]
        }
    };
    let mut resume_target = None;
    let mut rot = None;
    let mut journal_damage = None;
    let first = match &stratum {
        Stratum::Phase(Phase::DuringResumeVerify) => {
            let setup = SETUP_PHASES[rng.gen_range(0..SETUP_PHASES.len())];
            case = pick_case_for(setup, &mut rng);
            let max = count(case, setup).max(1);
            // during_model_call 1 is the plan call: no task in flight yet.
            let lo = if setup == Phase::DuringModelCall {
                2.min(max)
            } else {
                1
            };
            resume_target = Some(Target::Pause {
                phase: Phase::DuringResumeVerify.as_str().into(),
                n: 1,
            });
            Target::Pause {
                phase: setup.as_str().into(),
                n: rng.gen_range(lo..=max),
            }
        }
        Stratum::Phase(p) => {
            case = pick_case_for(*p, &mut rng);
            let max = count(case, *p).max(1);
            Target::Pause {
                phase: p.as_str().into(),
                n: rng.gen_range(1..=max),
            }
        }
        Stratum::Window(w) => {
            let targets = |c: usize| -> &[windows::Target] {
                calib[c]
                    .windows
                    .get(w.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
            };
            if let Some(o) = only {
                case = o;
            } else if targets(case).is_empty() {
                let r: Vec<usize> = (0..cases.len())
                    .filter(|c| !targets(*c).is_empty())
                    .collect();
                if !r.is_empty() {
                    case = r[rng.gen_range(0..r.len())];
                }
            }
            match targets(case) {
                [] => Target::None, // no case reaches this window: a clean run
                ts => {
                    let (phase, n) = ts[rng.gen_range(0..ts.len())].clone();
                    Target::Pause { phase, n }
                }
            }
        }
        Stratum::BitRot => {
            if let Some(o) = only {
                case = o;
            }
            // Digits and letters are the well-formed rot only the checksum
            // catches; raw byte flips are the rest.
            rot = Some(match rng.gen_range(0..10) {
                0..=3 => RotKind::Digit,
                4..=6 => RotKind::Letter,
                _ => RotKind::Bytes,
            });
            let phases: Vec<Phase> = Phase::ALL
                .iter()
                .copied()
                .filter(|p| *p != Phase::DuringResumeVerify && count(case, *p) > 0)
                .collect();
            if phases.is_empty() || rng.gen_bool(BIT_ROT_AFTER_END_SHARE) {
                Target::None
            } else {
                let p = phases[rng.gen_range(0..phases.len())];
                Target::Pause {
                    phase: p.as_str().into(),
                    n: rng.gen_range(1..=count(case, p)),
                }
            }
        }
        Stratum::JournalDamage => {
            if let Some(o) = only {
                case = o;
            }
            journal_damage = Some(if rng.gen_bool(0.5) {
                JournalDamage::TornLastLine
            } else {
                JournalDamage::GarbageLine
            });
            // Killed after some money was journaled, so there is a resume.
            let phases: Vec<Phase> = [
                Phase::DuringModelCall,
                Phase::AfterPostBeforeCheckpoint,
                Phase::TempWritten,
                Phase::DuringDriftCall,
            ]
            .into_iter()
            .filter(|p| count(case, *p) > 0)
            .collect();
            match phases.as_slice() {
                [] => Target::None,
                ps => {
                    let p = ps[rng.gen_range(0..ps.len())];
                    Target::Pause {
                        phase: p.as_str().into(),
                        n: rng.gen_range(1..=count(case, p)),
                    }
                }
            }
        }
        Stratum::RandomTiming => {
            if let Some(o) = only {
                case = o;
            }
            // A deterministic span (~2 ms per model call or atomic write of a
            // clean run, about its wall time here), so (seed, k) alone fixes the
            // delay; where it lands still depends on the machine's speed.
            let steps = [
                Phase::DuringModelCall,
                Phase::DuringDriftCall,
                Phase::TempWritten,
            ]
            .iter()
            .map(|p| count(case, *p))
            .sum::<u64>();
            let span = 2_000 * steps.max(5);
            Target::Timer {
                delay_us: rng.gen_range(0..span),
            }
        }
        Stratum::IoError => {
            if let Some(o) = only {
                case = o;
            }
            let errno = if rng.gen_bool(0.5) { "eio" } else { "enospc" };
            let (class, max) = if rng.gen_bool(0.5) {
                ("write", calib[case].writes)
            } else {
                ("fsync", calib[case].fsyncs)
            };
            let n = rng.gen_range(1..=max.max(1));
            let mode = if rng.gen_bool(0.5) { "sticky" } else { "once" };
            Target::Fault {
                spec: format!("{errno}:{class}:{n}:{mode}"),
            }
        }
    };
    if let Some(o) = only {
        case = o;
    }
    TrialPlan {
        k,
        mode,
        case,
        stratum,
        first,
        resume_target,
        rot,
        journal_damage,
        rng_seed,
    }
}

/// Shared by the worker threads of one mode.
struct Ctx<'a> {
    cfg: &'a Config,
    cases: &'a [Case],
    calib: &'a [Calibration],
    only: Option<usize>,
    rt: &'a tokio::runtime::Runtime,
    recordings: &'a Recordings,
}

/// What one process did, as the checks need it.
struct Proc {
    idx: usize,
    outcome: Outcome,
    stdout: String,
    stderr: String,
    ops: Vec<fsmodel::Op>,
    spawn: Obs,
    end: Obs,
    /// New lines of events.jsonl written by this process.
    events: Vec<Value>,
    fault_fired: Option<i32>,
    crashed: bool,
}

fn phase_is(o: &Outcome, p: Phase) -> bool {
    matches!(o, Outcome::KilledAtPhase { phase, .. } if phase == p.as_str())
}

/// The disk as the oracle reads it at one moment.
#[derive(Clone)]
struct Obs {
    ckpt: Ckpt,
    journal: Journal,
    outbox: BTreeMap<String, usize>,
    migrations: BTreeMap<String, Effect>,
    /// The task in flight in the checkpoint and what the disk says of it.
    inflight: Option<(String, Effect)>,
    events_len: u64,
    report: Option<Value>,
}

struct Paths {
    spec: PathBuf,
    state: PathBuf,
    ws: PathBuf,
    outbox: PathBuf,
    logs: PathBuf,
}

fn observe(p: &Paths, case: &Case) -> Obs {
    let ckpt = Ckpt::read(&p.state, &case.goal_sha256);
    let migrations = case
        .migrations
        .keys()
        .map(|m| {
            (
                m.clone(),
                oracle::effect(
                    &json!({"kind": "migration_state", "name": m}),
                    &p.ws,
                    &p.outbox,
                    &case.migrations,
                ),
            )
        })
        .collect();
    let inflight = ckpt
        .state()
        .filter(|s| s.finished.is_none())
        .and_then(|s| s.in_progress.as_ref())
        .map(|t| {
            let v = case
                .tasks
                .get(&t.id)
                .cloned()
                .unwrap_or_else(|| serde_json::to_value(&t.verify).unwrap_or(Value::Null));
            (
                t.id.clone(),
                oracle::effect(&v, &p.ws, &p.outbox, &case.migrations),
            )
        });
    Obs {
        ckpt,
        journal: Journal::read(&p.state.join("ledger.jsonl")),
        outbox: oracle::outbox_counts(&p.outbox),
        migrations,
        inflight,
        events_len: std::fs::metadata(p.state.join("events.jsonl"))
            .map(|m| m.len())
            .unwrap_or(0),
        report: std::fs::read(p.state.join("report.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
    }
}

fn new_events(state: &Path, from: u64) -> Vec<Value> {
    let b = std::fs::read(state.join("events.jsonl")).unwrap_or_default();
    let tail = if (from as usize) <= b.len() {
        &b[from as usize..]
    } else {
        &b[..0]
    };
    tail.split(|&c| c == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// (ending, exit) from the harness's human summary on stdout.
fn parse_ending(stdout: &str) -> Option<(String, i32)> {
    let line = stdout.lines().find(|l| l.starts_with("ending "))?;
    let rest = line["ending".len()..].trim_start();
    let name = rest.split_whitespace().next()?.to_string();
    let exit = rest
        .split("exit ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some((name, exit))
}

fn ending_code(name: &str) -> Option<i32> {
    harness::ending::Ending::ALL
        .iter()
        .find(|e| {
            serde_json::to_value(e)
                .ok()
                .as_ref()
                .and_then(Value::as_str)
                == Some(name)
        })
        .map(|e| e.exit_code())
}

/// The checkpoint writes one process made: every whole frame it wrote toward
/// checkpoint.json, and the index of the last one the process went on from
/// (an operation that is not part of that write sequence followed it, or the
/// process exited): the harness believed it durable.
fn checkpoint_writes(
    ops: &[fsmodel::Op],
    state: &Path,
    exited: bool,
) -> (Vec<Vec<u8>>, Option<usize>) {
    use fsmodel::Op;
    let ck = harness::checkpoint::path_in(state);
    let is_tmp = |p: &Path| {
        p.parent() == Some(state)
            && p.file_name()
                .map(|n| n.to_string_lossy().starts_with(".checkpoint.json.tmp-"))
                .unwrap_or(false)
    };
    let mut bufs: BTreeMap<u64, (PathBuf, Vec<u8>)> = BTreeMap::new();
    let mut cands: Vec<Vec<u8>> = vec![];
    // (candidate index, fd of its write sequence) awaiting acknowledgement
    let mut open_seq: Option<(usize, u64)> = None;
    let mut acked = None;
    let mut inplace: BTreeMap<u64, usize> = BTreeMap::new();
    let mut renamed: BTreeSet<u64> = BTreeSet::new();
    for op in ops {
        let part_of_seq = match (&open_seq, op) {
            (Some((_, fd)), Op::Fsync { fd: f }) | (Some((_, fd)), Op::Write { fd: f, .. }) => {
                f == fd
            }
            (Some(_), Op::FsyncDir { path }) => path == state,
            _ => false,
        };
        if matches!(op, Op::Fault { path, .. } if path == state || *path == ck || is_tmp(path)) {
            // The write sequence failed: atomic_write returned an error, so the
            // harness did not go on from it as durable.
            open_seq = None;
        } else if !part_of_seq {
            if let Some((i, _)) = open_seq.take() {
                acked = Some(i);
            }
        }
        match op {
            Op::Open { fd, path, .. } if is_tmp(path) => {
                bufs.insert(*fd, (path.clone(), vec![]));
            }
            Op::Open { fd, path, .. } if *path == ck => {
                // In place (no temp, no rename): the write sequence is the candidate.
                cands.push(vec![]);
                inplace.insert(*fd, cands.len() - 1);
                open_seq = Some((cands.len() - 1, *fd));
            }
            Op::Write { fd, off, .. } => {
                let data = op.write_bytes();
                let put = |b: &mut Vec<u8>| {
                    let o = off.unwrap_or(b.len() as u64) as usize;
                    if b.len() < o + data.len() {
                        b.resize(o + data.len(), 0);
                    }
                    b[o..o + data.len()].copy_from_slice(&data);
                };
                if let Some((_, b)) = bufs.get_mut(fd) {
                    put(b);
                }
                if let Some(i) = inplace.get(fd) {
                    put(&mut cands[*i]);
                }
            }
            Op::Rename { from, to } if *to == ck => {
                if let Some((fd, (_, b))) = bufs.iter().rev().find(|(_, (p, _))| p == from) {
                    cands.push(b.clone());
                    open_seq = Some((cands.len() - 1, *fd));
                    renamed.insert(*fd);
                }
            }
            _ => {}
        }
    }
    if exited {
        if let Some((i, _)) = open_seq {
            acked = Some(i);
        }
    } else if let Some((_, (_, b))) = bufs
        .iter()
        .next_back()
        .filter(|(fd, (p, _))| !renamed.contains(*fd) && !p.as_os_str().is_empty())
    {
        // The log is written right after each operation: a kill between the
        // last temp file's rename and its log line leaves that temp's frame
        // in place with no rename in the log.
        cands.push(b.clone());
    }
    (cands, acked)
}

fn is_refusal(report: &Value, spawn: &Obs) -> bool {
    let kind = report["error_kind"].as_str().unwrap_or("");
    REFUSAL_KINDS.contains(&kind)
        || (kind == "ledger_journal"
            && (spawn.journal.bad_line.is_some()
                || report["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("but the checkpoint recorded")))
}

/// Accumulates one trial's findings per invariant.
struct Checks {
    exercised: [bool; Invariant::ALL.len()],
    found: Vec<(Invariant, usize, String)>,
}

impl Checks {
    fn new() -> Checks {
        Checks {
            exercised: [false; Invariant::ALL.len()],
            found: vec![],
        }
    }
    fn ex(&mut self, inv: Invariant) {
        self.exercised[inv.index()] = true;
    }
    fn fail(&mut self, inv: Invariant, process: usize, detail: String) {
        self.exercised[inv.index()] = true;
        if self.found.iter().filter(|(i, ..)| *i == inv).count() < 3 {
            self.found.push((inv, process, detail));
        }
    }
}

/// One finished kill index.
pub struct TrialOutcome {
    pub plan: TrialPlan,
    pub case_id: String,
    pub signals_sent: u64,
    pub confirmed: Vec<String>,
    pub exited_before_signal: u64,
    pub power_cuts: u64,
    pub resumes: u64,
    pub kills_during_resume: u64,
    pub io_fault: Option<String>,
    pub ending: Option<String>,
    pub refusal: Option<String>,
    /// The bit-rot stratum's rot, as `Rot::label` says it.
    pub bit_rot: Option<String>,
    /// The journal-damage stratum's damage, and what the journal had
    /// committed just before it.
    pub journal_damage: Option<(JournalDamage, f64)>,
    pub exercised: [bool; Invariant::ALL.len()],
    pub violations: Vec<(Invariant, usize, String)>,
    pub dir: PathBuf,
}

/// The bit-rot stratum: rot the committed checkpoint on disk (if there is a
/// whole, valid one) before process `idx` starts. Returns the rot's label.
fn rot_checkpoint(
    ck: &mut Checks,
    p: &Paths,
    case: &Case,
    kind: RotKind,
    plan: &TrialPlan,
    idx: usize,
) -> Option<String> {
    let Ckpt::Valid(_, bytes) = Ckpt::read(&p.state, &case.goal_sha256) else {
        return None;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(mix(plan.rng_seed ^ 0xB17_0507));
    let (rotted, rot) = bitrot::rot(&bytes, kind, &case.goal_sha256, &mut rng)?;
    let path = harness::checkpoint::path_in(&p.state);
    if let Err(e) = std::fs::write(&path, &rotted) {
        ck.fail(
            Invariant::NoTornCheckpoint,
            idx,
            format!("bench: cannot write the rotted checkpoint: {e}"),
        );
        return None;
    }
    // The oracle's own reading must see the rot as the checksum does: the
    // check on the resume (a refusal naming checkpoint_checksum_mismatch)
    // rests on it.
    match Ckpt::read(&p.state, &case.goal_sha256) {
        Ckpt::Invalid(k, _) if k == "checksum_mismatch" => {}
        other => ck.fail(
            Invariant::NoTornCheckpoint,
            idx,
            format!(
                "bench: a rotted checkpoint (same length, body bytes at {:?} changed) does not read as a checksum mismatch: {:?}",
                rot.offsets,
                match other {
                    Ckpt::Invalid(k, _) => k,
                    Ckpt::Valid(..) => "valid".into(),
                    Ckpt::Absent => "absent".into(),
                }
            ),
        ),
    }
    Some(rot.label())
}

/// The journal-damage stratum: damage `ledger.jsonl` in the state dir, if it
/// has a complete line. Returns what the journal had committed before.
fn damage_journal(state: &Path, kind: JournalDamage, rng: &mut ChaCha8Rng) -> Option<f64> {
    let path = state.join("ledger.jsonl");
    let bytes = std::fs::read(&path).ok()?;
    let complete = bytes.iter().rposition(|&b| b == b'\n')? + 1;
    let before = crate::oracle::Journal::read(&path).committed();
    // Start of the last complete line.
    let last_start = bytes[..complete - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let damaged: Vec<u8> = match kind {
        JournalDamage::TornLastLine => {
            // Keep at least one byte of it, never its newline.
            let len = complete - 1 - last_start;
            let keep = rng.gen_range(1..=len.max(1));
            bytes[..last_start + keep.min(len)].to_vec()
        }
        JournalDamage::GarbageLine => {
            let mut v = bytes[..last_start].to_vec();
            v.extend_from_slice(b"\x00\x00{\"op\":\"rec\xffrd\",\"seq\":\n");
            v.extend_from_slice(&bytes[last_start..]);
            v
        }
    };
    std::fs::write(&path, damaged).ok()?;
    Some(before)
}

fn plant_decoy(state: &Path, goal_sha: &str) {
    let mut s = harness::state::RunState::new(DECOY_RUN_ID.into(), goal_sha.into(), 0);
    s.planned = true;
    if let Ok(b) = harness::checkpoint::encode(&s) {
        let _ = std::fs::write(state.join(DECOY_NAME), b);
    }
}

fn run_trial(ctx: &Ctx, server: &ReplayServer, plan: TrialPlan) -> TrialOutcome {
    let cfg = ctx.cfg;
    let case = &ctx.cases[plan.case];
    let mode = plan.mode;
    let dir = cfg.work_dir.join(format!("{}-{}", mode.as_str(), plan.k));
    let _ = std::fs::remove_dir_all(&dir);
    let mut out = TrialOutcome {
        plan: plan.clone(),
        case_id: case.id.clone(),
        signals_sent: 0,
        confirmed: vec![],
        exited_before_signal: 0,
        power_cuts: 0,
        resumes: 0,
        kills_during_resume: 0,
        io_fault: None,
        ending: None,
        refusal: None,
        bit_rot: None,
        journal_damage: None,
        exercised: [false; Invariant::ALL.len()],
        violations: vec![],
        dir: dir.clone(),
    };
    let mut ck = Checks::new();
    let setup = (|| -> std::io::Result<Paths> {
        std::fs::create_dir_all(&dir)?;
        let dir = dir.canonicalize()?;
        copy_tree(&case.dir, &dir.join("case"))?;
        std::fs::create_dir_all(dir.join("state"))?;
        std::fs::create_dir_all(dir.join("logs"))?;
        let state = dir.join("state");
        Ok(Paths {
            spec: dir.join("case/run.toml"),
            ws: dir.join("case/workspace"),
            outbox: state.join("outbox.jsonl"),
            state,
            logs: dir.join("logs"),
        })
    })();
    let p = match setup {
        Ok(p) => p,
        Err(e) => {
            ck.fail(
                Invariant::OneOfSevenEndings,
                0,
                format!("trial setup failed: {e}"),
            );
            out.violations = ck.found;
            return out;
        }
    };
    let spec_bytes = std::fs::read(&p.spec).unwrap_or_default();
    let run_index = ((mode.tag() as u32) << 24) | (plan.k as u32 & 0x00FF_FFFF);
    let url = server.base_url_for(&case.replay_case, run_index);
    let mut rng = ChaCha8Rng::seed_from_u64(plan.rng_seed ^ 0xC4A0);
    let mut procs: Vec<Proc> = vec![];
    let mut max_committed = 0.0f64;
    let mut inflight_reserves: BTreeMap<u64, f64> = BTreeMap::new();
    let mut partial_seen: BTreeSet<String> = BTreeSet::new();
    let mut post_cut_done = false;
    let mut extra_kills = 0;
    let mut finished = false;
    let mut final_ending: Option<(String, i32)> = None;
    let mut final_report: Option<Value> = None;
    let mut rot_pending = plan.rot;
    let mut damage_pending = plan.journal_damage;
    let mut reruns = rerun::Tracker::default();
    let mut billed = 0.0f64;
    let mut previous_killed = false;

    for idx in 0..cfg.max_procs {
        if idx > 0 {
            // A valid-looking frame under a temp name: a harness that ever
            // reads temp files would resume from it (run id DECOY_RUN_ID).
            plant_decoy(&p.state, &case.goal_sha256);
            out.resumes += 1;
            if let Some(kind) = rot_pending {
                if let Some(label) = rot_checkpoint(&mut ck, &p, case, kind, &plan, idx) {
                    out.bit_rot = Some(label);
                    rot_pending = None;
                }
            }
            if let Some(kind) = damage_pending {
                let mut drng = ChaCha8Rng::seed_from_u64(mix(plan.rng_seed ^ 0x1ED6_E800));
                if let Some(before) = damage_journal(&p.state, kind, &mut drng) {
                    out.journal_damage = Some((kind, before.max(max_committed)));
                    damage_pending = None;
                }
            }
        }
        let spawn = observe(&p, case);
        if let Some(s) = spawn.ckpt.state() {
            reruns.on_disk(s, idx);
            if idx > 0 && !(s.parked.is_empty() && s.pruned.is_empty()) {
                ck.ex(Invariant::SettledTaskNeverRerun);
            }
        }
        // ---- what to do with this process
        let target = if idx == 0 {
            plan.first.clone()
        } else if idx == 1 && plan.resume_target.is_some() {
            plan.resume_target.clone().unwrap_or(Target::None)
        } else if extra_kills < 2 && !post_cut_done && rng.gen_bool(0.3) {
            extra_kills += 1;
            if spawn.inflight.is_some() && rng.gen_bool(0.5) {
                Target::Pause {
                    phase: Phase::DuringResumeVerify.as_str().into(),
                    n: 1,
                }
            } else {
                let ph = Phase::ALL[rng.gen_range(0..Phase::ALL.len())];
                Target::Pause {
                    phase: ph.as_str().into(),
                    n: rng.gen_range(1..=2),
                }
            }
        } else {
            Target::None
        };
        // ---- invariant 6 at spawn: committed spend never decreases
        let committed = spawn.journal.committed();
        // After the bench damaged the journal the oracle's reading of it is
        // not the money: the final report is held to what it had committed
        // before (end of the run).
        if out.journal_damage.is_none() && committed + EPS < max_committed {
            ck.fail(Invariant::LedgerNeverForgets, idx, format!("committed spend went down across a kill: ${max_committed:.6} before, ${committed:.6} in the journal now"));
        }
        max_committed = max_committed.max(committed);
        // The promise "a reserve with no record is booked at its worst case"
        // is about resuming; a finished run is re-reported, never resumed.
        if spawn
            .ckpt
            .state()
            .map(|s| s.finished.is_none())
            .unwrap_or(true)
        {
            for (seq, (_, worst)) in spawn.journal.open() {
                inflight_reserves.insert(seq, worst);
            }
        }
        for (m, e) in &spawn.migrations {
            if matches!(e, Effect::Partial(_)) {
                partial_seen.insert(m.clone());
            }
        }
        let snapshot =
            (mode == Mode::PowerLoss).then(|| Snapshot::take(&[p.state.clone(), p.ws.clone()]));
        let log = p.logs.join(format!("p{idx}.jsonl"));
        let mut env = vec![(
            harness::simfs::LOG_ENV.to_string(),
            log.display().to_string(),
        )];
        env.push(("TMPDIR".into(), cfg.work_dir.display().to_string()));
        if let Some(b) = &cfg.broken {
            env.push((harness::simfs::BROKEN_ENV.into(), b.clone()));
        }
        let s = Spawn {
            harness: cfg.harness_bin.clone(),
            args: vec![
                "run".into(),
                "--spec".into(),
                p.spec.clone().into(),
                "--state-dir".into(),
                p.state.clone().into(),
                "--base-url".into(),
                url.clone().into(),
            ],
            env,
            stdout: p.logs.join(format!("p{idx}.stdout")),
            timeout: cfg.proc_timeout,
        };
        let (outcome, stderr) = proc::run(&s, &target);
        let _ = std::fs::write(p.logs.join(format!("p{idx}.stderr")), &stderr);
        let stdout = std::fs::read_to_string(&s.stdout).unwrap_or_default();
        let ops = fsmodel::read_log(&log);
        let fault_fired = ops.iter().find_map(|o| match o {
            fsmodel::Op::Fault { errno, .. } => Some(*errno),
            _ => None,
        });
        if matches!(target, Target::Pause { .. } | Target::Timer { .. }) {
            out.signals_sent += !matches!(outcome, Outcome::ExitedBeforeSignal { .. }) as u64;
        }
        match &outcome {
            Outcome::KilledAtPhase { phase, .. } => {
                out.confirmed.push(phase.clone());
                out.kills_during_resume += (idx > 0) as u64;
            }
            Outcome::KilledByTimer { .. } => {
                out.confirmed.push("random_timing".into());
                out.kills_during_resume += (idx > 0) as u64;
            }
            Outcome::ExitedBeforeSignal { .. } => out.exited_before_signal += 1,
            _ => {}
        }
        if let Target::Fault { spec } = &target {
            out.io_fault = Some(format!(
                "{}{}",
                spec.split(':').take(2).collect::<Vec<_>>().join(":"),
                if fault_fired.is_some() {
                    ""
                } else {
                    " (not reached)"
                }
            ));
        }
        let exited = outcome.exit_code().is_some();
        // ---- power loss: the disk as a power cut at this moment leaves it
        let cut = mode == Mode::PowerLoss
            && (outcome.killed()
                || matches!(outcome, Outcome::SignalNotConfirmed { .. })
                || (exited && (fault_fired.is_some() || !post_cut_done)));
        if cut {
            if let Some(snap) = snapshot {
                let mut m = Model::new(snap);
                m.replay(&ops);
                let mut crng = ChaCha8Rng::seed_from_u64(mix(plan.rng_seed ^ mix(idx as u64 + 77)));
                let policy = CrashPolicy::draw(&mut crng);
                if let Err(e) = m.crash(policy, &mut crng).apply() {
                    ck.fail(
                        Invariant::OneOfSevenEndings,
                        idx,
                        format!("could not build the post-crash image: {e}"),
                    );
                }
                out.power_cuts += 1;
                if exited && fault_fired.is_none() {
                    post_cut_done = true;
                }
            }
        }
        let end = observe(&p, case);
        let events = new_events(&p.state, spawn.events_len);
        let pr = Proc {
            idx,
            outcome,
            stdout,
            stderr,
            ops,
            spawn,
            end,
            events,
            fault_fired,
            crashed: cut,
        };
        check_process(&mut ck, &pr, case, &p, &spec_bytes, &partial_seen);
        // ---- 9: what this process sent; nothing settled runs again
        let keys: Vec<String> = server
            .take_captured(&case.replay_case, run_index)
            .into_iter()
            .map(|c| {
                billed += case.cost_usd.get(&c.call_key).copied().unwrap_or(0.0);
                c.call_key
            })
            .collect();
        for v in reruns.process(idx, &keys, &case.prunes, previous_killed) {
            ck.fail(Invariant::SettledTaskNeverRerun, idx, v);
        }
        previous_killed = !exited;
        let done_now = match &pr.outcome {
            Outcome::Hung => {
                ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!(
                        "process {idx} still running after {:?}: killed",
                        cfg.proc_timeout
                    ),
                );
                true
            }
            Outcome::SpawnFailed(e) => {
                ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!("cannot start the harness: {e}"),
                );
                true
            }
            Outcome::SignalNotConfirmed { status } => {
                ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!("sent SIGKILL but waitpid says {status}"),
                );
                false
            }
            _ if exited => {
                final_ending = parse_ending(&pr.stdout);
                final_report = pr.end.report.clone();
                // Done unless a power cut still has to be survived, or the
                // bit rot has yet to hit a committed checkpoint.
                !(mode == Mode::PowerLoss && pr.crashed)
                    && rot_pending.is_none()
                    && damage_pending.is_none()
            }
            _ => false,
        };
        procs.push(pr);
        if done_now {
            finished = true;
            break;
        }
    }
    if !finished {
        ck.fail(
            Invariant::OneOfSevenEndings,
            cfg.max_procs,
            format!("no ending after {} harness processes", cfg.max_procs),
        );
    }
    // ---- end of the run: invariants 4, 6 and 8 on the final disk
    billed += server
        .take_captured(&case.replay_case, run_index)
        .iter()
        .map(|c| case.cost_usd.get(&c.call_key).copied().unwrap_or(0.0))
        .sum::<f64>();
    if plan.rot.is_some() && rot_pending.is_some() {
        ck.fail(
            Invariant::NoTornCheckpoint,
            procs.len(),
            "bench: the bit-rot stratum found no committed checkpoint to rot".into(),
        );
    }
    // The ledger never forgets, through a damaged journal: whatever the
    // damage, the final report shows at least what was committed before it.
    if let (Some((kind, before)), Some(r)) = (out.journal_damage, final_report.as_ref()) {
        let spent = r["spend_usd"].as_f64().unwrap_or(0.0);
        if spent + EPS < before {
            ck.fail(
                Invariant::LedgerNeverForgets,
                procs.len(),
                format!(
                    "after the journal was damaged ({}), the final report shows ${spent:.6}, less than the ${before:.6} it had committed before",
                    kind.as_str()
                ),
            );
        }
        ck.ex(Invariant::LedgerNeverForgets);
    }
    if let (true, Some(last)) = (finished, procs.last()) {
        out.ending = final_ending.as_ref().map(|(e, _)| e.clone());
        final_checks(
            &mut ck,
            last,
            case,
            &p,
            billed,
            &inflight_reserves,
            &partial_seen,
            final_report.as_ref(),
            &mut out,
        );
    }
    ck.ex(Invariant::NoTornCheckpoint);
    ck.ex(Invariant::OneOfSevenEndings);
    ck.ex(Invariant::LedgerNeverForgets);
    ck.ex(Invariant::GoalHashIntact);
    out.exercised = ck.exercised;
    out.violations = ck.found;
    out
}

fn check_process(
    ck: &mut Checks,
    pr: &Proc,
    case: &Case,
    p: &Paths,
    spec_bytes: &[u8],
    partial_seen: &BTreeSet<String>,
) {
    let idx = pr.idx;
    let exited = pr.outcome.exit_code();
    let report = if exited.is_some() {
        pr.end.report.as_ref()
    } else {
        None
    };
    let ending = exited.and_then(|_| parse_ending(&pr.stdout));
    // ---- 1: whole frame or refusal; what is on disk is what was acknowledged (or newer)
    match &pr.spawn.ckpt {
        Ckpt::Invalid(kind, bytes) => {
            if let (Some(code), Some(r)) = (exited, report) {
                let want = format!("checkpoint_{kind}");
                if code != 4 || r["error_kind"].as_str() != Some(want.as_str()) {
                    ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) but ended exit {code} with error_kind {}", r["error_kind"]));
                }
                if pr.end.ckpt.bytes() != Some(bytes.as_slice()) && !pr.crashed {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        "the refused checkpoint was modified".into(),
                    );
                }
            } else if let Some(code) = exited {
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}), exited {code} and left no report.json"));
            }
            // A refusal happens at load, before any kill point and before any
            // checkpoint: a process that reached one ran on from the bad frame
            // (whether or not it lived to exit).
            // The one write a refusal makes is its report.json (atomic, so
            // through temp_written): a kill there is the refusal, not a run on.
            let writing_the_refusal_report = phase_is(&pr.outcome, Phase::TempWritten)
                && pr.ops.iter().all(|o| match o {
                    fsmodel::Op::Open { path, .. } => path
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().contains(harness::report::FILE_NAME)),
                    _ => true,
                });
            if let (Outcome::KilledAtPhase { phase, n }, false) =
                (&pr.outcome, writing_the_refusal_report)
            {
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) and ran on to {phase}:{n} instead of refusing it"));
            }
            let (written, _) = checkpoint_writes(&pr.ops, &p.state, exited.is_some());
            if !written.is_empty() {
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) and wrote {} checkpoint(s) over it instead of refusing it", written.len()));
            }
        }
        Ckpt::Valid(..) => {
            if let Some(r) = report {
                if REFUSAL_KINDS.contains(&r["error_kind"].as_str().unwrap_or("")) {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        format!("refused a whole, valid checkpoint: {}", r["detail"]),
                    );
                }
            }
        }
        Ckpt::Absent => {}
    }
    let (cands, acked) = checkpoint_writes(&pr.ops, &p.state, exited.is_some());
    match &pr.end.ckpt {
        // The bad frame this process found at its start, left alone as a
        // refusal must (checked above): nothing this process wrote.
        Ckpt::Invalid(_, b)
            if matches!(&pr.spawn.ckpt, Ckpt::Invalid(_, sb) if sb == b) && cands.is_empty() => {}
        Ckpt::Invalid(kind, b) if kind == "goal_mismatch" => {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "checkpoint on disk carries another goal's hash ({} bytes)",
                    b.len()
                ),
            );
        }
        Ckpt::Invalid(kind, b) => {
            let how = if pr.crashed {
                "power cut"
            } else if pr.outcome.killed() {
                "SIGKILL"
            } else {
                "exit"
            };
            ck.fail(Invariant::NoTornCheckpoint, idx, format!("after the {how} the checkpoint on disk is not a whole frame ({kind}, {} bytes, sha {}): the write was not atomic", b.len(), oracle::digest(b)));
        }
        end => {
            let on_disk = end.bytes();
            let allowed: Vec<Option<&[u8]>> = match acked {
                Some(i) => cands[i..].iter().map(|c| Some(c.as_slice())).collect(),
                None => std::iter::once(pr.spawn.ckpt.bytes())
                    .chain(cands.iter().map(|c| Some(c.as_slice())))
                    .collect(),
            };
            if !allowed.contains(&on_disk) {
                let what = match (acked, on_disk) {
                    (Some(_), None) => "no checkpoint at all".to_string(),
                    (_, Some(b)) if Some(b) == pr.spawn.ckpt.bytes() => {
                        "the checkpoint from before this process".into()
                    }
                    (_, Some(b)) => match cands.iter().position(|c| c == b) {
                        Some(j) => format!("checkpoint write #{} of {}", j + 1, cands.len()),
                        None => format!(
                            "a checkpoint this process never wrote (sha {})",
                            oracle::digest(b)
                        ),
                    },
                    _ => "nothing".into(),
                };
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("the harness went on from checkpoint write #{} of {} as durable, but after the {} the disk holds {what}", acked.map(|i| i + 1).unwrap_or(0), cands.len(), if pr.crashed { "power cut" } else { "kill" }));
            }
            if let Some(s) = end.state() {
                if s.run_id == DECOY_RUN_ID {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        "the checkpoint was taken from a temp file".into(),
                    );
                }
            }
        }
    }
    if let Some(r) = report {
        if r["run_id"].as_str() == Some(DECOY_RUN_ID) {
            ck.fail(
                Invariant::NoTornCheckpoint,
                idx,
                "the harness read a temp file (the decoy) as its checkpoint".into(),
            );
        }
    }
    // ---- 2: at most one post per idempotency key, on every disk
    for (k, n) in &pr.end.outbox {
        ck.ex(Invariant::PostAtMostOnce);
        if *n > 1 {
            ck.fail(
                Invariant::PostAtMostOnce,
                idx,
                format!("outbox holds {n} posts with idempotency key {k:?}"),
            );
        }
    }
    // ---- 3: the in-flight task classified as the disk says
    if let Some((task, expect)) = &pr.spawn.inflight {
        let rv = pr
            .events
            .iter()
            .find(|e| e["kind"] == "resume_verify" && e["data"]["task"] == task.as_str());
        if let Some(rv) = rv {
            ck.ex(Invariant::InFlightClassified);
            let got = rv["data"]["outcome"]["outcome"].as_str().unwrap_or("?");
            if got != expect.wire() {
                ck.fail(Invariant::InFlightClassified, idx, format!("in-flight task {task} classified {got} on resume, but the disk says {} ({expect:?})", expect.wire()));
            } else {
                let after = |kind: &str| {
                    pr.events
                        .iter()
                        .any(|e| e["kind"] == kind && e["data"]["task"] == task.as_str())
                };
                match expect {
                    Effect::Done if !after("task_done") => ck.fail(
                        Invariant::InFlightClassified,
                        idx,
                        format!("{task} verified done on resume but not completed"),
                    ),
                    Effect::Partial(_) if !after("task_parked") => ck.fail(
                        Invariant::InFlightClassified,
                        idx,
                        format!("{task} partially applied on resume but not parked"),
                    ),
                    Effect::NotStarted => {
                        if let Some(first) = pr.events.iter().find(|e| e["kind"] == "task_start") {
                            if first["data"]["task"] != task.as_str() {
                                ck.fail(Invariant::InFlightClassified, idx, format!("{task} was not started but {} ran first: not re-queued at the front", first["data"]["task"]));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    // ---- 4: a partially applied migration is never re-run
    for m in partial_seen.iter().chain(
        pr.spawn
            .migrations
            .iter()
            .filter(|(_, e)| matches!(e, Effect::Partial(_)))
            .map(|(m, _)| m),
    ) {
        ck.ex(Invariant::PartialMigrationParked);
        let steps = &case.migrations[m];
        for op in &pr.ops {
            if let fsmodel::Op::Open { path, .. } = op {
                if steps.iter().any(|(sp, _)| p.ws.join(sp) == *path) {
                    ck.fail(Invariant::PartialMigrationParked, idx, format!("migration {m} was partially applied on disk and was written again ({})", path.display()));
                    break;
                }
            }
        }
    }
    // ---- 5: one of seven endings with its exit code
    if let Some(code) = exited {
        match &ending {
            None => ck.fail(
                Invariant::OneOfSevenEndings,
                idx,
                format!(
                    "exit {code} with no ending line on stdout (stderr: {})",
                    pr.stderr.lines().last().unwrap_or("")
                ),
            ),
            Some((name, e)) => match ending_code(name) {
                None => ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!("ending {name:?} is not one of the seven"),
                ),
                Some(want) if want != code || *e != code => ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!("ending {name} must exit {want}; exited {code} (summary says {e})"),
                ),
                _ => {}
            },
        }
        if pr.fault_fired.is_none() {
            if let (Some((name, _)), Some(r)) = (&ending, report) {
                if r["ending"].as_str() != Some(name.as_str())
                    || r["exit_code"].as_i64() != Some(code as i64)
                {
                    ck.fail(
                        Invariant::OneOfSevenEndings,
                        idx,
                        format!(
                            "stdout says {name} exit {code} but report.json says {} exit {}",
                            r["ending"], r["exit_code"]
                        ),
                    );
                }
            }
        }
        if let Some(errno) = pr.fault_fired {
            // An injected I/O error is refused or classified: UNRECOVERABLE_ERROR naming it,
            // or absorbed as a tool error the run went on from (checked by the others).
            if let Some((name, _)) = &ending {
                let named = pr.stdout.contains(&format!("os error {errno}"));
                if name == "UNRECOVERABLE_ERROR" && !named {
                    let detail = pr
                        .stdout
                        .lines()
                        .find(|l| l.starts_with("detail"))
                        .unwrap_or("")
                        .to_string();
                    ck.fail(Invariant::OneOfSevenEndings, idx, format!("an injected errno {errno} ended the run UNRECOVERABLE_ERROR without naming it: {detail}"));
                }
            }
        }
        // A journal with a corrupt line must be refused, never resumed from.
        if let (Some(line), Some((name, _))) = (pr.spawn.journal.bad_line, &ending) {
            let refused = name == "UNRECOVERABLE_ERROR"
                && report
                    .map(|r| r["error_kind"] == "ledger_journal")
                    .unwrap_or(false);
            if !refused
                && pr
                    .spawn
                    .ckpt
                    .state()
                    .map(|s| s.finished.is_none())
                    .unwrap_or(true)
            {
                ck.fail(Invariant::LedgerNeverForgets, idx, format!("ledger journal line {line} is not a journal entry but the run went on ({name})"));
            }
        }
    }
    // ---- 6: a report never shows less money than the journal had committed at spawn
    if let Some(r) = report {
        let resumed = pr
            .spawn
            .ckpt
            .state()
            .map(|s| s.finished.is_none())
            .unwrap_or(true);
        if resumed && !is_refusal(r, &pr.spawn) && pr.fault_fired.is_none() {
            let spent = r["spend_usd"].as_f64().unwrap_or(0.0);
            if spent + EPS < pr.spawn.journal.committed() {
                ck.fail(Invariant::LedgerNeverForgets, idx, format!("report spend ${spent:.6} is below the ${:.6} the journal had committed when the process started", pr.spawn.journal.committed()));
            }
        }
    }
    // ---- 7: goal hash intact
    if let Some(s) = pr.end.ckpt.state() {
        if s.goal_sha256 != case.goal_sha256 {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "checkpoint goal hash {} != {}",
                    s.goal_sha256, case.goal_sha256
                ),
            );
        }
    }
    if let Some(r) = report {
        if r["goal_sha256"].as_str() != Some(case.goal_sha256.as_str())
            || r["goal"].as_str() != Some(case.goal.as_str())
        {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "report goal/hash differ from the spec's: {} / {}",
                    r["goal"], r["goal_sha256"]
                ),
            );
        }
    }
    if std::fs::read(&p.spec).unwrap_or_default() != spec_bytes {
        ck.fail(
            Invariant::GoalHashIntact,
            idx,
            "the spec file changed".into(),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn final_checks(
    ck: &mut Checks,
    last: &Proc,
    case: &Case,
    p: &Paths,
    billed: f64,
    inflight_reserves: &BTreeMap<u64, f64>,
    partial_seen: &BTreeSet<String>,
    report: Option<&Value>,
    out: &mut TrialOutcome,
) {
    let idx = last.idx;
    let Some(r) = report else {
        ck.fail(
            Invariant::ReportAgrees,
            idx,
            "the run ended without a report.json".into(),
        );
        return;
    };
    let refusal = is_refusal(r, &last.spawn);
    if refusal {
        out.refusal = r["error_kind"].as_str().map(str::to_string);
    }
    let journal = Journal::read(&p.state.join("ledger.jsonl"));
    let spent = r["spend_usd"].as_f64().unwrap_or(0.0);
    // ---- 6: money spent is never forgotten; in-flight calls booked at worst case
    if !refusal {
        if spent + 1e-6 < billed {
            ck.fail(Invariant::LedgerNeverForgets, idx, format!("the provider billed ${billed:.6} for the calls it answered but the report shows ${spent:.6}: money was forgotten"));
        }
        // (Not after an injected write error: then the journal could not take
        // what the report must still show.)
        if out.io_fault.is_none() && (spent - journal.booked()).abs() > 1e-6 {
            ck.fail(
                Invariant::LedgerNeverForgets,
                idx,
                format!(
                    "report spend ${spent:.6} != journal booked ${:.6}",
                    journal.booked()
                ),
            );
        }
        for (seq, worst) in inflight_reserves {
            match journal.records.get(seq) {
                Some((c, basis)) if (c - worst).abs() < 1e-9 && basis == "worst_case" => {}
                other => ck.fail(Invariant::LedgerNeverForgets, idx, format!("call {seq} was in flight at a kill (worst ${worst:.6}) but the journal books {other:?}, not its worst case")),
            }
        }
        if !inflight_reserves.is_empty() {
            ck.ex(Invariant::LedgerNeverForgets);
        }
    }
    // ---- 4: never reported done
    let verified: Vec<String> = r["verified"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect();
    for m in partial_seen {
        if let Some(t) = case
            .tasks
            .iter()
            .find(|(_, v)| v["kind"] == "migration_state" && v["name"] == m.as_str())
            .map(|(t, _)| t)
        {
            if verified.contains(t) {
                ck.fail(Invariant::PartialMigrationParked, idx, format!("migration {m} was seen partially applied yet its task {t} is reported verified"));
            }
        }
    }
    // ---- 5: the ending's alert action happened (a human is told)
    if r["alert"].as_str().is_some_and(|a| a != "none") {
        let alerts = std::fs::read_to_string(p.state.join("alerts.jsonl")).unwrap_or_default();
        let delivered = alerts
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|a| a["ending"] == r["ending"]);
        if !delivered {
            ck.fail(
                Invariant::OneOfSevenEndings,
                idx,
                format!(
                    "the run ended {} (alert action {}) but no alert for it is in alerts.jsonl",
                    r["ending"], r["alert"]
                ),
            );
        }
    }
    // ---- 8: the report agrees with the workspace and the outbox
    ck.ex(Invariant::ReportAgrees);
    for t in &verified {
        let Some(v) = case.tasks.get(t) else {
            ck.fail(
                Invariant::ReportAgrees,
                idx,
                format!("report lists {t} as verified, a task no plan ever proposed"),
            );
            continue;
        };
        let e = oracle::effect(v, &p.ws, &p.outbox, &case.migrations);
        if e != Effect::Done {
            ck.fail(
                Invariant::ReportAgrees,
                idx,
                format!(
                    "report lists {t} as verified but the disk says {} ({e:?}) for {v}",
                    e.wire()
                ),
            );
        }
        if v["kind"] == "outbox_has" {
            let n = last
                .end
                .outbox
                .get(v["key"].as_str().unwrap_or(""))
                .copied()
                .unwrap_or(0);
            if n != 1 {
                ck.fail(
                    Invariant::ReportAgrees,
                    idx,
                    format!(
                        "{t} is verified by a post, and the outbox holds {n} posts with its key"
                    ),
                );
            }
        }
    }
    if r["ending"] == "GOAL_MET" {
        if let Ok(spec) = harness::spec::RunSpec::load(&p.spec) {
            let c = match &spec.predicate {
                harness::spec::Predicate::Command(c) => Some(c.clone()),
                harness::spec::Predicate::Check(n) => spec.checks.get(n).cloned(),
            };
            if let Some(c) = c {
                if !harness::check::run_check(&c, &p.ws).passed {
                    ck.fail(
                        Invariant::ReportAgrees,
                        idx,
                        "report says GOAL_MET but the goal predicate fails on the final workspace"
                            .into(),
                    );
                }
            }
        }
    }
    if let Some(s) = last.end.ckpt.state() {
        if let Some(f) = &s.finished {
            if serde_json::to_value(f.ending).ok().as_ref() != Some(&r["ending"]) {
                ck.fail(
                    Invariant::ReportAgrees,
                    idx,
                    format!(
                        "report says {} but the final checkpoint says {:?}",
                        r["ending"], f.ending
                    ),
                );
            }
        }
    }
}

/// One per worker: its own replay server (so request capture and wiremock's
/// retained requests can be cleared between its trials).
fn worker(
    ctx: &Ctx,
    mode: Mode,
    todo: &[usize],
    next: &AtomicUsize,
    results: &Mutex<Vec<TrialOutcome>>,
    progress: &(dyn Fn(usize, usize) + Sync),
) {
    let server = match ctx.rt.block_on(ReplayServer::start(
        ctx.recordings.clone(),
        ReplayOptions {
            strict: false,
            latency_scale: 0.0,
            capture: true,
            ..Default::default()
        },
    )) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench chaos: cannot start the replay server: {e}");
            return;
        }
    };
    loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= todo.len() {
            break;
        }
        let pl = plan(ctx.cfg.seed, mode, todo[i], ctx.cases, ctx.calib, ctx.only);
        let t = run_trial(ctx, &server, pl);
        ctx.rt.block_on(server.release_retained_requests());
        let bad = !t.violations.is_empty();
        if !bad && !ctx.cfg.keep {
            let _ = std::fs::remove_dir_all(&t.dir);
        }
        let done = {
            let mut r = results.lock().unwrap_or_else(|e| e.into_inner());
            r.push(t);
            r.len()
        };
        progress(done, todo.len());
    }
}

/// Run one clean pass of every case to learn its phase counts and kill
/// windows. A clean run that does not reach its case's expected ending (read
/// from its report.json) is a finding about the harness: every case is run
/// and every failure returned.
pub fn calibrate(
    cfg: &Config,
    cases: &[Case],
    rt: &tokio::runtime::Runtime,
    recordings: &Recordings,
) -> Result<Vec<Calibration>, PrepareError> {
    let setup = |e: std::io::Error| PrepareError::Setup(format!("calibration: {e}"));
    let server = rt
        .block_on(ReplayServer::start(
            recordings.clone(),
            ReplayOptions {
                strict: false,
                latency_scale: 0.0,
                capture: true,
                ..Default::default()
            },
        ))
        .map_err(|e| PrepareError::Setup(format!("cannot start the replay server: {e}")))?;
    let mut out = vec![];
    let mut failures = vec![];
    for (ci, case) in cases.iter().enumerate() {
        let dir = cfg.work_dir.join(format!("calibrate-{}", case.id));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(setup)?;
        let dir = dir.canonicalize().map_err(setup)?;
        copy_tree(&case.dir, &dir.join("case")).map_err(setup)?;
        std::fs::create_dir_all(dir.join("state")).map_err(setup)?;
        let log = dir.join("ops.jsonl");
        let mut env = vec![
            (
                harness::simfs::LOG_ENV.to_string(),
                log.display().to_string(),
            ),
            ("TMPDIR".into(), cfg.work_dir.display().to_string()),
        ];
        if let Some(b) = &cfg.broken {
            env.push((harness::simfs::BROKEN_ENV.into(), b.clone()));
        }
        let s = Spawn {
            harness: cfg.harness_bin.clone(),
            args: vec![
                "run".into(),
                "--spec".into(),
                dir.join("case/run.toml").into(),
                "--state-dir".into(),
                dir.join("state").into(),
                "--base-url".into(),
                server
                    .base_url_for(&case.replay_case, 0x00FF_0000 + ci as u32)
                    .into(),
            ],
            env,
            stdout: dir.join("stdout"),
            timeout: cfg.proc_timeout,
        };
        let t0 = Instant::now();
        let (outcome, stderr) = proc::run(&s, &Target::None);
        let wall_us = t0.elapsed().as_micros() as u64;
        if let Outcome::SpawnFailed(e) = &outcome {
            return Err(PrepareError::Setup(format!(
                "cannot start the harness {}: {e}",
                cfg.harness_bin.display()
            )));
        }
        let _ = std::fs::write(dir.join("stderr"), &stderr);
        let _ = server.take_captured(&case.replay_case, 0x00FF_0000 + ci as u32);
        // The ending is the harness's report.json, never its stdout: the
        // report is the contract, and a harness that printed one ending and
        // reported another must not pass calibration on its word.
        let report: Option<Value> =
            std::fs::read(dir.join("state").join(harness::report::FILE_NAME))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
        let ending = report
            .as_ref()
            .and_then(|r| r["ending"].as_str())
            .map(str::to_string);
        let expected = serde_json::to_value(case.expected_ending)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let code = outcome.exit_code();
        let reached = ending.as_deref() == Some(expected.as_str())
            && code == Some(case.expected_ending.exit_code())
            && report.as_ref().and_then(|r| r["exit_code"].as_i64())
                == Some(case.expected_ending.exit_code() as i64);
        if !reached {
            let field = |k: &str| {
                report
                    .as_ref()
                    .and_then(|r| r[k].as_str())
                    .map(str::to_string)
            };
            failures.push(CalibrationFailure {
                case: case.id.clone(),
                expected_ending: expected,
                ending,
                exit_code: code,
                error_kind: field("error_kind"),
                detail: field("detail"),
                process: match &outcome {
                    Outcome::Exited { code } => format!("exited {code}"),
                    other => format!("{other:?}"),
                },
                trial_dir: dir.display().to_string(),
            });
            continue; // its files are kept for a human
        }
        let ops = fsmodel::read_log(&log);
        let events = new_events(&dir.join("state"), 0);
        let ev = |kind: &str, f: &dyn Fn(&Value) -> bool| {
            events
                .iter()
                .filter(|e| e["kind"] == kind && f(&e["data"]))
                .count() as u64
        };
        let mut phases = BTreeMap::new();
        let ckname = |p: &Path| {
            p.file_name()
                .map(|n| n == "checkpoint.json" || n == "report.json")
                .unwrap_or(false)
        };
        let atomic = ops
            .iter()
            .filter(|o| match o {
                fsmodel::Op::Rename { to, .. } => ckname(to),
                fsmodel::Op::Open {
                    path, trunc: true, ..
                } => path
                    .file_name()
                    .map(|n| n == "checkpoint.json")
                    .unwrap_or(false),
                _ => false,
            })
            .count() as u64;
        let ws = dir.join("case/workspace");
        let step_writes = ops.iter().filter(|o| matches!(o, fsmodel::Op::Open { path, trunc: true, .. } if path.starts_with(&ws))).count() as u64;
        let applies = ev("tool", &|d| d["tool"] == "apply_migration");
        let calls = |judge: bool| {
            ev("model_call", &|d| (d["role"] == "judge") == judge)
                + ev("model_error", &|d| (d["role"] == "judge") == judge)
        };
        phases.insert(
            Phase::BeforeInProgressCheckpoint.as_str().into(),
            ev("task_start", &|_| true),
        );
        for ph in [
            Phase::TempWritten,
            Phase::AfterFsyncFile,
            Phase::AfterRenameBeforeFsyncDir,
        ] {
            phases.insert(ph.as_str().into(), atomic);
        }
        phases.insert(
            Phase::BetweenMigrationSteps.as_str().into(),
            step_writes.saturating_sub(applies),
        );
        phases.insert(
            Phase::AfterPostBeforeCheckpoint.as_str().into(),
            ev("tool", &|d| {
                d["tool"] == "post_message" && d["is_error"] == false
            }),
        );
        phases.insert(Phase::DuringModelCall.as_str().into(), calls(false));
        phases.insert(Phase::DuringDriftCall.as_str().into(), calls(true));
        phases.insert(
            Phase::BetweenLedgerRecordAndCheckpoint.as_str().into(),
            ev("model_call", &|_| true),
        );
        phases.insert(Phase::DuringResumeVerify.as_str().into(), 1);
        phases.insert(
            Phase::AfterParkBeforeCheckpoint.as_str().into(),
            ev("task_parked", &|_| true),
        );
        phases.insert(
            Phase::AfterDriftGateBeforeCheckpoint.as_str().into(),
            ev("drift", &|_| true),
        );
        let writes = ops
            .iter()
            .filter(|o| matches!(o, fsmodel::Op::Write { .. } | fsmodel::Op::Truncate { .. }))
            .count() as u64;
        let fsyncs = ops
            .iter()
            .filter(|o| matches!(o, fsmodel::Op::Fsync { .. } | fsmodel::Op::FsyncDir { .. }))
            .count() as u64;
        out.push(Calibration {
            phases,
            writes,
            fsyncs,
            wall_us,
            ending: ending.unwrap_or_default(),
            windows: windows::find(&events, &ops, &dir.join("state")),
        });
        if !cfg.keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(PrepareError::Calibration(failures))
    }
}

pub struct Prepared {
    pub cases: Vec<Case>,
    pub calib: Vec<Calibration>,
    pub only: Option<usize>,
    rt: tokio::runtime::Runtime,
    recordings: Recordings,
}

pub fn prepare(cfg: &Config) -> Result<Prepared, PrepareError> {
    let cases = crate::cases::load_all(&cfg.cases_dir).map_err(PrepareError::Case)?;
    let only = match &cfg.case {
        Some(id) => Some(cases.iter().position(|c| &c.id == id).ok_or_else(|| {
            PrepareError::Case(format!(
                "--case {id:?}: no such case under {} (cases: {})",
                cfg.cases_dir.display(),
                cases
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
        None => None,
    };
    if let Some(st) = &cfg.stratum {
        let all: Vec<String> = [Mode::Sigkill, Mode::PowerLoss]
            .iter()
            .flat_map(|m| strata(*m))
            .map(|s| s.label())
            .collect();
        if !all.contains(st) {
            return Err(PrepareError::Setup(format!(
                "--stratum {st:?}: no such stratum (strata: {})",
                all.join(", ")
            )));
        }
    }
    if !cfg.harness_bin.is_file() {
        return Err(PrepareError::Setup(format!(
            "harness binary {} not found (build it: cargo build --release -p harness)",
            cfg.harness_bin.display()
        )));
    }
    std::fs::create_dir_all(&cfg.work_dir)
        .map_err(|e| PrepareError::Setup(format!("{}: {e}", cfg.work_dir.display())))?;
    let recordings = crate::cases::recordings(&cases).map_err(PrepareError::Case)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| PrepareError::Setup(e.to_string()))?;
    let calib = calibrate(cfg, &cases, &rt, &recordings)?;
    Ok(Prepared {
        cases,
        calib,
        only,
        rt,
        recordings,
    })
}

/// The exact command that replays kill `k` of `mode`.
pub fn replay_command(cfg: &Config, mode: Mode, k: usize) -> String {
    let mut s = format!(
        "bench chaos --seed {} --mode {} --replay-kill {k}",
        cfg.seed,
        mode.as_str()
    );
    if let Some(c) = &cfg.case {
        s.push_str(&format!(" --case {c}"));
    }
    // (--stratum only selects which kill indexes run; kill k is the same plan
    // with or without it.)
    if let Some(b) = &cfg.broken {
        s.push_str(&format!(" --broken {b}"));
    }
    if !cfg.replay_extra.is_empty() {
        s.push(' ');
        s.push_str(&cfg.replay_extra);
    }
    s
}

/// Run every kill of one mode.
pub fn run_mode(
    cfg: &Config,
    prep: &Prepared,
    mode: Mode,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> ModeReport {
    let t0 = Instant::now();
    let todo: Vec<usize> = match (cfg.replay_kill, &cfg.stratum) {
        (Some(k), _) => vec![k],
        (None, None) => (0..cfg.kills).collect(),
        (None, Some(st)) => {
            // The stratum of kill k is a pure function of (seed, mode, k).
            let n = strata(mode).len();
            (0..cfg.kills * n)
                .filter(|k| {
                    &plan(cfg.seed, mode, *k, &prep.cases, &prep.calib, prep.only)
                        .stratum
                        .label()
                        == st
                })
                .take(cfg.kills)
                .collect()
        }
    };
    let ctx = Ctx {
        cfg,
        cases: &prep.cases,
        calib: &prep.calib,
        only: prep.only,
        rt: &prep.rt,
        recordings: &prep.recordings,
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(todo.len()));
    let jobs = cfg.jobs.clamp(1, todo.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| worker(&ctx, mode, &todo, &next, &results, progress));
        }
    });
    let mut trials = results.into_inner().unwrap_or_else(|e| e.into_inner());
    trials.sort_by_key(|t| t.plan.k);
    let mut r = ModeReport {
        mode: mode.as_str().into(),
        ..Default::default()
    };
    for inv in Invariant::ALL {
        r.invariants
            .insert(inv.as_str().into(), InvCount::default());
    }
    for t in &trials {
        r.kills += 1;
        r.signals_sent += t.signals_sent;
        r.confirmed_kills += t.confirmed.len() as u64;
        r.exited_before_signal += t.exited_before_signal;
        r.power_cuts += t.power_cuts;
        r.resumes += t.resumes;
        r.kills_during_resume += t.kills_during_resume;
        for ph in &t.confirmed {
            *r.by_phase.entry(ph.clone()).or_insert(0) += 1;
        }
        if let Some(f) = &t.io_fault {
            *r.io_faults.entry(f.clone()).or_insert(0) += 1;
        }
        if let Some((d, _)) = &t.journal_damage {
            *r.journal_damage.entry(d.as_str().to_string()).or_insert(0) += 1;
        }
        if let Some(b) = &t.bit_rot {
            *r.bit_rot.entry(b.clone()).or_insert(0) += 1;
        }
        *r.by_stratum.entry(t.plan.stratum.label()).or_insert(0) += 1;
        *r.endings
            .entry(t.ending.clone().unwrap_or_else(|| "NONE".into()))
            .or_insert(0) += 1;
        if let Some(k) = &t.refusal {
            *r.refusals.entry(k.clone()).or_insert(0) += 1;
        }
        for inv in Invariant::ALL {
            let c = r.invariants.get_mut(inv.as_str()).expect("all inserted");
            c.checked += 1;
            c.exercised += t.exercised[inv.index()] as u64;
            c.violated += t.violations.iter().any(|(v, ..)| *v == inv) as u64;
        }
        for (inv, process, detail) in &t.violations {
            r.violations.push(Violation {
                kill: t.plan.k,
                mode,
                case: t.case_id.clone(),
                invariant: inv.as_str().into(),
                process: *process,
                stratum: format!(
                    "{} ({})",
                    t.plan.stratum.label(),
                    describe_target(&t.plan.first)
                ),
                detail: detail.clone(),
                replay: replay_command(cfg, mode, t.plan.k),
                trial_dir: t.dir.display().to_string(),
            });
        }
    }
    r.wall_s = t0.elapsed().as_secs_f64();
    r
}

pub fn describe_target(t: &Target) -> String {
    match t {
        Target::None => "run to the end".into(),
        Target::Pause { phase, n } => format!("{phase}:{n}"),
        Target::Timer { delay_us } => format!("after {:.1} ms", *delay_us as f64 / 1000.0),
        Target::Fault { spec } => spec.clone(),
    }
}

pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_parse() {
        let s = "ending     GOAL_MET (SUCCESS, exit 0, none)\ngoal       x\n";
        assert_eq!(parse_ending(s), Some(("GOAL_MET".into(), 0)));
        assert_eq!(ending_code("QUEUE_EMPTY_GOAL_UNMET"), Some(3));
        assert_eq!(ending_code("NOPE"), None);
    }

    #[test]
    fn plans_are_reproducible_and_stratified() {
        let cases = crate::cases::load_all(&crate::cases::default_dir()).unwrap();
        let calib: Vec<Calibration> = cases
            .iter()
            .map(|_| Calibration {
                phases: Phase::ALL
                    .iter()
                    .map(|p| (p.as_str().to_string(), 3))
                    .collect(),
                writes: 40,
                fsyncs: 40,
                wall_us: 30_000,
                ending: "GOAL_MET".into(),
                windows: Window::ALL
                    .iter()
                    .map(|w| {
                        (
                            w.as_str().to_string(),
                            vec![("temp_written".to_string(), 2)],
                        )
                    })
                    .collect(),
            })
            .collect();
        for mode in [Mode::Sigkill, Mode::PowerLoss] {
            let n = strata(mode).len();
            let mut seen = BTreeMap::new();
            for k in 0..n * 3 {
                let a = plan(7, mode, k, &cases, &calib, None);
                let b = plan(7, mode, k, &cases, &calib, None);
                assert_eq!(
                    (a.case, &a.first, &a.stratum),
                    (b.case, &b.first, &b.stratum)
                );
                *seen.entry(a.stratum.label()).or_insert(0) += 1;
            }
            assert_eq!(seen.len(), n);
            assert!(seen.values().all(|v| *v == 3), "{seen:?}");
        }
    }

    #[test]
    fn acknowledged_checkpoint_writes() {
        use serde_json::json;
        let st = Path::new("/s");
        let ops: Vec<fsmodel::Op> = [
            json!({"op":"open","fd":1,"path":"/s/.checkpoint.json.tmp-1-0","created":true,"trunc":false,"append":false}),
            json!({"op":"write","fd":1,"off":0,"data":hex::encode("A"),"ok":true}),
            json!({"op":"fsync","fd":1}),
            json!({"op":"rename","from":"/s/.checkpoint.json.tmp-1-0","to":"/s/checkpoint.json"}),
            json!({"op":"fsync_dir","path":"/s"}),
            json!({"op":"open","fd":2,"path":"/s/ledger.jsonl","created":false,"trunc":false,"append":true}),
            json!({"op":"open","fd":3,"path":"/s/.checkpoint.json.tmp-1-1","created":true,"trunc":false,"append":false}),
            json!({"op":"write","fd":3,"off":0,"data":hex::encode("B"),"ok":true}),
            json!({"op":"fsync","fd":3}),
            json!({"op":"rename","from":"/s/.checkpoint.json.tmp-1-1","to":"/s/checkpoint.json"}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let (c, a) = checkpoint_writes(&ops, st, false);
        assert_eq!(c, vec![b"A".to_vec(), b"B".to_vec()]);
        assert_eq!(
            a,
            Some(0),
            "B was renamed but the harness had not gone on from it"
        );
        assert_eq!(checkpoint_writes(&ops, st, true).1, Some(1));
    }
}
