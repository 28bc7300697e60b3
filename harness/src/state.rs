//! The run state that checkpoints carry. Artifacts are stored by path and the
//! history as a compacted summary (one line per finished task), never the raw
//! transcript, so a checkpoint stays a few kilobytes and resume is no prefill.

use crate::ending::{Ending, ErrorKind};
use crate::ledger::LedgerSnapshot;
use crate::task::Task;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Bounded so a runaway planner cannot grow the state without limit.
pub const QUEUE_MAX_TASKS: usize = 500;
pub const HISTORY_SUMMARY_MAX_LINES: usize = 200;
/// The compaction attempts a checkpoint keeps (the oldest dropped first);
/// `compaction_attempts` still counts them all.
pub const COMPACTIONS_MAX: usize = 100;

/// The checkpoint schema this build writes and reads (`checkpoint::SCHEMA_VERSION`).
pub const SCHEMA_VERSION: u32 = 1;

// Where a drift score falls against the spec's thresholds (drift.rs decides
// it). No doc comment: report.schema.json carries doc comments as descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Aligned,
    Prune,
    Halt,
}

crate::wire::wire_names! {
    /// How a compaction attempt ended: report.json's `compactions[].outcome`.
    pub enum CompactOutcome {
        /// The summary replaced the history.
        Ok = "ok",
        /// The reply was no usable summary: the history was kept.
        Malformed = "malformed",
        /// The ledger refused its reserve: no call, the history was kept.
        Refused = "refused",
        /// The call failed: the history was kept.
        Error = "error",
    }
}

/// One `compact/<n>` attempt, kept for the report and for resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Compaction {
    pub call_key: String,
    /// Tasks finished when it was made.
    pub step: u64,
    pub bytes_before: u64,
    /// The history's bytes afterwards (equal to before unless `ok`).
    pub bytes_after: u64,
    /// What the ledger booked for it (0 for a refused reserve).
    pub cost_usd: f64,
    pub outcome: CompactOutcome,
    /// Why it was not `ok`.
    pub detail: Option<String>,
}

