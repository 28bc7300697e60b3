//! Seeded fault injection for the replay server.
//!
//! A fault decision is a pure function of `(seed, case, run, call_key,
//! attempt)`: SHA-256 of those fields, read as a uniform number in [0, 1),
//! compared against the cumulative rates. Nothing depends on arrival order,
//! wall time or concurrency, so a failing eval can be re-run with the same
//! seed and see exactly the same faults on exactly the same calls.
//!
//! Faults are only injected on HTTP attempts `< FAULT_ATTEMPT_CAP`: a client
//! that retries at least `FAULT_ATTEMPT_CAP` times always reaches the real
//! response, so injected faults test the retry path without making a case
//! unwinnable by chance.

use std::fmt;

use sha2::{Digest, Sha256};

/// Injected faults are never served on attempt numbers at or above this.
/// Three because the harness client's default retry budget is larger than
/// that; the cap is what makes every injected fault recoverable.
pub const FAULT_ATTEMPT_CAP: u32 = 3;

/// A drip fault sends the real body this many bytes at a time.
pub const DRIP_CHUNK_BYTES: usize = 16;
/// The longest pause a drip fault may put between two chunks.
pub const DRIP_INTERVAL_MAX_MS: u64 = 60_000;

/// Domain separation for the decision hash, so a future change in the
/// decision inputs can bump the tag instead of silently reshuffling faults.
const DECISION_TAG: &[u8] = b"harness-replay-fault/1";

/// What to inject, per request, at which rates. Rates are probabilities in
/// [0, 1] and are mutually exclusive per request (their sum must be <= 1):
/// one uniform draw picks at most one kind, so the observed rate of each kind
/// matches its configured rate instead of being shadowed by earlier kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    pub seed: u64,
    /// HTTP 429 with `Retry-After: retry_after_s`.
    pub rate_429: f64,
    /// HTTP 500.
    pub rate_500: f64,
    /// The real response, `added_latency_ms` later (not scaled by the
    /// server's latency_scale: the fault spec asked for that much).
    pub rate_latency: f64,
    pub added_latency_ms: u64,
    /// Status 200 with the real body cut in half.
    pub rate_truncated: f64,
    /// Status 200 with a body that is not JSON at all.
    pub rate_malformed: f64,
    /// Status 200 and the real body, sent `DRIP_CHUNK_BYTES` at a time with
    /// `drip_interval_ms` between chunks: a server (or proxy) that drips its
    /// answer so slowly that only a wall clock bounds the wait.
    pub rate_drip: f64,
    pub drip_interval_ms: u64,
    pub retry_after_s: u64,
}

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    RateLimited,
    ServerError,
    Latency,
    Truncated,
    Malformed,
    Drip,
}

impl FaultKind {
    /// The name used in fault specs and in the `x-replay-fault` header.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "429",
            FaultKind::ServerError => "500",
            FaultKind::Latency => "latency",
            FaultKind::Truncated => "truncate",
            FaultKind::Malformed => "malformed",
            FaultKind::Drip => "drip",
        }
    }
}

/// A fault spec that could not be parsed or a plan whose numbers make no sense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpecError(pub String);

impl fmt::Display for FaultSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad fault spec: {}", self.0)
    }
}

impl std::error::Error for FaultSpecError {}

impl Default for FaultPlan {
    fn default() -> Self {
        FaultPlan::none()
    }
}

const SPEC_HELP: &str = "expected comma-separated items from 429=<rate>, 500=<rate>, \
latency=<rate>:<ms>, truncate=<rate>, malformed=<rate>, drip=<rate>:<ms between chunks>, \
retry_after=<seconds>, seed=<u64>; \
e.g. \"429=0.1,500=0.05,latency=0.1:200,truncate=0.02,malformed=0.02,drip=0.01:500,seed=7\"";

