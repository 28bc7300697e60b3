//! Checkpoints: written before (task IN_PROGRESS) and after every task through
//! [`crate::durable::atomic_write`]. The payload is framed with the SHA-256 of
//! its body and carries a schema version and the goal hash. Every refusal on
//! load (unreadable, unparseable, checksum mismatch, schema mismatch, goal hash
//! mismatch, a body that breaks the state's invariants) is a value the loop
//! turns into UNRECOVERABLE_ERROR with the refusal named in the report: a torn
//! checkpoint that still parses is worse than none, so nothing is guessed.
//!
//! The atomic rename is what defeats a torn file; the checksum covers what the
//! rename cannot (bit rot, a frame corrupted after commit). Neither catches a
//! body that was already wrong when serialized, which is why the state's
//! invariants are asserted right before writing and again right after reading.

use crate::ending::ErrorKind;
use crate::state::RunState;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

// A fresh state carries the version, so the state defines it.
pub use crate::state::SCHEMA_VERSION;
pub const FRAME_FORMAT: &str = "harness-checkpoint";
pub const FILE_NAME: &str = "checkpoint.json";
/// A checkpoint stores paths and a compacted summary, never raw transcripts,
/// so it stays a few kilobytes; anything near this is a bug, not a big run.
pub const MAX_CHECKPOINT_BYTES: u64 = 16 * 1024 * 1024;

/// The frame is one header line and the body, byte for byte:
///
/// ```text
/// harness-checkpoint schema=1 len=<body bytes> sha256=<hex of body>\n<body JSON>
/// ```
///
/// A header line (not JSON-in-JSON) keeps the body readable with `tail -n +2`
/// and avoids escaping the whole body on every save; `len` makes a torn
/// file fail before any hashing, `sha256` covers everything the rename cannot.
fn header(len: usize, sha: &str) -> String {
    format!("{FRAME_FORMAT} schema={SCHEMA_VERSION} len={len} sha256={sha}\n")
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("checkpoint unreadable: {0}")]
    Unreadable(String),
    #[error("checkpoint unparseable (torn or not a checkpoint frame): {0}")]
    Unparseable(String),
    #[error("checkpoint checksum mismatch: frame says {expected}, body hashes to {found}")]
    ChecksumMismatch { expected: String, found: String },
    #[error("checkpoint schema mismatch: found version {found}, this harness reads {expected}")]
    SchemaMismatch { found: u32, expected: u32 },
    #[error("checkpoint goal hash mismatch: checkpoint was written for goal {found}, the spec's goal hashes to {expected}")]
    GoalMismatch { expected: String, found: String },
    #[error("checkpoint body invalid: {0}")]
    BodyInvalid(String),
}

crate::wire::wire_names! {
    /// A refusal's machine name: what the chaos bench and the report's
    /// `error_kind` (`checkpoint_<name>`) say.
    pub enum RefusalKind {
        Unreadable = "unreadable",
        Unparseable = "unparseable",
        ChecksumMismatch = "checksum_mismatch",
        SchemaMismatch = "schema_mismatch",
        GoalMismatch = "goal_mismatch",
        BodyInvalid = "body_invalid",
    }
}

impl RefusalKind {
    /// The report's `error_kind` for a run refused with this.
    pub fn error_kind(self) -> ErrorKind {
        match self {
            RefusalKind::Unreadable => ErrorKind::CheckpointUnreadable,
            RefusalKind::Unparseable => ErrorKind::CheckpointUnparseable,
            RefusalKind::ChecksumMismatch => ErrorKind::CheckpointChecksumMismatch,
            RefusalKind::SchemaMismatch => ErrorKind::CheckpointSchemaMismatch,
            RefusalKind::GoalMismatch => ErrorKind::CheckpointGoalMismatch,
            RefusalKind::BodyInvalid => ErrorKind::CheckpointBodyInvalid,
        }
    }
}

impl Refusal {
    pub fn refusal_kind(&self) -> RefusalKind {
        match self {
            Refusal::Unreadable(_) => RefusalKind::Unreadable,
            Refusal::Unparseable(_) => RefusalKind::Unparseable,
            Refusal::ChecksumMismatch { .. } => RefusalKind::ChecksumMismatch,
            Refusal::SchemaMismatch { .. } => RefusalKind::SchemaMismatch,
            Refusal::GoalMismatch { .. } => RefusalKind::GoalMismatch,
            Refusal::BodyInvalid(_) => RefusalKind::BodyInvalid,
        }
    }

    /// Short machine name for reports and the chaos bench.
    pub fn kind(&self) -> &'static str {
        self.refusal_kind().as_str()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("refusing to write a checkpoint that breaks an invariant: {0}")]
    Invariant(String),
    #[error("checkpoint write failed: {0}")]
    Io(#[from] std::io::Error),
}

pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE_NAME)
}

