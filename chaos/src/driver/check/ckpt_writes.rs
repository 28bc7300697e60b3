//! The checkpoint writes one process made, from its operation log: what the
//! no_torn_checkpoint check holds the disk to after a kill or a power cut.

use crate::fsmodel::{self, Op};
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
    let mut w = Writes {
        state,
        ck: harness::checkpoint::path_in(state),
        bufs: BTreeMap::new(),
        cands: vec![],
        open_seq: None,
        acked: None,
        inplace: BTreeMap::new(),
        renamed: BTreeSet::new(),
    };
    for op in ops {
        w.acknowledge(op);
        w.record(op);
    }
    w.finish(exited)
}

/// The state of the scan over one process's operation log.
struct Writes<'a> {
    state: &'a Path,
    ck: PathBuf,
    /// Temp files by fd: their path and what was written to them.
    bufs: BTreeMap<u64, (PathBuf, Vec<u8>)>,
    cands: Vec<Vec<u8>>,
    /// (candidate index, fd of its write sequence) awaiting acknowledgement
    open_seq: Option<(usize, u64)>,
    acked: Option<usize>,
    /// checkpoint.json opened in place, by fd: its candidate's index.
    inplace: BTreeMap<u64, usize>,
    renamed: BTreeSet<u64>,
}

impl Writes<'_> {
    fn is_tmp(&self, p: &Path) -> bool {
        p.parent() == Some(self.state)
            && p.file_name()
                .map(|n| n.to_string_lossy().starts_with(".checkpoint.json.tmp-"))
                .unwrap_or(false)
    }

    /// An operation outside the open write sequence acknowledges it: the
    /// harness went on from it.
    fn acknowledge(&mut self, op: &Op) {
        let part_of_seq = match (&self.open_seq, op) {
            (Some((_, fd)), Op::Fsync { fd: f }) | (Some((_, fd)), Op::Write { fd: f, .. }) => {
                f == fd
            }
            (Some(_), Op::FsyncDir { path }) => path == self.state,
            _ => false,
        };
        if matches!(op, Op::Fault { path, .. } if path == self.state || *path == self.ck || self.is_tmp(path))
        {
            // The write sequence failed: atomic_write returned an error, so the
            // harness did not go on from it as durable.
            self.open_seq = None;
        } else if !part_of_seq {
            if let Some((i, _)) = self.open_seq.take() {
                self.acked = Some(i);
            }
        }
    }

    /// Opens, writes and renames toward checkpoint.json: the candidates.
    fn record(&mut self, op: &Op) {
        match op {
            Op::Open { fd, path, .. } if self.is_tmp(path) => {
                self.bufs.insert(*fd, (path.clone(), vec![]));
            }
            Op::Open { fd, path, .. } if *path == self.ck => {
                // In place (no temp, no rename): the write sequence is the candidate.
                self.cands.push(vec![]);
                self.inplace.insert(*fd, self.cands.len() - 1);
                self.open_seq = Some((self.cands.len() - 1, *fd));
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
                if let Some((_, b)) = self.bufs.get_mut(fd) {
                    put(b);
                }
                if let Some(i) = self.inplace.get(fd) {
                    put(&mut self.cands[*i]);
                }
            }
            Op::Rename { from, to } if *to == self.ck => {
                if let Some((fd, (_, b))) = self.bufs.iter().rev().find(|(_, (p, _))| p == from) {
                    self.cands.push(b.clone());
                    self.open_seq = Some((self.cands.len() - 1, *fd));
                    self.renamed.insert(*fd);
                }
            }
            _ => {}
        }
    }

    /// An exit acknowledges the open sequence; a kill may have come between
    /// the last temp's rename and its log line.
    fn finish(mut self, exited: bool) -> (Vec<Vec<u8>>, Option<usize>) {
        if exited {
            if let Some((i, _)) = self.open_seq {
                self.acked = Some(i);
            }
        } else if let Some((_, (_, b))) = self
            .bufs
            .iter()
            .next_back()
            .filter(|(fd, (p, _))| !self.renamed.contains(*fd) && !p.as_os_str().is_empty())
        {
            // The log is written right after each operation: a kill between the
            // last temp file's rename and its log line leaves that temp's frame
            // in place with no rename in the log.
            self.cands.push(b.clone());
        }
        (self.cands, self.acked)
    }
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
