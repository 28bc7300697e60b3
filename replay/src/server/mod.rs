//! The replay server: a wiremock `MockServer` with ONE catch-all mock whose
//! `Respond` impl answers every request from the cassette index.
//!
//! Why one mock and not one per interaction: wiremock tries mocks in order,
//! so thousands of mocks would make each request a linear scan. With one
//! mock the lookup is a couple of hash probes, and the server is stateless:
//! everything needed to answer (case, run, call_key, role, attempt) is in the
//! request itself, so one server can serve many cases and runs concurrently,
//! and answers do not depend on arrival order.
//!
//! URL layout: `<uri>/replay/<case>/<run>/<endpoint path>`, e.g.
//! `/replay/latency-p95/2/v1/messages`. Anything that does not match a
//! recording gets a 404 with `x-replay-miss: 1`: there is no fall-through to
//! anything live.
//!
//! One concept a file, in the order a request meets them:
//!
//! - `lifecycle`: [`ReplayServer`], starting, listening (with the drip
//!   front when the fault plan can drip), resetting and stopping;
//! - `options`: [`ReplayOptions`] and why a server refuses to start;
//! - `cases`: the cassette index converted, once, into what answering reads;
//! - `state`: what outlives one request (counters, miss log, captured
//!   bodies) and the wiremock `Respond` glue that updates it;
//! - `incoming`: what a request claims to be, from its URL and headers;
//! - `matching`: finding its recording, or the miss message that says why not;
//! - `body_diff`: strict mode's body-hash check and its first-difference diff;
//! - `response`: recorded responses ready for the wire, and scaled latency;
//! - `inject`: a seeded fault's response in the protocol's own shape.
//! - `model_time`: how long answers were held back on purpose, per run (the
//!   model time the bench judges latency on).

mod body_diff;
mod cases;
mod incoming;
mod inject;
mod lifecycle;
mod matching;
mod model_time;
mod options;
mod response;
mod state;
#[cfg(test)]
mod test_support;

pub use body_diff::first_difference;
pub use lifecycle::ReplayServer;
pub use options::{ReplayError, ReplayOptions};
pub use state::{Captured, ReplayCounters, CAPTURE_MAX_PER_RUN};

/// The wire headers are the model crate's (the client sends what this server
/// reads); re-exported here where a server's reader looks for them.
pub use model::headers::{
    HEADER_ALTERNATIVE, HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE, HEADER_FAULT,
    HEADER_MISS,
};
