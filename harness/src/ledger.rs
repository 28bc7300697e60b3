//! The hard-cap ledger: a control, not an observation. It reserves the worst
//! case (prompt estimate + max_tokens at output price) BEFORE every call and
//! refuses a call that would cross the cap, setting `blocked` so the top of the
//! loop reports BUDGET_EXHAUSTED (spend stalls below the cap: $27.75 of $28).
//! After the call, `record` books all four usage fields. The model never sees
//! this ledger or any dollar figure.
//!
//! Durability: every reserve and every record is appended to a journal
//! (`ledger.jsonl` in the state dir) and fsynced before the call is made, so a
//! kill mid-call cannot make the run forget money. The promise for a call in
//! flight at a kill (a reserve with no matching record): it is booked at its
//! reserved worst case on resume. Spend therefore never decreases across
//! resumes and never under-counts.

use crate::model::types::{CallRole, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Cache reads bill at 0.1x the input price, cache writes at 1.25x.
pub const CACHE_READ_MULTIPLIER: f64 = 0.1;
pub const CACHE_WRITE_MULTIPLIER: f64 = 1.25;
/// Fraction of the cap from which the budget notice goes at the end of the
/// messages, and from which the run only finishes the current task.
pub const NOTICE_AT_FRACTION: f64 = 0.7;
pub const WIND_DOWN_AT_FRACTION: f64 = 0.9;
/// The spend curve keeps one point per call; a run that makes more calls than
/// this keeps the first and last halves (the report says how many were elided).
pub const SPEND_CURVE_MAX_POINTS: usize = 4000;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
}

pub type PriceTable = BTreeMap<String, Price>;

/// What one usage costs at a price, all four fields.
pub fn cost_usd(price: &Price, u: &Usage) -> f64 {
    (u.input_tokens as f64 * price.input_usd_per_mtok
        + u.cache_read_input_tokens as f64 * price.input_usd_per_mtok * CACHE_READ_MULTIPLIER
        + u.cache_creation_input_tokens as f64 * price.input_usd_per_mtok * CACHE_WRITE_MULTIPLIER
        + u.output_tokens as f64 * price.output_usd_per_mtok)
        / 1e6
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "budget refused the next {role} call: would reach ${would_reach_usd:.4} of ${hard_cap_usd:.2}"
)]
pub struct BudgetExceeded {
    pub role: String,
    pub would_reach_usd: f64,
    pub hard_cap_usd: f64,
}

