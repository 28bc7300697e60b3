//! The oracle for `compaction_at_most_once`. A compaction (`compact/<n>`)
//! is the one model call whose outcome is a change to the run's memory that
//! no task's verify can see: the history replaced by a summary. Its
//! checkpoint comes right after it (`after_compact_before_checkpoint`, then
//! the checkpoint, then the next model call), so:
//!
//! - a kill before that checkpoint loses the attempt: the resume keeps the
//!   checkpointed history, counts from the checkpointed
//!   `compaction_attempts`, and sends `compact/<n>` again later (paid twice,
//!   both in the journal: that is `ledger_never_forgets`'s to check);
//! - once the checkpoint landed, `compact/<n>` is never sent again. The
//!   oracle knows it landed from the disk (a checkpoint on disk when a
//!   process starts counts more than `n` attempts) or from the requests its
//!   replay server answered (the same process sent a later call, which comes
//!   after that checkpoint);
//! - every checkpoint, and the report, lists the attempts in order, each
//!   once, as many as the checkpoint counts (the newest
//!   `harness::state::COMPACTIONS_MAX` of them).
//!
//! As in `rerun`, after a kill the first request taken for a process may be
//! the killed one's straggler, and counts as no evidence.

use std::collections::{BTreeMap, BTreeSet};

/// `compact/<n>` -> `n`.
pub fn index_of(call_key: &str) -> Option<u32> {
    call_key.strip_prefix("compact/")?.parse().ok()
}

#[derive(Debug, Default)]
pub struct Tracker {
    /// n -> how the oracle knows `compact/<n>`'s checkpoint landed.
    settled: BTreeMap<u32, String>,
    reported: BTreeSet<u32>,
    /// A compaction was sent, or is on disk: a resume after it exercises
    /// the invariant.
    seen: bool,
}

impl Tracker {
    pub fn seen(&self) -> bool {
        self.seen
    }

    /// At a process's start: the checkpoint on disk counts `attempts`.
    pub fn on_disk(&mut self, attempts: u32, process: usize) {
        for n in 0..attempts {
            self.settled.entry(n).or_insert_with(|| {
                format!("the checkpoint on disk when process {process} started counts {attempts} attempt(s)")
            });
        }
        self.seen |= attempts > 0;
    }

    /// The call keys one process sent, in arrival order (`after_kill`: the
    /// previous process was killed). One message per compaction sent again
    /// after its checkpoint landed.
    pub fn process(&mut self, process: usize, keys: &[String], after_kill: bool) -> Vec<String> {
        let mut found = vec![];
        // The latest compaction request and whether it is this process's own.
        let mut open: Option<(u32, bool)> = None;
        for (i, key) in keys.iter().enumerate() {
            let own = !(after_kill && i == 0);
            let n = index_of(key);
            if let Some(n) = n {
                self.seen = true;
                if let Some(since) = self.settled.get(&n) {
                    if self.reported.insert(n) {
                        found.push(format!(
                            "compact/{n} was recorded and that was durable ({since}), yet process {process} sent it again"
                        ));
                    }
                }
            }
            if let Some((m, m_own)) = open.take() {
                if n == Some(m) {
                    // Another attempt of the same call (an HTTP retry).
                    open = Some((m, m_own));
                    continue;
                }
                if m_own {
                    self.settled
                        .entry(m)
                        .or_insert_with(|| format!("process {process} sent {key} after it"));
                }
            }
            if let Some(n) = n {
                open = Some((n, own));
            }
        }
        found
    }
}

/// The compaction records of a checkpoint (or report) against the attempts
/// its checkpoint counts: `compact/<attempts - len>` .. `compact/<attempts - 1>`,
/// each once, in order, the newest `COMPACTIONS_MAX`. Err says what is wrong.
pub fn records_in_order(keys: &[String], attempts: u32) -> Result<(), RecordsOutOfOrder> {
    let len = (attempts as usize).min(harness::state::COMPACTIONS_MAX);
    let want: Vec<String> = (attempts as usize - len..attempts as usize)
        .map(|n| format!("compact/{n}"))
        .collect();
    if keys == want.as_slice() {
        Ok(())
    } else {
        Err(RecordsOutOfOrder {
            keys: keys.to_vec(),
            attempts,
            want,
        })
    }
}

/// Compaction records that are not the ones the attempt count implies (the
/// check's findings quote it after "the report" or "the checkpoint").
#[derive(Debug, thiserror::Error)]
#[error("lists compactions {keys:?} but counts {attempts} attempt(s): expected {want:?}")]
pub struct RecordsOutOfOrder {
    keys: Vec<String>,
    attempts: u32,
    want: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn call_keys() {
        assert_eq!(index_of("compact/3"), Some(3));
        assert_eq!(index_of("compact/x"), None);
        assert_eq!(index_of("replan/0"), None);
    }

    #[test]
    fn a_compaction_gone_on_from_is_never_sent_again() {
        let mut t = Tracker::default();
        // Process 0 compacted, went on to the replan and was killed there.
        let p0 = keys(&["execute/t3/a0/1", "compact/1", "replan/0"]);
        assert!(t.process(0, &p0, false).is_empty());
        // A harness that skipped the checkpoint after the compaction sends
        // compact/1 again after the resume.
        let p1 = keys(&["replan/0", "execute/t4/a0/0", "compact/1"]);
        let v = t.process(1, &p1, true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("compact/1") && v[0].contains("replan/0"),
            "{v:?}"
        );
    }

    #[test]
    fn a_compaction_killed_before_its_checkpoint_may_be_sent_again() {
        let mut t = Tracker::default();
        // Killed in flight or before its checkpoint: nothing after it.
        assert!(t
            .process(0, &keys(&["execute/t2/a0/1", "compact/0"]), false)
            .is_empty());
        // The straggler rule: a killed process's compact/0 taken first with
        // the next process's requests is no evidence either.
        let p1 = keys(&["compact/0", "execute/t3/a0/0", "compact/0", "replan/0"]);
        assert!(t.process(1, &p1, true).is_empty());
        // Now compact/0 was gone on from in process 1.
        assert_eq!(t.process(2, &keys(&["compact/0"]), false).len(), 1);
    }

    #[test]
    fn an_http_retry_of_the_same_call_is_not_a_second_compaction() {
        let mut t = Tracker::default();
        let p0 = keys(&["compact/0", "compact/0", "execute/t3/a0/0"]);
        assert!(t.process(0, &p0, false).is_empty());
    }

    #[test]
    fn the_disk_settles_too() {
        let mut t = Tracker::default();
        t.on_disk(2, 1);
        assert!(t.seen());
        assert!(t.process(1, &keys(&["compact/2"]), true).is_empty());
        let v = t.process(1, &keys(&["compact/1"]), false);
        assert!(v.len() == 1 && v[0].contains("counts 2"), "{v:?}");
    }

    #[test]
    fn records_are_each_attempt_once_in_order() {
        assert!(records_in_order(&[], 0).is_ok());
        assert!(records_in_order(&keys(&["compact/0", "compact/1"]), 2).is_ok());
        assert!(records_in_order(&keys(&["compact/0", "compact/0"]), 2).is_err());
        assert!(records_in_order(&keys(&["compact/0"]), 2).is_err());
        assert!(records_in_order(&keys(&["compact/1", "compact/0"]), 2).is_err());
        // Past the checkpoint's bound only the newest are kept.
        let max = harness::state::COMPACTIONS_MAX as u32;
        let newest: Vec<String> = (1..=max).map(|n| format!("compact/{n}")).collect();
        assert!(records_in_order(&newest, max + 1).is_ok());
    }
}
