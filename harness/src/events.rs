//! `events.jsonl`: one JSON line per lap event, for debugging a run after the
//! fact. Not a source of truth (the checkpoint and the ledger journal are), so
//! lines are flushed but not fsynced. Bounded in count per run.
//!
//! Each line is an [`EventLine`]: `{"unix_ms","t_ms","step","kind","data"}`,
//! where `kind` names the [`Event`] variant and `data` is its fields. The
//! writer and every reader (the bench's audit, chaos) go through these types,
//! so a renamed kind or field is a compile error in the readers, and a line
//! this harness would not have written is a parse error, not a silent miss.

use crate::drift::Band;
use crate::ending::{Ending, ErrorKind};
use crate::model::types::{CallRole, StopReason, Usage};
use crate::state::{RejectedTask, VerifiedHow};
use crate::tools::ToolName;
use crate::verify::VerifyOutcome;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "events.jsonl";
pub const EVENTS_MAX_PER_PROCESS: u64 = 100_000;

/// One line of events.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    pub unix_ms: u64,
    /// Since this harness process opened the log (a resume starts again at 0).
    pub t_ms: u64,
    pub step: u64,
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Event {
    Start(RunOpened),
    Resume(RunOpened),
    /// A re-run of a run that had already ended: it re-reports, never runs.
    Rereport {
        ending: Ending,
    },
    Ending(EndingEvent),
    BudgetRefused {
        spent_usd: f64,
        detail: String,
    },
    ClockRanOut {
        elapsed_ms: u64,
        spent_usd: f64,
        detail: String,
    },
    WallClock {
        detail: String,
    },
    /// An operator raised a limit the run had ended on; it goes on.
    LimitRaised(crate::ledger::LimitRaise),
    /// A stop request suspended the run (crate::stop): not an ending.
    Stopped {
        signal: String,
        exit_code: i32,
        in_flight: Option<String>,
        cut: Option<String>,
    },
    GitError(GitError),
    ResumeVerify {
        task: String,
        outcome: VerifyOutcome,
    },
    TaskStart {
        task: String,
        description: String,
    },
    Verify {
        task: String,
        attempt: u32,
        attempt_end: String,
        outcome: VerifyOutcome,
        /// When the work was found not done: why (the check's name, status
        /// and output tail; `Verify::run_why`). Absent in logs written
        /// before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    Tool(ToolEvent),
    PlanMalformed {
        error: String,
    },
    ReplanMalformed {
        error: String,
    },
    Admit(Admit),
    Drift {
        score: f64,
        band: Band,
        pruned: Vec<String>,
    },
    ModelCall(ModelCall),
    /// A `compact/<n>` attempt and how it ended (the history replaced only
    /// when `ok`).
    Compaction(crate::state::Compaction),
    /// A lesson call's outcome: admitted (`reason` None) or why not.
    Lesson {
        call_key: String,
        task: String,
        reason: Option<crate::lessons::LessonRefusal>,
    },
    ModelError {
        role: CallRole,
        call_key: String,
        error: String,
    },
    TaskDone {
        task: String,
        how: VerifiedHow,
        commit: Option<String>,
    },
    WritesJournalError {
        task: String,
        detail: String,
    },
    TaskParked {
        task: String,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOpened {
    pub run_id: String,
    pub spent_usd: f64,
    /// How this process was started, for the page's Next section (the exact
    /// command to resume or raise a limit). Absent in logs written before
    /// it was recorded, and when the run was opened as a library call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<RunCommand>,
}

/// The `harness run` command line a run was opened with, as a person would
/// retype it: absolute paths, no `--raise-*` flag (a raise is journaled and
/// stays the run's), plus what the page needs beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCommand {
    /// The argv (`harness run --spec ... --state-dir ...`); argv[0] as typed
    /// when it was a bare name found on PATH, else the absolute binary path.
    pub argv: Vec<String>,
    /// The spec's workspace (where the run branch's commits are).
    pub workspace: String,
    /// The wall-clock limit this process ran under (the spec's, or a raise).
    pub wall_clock_limit_s: f64,
    /// The machine's offset from UTC when the run opened, in seconds (east
    /// positive): the page gives each time in UTC and in this local time.
    pub utc_offset_s: i32,
    /// Set when another tool started this process with an endpoint that
    /// lives only as long as that tool (the bench's replay server or live
    /// proxy on `--base-url`): the argv above would reach nothing afterwards,
    /// so the page's Next gives this command instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<StartedBy>,
}

/// The environment variable a tool that starts the harness sets to say so
/// (JSON of [`StartedBy`]); the bench sets it on every case-run.
pub const STARTED_BY_ENV: &str = "HARNESS_STARTED_BY";

/// Who started the run and the command that reproduces it once that tool
/// (and the endpoint it served) is gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartedBy {
    /// What started the run and what the command does, as a sentence.
    pub say: String,
    /// The command that reproduces the run afterwards.
    pub argv: Vec<String>,
}

impl StartedBy {
    /// From [`STARTED_BY_ENV`]; None when it is unset or not this JSON (the
    /// page then falls back to the recorded argv, as for any run).
    pub fn from_env() -> Option<StartedBy> {
        let v = std::env::var(STARTED_BY_ENV).ok()?;
        serde_json::from_str(&v).ok()
    }
}

/// The run's ending. An UNRECOVERABLE_ERROR decided before the loop ran (a
/// refused start, a panic) names its `kind`; one the loop reached names the
/// `exit_code` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndingEvent {
    pub ending: Ending,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub detail: Option<String>,
}

