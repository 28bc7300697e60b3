//! A multi-step operation that can be left partially applied: the stand-in
//! for "apply index migration 0042". A migration is a file in the workspace,
//! `migrations/<name>.json`:
//!
//! ```json
//! {"steps": [{"path": "db/0001_table.sql", "content": "..."}, ...]}
//! ```
//!
//! Applying it writes each step's file in order. A kill between steps leaves
//! some files written and some not, and [`state`] can tell the three cases
//! apart (done / not started / partial) by looking only at the files. That
//! is what lets resume verify instead of re-execute.

use crate::workspace::{PathError, Workspace};
use serde::Deserialize;
use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

/// Most steps a migration may have; a definition with more is refused.
pub const MIGRATION_MAX_STEPS: usize = 32;
/// Largest migration definition file read.
pub const MIGRATION_DEF_MAX_BYTES: u64 = 1024 * 1024;
/// Largest content of one step.
pub const MIGRATION_STEP_MAX_BYTES: usize = 1024 * 1024;
/// Longest migration name.
pub const MIGRATION_NAME_MAX_CHARS: usize = 64;
/// Longest `detail` string a state carries (it ends up in reports).
pub const MIGRATION_DETAIL_MAX_CHARS: usize = 1000;
/// Directory (relative to the workspace root) that holds the definitions.
pub const MIGRATIONS_DIR: &str = "migrations";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationStep {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationDef {
    pub steps: Vec<MigrationStep>,
}

/// What `apply` did: the step paths it wrote, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationApplied {
    pub name: String,
    pub steps_written: Vec<String>,
    /// The same files as workspace-relative paths (what a commit names).
    pub paths_written: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    #[error("invalid migration name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("migration {name:?} has no definition at {path}")]
    Missing { name: String, path: String },
    #[error("migration {name:?} definition {path} is invalid: {detail}")]
    BadDefinition {
        name: String,
        path: String,
        detail: String,
    },
    #[error("migration {name:?} step {step} path {path:?} refused: {error}")]
    StepPath {
        name: String,
        step: usize,
        path: String,
        error: PathError,
    },
    /// A write failed partway. `written` names the steps already written, so
    /// the caller knows the migration is now partially applied.
    #[error("migration {name:?} step {step} ({path}) failed after {} step(s) were written: {detail}", written.len())]
    StepWrite {
        name: String,
        step: usize,
        path: String,
        detail: String,
        written: Vec<String>,
        /// Workspace-relative paths that were (or may have been) written,
        /// the failing step's included when its rename happened.
        paths_written: Vec<String>,
        /// The failing step's path when its rename happened but the
        /// directory fsync failed: its content may not be durable.
        in_doubt: Option<String>,
    },
}

impl MigrationError {
    /// The workspace-relative paths a failed apply wrote (empty unless StepWrite).
    pub fn paths_written(&self) -> &[String] {
        match self {
            MigrationError::StepWrite { paths_written, .. } => paths_written,
            _ => &[],
        }
    }

    /// The step path whose content may not be durable, if any.
    pub fn path_in_doubt(&self) -> Option<String> {
        match self {
            MigrationError::StepWrite { in_doubt, .. } => in_doubt.clone(),
            _ => None,
        }
    }
}

/// The state of a migration, judged only from the files on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationState {
    /// Every step's file exists with exactly that step's content.
    Done,
    /// No step's file has its content.
    NotStarted,
    /// Some, but not all, steps are in place.
    Partial {
        applied: usize,
        total: usize,
        detail: String,
    },
    /// The definition is missing or invalid, so nothing can be judged.
    Unknown { detail: String },
}

/// Names are `[A-Za-z0-9_.-]`, bounded, and not made only of dots, so
/// `migrations/<name>.json` is always one file directly inside `migrations/`.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty; expected something like \"0042_add_index\"".into());
    }
    if name.chars().count() > MIGRATION_NAME_MAX_CHARS {
        return Err(format!(
            "the name is longer than {MIGRATION_NAME_MAX_CHARS} characters"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "character {c:?} is not allowed; use only letters, digits, '_', '.', '-' (no slashes)"
        ));
    }
    if name.chars().all(|c| c == '.') {
        return Err("the name cannot be only dots".into());
    }
    Ok(())
}

/// At most this many definitions are offered to the planner by name.
pub const DEFINED_LIST_MAX: usize = 64;

