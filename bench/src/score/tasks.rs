//! Where the report says each task ended up: verified, parked (and why),
//! pruned, or left in the queue.

use super::check::{check, Check};
use crate::suite::Expect;
use harness::report::Report;
use std::collections::BTreeSet;

fn ids<'a>(it: impl Iterator<Item = &'a String>) -> BTreeSet<String> {
    it.cloned().collect()
}

fn set_check(name: &str, want: &[String], got: BTreeSet<String>) -> Check {
    let want: BTreeSet<String> = want.iter().cloned().collect();
    check(
        name.into(),
        want == got,
        format!("expected {want:?}, got {got:?}"),
    )
}

pub(super) fn checks(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    if let Some(w) = &e.verified {
        out.push(set_check(
            "verified",
            w,
            ids(r.verified.iter().map(|t| &t.id)),
        ));
    }
    if let Some(w) = e.verified_count {
        let n = r.verified.len();
        out.push(check(
            "verified_count".into(),
            n == w,
            format!("expected {w}, got {n}"),
        ));
    }
    if let Some(w) = &e.parked {
        out.push(set_check("parked", w, ids(r.parked.iter().map(|t| &t.id))));
    }
    if let Some(m) = &e.parked_reason_contains {
        for (id, needle) in m {
            let reason = r
                .parked
                .iter()
                .find(|p| p.id == *id)
                .map_or("", |p| p.reason.as_str());
            out.push(check(
                format!("parked_reason_contains.{id}"),
                reason.contains(needle.as_str()),
                format!("reason {reason:?} should contain {needle:?}"),
            ));
        }
    }
    if let Some(w) = &e.pruned {
        out.push(set_check("pruned", w, ids(r.pruned.iter().map(|t| &t.id))));
    }
    if let Some(w) = &e.queue_left {
        out.push(set_check("queue_left", w, ids(r.queue_left.iter())));
    }
}
