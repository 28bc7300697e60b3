//! What every request shares: the cases and options it reads, and the
//! little it writes (counters, the recent misses, captured bodies when
//! asked). Answers depend only on the read half (the mod docs' stateless
//! answers); the written half is for reports, so it is relaxed atomics and
//! bounded logs, and [`Responder`], wiremock's entry point, is the one
//! place a request updates it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use wiremock::{Request, Respond, ResponseTemplate};

use super::cases::ServeCase;
use super::incoming::parse_incoming;
use super::incoming::Incoming;
use super::model_time::Held;
use super::options::ReplayOptions;
use super::response::MAX_DELAY;
use super::HEADER_MISS;

/// How many recent miss messages are kept for reports.
pub(super) const MISS_LOG_LEN: usize = 64;

/// A snapshot of the server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReplayCounters {
    /// Requests answered from a recording (real responses, scripted
    /// `faults_before` and injected faults all count).
    pub served: u64,
    /// Requests answered with a 404 recording miss.
    pub misses: u64,
    /// Of `served`: faults injected by the FaultPlan.
    pub faults_injected: u64,
    /// Of `served`: scripted `faults_before` responses.
    pub scripted_faults: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) served: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) faults_injected: AtomicU64,
    pub(super) scripted_faults: AtomicU64,
}

pub(super) struct Shared {
    /// Shared with every [`ReplayServer::fresh`] started from this one.
    pub(super) cases: std::sync::Arc<HashMap<String, ServeCase>>,
    pub(super) opts: ReplayOptions,
    pub(super) counters: Counters,
    pub(super) miss_log: Mutex<VecDeque<String>>,
    /// Request bodies by "<case>/<run>", kept only when `opts.capture` is on,
    /// so the bench can check what the harness sent (e.g. where the budget
    /// notice sat). Drained by `take_captured`.
    pub(super) captured: Mutex<HashMap<String, Vec<Captured>>>,
    /// Each answer's deliberate hold by "<case>/<run>" (the model time the
    /// run was served), kept only when `opts.capture` is on, at most
    /// `CAPTURE_MAX_PER_RUN` per run. Drained by `take_model_time`.
    pub(super) held: Mutex<HashMap<String, Vec<Held>>>,
}

/// One request the harness sent, as the bench inspects it.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    pub call_key: String,
    pub attempt: u32,
    pub body: String,
}

/// Bodies kept per (case, run) at most, so a runaway harness cannot grow the
/// capture without bound.
pub const CAPTURE_MAX_PER_RUN: usize = 2000;

pub(super) struct Responder {
    pub(super) shared: Arc<Shared>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let shared = &self.shared;
        if shared.opts.capture {
            if let Ok(inc) = parse_incoming(request) {
                let mut m = shared.captured.lock().unwrap_or_else(|p| p.into_inner());
                let v = m.entry(format!("{}/{}", inc.case, inc.run)).or_default();
                if v.len() < CAPTURE_MAX_PER_RUN {
                    v.push(Captured {
                        call_key: inc.call_key.to_string(),
                        attempt: inc.attempt,
                        body: String::from_utf8_lossy(&request.body).into_owned(),
                    });
                }
            }
        }
        match shared.answer(request) {
            Ok(t) => {
                shared.counters.served.fetch_add(1, Ordering::Relaxed);
                t
            }
            Err(message) => shared.miss(message),
        }
    }
}

impl Shared {
    pub(super) fn miss(&self, message: String) -> ResponseTemplate {
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        {
            let mut log = self.miss_log.lock().unwrap_or_else(|p| p.into_inner());
            if log.len() == MISS_LOG_LEN {
                log.pop_front();
            }
            log.push_back(message.clone());
        }
        let body =
            json!({"type": "error", "error": {"type": "recording_miss", "message": message}});
        ResponseTemplate::new(404)
            .insert_header(HEADER_MISS, "1")
            .set_body_raw(
                serde_json::to_vec(&body).unwrap_or_default(),
                "application/json",
            )
    }

    /// Note that the answer to `inc` is held back `took` on purpose (its
    /// model time), when the server keeps what runs did.
    pub(super) fn note_held(&self, inc: &Incoming<'_>, took: Duration) {
        if !self.opts.capture || took.is_zero() {
            return;
        }
        let at = std::time::Instant::now();
        let mut m = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let v = m.entry(format!("{}/{}", inc.case, inc.run)).or_default();
        if v.len() < CAPTURE_MAX_PER_RUN {
            v.push(Held { at, took });
        }
    }

    /// A recorded latency as served: scaled by `latency_scale`, at most
    /// [`MAX_DELAY`].
    pub(super) fn scaled(&self, ms: u64) -> Duration {
        let secs = ms as f64 / 1000.0 * self.opts.latency_scale;
        Duration::try_from_secs_f64(secs)
            .unwrap_or(MAX_DELAY)
            .min(MAX_DELAY)
    }
}
