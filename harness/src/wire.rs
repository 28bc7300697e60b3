//! Closed vocabularies that cross a process boundary (report.json,
//! events.jsonl, checkpoints) as plain strings, each declared once with
//! `wire_names!`: see `strict::wire_names!` for what it derives and why. The
//! macro lives in the strict crate so the bench declares its own (the audit
//! gates) with the same one; this module keeps the harness's path to it.

pub(crate) use strict::wire_names;
