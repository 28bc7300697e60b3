//! The oracle for `settled_task_never_rerun`: once a task's end (verified or
//! parked) or its prune is durable, no later request executes it. The oracle
//! learns that it is durable from two sources the harness cannot fake:
//!
//! - the disk: a checkpoint on disk when a process starts (after the power
//!   cut, in power-loss mode) lists the task completed, parked or pruned;
//! - the requests its replay server answered: the harness checkpoints after
//!   every task and after every drift check BEFORE its next model call, so
//!   once the same process sent a later call, that checkpoint was written
//!   and acknowledged (durable, fsynced). A task whose requests are followed
//!   by another call is settled; so are the tasks a judge call pruned (read
//!   from the case's cassette) once another call follows the judge's.
//!
//! A killed process's last request can reach the replay server after the
//! kill is confirmed and be taken with the next process's requests, always
//! first: so after a kill, the first request taken for a process is never
//! evidence that the harness went on from anything.

use std::collections::BTreeMap;

/// `execute/<task>/a<n>/<turn>` -> `<task>`.
pub fn execute_task_of(call_key: &str) -> Option<&str> {
    let rest = call_key.strip_prefix("execute/")?;
    let (task, tail) = rest.rsplit_once('/')?;
    let (task, attempt) = task.rsplit_once('/')?;
    (attempt.starts_with('a') && !tail.is_empty()).then_some(task)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// "finished (verified or parked)", "verified", "parked" or "pruned".
    pub how: String,
    /// How the oracle knows it is durable, for the violation message.
    pub since: String,
}

#[derive(Debug, Default)]
pub struct Tracker {
    settled: BTreeMap<String, Settled>,
    reported: std::collections::BTreeSet<String>,
}

impl Tracker {
    pub fn settled(&self) -> &BTreeMap<String, Settled> {
        &self.settled
    }

    fn settle(&mut self, task: &str, how: &str, since: String) {
        self.settled.entry(task.to_string()).or_insert(Settled {
            how: how.into(),
            since,
        });
    }

    /// At a process's start: what the checkpoint on disk says.
    pub fn on_disk(&mut self, s: &harness::state::RunState, process: usize) {
        let since = || format!("the checkpoint on disk when process {process} started lists it");
        for t in &s.completed {
            self.settle(&t.id, "verified", since());
        }
        for t in &s.parked {
            self.settle(&t.id, "parked", since());
        }
        for t in &s.pruned {
            self.settle(&t.id, "pruned", since());
        }
    }

