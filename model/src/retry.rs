//! Retry policy, backoff with deterministic full jitter, and Retry-After parsing.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Attempts are capped here whatever the config says: an unattended run must
/// not hammer an endpoint (or the budget) because of a typo in run.toml.
pub const MAX_ATTEMPTS_HARD_CAP: u32 = 10;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// Total HTTP attempts including the first (clamped to 1..=10).
    pub max_attempts: u32,
    /// Backoff ceiling for the first retry; doubles per attempt.
    pub base_delay_ms: u64,
    /// Backoff ceiling cap.
    pub max_delay_ms: u64,
    /// A server's Retry-After is honoured up to this long.
    pub retry_after_cap_ms: u64,
    /// Seeds the jitter so a run's waits are reproducible in tests and replays.
    pub jitter_seed: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay_ms: 200,
            max_delay_ms: 20_000,
            retry_after_cap_ms: 60_000,
            jitter_seed: 0,
        }
    }
}

impl RetryPolicy {
    /// `max_attempts` clamped to `1..=MAX_ATTEMPTS_HARD_CAP`.
    pub fn effective_max_attempts(&self) -> u32 {
        self.max_attempts.clamp(1, MAX_ATTEMPTS_HARD_CAP)
    }
}

/// How long to wait after 0-based attempt `attempt` failed, before the next one.
///
/// Full jitter: uniform in `[0, min(max_delay, base * 2^attempt)]`, drawn from
/// an RNG seeded by `(jitter_seed, call_key, attempt)`, so the same call
/// retried in the same run waits the same, while different calls do not
/// retry in lockstep. A server's `retry_after` (ms) is a floor, capped at
/// `retry_after_cap_ms`.
pub fn retry_delay_ms(
    policy: &RetryPolicy,
    call_key: &str,
    attempt: u32,
    retry_after: Option<u64>,
) -> u64 {
    let factor = 1u64.checked_shl(attempt.min(63)).unwrap_or(u64::MAX);
    let ceiling = policy
        .base_delay_ms
        .saturating_mul(factor)
        .min(policy.max_delay_ms);
    let jittered = if ceiling == 0 {
        0
    } else {
        let mut h = Sha256::new();
        h.update(policy.jitter_seed.to_le_bytes());
        h.update((call_key.len() as u64).to_le_bytes());
        h.update(call_key.as_bytes());
        h.update(attempt.to_le_bytes());
        let seed: [u8; 32] = h.finalize().into();
        ChaCha8Rng::from_seed(seed).gen_range(0..=ceiling)
    };
    match retry_after {
        Some(ra) => jittered.max(ra.min(policy.retry_after_cap_ms)),
        None => jittered,
    }
}

/// Parse a Retry-After header value into milliseconds from `now`: either
/// delta-seconds (`"7"`, also tolerating `"1.5"`) or an HTTP-date
/// (`"Sun, 06 Nov 1994 08:49:37 GMT"`). A date in the past is 0. Unparseable: None.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(secs.saturating_mul(1000));
    }
    if let Ok(secs) = v.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some((secs * 1000.0).min(u64::MAX as f64) as u64);
        }
        return None;
    }
    let at = parse_http_date(v)?;
    let now_s = now.duration_since(UNIX_EPOCH).ok()?.as_millis() as i128;
    Some((at as i128 * 1000 - now_s).max(0).min(u64::MAX as i128) as u64)
}

/// An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, and the two obsolete forms
/// a recipient must accept) as Unix seconds, through the `httpdate` crate
/// (hyper's own parser, already in the tree).
fn parse_http_date(s: &str) -> Option<i64> {
    let at = httpdate::parse_http_date(s).ok()?;
    let secs = at.duration_since(UNIX_EPOCH).ok()?.as_secs();
    i64::try_from(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn default_policy_is_sensible() {
        let p = RetryPolicy::default();
        assert_eq!(
            (
                p.max_attempts,
                p.base_delay_ms,
                p.max_delay_ms,
                p.retry_after_cap_ms
            ),
            (5, 200, 20_000, 60_000)
        );
        assert_eq!(
            RetryPolicy {
                max_attempts: 0,
                ..p.clone()
            }
            .effective_max_attempts(),
            1
        );
        assert_eq!(
            RetryPolicy {
                max_attempts: 1000,
                ..p
            }
            .effective_max_attempts(),
            MAX_ATTEMPTS_HARD_CAP
        );
    }

    #[test]
    fn delay_respects_exponential_ceiling_and_cap() {
        let p = RetryPolicy {
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            ..Default::default()
        };
        for attempt in 0..40 {
            let ceiling = (100u64 << attempt.min(20)).min(1_000);
            for key in ["plan/0", "execute/t1/a0/3", ""] {
                let d = retry_delay_ms(&p, key, attempt, None);
                assert!(d <= ceiling, "attempt {attempt}: {d} > {ceiling}");
            }
        }
        // Huge attempt numbers and base do not overflow.
        let p2 = RetryPolicy {
            base_delay_ms: u64::MAX,
            max_delay_ms: u64::MAX,
            ..Default::default()
        };
        let _ = retry_delay_ms(&p2, "k", u32::MAX, Some(u64::MAX));
    }

    #[test]
    fn delay_is_deterministic_and_jittered() {
        let p = RetryPolicy {
            base_delay_ms: 1_000,
            max_delay_ms: 1_000_000,
            jitter_seed: 42,
            ..Default::default()
        };
        assert_eq!(
            retry_delay_ms(&p, "judge/3", 4, None),
            retry_delay_ms(&p, "judge/3", 4, None)
        );
        let draws: std::collections::HashSet<u64> = (0..20)
            .map(|i| retry_delay_ms(&p, &format!("execute/t{i}"), 6, None))
            .collect();
        assert!(draws.len() > 10, "full jitter spreads calls: {draws:?}");
        let other_seed = RetryPolicy {
            jitter_seed: 43,
            ..p.clone()
        };
        let differs = (0..10)
            .any(|i| retry_delay_ms(&p, "k", i, None) != retry_delay_ms(&other_seed, "k", i, None));
        assert!(differs);
    }

    #[test]
    fn retry_after_is_a_floor_capped_by_policy() {
        let p = RetryPolicy {
            base_delay_ms: 10,
            max_delay_ms: 20,
            retry_after_cap_ms: 5_000,
            ..Default::default()
        };
        assert_eq!(retry_delay_ms(&p, "k", 0, Some(3_000)), 3_000);
        assert_eq!(retry_delay_ms(&p, "k", 0, Some(120_000)), 5_000);
        assert!(retry_delay_ms(&p, "k", 0, Some(0)) <= 10);
    }

    #[test]
    fn parses_retry_after_seconds_and_http_date() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("7", now), Some(7_000));
        assert_eq!(parse_retry_after(" 0 ", now), Some(0));
        assert_eq!(parse_retry_after("1.5", now), Some(1_500));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(10_000)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(0)
        );
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", UNIX_EPOCH),
            Some(0)
        );
        assert_eq!(
            parse_retry_after(
                "Wed, 01 Mar 2028 00:00:00 GMT",
                UNIX_EPOCH + Duration::from_secs(1_835_481_600 - 2)
            ),
            Some(2_000)
        );
        // The obsolete forms RFC 9110 says a recipient must accept.
        for obsolete in ["Sunday, 06-Nov-94 08:49:47 GMT", "Sun Nov  6 08:49:47 1994"] {
            assert_eq!(parse_retry_after(obsolete, now), Some(10_000), "{obsolete}");
        }
        for bad in [
            "",
            "-1",
            "soon",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "NaN",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }
}
