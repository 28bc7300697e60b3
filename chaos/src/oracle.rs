//! The oracle's own reading of the disk: independent of the harness's loaders
//! on purpose (its verify, journal replay and outbox reader are what is under
//! test). Only the checkpoint frame is decoded with the harness's own
//! `checkpoint::decode`, since "is this a whole, valid frame" is defined by it.

use harness::ledger::JournalEntry;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What the oracle says about a task's effect on the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Done,
    NotStarted,
    Partial(String),
}

impl Effect {
    /// The harness's `VerifyOutcome` wire name.
    pub fn wire(&self) -> &'static str {
        match self {
            Effect::Done => "done",
            Effect::NotStarted => "not_started",
            Effect::Partial(_) => "partially_applied",
        }
    }
}

/// Complete outbox lines per idempotency key, read through the harness's
/// own reader (`OutboxEntry`): a final line without its newline never
/// completed (its fsync never returned) and is not a post; an unreadable
/// outbox holds none.
pub fn outbox_counts(path: &Path) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    let entries = harness::outbox::Outbox::new(path)
        .entries()
        .unwrap_or_default();
    for e in entries {
        *m.entry(e.key).or_insert(0) += 1;
    }
    m
}

/// The ledger journal as the oracle reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Journal {
    /// seq -> (call_key, worst_usd) of every reserve.
    pub reserves: BTreeMap<u64, (String, f64)>,
    /// seq -> (cost_usd, basis) of every record.
    pub records: BTreeMap<u64, (f64, String)>,
    pub released: Vec<u64>,
    /// A complete line that is not a journal entry (e.g. a torn append with
    /// a zero-filled hole): the harness must refuse such a journal.
    pub bad_line: Option<usize>,
}

impl Journal {
    pub fn read(path: &Path) -> Journal {
        let mut j = Journal::default();
        let Ok(b) = std::fs::read(path) else { return j };
        // The harness's one journal parser (the frame is the harness's);
        // what the lines mean for money is judged here, independently.
        let text = harness::ledger::journal::parse(&b);
        for line in text.lines {
            match line.entry {
                JournalEntry::Reserve {
                    seq,
                    call_key,
                    worst_usd,
                    ..
                } => {
                    j.reserves.insert(seq, (call_key, worst_usd));
                }
                JournalEntry::Record {
                    seq,
                    cost_usd,
                    basis,
                    ..
                } => {
                    j.records.insert(seq, (cost_usd, basis));
                }
                JournalEntry::Release { seq } => j.released.push(seq),
                JournalEntry::Limit { .. } => {}
            }
        }
        j.bad_line = text.corrupt.first().map(|c| c.number);
        j
    }
    pub fn booked(&self) -> f64 {
        self.records.values().map(|(c, _)| c).sum()
    }
    /// Reserves with neither a record nor a release: calls in flight at a kill.
    pub fn open(&self) -> BTreeMap<u64, (String, f64)> {
        self.reserves
            .iter()
            .filter(|(s, _)| !self.records.contains_key(s) && !self.released.contains(s))
            .map(|(s, v)| (*s, v.clone()))
            .collect()
    }
    /// What the harness has committed to: booked money plus the worst case
    /// of everything in flight (booked that way on resume).
    pub fn committed(&self) -> f64 {
        self.booked() + self.open().values().map(|(_, w)| w).sum::<f64>()
    }
}

/// A task's effect on the disk, judged from the files alone.
pub fn effect(
    verify: &Value,
    ws: &Path,
    outbox: &Path,
    migrations: &BTreeMap<String, Vec<(String, String)>>,
) -> Effect {
    let s = |k: &str| verify.get(k).and_then(Value::as_str).unwrap_or("");
    match s("kind") {
        "file_contains" => match std::fs::read(ws.join(s("path"))) {
            Ok(b) if contains(&b, s("text").as_bytes()) => Effect::Done,
            _ => Effect::NotStarted,
        },
        "file_exists" => {
            if std::fs::symlink_metadata(ws.join(s("path"))).is_ok() {
                Effect::Done
            } else {
                Effect::NotStarted
            }
        }
        "file_absent" => {
            if std::fs::symlink_metadata(ws.join(s("path"))).is_err() {
                Effect::Done
            } else {
                Effect::NotStarted
            }
        }
        "outbox_has" => {
            if outbox_counts(outbox).get(s("key")).copied().unwrap_or(0) > 0 {
                Effect::Done
            } else {
                Effect::NotStarted
            }
        }
        "migration_state" => {
            let Some(steps) = migrations.get(s("name")) else {
                return Effect::NotStarted;
            };
            let applied: Vec<bool> = steps
                .iter()
                .map(|(p, c)| {
                    std::fs::read(ws.join(p))
                        .map(|b| b == c.as_bytes())
                        .unwrap_or(false)
                })
                .collect();
            let n = applied.iter().filter(|a| **a).count();
            if n == steps.len() {
                Effect::Done
            } else if n == 0 {
                Effect::NotStarted
            } else {
                Effect::Partial(format!("{n} of {} steps in place", steps.len()))
            }
        }
        other => Effect::Partial(format!("the oracle cannot judge verify kind {other:?}")),
    }
}

