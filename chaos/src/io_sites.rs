//! Where an injected I/O error leaves a write in doubt, read from a clean
//! run's operation log: the directory fsync right after a workspace write's
//! rename. The write has landed (a reader sees it), but its name is durable
//! only once that fsync returns; a fault there is the one I/O error after
//! which the page cache says "done" and a power cut may say otherwise. The
//! last such site of a run is where the run's end (the settle of the task in
//! flight, the goal predicate) meets a write in doubt: issue 47's defect
//! (ENOSPC there in budget-wind-down, then the budget, then "verified at
//! end") lived there, and the uniform draw over all fsyncs first reached it
//! at seed 1's kill 2446 (its 123rd io_error trial), past CI's 200 kills.

use crate::fsmodel::Op;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The 1-based indexes, counted as the harness's fault plan counts its
/// `fsync` class (file and directory fsyncs alike, `HARNESS_SIMFS_FAULT=
/// <errno>:fsync:<n>`), of every directory fsync that makes a rename into
/// the workspace `ws` durable, in log order.
pub fn in_doubt_fsyncs(ops: &[Op], ws: &Path) -> Vec<u64> {
    let mut n = 0;
    let mut renamed_into: BTreeSet<PathBuf> = BTreeSet::new();
    let mut sites = vec![];
    for op in ops {
        match op {
            Op::Rename { to, .. } if to.starts_with(ws) => {
                if let Some(d) = to.parent() {
                    renamed_into.insert(d.to_path_buf());
                }
            }
            Op::Fsync { .. } => n += 1,
            Op::FsyncDir { path } => {
                n += 1;
                if renamed_into.remove(path) {
                    sites.push(n);
                }
            }
            _ => {}
        }
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dir_fsync_after_a_workspace_rename_is_a_site_and_nothing_else_is() {
        let ws = PathBuf::from("/t/ws");
        let st = PathBuf::from("/t/state");
        let ops = vec![
            Op::Fsync { fd: 1 },               // 1: the journal
            Op::FsyncDir { path: st.clone() }, // 2: the state dir
            Op::FsyncDir {
                path: ws.join("src"),
            }, // 3: a new dir's parent, no rename
            Op::Fsync { fd: 2 },               // 4: the temp file
            Op::Rename {
                from: ws.join("src/.harness-write-1-0.tmp"),
                to: ws.join("src/export.py"),
            },
            Op::FsyncDir {
                path: ws.join("src"),
            }, // 5: the site
            Op::Rename {
                from: st.join(".checkpoint.json.tmp-1-0"),
                to: st.join("checkpoint.json"),
            },
            Op::FsyncDir { path: st.clone() }, // 6: the checkpoint's, not a site
        ];
        assert_eq!(in_doubt_fsyncs(&ops, &ws), vec![5]);
    }
}