crate::wire::wire_names! {
    /// When the harness's verification found a task done: report.json's and
    /// the checkpoint's `verified[].how`, events.jsonl's `task_done.how`.
    /// Never the model's word (that is `model_claim`).
    pub enum VerifiedHow {
        /// Its verify passed right after the task ran.
        Verified = "verified",
        /// A resume found it in flight and verified it, never re-executing it.
        OnResume = "verified_on_resume",
        /// The run ended with it in flight and the final settle verified it.
        AtEnd = "verified_at_end",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompletedTask {
    pub id: String,
    pub description: String,
    pub verify: String,
    pub step: u64,
    /// The model's own final words about the task. An input to the report,
    /// never the basis of a verdict.
    pub model_claim: Option<String>,
    /// How it was found done (always by the harness's verification).
    pub how: VerifiedHow,
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParkedTask {
    pub id: String,
    pub description: String,
    pub reason: String,
    pub step: u64,
    /// Workspace paths this task's tools wrote: left uncommitted in the work
    /// tree for a human (never committed under another task).
    #[serde(default)]
    pub uncommitted_paths: Vec<String>,
}

/// A workspace write whose rename landed but whose directory fsync failed:
/// its content may not survive a power cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteInDoubt {
    pub path: String,
    /// The tool's error (names the errno).
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrunedTask {
    pub id: String,
    pub description: String,
    pub drift_step: u64,
    pub drift_score: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RejectedTask {
    pub id: String,
    pub origin: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriftPoint {
    pub step: u64,
    pub score: f64,
    pub band: Band,
    pub off_goal_task_ids: Vec<String>,
    pub reasoning: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelClaim {
    pub task_id: String,
    pub text: String,
    /// What the harness's verification said at the time.
    pub verified: bool,
}

/// Why a run ended, kept in the final checkpoint so a re-run of the same
/// command re-reports instead of starting over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    pub ending: Ending,
    pub detail: Option<String>,
    pub error_kind: Option<ErrorKind>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub schema_version: u32,
    pub run_id: String,
    pub goal_sha256: String,
    /// Copied from the spec for `harness status`, which reads only the state dir.
    pub hard_cap_usd: f64,
    pub started_at_unix_ms: u64,
    /// How long the run had run at this checkpoint, on the monotonic clock
    /// of each process that ran it (crate::clock): what the wall-clock
    /// limit counts. Absent in older checkpoints: 0.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// Tasks finished (verified or parked); the drift cadence counts these.
    pub step: u64,
    pub planned: bool,
    pub queue: Vec<Task>,
    pub in_progress: Option<Task>,
    pub completed: Vec<CompletedTask>,
    pub parked: Vec<ParkedTask>,
    pub pruned: Vec<PrunedTask>,
    pub rejected: Vec<RejectedTask>,
    /// Written only by the drift gate.
    pub drift_score: f64,
    pub drift_history: Vec<DriftPoint>,
    pub no_progress_streak: u32,
    pub replans: u32,
    pub ledger: LedgerSnapshot,
    pub history_summary: Vec<String>,
    /// The last `COMPACTIONS_MAX` compaction attempts.
    #[serde(default)]
    pub compactions: Vec<Compaction>,
    /// Every compaction attempt ever made: the `<n>` of the next `compact/<n>`.
    #[serde(default)]
    pub compaction_attempts: u32,
    /// Episodic memory: the admitted lessons, oldest first, at most
    /// `lessons::LESSONS_MAX` of them and `LESSONS_MAX_BYTES` in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons: Vec<Lesson>,
    /// Admitted lessons dropped to keep those bounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lessons_dropped: u64,
    /// Limits an operator raised after the run ended on them (the ledger
    /// journal holds each too), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limit_raises: Vec<crate::ledger::LimitRaise>,
    /// The last `lessons::LESSON_REFUSALS_MAX` lessons not admitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons_refused: Vec<RefusedLesson>,
    /// Every lesson call the run made (bounded by `LESSON_CALLS_MAX`).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub lesson_calls: u32,
    pub artifacts: Vec<String>,
    pub model_claims: Vec<ModelClaim>,
    pub git_branch: Option<String>,
    /// Why nothing is committed in this run (the run branch could not be made
    /// or checked out). Once set it stays set: no commit lands on another branch.
    #[serde(default)]
    pub git_disabled: Option<String>,
    /// Writes that may not be durable; while any is listed the run never
    /// ends GOAL_MET (it ends UNRECOVERABLE_ERROR naming them).
    #[serde(default)]
    pub writes_in_doubt: Vec<WriteInDoubt>,
    pub resumes: u32,
    /// Number of requests that carried the budget notice.
    pub budget_notices: u64,
    pub finished: Option<Finished>,
}

// A run without `[memory] lessons` writes the checkpoint it always did.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

impl RunState {
    pub fn new(run_id: String, goal_sha256: String, started_at_unix_ms: u64) -> RunState {
        RunState {
            schema_version: SCHEMA_VERSION,
            run_id,
            goal_sha256,
            hard_cap_usd: 0.0,
            started_at_unix_ms,
            elapsed_ms: 0,
            step: 0,
            planned: false,
            queue: vec![],
            in_progress: None,
            completed: vec![],
            parked: vec![],
            pruned: vec![],
            rejected: vec![],
            drift_score: 0.0,
            drift_history: vec![],
            no_progress_streak: 0,
            replans: 0,
            ledger: LedgerSnapshot::default(),
            history_summary: vec![],
            compactions: vec![],
            compaction_attempts: 0,
            lessons: vec![],
            lessons_dropped: 0,
            limit_raises: vec![],
            lessons_refused: vec![],
            lesson_calls: 0,
            artifacts: vec![],
            model_claims: vec![],
            git_branch: None,
            git_disabled: None,
            writes_in_doubt: vec![],
            resumes: 0,
            budget_notices: 0,
            finished: None,
        }
    }

    /// Every task id the run has ever seen, in any list.
    pub fn known_ids(&self) -> BTreeSet<String> {
        let mut s = BTreeSet::new();
        s.extend(self.queue.iter().map(|t| t.id.clone()));
        s.extend(self.in_progress.iter().map(|t| t.id.clone()));
        s.extend(self.completed.iter().map(|t| t.id.clone()));
        s.extend(self.parked.iter().map(|t| t.id.clone()));
        s.extend(self.pruned.iter().map(|t| t.id.clone()));
        s
    }

    pub fn push_history(&mut self, line: String) {
        if self.history_summary.len() >= HISTORY_SUMMARY_MAX_LINES {
            self.history_summary.remove(0);
        }
        self.history_summary.push(line);
    }

    /// The history's size as a compaction prompt carries it: each line plus
    /// its `- ` and newline.
    pub fn history_bytes(&self) -> u64 {
        (self.history_summary.iter())
            .map(|l| l.len() as u64 + 3)
            .sum()
    }

    pub fn push_compaction(&mut self, c: Compaction) {
        if self.compactions.len() >= COMPACTIONS_MAX {
            self.compactions.remove(0);
        }
        self.compactions.push(c);
    }

    /// Keep an admitted lesson; the oldest go first to hold the count and
    /// byte bounds.
    pub fn push_lesson(&mut self, l: Lesson) {
        self.lessons.push(l);
        while self.lessons.len() > LESSONS_MAX
            || self.lessons.iter().map(|l| l.bytes()).sum::<usize>() > LESSONS_MAX_BYTES
        {
            self.lessons.remove(0);
            self.lessons_dropped += 1;
        }
    }

    pub fn push_lesson_refusal(&mut self, r: RefusedLesson) {
        if self.lessons_refused.len() >= LESSON_REFUSALS_MAX {
            self.lessons_refused.remove(0);
        }
        self.lessons_refused.push(r);
    }

    /// Asserted right before a checkpoint is written and right after one is
    /// read: a task lives in exactly one place, numbers are sane.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        let all = self
            .queue
            .iter()
            .map(|t| ("queue", t.id.as_str()))
            .chain(
                self.in_progress
                    .iter()
                    .map(|t| ("in_progress", t.id.as_str())),
            )
            .chain(self.completed.iter().map(|t| ("completed", t.id.as_str())))
            .chain(self.parked.iter().map(|t| ("parked", t.id.as_str())))
            .chain(self.pruned.iter().map(|t| ("pruned", t.id.as_str())));
        for (list, id) in all {
            if !seen.insert(id) {
                return Err(format!("task {id:?} appears twice (again in {list})"));
            }
        }
        if self.queue.len() > QUEUE_MAX_TASKS {
            return Err(format!(
                "queue holds {} tasks, over the {QUEUE_MAX_TASKS} limit",
                self.queue.len()
            ));
        }
        if !(self.drift_score.is_finite() && (0.0..=1.0).contains(&self.drift_score)) {
            return Err(format!("drift_score {} outside [0, 1]", self.drift_score));
        }
        if !(self.ledger.spent_usd.is_finite() && self.ledger.spent_usd >= 0.0) {
            return Err(format!(
                "spent_usd {} is not a non-negative number",
                self.ledger.spent_usd
            ));
        }
        if self.goal_sha256.len() != 64 || !self.goal_sha256.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err("goal_sha256 is not a SHA-256 hex digest".into());
        }
        if self.lessons.len() > LESSONS_MAX
            || self.lessons.iter().map(|l| l.bytes()).sum::<usize>() > LESSONS_MAX_BYTES
        {
            return Err(format!(
                "{} lessons are kept, over the {} / {}-byte bounds",
                self.lessons.len(),
                LESSONS_MAX,
                LESSONS_MAX_BYTES
            ));
        }
        if self.finished.is_some() && self.in_progress.is_some() {
            return Err("a finished run still has a task in progress".into());
        }
        Ok(())
    }

    /// A realistic state with `n` tasks spread over the lists, for benchmarks
    /// and tests of the checkpoint.
    #[doc(hidden)]
    pub fn example(n: usize) -> RunState {
        use crate::verify::Verify;
        let mut s = RunState::new(
            "run-example".into(),
            crate::goal::sha256_hex("Reduce p95 latency on /api/search to under 200ms."),
            1_700_000_000_000,
        );
        s.planned = true;
        for i in 0..n {
            let t = Task {
                id: format!("t{i}"),
                description: format!("Add an index on search_events(created_at) for query family {i} and re-measure p95 on /api/search"),
                verify: Verify::FileContains { path: format!("db/migrations/{i:04}_index.sql"), text: "CREATE INDEX CONCURRENTLY".into() },
                origin: "plan".into(),
                attempts: 0,
            };
            match i % 4 {
                0 | 1 => s.completed.push(CompletedTask {
                    id: t.id.clone(),
                    description: t.description.clone(),
                    verify: "file_contains".into(),
                    step: i as u64,
                    model_claim: Some("Added the index; p95 should drop.".into()),
                    how: VerifiedHow::Verified,
                    commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
                }),
                2 => s.queue.push(t),
                _ => s.parked.push(ParkedTask {
                    id: t.id,
                    description: t.description,
                    reason: "verification failed after 2 attempts: not_started".into(),
                    step: i as u64,
                    uncommitted_paths: vec![],
                }),
            }
            s.push_history(format!("step {i}: task t{i} verified"));
            s.artifacts.push(format!("db/migrations/{i:04}_index.sql"));
        }
        s.step = n as u64;
        s
    }
}

// --- episodic memory's records and the checkpoint's caps on them (lessons.rs
// writes them; they are defined here so the state needs nothing above it) ---

/// Admitted lessons a checkpoint keeps; the oldest is dropped first.
pub const LESSONS_MAX: usize = 20;
/// ... and their total bytes (the four fields), the oldest dropped first.
pub const LESSONS_MAX_BYTES: usize = 8 * 1024;
/// Refused lessons a checkpoint keeps (the report counts them all).
pub const LESSON_REFUSALS_MAX: usize = 100;

crate::wire::wire_names! {
    /// Why a lesson was not admitted: report.json's `lessons_refused[].reason`.
    pub enum LessonRefusal {
        /// The reply was no lesson object (no JSON, a field missing or empty).
        Malformed = "malformed",
        /// A field over [`LESSON_FIELD_MAX_CHARS`].
        TooLong = "too_long",
        /// It names the run's controls (goal, verification, budget, harness...).
        Steers = "steers",
        /// Its evidence names nothing concrete the attempt saw or the workspace holds.
        Vague = "vague",
        /// It says what the task already says.
        RestatesTask = "restates_task",
        /// An admitted lesson already says it.
        Duplicate = "duplicate",
        /// The ledger refused the call's reserve: no call was made.
        CallRefused = "call_refused",
        /// The endpoint failed the call.
        CallFailed = "call_failed",
        /// Not asked: the run is winding down, or has made its
        /// [`LESSON_CALLS_MAX`] lesson calls.
        NotAsked = "not_asked",
    }
}

crate::wire::wire_names! {
    /// Where a lesson's concrete token was found.
    pub enum AnchorSource {
        /// In the failed attempt's tool calls or results.
        Observation = "observation",
        /// A path that exists in the workspace.
        Workspace = "workspace",
    }
}

/// An admitted lesson, as the checkpoint and the report keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lesson {
    pub call_key: String,
    pub task_id: String,
    /// The failed attempt it came from (0-based, as in `execute/<task>/a<n>`).
    pub attempt: u32,
    /// Tasks finished when it was learned.
    pub step: u64,
    pub constraint: String,
    pub cause: String,
    pub workaround: String,
    pub evidence: String,
    /// The concrete token the harness found it rests on, and where.
    pub anchor: String,
    pub anchor_in: AnchorSource,
    /// What the ledger booked for the call.
    pub cost_usd: f64,
}

impl Lesson {
    pub fn bytes(&self) -> usize {
        self.constraint.len() + self.cause.len() + self.workaround.len() + self.evidence.len()
    }
}

/// A lesson not admitted, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RefusedLesson {
    pub call_key: String,
    pub task_id: String,
    pub attempt: u32,
    pub step: u64,
    pub reason: LessonRefusal,
    pub detail: String,
    /// What the ledger booked for the call (0 when none was made).
    pub cost_usd: f64,
}
