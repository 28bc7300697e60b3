//! The non-idempotent side effect: a stand-in for "post the summary to #eng".
//! Each post appends one JSON line to a file that lives outside the workspace
//! (so the model cannot edit or delete what it already posted).
//!
//! The outbox deliberately does NOT dedupe by idempotency key: a second post
//! with the same key appends a second line, exactly like a chat API would
//! post twice. That is what makes re-executing an IN_PROGRESS task on resume
//! dangerous, and it is what the chaos bench counts. Safety has to come from
//! the harness verifying instead of re-executing, not from this file.

use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Largest outbox the harness will read back. A run posts a handful of
/// messages; anything near this is a bug, and reading it must not exhaust memory.
pub const OUTBOX_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Longest single line `post` will append (channel + text + key, as JSON).
pub const OUTBOX_MAX_LINE_BYTES: usize = 64 * 1024;

/// One posted message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub key: String,
    pub channel: String,
    pub text: String,
}

/// Everything read back from the outbox, including what had to be skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutboxContents {
    pub entries: Vec<OutboxEntry>,
    /// Bytes of a final line with no trailing newline: a post torn by a crash
    /// mid-write. It never completed (its fsync never returned), so it does
    /// not count as posted.
    pub torn_tail_bytes: Option<usize>,
    /// 1-based numbers of complete lines that are not a valid entry (e.g. an
    /// earlier torn tail that a later post terminated with a newline).
    pub bad_lines: Vec<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("cannot read outbox {path:?}: {detail}")]
    Io { path: PathBuf, detail: String },
    #[error("outbox {path:?} is {size} bytes, over the {OUTBOX_MAX_FILE_BYTES}-byte limit")]
    TooLarge { path: PathBuf, size: u64 },
}

#[derive(Debug, Clone)]
pub struct Outbox {
    path: PathBuf,
}

impl Outbox {
    pub fn new(path: impl Into<PathBuf>) -> Outbox {
        Outbox { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one entry and fsync it. The line goes out in a single
    /// `write_all` on an O_APPEND descriptor so a concurrent reader sees whole
    /// lines; `sync_data` makes the post durable before we return, so "post()
    /// returned" really means "posted".
    pub fn post(&self, channel: &str, text: &str, idempotency_key: &str) -> io::Result<()> {
        // The one redaction filter: a post is text the harness writes.
        let entry = OutboxEntry {
            key: crate::redact::text(idempotency_key).into_owned(),
            channel: crate::redact::text(channel).into_owned(),
            text: crate::redact::text(text).into_owned(),
        };
        let mut line = serde_json::to_vec(&entry)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        line.push(b'\n');
        if line.len() > OUTBOX_MAX_LINE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "outbox entry is {} bytes, over the {OUTBOX_MAX_LINE_BYTES}-byte limit",
                    line.len()
                ),
            ));
        }
        crate::durable::append_line(&self.path, line)
    }

    /// All complete, valid entries. A missing file is an empty outbox.
    pub fn entries(&self) -> Result<Vec<OutboxEntry>, OutboxError> {
        self.read_all().map(|c| c.entries)
    }

    /// All entries plus what was skipped (torn tail, bad lines).
    pub fn read_all(&self) -> Result<OutboxContents, OutboxError> {
        let io_err = |e: io::Error| OutboxError::Io {
            path: self.path.clone(),
            detail: e.to_string(),
        };
        // O_NONBLOCK and a check on the descriptor: a FIFO where the outbox
        // belongs is an error, never a read that blocks the run.
        use std::os::unix::fs::OpenOptionsExt;
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OutboxContents::default()),
            Err(e) => return Err(io_err(e)),
        };
        let meta = f.metadata().map_err(io_err)?;
        if !meta.is_file() {
            return Err(io_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        let size = meta.len();
        if size > OUTBOX_MAX_FILE_BYTES {
            return Err(OutboxError::TooLarge {
                path: self.path.clone(),
                size,
            });
        }
        let mut buf = Vec::new();
        // take(): the file may grow between metadata() and the read.
        f.take(OUTBOX_MAX_FILE_BYTES)
            .read_to_end(&mut buf)
            .map_err(io_err)?;
        Ok(parse_contents(&buf))
    }

    /// How many times `key` was posted. An unreadable outbox counts as 0;
    /// callers that must tell "unreadable" from "absent" use [`Outbox::read_all`].
    pub fn count_key(&self, key: &str) -> usize {
        self.entries()
            .map(|es| es.iter().filter(|e| e.key == key).count())
            .unwrap_or(0)
    }

    pub fn has_key(&self, key: &str) -> bool {
        self.count_key(key) > 0
    }
}

