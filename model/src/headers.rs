//! The headers a model call carries besides the provider's own: what lets a
//! replay server or a recording proxy tell calls apart without parsing the
//! body, and what the replay server answers with. The one definition the
//! client (which sends and reads them) and the replay server (which reads and
//! sends them) share; they are part of the cassette wire contract
//! (recordings/README.md), so a value here never changes.

/// Request: the call's role (`plan`, `execute`, `judge`, `replan`, `compact`).
pub const HEADER_CALL_ROLE: &str = "x-harness-call-role";
/// Request: the call's key within the run (`execute/t3/a0/2`).
pub const HEADER_CALL_KEY: &str = "x-harness-call-key";
/// Request: the 0-based attempt of this call (a retry sends the same key).
pub const HEADER_ATTEMPT: &str = "x-harness-attempt";
/// Response: set (to "1") on every replay miss; the client ends the call
/// with `ModelError::RecordingMiss` and never retries it.
pub const HEADER_MISS: &str = "x-replay-miss";
/// Response: set on injected fault responses (the kind's name), for people
/// reading traces; the client must not special-case it.
pub const HEADER_FAULT: &str = "x-replay-fault";
/// Response: set when the call key has conditional replies
/// (`when_request_contains`), to the served interaction's place in the
/// cassette (`runs[0].interactions[3]`), for people reading traces; the
/// client must not special-case it.
pub const HEADER_ALTERNATIVE: &str = "x-replay-alternative";
