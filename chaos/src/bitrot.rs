//! Bit rot after commit: flip bytes inside a committed checkpoint's body,
//! keeping its length. A power cut tears or drops writes, and a torn frame
//! dies on its length check; only rot that keeps the length reaches the
//! checksum, which is the one thing that can catch it. The nastiest rot keeps
//! the body well-formed JSON that still decodes as a valid run state (a digit
//! changed in a number, a letter in a task id): a harness that skipped the
//! checksum would resume from it as if nothing happened.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RotKind {
    /// One digit of a JSON number replaced by another (no leading zero).
    Digit,
    /// One ASCII letter inside a JSON string replaced by another of the same case.
    Letter,
    /// One to three bytes XORed with random non-zero masks, anywhere in the body.
    Bytes,
}

impl RotKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RotKind::Digit => "digit",
            RotKind::Letter => "letter",
            RotKind::Bytes => "bytes",
        }
    }
}

/// What one rot did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rot {
    pub kind: RotKind,
    /// Offsets into the whole frame (header included) of the changed bytes.
    pub offsets: Vec<usize>,
    /// The rotted body still parses as JSON.
    pub well_formed: bool,
    /// Framed with its own (new) checksum, the rotted body decodes as a valid
    /// run state that differs from the committed one: only the checksum
    /// tells them apart.
    pub valid_without_checksum: bool,
}

impl Rot {
    /// A label for the report: `digit (well-formed, valid without the checksum)`.
    pub fn label(&self) -> String {
        let how = match (self.well_formed, self.valid_without_checksum) {
            (_, true) => "well-formed, valid without the checksum",
            (true, false) => "well-formed",
            (false, false) => "malformed",
        };
        format!("{} ({how})", self.kind.as_str())
    }
}

/// Where a frame's body starts (after the header line), if it has one.
fn body_start(frame: &[u8]) -> Option<usize> {
    frame.iter().position(|b| *b == b'\n').map(|i| i + 1)
}

/// The frame the harness would write for this body: used to ask "would a
/// harness without the checksum accept this rot?".
fn reframe(frame: &[u8], start: usize, body: &[u8]) -> Vec<u8> {
    let head = String::from_utf8_lossy(&frame[..start.saturating_sub(1)]).into_owned();
    let sha = hex::encode(Sha256::digest(body));
    let head = match head.rfind("sha256=") {
        Some(i) => format!("{}sha256={sha}", &head[..i]),
        None => head,
    };
    let mut out = head.into_bytes();
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// Where a byte of a JSON text sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Outside any string (numbers, literals, punctuation).
    Outside,
    /// Inside a string, an ordinary character.
    InString,
    /// Inside a string: a quote, a backslash or part of an escape sequence.
    /// A letter of `\n` or a digit of `\u00e9` is never rotted into another:
    /// that would be a different kind of damage (often not JSON).
    Escape,
}

fn lex(body: &[u8]) -> Vec<Class> {
    let mut out = Vec::with_capacity(body.len());
    let (mut in_str, mut after_backslash, mut hex_left) = (false, false, 0usize);
    for &b in body {
        let class = if !in_str {
            in_str = b == b'"';
            if in_str {
                Class::Escape
            } else {
                Class::Outside
            }
        } else if after_backslash {
            after_backslash = false;
            if b == b'u' {
                hex_left = 4;
            }
            Class::Escape
        } else if hex_left > 0 {
            hex_left -= 1;
            Class::Escape
        } else {
            match b {
                b'\\' => {
                    after_backslash = true;
                    Class::Escape
                }
                b'"' => {
                    in_str = false;
                    Class::Escape
                }
                _ => Class::InString,
            }
        };
        out.push(class);
    }
    out
}

/// Candidate (offset in body, replacement byte) pairs for a well-formed rot.
fn candidates(body: &[u8], kind: RotKind, rng: &mut ChaCha8Rng) -> Vec<(usize, u8)> {
    let mut c = vec![];
    for (i, class) in lex(body).into_iter().enumerate() {
        let b = body[i];
        match kind {
            RotKind::Digit if class == Class::Outside && b.is_ascii_digit() => {
                let prev = i.checked_sub(1).map(|j| body[j]);
                let next = body.get(i + 1).copied();
                // The first digit of a multi-digit integer part must not become 0.
                let leading = !matches!(prev, Some(p) if p.is_ascii_digit() || p == b'.')
                    && matches!(next, Some(n) if n.is_ascii_digit());
                let lo = if leading { b'1' } else { b'0' };
                let choices: Vec<u8> = (lo..=b'9').filter(|d| *d != b).collect();
                if let Some(d) = choices.choose(rng) {
                    c.push((i, *d));
                }
            }
            RotKind::Letter if class == Class::InString && b.is_ascii_alphabetic() => {
                let base = if b.is_ascii_lowercase() { b'a' } else { b'A' };
                let choices: Vec<u8> = (base..base + 26).filter(|l| *l != b).collect();
                if let Some(l) = choices.choose(rng) {
                    c.push((i, *l));
                }
            }
            _ => {}
        }
    }
    c.shuffle(rng);
    c
}

