//! The `harness-cassette/2` format (recordings/README.md): the types a
//! cassette file deserialises into, its limits, and the constructors a
//! recording proxy or a generator builds one with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::alternatives::choose;
use super::canonical::{body_sha256, sorted_value};
use super::secrets::{redact_headers, redact_json};
use model::conditions::{ConditionField, Conditions, Difference};
use model::types::{CallRole, Protocol};

/// The value of the `format` field this code reads and writes.
pub const FORMAT: &str = "harness-cassette/2";
/// The format before recording conditions: refused with the way to migrate.
pub const FORMAT_WITHOUT_CONDITIONS: &str = "harness-cassette/1";
/// Largest cassette file accepted, so a stray multi-GB file in the tree
/// cannot take the bench down.
pub const MAX_CASSETTE_BYTES: u64 = 16 * 1024 * 1024;
/// Most interactions (over all runs) in one cassette.
pub const MAX_INTERACTIONS: usize = 20_000;
/// Most run variants in one cassette.
pub const MAX_RUNS: usize = 1_000;
/// Most scripted faults before one real response.
pub const MAX_FAULTS_BEFORE: usize = 16;
/// Longest recorded latency accepted (10 minutes): longer is a typo.
pub const MAX_LATENCY_MS: u64 = 600_000;
/// Most cassette files under one recordings tree.
pub const MAX_CASSETTE_FILES: usize = 10_000;
/// Longest case id; case ids end up in URLs and file names.
pub const MAX_CASE_ID_LEN: usize = 128;

/// The endpoint path a protocol's requests go to (after the base URL).
pub fn endpoint_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "/v1/messages",
        Protocol::Openai => "/v1/chat/completions",
    }
}

/// One cassette file: all recorded traffic of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    /// Always [`FORMAT`]; a future incompatible format gets a new value.
    pub format: String,
    /// The case id; also the `<case>` segment of the replay URL.
    pub case: String,
    pub protocol: Protocol,
    pub model: String,
    pub made: Made,
    /// The conditions each role's replies hold for (model::conditions): a
    /// request sent under other ones is refused, never answered. Required:
    /// every role an interaction has must be here.
    #[serde(default)]
    pub conditions: BTreeMap<CallRole, Conditions>,
    /// Fields the replies are declared not to depend on (a scripted
    /// loop-cap case answers any model alike). Empty = indifferent to
    /// nothing, the default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indifferent_to: Vec<ConditionField>,
    /// Run variants; `runs[i].run == i`. A request for run r is served from
    /// variant `r % runs.len()`.
    pub runs: Vec<RunRecording>,
}

/// Provenance: how, when and by whom the cassette was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Made {
    pub how: MadeHow,
    /// RFC 3339 timestamp or a plain `YYYY-MM-DD` date.
    pub when: String,
    /// Free text: the tool or person that made it.
    pub by: String,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub notes: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MadeHow {
    /// Written by hand or by a script; request bodies are usually null.
    Scripted,
    /// Captured from a live endpoint by a recording proxy.
    Recorded,
}

/// One run variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecording {
    pub run: u32,
    pub interactions: Vec<Interaction>,
    /// For a recorded variant: how the live run that produced it ended. A
    /// replay of the same traffic must end the same way (the live suite's
    /// `ending = "recorded"` gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
}

/// How a recorded live run ended, as its harness reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOutcome {
    /// One of the seven endings, e.g. `"NO_PROGRESS"`.
    pub ending: String,
    pub exit_code: i32,
    /// The report's `predicate_met` (the harness ran the predicate).
    pub predicate_met: bool,
    /// Model calls answered, and the tokens the ledger booked (all four fields summed).
    pub calls: u64,
    pub tokens: u64,
}

/// One model call and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    pub role: CallRole,
    /// Position within the run (`plan/0`, `execute/t3/a0/2`, ...): the match key.
    pub call_key: String,
    /// Serve this reply only to a request one of whose JSON string values
    /// contains this text (`alternatives`): several interactions may then
    /// share a call key, all but at most one with a condition. Omitted
    /// when absent, so cassettes without conditions are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_request_contains: Option<String>,
    pub request: RecordedRequest,
    pub response: RecordedResponse,
    /// Wall time the live endpoint took; replayed times the latency scale.
    #[serde(default)]
    pub latency_ms: u64,
    /// Responses served on HTTP attempts 0..k-1 before `response`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults_before: Vec<RecordedResponse>,
}

/// What was sent. Only `path` (and `method`) take part in default matching;
/// `body_sha256` is checked in strict mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    #[serde(default = "default_method")]
    pub method: String,
    pub path: String,
    /// Non-secret request headers, for people reading the cassette.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The request body (keys sorted), or null for hand-written cassettes.
    #[serde(default)]
    pub body: Option<Value>,
    /// SHA-256 hex of `canonical_json(body)`; null when unknown.
    #[serde(default)]
    pub body_sha256: Option<String>,
}

fn default_method() -> String {
    "POST".to_string()
}

/// A response to serve (the real one, or a scripted fault).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body, served as compact JSON. Null (with no body_raw) = empty body.
    #[serde(default)]
    pub body: Option<Value>,
    /// A non-JSON body, served byte for byte. Excludes `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_raw: Option<String>,
}

