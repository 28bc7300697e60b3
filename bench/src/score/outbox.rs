//! What was posted to the outbox: how many, under which keys, saying what.

use super::check::{check, Check};
use crate::suite::Expect;
use harness::outbox::OutboxEntry;

pub(super) fn checks(e: &Expect, outbox: &[OutboxEntry], out: &mut Vec<Check>) {
    if let Some(w) = e.outbox_total {
        out.push(check(
            "outbox_total".into(),
            outbox.len() == w,
            format!("expected {w} posts, got {}", outbox.len()),
        ));
    }
    if let Some(m) = &e.outbox_key_count {
        for (k, w) in m {
            let n = outbox.iter().filter(|x| x.key == *k).count();
            out.push(check(
                format!("outbox_key_count.{k}"),
                n == *w,
                format!("expected {w} posts with key {k:?}, got {n}"),
            ));
        }
    }
    if let Some(v) = &e.outbox_contains {
        for s in v {
            let hit = outbox.iter().any(|x| x.text.contains(s.as_str()));
            out.push(check(
                format!("outbox_contains.{s}"),
                hit,
                format!("some post should contain {s:?}"),
            ));
        }
    }
}
