//! `events.jsonl`: one JSON line per lap event, for debugging a run after the
//! fact. Not a source of truth (the checkpoint and the ledger journal are), so
//! lines are flushed but not fsynced. Bounded in count per run.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "events.jsonl";
pub const EVENTS_MAX_PER_PROCESS: u64 = 100_000;

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
    pub fn emit(&mut self, step: u64, kind: &str, data: Value) {
        if self.written >= EVENTS_MAX_PER_PROCESS {
            return;
        }
        let Some(f) = self.file.as_mut() else { return };
        let mut line = json!({
            "unix_ms": crate::run_loop::now_unix_ms(),
            "t_ms": self.t0.elapsed().as_millis() as u64,
            "step": step,
            "kind": kind,
            "data": data,
        });
        crate::redact::json(&mut line); // the one redaction filter
        let mut s = line.to_string();
        s.push('\n');
        let _ = f.write_all(s.as_bytes());
        self.written += 1;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
