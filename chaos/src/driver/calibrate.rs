//! The clean calibration run: one pass of every case with no fault injected,
//! to learn how often each phase is reached, the write and fsync counts and
//! the kill windows that the plans draw from. A clean run that misses its
//! case's expected ending is a finding about the harness.

use super::config::Config;
use crate::cases::{copy_tree, Case};
use crate::fsmodel::{self, Op};
use crate::harness_files::{self, Event};
use crate::proc::{self, Outcome, Spawn, Target};
use crate::windows;
use harness::chaos_hook::Phase;
use harness::invocation::{HarnessInvocation, ModelSource};
use harness::replay::{Recordings, ReplayOptions, ReplayServer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// The fsyncs (n of `<errno>:fsync:<n>`) that make a workspace write's
    /// rename durable: a fault there leaves the write in doubt
    /// (`io_sites::in_doubt_fsyncs`).
    pub in_doubt_fsyncs: Vec<u64>,
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
    let server = rt
        .block_on(ReplayServer::start(
            recordings.clone(),
            ReplayOptions {
                strict: false,
                latency_scale: 0.0,
                capture: true,
                serve_as_run: None,
                ..Default::default()
            },
        ))
        .map_err(|e| PrepareError::Setup(format!("cannot start the replay server: {e}")))?;
    let mut out = vec![];
    let mut failures = vec![];
    for (ci, case) in cases.iter().enumerate() {
        match calibrate_case(cfg, &server, ci, case)? {
            Ok(c) => out.push(c),
            Err(f) => failures.push(f),
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(PrepareError::Calibration(failures))
    }
}

/// One clean run of case `ci`: its calibration, or the failure to reach its
/// expected ending (its files are then kept for a human).
fn calibrate_case(
    cfg: &Config,
    server: &ReplayServer,
    ci: usize,
    case: &Case,
) -> Result<Result<Calibration, CalibrationFailure>, PrepareError> {
    let dir = fresh_dir(cfg, case)?;
    let state = dir.join("state");
    let log = dir.join("ops.jsonl");
    let run_index = 0x00FF_0000 + ci as u32;
    let s = clean_spawn(cfg, server, case, &dir, run_index);
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
    let _ = server.take_captured(&case.replay_case, run_index);
    let ending = match reached_ending(case, &outcome, &dir) {
        Ok(e) => e,
        Err(f) => return Ok(Err(*f)),
    };
    let ops = fsmodel::read_log(&log);
    let events = harness_files::events_from(&state, 0);
    let c = Calibration {
        phases: phase_counts(&events, &ops, &dir.join("case/workspace")),
        writes: ops
            .iter()
            .filter(|o| matches!(o, Op::Write { .. } | Op::Truncate { .. }))
            .count() as u64,
        fsyncs: ops
            .iter()
            .filter(|o| matches!(o, Op::Fsync { .. } | Op::FsyncDir { .. }))
            .count() as u64,
        wall_us,
        ending,
        windows: windows::find(&events, &ops, &state),
        in_doubt_fsyncs: crate::io_sites::in_doubt_fsyncs(&ops, &dir.join("case/workspace")),
    };
    if !cfg.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(Ok(c))
}

/// An empty calibration dir holding a fresh copy of the case and its state
/// dir (a kept one from an earlier run would skew the counts).
fn fresh_dir(cfg: &Config, case: &Case) -> Result<PathBuf, PrepareError> {
    let setup = |e: std::io::Error| PrepareError::Setup(format!("calibration: {e}"));
    let dir = cfg.work_dir.join(format!("calibrate-{}", case.id));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(setup)?;
    let dir = dir.canonicalize().map_err(setup)?;
    copy_tree(&case.dir, &dir.join("case")).map_err(setup)?;
    std::fs::create_dir_all(dir.join("state")).map_err(setup)?;
    Ok(dir)
}

/// The clean run's process: the simfs operation log on (the counts and
/// windows are read from it), and the broken variant if one is tested.
fn clean_spawn(
    cfg: &Config,
    server: &ReplayServer,
    case: &Case,
    dir: &Path,
    run_index: u32,
) -> Spawn {
    let mut env = vec![
        (
            harness::simfs::LOG_ENV.to_string(),
            dir.join("ops.jsonl").display().to_string(),
        ),
        ("TMPDIR".into(), cfg.work_dir.display().to_string()),
    ];
    if let Some(b) = &cfg.broken {
        env.push((harness::simfs::BROKEN_ENV.into(), b.clone()));
    }
    let mut invocation = HarnessInvocation::run(
        dir.join("case/run.toml"),
        dir.join("state"),
        ModelSource::BaseUrl(server.base_url_for(&case.replay_case, run_index)),
    );
    for (k, v) in env {
        invocation = invocation.env(k, v);
    }
    Spawn {
        kill: proc::Kill::Sigkill,
        harness: cfg.harness_bin.clone(),
        invocation,
        stdout: dir.join("stdout"),
        timeout: cfg.proc_timeout,
    }
}

/// The clean run's ending when it is the case's expected one, with its
/// exit code, else why calibration fails.
fn reached_ending(
    case: &Case,
    outcome: &Outcome,
    dir: &Path,
) -> Result<String, Box<CalibrationFailure>> {
    // The ending is the harness's report.json, never its stdout: the
    // report is the contract, and a harness that printed one ending and
    // reported another must not pass calibration on its word.
    let report = harness_files::read_report(&dir.join("state"))
        .ok()
        .flatten();
    let ending = report.as_ref().and_then(|r| r.ending.clone());
    let expected = case.expected_ending.as_str().to_string();
    let code = outcome.exit_code();
    let reached = ending.as_deref() == Some(expected.as_str())
        && code == Some(case.expected_ending.exit_code())
        && report.as_ref().and_then(|r| r.exit_code)
            == Some(case.expected_ending.exit_code() as i64);
    if reached {
        return Ok(ending.unwrap_or_default());
    }
    Err(Box::new(CalibrationFailure {
        case: case.id.clone(),
        expected_ending: expected,
        ending,
        exit_code: code,
        error_kind: report.as_ref().and_then(|r| r.error_kind.clone()),
        detail: report.as_ref().and_then(|r| r.detail.clone()),
        process: match outcome {
            Outcome::Exited { code } => format!("exited {code}"),
            other => format!("{other:?}"),
        },
        trial_dir: dir.display().to_string(),
    }))
}

/// How often a clean run reached each phase, from its events and its
/// operation log (`ws`: the case's workspace).
fn phase_counts(events: &[Event], ops: &[Op], ws: &Path) -> BTreeMap<String, u64> {
    let ev = |f: &dyn Fn(&Event) -> bool| events.iter().filter(|e| f(e)).count() as u64;
    let ckname = |p: &Path| {
        p.file_name()
            .map(|n| n == "checkpoint.json" || n == "report.json")
            .unwrap_or(false)
    };
    let atomic = ops
        .iter()
        .filter(|o| match o {
            Op::Rename { to, .. } => ckname(to),
            Op::Open {
                path, trunc: true, ..
            } => path
                .file_name()
                .map(|n| n == "checkpoint.json")
                .unwrap_or(false),
            _ => false,
        })
        .count() as u64;
    let step_writes = ops
        .iter()
        .filter(|o| matches!(o, Op::Open { path, trunc: true, .. } if path.starts_with(ws)))
        .count() as u64;
    let applies = ev(&|e| matches!(e, Event::Tool { tool, .. } if tool == "apply_migration"));
    // Model calls that ended, by role (a call in flight is during_*_call).
    let calls =
        |judge: bool| ev(&|e| matches!(e, Event::ModelCall { judge: j, .. } if *j == judge));
    let mut phases = BTreeMap::new();
    phases.insert(
        Phase::BeforeInProgressCheckpoint.as_str().into(),
        ev(&|e| matches!(e, Event::TaskStart { .. })),
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
        ev(&|e| matches!(e, Event::Tool { tool, succeeded: true } if tool == "post_message")),
    );
    phases.insert(Phase::DuringModelCall.as_str().into(), calls(false));
    phases.insert(Phase::DuringDriftCall.as_str().into(), calls(true));
    phases.insert(
        Phase::BetweenLedgerRecordAndCheckpoint.as_str().into(),
        ev(&|e| matches!(e, Event::ModelCall { ok: true, .. })),
    );
    phases.insert(Phase::DuringResumeVerify.as_str().into(), 1);
    phases.insert(
        Phase::AfterParkBeforeCheckpoint.as_str().into(),
        ev(&|e| matches!(e, Event::TaskParked { .. })),
    );
    phases.insert(
        Phase::AfterDriftGateBeforeCheckpoint.as_str().into(),
        ev(&|e| matches!(e, Event::Drift { .. })),
    );
    phases.insert(
        Phase::AfterCompactBeforeCheckpoint.as_str().into(),
        ev(&|e| matches!(e, Event::Compaction { .. })),
    );
    phases
}

/// Why the driver could not start its kills. Here, not in prepare.rs
/// (which calls `calibrate`), because calibration fails with it too.
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