/// The names of the valid migration definitions in the workspace
/// (`migrations/<name>.json` that [`load`] accepts), sorted: what a
/// `migration_state` verify can name and be admitted.
pub fn defined(ws: &Workspace) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(ws.root().join(MIGRATIONS_DIR)) else {
        return vec![];
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_string)
        })
        .filter(|n| load(ws, n).is_ok())
        .collect();
    names.sort();
    names.truncate(DEFINED_LIST_MAX);
    names
}

/// The workspace-relative path of a migration's definition.
pub fn definition_path(name: &str) -> String {
    format!("{MIGRATIONS_DIR}/{name}.json")
}

/// Load and validate a definition: the name is valid, the file exists and
/// parses, it has 1..=MIGRATION_MAX_STEPS steps, every step path resolves
/// inside the workspace, no two steps write the same file, contents bounded.
pub fn load(ws: &Workspace, name: &str) -> Result<MigrationDef, MigrationError> {
    validate_name(name).map_err(|reason| MigrationError::InvalidName {
        name: name.to_string(),
        reason,
    })?;
    let rel = definition_path(name);
    let bad = |detail: String| MigrationError::BadDefinition {
        name: name.to_string(),
        path: rel.clone(),
        detail,
    };
    // Never blocks: a FIFO or device named like a definition is refused.
    let f = match crate::confined::open_read(ws, &rel) {
        Ok(f) => f.file,
        Err(crate::confined::FileError::NotFound { .. }) => {
            return Err(MigrationError::Missing {
                name: name.to_string(),
                path: rel.clone(),
            })
        }
        Err(e) => return Err(bad(e.to_string())),
    };
    let mut buf = Vec::new();
    f.take(MIGRATION_DEF_MAX_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| bad(e.to_string()))?;
    if buf.len() as u64 > MIGRATION_DEF_MAX_BYTES {
        return Err(bad(format!("larger than {MIGRATION_DEF_MAX_BYTES} bytes")));
    }
    let def: MigrationDef = serde_json::from_slice(&buf).map_err(|e| {
        bad(format!(
            "{e}; expected {{\"steps\": [{{\"path\": \"db/...\", \"content\": \"...\"}}]}}"
        ))
    })?;
    if def.steps.is_empty() {
        return Err(bad("it has no steps".into()));
    }
    if def.steps.len() > MIGRATION_MAX_STEPS {
        return Err(bad(format!(
            "it has {} steps, over the limit of {MIGRATION_MAX_STEPS}",
            def.steps.len()
        )));
    }
    let mut seen: Vec<PathBuf> = Vec::with_capacity(def.steps.len());
    for (i, step) in def.steps.iter().enumerate() {
        let abs = ws
            .resolve(&step.path)
            .map_err(|error| MigrationError::StepPath {
                name: name.to_string(),
                step: i + 1,
                path: step.path.clone(),
                error,
            })?;
        if abs == ws.root() {
            return Err(bad(format!(
                "step {} path {:?} names the workspace root, not a file",
                i + 1,
                step.path
            )));
        }
        if step.content.len() > MIGRATION_STEP_MAX_BYTES {
            return Err(bad(format!(
                "step {} content is over {MIGRATION_STEP_MAX_BYTES} bytes",
                i + 1
            )));
        }
        // Two steps on one file could never both be "in place", so the
        // migration could never read as Done.
        if seen.contains(&abs) {
            return Err(bad(format!(
                "step {} writes {:?}, which an earlier step already writes",
                i + 1,
                step.path
            )));
        }
        seen.push(abs);
    }
    Ok(def)
}

/// Apply every step in order. Between consecutive steps (never before the
/// first or after the last) the chaos bench may kill us, which is exactly the
/// partial state [`state`] must report. Each file is fsynced before moving on
/// so a step that was written stays written.
pub fn apply(ws: &Workspace, name: &str) -> Result<MigrationApplied, MigrationError> {
    let def = load(ws, name)?;
    let mut written: Vec<String> = Vec::with_capacity(def.steps.len());
    let mut paths_written: Vec<String> = Vec::with_capacity(def.steps.len());
    for (i, step) in def.steps.iter().enumerate() {
        if i > 0 {
            crate::chaos_hook::point(crate::chaos_hook::Phase::BetweenMigrationSteps);
        }
        // The same confined write as write_file (resolved again right before
        // writing, temp file + rename, never through a hard link, durable).
        match crate::confined::write(ws, &step.path, step.content.as_bytes()) {
            Ok(rel) => {
                written.push(step.path.clone());
                paths_written.push(rel);
            }
            Err(f) => {
                let in_doubt = f.replaced.clone();
                if let Some(rel) = f.replaced {
                    paths_written.push(rel);
                }
                // Refused before anything was written (the path changed
                // since load): nothing is partially applied.
                if let (crate::confined::FileError::Path(error), true) =
                    (&f.error, paths_written.is_empty())
                {
                    return Err(MigrationError::StepPath {
                        name: name.to_string(),
                        step: i + 1,
                        path: step.path.clone(),
                        error: error.clone(),
                    });
                }
                return Err(MigrationError::StepWrite {
                    name: name.to_string(),
                    step: i + 1,
                    path: step.path.clone(),
                    detail: f.error.to_string(),
                    written,
                    paths_written,
                    in_doubt,
                });
            }
        }
    }
    Ok(MigrationApplied {
        name: name.to_string(),
        steps_written: written,
        paths_written,
    })
}

