//! Kill windows: the short stretches of a run where a decision is made in
//! memory and its checkpoint is still to come. Right after a park, during a
//! replan, between the drift gate and its checkpoint, and around a
//! compaction are where a skipped or late checkpoint makes a resume redo
//! what was decided (run a parked task again, execute a pruned one, send a
//! recorded compaction again). A named phase alone does not reach them: the
//! kill has to land at the right occurrence of the phase, which the clean
//! calibration run tells. Each window is a list of (phase, occurrence) kill
//! targets, read from the clean run's events (the order of parks, drift
//! checks, compactions and model calls) and its operation log (the order of atomic writes,
//! each checkpoint's body decoded to see what it records).

use crate::fsmodel::Op;
use crate::harness_files::Event;
use harness::chaos_hook::Phase;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// A task was parked: the park itself, the checkpoint that records it,
    /// and the next model call (in flight, and answered).
    AfterPark,
    /// A `replan/<n>` call in flight, just after it (booked, not yet
    /// checkpointed), and the checkpoint that records the new tasks.
    DuringReplan,
    /// The drift gate has changed the queue and its checkpoint is on its
    /// way: after the gate, and the checkpoint write itself. Drift checks
    /// that pruned are preferred; a case whose checks never prune offers all.
    DriftCheckpoint,
    /// A `compact/<n>` call in flight and answered, its outcome applied
    /// (`after_compact_before_checkpoint`), the checkpoint that records it,
    /// and the next model call (in flight, and answered): a kill before that
    /// checkpoint loses the attempt, one after it must never see
    /// `compact/<n>` sent again.
    Compaction,
}

impl Window {
    pub const ALL: [Window; 4] = [
        Window::AfterPark,
        Window::DuringReplan,
        Window::DriftCheckpoint,
        Window::Compaction,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Window::AfterPark => "after_park",
            Window::DuringReplan => "during_replan",
            Window::DriftCheckpoint => "drift_checkpoint",
            Window::Compaction => "compaction",
        }
    }
}

/// (phase wire name, occurrence n, 1-based within the first process).
pub type Target = (String, u64);

/// Every atomic write of the run, in order (the n-th is the n-th time the
/// harness reaches `temp_written`, `after_fsync_file` and
/// `after_rename_before_fsync_dir`), with the run state for checkpoint writes.
fn atomic_writes(ops: &[Op], state: &Path) -> Vec<Option<harness::state::RunState>> {
    let ck = harness::checkpoint::path_in(state);
    let tmp_of = |p: &Path, name: &str| {
        p.parent() == Some(state)
            && p.file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .starts_with(&format!(".{name}{}", harness::durable::TEMP_MARKER))
                })
                .unwrap_or(false)
    };
    // write index -> (fd, bytes) for checkpoint writes
    let mut writes: Vec<Option<(u64, Vec<u8>)>> = vec![];
    for op in ops {
        match op {
            Op::Open {
                fd,
                path,
                created: true,
                ..
            } if tmp_of(path, harness::checkpoint::FILE_NAME) => {
                writes.push(Some((*fd, vec![])));
            }
            Op::Open {
                fd,
                path,
                trunc: true,
                ..
            } if *path == ck => {
                writes.push(Some((*fd, vec![]))); // in place (a broken variant)
            }
            Op::Open {
                path,
                created: true,
                ..
            } if tmp_of(path, harness::report::FILE_NAME) => {
                writes.push(None);
            }
            Op::Write { fd, off, .. } => {
                let data = op.write_bytes();
                if let Some(Some((_, b))) = writes
                    .iter_mut()
                    .rev()
                    .find(|w| matches!(w, Some((f, _)) if f == fd))
                {
                    let o = off.unwrap_or(b.len() as u64) as usize;
                    if b.len() < o + data.len() {
                        b.resize(o + data.len(), 0);
                    }
                    b[o..o + data.len()].copy_from_slice(&data);
                }
            }
            _ => {}
        }
    }
    writes
        .into_iter()
        .map(|w| w.and_then(|(_, b)| harness::checkpoint::decode(&b, None).ok()))
        .collect()
}

fn write_targets(w: usize) -> Vec<Target> {
    [
        Phase::TempWritten,
        Phase::AfterFsyncFile,
        Phase::AfterRenameBeforeFsyncDir,
    ]
    .iter()
    .map(|p| (p.as_str().to_string(), w as u64 + 1))
    .collect()
}

