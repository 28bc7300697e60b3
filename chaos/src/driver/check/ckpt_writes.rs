//! The checkpoint writes one process made, from its operation log: what the
//! no_torn_checkpoint check holds the disk to after a kill or a power cut.

use crate::fsmodel;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The checkpoint writes one process made: every whole frame it wrote toward
/// checkpoint.json, and the index of the last one the process went on from
/// (an operation that is not part of that write sequence followed it, or the
/// process exited): the harness believed it durable.
pub(in crate::driver) fn checkpoint_writes(
    ops: &[fsmodel::Op],
    state: &Path,
    exited: bool,
) -> (Vec<Vec<u8>>, Option<usize>) {
    use fsmodel::Op;
    let ck = harness::checkpoint::path_in(state);
    let is_tmp = |p: &Path| {
        p.parent() == Some(state)
            && p.file_name()
                .map(|n| n.to_string_lossy().starts_with(".checkpoint.json.tmp-"))
                .unwrap_or(false)
    };
    let mut bufs: BTreeMap<u64, (PathBuf, Vec<u8>)> = BTreeMap::new();
    let mut cands: Vec<Vec<u8>> = vec![];
    // (candidate index, fd of its write sequence) awaiting acknowledgement
    let mut open_seq: Option<(usize, u64)> = None;
    let mut acked = None;
    let mut inplace: BTreeMap<u64, usize> = BTreeMap::new();
    let mut renamed: BTreeSet<u64> = BTreeSet::new();
    for op in ops {
        let part_of_seq = match (&open_seq, op) {
            (Some((_, fd)), Op::Fsync { fd: f }) | (Some((_, fd)), Op::Write { fd: f, .. }) => {
                f == fd
            }
            (Some(_), Op::FsyncDir { path }) => path == state,
            _ => false,
        };
        if matches!(op, Op::Fault { path, .. } if path == state || *path == ck || is_tmp(path)) {
            // The write sequence failed: atomic_write returned an error, so the
            // harness did not go on from it as durable.
            open_seq = None;
        } else if !part_of_seq {
            if let Some((i, _)) = open_seq.take() {
                acked = Some(i);
            }
        }
        match op {
            Op::Open { fd, path, .. } if is_tmp(path) => {
                bufs.insert(*fd, (path.clone(), vec![]));
            }
            Op::Open { fd, path, .. } if *path == ck => {
                // In place (no temp, no rename): the write sequence is the candidate.
                cands.push(vec![]);
                inplace.insert(*fd, cands.len() - 1);
                open_seq = Some((cands.len() - 1, *fd));
            }
            Op::Write { fd, off, .. } => {
                let data = op.write_bytes();
                let put = |b: &mut Vec<u8>| {
                    let o = off.unwrap_or(b.len() as u64) as usize;
                    if b.len() < o + data.len() {
                        b.resize(o + data.len(), 0);
                    }
                    b[o..o + data.len()].copy_from_slice(&data);
                };
                if let Some((_, b)) = bufs.get_mut(fd) {
                    put(b);
                }
                if let Some(i) = inplace.get(fd) {
                    put(&mut cands[*i]);
                }
            }
            Op::Rename { from, to } if *to == ck => {
                if let Some((fd, (_, b))) = bufs.iter().rev().find(|(_, (p, _))| p == from) {
                    cands.push(b.clone());
                    open_seq = Some((cands.len() - 1, *fd));
                    renamed.insert(*fd);
                }
            }
            _ => {}
        }
    }
    if exited {
        if let Some((i, _)) = open_seq {
            acked = Some(i);
        }
    } else if let Some((_, (_, b))) = bufs
        .iter()
        .next_back()
        .filter(|(fd, (p, _))| !renamed.contains(*fd) && !p.as_os_str().is_empty())
    {
        // The log is written right after each operation: a kill between the
        // last temp file's rename and its log line leaves that temp's frame
        // in place with no rename in the log.
        cands.push(b.clone());
    }
    (cands, acked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_checkpoint_writes() {
        use serde_json::json;
        let st = Path::new("/s");
        let ops: Vec<fsmodel::Op> = [
            json!({"op":"open","fd":1,"path":"/s/.checkpoint.json.tmp-1-0","created":true,"trunc":false,"append":false}),
            json!({"op":"write","fd":1,"off":0,"data":hex::encode("A"),"ok":true}),
            json!({"op":"fsync","fd":1}),
            json!({"op":"rename","from":"/s/.checkpoint.json.tmp-1-0","to":"/s/checkpoint.json"}),
            json!({"op":"fsync_dir","path":"/s"}),
            json!({"op":"open","fd":2,"path":"/s/ledger.jsonl","created":false,"trunc":false,"append":true}),
            json!({"op":"open","fd":3,"path":"/s/.checkpoint.json.tmp-1-1","created":true,"trunc":false,"append":false}),
            json!({"op":"write","fd":3,"off":0,"data":hex::encode("B"),"ok":true}),
            json!({"op":"fsync","fd":3}),
            json!({"op":"rename","from":"/s/.checkpoint.json.tmp-1-1","to":"/s/checkpoint.json"}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let (c, a) = checkpoint_writes(&ops, st, false);
        assert_eq!(c, vec![b"A".to_vec(), b"B".to_vec()]);
        assert_eq!(
            a,
            Some(0),
            "B was renamed but the harness had not gone on from it"
        );
        assert_eq!(checkpoint_writes(&ops, st, true).1, Some(1));
    }
}