fn contains(h: &[u8], n: &[u8]) -> bool {
    n.is_empty() || h.windows(n.len()).any(|w| w == n)
}

/// The checkpoint file as the oracle sees it.
#[derive(Debug, Clone)]
pub enum Ckpt {
    Absent,
    Valid(Box<harness::state::RunState>, Vec<u8>),
    /// Present but not a whole valid frame: (refusal kind, bytes).
    Invalid(String, Vec<u8>),
}

impl Ckpt {
    pub fn read(state_dir: &Path, goal_sha: &str) -> Ckpt {
        match std::fs::read(harness::checkpoint::path_in(state_dir)) {
            Err(_) => Ckpt::Absent,
            Ok(b) => match harness::checkpoint::decode(&b, Some(goal_sha)) {
                Ok(s) => Ckpt::Valid(Box::new(s), b),
                Err(r) => Ckpt::Invalid(r.kind().to_string(), b),
            },
        }
    }
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Ckpt::Absent => None,
            Ckpt::Valid(_, b) | Ckpt::Invalid(_, b) => Some(b),
        }
    }
    pub fn state(&self) -> Option<&harness::state::RunState> {
        match self {
            Ckpt::Valid(s, _) => Some(s),
            _ => None,
        }
    }
}

/// A short digest of a checkpoint's bytes for messages.
pub fn digest(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(b)[..6])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outbox_and_journal_readers() {
        let d = tempfile::tempdir().unwrap();
        let o = d.path().join("o");
        // Lines as the harness writes them; the last one torn.
        let line = |key: &str| {
            serde_json::to_string(&harness::outbox::OutboxEntry {
                key: key.into(),
                channel: "#eng".into(),
                text: "t".into(),
            })
            .unwrap()
        };
        let torn = line("c");
        std::fs::write(
            &o,
            format!(
                "{}\n{}\n{}\n{}",
                line("a"),
                line("a"),
                line("b"),
                &torn[..torn.len() - 1]
            ),
        )
        .unwrap();
        let c = outbox_counts(&o);
        assert_eq!((c["a"], c["b"], c.get("c")), (2, 1, None));
        let j = d.path().join("j");
        let reserve = |seq: u64, call_key: &str, worst_usd: f64| JournalEntry::Reserve {
            seq,
            worst_usd,
            attempt: 0,
            role: Some(harness::model::types::CallRole::Plan),
            call_key: call_key.into(),
            model: "m".into(),
        };
        let frame = |e: &JournalEntry| harness::ledger::journal::frame(e).unwrap();
        let record = JournalEntry::Record {
            seq: 0,
            cost_usd: 0.1,
            usage: harness::model::types::Usage::default(),
            basis: "usage".into(),
        };
        std::fs::write(
            &j,
            format!(
                "{}{}{}{{\"op\":\"rec",
                frame(&reserve(0, "plan/0", 0.5)),
                frame(&record),
                frame(&reserve(1, "x", 0.25))
            ),
        )
        .unwrap();
        let jr = Journal::read(&j);
        assert_eq!(jr.booked(), 0.1);
        assert_eq!(jr.open().len(), 1);
        assert!((jr.committed() - 0.35).abs() < 1e-12);
        assert_eq!(jr.bad_line, None);
        std::fs::write(&j, b"\0\0\0\"}\n").unwrap();
        assert_eq!(Journal::read(&j).bad_line, Some(1));
    }

    #[test]
    fn effects() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let mut m = BTreeMap::new();
        m.insert(
            "m".to_string(),
            vec![
                ("a".to_string(), "1".to_string()),
                ("b/c".to_string(), "2".to_string()),
            ],
        );
        let v = json!({"kind":"migration_state","name":"m"});
        assert_eq!(effect(&v, ws, &ws.join("o"), &m), Effect::NotStarted);
        std::fs::write(ws.join("a"), "1").unwrap();
        assert!(matches!(
            effect(&v, ws, &ws.join("o"), &m),
            Effect::Partial(_)
        ));
        std::fs::create_dir(ws.join("b")).unwrap();
        std::fs::write(ws.join("b/c"), "2").unwrap();
        assert_eq!(effect(&v, ws, &ws.join("o"), &m), Effect::Done);
        assert_eq!(
            effect(
                &json!({"kind":"file_contains","path":"a","text":"1"}),
                ws,
                &ws.join("o"),
                &m
            ),
            Effect::Done
        );
        assert_eq!(
            effect(
                &json!({"kind":"outbox_has","key":"k"}),
                ws,
                &ws.join("o"),
                &m
            ),
            Effect::NotStarted
        );
    }
}