/// A granted reservation; consumed by `record`, `book_worst` or `release`.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Reservation {
    pub seq: u64,
    pub call_key: String,
    pub role: CallRole,
    pub model: String,
    pub worst_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpendPoint {
    pub call: u64,
    pub role: CallRole,
    pub call_key: String,
    pub cost_usd: f64,
    pub spent_usd: f64,
    /// "usage" (booked from reported usage) or "worst_case" (unknown usage:
    /// an unparseable reply or a call in flight at a kill).
    pub basis: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerSnapshot {
    pub spent_usd: f64,
    pub usage: Usage,
    pub blocked: bool,
    pub calls: u64,
    pub spend_curve: Vec<SpendPoint>,
    pub spend_curve_elided: u64,
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum JournalEntry {
    Reserve {
        seq: u64,
        call_key: String,
        role: CallRole,
        model: String,
        worst_usd: f64,
    },
    Record {
        seq: u64,
        cost_usd: f64,
        usage: Usage,
        basis: String,
    },
    Release {
        seq: u64,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger journal {path}: {detail}")]
    Journal { path: String, detail: String },
}

#[derive(Debug)]
pub struct Ledger {
    hard_cap_usd: f64,
    prices: PriceTable,
    snap: LedgerSnapshot,
    next_seq: u64,
    journal: Option<PathBuf>,
}

impl Ledger {
    pub fn new(hard_cap_usd: f64, prices: PriceTable) -> Ledger {
        assert!(
            hard_cap_usd.is_finite() && hard_cap_usd > 0.0,
            "spec validation guarantees a positive cap"
        );
        Ledger {
            hard_cap_usd,
            prices,
            snap: LedgerSnapshot::default(),
            next_seq: 0,
            journal: None,
        }
    }

    /// Attach the durable journal at `path`, replaying whatever it holds. A
    /// reserve with no record or release is a call that was in flight at a
    /// kill: it is booked at its worst case, durably, before anything else.
    pub fn open_journal(&mut self, path: &Path) -> Result<(), LedgerError> {
        let jerr = |detail: String| LedgerError::Journal {
            path: path.display().to_string(),
            detail,
        };
        let text = match std::fs::read(path) {
            Ok(b) => String::from_utf8(b).map_err(|e| jerr(format!("not UTF-8: {e}")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(jerr(e.to_string())),
        };
        let mut open: BTreeMap<u64, Reservation> = BTreeMap::new();
        let complete = text.rfind('\n').map(|i| &text[..=i]).unwrap_or("");
        // A final line without its newline was torn by a kill mid-append; it
        // never happened. If it was a record, its reserve stays open and is
        // booked at worst case below: conservative, never an undercount.
        for (n, line) in complete.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: JournalEntry =
                serde_json::from_str(line).map_err(|e| jerr(format!("line {}: {e}", n + 1)))?;
            match entry {
                JournalEntry::Reserve {
                    seq,
                    call_key,
                    role,
                    model,
                    worst_usd,
                } => {
                    self.next_seq = self.next_seq.max(seq + 1);
                    open.insert(
                        seq,
                        Reservation {
                            seq,
                            call_key,
                            role,
                            model,
                            worst_usd,
                        },
                    );
                }
                JournalEntry::Record {
                    seq,
                    cost_usd,
                    usage,
                    basis,
                } => {
                    let Some(r) = open.remove(&seq) else {
                        return Err(jerr(format!(
                            "line {}: record for unknown reservation {seq}",
                            n + 1
                        )));
                    };
                    self.book(&r, cost_usd, usage, &basis);
                }
                JournalEntry::Release { seq } => {
                    open.remove(&seq);
                }
            }
        }
        // Truncate a torn tail so the next append starts on a line boundary.
        if complete.len() != text.len() {
            let f = crate::simfs::File::open(path, crate::simfs::Open::Existing)
                .map_err(|e| jerr(e.to_string()))?;
            f.set_len(complete.len() as u64)
                .map_err(|e| jerr(e.to_string()))?;
            f.sync_all().map_err(|e| jerr(e.to_string()))?;
        }
        // An existing journal's name may not be durable yet (its creating
        // append's directory fsync may have failed before a kill): make it so.
        if path.exists() {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            crate::durable::fsync_dir(dir)
                .map_err(|e| jerr(format!("fsync of {}: {e}", dir.display())))?;
        }
        self.journal = Some(path.to_path_buf());
        for (_, r) in open {
            self.book_worst(r, 1).map_err(|e| jerr(e.to_string()))?;
        }
        Ok(())
    }

    /// Read a journal without touching it (for `harness status`): money
    /// booked, and the worst case of calls reserved but not yet booked.
    pub fn peek_journal(path: &Path) -> Option<(f64, f64)> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut open: BTreeMap<u64, f64> = BTreeMap::new();
        let mut booked = 0.0;
        for line in text.lines() {
            match serde_json::from_str::<JournalEntry>(line) {
                Ok(JournalEntry::Reserve { seq, worst_usd, .. }) => {
                    open.insert(seq, worst_usd);
                }
                Ok(JournalEntry::Record { seq, cost_usd, .. }) => {
                    open.remove(&seq);
                    booked += cost_usd;
                }
                Ok(JournalEntry::Release { seq }) => {
                    open.remove(&seq);
                }
                Err(_) => {}
            }
        }
        Some((booked, open.values().sum()))
    }

    fn append(&self, e: &JournalEntry) -> Result<(), LedgerError> {
        let Some(path) = &self.journal else {
            return Ok(());
        };
        let jerr = |detail: String| LedgerError::Journal {
            path: path.display().to_string(),
            detail,
        };
        let mut line = serde_json::to_string(e).map_err(|e| jerr(e.to_string()))?;
        line.push('\n');
        let created = !path.exists();
        let mut f = crate::simfs::File::open(path, crate::simfs::Open::Append { read: false })
            .map_err(|e| jerr(e.to_string()))?;
        f.write_all(line.as_bytes())
            .map_err(|e| jerr(e.to_string()))?;
        f.sync_data().map_err(|e| jerr(e.to_string()))?;
        if created {
            // The first reserve creates the journal: its NAME is durable only
            // once the state dir is fsynced, and the call it pays for is about
            // to be made (found by bench chaos, power-loss mode).
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            crate::durable::fsync_dir(dir)
                .map_err(|e| jerr(format!("fsync of {}: {e}", dir.display())))?;
        }
        Ok(())
    }

    pub fn hard_cap_usd(&self) -> f64 {
        self.hard_cap_usd
    }
    pub fn spent_usd(&self) -> f64 {
        self.snap.spent_usd
    }
    pub fn blocked(&self) -> bool {
        self.snap.blocked
    }
    pub fn snapshot(&self) -> &LedgerSnapshot {
        &self.snap
    }
    pub fn fraction_spent(&self) -> f64 {
        self.snap.spent_usd / self.hard_cap_usd
    }
    /// From 70% of the cap the budget notice is appended to requests.
    pub fn notice_due(&self) -> bool {
        self.fraction_spent() >= NOTICE_AT_FRACTION
    }
    /// From 90% of the cap the run finishes the current task only.
    pub fn winding_down(&self) -> bool {
        self.fraction_spent() >= WIND_DOWN_AT_FRACTION
    }
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.prices.get(model)
    }

    /// Tokens of `model` output the remaining dollars would buy: how the
    /// harness could turn money into the model-visible budget (which is in
    /// tokens, never dollars).
    pub fn remaining_output_tokens(&self, model: &str) -> u64 {
        match self.prices.get(model) {
            Some(p) if p.output_usd_per_mtok > 0.0 => {
                (((self.hard_cap_usd - self.snap.spent_usd).max(0.0) / p.output_usd_per_mtok) * 1e6)
                    as u64
            }
            _ => u64::MAX,
        }
    }

    /// Pre-flight. Check the WORST case before the call, not the actual after.
    pub fn reserve(
        &mut self,
        role: CallRole,
        call_key: &str,
        model: &str,
        est_input_tokens: u64,
        max_output_tokens: u64,
    ) -> Result<Reservation, ReserveError> {
        let Some(p) = self.prices.get(model) else {
            return Err(ReserveError::NoPrice(model.to_string()));
        };
        let worst = (est_input_tokens as f64 * p.input_usd_per_mtok
            + max_output_tokens as f64 * p.output_usd_per_mtok)
            / 1e6;
        if self.snap.spent_usd + worst > self.hard_cap_usd {
            // The ONLY thing that makes BUDGET_EXHAUSTED reachable when spend
            // stalls below the cap; should_stop reads it at the top of the loop.
            self.snap.blocked = true;
            return Err(ReserveError::Budget(BudgetExceeded {
                role: role.as_str().into(),
                would_reach_usd: self.snap.spent_usd + worst,
                hard_cap_usd: self.hard_cap_usd,
            }));
        }
        let r = Reservation {
            seq: self.next_seq,
            call_key: call_key.into(),
            role,
            model: model.into(),
            worst_usd: worst,
        };
        self.next_seq += 1;
        self.append(&JournalEntry::Reserve {
            seq: r.seq,
            call_key: r.call_key.clone(),
            role,
            model: r.model.clone(),
            worst_usd: worst,
        })?;
        Ok(r)
    }

    /// Book what the call actually cost, all four usage fields, plus the
    /// worst case for each attempt that got HTTP 200 with an unparseable body
    /// (it may have been billed and we cannot know for how much).
    pub fn record(
        &mut self,
        r: Reservation,
        usage: Usage,
        unparseable_attempts: u32,
    ) -> Result<f64, LedgerError> {
        let price = self.prices.get(&r.model).copied().unwrap_or(Price {
            input_usd_per_mtok: 0.0,
            output_usd_per_mtok: 0.0,
        });
        let cost = cost_usd(&price, &usage) + r.worst_usd * unparseable_attempts as f64;
        let basis = if unparseable_attempts == 0 {
            "usage".to_string()
        } else {
            format!("usage+worst_case*{unparseable_attempts}")
        };
        // Booked in memory first: the call was billed whether or not the
        // journal can take the line, and the report is written from memory
        // (found by bench chaos, I/O-error injection). The open reserve in the
        // journal still books the worst case on any later resume.
        self.book(&r, cost, usage, &basis);
        self.append(&JournalEntry::Record {
            seq: r.seq,
            cost_usd: cost,
            usage,
            basis,
        })?;
        Ok(cost)
    }

    /// Book `n` times the reserved worst case: attempts that may have been
    /// billed for an unknown amount (unparseable replies), or 1 for a call in
    /// flight at a kill.
    pub fn book_worst(&mut self, r: Reservation, n: u32) -> Result<f64, LedgerError> {
        let cost = r.worst_usd * n as f64;
        self.book(&r, cost, Usage::default(), "worst_case"); // memory first, as in `record`
        self.append(&JournalEntry::Record {
            seq: r.seq,
            cost_usd: cost,
            usage: Usage::default(),
            basis: "worst_case".into(),
        })?;
        Ok(cost)
    }

    /// The call was not billed (refused before it was made: 4xx, a recording
    /// miss, 429/5xx that never produced a reply).
    pub fn release(&mut self, r: Reservation) -> Result<(), LedgerError> {
        self.append(&JournalEntry::Release { seq: r.seq })
    }

    fn book(&mut self, r: &Reservation, cost: f64, usage: Usage, basis: &str) {
        self.snap.spent_usd += cost;
        self.snap.usage.add(&usage);
        self.snap.calls += 1;
        if self.snap.spend_curve.len() >= SPEND_CURVE_MAX_POINTS {
            // keep the first half and a sliding last half
            self.snap.spend_curve.remove(SPEND_CURVE_MAX_POINTS / 2);
            self.snap.spend_curve_elided += 1;
        }
        self.snap.spend_curve.push(SpendPoint {
            call: self.snap.calls,
            role: r.role,
            call_key: r.call_key.clone(),
            cost_usd: cost,
            spent_usd: self.snap.spent_usd,
            basis: basis.into(),
        });
    }

    /// Restore `blocked` from a checkpoint (the journal carries the money; the
    /// flag is the loop's decision and lives in the checkpoint).
    pub fn set_blocked(&mut self, b: bool) {
        self.snap.blocked = b;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    #[error("no price for model {0:?} in the spec's price table")]
    NoPrice(String),
    #[error(transparent)]
    Journal(#[from] LedgerError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn opus() -> PriceTable {
        [(
            "opus".to_string(),
            Price {
                input_usd_per_mtok: 5.0,
                output_usd_per_mtok: 25.0,
            },
        )]
        .into()
    }

    #[test]
    fn seed_cache_example_costs_0_0344_not_0_0025() {
        let p = Price {
            input_usd_per_mtok: 5.0,
            output_usd_per_mtok: 25.0,
        };
        let u = Usage {
            input_tokens: 500,
            output_tokens: 0,
            cache_read_input_tokens: 20_000,
            cache_creation_input_tokens: 3_500,
        };
        let c = cost_usd(&p, &u);
        assert!((c - 0.034375).abs() < 1e-12, "{c}");
        assert_eq!(format!("{c:.4}"), "0.0344");
        let naive = cost_usd(
            &p,
            &Usage {
                input_tokens: 500,
                ..Default::default()
            },
        );
        assert_eq!(format!("{naive:.4}"), "0.0025");
    }

    #[test]
    fn refusal_sets_blocked_and_spend_stalls_below_cap() {
        let mut l = Ledger::new(28.0, opus());
        // Book $27.75 of real spend.
        let r = l
            .reserve(CallRole::Execute, "k0", "opus", 1000, 1000)
            .unwrap();
        l.record(
            r,
            Usage {
                input_tokens: 5_550_000,
                ..Default::default()
            },
            0,
        )
        .unwrap();
        assert!((l.spent_usd() - 27.75).abs() < 1e-9);
        // The next call's worst case ($1.00 of output) would reach $28.75.
        let err = l
            .reserve(CallRole::Execute, "k1", "opus", 0, 40_000)
            .unwrap_err();
        assert!(
            matches!(err, ReserveError::Budget(ref b) if (b.would_reach_usd - 28.75).abs() < 1e-9),
            "{err}"
        );
        assert!(l.blocked());
        assert!(l.spent_usd() < l.hard_cap_usd());
    }

    #[test]
    fn journal_replays_and_books_in_flight_call_at_worst_case() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("ledger.jsonl");
        let mut l = Ledger::new(10.0, opus());
        l.open_journal(&j).unwrap();
        let r = l
            .reserve(CallRole::Plan, "plan/0", "opus", 1000, 1000)
            .unwrap();
        l.record(
            r,
            Usage {
                input_tokens: 1000,
                output_tokens: 100,
                ..Default::default()
            },
            0,
        )
        .unwrap();
        let r2 = l
            .reserve(CallRole::Execute, "execute/t1/a0/0", "opus", 1000, 1000)
            .unwrap();
        let worst = r2.worst_usd;
        let before = l.spent_usd();
        drop(l); // "killed" with r2 in flight
                 // A torn half line after it, as a kill mid-append leaves.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&j)
            .unwrap()
            .write_all(b"{\"op\":\"rec")
            .unwrap();
        let mut l2 = Ledger::new(10.0, opus());
        l2.open_journal(&j).unwrap();
        assert!((l2.spent_usd() - (before + worst)).abs() < 1e-12);
        assert_eq!(
            l2.snapshot().spend_curve.last().unwrap().basis,
            "worst_case"
        );
        // Reopening again books nothing new: the worst-case record is durable.
        let mut l3 = Ledger::new(10.0, opus());
        l3.open_journal(&j).unwrap();
        assert!((l3.spent_usd() - l2.spent_usd()).abs() < 1e-12);
    }

    #[test]
    fn release_books_nothing() {
        let mut l = Ledger::new(1.0, opus());
        let r = l
            .reserve(CallRole::Judge, "judge/5", "opus", 100, 100)
            .unwrap();
        l.release(r).unwrap();
        assert_eq!(l.spent_usd(), 0.0);
    }
}
