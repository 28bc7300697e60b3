//! Cassettes: recorded (or hand-scripted) model traffic for one eval case,
//! the `harness-cassette/2` JSON format documented in recordings/README.md.
//!
//! Loading is strict because a cassette is test input that people edit by
//! hand: every error names the file, the JSON field path and what was
//! expected, and a cassette carrying anything that looks like a credential is
//! refused outright (recordings get committed; keys must never be).
//!
//! - `format`: the types, the limits, the recording constructors;
//! - `canonical`: canonical JSON and the request-body hash;
//! - `headers`: the hop-by-hop headers a replay never sends;
//! - `secrets`: what counts as a credential, and redaction for recorders;
//! - `error`: [`CassetteError`] / [`RecordingsError`];
//! - `json_path`: field paths for errors, and strict's errors as ours;
//! - `check`: [`Cassette::check`], every refusal before a cassette is used;
//! - `file`: [`Cassette::load`] / [`Cassette::save`];
//! - `alternatives`: conditional replies (`when_request_contains`): which
//!   one a request gets, and the rules a call key's set must follow;
//! - `index`: [`Recordings`], the O(1) index the server looks requests up in;
//! - `nearest`: the closest recorded key, for miss messages.

mod alternatives;
mod canonical;
mod check;
mod error;
mod file;
mod format;
mod headers;
mod index;
mod json_path;
mod nearest;
mod secrets;

pub use alternatives::{
    choose, AltRefusal, AlternativesCheck, RequestText, CONDITION_FIELD, MAX_ALTERNATIVES_PER_KEY,
    MAX_CONDITION_BYTES,
};
pub use canonical::{body_sha256, canonical_json, sorted_value};
pub use error::{CassetteError, CassetteErrorKind, RecordingsError};
pub use format::{
    condition_difference, endpoint_path, Cassette, Interaction, Made, MadeHow, RecordedRequest,
    RecordedResponse, RunOutcome, RunRecording, FORMAT, FORMAT_WITHOUT_CONDITIONS, MAX_CASE_ID_LEN,
    MAX_CASSETTE_BYTES, MAX_CASSETTE_FILES, MAX_FAULTS_BEFORE, MAX_INTERACTIONS, MAX_LATENCY_MS,
    MAX_RUNS,
};
pub use headers::HOP_BY_HOP_HEADERS;
pub use index::{CaseRecording, Recordings};
pub use nearest::{edit_distance, nearest};
pub use secrets::{is_secret_name, looks_like_secret, redact_headers, redact_json, SECRET_NAMES};

#[cfg(test)]
mod tests;
