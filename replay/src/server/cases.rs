//! The cassette index as the server holds it: converted once at start
//! (headers parsed, bodies serialised, hashes filled in) so that answering
//! a request is hash lookups and clones, never parsing, and never a failure.

use std::collections::HashMap;
use std::path::PathBuf;

use std::collections::BTreeMap;

use model::conditions::{ConditionField, Conditions, Difference};
use serde_json::Value;

use super::response::Prepared;
use crate::cassette::{body_sha256, Recordings};
use model::types::{CallRole, Protocol};

pub(super) struct ServeInteraction {
    /// Its place in the cassette (`runs[0].interactions[3]`): what the
    /// alternative header says was served.
    pub(super) at: String,
    /// Serve only to a request containing this (`when_request_contains`).
    pub(super) when: Option<String>,
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
    /// What each role's replies hold for (cassette `conditions`).
    pub(super) conditions: BTreeMap<CallRole, Conditions>,
    pub(super) indifferent_to: Vec<ConditionField>,
    /// Per variant: call key -> its replies in file order (one, or the
    /// key's conditional alternatives, `cassette::choose` picks).
    pub(super) variants: Vec<HashMap<String, Vec<ServeInteraction>>>,
}

pub(super) fn prepare(recordings: Recordings) -> HashMap<String, ServeCase> {
    let mut cases = HashMap::new();
    for rec in recordings.into_cases() {
        let protocol = rec.cassette.protocol;
        let conditions = rec.cassette.conditions;
        let indifferent_to = rec.cassette.indifferent_to;
        let variants = rec
            .cassette
            .runs
            .into_iter()
            .map(|run| {
                let ri = run.run;
                let mut keys: HashMap<String, Vec<ServeInteraction>> = HashMap::new();
                for (ii, it) in run.interactions.into_iter().enumerate() {
                    let si = ServeInteraction {
                        at: format!("runs[{ri}].interactions[{ii}]"),
                        when: it.when_request_contains,
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
                    keys.entry(it.call_key).or_default().push(si);
                }
                keys
            })
            .collect();
        cases.insert(
            rec.cassette.case,
            ServeCase {
                source: rec.source,
                protocol,
                conditions,
                indifferent_to,
                variants,
            },
        );
    }
    cases
}

impl ServeCase {
    /// How a request of `role` with this body differs from the conditions
    /// the replies were recorded under, if it does. A role without
    /// conditions cannot reach here: the cassette check refuses it at load.
    pub(super) fn condition_difference(&self, role: CallRole, body: &[u8]) -> Option<Difference> {
        crate::cassette::condition_difference(
            self.protocol,
            &self.conditions,
            &self.indifferent_to,
            role,
            body,
        )
    }
}
