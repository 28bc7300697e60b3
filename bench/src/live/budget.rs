//! The command-wide cap of a live command (`--max-usd`, `--max-tokens`):
//! one budget shared by every case-run and every upstream call of the
//! command, so a whole `bench record` or `bench run --endpoint` can never
//! spend more than it was given, whatever each run's own ledger says.
//!
//! Same discipline as the harness's ledger: reserve the call's WORST case
//! before it is made, book the real usage after. Reservations are held while
//! the call is in flight, so concurrent calls can never together cross the
//! cap: `booked + held <= cap` at every moment. Money is priced with
//! `harness::ledger::cost_usd` (all four usage fields), never a second formula.
//!
//! Worst case of a call: input tokens estimated from the request body at one
//! token per byte (the most a byte-level BPE tokenizer can produce; JSON
//! syntax only adds bytes) plus a fixed allowance for the chat template the
//! server wraps around the messages, and the body's `max_tokens` of output.
//! If a reply ever reports more than that, the real usage is still booked
//! (never an undercount) and counted in `Spend::over_reservation`.

use harness::ledger::{cost_usd, Price};
use harness::model::Usage;
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// Tokens added to the byte count for the server's chat template (role
/// markers, tool-calling preamble) that are not in the request body.
pub const TEMPLATE_ALLOWANCE_TOKENS: u64 = 1024;

/// The worst-case usage of one call whose JSON body is `body_len` bytes and
/// asks for at most `max_tokens` of output.
pub fn worst_case_usage(body_len: usize, max_tokens: u64) -> Usage {
    Usage {
        input_tokens: body_len as u64 + TEMPLATE_ALLOWANCE_TOKENS,
        output_tokens: max_tokens,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    }
}

/// The two caps. `max_usd` is required; `max_tokens` is the guard that still
/// works when the price table says $0 (a local model).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Caps {
    pub max_usd: f64,
    pub max_tokens: Option<u64>,
}

/// A cap no command can run under; the message names the flag and what it
/// takes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapsError {
    #[error("--max-usd {0}: expected a non-negative number of US dollars")]
    Usd(f64),
    #[error("--max-tokens 0: expected a positive number of tokens")]
    ZeroTokens,
}

impl Caps {
    /// Errors name the flag and what it takes.
    pub fn new(max_usd: f64, max_tokens: Option<u64>) -> Result<Caps, CapsError> {
        if !(max_usd.is_finite() && max_usd >= 0.0) {
            return Err(CapsError::Usd(max_usd));
        }
        if max_tokens == Some(0) {
            return Err(CapsError::ZeroTokens);
        }
        Ok(Caps {
            max_usd,
            max_tokens,
        })
    }

    pub fn describe(&self) -> String {
        match self.max_tokens {
            Some(t) => format!("--max-usd {} and --max-tokens {t}", self.max_usd),
            None => format!("--max-usd {}", self.max_usd),
        }
    }
}

/// Which cap refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapKind {
    Usd,
    Tokens,
    /// A $0 price with no `--max-tokens`: nothing could stop the spend.
    Unbounded,
}

/// A call the budget refused, with the figures that decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub cap: CapKind,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Where the money and the tokens stand.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spend {
    pub booked_usd: f64,
    pub booked_tokens: u64,
    /// Held by calls in flight.
    pub held_usd: f64,
    pub held_tokens: u64,
    pub held_calls: u64,
    /// Calls booked (answered or failed) and calls refused.
    pub calls: u64,
    pub refused: u64,
    /// Calls booked at their worst case (unparseable 200s, calls cut off).
    pub booked_at_worst: u64,
    /// Calls whose reported usage exceeded their reservation (see the module doc).
    pub over_reservation: u64,
    /// The first refusal, as said to the caller.
    pub first_refusal: Option<Refusal>,
}

#[derive(Debug)]
pub struct Budget {
    caps: Caps,
    st: Mutex<Spend>,
}

/// A granted reservation. Consumed by [`Hold::book`] or [`Hold::release`];
/// a hold dropped unconsumed (a call cut off mid-flight) books its worst
/// case, like the harness's ledger does for a call in flight at a kill.
#[must_use]
#[derive(Debug)]
pub struct Hold {
    budget: Arc<Budget>,
    usd: f64,
    tokens: u64,
    done: bool,
}