/// Git could not make the run branch (no `task`) or commit a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitError {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub detail: String,
}

/// One tool call as the model made it: `tool` is the name the model gave,
/// which need not be a tool at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEvent {
    pub task: String,
    pub tool: ToolRef,
    pub is_error: bool,
    pub side_effect: bool,
    /// The model call that asked for it (`execute/t1/a0/2`); empty in logs
    /// written before the transcript was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub call_key: String,
    /// The call's input as the model gave it (JSON), clipped to
    /// [`TOOL_INPUT_SHOWN_MAX_CHARS`]: the transcript a person reads.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub input: String,
    /// The start of what the tool answered, clipped to
    /// [`TOOL_OUTPUT_SHOWN_MAX_CHARS`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// Characters of a tool call's input kept in its event (the transcript).
pub const TOOL_INPUT_SHOWN_MAX_CHARS: usize = 400;
/// Characters of a tool's answer kept in its event (the transcript).
pub const TOOL_OUTPUT_SHOWN_MAX_CHARS: usize = 400;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRef {
    Known(ToolName),
    /// A name no tool has (a hallucinated call; it ran nothing).
    Unknown(String),
}

impl ToolRef {
    pub fn of(name: &str) -> ToolRef {
        match ToolName::parse(name) {
            Some(t) => ToolRef::Known(t),
            None => ToolRef::Unknown(name.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ToolRef::Known(t) => t.as_str(),
            ToolRef::Unknown(s) => s,
        }
    }
}

/// Tasks admitted to the queue by the plan or a replan, and those refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Admit {
    pub origin: String,
    pub admitted: Vec<String>,
    /// What the drift judge is shown of each admitted task.
    pub tasks: Vec<AdmittedTask>,
    pub rejected: Vec<RejectedTask>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmittedTask {
    pub id: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    pub role: CallRole,
    pub call_key: String,
    pub usage: Usage,
    pub cost_usd: f64,
    pub reserved_usd: f64,
    pub input_tokens_max: u64,
    pub latency_ms: u64,
    pub attempts: u32,
    pub billed_unknown_attempts: u32,
    pub stop: StopReason,
    /// The request carried the budget notice.
    pub notice: bool,
}

pub struct EventLog {
    path: PathBuf,
    file: Option<std::fs::File>,
    written: u64,
    t0: std::time::Instant,
}

impl EventLog {
    pub fn open(state_dir: &Path) -> EventLog {
        let path = state_dir.join(FILE_NAME);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .ok();
        EventLog {
            path,
            file,
            written: 0,
            t0: std::time::Instant::now(),
        }
    }