/// The kill targets of every window in one clean run.
pub fn find(events: &[Event], ops: &[Op], state: &Path) -> BTreeMap<String, Vec<Target>> {
    let mut f = Finder {
        writes: atomic_writes(ops, state),
        ..Finder::default()
    };
    for e in events {
        match e {
            Event::ModelCall {
                ok,
                judge,
                call_key,
            } => f.model_call(*ok, *judge, call_key.as_deref()),
            Event::TaskParked { .. } => f.parked(),
            Event::Drift { pruned_any } => f.drift(*pruned_any),
            Event::Compaction { call_key } => f.compaction(call_key),
            _ => {}
        }
    }
    f.into_windows()
}

fn t(p: Phase, n: u64) -> Target {
    (p.as_str().to_string(), n)
}

/// The windows' targets gathered over one clean run's events, with the
/// counts that number each phase's occurrences.
#[derive(Default)]
struct Finder {
    /// The state each atomic write put on disk (None: not a checkpoint).
    writes: Vec<Option<harness::state::RunState>>,
    after_park: Vec<Target>,
    replan: Vec<Target>,
    drift_all: Vec<Target>,
    drift_pruning: Vec<Target>,
    compaction: Vec<Target>,
    booked: u64,
    calls: u64,
    judge_calls: u64,
    parks: u64,
    drifts: u64,
    compactions: u64,
    /// Parks, and compactions, still waiting for the model call that follows them.
    waiting: usize,
    waiting_compact: usize,
}

impl Finder {
    /// The three targets of the first checkpoint write whose state passes `f`.
    fn first_write(&self, f: &dyn Fn(&harness::state::RunState) -> bool) -> Vec<Target> {
        self.writes
            .iter()
            .position(|s| s.as_ref().is_some_and(f))
            .map(write_targets)
            .unwrap_or_default()
    }

    fn model_call(&mut self, ok: bool, judge: bool, call_key: Option<&str>) {
        let in_flight = if judge {
            self.judge_calls += 1;
            t(Phase::DuringDriftCall, self.judge_calls)
        } else {
            self.calls += 1;
            t(Phase::DuringModelCall, self.calls)
        };
        self.booked += ok as u64;
        let mut here = vec![in_flight];
        if ok {
            here.push(t(Phase::BetweenLedgerRecordAndCheckpoint, self.booked));
        }
        for _ in 0..std::mem::take(&mut self.waiting) {
            self.after_park.extend(here.iter().cloned());
        }
        for _ in 0..std::mem::take(&mut self.waiting_compact) {
            self.compaction.extend(here.iter().cloned());
        }
        if call_key.and_then(crate::compaction::index_of).is_some() {
            self.compaction.extend(here.iter().cloned());
        }
        if let Some(k) = call_key
            .and_then(|k| k.strip_prefix("replan/"))
            .and_then(|k| k.parse::<u32>().ok())
        {
            self.replan.extend(here);
            let w = self.first_write(&|s| s.replans > k);
            self.replan.extend(w);
        }
    }

    fn parked(&mut self) {
        self.parks += 1;
        self.waiting += 1;
        self.after_park
            .push(t(Phase::AfterParkBeforeCheckpoint, self.parks));
        let p = self.parks as usize;
        let w = self.first_write(&|s| s.parked.len() >= p);
        self.after_park.extend(w);
    }

    fn drift(&mut self, pruned_any: bool) {
        self.drifts += 1;
        let n = self.drifts as usize;
        let mut here = vec![t(Phase::AfterDriftGateBeforeCheckpoint, self.drifts)];
        here.extend(self.first_write(&|s| s.drift_history.len() >= n));
        if pruned_any {
            self.drift_pruning.extend(here.iter().cloned());
        }
        self.drift_all.extend(here);
    }

    fn compaction(&mut self, call_key: &str) {
        self.compactions += 1;
        self.waiting_compact += 1;
        self.compaction
            .push(t(Phase::AfterCompactBeforeCheckpoint, self.compactions));
        if let Some(n) = crate::compaction::index_of(call_key) {
            let w = self.first_write(&|s| s.compaction_attempts > n);
            self.compaction.extend(w);
        }
    }

    /// Drift checks that pruned are preferred; a case whose checks never
    /// prune offers all (`Window::DriftCheckpoint`).
    fn into_windows(self) -> BTreeMap<String, Vec<Target>> {
        let drift = if self.drift_pruning.is_empty() {
            self.drift_all
        } else {
            self.drift_pruning
        };
        [
            (Window::AfterPark, self.after_park),
            (Window::DuringReplan, self.replan),
            (Window::DriftCheckpoint, drift),
            (Window::Compaction, self.compaction),
        ]
        .into_iter()
        .map(|(w, v)| (w.as_str().to_string(), v))
        .collect()
    }
}