fn parse_contents(buf: &[u8]) -> OutboxContents {
    let mut out = OutboxContents::default();
    let mut rest = buf;
    let mut line_no = 0usize;
    while !rest.is_empty() {
        line_no += 1;
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            out.torn_tail_bytes = Some(rest.len());
            break;
        };
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match serde_json::from_slice::<OutboxEntry>(line) {
            Ok(e) => out.entries.push(e),
            Err(_) => out.bad_lines.push(line_no),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    #[test]
    fn missing_file_is_empty() {
        let d = tempfile::tempdir().unwrap();
        let o = Outbox::new(d.path().join("outbox.jsonl"));
        assert_eq!(o.entries().unwrap(), vec![]);
        assert_eq!(o.count_key("k"), 0);
        assert!(!o.has_key("k"));
    }

    #[test]
    fn posts_append_and_do_not_dedupe() {
        let d = tempfile::tempdir().unwrap();
        let o = Outbox::new(d.path().join("outbox.jsonl"));
        o.post("#eng", "hello \"world\"\nline2", "k1").unwrap();
        o.post("#eng", "again", "k1").unwrap();
        o.post("#ops", "x", "k2").unwrap();
        let es = o.entries().unwrap();
        assert_eq!(es.len(), 3);
        assert_eq!(
            es[0],
            OutboxEntry {
                key: "k1".into(),
                channel: "#eng".into(),
                text: "hello \"world\"\nline2".into()
            }
        );
        assert_eq!(
            o.count_key("k1"),
            2,
            "a second post with the same key appends again"
        );
        assert!(o.has_key("k2"));
        let raw = std::fs::read_to_string(o.path()).unwrap();
        assert_eq!(raw.lines().count(), 3);
        assert!(raw.ends_with('\n'));
    }

    #[test]
    fn torn_tail_is_skipped_and_reported() {
        let d = tempfile::tempdir().unwrap();
        let o = Outbox::new(d.path().join("outbox.jsonl"));
        o.post("#eng", "ok", "k1").unwrap();
        let mut f = OpenOptions::new().append(true).open(o.path()).unwrap();
        f.write_all(br#"{"key":"k2","chan"#).unwrap();
        drop(f);
        let c = o.read_all().unwrap();
        assert_eq!(c.entries.len(), 1);
        assert_eq!(c.torn_tail_bytes, Some(17));
        assert!(!o.has_key("k2"), "a torn post did not happen");

        // The next post must not be glued onto the torn fragment.
        o.post("#eng", "next", "k3").unwrap();
        let c = o.read_all().unwrap();
        assert_eq!(
            c.entries.iter().map(|e| e.key.as_str()).collect::<Vec<_>>(),
            vec!["k1", "k3"]
        );
        assert_eq!(c.torn_tail_bytes, None);
        assert_eq!(c.bad_lines, vec![2]);
    }

    #[test]
    fn garbage_never_panics() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("outbox.jsonl");
        std::fs::write(
            &p,
            b"\xff\xfe\n{}\n[1,2]\n\n{\"key\":\"a\",\"channel\":\"c\",\"text\":\"t\"}\n\xff",
        )
        .unwrap();
        let o = Outbox::new(&p);
        let c = o.read_all().unwrap();
        assert_eq!(c.entries.len(), 1);
        assert_eq!(c.bad_lines, vec![1, 2, 3]);
        assert_eq!(c.torn_tail_bytes, Some(1));
    }

    #[test]
    fn oversized_line_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let o = Outbox::new(d.path().join("outbox.jsonl"));
        let big = "x".repeat(OUTBOX_MAX_LINE_BYTES);
        assert!(o.post("#eng", &big, "k").is_err());
        assert_eq!(o.entries().unwrap(), vec![]);
    }

    #[test]
    fn unreadable_is_an_error_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        // A directory where the file should be.
        let o = Outbox::new(d.path());
        assert!(o.read_all().is_err());
        assert_eq!(o.count_key("k"), 0);
        assert!(o.post("#eng", "x", "k").is_err());
    }
}
