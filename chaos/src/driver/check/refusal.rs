//! A refusal of a bad checkpoint frame, judged as a whole. A process that
//! finds a torn or rotted frame at its start refuses it at load: it ends
//! UNRECOVERABLE_ERROR naming the frame and writes nothing but that ending's
//! report, report.json and then the page, report.html, each through the
//! atomic write (temp written, fsynced, renamed, directory fsynced). A kill
//! can land at any of those steps of either file: that is the refusal under
//! way, not a run on from the frame. Issue 48: the oracle once allowed only
//! `temp_written`, and power-loss seeds 4, 6 and 7 reported a refusal paused
//! at `after_fsync_file` (or in the page's write) as "ran on".
//!
//! What the rule still catches: a process that opens, renames or syncs
//! anything else (a checkpoint, the journal, the workspace), or pauses at
//! any other phase, or whose report.json says anything but the refusal (the
//! `skip-checksum` variant re-reporting a rotted *finished* frame as if it
//! were whole writes only report.json and the page too, but its report
//! names the run's ending, not `checkpoint_checksum_mismatch`).

use crate::fsmodel::Op;
use harness::chaos_hook::Phase;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The phases an atomic write passes: the only places a refusal can be paused.
const WRITE_PHASES: [Phase; 3] = [
    Phase::TempWritten,
    Phase::AfterFsyncFile,
    Phase::AfterRenameBeforeFsyncDir,
];

/// The files a refusal publishes, in the order it writes them.
const REFUSAL_FILES: [&str; 2] = [harness::report::FILE_NAME, harness::page::FILE_NAME];

/// `Ok` when a process that started on a bad frame of kind `kind` (the
/// oracle's name: `checksum_mismatch`, ...), paused at `phase`, with
/// operation log `ops`, was publishing the refusal of that frame and doing
/// nothing else; `Err` says what it did instead.
pub(super) fn under_way(ops: &[Op], state: &Path, kind: &str, phase: &str) -> Result<(), String> {
    if !WRITE_PHASES.iter().any(|p| p.as_str() == phase) {
        return Err(format!("{phase} is not a step of the report's write"));
    }
    let report = published_files_only(ops, state)?;
    let Some(bytes) = report else {
        return Err("it wrote the page before any report.json".into());
    };
    let r = crate::harness_files::parse_report(&bytes)
        .map_err(|e| format!("the report.json it was writing is not a report ({e})"))?;
    let want = format!("checkpoint_{kind}");
    if r.ending.as_deref() != Some("UNRECOVERABLE_ERROR") || r.error_kind() != want {
        return Err(format!(
            "the report.json it was writing says {} ({}), not UNRECOVERABLE_ERROR ({want})",
            crate::harness_files::quoted(&r.ending),
            crate::harness_files::quoted(&r.error_kind)
        ));
    }
    Ok(())
}

/// Every operation in `ops` belongs to an atomic write of one of
/// [`REFUSAL_FILES`] in `state`; returns the bytes written to report.json's
/// temp file, if any.
fn published_files_only(ops: &[Op], state: &Path) -> Result<Option<Vec<u8>>, String> {
    // fd -> (the temp file, the published name it is for)
    let mut temps: BTreeMap<u64, (PathBuf, &str)> = BTreeMap::new();
    let mut report: Option<Vec<u8>> = None;
    let temp_of = |p: &Path| -> Option<&'static str> {
        let name = p.file_name()?.to_string_lossy().into_owned();
        (p.parent() == Some(state))
            .then(|| {
                REFUSAL_FILES
                    .into_iter()
                    .find(|f| name.starts_with(&format!(".{f}{}", harness::durable::TEMP_MARKER)))
            })
            .flatten()
    };
    let ours = |fd: &u64, temps: &BTreeMap<u64, (PathBuf, &str)>| temps.contains_key(fd);
    for op in ops {
        match op {
            Op::Open { fd, path, .. } => match temp_of(path) {
                Some(f) => {
                    temps.insert(*fd, (path.clone(), f));
                }
                None => return Err(format!("it opened {}", path.display())),
            },
            Op::Write { fd, off, .. } => {
                let Some((_, f)) = temps.get(fd) else {
                    return Err(format!("it wrote to fd {fd}, not a report's temp file"));
                };
                if *f == harness::report::FILE_NAME {
                    let b = report.get_or_insert_with(Vec::new);
                    let at = off.map_or(b.len(), |o| o as usize);
                    let data = op.write_bytes();
                    if b.len() < at + data.len() {
                        b.resize(at + data.len(), 0);
                    }
                    b[at..at + data.len()].copy_from_slice(&data);
                }
            }
            Op::Fsync { fd } if ours(fd, &temps) => {}
            Op::Rename { from, to }
                if temp_of(from).is_some_and(|f| *to == state.join(f))
                    && temps.values().any(|(p, _)| p == from) => {}
            Op::Unlink { path } if temps.values().any(|(p, _)| p == path) => {}
            Op::FsyncDir { path } if path == state => {}
            // An injected fault is no write of its own.
            Op::Fault { .. } => {}
            other => return Err(format!("it did {}", describe(other))),
        }
    }
    Ok(report)
}

