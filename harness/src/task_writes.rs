//! Which workspace paths each task's tools wrote: what that task's commit
//! holds, and nothing else. The loop keeps the in-progress task's set in
//! memory and appends every writing tool call's paths to `writes.jsonl` in the
//! state dir (one fsynced line, through the simfs layer), so a kill after a
//! task's tools wrote but before its commit loses no path: on resume the set
//! is read back for the in-flight task and its commit is exact.
//!
//! The checkpoint is not used for this on purpose: a checkpoint per tool call
//! would add an atomic write (and a chaos kill point) to every write_file.
//! A line is appended after the tool returns; a SIGKILL in the microseconds
//! between a tool's write and that append loses that path, which then stays
//! uncommitted in the workspace (never committed under another task).

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "writes.jsonl";
/// Most bytes read back on resume: a run writes a few hundred lines.
pub const TASK_WRITES_MAX_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Line {
    task: String,
    paths: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct TaskWrites {
    path: PathBuf,
}

impl TaskWrites {
    pub fn new(state_dir: &Path) -> TaskWrites {
        TaskWrites {
            path: state_dir.join(FILE_NAME),
        }
    }

    /// Append one tool call's paths for `task`, durably. Redacted like every
    /// text the harness writes (a path is a model-chosen string).
    pub fn append(&self, task: &str, paths: &[String]) -> std::io::Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut line = crate::redact::to_json_vec(
            &Line {
                task: task.to_string(),
                paths: paths.to_vec(),
            },
            false,
        )
        .map_err(std::io::Error::other)?;
        line.push(b'\n');
        crate::durable::append_line(&self.path, line)
    }

    /// Every path journaled for `task`. A torn or unreadable line is skipped:
    /// its path then stays uncommitted, the safe side.
    pub fn paths_for(&self, task: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Ok(f) = std::fs::File::open(&self.path) else {
            return out;
        };
        let mut buf = Vec::new();
        if f.take(TASK_WRITES_MAX_BYTES).read_to_end(&mut buf).is_err() {
            return out;
        }
        for l in buf.split(|b| *b == b'\n') {
            if let Ok(line) = serde_json::from_slice::<Line>(l) {
                if line.task == task {
                    out.extend(line.paths);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_back_per_task_and_a_torn_line_is_skipped() {
        let d = tempfile::tempdir().unwrap();
        let j = TaskWrites::new(d.path());
        assert!(j.paths_for("t1").is_empty());
        j.append("t1", &["a.txt".into(), "db/1.sql".into()])
            .unwrap();
        j.append("t2", &["b.txt".into()]).unwrap();
        j.append("t1", &["a.txt".into()]).unwrap();
        j.append("t1", &[]).unwrap();
        // A kill mid-append leaves a line without its end.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(d.path().join(FILE_NAME))
            .unwrap()
            .write_all(br#"{"task":"t1","paths":["torn"#)
            .unwrap();
        assert_eq!(
            j.paths_for("t1").into_iter().collect::<Vec<_>>(),
            vec!["a.txt", "db/1.sql"]
        );
        assert_eq!(j.paths_for("t2").len(), 1);
        assert!(j.paths_for("t10").is_empty());
        // The next append after a torn line is not lost with it.
        j.append("t3", &["c.txt".into()]).unwrap();
        assert_eq!(j.paths_for("t3").len(), 1);
    }
}