    /// The call keys of the requests one process sent, in arrival order.
    /// `prunes`: judge call key -> the tasks its verdict prunes. `after_kill`:
    /// the previous process was killed (its last request may open this list).
    /// Returns one message per task executed again after it was settled.
    pub fn process(
        &mut self,
        process: usize,
        keys: &[String],
        prunes: &BTreeMap<String, Vec<String>>,
        after_kill: bool,
    ) -> Vec<String> {
        let mut found = vec![];
        // The task of the latest execute request, and whether that request
        // may count as this process's (not a killed one's straggler).
        let mut current: Option<(String, bool)> = None;
        let mut judge: Option<(String, bool)> = None;
        for (i, key) in keys.iter().enumerate() {
            let own = !(after_kill && i == 0);
            let task = execute_task_of(key);
            if let Some(t) = task {
                if let Some(s) = self.settled.get(t) {
                    if self.reported.insert(t.to_string()) {
                        found.push(format!(
                            "task {t} was {} and that was durable ({}), yet process {process} sent {key}: it ran again",
                            s.how, s.since
                        ));
                    }
                }
            }
            if let Some((prev, prev_own)) = current.take() {
                if task == Some(prev.as_str()) {
                    current = Some((prev, prev_own));
                } else if prev_own {
                    self.settle(
                        &prev,
                        "finished (verified or parked)",
                        format!("process {process} sent {key} after its last request"),
                    );
                }
            }
            if let Some((j, j_own)) = judge.take() {
                if j_own {
                    for t in prunes.get(&j).into_iter().flatten() {
                        self.settle(
                            t,
                            "pruned",
                            format!("by {j}, and process {process} sent {key} after it"),
                        );
                    }
                }
            }
            if let Some(t) = task {
                if current.is_none() {
                    current = Some((t.to_string(), own));
                }
            }
            if key.starts_with("judge/") {
                judge = Some((key.clone(), own));
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn prunes() -> BTreeMap<String, Vec<String>> {
        [("judge/2".to_string(), vec!["t5".to_string()])].into()
    }

    #[test]
    fn call_keys() {
        assert_eq!(execute_task_of("execute/t2/a1/0"), Some("t2"));
        assert_eq!(execute_task_of("execute/fix/db/a0/3"), Some("fix/db"));
        assert_eq!(execute_task_of("judge/2"), None);
        assert_eq!(execute_task_of("execute/t2"), None);
    }

    #[test]
    fn a_task_parked_then_gone_on_from_is_never_run_again() {
        let mut t = Tracker::default();
        // Process 0 parks t2 (two attempts), then the drift judge is called,
        // then it is killed before the checkpoint after the judge lands.
        let p0 = keys(&[
            "execute/t1/a0/0",
            "execute/t2/a0/0",
            "execute/t2/a1/0",
            "judge/2",
        ]);
        assert!(t.process(0, &p0, &prunes(), false).is_empty());
        assert_eq!(t.settled()["t2"].how, "finished (verified or parked)");
        // Process 1 runs t2 again: the checkpoint after its park was skipped.
        let p1 = keys(&["execute/t2/a0/0", "execute/t3/a0/0"]);
        let v = t.process(1, &p1, &prunes(), true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("task t2") && v[0].contains("execute/t2/a0/0"),
            "{v:?}"
        );
        // t5's prune was not gone on from in process 0 (nothing after judge/2).
        assert!(!t.settled().contains_key("t5"));
    }

    #[test]
    fn a_task_in_flight_at_a_kill_may_run_again() {
        let mut t = Tracker::default();
        let p0 = keys(&["execute/t1/a0/0", "execute/t2/a0/0"]);
        assert!(t.process(0, &p0, &prunes(), false).is_empty());
        // t2 was in flight: resume verifies it not started and runs it again.
        let p1 = keys(&[
            "execute/t2/a0/0",
            "execute/t2/a0/1",
            "judge/2",
            "execute/t3/a0/0",
        ]);
        assert!(t.process(1, &p1, &prunes(), true).is_empty());
        // Now t2 and (after judge/2 was followed by a call) t5 are settled.
        assert_eq!(t.settled()["t5"].how, "pruned");
        let v = t.process(2, &keys(&["execute/t5/a0/0"]), &prunes(), false);
        assert_eq!(v.len(), 1, "a pruned task ran: {v:?}");
    }

    #[test]
    fn a_straggler_from_a_killed_process_is_no_evidence() {
        let mut t = Tracker::default();
        // Process 0 was killed right after sending judge/2; the request was
        // taken with process 1's. The prune was never durable: t5 may run.
        let p1 = keys(&["judge/2", "execute/t3/a0/0", "execute/t5/a0/0"]);
        assert!(t.process(1, &p1, &prunes(), true).is_empty());
        // Without a kill before it, the same list means judge/2 was gone on from.
        let mut t = Tracker::default();
        assert_eq!(t.process(1, &p1, &prunes(), false).len(), 1);
    }

    #[test]
    fn the_disk_settles_too() {
        let mut s = harness::state::RunState::new("r".into(), "0".repeat(64), 0);
        s.parked.push(harness::state::ParkedTask {
            id: "t4".into(),
            description: String::new(),
            reason: String::new(),
            step: 4,
            uncommitted_paths: vec![],
        });
        let mut t = Tracker::default();
        t.on_disk(&s, 3);
        let v = t.process(3, &keys(&["execute/t4/a0/0"]), &prunes(), true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("parked"), "{v:?}");
    }
}
