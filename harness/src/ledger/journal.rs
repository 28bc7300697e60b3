//! The ledger journal's line frame, and the ONE parser every reader uses (the
//! ledger on resume, `harness status`, an early refusal's report, the chaos
//! oracle).
//!
//! Frame: one JSON object per line, newline-terminated, written by serde in
//! the field order of [`JournalEntry`]: `op` first and, for a reserve, its
//! amount right after its sequence number:
//!
//! ```text
//! {"op":"reserve","seq":7,"worst_usd":0.2561,"attempt":0,"role":"execute","call_key":"execute/t1/a0/0","model":"m"}
//! {"op":"record","seq":7,"cost_usd":0.0312,"usage":{...},"basis":"usage"}
//! {"op":"release","seq":8}
//! ```
//!
//! Why the order matters: a kill or a power cut can leave the last line torn
//! (no newline). A torn RESERVE may be the reservation of a call that was
//! then made, and the journal is the record of money, so it must still say
//! how much: its amount sits in the first ~40 bytes, and a number is known
//! complete once the `,` after it is there. A line torn before that tells
//! only that it may have been a reserve; the ledger then books the largest
//! amount any reserve could have been at that point (the cap left).

use crate::model::types::{CallRole, Usage};
use serde::{Deserialize, Serialize};

/// One journal line. Field order is the frame (see the module doc); a test
/// pins it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum JournalEntry {
    Reserve {
        seq: u64,
        worst_usd: f64,
        /// Which HTTP attempt of its call this reservation pays for: 0 for a
        /// call's first, n for the reserve made again before attempt n after
        /// an attempt that may have been billed. (Absent in journals written
        /// before re-reservation existed: 0.)
        #[serde(default)]
        attempt: u32,
        /// `None` only for a reserve rebuilt from a line torn before its role.
        role: Option<CallRole>,
        call_key: String,
        model: String,
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
    /// An operator raised a limit of a run that had ended on it (`harness
    /// run --raise-cap-usd` / `--raise-wall-clock-s`): when, which, from
    /// what, to what. Books no money; the last raise of the cap is the
    /// ledger's cap from here on.
    Limit {
        unix_ms: u64,
        limit: LimitKind,
        old: f64,
        new: f64,
    },
}

/// A limit an operator can raise after the run ended on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// The hard cap, in US dollars (after BUDGET_EXHAUSTED).
    HardCapUsd,
    /// The wall-clock limit, in seconds (after TIME_LIMIT).
    WallClockLimitS,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::HardCapUsd => "hard_cap_usd",
            LimitKind::WallClockLimitS => "wall_clock_limit_s",
        }
    }
}

/// A complete line that parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based line number in the file.
    pub number: usize,
    pub entry: JournalEntry,
}

/// A complete line (it has its newline) that is not a journal entry: never
/// a torn append, so the journal was damaged after the fact and a resume
/// from it must be refused.
#[derive(Debug, Clone, PartialEq)]
pub struct CorruptLine {
    pub number: usize,
    pub detail: String,
}

/// What a reserve line torn by a kill still says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TornReserve {
    pub seq: Option<u64>,
    /// The amount, when its digits and the `,` after them survived.
    pub worst_usd: Option<f64>,
    pub attempt: Option<u32>,
    pub role: Option<CallRole>,
    pub call_key: Option<String>,
    pub model: Option<String>,
}

/// The bytes after the last newline.
#[derive(Debug, Clone, PartialEq)]
pub enum TornTail {
    /// A reserve, or a line torn so early it may have been one.
    Reserve(TornReserve),
    /// Torn inside a record or release: the reserve it closes stays open
    /// and is booked at its worst case.
    Closing,
    /// Not the start of any journal line (e.g. zeros after a power cut):
    /// read as a reserve of unknown amount, never as nothing.
    Unknown,
}

/// A journal as read: its complete lines, the bad ones, the torn tail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JournalText {
    pub lines: Vec<Line>,
    pub corrupt: Vec<CorruptLine>,
    pub torn: Option<TornTail>,
    /// Bytes up to and including the last newline: where a torn tail starts.
    pub complete_len: usize,
}