impl RecordedResponse {
    /// The bytes to put on the wire.
    pub fn body_bytes(&self) -> Vec<u8> {
        if let Some(raw) = &self.body_raw {
            return raw.as_bytes().to_vec();
        }
        match &self.body {
            // Serialising a Value cannot fail (all keys are strings).
            Some(v) => serde_json::to_vec(v).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

/// How a request of `role` with this body (in `protocol`) differs from
/// the recorded `conditions`, skipping the fields declared `indifferent`;
/// None when it does not, or when the role has none (a cassette's check
/// refuses that at load). The one comparison the server and the bench make.
pub fn condition_difference(
    protocol: Protocol,
    conditions: &BTreeMap<CallRole, Conditions>,
    indifferent: &[ConditionField],
    role: CallRole,
    body: &[u8],
) -> Option<Difference> {
    let recorded = conditions.get(&role)?;
    recorded.first_difference(&Conditions::of_bytes(protocol, body), indifferent)
}

impl RunRecording {
    /// The interaction this variant serves for `call_key` to a request with
    /// `request_body`, chosen among the key's alternatives the way the
    /// replay server chooses (`alternatives::choose`); None is a miss. A
    /// linear scan, for readers of one cassette (the bench's miss report);
    /// the server uses its index.
    pub fn answer(&self, call_key: &str, request_body: &[u8]) -> Option<&Interaction> {
        let alts: Vec<&Interaction> = self
            .interactions
            .iter()
            .filter(|i| i.call_key == call_key)
            .collect();
        choose(&alts, |i| i.when_request_contains.as_deref(), request_body).copied()
    }
}

impl Cassette {
    /// An empty cassette to fill with [`Cassette::push`] (for a recording
    /// proxy or a generator).
    pub fn new(
        case: impl Into<String>,
        protocol: Protocol,
        model: impl Into<String>,
        made: Made,
    ) -> Cassette {
        Cassette {
            format: FORMAT.to_string(),
            case: case.into(),
            protocol,
            model: model.into(),
            made,
            conditions: BTreeMap::new(),
            indifferent_to: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// The first way a request of `role` with this body was sent under
    /// other conditions than the recording's (None: the same, or a role the
    /// cassette has no conditions for, which `check` refuses at load).
    pub fn condition_difference(&self, role: CallRole, body: &[u8]) -> Option<Difference> {
        condition_difference(
            self.protocol,
            &self.conditions,
            &self.indifferent_to,
            role,
            body,
        )
    }

    /// Fill `conditions` from the recorded request bodies (a live
    /// recording: what was really sent). Every body of a role must agree on
    /// every field the cassette is not declared indifferent to;
    /// a role whose interactions have no body gets none (and `check`
    /// refuses the cassette until it is stated another way).
    pub fn conditions_from_bodies(&mut self) -> Result<(), String> {
        let mut found: BTreeMap<CallRole, (Conditions, String)> = BTreeMap::new();
        for (ri, run) in self.runs.iter().enumerate() {
            for (ii, it) in run.interactions.iter().enumerate() {
                let Some(body) = &it.request.body else {
                    continue;
                };
                let c = Conditions::of_body(self.protocol, body);
                let at = format!("runs[{ri}].interactions[{ii}]");
                match found.get(&it.role) {
                    None => {
                        found.insert(it.role, (c, at));
                    }
                    Some((first, first_at)) => {
                        if let Some(d) = first.first_difference(&c, &self.indifferent_to) {
                            return Err(format!(
                                "{at}: a {} request was sent under other conditions than {first_at}'s ({d}); one cassette holds one set of conditions per role",
                                it.role.as_str()
                            ));
                        }
                    }
                }
            }
        }
        self.conditions = found.into_iter().map(|(r, (c, _))| (r, c)).collect();
        Ok(())
    }

    /// Append an interaction to run `run`, creating run variants up to it.
    pub fn push(&mut self, run: u32, interaction: Interaction) {
        while self.runs.len() <= run as usize {
            let n = self.runs.len() as u32;
            self.runs.push(RunRecording {
                run: n,
                interactions: Vec::new(),
                outcome: None,
            });
        }
        self.runs[run as usize].interactions.push(interaction);
    }
}

impl Interaction {
    /// Build an interaction from one observed exchange, the way a recording
    /// proxy should: request body key-sorted and hashed, secrets removed
    /// from headers and bodies, a non-JSON response body kept as `body_raw`.
    #[allow(clippy::too_many_arguments)]
    pub fn from_exchange<K, V, I>(
        role: CallRole,
        call_key: impl Into<String>,
        protocol: Protocol,
        request_body: &Value,
        status: u16,
        response_headers: I,
        response_body: &[u8],
        latency_ms: u64,
    ) -> Interaction
    where
        K: AsRef<str>,
        V: AsRef<str>,
        I: IntoIterator<Item = (K, V)>,
    {
        let mut req = sorted_value(request_body);
        redact_json(&mut req);
        let (body, body_raw) = match serde_json::from_slice::<Value>(response_body) {
            Ok(mut v) => {
                redact_json(&mut v);
                (Some(sorted_value(&v)), None)
            }
            Err(_) => (
                None,
                Some(String::from_utf8_lossy(response_body).into_owned()),
            ),
        };
        Interaction {
            role,
            call_key: call_key.into(),
            when_request_contains: None,
            request: RecordedRequest {
                method: default_method(),
                path: endpoint_path(protocol).to_string(),
                headers: BTreeMap::new(),
                body_sha256: Some(body_sha256(&req)),
                body: Some(req),
            },
            response: RecordedResponse {
                status,
                headers: redact_headers(response_headers),
                body,
                body_raw,
            },
            latency_ms,
            faults_before: Vec::new(),
        }
    }
}