impl FaultPlan {
    /// No faults at all.
    pub fn none() -> FaultPlan {
        FaultPlan {
            seed: 0,
            rate_429: 0.0,
            rate_500: 0.0,
            rate_latency: 0.0,
            added_latency_ms: 0,
            rate_truncated: 0.0,
            rate_malformed: 0.0,
            rate_drip: 0.0,
            drip_interval_ms: 0,
            retry_after_s: 1,
        }
    }

    /// True when no request can ever get a fault.
    pub fn is_none(&self) -> bool {
        self.total_rate() <= 0.0
    }

    fn total_rate(&self) -> f64 {
        self.rate_429
            + self.rate_500
            + self.rate_latency
            + self.rate_truncated
            + self.rate_malformed
            + self.rate_drip
    }

    /// True when some request can get a drip fault (the server then needs
    /// its streaming front, see `replay::drip`).
    pub fn may_drip(&self) -> bool {
        self.rate_drip > 0.0
    }

    /// Parse `429=0.1,500=0.05,latency=0.1:200,truncate=0.02,malformed=0.02,seed=7`.
    /// Items may come in any order; omitted kinds have rate 0. `""` and
    /// `"none"` mean no faults. `retry_after=<s>` sets the 429 Retry-After
    /// (default 1). Every mistake is an error naming the item: a typo in a
    /// chaos spec must not silently run a fault-free eval.
    pub fn parse(spec: &str) -> Result<FaultPlan, FaultSpecError> {
        let mut plan = FaultPlan::none();
        let trimmed = spec.trim();
        if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("none") {
            return Ok(plan);
        }
        let mut seen: Vec<String> = Vec::new();
        for raw_item in trimmed.split(',') {
            let item = raw_item.trim();
            if item.is_empty() {
                return Err(FaultSpecError(format!(
                    "empty item in \"{spec}\"; {SPEC_HELP}"
                )));
            }
            let Some((key, value)) = item.split_once('=') else {
                return Err(FaultSpecError(format!(
                    "item \"{item}\" has no '='; {SPEC_HELP}"
                )));
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim();
            if seen.contains(&key) {
                return Err(FaultSpecError(format!(
                    "\"{key}\" is given twice in \"{spec}\""
                )));
            }
            seen.push(key.clone());
            plan.set(&key, value, item)?;
        }
        plan.validate()?;
        Ok(plan)
    }

    /// Set what one `key=value` item of a spec says (`item` as written,
    /// for the error).
    fn set(&mut self, key: &str, value: &str, item: &str) -> Result<(), FaultSpecError> {
        match key {
            "429" => self.rate_429 = parse_rate(key, value)?,
            "500" => self.rate_500 = parse_rate(key, value)?,
            "truncate" | "truncated" => self.rate_truncated = parse_rate(key, value)?,
            "malformed" => self.rate_malformed = parse_rate(key, value)?,
            "drip" => self.set_drip(key, value, item)?,
            "latency" => self.set_latency(key, value, item)?,
            "seed" => {
                self.seed = value.parse::<u64>().map_err(|_| {
                    FaultSpecError(format!(
                        "item \"{item}\": seed must be a non-negative integer"
                    ))
                })?
            }
            "retry_after" | "retry-after" => {
                self.retry_after_s = value.parse::<u64>().map_err(|_| {
                    FaultSpecError(format!(
                        "item \"{item}\": retry_after must be whole seconds"
                    ))
                })?
            }
            _ => {
                return Err(FaultSpecError(format!(
                    "unknown fault kind \"{key}\" in item \"{item}\"; {SPEC_HELP}"
                )))
            }
        }
        Ok(())
    }

    /// `drip=<rate>:<ms between chunks>`.
    fn set_drip(&mut self, key: &str, value: &str, item: &str) -> Result<(), FaultSpecError> {
        let Some((rate, ms)) = value.split_once(':') else {
            return Err(FaultSpecError(format!(
                "item \"{item}\": expected drip=<rate>:<ms between chunks>, e.g. drip=1.0:500"
            )));
        };
        self.rate_drip = parse_rate(key, rate.trim())?;
        self.drip_interval_ms = ms.trim().parse::<u64>().map_err(|_| {
            FaultSpecError(format!(
                "item \"{item}\": the interval \"{}\" is not a whole number of milliseconds",
                ms.trim()
            ))
        })?;
        if self.drip_interval_ms > DRIP_INTERVAL_MAX_MS {
            return Err(FaultSpecError(format!(
                "item \"{item}\": the interval is at most {DRIP_INTERVAL_MAX_MS} ms"
            )));
        }
        Ok(())
    }

    /// `latency=<rate>:<ms>`.
    fn set_latency(&mut self, key: &str, value: &str, item: &str) -> Result<(), FaultSpecError> {
        let Some((rate, ms)) = value.split_once(':') else {
            return Err(FaultSpecError(format!(
                "item \"{item}\": expected latency=<rate>:<ms>, e.g. latency=0.1:200"
            )));
        };
        self.rate_latency = parse_rate(key, rate.trim())?;
        self.added_latency_ms = ms.trim().parse::<u64>().map_err(|_| {
            FaultSpecError(format!(
                "item \"{item}\": added latency \"{}\" is not a whole number of milliseconds",
                ms.trim()
            ))
        })?;
        Ok(())
    }

    /// Check a plan built in code (parse() already calls this).
    pub fn validate(&self) -> Result<(), FaultSpecError> {
        for (name, rate) in [
            ("429", self.rate_429),
            ("500", self.rate_500),
            ("latency", self.rate_latency),
            ("truncate", self.rate_truncated),
            ("malformed", self.rate_malformed),
            ("drip", self.rate_drip),
        ] {
            if !rate.is_finite() || !(0.0..=1.0).contains(&rate) {
                return Err(FaultSpecError(format!(
                    "rate for {name} is {rate}; expected a number in [0, 1]"
                )));
            }
        }
        let total = self.total_rate();
        // A small tolerance so "0.7,0.3" style specs that sum to 1 in decimal
        // but not in binary floating point are accepted.
        if total > 1.0 + 1e-9 {
            return Err(FaultSpecError(format!(
                "rates add up to {total}; at most one fault is injected per request, so they must sum to <= 1"
            )));
        }
        Ok(())
    }

    /// The fault for one request, or None. Pure: same inputs, same answer,
    /// whatever order requests arrive in. `run` is the run index the client
    /// asked for (not the cassette variant), so repeated runs of a case see
    /// different faults.
    pub fn decide(&self, case: &str, run: u32, call_key: &str, attempt: u32) -> Option<FaultKind> {
        if attempt >= FAULT_ATTEMPT_CAP || self.is_none() {
            return None;
        }
        let u = uniform(self.seed, case, run, call_key, attempt);
        let mut edge = 0.0;
        for (rate, kind) in [
            (self.rate_429, FaultKind::RateLimited),
            (self.rate_500, FaultKind::ServerError),
            (self.rate_latency, FaultKind::Latency),
            (self.rate_truncated, FaultKind::Truncated),
            (self.rate_malformed, FaultKind::Malformed),
            (self.rate_drip, FaultKind::Drip),
        ] {
            edge += rate;
            if rate > 0.0 && u < edge {
                return Some(kind);
            }
        }
        None
    }
}

/// Renders the plan back as a spec string that `parse` accepts, for reports.
impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        write!(
            f,
            "429={},500={},latency={}:{},truncate={},malformed={},",
            self.rate_429,
            self.rate_500,
            self.rate_latency,
            self.added_latency_ms,
            self.rate_truncated,
            self.rate_malformed,
        )?;
        // Only when present, so plans without it render as they always did.
        if self.may_drip() {
            write!(f, "drip={}:{},", self.rate_drip, self.drip_interval_ms)?;
        }
        write!(f, "retry_after={},seed={}", self.retry_after_s, self.seed)
    }
}

