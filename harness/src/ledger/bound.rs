//! The most one attempt of a model call can bill, computed from the request
//! alone, before it is sent. The ledger reserves exactly this (`worst_case_usd`),
//! so an endpoint whose usage is honest can never bill more than was reserved.
//!
//! Input tokens are bounded from above by bytes: a byte-level BPE token
//! (the tokenizers of the Claude, GPT and llama families) stands for at least
//! one byte of text, and every byte of text the model reads is in the wire
//! body (JSON escaping only adds bytes; serde_json writes UTF-8 unescaped).
//! What the endpoint adds that is NOT in the body (role markers per message,
//! the tool-use system prompt, its own rendering of tool definitions) is a
//! named allowance per protocol, below. The bound is priced at the highest
//! rate the protocol's usage can bill an input token (a cache write, where
//! the protocol reports cache writes), plus `max_tokens` at the output price.

use super::{Price, CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER};
use crate::model::types::{ModelRequest, Protocol};

/// Anthropic adds a system prompt of its own whenever `tools` is present.
/// Documented per model ("Tool use system prompt token count",
/// https://docs.anthropic.com/en/docs/tool-use-pricing-and-tokens): Claude 3
/// Opus 530 (tool_choice auto) / 281 (any, tool), Claude 3 Sonnet 159 / 235,
/// Claude 3 Haiku 264 / 340, the legacy tools-2024-04-04 beta 395; the
/// current page gives 346 (auto, none) / 313 (any, tool) for the Claude 4
/// family. The allowance is about twice the largest documented figure (530),
/// as headroom for a model whose figure is not published.
pub const ANTHROPIC_TOOL_USE_SYSTEM_PROMPT_TOKENS: u64 = 1_024;
/// Per message (system, each turn, the trailing notice). Not documented by
/// Anthropic; the Human/Assistant turn markers of its prompt format are a few
/// tokens each, and each message's JSON frame in the body (about 50 bytes)
/// is already counted as tokens, so this is headroom on top.
pub const ANTHROPIC_TOKENS_PER_MESSAGE: u64 = 8;
/// Per tool definition: the API renders each definition into its system
/// prompt with framing of its own around the name, description and schema
/// (whose text is already in the body).
pub const ANTHROPIC_TOKENS_PER_TOOL: u64 = 64;

/// OpenAI's chat format: "every message follows
/// <|start|>{role/name}\n{content}<|end|>\n", 3 tokens per message (4 for
/// gpt-3.5-turbo-0301), +1 for a `name`, and "every reply is primed with
/// <|start|>assistant<|message|>", 3 tokens per request (openai-cookbook,
/// examples/How_to_count_tokens_with_tiktoken.ipynb). Allowed: 8 per message.
pub const OPENAI_TOKENS_PER_MESSAGE: u64 = 8;
/// The reply priming (3 documented) and the request's own framing.
pub const OPENAI_TOKENS_PER_REQUEST: u64 = 16;
/// Tool definitions: the same notebook counts 7 tokens per function and 12
/// at the end of the list for gpt-4o; OpenAI-compatible servers (llama.cpp,
/// vLLM) render tools through the model's chat template, which may wrap them
/// in an instruction preamble of its own (Llama 3.1's JSON tool-calling
/// template writes about 100 tokens of instructions). Not documented per
/// server: a generous allowance for the preamble, and per tool.
pub const OPENAI_TOOL_PREAMBLE_TOKENS: u64 = 512;
pub const OPENAI_TOKENS_PER_TOOL: u64 = 32;

/// Relative headroom added to every worst case so float rounding can never
/// make an honest reply's cost (four products summed in another order)
/// exceed its reservation by an ulp. 1e-9 of a dollar figure is far below a
/// cent and far above f64's relative error (~1e-16 per operation).
pub const WORST_CASE_ROUNDING_SLACK: f64 = 1e-9;

/// What one attempt of a call can consume at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBound {
    /// Input tokens of every kind (plain, cache read, cache write) together.
    pub input_tokens_max: u64,
    /// The request's `max_tokens`.
    pub output_tokens_max: u64,
}

impl CallBound {
    /// The bound for `req` sent as a wire body of `wire_body_bytes` bytes.
    pub fn for_request(protocol: Protocol, wire_body_bytes: u64, req: &ModelRequest) -> CallBound {
        // system + every turn + the trailing notice, each possibly its own message
        let messages = req.turns.len() as u64 + 2;
        let tools = req.tools.len() as u64;
        let allowance = match protocol {
            Protocol::Anthropic => {
                let tool_prompt = if tools > 0 {
                    ANTHROPIC_TOOL_USE_SYSTEM_PROMPT_TOKENS
                } else {
                    0
                };
                tool_prompt
                    + messages.saturating_mul(ANTHROPIC_TOKENS_PER_MESSAGE)
                    + tools.saturating_mul(ANTHROPIC_TOKENS_PER_TOOL)
            }
            Protocol::Openai => {
                let preamble = if tools > 0 {
                    OPENAI_TOOL_PREAMBLE_TOKENS
                } else {
                    0
                };
                OPENAI_TOKENS_PER_REQUEST
                    + preamble
                    + messages.saturating_mul(OPENAI_TOKENS_PER_MESSAGE)
                    + tools.saturating_mul(OPENAI_TOKENS_PER_TOOL)
            }
        };
        CallBound {
            input_tokens_max: wire_body_bytes.saturating_add(allowance),
            output_tokens_max: req.max_tokens as u64,
        }
    }
}