/// Parse a journal file's bytes. Never fails: every line is an entry, a
/// corrupt line, or the torn tail.
pub fn parse(bytes: &[u8]) -> JournalText {
    let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut text = JournalText {
        complete_len,
        ..JournalText::default()
    };
    for (i, raw) in bytes[..complete_len].split(|&b| b == b'\n').enumerate() {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<JournalEntry>(raw) {
            Ok(entry) => text.lines.push(Line {
                number: i + 1,
                entry,
            }),
            Err(e) => text.corrupt.push(CorruptLine {
                number: i + 1,
                detail: e.to_string(),
            }),
        }
    }
    let tail = &bytes[complete_len..];
    if !tail.iter().all(u8::is_ascii_whitespace) {
        text.torn = Some(parse_torn(tail));
    }
    text
}

/// Serialise one entry as its line (with the newline).
pub fn frame(entry: &JournalEntry) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(entry)?;
    line.push('\n');
    Ok(line)
}

const RESERVE_OPEN: &[u8] = br#"{"op":"reserve","#;
const RECORD_OPEN: &[u8] = br#"{"op":"record","#;
const RELEASE_OPEN: &[u8] = br#"{"op":"release","#;
const LIMIT_OPEN: &[u8] = br#"{"op":"limit","#;

fn parse_torn(tail: &[u8]) -> TornTail {
    // Whole but for its newline.
    if let Ok(e) = serde_json::from_slice::<JournalEntry>(tail) {
        return match e {
            JournalEntry::Reserve {
                seq,
                worst_usd,
                attempt,
                role,
                call_key,
                model,
            } => TornTail::Reserve(TornReserve {
                seq: Some(seq),
                worst_usd: Some(worst_usd),
                attempt: Some(attempt),
                role,
                call_key: Some(call_key),
                model: Some(model),
            }),
            _ => TornTail::Closing,
        };
    }
    let could_be = |open: &[u8]| tail.starts_with(open) || open.starts_with(tail);
    if could_be(RESERVE_OPEN) {
        // `{"op":"re` could also open a record or release: read as a reserve.
        return TornTail::Reserve(match tail.strip_prefix(RESERVE_OPEN) {
            Some(rest) => torn_reserve_fields(rest),
            None => TornReserve::default(),
        });
    }
    // A torn raise of a limit books nothing: the raise did not happen (the
    // run is still ended; the operator's command is run again).
    if could_be(RECORD_OPEN) || could_be(RELEASE_OPEN) || could_be(LIMIT_OPEN) {
        return TornTail::Closing;
    }
    TornTail::Unknown
}

/// `"seq":7,"worst_usd":0.25,"attempt":0,"role":"execute",...`: each value
/// counts only when the `,` that ends it survived.
fn torn_reserve_fields(rest: &[u8]) -> TornReserve {
    let mut t = TornReserve::default();
    let Some((seq, rest)) = field(rest, "seq") else {
        return t;
    };
    t.seq = std::str::from_utf8(seq).ok().and_then(|s| s.parse().ok());
    let Some((worst, rest)) = field(rest, "worst_usd") else {
        return t;
    };
    t.worst_usd = std::str::from_utf8(worst)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|w| w.is_finite() && *w >= 0.0);
    let Some((attempt, rest)) = field(rest, "attempt") else {
        return t;
    };
    t.attempt = std::str::from_utf8(attempt)
        .ok()
        .and_then(|s| s.parse().ok());
    if let Some((role, _)) = field(rest, "role") {
        t.role = serde_json::from_slice(role).ok().flatten();
    }
    t
}