/// Serialize and frame a state. Exposed so the benchmark can write the same
/// bytes through the bare sequence.
pub fn encode(state: &RunState) -> Result<Vec<u8>, SaveError> {
    state.check_invariants().map_err(SaveError::Invariant)?;
    // Through the one redaction filter: a model claim or a parked reason
    // that carried a key value is stored with the value replaced.
    let body = crate::redact::to_json_vec(state, false)
        .map_err(|e| SaveError::Invariant(format!("serialize: {e}")))?;
    let sha = hex::encode(Sha256::digest(&body));
    let mut out = header(body.len(), &sha).into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

pub fn save(state_dir: &Path, state: &RunState) -> Result<(), SaveError> {
    let bytes = encode(state)?;
    #[cfg(feature = "chaos-broken")]
    if crate::simfs::broken() == Some(crate::simfs::Broken::InPlaceCheckpoint) {
        crate::durable::write_in_place(&path_in(state_dir), &bytes)?;
        return Ok(());
    }
    crate::durable::atomic_write(&path_in(state_dir), &bytes)?;
    Ok(())
}

/// Decode a frame. `expected_goal_sha` is the hash of the goal in the spec the
/// run was started with now; None skips that check (for `harness status`).
pub fn decode(bytes: &[u8], expected_goal_sha: Option<&str>) -> Result<RunState, Refusal> {
    // A torn frame dies here, before any checksum: no header line, or fewer
    // body bytes than the header promises.
    let nl = bytes
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| Refusal::Unparseable("no header line".into()))?;
    let head = std::str::from_utf8(&bytes[..nl])
        .map_err(|_| Refusal::Unparseable("header is not UTF-8".into()))?;
    let body = &bytes[nl + 1..];
    let mut parts = head.split(' ');
    if parts.next() != Some(FRAME_FORMAT) {
        return Err(Refusal::Unparseable(format!(
            "header does not start with {FRAME_FORMAT:?}"
        )));
    }
    let mut field = |name: &str| -> Result<&str, Refusal> {
        parts
            .next()
            .and_then(|p| p.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
            .ok_or_else(|| {
                Refusal::Unparseable(format!("header field {name:?} missing or out of order"))
            })
    };
    let schema: u32 = field("schema")?
        .parse()
        .map_err(|_| Refusal::Unparseable("schema is not a number".into()))?;
    let len: usize = field("len")?
        .parse()
        .map_err(|_| Refusal::Unparseable("len is not a number".into()))?;
    let expected_sha = field("sha256")?.to_string();
    if parts.next().is_some() {
        return Err(Refusal::Unparseable("extra header fields".into()));
    }
    if body.len() != len {
        return Err(Refusal::Unparseable(format!(
            "torn: header promises {len} body bytes, found {}",
            body.len()
        )));
    }
    let found = hex::encode(Sha256::digest(body));
    // (The chaos self-test's skip-checksum variant skips this comparison;
    // `broken()` is always None without the chaos-broken feature.)
    if found != expected_sha && crate::simfs::broken() != Some(crate::simfs::Broken::SkipChecksum) {
        return Err(Refusal::ChecksumMismatch {
            expected: expected_sha,
            found,
        });
    }
    if schema != SCHEMA_VERSION {
        return Err(Refusal::SchemaMismatch {
            found: schema,
            expected: SCHEMA_VERSION,
        });
    }
    let state: RunState =
        serde_json::from_slice(body).map_err(|e| Refusal::BodyInvalid(e.to_string()))?;
    if state.schema_version != SCHEMA_VERSION {
        return Err(Refusal::SchemaMismatch {
            found: state.schema_version,
            expected: SCHEMA_VERSION,
        });
    }
    let goal_checked = !crate::mutants::active(crate::mutants::Mutant::GoalMismatchAccepted);
    if let Some(expected) = expected_goal_sha.filter(|_| goal_checked) {
        if state.goal_sha256 != expected {
            return Err(Refusal::GoalMismatch {
                expected: expected.into(),
                found: state.goal_sha256,
            });
        }
    }
    state.check_invariants().map_err(Refusal::BodyInvalid)?;
    Ok(state)
}

/// Load the checkpoint in `state_dir`: Ok(None) when there is none (a fresh
/// run), Ok(Some) for a whole, valid frame, Err for every refusal. Only the
/// real name is ever read; temp files are never considered.
pub fn load(
    state_dir: &Path,
    expected_goal_sha: Option<&str>,
) -> Result<Option<RunState>, Refusal> {
    let p = path_in(state_dir);
    let meta = match std::fs::metadata(&p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Refusal::Unreadable(format!("{}: {e}", p.display()))),
    };
    if meta.len() > MAX_CHECKPOINT_BYTES {
        return Err(Refusal::Unreadable(format!(
            "{} is {} bytes, over the {MAX_CHECKPOINT_BYTES} limit",
            p.display(),
            meta.len()
        )));
    }
    let bytes =
        std::fs::read(&p).map_err(|e| Refusal::Unreadable(format!("{}: {e}", p.display())))?;
    decode(&bytes, expected_goal_sha).map(Some)
}
