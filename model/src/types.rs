//! Protocol-neutral model traffic types. The harness builds a [`ModelRequest`],
//! a protocol adapter (Anthropic Messages or OpenAI chat completions) turns it
//! into a wire body, and the reply comes back as a [`ModelReply`]. Nothing in
//! here knows about dollars: the ledger prices [`Usage`] on the harness side.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which of the harness's five kinds of model call this is. Sent to the
/// endpoint as the `x-harness-call-role` header so a replay server can match
/// recordings by role and position instead of by exact prompt wording.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CallRole {
    Plan,
    Execute,
    Judge,
    Replan,
    /// The history summarized down (`compact/<n>`), when the spec's
    /// `[memory]` bound is passed.
    Compact,
    /// One lesson asked after a failed attempt (`lesson/<task>/a<n>`), when
    /// the spec's `[memory] lessons` is on.
    Lesson,
}

impl CallRole {
    /// Every role.
    pub const ALL: [CallRole; 6] = [
        CallRole::Plan,
        CallRole::Execute,
        CallRole::Judge,
        CallRole::Replan,
        CallRole::Compact,
        CallRole::Lesson,
    ];

    /// The role a call key's first segment names (`execute/t1/a0/2` is an
    /// execute call), or None for a key of no role.
    pub fn of_call_key(key: &str) -> Option<CallRole> {
        let head = key.split('/').next().unwrap_or("");
        CallRole::ALL.into_iter().find(|r| r.as_str() == head)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallRole::Plan => "plan",
            CallRole::Execute => "execute",
            CallRole::Judge => "judge",
            CallRole::Replan => "replan",
            CallRole::Compact => "compact",
            CallRole::Lesson => "lesson",
        }
    }
}

/// The wire protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Anthropic,
    Openai,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Anthropic => "anthropic",
            Protocol::Openai => "openai",
        }
    }
}

/// A tool the model may call. Only tools on the spec's allowlist are ever
/// turned into a `ToolDef`: a tool that is not sent does not exist for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: Value,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The protocol's id for the call (tool_use id / tool_call id).
    pub id: String,
    pub name: String,
    /// The arguments. When the model sent arguments that are not a JSON
    /// object (OpenAI sends them as a string), this holds
    /// `{"__unparsed": "<raw>"}` and the tool layer answers with an error
    /// observation instead of running anything.
    pub input: Value,
}

/// One entry of the conversation, protocol-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Turn {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
}

/// Everything needed to make one model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub role: CallRole,
    /// Position of this call within the run, stable across resumes, e.g.
    /// `plan/0`, `execute/t3/a0/2` (task t3, attempt 0, turn 2), `judge/5`,
    /// `replan/1`. Sent as the `x-harness-call-key` header.
    pub call_key: String,
    pub model: String,
    pub system: String,
    pub turns: Vec<Turn>,
    pub tools: Vec<ToolDef>,
    pub max_tokens: u32,
    /// When set, ask the endpoint for output constrained to this JSON Schema
    /// (OpenAI `response_format: json_schema`; for Anthropic the schema is
    /// stated in the system prompt and the reply parsed as JSON).
    pub json_schema: Option<Value>,
    /// A volatile notice (the 70% budget notice) that must sit at the END of
    /// the message list, never in the system prompt, so the cached prefix
    /// survives and recall is best.
    pub trailing_notice: Option<String>,
}

/// Token usage, all four fields. Cache reads bill at 0.1x input and cache
/// writes at 1.25x input: a ledger that counts only input_tokens is wrong.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// Saturating: an endpoint that reports absurd counts (`u64::MAX` output
    /// tokens, eight times over) pins the total at `u64::MAX` instead of
    /// wrapping to a small, believable number.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
    }
    /// All four fields, saturating like `add`.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }
    /// Input tokens of every kind (plain, cache read, cache write).
    pub fn input_total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    /// The model declined (Anthropic `stop_reason: "refusal"`, OpenAI
    /// `finish_reason: "content_filter"` or a `refusal` field).
    Refusal,
    Other(String),
}

/// A parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// The model name the endpoint reported.
    pub model: String,
    /// Wall time of the successful attempt.
    pub latency_ms: u64,
    /// HTTP attempts made, including the successful one.
    pub attempts: u32,
    /// Attempts before the successful one that may have been billed for an
    /// unknown amount: HTTP 200 with a body that could not be parsed or read
    /// to the end, or a transport failure after the request may have reached
    /// the server. The harness books each at its worst case (see
    /// [`super::gate::Billing`]).
    pub billed_unknown_attempts: u32,
}

/// Why a model call failed after the client's own retries. The harness
/// classifies these; none of them is a panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The replay server had no recording for this request. Not an agent
    /// failure: the report says it was a recording miss and names the nearest.
    #[error("recording miss: {detail}")]
    RecordingMiss { detail: String },
    /// 400, 401, 403, 404, ...: never retried.
    #[error("HTTP {status} (not retried): {body}")]
    Rejected { status: u16, body: String },
    /// 429 / 5xx / timeouts / unparseable bodies that outlived the retries.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        attempts: u32,
        last: String,
        /// Of those attempts, how many may have been billed for an unknown
        /// amount (as in `ModelReply::billed_unknown_attempts`).
        billed_unknown_attempts: u32,
    },
    /// The run's wall clock ran out before the call could finish: the
    /// attempt in flight was cut, or no time was left for the next one.
    #[error("the run's wall clock ran out during the call after {attempts} attempt(s){}", if last.is_empty() { String::new() } else { format!(": {last}") })]
    Deadline { attempts: u32, last: String },
    /// The endpoint URL or the request could not be built.
    #[error("bad endpoint configuration: {0}")]
    Config(String),
}