impl Budget {
    pub fn new(caps: Caps) -> Arc<Budget> {
        Arc::new(Budget {
            caps,
            st: Mutex::new(Spend::default()),
        })
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spend> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn spend(&self) -> Spend {
        self.lock().clone()
    }

    /// The first refusal, once a cap has refused a call.
    pub fn cap_reached(&self) -> Option<Refusal> {
        self.lock().first_refusal.clone()
    }

    /// Reserve a call's worst case: `usage` priced at `price`. Refused when
    /// booked + held + this call would cross either cap.
    pub fn reserve(self: &Arc<Self>, price: &Price, usage: &Usage) -> Result<Hold, Refusal> {
        let usd = cost_usd(price, usage);
        let tokens = usage.total();
        let mut st = self.lock();
        let refusal = if usd <= 0.0 && tokens > 0 && self.caps.max_tokens.is_none() {
            Some(Refusal {
                cap: CapKind::Unbounded,
                message: "the model is priced at $0 and there is no --max-tokens: the command-wide cap cannot bound this call; give --max-tokens".into(),
            })
        } else if st.booked_usd + st.held_usd + usd > self.caps.max_usd {
            Some(Refusal {
                cap: CapKind::Usd,
                message: format!(
                    "command-wide cap --max-usd {} reached: booked ${:.6} + in flight ${:.6} + this call's worst case ${:.6} would be ${:.6}",
                    self.caps.max_usd,
                    st.booked_usd,
                    st.held_usd,
                    usd,
                    st.booked_usd + st.held_usd + usd
                ),
            })
        } else {
            match self.caps.max_tokens {
                Some(cap) if st.booked_tokens + st.held_tokens + tokens > cap => Some(Refusal {
                    cap: CapKind::Tokens,
                    message: format!(
                        "command-wide cap --max-tokens {cap} reached: booked {} + in flight {} + this call's worst case {tokens} would be {} tokens",
                        st.booked_tokens,
                        st.held_tokens,
                        st.booked_tokens + st.held_tokens + tokens
                    ),
                }),
                _ => None,
            }
        };
        if let Some(r) = refusal {
            st.refused += 1;
            st.first_refusal.get_or_insert_with(|| r.clone());
            return Err(r);
        }
        st.held_usd += usd;
        st.held_tokens += tokens;
        st.held_calls += 1;
        Ok(Hold {
            budget: self.clone(),
            usd,
            tokens,
            done: false,
        })
    }
}

impl Hold {
    fn settle(&mut self, booked: Option<(f64, u64)>) {
        if self.done {
            return;
        }
        self.done = true;
        let mut st = self.budget.lock();
        st.held_calls = st.held_calls.saturating_sub(1);
        st.held_usd = if st.held_calls == 0 {
            0.0 // no float residue once nothing is in flight
        } else {
            (st.held_usd - self.usd).max(0.0)
        };
        st.held_tokens = st.held_tokens.saturating_sub(self.tokens);
        if let Some((usd, tokens)) = booked {
            st.booked_usd += usd;
            st.booked_tokens += tokens;
            st.calls += 1;
            if usd > self.usd || tokens > self.tokens {
                st.over_reservation += 1;
            }
        }
    }

    /// Book the call's real usage, priced at `price`; returns the dollars booked.
    pub fn book(mut self, price: &Price, usage: &Usage) -> f64 {
        let usd = cost_usd(price, usage);
        self.settle(Some((usd, usage.total())));
        usd
    }

    /// Book the worst case: the call may have been billed for an amount we
    /// cannot know (a 200 whose body does not parse).
    /// Returns the dollars booked.
    pub fn book_worst(mut self) -> f64 {
        let w = (self.usd, self.tokens);
        self.budget.lock().booked_at_worst += 1;
        self.settle(Some(w));
        w.0
    }

    /// The call was not billed (refused upstream: 4xx, 429, 5xx, no connection).
    pub fn release(mut self) {
        self.settle(None);
    }

    /// The dollars reserved: the most the call can be booked at.
    pub fn usd(&self) -> f64 {
        self.usd
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.done {
            let w = (self.usd, self.tokens);
            self.budget.lock().booked_at_worst += 1;
            self.settle(Some(w));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Price = Price {
        input_usd_per_mtok: 1.0,
        output_usd_per_mtok: 2.0,
    };
    const FREE: Price = Price {
        input_usd_per_mtok: 0.0,
        output_usd_per_mtok: 0.0,
    };

    fn u(i: u64, o: u64) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            ..Usage::default()
        }
    }

    #[test]
    fn caps_are_validated() {
        assert!(Caps::new(-1.0, None).is_err());
        assert!(Caps::new(f64::NAN, None).is_err());
        assert!(Caps::new(1.0, Some(0)).is_err());
        assert!(Caps::new(0.0, Some(5)).is_ok());
    }

