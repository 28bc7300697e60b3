//! The response headers no recording keeps and no replay sends. Redaction
//! (`secrets`) drops them and the server skips them; they live apart from
//! `format`, whose recording constructors call `secrets`, so that the two
//! do not name each other.

/// Response headers the replay server never replays: they describe the
/// original connection/encoding, and the server sets its own.
pub const HOP_BY_HOP_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "content-encoding",
    "upgrade",
];
