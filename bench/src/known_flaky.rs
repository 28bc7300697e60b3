//! Why a case is flaky, and the `known_flaky` marker a case.toml may carry.
//!
//! The causes are the evaluation design's triage buckets (002 §9), each with
//! the evidence `bench flaky` needs to name it and the remedy it names. A
//! marked case is still run by every gate and shown as known flaky in every
//! output: a marker labels a case, it never hides or excuses it.

use serde::{Deserialize, Serialize};

/// The cause of a case's flakiness, from the evidence of its reruns.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Passes on some recorded variants and not others: model sampling.
    Variant,
    /// Depends on the fault seed: an error-recovery gap, a real bug.
    Fault,
    /// Depends on latency or a cap: a latency cap or wall clock too close.
    Timing,
    /// The failing runs fail only on a score within `SCORER_MARGIN` of the
    /// pass line: a strict scorer.
    Scorer,
    /// Differs across identical reruns: the harness is not deterministic.
    Unstable,
}

impl Cause {
    pub const ALL: [Cause; 5] = [
        Cause::Variant,
        Cause::Fault,
        Cause::Timing,
        Cause::Scorer,
        Cause::Unstable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Variant => "variant",
            Cause::Fault => "fault",
            Cause::Timing => "timing",
            Cause::Scorer => "scorer",
            Cause::Unstable => "unstable",
        }
    }

    pub fn parse(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// What to do about it (002 §9's triage).
    pub fn remedy(self) -> &'static str {
        match self {
            Cause::Variant => {
                "model sampling: pin temperature 0 for this case or gate on a majority of 3 runs"
            }
            Cause::Fault => {
                "an error-recovery gap: find the fault seed that breaks it and fix the recovery (a real bug)"
            }
            Cause::Timing => {
                "a latency cap or wall clock too close to the run's time: replay recorded responses (latency_scale 0) or widen the cap"
            }
            Cause::Scorer => {
                "a strict scorer: the verdict turns on one soft check at the line; make the decisive check a gate or fix the expectation"
            }
            Cause::Unstable => {
                "the harness is not deterministic under identical inputs: a real bug; keep the case visible as known flaky until it is fixed"
            }
        }
    }

    pub fn list() -> String {
        Cause::ALL.map(|c| c.as_str()).join(", ")
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A score this close to the pass line (either side) is one soft check from
/// the other verdict (the "within 0.1 of the 0.8 line").
pub const SCORER_MARGIN: f64 = 0.1;

/// `known_flaky = { cause = "...", since = "YYYY-MM-DD", note = "..." }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnownFlaky {
    pub cause: Cause,
    /// When the flakiness was first seen (a calendar date).
    pub since: String,
    /// What is known: the evidence, the issue, who is on it.
    pub note: String,
}

impl KnownFlaky {
    /// The marker's values in range, or the field and what it expects.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !is_date(&self.since) {
            return Err((
                "known_flaky.since",
                format!("a date YYYY-MM-DD, found {:?}", self.since),
            ));
        }
        if self.note.trim().is_empty() {
            return Err((
                "known_flaky.note",
                "a non-empty note: what is known about the flakiness".into(),
            ));
        }
        Ok(())
    }

    /// "known flaky (timing, since 2026-12-01)".
    pub fn label(&self) -> String {
        format!("known flaky ({}, since {})", self.cause, self.since)
    }
}

/// YYYY-MM-DD with a month 1-12 and a day that month can have.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let t = &s[r];
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_round_trip_and_each_names_a_remedy() {
        for c in Cause::ALL {
            assert_eq!(Cause::parse(c.as_str()), Some(c));
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.as_str())
            );
            assert!(!c.remedy().is_empty());
        }
        assert_eq!(Cause::parse("flaky"), None);
    }

    #[test]
    fn a_marker_needs_a_real_date_and_a_note() {
        let m = |since: &str, note: &str| KnownFlaky {
            cause: Cause::Timing,
            since: since.into(),
            note: note.into(),
        };
        assert!(m("2026-12-01", "slow CI").check().is_ok());
        assert!(m("2024-02-29", "leap").check().is_ok());
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "26-12-01",
            "2026/12/01",
            "",
        ] {
            assert_eq!(
                m(bad, "n").check().unwrap_err().0,
                "known_flaky.since",
                "{bad}"
            );
        }
        assert_eq!(
            m("2026-12-01", "  ").check().unwrap_err().0,
            "known_flaky.note"
        );
    }
}