/// `"<name>":<value>,` at the start of `s`: the value's bytes and what
/// follows the comma. Values here are numbers, `null` or a plain string.
fn field<'a>(s: &'a [u8], name: &str) -> Option<(&'a [u8], &'a [u8])> {
    let key = format!("\"{name}\":");
    let rest = s.strip_prefix(key.as_bytes())?;
    let end = rest.iter().position(|&b| b == b',')?;
    Some((&rest[..end], &rest[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserve(seq: u64, worst: f64) -> JournalEntry {
        JournalEntry::Reserve {
            seq,
            worst_usd: worst,
            attempt: 0,
            role: Some(CallRole::Execute),
            call_key: "execute/t1/a0/0".into(),
            model: "claude-opus-5".into(),
        }
    }

    #[test]
    fn the_frame_puts_the_amount_first() {
        let line = frame(&reserve(7, 0.2561)).unwrap();
        assert!(
            line.starts_with(
                r#"{"op":"reserve","seq":7,"worst_usd":0.2561,"attempt":0,"role":"execute","#
            ),
            "{line}"
        );
        assert!(line.ends_with('\n'));
        let rec = frame(&JournalEntry::Record {
            seq: 7,
            cost_usd: 0.1,
            usage: Usage::default(),
            basis: "usage".into(),
        })
        .unwrap();
        assert!(rec.starts_with(r#"{"op":"record","seq":7,"#), "{rec}");
    }

    #[test]
    fn a_reserve_torn_anywhere_still_says_what_it_can() {
        let line = frame(&reserve(7, 0.2561)).unwrap();
        let bytes = line.as_bytes();
        let amount_known_from = line.find(r#","attempt""#).unwrap() + 1; // the comma after the amount
        for cut in 1..bytes.len() - 1 {
            let text = parse(&bytes[..cut]);
            assert!(text.lines.is_empty() && text.corrupt.is_empty());
            let Some(TornTail::Reserve(t)) = &text.torn else {
                panic!("cut at {cut}: {:?}", text.torn)
            };
            if cut >= amount_known_from {
                assert_eq!(t.worst_usd, Some(0.2561), "cut at {cut}");
                assert_eq!(t.seq, Some(7));
            } else {
                // Never a wrong (smaller) amount from a number cut short.
                assert_eq!(t.worst_usd, None, "cut at {cut}: {t:?}");
            }
        }
        // Whole but for the newline: everything known.
        let text = parse(&bytes[..bytes.len() - 1]);
        let Some(TornTail::Reserve(t)) = text.torn else {
            panic!()
        };
        assert_eq!(t.call_key.as_deref(), Some("execute/t1/a0/0"));
        assert_eq!(t.role, Some(CallRole::Execute));
    }

    #[test]
    fn torn_records_close_and_garbage_is_unknown() {
        let rec = frame(&JournalEntry::Record {
            seq: 1,
            cost_usd: 0.5,
            usage: Usage::default(),
            basis: "usage".into(),
        })
        .unwrap();
        assert_eq!(parse(&rec.as_bytes()[..20]).torn, Some(TornTail::Closing));
        assert_eq!(
            parse(br#"{"op":"release","se"#).torn,
            Some(TornTail::Closing)
        );
        // Too short to tell a record from a reserve: read as a reserve.
        assert_eq!(
            parse(br#"{"op":"re"#).torn,
            Some(TornTail::Reserve(TornReserve::default()))
        );
        assert_eq!(parse(b"\0\0\0\0").torn, Some(TornTail::Unknown));
        assert_eq!(parse(b"  \n \n").torn, None);
    }

    #[test]
    fn complete_bad_lines_are_corrupt_not_torn() {
        let mut bytes = frame(&reserve(0, 0.5)).unwrap().into_bytes();
        bytes.extend_from_slice(b"\0\0\0\"}\n");
        bytes.extend_from_slice(frame(&JournalEntry::Release { seq: 0 }).unwrap().as_bytes());
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
        let text = parse(&bytes);
        assert_eq!(text.lines.len(), 2);
        assert_eq!(
            text.corrupt.iter().map(|c| c.number).collect::<Vec<_>>(),
            vec![2, 4]
        );
        assert_eq!(text.torn, None);
        assert_eq!(text.complete_len, bytes.len());
    }

    #[test]
    fn journals_from_before_the_frame_change_still_parse() {
        // Old field order, no `attempt`.
        let old = br#"{"op":"reserve","seq":0,"call_key":"plan/0","role":"plan","model":"m","worst_usd":0.5}
"#;
        let text = parse(old);
        assert!(text.corrupt.is_empty(), "{:?}", text.corrupt);
        assert!(matches!(
            text.lines[0].entry,
            JournalEntry::Reserve { attempt: 0, worst_usd, .. } if worst_usd == 0.5
        ));
    }
}