/// Rot `frame` (a whole checkpoint frame) in place of its body, same length.
/// `kind` picks the flavour; a well-formed kind tries its candidates in a
/// seeded order and takes the first whose rotted body a harness without the
/// checksum would accept (`valid_without_checksum`), else the first that at
/// least parses, else falls back to `Bytes`. None when the frame has no body.
pub fn rot(
    frame: &[u8],
    kind: RotKind,
    goal_sha: &str,
    rng: &mut ChaCha8Rng,
) -> Option<(Vec<u8>, Rot)> {
    let start = body_start(frame)?;
    if start >= frame.len() {
        return None;
    }
    let body = &frame[start..];
    let committed = harness::checkpoint::decode(frame, Some(goal_sha)).ok();
    // A harness without the checksum would resume from it, and it says
    // something other than what was committed (a letter in a field name the
    // state ignores changes nothing a resume reads).
    let accepted = |b: &[u8]| {
        harness::checkpoint::decode(&reframe(frame, start, b), Some(goal_sha))
            .is_ok_and(|s| Some(&s) != committed.as_ref())
    };
    let parses = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).is_ok();
    if kind != RotKind::Bytes {
        let mut first_parsing = None;
        for (i, to) in candidates(body, kind, rng) {
            let mut b = body.to_vec();
            b[i] = to;
            if accepted(&b) {
                return Some(finish(frame, start, b, kind, vec![i], true, true));
            }
            if first_parsing.is_none() && parses(&b) {
                first_parsing = Some((b, i));
            }
        }
        if let Some((b, i)) = first_parsing {
            return Some(finish(frame, start, b, kind, vec![i], true, false));
        }
    }
    let mut b = body.to_vec();
    let n = rng.gen_range(1..=3usize.min(b.len()));
    let mut offs: Vec<usize> = (0..b.len()).collect();
    offs.shuffle(rng);
    offs.truncate(n);
    offs.sort_unstable();
    for &i in &offs {
        b[i] ^= rng.gen_range(1..=255u8);
    }
    let (wf, ok) = (parses(&b), accepted(&b));
    Some(finish(frame, start, b, RotKind::Bytes, offs, wf, ok))
}

fn finish(
    frame: &[u8],
    start: usize,
    body: Vec<u8>,
    kind: RotKind,
    body_offsets: Vec<usize>,
    well_formed: bool,
    valid_without_checksum: bool,
) -> (Vec<u8>, Rot) {
    let mut out = frame[..start].to_vec();
    out.extend_from_slice(&body);
    (
        out,
        Rot {
            kind,
            offsets: body_offsets.into_iter().map(|i| i + start).collect(),
            well_formed,
            valid_without_checksum,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn frame() -> (Vec<u8>, String) {
        let goal = harness::goal::sha256_hex("a goal");
        let mut s = harness::state::RunState::new("run-1".into(), goal.clone(), 1_700_000_000_000);
        s.planned = true;
        s.step = 12;
        s.queue.push(harness::task::Task {
            id: "t7".into(),
            description: "Bump \"VERSION\" to 2.4.0\n".into(),
            verify: serde_json::from_value(
                serde_json::json!({"kind": "file_exists", "path": "VERSION"}),
            )
            .unwrap(),
            origin: "plan".into(),
            attempts: 1,
        });
        (harness::checkpoint::encode(&s).unwrap(), goal)
    }

    #[test]
    fn every_rot_keeps_the_length_and_the_header_and_is_a_checksum_refusal() {
        let (f, goal) = frame();
        let start = body_start(&f).unwrap();
        for kind in [RotKind::Digit, RotKind::Letter, RotKind::Bytes] {
            for seed in 0..40 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let (r, rot) = rot(&f, kind, &goal, &mut rng).unwrap();
                assert_eq!(r.len(), f.len());
                assert_eq!(&r[..start], &f[..start], "the header is never touched");
                assert_ne!(r, f);
                assert!(rot.offsets.iter().all(|o| *o >= start && r[*o] != f[*o]));
                let diff = (0..f.len()).filter(|i| r[*i] != f[*i]).count();
                assert_eq!(diff, rot.offsets.len());
                assert!(
                    matches!(
                        harness::checkpoint::decode(&r, Some(&goal)),
                        Err(harness::checkpoint::Refusal::ChecksumMismatch { .. })
                    ),
                    "{kind:?} seed {seed}"
                );
            }
        }
    }

    #[test]
    fn digit_and_letter_rot_is_what_only_the_checksum_catches() {
        let (f, goal) = frame();
        for kind in [RotKind::Digit, RotKind::Letter] {
            for seed in 0..40 {
                let (r, rot) = rot(&f, kind, &goal, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
                assert_eq!(rot.kind, kind);
                assert!(rot.well_formed && rot.valid_without_checksum, "{rot:?}");
                let start = body_start(&r).unwrap();
                // Re-framed, the rotted body is a run state the harness would resume from.
                let s = harness::checkpoint::decode(&reframe(&r, start, &r[start..]), Some(&goal))
                    .unwrap();
                let orig = harness::checkpoint::decode(&f, Some(&goal)).unwrap();
                assert_ne!(s, orig, "the rot changed what the state says");
            }
        }
    }

    #[test]
    fn escapes_are_never_candidates() {
        let body = br#"{"a":"x\"y\n\u00e9z","n":10}"#;
        let l = lex(body);
        let in_str: Vec<u8> = (0..body.len())
            .filter(|i| l[*i] == Class::InString)
            .map(|i| body[i])
            .collect();
        assert_eq!(in_str, b"axyzn", "{:?}", String::from_utf8_lossy(&in_str));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let digits = candidates(body, RotKind::Digit, &mut rng);
        let mut at: Vec<usize> = digits.iter().map(|(i, _)| *i).collect();
        at.sort();
        assert_eq!(at.len(), 2, "only the digits of 10: {digits:?}");
        let lead = digits.iter().find(|(i, _)| body[*i] == b'1').unwrap();
        assert_ne!(lead.1, b'0', "10 never becomes 00");
    }
}
