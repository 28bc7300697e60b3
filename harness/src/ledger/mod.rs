//! The hard-cap ledger: a control, not an observation. It reserves the worst
//! case of every attempt of a model call BEFORE the attempt (`bound`: the
//! request's bytes plus the protocol's allowance, priced at the highest rate
//! input can bill, plus max_tokens at the output price) and refuses one that
//! would cross the cap, setting `blocked` so the top of the loop reports
//! BUDGET_EXHAUSTED (spend stalls below the cap). After the call, `record`
//! books all four usage fields. The model never sees this ledger or any
//! dollar figure.
//!
//! The promise: after every `record`, spend <= cap, for any endpoint whose
//! usage is within the bound. Each attempt that may have been billed for an
//! unknown amount (a garbled 200, a transport failure after sending) is
//! booked at its worst case and the next attempt reserves again (`gate`), so
//! ten garbled attempts can never spend ten reservations' worth on one.
//! A reply that bills more than its reservation is booked honestly (never
//! clipped) and `Booked::overbilled` tells the loop, which ends the run.
//!
//! Durability: every reserve and every record is appended to a journal
//! (`ledger.jsonl` in the state dir, frame in `journal`) and fsynced before
//! the call is made, so a kill mid-call cannot make the run forget money.
//! The promise for a call in flight at a kill (a reserve with no matching
//! record): it is booked at its reserved worst case on resume, and so is a
//! reserve line torn by the kill (at the amount it still shows, or the cap
//! that was left when it cannot show one). Spend therefore never decreases
//! across resumes and never under-counts.

pub mod bound;
pub mod gate;
pub mod journal;

pub use bound::{worst_case_usd, CallBound};
pub use gate::AttemptReserve;
pub use journal::{JournalEntry, LimitKind};

use crate::model::types::{CallRole, Protocol, Usage};
use journal::{JournalText, TornTail};
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
/// The call key booked for a reserve line torn before its key.
pub const TORN_LINE_CALL_KEY: &str = "(torn journal line)";

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
        + u.cache_creation_input_tokens as f64
            * price.input_usd_per_mtok
            * CACHE_WRITE_MULTIPLIER
            * f64::from(u8::from(!crate::mutants::active(
                crate::mutants::Mutant::CacheWritesFree,
            )))
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

/// A reply billed more than the most its request could bill. Booked as
/// billed; the loop ends the run on it (UNRECOVERABLE_ERROR, kind
/// `billed_above_reserve`: see ARCHITECTURE.md, "Decisions").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{call_key} billed ${billed_usd:.6}, more than its reservation of ${reserved_usd:.6} (the most its request could bill: {input_tokens_max} input tokens at the highest input rate plus {output_tokens_max} output tokens); spend is now ${spent_usd:.4} of the ${hard_cap_usd:.2} cap. The endpoint reported usage its request could not have produced, so the cap can no longer be promised"
)]
pub struct BilledAboveReserve {
    pub call_key: String,
    pub reserved_usd: f64,
    pub billed_usd: f64,
    pub input_tokens_max: u64,
    pub output_tokens_max: u64,
    pub spent_usd: f64,
    pub hard_cap_usd: f64,
}

/// A granted reservation; consumed by `record`, `book_worst` or `release`.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Reservation {
    pub seq: u64,
    pub call_key: String,
    /// `None` only for a reserve rebuilt from a journal line torn before it.
    pub role: Option<CallRole>,
    pub model: String,
    pub worst_usd: f64,
    /// The HTTP attempt of its call this pays for (0: the call's first).
    pub attempt: u32,
}

/// What `record` booked, against what was reserved for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Booked {
    pub cost_usd: f64,
    pub reserved_usd: f64,
}

