//! What the oracle sees of a trial: its paths, the disk at one moment (read
//! by the oracle's own readers, never by the harness's), and what one
//! harness process did.

use crate::cases::Case;
use crate::fsmodel;
use crate::harness_files::{self, Event, NotAReport, Report};
use crate::oracle::{self, Ckpt, Effect, Journal};
use crate::proc::Outcome;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A trial's files: a fresh copy of the case, the state dir, the logs.
pub(super) struct Paths {
    pub spec: PathBuf,
    pub state: PathBuf,
    pub ws: PathBuf,
    pub outbox: PathBuf,
    pub logs: PathBuf,
}

impl Paths {
    /// Copy `case` into `dir` (made anew) and lay out the state and log dirs.
    pub fn make(dir: &Path, case: &Case) -> std::io::Result<Paths> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        crate::cases::copy_tree(&case.dir, &dir.join("case"))?;
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
    }
}

/// The disk as the oracle reads it at one moment.
#[derive(Clone)]
pub(super) struct Obs {
    pub ckpt: Ckpt,
    pub journal: Journal,
    pub outbox: BTreeMap<String, usize>,
    pub migrations: BTreeMap<String, Effect>,
    /// The task in flight in the checkpoint and what the disk says of it.
    pub inflight: Option<(String, Effect)>,
    pub events_len: u64,
    /// report.json (none when absent or not a report).
    pub report: Option<Report>,
}

impl Obs {
    /// Whether the checkpoint is of a run still going (or there is none):
    /// a finished run is re-reported, never resumed.
    pub fn resumable(&self) -> bool {
        self.ckpt
            .state()
            .map(|s| s.finished.is_none())
            .unwrap_or(true)
    }
}

pub(super) fn observe(p: &Paths, case: &Case) -> Obs {
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
        events_len: harness_files::events_len(&p.state),
        report: harness_files::read_report(&p.state).ok().flatten(),
    }
}

/// What one process did, as the checks need it.
pub(super) struct Proc {
    pub idx: usize,
    pub outcome: Outcome,
    pub stdout: String,
    pub stderr: String,
    pub ops: Vec<fsmodel::Op>,
    pub spawn: Obs,
    pub end: Obs,
    /// The report an exited process published, read as it exited (before
    /// any power cut): report.json, or the copy on its stderr when it says
    /// it could not write the file. `None` when it published none.
    pub published: Option<Result<Report, NotAReport>>,
    /// New lines of events.jsonl written by this process.
    pub events: Vec<Event>,
    pub fault_fired: Option<i32>,
    pub crashed: bool,
}

impl Proc {
    /// The exit code, for a process that exited.
    pub fn exited(&self) -> Option<i32> {
        self.outcome.exit_code()
    }
}

/// The report a process that just exited published (see [`Proc::published`]).
pub(super) fn published_report(state: &Path, stderr: &str) -> Option<Result<Report, NotAReport>> {
    harness_files::report_on_stderr(stderr)
        .or_else(|| harness_files::read_report(state).transpose())
}