/// The highest multiple of the input price one input token can bill under
/// `protocol`, as the ledger prices usage (`cost_usd`).
///
/// * Anthropic reports `cache_creation_input_tokens`, billed at 1.25x: any
///   input token may be a cache write. (Anthropic's 1-hour cache writes bill
///   2x, but only on request with `ttl: "1h"`, which the harness never sends:
///   it sets no `cache_control` at all.)
/// * OpenAI-compatible usage has no cache-write field (the parser books
///   `cache_creation_input_tokens = 0`); a token is plain input (1x) or a
///   cache read (0.1x): 1x.
pub fn input_rate_max(protocol: Protocol) -> f64 {
    match protocol {
        Protocol::Anthropic => CACHE_WRITE_MULTIPLIER.max(1.0).max(CACHE_READ_MULTIPLIER),
        Protocol::Openai => 1.0f64.max(CACHE_READ_MULTIPLIER),
    }
}

/// The highest input multiple of any protocol: what a ledger that does not
/// know its protocol must assume.
pub fn input_rate_max_any() -> f64 {
    input_rate_max(Protocol::Anthropic).max(input_rate_max(Protocol::Openai))
}

/// The worst case of one attempt: every input token at the highest rate,
/// every output token the request allows, plus the rounding slack.
pub fn worst_case_usd(price: &Price, bound: &CallBound, input_rate: f64) -> f64 {
    let exact = (bound.input_tokens_max as f64 * price.input_usd_per_mtok * input_rate
        + bound.output_tokens_max as f64 * price.output_usd_per_mtok)
        / 1e6;
    exact * (1.0 + WORST_CASE_ROUNDING_SLACK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::cost_usd;
    use crate::model::types::{CallRole, ToolDef, Turn, Usage};

    fn req(turns: usize, tools: usize, max_tokens: u32) -> ModelRequest {
        ModelRequest {
            role: CallRole::Execute,
            call_key: "execute/t1/a0/0".into(),
            model: "m".into(),
            system: "s".into(),
            turns: (0..turns)
                .map(|i| Turn::User {
                    text: format!("turn {i}"),
                })
                .collect(),
            tools: (0..tools)
                .map(|i| ToolDef {
                    name: format!("tool{i}"),
                    description: "d".into(),
                    input_schema: serde_json::json!({"type": "object"}),
                })
                .collect(),
            max_tokens,
            json_schema: None,
            trailing_notice: None,
        }
    }

    const P: Price = Price {
        input_usd_per_mtok: 5.0,
        output_usd_per_mtok: 25.0,
    };

    #[test]
    fn input_bound_is_body_bytes_plus_the_protocols_allowance() {
        let r = req(3, 2, 4096);
        let a = CallBound::for_request(Protocol::Anthropic, 10_000, &r);
        assert_eq!(
            a.input_tokens_max,
            10_000 + ANTHROPIC_TOOL_USE_SYSTEM_PROMPT_TOKENS + 5 * 8 + 2 * 64
        );
        assert_eq!(a.output_tokens_max, 4096);
        let o = CallBound::for_request(Protocol::Openai, 10_000, &r);
        assert_eq!(o.input_tokens_max, 10_000 + 16 + 512 + 5 * 8 + 2 * 32);
        // No tools: no tool prompt.
        let plain = CallBound::for_request(Protocol::Anthropic, 100, &req(1, 0, 10));
        assert_eq!(plain.input_tokens_max, 100 + 3 * 8);
    }

    #[test]
    fn anthropic_prices_every_input_token_as_a_cache_write_openai_as_plain_input() {
        assert_eq!(input_rate_max(Protocol::Anthropic), 1.25);
        assert_eq!(input_rate_max(Protocol::Openai), 1.0);
        assert_eq!(input_rate_max_any(), 1.25);
        let b = CallBound {
            input_tokens_max: 1_000_000,
            output_tokens_max: 40_000,
        };
        let w = worst_case_usd(&P, &b, 1.25);
        // 1M tokens written to cache at $6.25 + 40k out at $25/M = $7.25.
        assert!((w - 7.25).abs() < 1e-6, "{w}");
        assert!(w >= 7.25, "the slack only ever adds");
    }

    #[test]
    fn the_issue_cache_heavy_turn_exceeds_a_5_kb_bound() {
        // 160000 cache-write tokens cannot come from a 5 KB request: the
        // bound is what makes such a reply detectable as overbilled.
        let b = CallBound::for_request(Protocol::Anthropic, 5_000, &req(2, 4, 8192));
        let usage = Usage {
            input_tokens: 500,
            cache_creation_input_tokens: 160_000,
            ..Usage::default()
        };
        assert!(usage.input_total() > b.input_tokens_max);
        assert!(cost_usd(&P, &usage) > worst_case_usd(&P, &b, 1.25));
    }

    #[test]
    fn any_split_within_the_bound_costs_at_most_the_worst_case() {
        // The extreme splits, exactly at the bound: all plain, all cache
        // reads, all cache writes, and a three-way split, with full output.
        let b = CallBound {
            input_tokens_max: 123_457,
            output_tokens_max: 8_191,
        };
        let n = b.input_tokens_max;
        for (i, r, w) in [
            (n, 0, 0),
            (0, n, 0),
            (0, 0, n),
            (n / 3, n / 3, n - 2 * (n / 3)),
        ] {
            let u = Usage {
                input_tokens: i,
                cache_read_input_tokens: r,
                cache_creation_input_tokens: w,
                output_tokens: b.output_tokens_max,
            };
            assert!(
                cost_usd(&P, &u) <= worst_case_usd(&P, &b, input_rate_max(Protocol::Anthropic)),
                "{u:?}"
            );
        }
    }

    #[test]
    fn huge_bodies_saturate_instead_of_wrapping() {
        let b = CallBound::for_request(Protocol::Openai, u64::MAX, &req(1, 1, 1));
        assert_eq!(b.input_tokens_max, u64::MAX);
        assert!(worst_case_usd(&P, &b, 1.0).is_finite());
    }
}