impl Booked {
    /// The reply billed more than the most its request could bill: an
    /// endpoint (or proxy) reporting usage its request could not have
    /// produced. The cap can no longer be promised.
    pub fn overbilled(&self) -> bool {
        self.cost_usd > self.reserved_usd
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpendPoint {
    pub call: u64,
    /// `None` only for a journal line torn before its role.
    pub role: Option<CallRole>,
    pub call_key: String,
    pub cost_usd: f64,
    pub spent_usd: f64,
    /// "usage" (booked from reported usage) or "worst_case" (unknown usage:
    /// an attempt that may have been billed, or a call in flight at a kill).
    pub basis: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerSnapshot {
    pub spent_usd: f64,
    pub usage: Usage,
    pub blocked: bool,
    /// Model calls booked (a call's billed-unknown retries count once).
    pub calls: u64,
    pub spend_curve: Vec<SpendPoint>,
    pub spend_curve_elided: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger journal {path}: {detail}")]
    Journal { path: String, detail: String },
}

/// What a journal holds in money, read without touching it: for
/// `harness status` and for the report of a run that was refused before it
/// could resume (its spend is the journal's, never 0).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalFigure {
    /// Booked by the journal's records.
    pub booked_usd: f64,
    /// Open reserves (calls in flight at a kill) and a torn reserve line, at
    /// their worst case, as a resume would book them.
    pub in_flight_usd: f64,
    /// The ledger as a resume would leave it: the in-flight money booked.
    pub snapshot: LedgerSnapshot,
    /// Why a resume from this journal would be refused (corrupt lines, a
    /// record of an unknown reserve), with line numbers; empty if none.
    pub problems: Vec<String>,
}

impl JournalFigure {
    pub fn committed_usd(&self) -> f64 {
        self.booked_usd + self.in_flight_usd
    }
}

/// A journal replayed into memory.
struct Replayed {
    open: BTreeMap<u64, Reservation>,
    /// A torn last line that may have been a reserve, with its amount.
    torn_reserve: Option<Reservation>,
    problems: Vec<String>,
}

#[derive(Debug)]
pub struct Ledger {
    hard_cap_usd: f64,
    prices: PriceTable,
    snap: LedgerSnapshot,
    next_seq: u64,
    journal: Option<PathBuf>,
    /// The highest multiple of the input price an input token can bill.
    input_rate_max: f64,
    /// Reservations granted in this process and not yet settled: what a
    /// new reserve must leave room for.
    open: BTreeMap<u64, f64>,
    /// The limits raised by an operator, in journal order.
    raises: Vec<LimitRaise>,
}

/// A raised limit, as the journal holds it (report.json's `limit_raises`).
#[derive(
    Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct LimitRaise {
    pub unix_ms: u64,
    pub limit: journal::LimitKind,
    pub old: f64,
    pub new: f64,
    /// How many bookings the spend curve held when the limit was raised
    /// (where the page's spend plot marks the raise). Not journaled: the
    /// journal's order gives it on every replay.
    #[serde(default)]
    pub after_calls: u64,
}

impl Ledger {
    /// A ledger that assumes the highest input rate of any protocol; use
    /// `for_protocol` to price input as the endpoint's usage can bill it.
    pub fn new(hard_cap_usd: f64, prices: PriceTable) -> Ledger {
        assert!(
            hard_cap_usd.is_finite() && hard_cap_usd > 0.0,
            "spec validation guarantees a positive cap"
        );
        Ledger::unchecked(hard_cap_usd, prices)
    }

    fn unchecked(hard_cap_usd: f64, prices: PriceTable) -> Ledger {
        Ledger {
            hard_cap_usd,
            prices,
            snap: LedgerSnapshot::default(),
            next_seq: 0,
            journal: None,
            input_rate_max: bound::input_rate_max_any(),
            open: BTreeMap::new(),
            raises: vec![],
        }
    }

    /// Price the input bound at the highest rate `protocol`'s usage can
    /// bill (see `bound::input_rate_max`).
    pub fn for_protocol(mut self, protocol: Protocol) -> Ledger {
        self.input_rate_max = bound::input_rate_max(protocol);
        self
    }

    /// Book what a parsed journal's complete lines hold into this ledger's
    /// memory (no journal writes), and say what is still open.
    fn replay(&mut self, text: &JournalText) -> Replayed {
        let mut open: BTreeMap<u64, Reservation> = BTreeMap::new();
        let mut problems: Vec<String> = text
            .corrupt
            .iter()
            .map(|c| format!("line {}: not a journal entry ({})", c.number, c.detail))
            .collect();
        for line in &text.lines {
            match &line.entry {
                JournalEntry::Reserve {
                    seq,
                    worst_usd,
                    attempt,
                    role,
                    call_key,
                    model,
                } => {
                    self.next_seq = self.next_seq.max(seq.saturating_add(1));
                    open.insert(
                        *seq,
                        Reservation {
                            seq: *seq,
                            call_key: call_key.clone(),
                            role: *role,
                            model: model.clone(),
                            worst_usd: *worst_usd,
                            attempt: *attempt,
                        },
                    );
                }
                JournalEntry::Record {
                    seq,
                    cost_usd,
                    usage,
                    basis,
                } => match open.remove(seq) {
                    Some(r) => self.book(&r, *cost_usd, *usage, basis),
                    None => {
                        problems.push(format!(
                            "line {}: record for unknown reservation {seq}",
                            line.number
                        ));
                        // Money a readable line says was spent still counts.
                        let r = Reservation {
                            seq: *seq,
                            call_key: format!("(record of unknown reservation {seq})"),
                            role: None,
                            model: String::new(),
                            worst_usd: *cost_usd,
                            attempt: 0,
                        };
                        self.book(&r, *cost_usd, *usage, basis);
                    }
                },
                JournalEntry::Release { seq } => {
                    open.remove(seq);
                }
                JournalEntry::Limit {
                    unix_ms,
                    limit,
                    old,
                    new,
                } => self.note_raise(LimitRaise {
                    unix_ms: *unix_ms,
                    limit: *limit,
                    old: *old,
                    new: *new,
                    after_calls: self.snap.spend_curve.len() as u64,
                }),
            }
        }
        let torn_reserve = self.torn_reserve(text.torn.as_ref(), &open);
        Replayed {
            open,
            torn_reserve,
            problems,
        }
    }

    /// A torn last line that may have been a reserve: booked open at its
    /// worst case, which is the whole cap left when the amount is unreadable.
    fn torn_reserve(
        &mut self,
        torn: Option<&TornTail>,
        open: &BTreeMap<u64, Reservation>,
    ) -> Option<Reservation> {
        match torn {
            None | Some(TornTail::Closing) => None,
            Some(TornTail::Reserve(t)) => Some((t.worst_usd, t.clone())),
            Some(TornTail::Unknown) => Some((None, journal::TornReserve::default())),
        }
        .map(|(worst, t)| {
            // Unknown amount: the largest any reserve could have been granted
            // at that point, the cap left over what is booked and open.
            let open_usd: f64 = open.values().map(|r| r.worst_usd).sum();
            let left = (self.hard_cap_usd - self.snap.spent_usd - open_usd).max(0.0);
            let seq = t
                .seq
                .filter(|s| *s >= self.next_seq)
                .unwrap_or(self.next_seq);
            self.next_seq = seq.saturating_add(1);
            Reservation {
                seq,
                call_key: t.call_key.unwrap_or_else(|| TORN_LINE_CALL_KEY.into()),
                role: t.role,
                model: t.model.unwrap_or_default(),
                worst_usd: worst.unwrap_or(left),
                attempt: t.attempt.unwrap_or(0),
            }
        })
    }

    /// Attach the durable journal at `path`, replaying whatever it holds. A
    /// reserve with no record or release is a call that was in flight at a
    /// kill, and a torn last line may have been one: each is booked at its
    /// worst case, durably, before anything else. A complete line that is
    /// not an entry refuses the journal (it was damaged after the fact).
    pub fn open_journal(&mut self, path: &Path) -> Result<(), LedgerError> {
        let jerr = |detail: String| LedgerError::Journal {
            path: path.display().to_string(),
            detail,
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(jerr(e.to_string())),
        };
        let text = journal::parse(&bytes);
        let replayed = self.replay(&text);
        if !replayed.problems.is_empty() {
            return Err(jerr(format!(
                "{} (refused: a journal damaged after it was written cannot be trusted to hold all the money)",
                replayed.problems.join("; ")
            )));
        }
        // Truncate a torn tail so the next append starts on a line boundary.
        if text.complete_len != bytes.len() {
            let f = crate::simfs::File::open(path, crate::simfs::Open::Existing)
                .map_err(|e| jerr(e.to_string()))?;
            f.set_len(text.complete_len as u64)
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
        let mut open = replayed.open;
        if let Some(r) = replayed.torn_reserve {
            // Written again whole, so the journal itself says what is booked.
            self.append(&Ledger::reserve_entry(&r))?;
            open.insert(r.seq, r);
        }
        for (_, r) in open {
            self.open.insert(r.seq, r.worst_usd);
            self.book_worst(r).map_err(|e| jerr(e.to_string()))?;
        }
        Ok(())
    }

    /// Read a journal without touching it. `hard_cap_usd` is the cap a
    /// resume would run under (a reserve torn before its amount is booked at
    /// the cap left). None when the file cannot be read.
    pub fn journal_figure(path: &Path, hard_cap_usd: f64) -> Option<JournalFigure> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(_) => return None,
        };
        let mut scratch = Ledger::unchecked(hard_cap_usd, PriceTable::new());
        let replayed = scratch.replay(&journal::parse(&bytes));
        let booked_usd = scratch.snap.spent_usd;
        let in_flight: Vec<Reservation> = replayed
            .open
            .into_values()
            .chain(replayed.torn_reserve)
            .collect();
        let in_flight_usd = in_flight.iter().map(|r| r.worst_usd).sum();
        for r in &in_flight {
            scratch.book(r, r.worst_usd, Usage::default(), "worst_case");
        }
        Some(JournalFigure {
            booked_usd,
            in_flight_usd,
            snapshot: scratch.snap,
            problems: replayed.problems,
        })
    }

    /// For `harness status`: (booked, in flight at worst), by the same rules
    /// as a resume.
    pub fn peek_journal(path: &Path, hard_cap_usd: f64) -> Option<(f64, f64)> {
        Ledger::journal_figure(path, hard_cap_usd).map(|f| (f.booked_usd, f.in_flight_usd))
    }

    fn reserve_entry(r: &Reservation) -> JournalEntry {
        JournalEntry::Reserve {
            seq: r.seq,
            worst_usd: r.worst_usd,
            attempt: r.attempt,
            role: r.role,
            call_key: r.call_key.clone(),
            model: r.model.clone(),
        }
    }

    fn append(&self, e: &JournalEntry) -> Result<(), LedgerError> {
        let Some(path) = &self.journal else {
            return Ok(());
        };
        let jerr = |detail: String| LedgerError::Journal {
            path: path.display().to_string(),
            detail,
        };
        let line = journal::frame(e).map_err(|e| jerr(e.to_string()))?;
        // The first reserve creates the journal: its NAME is durable only
        // once the state dir is fsynced (append_line does), and the call it
        // pays for is about to be made (found by bench chaos, power-loss mode).
        crate::durable::append_line(path, line.into_bytes()).map_err(|e| jerr(e.to_string()))
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
    /// The multiple of the input price the input bound is reserved at.
    pub fn input_rate_max(&self) -> f64 {
        self.input_rate_max
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

    /// Pre-flight for a call's first attempt. `input_tokens_max` must be an
    /// upper bound on the input tokens of every kind (`CallBound`), and
    /// `max_output_tokens` the request's `max_tokens`.
    pub fn reserve(
        &mut self,
        role: CallRole,
        call_key: &str,
        model: &str,
        input_tokens_max: u64,
        max_output_tokens: u64,
    ) -> Result<Reservation, ReserveError> {
        let bound = CallBound {
            input_tokens_max,
            output_tokens_max: max_output_tokens,
        };
        self.reserve_attempt(role, call_key, model, &bound, 0)
    }

    /// Pre-flight for attempt `attempt` of a call. Check the WORST case
    /// before the attempt, not the actual after: refused when what is spent,
    /// what is reserved and still open, and this worst case would together
    /// cross the cap.
    pub fn reserve_attempt(
        &mut self,
        role: CallRole,
        call_key: &str,
        model: &str,
        bound: &CallBound,
        attempt: u32,
    ) -> Result<Reservation, ReserveError> {
        let Some(p) = self.prices.get(model) else {
            return Err(ReserveError::NoPrice(model.to_string()));
        };
        let worst = worst_case_usd(p, bound, self.input_rate_max);
        let open_usd: f64 = self.open.values().sum();
        let would_reach = self.snap.spent_usd + open_usd + worst;
        if !(would_reach <= self.hard_cap_usd)
            && !crate::mutants::active(crate::mutants::Mutant::CapNotEnforced)
        {
            // The ONLY thing that makes BUDGET_EXHAUSTED reachable when spend
            // stalls below the cap; should_stop reads it at the top of the loop.
            self.snap.blocked = true;
            return Err(ReserveError::Budget(BudgetExceeded {
                role: role.as_str().into(),
                would_reach_usd: would_reach,
                hard_cap_usd: self.hard_cap_usd,
            }));
        }
        let r = Reservation {
            seq: self.next_seq,
            call_key: call_key.into(),
            role: Some(role),
            model: model.into(),
            worst_usd: worst,
            attempt,
        };
        self.next_seq += 1;
        self.append(&Ledger::reserve_entry(&r))?;
        self.open.insert(r.seq, worst);
        Ok(r)
    }

    /// Book what the attempt actually cost, all four usage fields. The
    /// returned `Booked` says whether it billed more than was reserved.
    pub fn record(&mut self, r: Reservation, usage: Usage) -> Result<Booked, LedgerError> {
        let price = self.prices.get(&r.model).copied().unwrap_or(Price {
            input_usd_per_mtok: 0.0,
            output_usd_per_mtok: 0.0,
        });
        let cost = cost_usd(&price, &usage);
        // Booked in memory first: the call was billed whether or not the
        // journal can take the line, and the report is written from memory
        // (found by bench chaos, I/O-error injection). The open reserve in the
        // journal still books the worst case on any later resume.
        self.book(&r, cost, usage, "usage");
        let journaled = if crate::mutants::active(crate::mutants::Mutant::JournalBooksHalf) {
            cost / 2.0
        } else {
            cost
        };
        self.append(&JournalEntry::Record {
            seq: r.seq,
            cost_usd: journaled,
            usage,
            basis: "usage".into(),
        })?;
        Ok(Booked {
            cost_usd: cost,
            reserved_usd: r.worst_usd,
        })
    }

    /// Book the reserved worst case: an attempt that may have been billed
    /// for an unknown amount, or a call in flight at a kill.
    pub fn book_worst(&mut self, r: Reservation) -> Result<f64, LedgerError> {
        let cost = r.worst_usd;
        self.book(&r, cost, Usage::default(), "worst_case"); // memory first, as in `record`
        self.append(&JournalEntry::Record {
            seq: r.seq,
            cost_usd: cost,
            usage: Usage::default(),
            basis: "worst_case".into(),
        })?;
        Ok(cost)
    }

    /// The attempt was not billed (refused before it was made: 4xx, a
    /// recording miss, 429/5xx, a connection never made).
    pub fn release(&mut self, r: Reservation) -> Result<(), LedgerError> {
        self.open.remove(&r.seq);
        self.append(&JournalEntry::Release { seq: r.seq })
    }

    fn book(&mut self, r: &Reservation, cost: f64, usage: Usage, basis: &str) {
        self.open.remove(&r.seq);
        self.snap.spent_usd += cost;
        self.snap.usage.add(&usage);
        if r.attempt == 0 {
            self.snap.calls += 1;
        }
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
    /// Apply a raise: the cap's becomes the ledger's cap.
    fn note_raise(&mut self, r: LimitRaise) {
        if r.limit == journal::LimitKind::HardCapUsd {
            self.hard_cap_usd = r.new;
        }
        self.raises.push(r);
    }

    /// Raise `limit` to `new` (the caller checked it is a raise the run may
    /// take): journaled first, then in memory; the cap unblocks the ledger.
    pub fn raise(
        &mut self,
        limit: journal::LimitKind,
        old: f64,
        new: f64,
    ) -> Result<LimitRaise, LedgerError> {
        let r = LimitRaise {
            unix_ms: crate::clock::now_unix_ms(),
            limit,
            old,
            new,
            after_calls: self.snap.spend_curve.len() as u64,
        };
        self.append(&JournalEntry::Limit {
            unix_ms: r.unix_ms,
            limit,
            old,
            new,
        })?;
        self.note_raise(r);
        if limit == journal::LimitKind::HardCapUsd {
            self.set_blocked(false);
        }
        Ok(r)
    }

    /// Lower the cap for this process only (`--max-usd`), never raise it;
    /// nothing is journaled: the run's cap (the spec's, or the last raise)
    /// is unchanged for the next process.
    pub fn tighten_cap(&mut self, cap: f64) {
        if cap.is_finite() && cap > 0.0 && cap < self.hard_cap_usd {
            self.hard_cap_usd = cap;
        }
    }

    /// Every raise so far, in order.
    pub fn raises(&self) -> &[LimitRaise] {
        &self.raises
    }

    /// The last raise of `limit`, if any.
    pub fn raised(&self, limit: journal::LimitKind) -> Option<f64> {
        self.raises
            .iter()
            .rev()
            .find(|r| r.limit == limit)
            .map(|r| r.new)
    }

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
    use crate::model::gate::{AttemptGate, Billing};
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

    fn cw(tokens: u64) -> Usage {
        Usage {
            cache_creation_input_tokens: tokens,
            ..Usage::default()
        }
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
        let mut l = Ledger::new(28.0, opus()).for_protocol(Protocol::Anthropic);
        // Book $27.75 of real spend: 4.44M tokens written to cache, within
        // the 4.44M-token bound it was reserved for.
        let r = l
            .reserve(CallRole::Execute, "k0", "opus", 4_440_000, 0)
            .unwrap();
        let booked = l.record(r, cw(4_440_000)).unwrap();
        assert!(!booked.overbilled(), "{booked:?}");
        assert!((l.spent_usd() - 27.75).abs() < 1e-9);
        // The next call's worst case ($1.00 of output) would reach $28.75.
        let err = l
            .reserve(CallRole::Execute, "k1", "opus", 0, 40_000)
            .unwrap_err();
        assert!(
            matches!(err, ReserveError::Budget(ref b) if (b.would_reach_usd - 28.75).abs() < 1e-6),
            "{err}"
        );
        assert!(l.blocked());
        assert!(l.spent_usd() < l.hard_cap_usd());
    }

    #[test]
    fn open_reservations_leave_no_room_for_a_second() {
        let mut l = Ledger::new(1.0, opus());
        let a = l.reserve(CallRole::Plan, "a", "opus", 0, 30_000).unwrap(); // $0.75
        let refused = l.reserve(CallRole::Plan, "b", "opus", 0, 30_000);
        assert!(matches!(refused, Err(ReserveError::Budget(_))));
        l.release(a).unwrap();
        l.set_blocked(false);
        let b = l.reserve(CallRole::Plan, "b", "opus", 0, 30_000).unwrap();
        l.book_worst(b).unwrap();
        assert!(l.spent_usd() <= 1.0);
    }

    #[test]
    fn a_reply_above_its_reservation_is_booked_honestly_and_flagged() {
        let mut l = Ledger::new(1.0, opus()).for_protocol(Protocol::Anthropic);
        let r = l
            .reserve(CallRole::Execute, "execute/t1/a0/0", "opus", 5_000, 8_192)
            .unwrap();
        let worst = r.worst_usd;
        let usage = Usage {
            input_tokens: 500,
            cache_creation_input_tokens: 160_000,
            ..Usage::default()
        };
        let booked = l.record(r, usage).unwrap();
        assert!(booked.overbilled());
        assert_eq!(booked.reserved_usd, worst);
        assert!((booked.cost_usd - cost_usd(&opus()["opus"], &usage)).abs() < 1e-15);
        assert_eq!(
            l.spent_usd(),
            booked.cost_usd,
            "never clipped to the reservation"
        );
        assert!(l.spent_usd() > 1.0);
    }

    #[test]
    fn usage_that_would_wrap_saturates() {
        let mut l = Ledger::new(28.0, opus());
        for i in 0..8 {
            let r = l
                .reserve(CallRole::Execute, &format!("k{i}"), "opus", 0, 0)
                .unwrap();
            let _ = l
                .record(
                    r,
                    Usage {
                        output_tokens: u64::MAX,
                        ..Usage::default()
                    },
                )
                .unwrap();
            l.set_blocked(false);
            l.open.clear();
            l.snap.spent_usd = 0.0; // only the usage arithmetic is under test here
        }
        assert_eq!(l.snapshot().usage.output_tokens, u64::MAX);
        assert_eq!(l.snapshot().usage.total(), u64::MAX);
    }

    #[test]
    fn each_attempt_that_may_have_billed_is_booked_and_reserved_again() {
        let mut l = Ledger::new(1.0, opus());
        let bound = CallBound {
            input_tokens_max: 0,
            output_tokens_max: 12_000,
        }; // $0.30 a reservation
        let first = l
            .reserve_attempt(CallRole::Execute, "k", "opus", &bound, 0)
            .unwrap();
        let mut gate = AttemptReserve::new(&mut l, CallRole::Execute, first, bound, None);
        // Attempt 0: a 503 bills nothing; its reservation serves attempt 1.
        gate.before_attempt(0).unwrap();
        gate.after_failed_attempt(0, Billing::NotBilled).unwrap();
        // Attempts 1..3: garbled 200s, each booked at $0.30, each next one
        // reserved again first; the fourth would reach $1.20: refused.
        gate.before_attempt(1).unwrap();
        gate.after_failed_attempt(1, Billing::Unknown).unwrap();
        gate.before_attempt(2).unwrap();
        gate.after_failed_attempt(2, Billing::Unknown).unwrap();
        gate.before_attempt(3).unwrap();
        gate.after_failed_attempt(3, Billing::Unknown).unwrap();
        let refused = gate.before_attempt(4);
        assert!(
            matches!(refused, Err(ReserveError::Budget(_))),
            "{refused:?}"
        );
        assert!(gate.into_open().is_none());
        assert!((l.spent_usd() - 0.9).abs() < 1e-6, "{}", l.spent_usd());
        assert!(l.blocked());
        // One call, three worst-case points.
        assert_eq!(l.snapshot().calls, 1);
        assert_eq!(l.snapshot().spend_curve.len(), 3);
        assert!(l
            .snapshot()
            .spend_curve
            .iter()
            .all(|p| p.basis == "worst_case"));
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

    /// A journal with one booked call and a second call's reserve, torn
    /// after `cut` bytes of its line.
    fn journal_with_torn_reserve(cut: usize) -> (tempfile::TempDir, PathBuf, f64, f64) {
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
                input_tokens: 900,
                output_tokens: 100,
                ..Usage::default()
            },
        )
        .unwrap();
        let booked = l.spent_usd();
        let r2 = l
            .reserve(CallRole::Execute, "execute/t1/a0/0", "opus", 40_000, 8_192)
            .unwrap();
        let worst = r2.worst_usd;
        drop(l);
        let bytes = std::fs::read(&j).unwrap();
        let last_start = bytes[..bytes.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        std::fs::write(&j, &bytes[..last_start + cut]).unwrap();
        (dir, j, booked, worst)
    }

    #[test]
    fn a_torn_reserve_line_is_booked_at_the_amount_it_still_shows() {
        let (_d, j, booked, worst) = journal_with_torn_reserve(60);
        let figure = Ledger::journal_figure(&j, 10.0).unwrap();
        assert!((figure.booked_usd - booked).abs() < 1e-12);
        assert!((figure.in_flight_usd - worst).abs() < 1e-12, "{figure:?}");
        let mut l = Ledger::new(10.0, opus());
        l.open_journal(&j).unwrap();
        assert!((l.spent_usd() - (booked + worst)).abs() < 1e-12);
        // The journal now says so itself, whole lines only, and a reopen
        // books nothing more.
        let text = journal::parse(&std::fs::read(&j).unwrap());
        assert!(text.torn.is_none() && text.corrupt.is_empty());
        let mut again = Ledger::new(10.0, opus());
        again.open_journal(&j).unwrap();
        assert!((again.spent_usd() - l.spent_usd()).abs() < 1e-12);
        assert_eq!(Ledger::peek_journal(&j, 10.0), Some((l.spent_usd(), 0.0)));
    }

    #[test]
    fn a_reserve_torn_before_its_amount_is_booked_at_the_cap_left() {
        for cut in [1, 10, 30] {
            let (_d, j, booked, _) = journal_with_torn_reserve(cut);
            let mut l = Ledger::new(10.0, opus());
            l.open_journal(&j).unwrap();
            assert!(
                (l.spent_usd() - 10.0).abs() < 1e-9,
                "cut {cut}: booked {booked} + the cap left = the cap, got {}",
                l.spent_usd()
            );
            assert_eq!(
                l.snapshot().spend_curve.last().unwrap().call_key,
                TORN_LINE_CALL_KEY
            );
        }
    }

    #[test]
    fn a_corrupt_middle_line_refuses_the_journal_but_its_figure_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let mut l = Ledger::new(10.0, opus());
        l.open_journal(&path).unwrap();
        let r = l
            .reserve(CallRole::Plan, "plan/0", "opus", 1000, 1000)
            .unwrap();
        l.record(
            r,
            Usage {
                input_tokens: 900,
                ..Usage::default()
            },
        )
        .unwrap();
        let r = l
            .reserve(CallRole::Execute, "e/0", "opus", 1000, 1000)
            .unwrap();
        let booked = l.spent_usd();
        let in_flight = r.worst_usd;
        drop(l);
        let mut bytes = std::fs::read(&path).unwrap();
        let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        bytes.splice(
            second_line..second_line,
            b"garbage in the middle\n".iter().copied(),
        );
        std::fs::write(&path, &bytes).unwrap();
        let err = Ledger::new(10.0, opus()).open_journal(&path).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let f = Ledger::journal_figure(&path, 10.0).unwrap();
        assert_eq!(f.problems.len(), 1, "{f:?}");
        assert!((f.booked_usd - booked).abs() < 1e-12);
        assert!((f.in_flight_usd - in_flight).abs() < 1e-12);
        assert!((f.snapshot.spent_usd - (booked + in_flight)).abs() < 1e-12);
        // The refused journal was not touched.
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn a_record_of_an_unknown_reservation_refuses_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        std::fs::write(
            &path,
            journal::frame(&JournalEntry::Record {
                seq: 4,
                cost_usd: 0.25,
                usage: Usage::default(),
                basis: "usage".into(),
            })
            .unwrap(),
        )
        .unwrap();
        let err = Ledger::new(10.0, opus()).open_journal(&path).unwrap_err();
        assert!(err.to_string().contains("unknown reservation 4"), "{err}");
        assert_eq!(Ledger::peek_journal(&path, 10.0), Some((0.25, 0.0)));
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
