//! Cassettes and the replay server: deterministic, offline model traffic for
//! evals.
//!
//! - [`cassette`]: the `harness-cassette/1` format (recordings/README.md),
//!   strict loading with errors that name file and field, refusal of
//!   anything secret-bearing, canonical JSON hashing, and the O(1) index
//!   [`Recordings`].
//! - [`server`]: [`ReplayServer`], a wiremock server with one catch-all mock
//!   that answers `/replay/<case>/<run>/<endpoint>` from the index, with
//!   scaled latency, scripted `faults_before`, and a 404 `x-replay-miss`
//!   naming the nearest recording on any miss (never anything live).
//! - [`faults`]: [`FaultPlan`], seeded fault injection whose decisions are a
//!   pure function of (seed, case, run, call_key, attempt).
//! - `drip`: the streaming relay a server whose plan can drip puts in front
//!   of wiremock, which sends a marked response's body a few bytes at a time.

pub mod cassette;
mod drip;
pub mod embed; // `harness run --replay`: the embedded server for one run (embed.rs is maintained elsewhere)
pub mod faults;
pub mod scenario; // hand-written scripted scenarios compiled to cassettes
pub mod server;

pub use cassette::{
    body_sha256, canonical_json, redact_headers, redact_json, CaseRecording, Cassette,
    CassetteError, CassetteErrorKind, Interaction, Made, MadeHow, RecordedRequest,
    RecordedResponse, Recordings, RecordingsError, RunOutcome, RunRecording, FORMAT,
    FORMAT_WITHOUT_CONDITIONS,
};
pub use embed::start_for_run;
pub use faults::{FaultKind, FaultPlan, FaultSpecError, FAULT_ATTEMPT_CAP};
pub use server::{Captured, ReplayCounters, ReplayError, ReplayOptions, ReplayServer};