fn describe(op: &Op) -> String {
    match op {
        Op::Open { path, .. } => format!("an open of {}", path.display()),
        Op::Write { fd, .. } => format!("a write to fd {fd}"),
        Op::Fsync { fd } => format!("an fsync of fd {fd}"),
        Op::Truncate { fd, .. } => format!("a truncate of fd {fd}"),
        Op::Rename { from, to } => format!("a rename {} -> {}", from.display(), to.display()),
        Op::Unlink { path } => format!("an unlink of {}", path.display()),
        Op::Mkdir { path } => format!("a mkdir of {}", path.display()),
        Op::FsyncDir { path } => format!("an fsync of the directory {}", path.display()),
        Op::Fault { .. } => "an injected fault".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> PathBuf {
        PathBuf::from("/t/state")
    }

    fn open(fd: u64, name: &str) -> Op {
        Op::Open {
            fd,
            path: state().join(name),
            created: true,
            trunc: false,
            append: false,
        }
    }

    fn write(fd: u64, bytes: &[u8]) -> Op {
        Op::Write {
            fd,
            off: Some(0),
            data: hex::encode(bytes),
            ok: true,
        }
    }

    fn report(ending: &str, kind: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"ending": ending, "error_kind": kind})).unwrap()
    }

    /// The refusal's whole write sequence: report.json, then the page.
    fn refusal(kind: &str) -> Vec<Op> {
        vec![
            open(1, ".report.json.tmp-9-0"),
            write(1, &report("UNRECOVERABLE_ERROR", kind)),
            Op::Fsync { fd: 1 },
            Op::Rename {
                from: state().join(".report.json.tmp-9-0"),
                to: state().join("report.json"),
            },
            Op::FsyncDir { path: state() },
            open(2, ".report.html.tmp-9-1"),
            write(2, b"<!DOCTYPE html>"),
            Op::Fsync { fd: 2 },
            Op::Rename {
                from: state().join(".report.html.tmp-9-1"),
                to: state().join("report.html"),
            },
        ]
    }

    #[test]
    fn a_refusal_paused_at_any_step_of_either_write_is_a_refusal() {
        let ops = refusal("checkpoint_checksum_mismatch");
        // (ops so far, phase): each step of report.json's write, then the page's.
        for (n, phase) in [
            (2, "temp_written"),
            (3, "after_fsync_file"),
            (4, "after_rename_before_fsync_dir"),
            (7, "temp_written"),
            (8, "after_fsync_file"),
            (9, "after_rename_before_fsync_dir"),
        ] {
            assert_eq!(
                under_way(&ops[..n], &state(), "checksum_mismatch", phase),
                Ok(()),
                "{phase} after {n} ops"
            );
        }
    }

    #[test]
    fn anything_else_is_a_run_on() {
        let st = state();
        let ops = refusal("checkpoint_checksum_mismatch");
        // Another phase: a refusal has no model call or checkpoint.
        assert!(under_way(&ops[..3], &st, "checksum_mismatch", "during_model_call").is_err());
        // Another refusal's report, or an ending's (what skip-checksum writes
        // when it re-reports a rotted finished frame).
        assert!(under_way(&ops[..3], &st, "unparseable", "after_fsync_file").is_err());
        let rereport = vec![
            open(1, ".report.json.tmp-9-0"),
            write(1, &report("GOAL_MET", "")),
        ];
        assert!(under_way(&rereport, &st, "checksum_mismatch", "temp_written").is_err());
        // A checkpoint, the journal, a workspace file: not the refusal's files.
        for name in [".checkpoint.json.tmp-9-0", "ledger.jsonl"] {
            let ops = vec![open(1, name), write(1, b"x")];
            assert!(under_way(&ops, &st, "checksum_mismatch", "temp_written").is_err());
        }
        let ws = vec![Op::Open {
            fd: 1,
            path: PathBuf::from("/t/ws/.report.json.tmp-9-0"),
            created: true,
            trunc: false,
            append: false,
        }];
        assert!(under_way(&ws, &st, "checksum_mismatch", "temp_written").is_err());
        // The page with no report before it.
        let page = vec![open(2, ".report.html.tmp-9-1"), write(2, b"<html>")];
        assert!(under_way(&page, &st, "checksum_mismatch", "temp_written").is_err());
        // A rename over the checkpoint.
        let mut over = ops[..3].to_vec();
        over.push(Op::Rename {
            from: st.join(".report.json.tmp-9-0"),
            to: st.join("checkpoint.json"),
        });
        assert!(under_way(
            &over,
            &st,
            "checksum_mismatch",
            "after_rename_before_fsync_dir"
        )
        .is_err());
    }
}