    #[test]
    fn worst_case_is_bytes_plus_allowance_plus_max_tokens() {
        let w = worst_case_usage(3000, 512);
        assert_eq!(w.input_tokens, 3000 + TEMPLATE_ALLOWANCE_TOKENS);
        assert_eq!(w.output_tokens, 512);
    }

    #[test]
    fn reserve_book_release_and_refuse() {
        // $1 cap; one call's worst case: 100k in ($0.10) + 100k out ($0.20).
        let b = Budget::new(Caps::new(1.0, None).unwrap());
        let h = b.reserve(&P, &u(100_000, 100_000)).unwrap();
        assert!((b.spend().held_usd - 0.3).abs() < 1e-12);
        // It used less than reserved: the real usage is booked, the hold freed.
        h.book(&P, &u(50_000, 10_000));
        let s = b.spend();
        assert!((s.booked_usd - 0.07).abs() < 1e-12, "{s:?}");
        assert_eq!((s.held_usd, s.held_tokens, s.calls), (0.0, 0, 1));
        // Released: nothing booked.
        b.reserve(&P, &u(100_000, 100_000)).unwrap().release();
        assert!((b.spend().booked_usd - 0.07).abs() < 1e-12);
        // Three held calls fit ($0.07 + 0.9); the fourth would cross $1.
        let hs: Vec<Hold> = (0..3)
            .map(|_| b.reserve(&P, &u(100_000, 100_000)).unwrap())
            .collect();
        let r = b.reserve(&P, &u(100_000, 100_000)).unwrap_err();
        assert_eq!(r.cap, CapKind::Usd);
        assert!(r.message.contains("--max-usd 1") && r.message.contains("in flight $0.9"));
        assert_eq!(b.spend().refused, 1);
        assert_eq!(b.cap_reached().unwrap(), r);
        drop(hs); // cut off in flight: each booked at its worst case
        let s = b.spend();
        assert!(
            (s.booked_usd - 0.97).abs() < 1e-9 && s.booked_at_worst == 3,
            "{s:?}"
        );
        assert!(s.booked_usd <= 1.0);
        // A small call still fits under the cap.
        b.reserve(&P, &u(1000, 1000)).unwrap().book_worst();
        assert!(b.spend().booked_usd <= 1.0);
    }

    #[test]
    fn a_zero_price_is_capped_by_tokens_and_refused_without_a_token_cap() {
        let b = Budget::new(Caps::new(0.01, None).unwrap());
        let r = b.reserve(&FREE, &u(10, 10)).unwrap_err();
        assert_eq!(r.cap, CapKind::Unbounded);
        let b = Budget::new(Caps::new(0.0, Some(1000)).unwrap());
        b.reserve(&FREE, &u(400, 100))
            .unwrap()
            .book(&FREE, &u(300, 50));
        assert_eq!(b.spend().booked_tokens, 350);
        let r = b.reserve(&FREE, &u(500, 200)).unwrap_err();
        assert_eq!(r.cap, CapKind::Tokens);
        assert!(r.message.contains("--max-tokens 1000"), "{}", r.message);
        b.reserve(&FREE, &u(500, 100)).unwrap().release();
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_cap() {
        let b = Budget::new(Caps::new(0.5, Some(4_000_000)).unwrap());
        let peak = Arc::new(Mutex::new(0.0f64));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (b, peak) = (b.clone(), peak.clone());
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        let w = u(10_000 + (i * 37 + t * 11) % 30_000, 20_000);
                        match b.reserve(&P, &w) {
                            Ok(h) => {
                                let s = b.spend();
                                let now = s.booked_usd + s.held_usd;
                                let mut p = peak.lock().unwrap();
                                *p = p.max(now);
                                drop(p);
                                std::thread::yield_now();
                                match i % 3 {
                                    0 => h.release(),
                                    1 => {
                                        h.book(&P, &u(w.input_tokens / 2, 5_000));
                                    }
                                    _ => {
                                        h.book_worst();
                                    }
                                }
                            }
                            Err(_) => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = b.spend();
        assert!(s.booked_usd <= 0.5 + 1e-12, "{s:?}");
        assert!(s.booked_tokens <= 4_000_000);
        assert!(*peak.lock().unwrap() <= 0.5 + 1e-12);
        assert!(s.refused > 0, "the test should reach the cap: {s:?}");
        assert_eq!((s.held_usd, s.held_tokens), (0.0, 0));
    }
}
