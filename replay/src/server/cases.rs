//! The cassette index as the server holds it: converted once at start
//! (headers parsed, bodies serialised, hashes filled in) so that answering
//! a request is hash lookups and clones, never parsing, and never a failure.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use super::response::Prepared;
use crate::cassette::{body_sha256, Recordings};
use model::types::{CallRole, Protocol};

pub(super) struct ServeInteraction {
    pub(super) role: CallRole,
    pub(super) method: String,
    pub(super) body: Option<Value>,
    pub(super) body_sha256: Option<String>,
    pub(super) latency_ms: u64,
    pub(super) response: Prepared,
    pub(super) faults_before: Vec<Prepared>,
}

pub(super) struct ServeCase {
    pub(super) source: PathBuf,
    pub(super) protocol: Protocol,
    pub(super) variants: Vec<HashMap<String, ServeInteraction>>,
}

pub(super) fn prepare(recordings: Recordings) -> HashMap<String, ServeCase> {
    let mut cases = HashMap::new();
    for rec in recordings.into_cases() {
        let protocol = rec.cassette.protocol;
        let variants = rec
            .cassette
            .runs
            .into_iter()
            .map(|run| {
                run.interactions
                    .into_iter()
                    .map(|it| {
                        let si = ServeInteraction {
                            role: it.role,
                            method: it.request.method,
                            body_sha256: it
                                .request
                                .body_sha256
                                .or_else(|| it.request.body.as_ref().map(body_sha256)),
                            body: it.request.body,
                            latency_ms: it.latency_ms,
                            response: Prepared::from_recorded(&it.response),
                            faults_before: it
                                .faults_before
                                .iter()
                                .map(Prepared::from_recorded)
                                .collect(),
                        };
                        (it.call_key, si)
                    })
                    .collect()
            })
            .collect();
        cases.insert(
            rec.cassette.case,
            ServeCase {
                source: rec.source,
                protocol,
                variants,
            },
        );
    }
    cases
}