/// Judge the migration from the files alone. Read-only and cheap, so resume
/// can call it on an IN_PROGRESS task instead of re-running the migration.
pub fn state(ws: &Workspace, name: &str) -> MigrationState {
    let def = match load(ws, name) {
        Ok(d) => d,
        Err(e) => {
            return MigrationState::Unknown {
                detail: e.to_string(),
            }
        }
    };
    let total = def.steps.len();
    let mut applied = 0usize;
    let mut notes: Vec<String> = Vec::with_capacity(total);
    for (i, step) in def.steps.iter().enumerate() {
        let status = match ws.resolve(&step.path) {
            Err(e) => {
                return MigrationState::Unknown {
                    detail: format!("step {} path: {e}", i + 1),
                }
            }
            Ok(_) => step_status(ws, &step.path, step.content.as_bytes()),
        };
        if status == StepStatus::Applied {
            applied += 1;
        }
        notes.push(format!("step {} {} {}", i + 1, step.path, status.as_str()));
    }
    if applied == total {
        MigrationState::Done
    } else if applied == 0 {
        MigrationState::NotStarted
    } else {
        MigrationState::Partial {
            applied,
            total,
            detail: bounded(notes.join("; "), MIGRATION_DETAIL_MAX_CHARS),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum StepStatus {
    Applied,
    Missing,
    Differs,
    Unreadable,
}

impl StepStatus {
    fn as_str(&self) -> &'static str {
        match self {
            StepStatus::Applied => "applied",
            StepStatus::Missing => "missing",
            StepStatus::Differs => "differs",
            StepStatus::Unreadable => "unreadable",
        }
    }
}

fn step_status(ws: &Workspace, rel: &str, want: &[u8]) -> StepStatus {
    // Confined and non-blocking: a FIFO at a step's path reads as unreadable.
    let f = match crate::confined::open_read(ws, rel) {
        Ok(f) => f.file,
        Err(crate::confined::FileError::NotFound { .. }) => return StepStatus::Missing,
        Err(_) => return StepStatus::Unreadable,
    };
    // Read one byte past the expected length: enough to see "longer than
    // expected" without reading an arbitrarily large file.
    let mut buf = Vec::with_capacity(want.len() + 1);
    match f.take(want.len() as u64 + 1).read_to_end(&mut buf) {
        Ok(_) if buf == want => StepStatus::Applied,
        Ok(_) => StepStatus::Differs,
        Err(_) => StepStatus::Unreadable,
    }
}

fn bounded(mut s: String, max_chars: usize) -> String {
    if let Some((idx, _)) = s.char_indices().nth(max_chars) {
        s.truncate(idx);
        let _ = write!(s, "...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let w = Workspace::open(d.path()).unwrap();
        (d, w)
    }

    fn define(w: &Workspace, name: &str, body: &str) {
        std::fs::create_dir_all(w.root().join(MIGRATIONS_DIR)).unwrap();
        std::fs::write(w.root().join(definition_path(name)), body).unwrap();
    }

    const THREE: &str = r#"{"steps":[
        {"path":"db/0001.sql","content":"CREATE TABLE t(x);\n"},
        {"path":"db/0002.sql","content":"CREATE INDEX i ON t(x);\n"},
        {"path":"db/sub/0003.sql","content":"ANALYZE t;\n"}]}"#;

    #[test]
    fn names() {
        assert!(validate_name("0042_add-index.v2").is_ok());
        for bad in ["", "a/b", "..", ".", "a b", "x\0", "../x", "é"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        assert!(validate_name(&"a".repeat(MIGRATION_NAME_MAX_CHARS + 1)).is_err());
    }

    #[test]
    fn apply_then_done() {
        let (_d, w) = ws();
        define(&w, "0042", THREE);
        assert_eq!(state(&w, "0042"), MigrationState::NotStarted);
        let a = apply(&w, "0042").unwrap();
        assert_eq!(
            a.steps_written,
            vec!["db/0001.sql", "db/0002.sql", "db/sub/0003.sql"]
        );
        assert_eq!(
            std::fs::read_to_string(w.root().join("db/sub/0003.sql")).unwrap(),
            "ANALYZE t;\n"
        );
        assert_eq!(state(&w, "0042"), MigrationState::Done);
        // Re-applying a finished migration leaves it finished.
        apply(&w, "0042").unwrap();
        assert_eq!(state(&w, "0042"), MigrationState::Done);
    }

    #[test]
    fn partial_is_reported_with_detail() {
        let (_d, w) = ws();
        define(&w, "0042", THREE);
        std::fs::create_dir_all(w.root().join("db")).unwrap();
        std::fs::write(w.root().join("db/0001.sql"), "CREATE TABLE t(x);\n").unwrap();
        std::fs::write(
            w.root().join("db/0002.sql"),
            "CREATE INDEX i ON t(x);\n-- torn",
        )
        .unwrap();
        match state(&w, "0042") {
            MigrationState::Partial {
                applied,
                total,
                detail,
            } => {
                assert_eq!((applied, total), (1, 3));
                assert!(detail.contains("step 1 db/0001.sql applied"), "{detail}");
                assert!(detail.contains("step 2 db/0002.sql differs"), "{detail}");
                assert!(
                    detail.contains("step 3 db/sub/0003.sql missing"),
                    "{detail}"
                );
            }
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn unknown_when_definition_missing_or_bad() {
        let (_d, w) = ws();
        assert!(matches!(state(&w, "nope"), MigrationState::Unknown { .. }));
        assert!(matches!(
            state(&w, "../etc"),
            MigrationState::Unknown { .. }
        ));
        assert!(matches!(
            apply(&w, "nope"),
            Err(MigrationError::Missing { .. })
        ));
        for body in [
            "not json",
            r#"{"steps":[]}"#,
            r#"{"steps":[{"path":"a"}]}"#,
            r#"{"steps":[{"path":"a","content":"x","extra":1}]}"#,
            r#"{"steps":[{"path":"/etc/passwd","content":"x"}]}"#,
            r#"{"steps":[{"path":"../x","content":"x"}]}"#,
            r#"{"steps":[{"path":".git/config","content":"x"}]}"#,
            r#"{"steps":[{"path":"a","content":"x"},{"path":"./a","content":"y"}]}"#,
            r#"{"steps":[{"path":".","content":"x"}]}"#,
        ] {
            define(&w, "m", body);
            assert!(
                matches!(state(&w, "m"), MigrationState::Unknown { .. }),
                "{body}"
            );
            assert!(apply(&w, "m").is_err(), "{body}");
        }
        let many: Vec<String> = (0..=MIGRATION_MAX_STEPS)
            .map(|i| format!(r#"{{"path":"f{i}","content":"x"}}"#))
            .collect();
        define(&w, "m", &format!(r#"{{"steps":[{}]}}"#, many.join(",")));
        assert!(matches!(state(&w, "m"), MigrationState::Unknown { .. }));
        // Nothing was written by the refused applies.
        assert!(!w.root().join("a").exists());
    }

    #[test]
    fn write_failure_reports_steps_written() {
        let (_d, w) = ws();
        // Step 2's path is a directory, so it cannot be written as a file.
        std::fs::create_dir(w.root().join("blocker")).unwrap();
        define(
            &w,
            "m",
            r#"{"steps":[{"path":"ok.txt","content":"1"},{"path":"blocker","content":"2"}]}"#,
        );
        match apply(&w, "m") {
            Err(MigrationError::StepWrite { step, written, .. }) => {
                assert_eq!(step, 2);
                assert_eq!(written, vec!["ok.txt"]);
            }
            r => panic!("{r:?}"),
        }
        assert!(matches!(
            state(&w, "m"),
            MigrationState::Partial {
                applied: 1,
                total: 2,
                ..
            }
        ));
    }

    #[test]
    fn detail_is_bounded() {
        let s = bounded(
            "é".repeat(MIGRATION_DETAIL_MAX_CHARS + 10),
            MIGRATION_DETAIL_MAX_CHARS,
        );
        assert_eq!(s.chars().count(), MIGRATION_DETAIL_MAX_CHARS + 3);
    }
}