fn parse_rate(key: &str, value: &str) -> Result<f64, FaultSpecError> {
    let rate = value.parse::<f64>().map_err(|_| {
        FaultSpecError(format!(
            "rate for {key} is \"{value}\"; expected a number in [0, 1]"
        ))
    })?;
    if !rate.is_finite() || !(0.0..=1.0).contains(&rate) {
        return Err(FaultSpecError(format!(
            "rate for {key} is {value}; expected a number in [0, 1]"
        )));
    }
    Ok(rate)
}

/// Uniform in [0, 1) from SHA-256 of the decision inputs. Strings are
/// length-prefixed so ("ab", "c") and ("a", "bc") cannot collide.
fn uniform(seed: u64, case: &str, run: u32, call_key: &str, attempt: u32) -> f64 {
    let mut h = Sha256::new();
    h.update(DECISION_TAG);
    h.update(seed.to_le_bytes());
    h.update((case.len() as u64).to_le_bytes());
    h.update(case.as_bytes());
    h.update(run.to_le_bytes());
    h.update((call_key.len() as u64).to_le_bytes());
    h.update(call_key.as_bytes());
    h.update(attempt.to_le_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Top 53 bits: exactly representable in an f64 mantissa, so the result
    // is uniform on a grid and strictly below 1.
    (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_full_spec() {
        let p = FaultPlan::parse(
            "429=0.1,500=0.05,latency=0.1:200,truncate=0.02,malformed=0.02,seed=7",
        )
        .unwrap();
        assert_eq!(p.rate_429, 0.1);
        assert_eq!(p.rate_500, 0.05);
        assert_eq!(p.rate_latency, 0.1);
        assert_eq!(p.added_latency_ms, 200);
        assert_eq!(p.rate_truncated, 0.02);
        assert_eq!(p.rate_malformed, 0.02);
        assert_eq!(p.seed, 7);
        assert_eq!(p.retry_after_s, 1);
        // Display round-trips through parse.
        assert_eq!(FaultPlan::parse(&p.to_string()).unwrap(), p);
        assert!(!p.to_string().contains("drip"), "absent unless asked for");
        let d = FaultPlan::parse("drip=0.25:400,seed=3").unwrap();
        assert_eq!((d.rate_drip, d.drip_interval_ms), (0.25, 400));
        assert!(d.may_drip() && !p.may_drip());
        assert_eq!(FaultPlan::parse(&d.to_string()).unwrap(), d);
        assert!(FaultPlan::parse("").unwrap().is_none());
        assert!(FaultPlan::parse(" none ").unwrap().is_none());
        assert_eq!(
            FaultPlan::parse("429=1,retry_after=3")
                .unwrap()
                .retry_after_s,
            3
        );
    }

    #[test]
    fn parse_errors_are_clear() {
        for (spec, needle) in [
            ("429=2", "[0, 1]"),
            ("429=abc", "expected a number"),
            ("429=NaN", "[0, 1]"),
            ("latency=0.1", "latency=<rate>:<ms>"),
            ("latency=0.1:fast", "milliseconds"),
            ("bogus=0.1", "unknown fault kind \"bogus\""),
            ("429", "has no '='"),
            ("429=0.1,,500=0.1", "empty item"),
            ("429=0.1,429=0.2", "given twice"),
            ("429=0.6,500=0.6", "sum to <= 1"),
            ("seed=-1", "seed"),
            ("drip=0.5", "drip=<rate>:<ms"),
            ("drip=0.5:slow", "milliseconds"),
            ("drip=0.5:600001", "at most"),
            ("drip=1.5:10", "[0, 1]"),
        ] {
            let err = FaultPlan::parse(spec).expect_err(spec).to_string();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    fn decisions(plan: &FaultPlan) -> Vec<Option<FaultKind>> {
        let mut out = Vec::new();
        for run in 0..4 {
            for k in 0..200 {
                for attempt in 0..FAULT_ATTEMPT_CAP {
                    out.push(plan.decide("case-a", run, &format!("execute/t{k}/a0/0"), attempt));
                }
            }
        }
        out
    }

    #[test]
    fn each_kind_is_reproducible_from_its_seed() {
        for spec in [
            "429=0.2",
            "500=0.2",
            "latency=0.2:50",
            "truncate=0.2",
            "malformed=0.2",
            "drip=0.2:100",
        ] {
            let a = FaultPlan::parse(&format!("{spec},seed=7")).unwrap();
            let a2 = FaultPlan::parse(&format!("{spec},seed=7")).unwrap();
            let b = FaultPlan::parse(&format!("{spec},seed=8")).unwrap();
            let da = decisions(&a);
            assert_eq!(da, decisions(&a2), "{spec}: same seed, same decisions");
            assert_ne!(
                da,
                decisions(&b),
                "{spec}: different seed, different decisions"
            );
            assert!(da.iter().any(|d| d.is_some()), "{spec}: injects something");
            // Only the configured kind ever appears.
            let kinds: std::collections::HashSet<_> = da.iter().flatten().collect();
            assert_eq!(kinds.len(), 1, "{spec}: {kinds:?}");
        }
    }

    #[test]
    fn rates_roughly_hold_over_many_keys() {
        let p = FaultPlan::parse(
            "429=0.1,500=0.05,latency=0.1:200,truncate=0.02,malformed=0.03,seed=42",
        )
        .unwrap();
        let n = 40_000u32;
        let mut counts = std::collections::HashMap::new();
        for i in 0..n {
            if let Some(k) = p.decide(
                "rates",
                i % 7,
                &format!("execute/t{}/a0/{}", i / 7, i % 5),
                0,
            ) {
                *counts.entry(k).or_insert(0u32) += 1;
            }
        }
        for (kind, rate) in [
            (FaultKind::RateLimited, 0.1),
            (FaultKind::ServerError, 0.05),
            (FaultKind::Latency, 0.1),
            (FaultKind::Truncated, 0.02),
            (FaultKind::Malformed, 0.03),
        ] {
            let got = *counts.get(&kind).unwrap_or(&0) as f64 / n as f64;
            // 40k draws: the standard error at p=0.1 is 0.0015; allow ~4 sigma.
            assert!(
                (got - rate).abs() < 0.006,
                "{kind:?}: expected ~{rate}, got {got}"
            );
        }
    }

    #[test]
    fn never_injects_at_or_above_the_attempt_cap() {
        let p = FaultPlan::parse("429=1").unwrap();
        assert_eq!(p.decide("c", 0, "plan/0", 0), Some(FaultKind::RateLimited));
        assert_eq!(
            p.decide("c", 0, "plan/0", FAULT_ATTEMPT_CAP - 1),
            Some(FaultKind::RateLimited)
        );
        assert_eq!(p.decide("c", 0, "plan/0", FAULT_ATTEMPT_CAP), None);
        assert_eq!(FaultPlan::none().decide("c", 0, "plan/0", 0), None);
    }

    #[test]
    fn decision_depends_on_every_input() {
        let p = FaultPlan::parse("429=0.5,seed=1").unwrap();
        let base: Vec<_> = (0..64)
            .map(|i| p.decide("c", 0, &format!("k{i}"), 0))
            .collect();
        let other_case: Vec<_> = (0..64)
            .map(|i| p.decide("d", 0, &format!("k{i}"), 0))
            .collect();
        let other_run: Vec<_> = (0..64)
            .map(|i| p.decide("c", 1, &format!("k{i}"), 0))
            .collect();
        let other_attempt: Vec<_> = (0..64)
            .map(|i| p.decide("c", 0, &format!("k{i}"), 1))
            .collect();
        assert_ne!(base, other_case);
        assert_ne!(base, other_run);
        assert_ne!(base, other_attempt);
    }
}