    /// Append one event. Never fails the run: a debug log that cannot be
    /// written is not a reason to stop working.
    pub fn emit(&mut self, step: u64, event: Event) {
        if self.written >= EVENTS_MAX_PER_PROCESS {
            return;
        }
        let Some(f) = self.file.as_mut() else { return };
        let line = EventLine {
            unix_ms: crate::clock::now_unix_ms(),
            t_ms: self.t0.elapsed().as_millis() as u64,
            step,
            event,
        };
        let Ok(mut v) = serde_json::to_value(&line) else {
            return;
        };
        crate::redact::json(&mut v); // the one redaction filter
        let mut s = v.to_string();
        s.push('\n');
        let _ = f.write_all(s.as_bytes());
        self.written += 1;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{FILE_NAME} line {line}: {source}")]
    Line {
        line: usize,
        source: serde_json::Error,
    },
}

/// Read `events.jsonl` (appended across resumes).
pub fn read_events(path: &Path) -> Result<Vec<EventLine>, ReadError> {
    let b = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_lines(b.split(|c| *c == b'\n'))
}

/// Parse the text of `events.jsonl`. A line that is not JSON at all is a torn
/// append (a kill mid-write; the next process appends right after the torn
/// bytes) and is skipped; a JSON line that is not an [`EventLine`] is an
/// error, since only a different writer makes one.
pub fn parse_events(text: &str) -> Result<Vec<EventLine>, ReadError> {
    parse_lines(text.split('\n').map(str::as_bytes))
}

fn parse_lines<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Result<Vec<EventLine>, ReadError> {
    let mut out = vec![];
    for (i, l) in lines.enumerate() {
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<EventLine>(l) {
            Ok(e) => out.push(e),
            Err(e) if e.is_syntax() || e.is_eof() => {}
            Err(source) => {
                return Err(ReadError::Line {
                    line: i + 1,
                    source,
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: Event) -> EventLine {
        EventLine {
            unix_ms: 1_700_000_000_000,
            t_ms: 5,
            step: 2,
            event,
        }
    }

    #[test]
    fn lines_keep_the_shape_the_readers_know() {
        let l = line(Event::TaskDone {
            task: "t1".into(),
            how: VerifiedHow::Verified,
            commit: None,
        });
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"unix_ms":1700000000000,"t_ms":5,"step":2,"kind":"task_done","data":{"task":"t1","how":"verified","commit":null}}"#
        );
        let e = line(Event::Ending(EndingEvent {
            ending: Ending::UnrecoverableError,
            kind: Some(ErrorKind::StateDir),
            exit_code: None,
            detail: Some("d".into()),
        }));
        assert_eq!(
            serde_json::to_value(&e).unwrap()["data"],
            serde_json::json!({"ending": "UNRECOVERABLE_ERROR", "kind": "state_dir", "detail": "d"})
        );
        let t = line(Event::Tool(ToolEvent {
            task: "t1".into(),
            tool: ToolRef::of("rm_rf"),
            is_error: true,
            side_effect: false,
            call_key: "execute/t1/a0/0".into(),
            input: r#"{"path":"/"}"#.into(),
            output: "unknown tool rm_rf".into(),
        }));
        let back = parse_events(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, vec![t]);
        assert_eq!(
            ToolRef::of("write_file"),
            ToolRef::Known(ToolName::WriteFile)
        );
    }

    #[test]
    fn an_unknown_kind_or_a_renamed_field_is_an_error_and_a_torn_line_is_skipped() {
        let good = r#"{"unix_ms":1,"t_ms":0,"step":0,"kind":"wall_clock","data":{"detail":"x"}}"#;
        let unknown =
            r#"{"unix_ms":1,"t_ms":0,"step":0,"kind":"wall_clocks","data":{"detail":"x"}}"#;
        let renamed = r#"{"unix_ms":1,"t_ms":0,"step":0,"kind":"wall_clock","data":{"why":"x"}}"#;
        let torn = r#"{"unix_ms":1,"t_ms":0,"st"#;
        assert_eq!(parse_events(&format!("{good}\n{good}\n")).unwrap().len(), 2);
        // A kill mid-append: the next process's first line follows the torn bytes.
        assert_eq!(
            parse_events(&format!("{good}\n{torn}{good}\n{good}\n{torn}"))
                .unwrap()
                .len(),
            2
        );
        let e = parse_events(&format!("{good}\n{unknown}\n")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("events.jsonl line 2: unknown variant `wall_clocks`"),
            "{e}"
        );
        let e = parse_events(&format!("{renamed}\n")).unwrap_err();
        assert!(e.to_string().contains("missing field `detail`"), "{e}");
    }

    #[test]
    fn the_log_writes_what_the_reader_reads() {
        let d = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(d.path());
        log.emit(
            3,
            Event::Start(RunOpened {
                run_id: "run-1".into(),
                spent_usd: 0.0,
                command: None,
            }),
        );
        log.emit(
            3,
            Event::GitError(GitError {
                task: None,
                detail: "no git".into(),
            }),
        );
        let got = read_events(log.path()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].step, 3);
        assert_eq!(
            got[1].event,
            Event::GitError(GitError {
                task: None,
                detail: "no git".into()
            })
        );
        // Field order is not part of the shape (the redaction filter, when a
        // secret is known, rebuilds objects); a task-less git_error has no task.
        let raw = std::fs::read_to_string(log.path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(raw.lines().nth(1).unwrap()).unwrap();
        assert_eq!(v["kind"], "git_error");
        assert_eq!(v["data"], serde_json::json!({"detail": "no git"}));
    }
}
