//! The hard cap is hard: spend never passes it, whatever requests the run
//! sends, whatever honest usage comes back and however many attempts come
//! back garbled.
//!
//! Random request bodies (token-dense text: random bytes, every UTF-8 width,
//! control characters JSON must escape, long tool outputs), random usage
//! within what each request could bill (any split of at most the input bound
//! across plain input, cache reads and cache writes; output at most
//! max_tokens; no cache writes on the OpenAI protocol, whose usage cannot
//! report them), random sequences of attempts (garbled 200s, 503s, a reply)
//! and random prices and caps, driven exactly as `Runner::call_model` drives
//! them: the same `CallBound` from the client's wire body, the real
//! `Ledger`, the real `AttemptReserve` gate, and the real client seam
//! (`ModelClient::call_gated`) against a local server that answers with the
//! scripted attempts. After every booking, spend <= cap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use harness::ledger::{AttemptReserve, CallBound, Ledger, Price, ReserveError};
use harness::model::gate::CallError;
use harness::model::types::{CallRole, ModelRequest, Protocol, StopReason, ToolDef, Turn, Usage};
use harness::model::{render_response, EndpointConfig, ModelClient, RetryPolicy, ScriptedReply};
use proptest::prelude::*;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Cases the property runs (stated in the report).
const CASES: u32 = 256;

#[derive(Debug, Clone)]
enum Outcome {
    /// HTTP 200 with half a body: may have been billed, unknown amount.
    Garbled,
    /// HTTP 503: billed nothing.
    Unavailable,
    /// A reply whose usage is these fractions of the bound.
    Reply {
        input: f64,
        cache_read: f64,
        cache_write: f64,
        output: f64,
    },
}

#[derive(Debug, Clone)]
struct Call {
    turns: Vec<String>,
    tools: usize,
    attempts: Vec<Outcome>,
}

/// Answers each request with the next scripted response (503 when none).
#[derive(Clone, Default)]
struct Script(Arc<Mutex<VecDeque<ResponseTemplate>>>);

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.0
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| ResponseTemplate::new(503))
    }
}

struct Env {
    rt: tokio::runtime::Runtime,
    server: MockServer,
    script: Script,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let script = Script::default();
        let server = rt.block_on(async {
            let s = MockServer::start().await;
            Mock::given(wiremock::matchers::any())
                .respond_with(script.clone())
                .mount(&s)
                .await;
            s
        });
        Env { rt, server, script }
    })
}

/// Text as a tokenizer meets it at its densest: random bytes (lossy), every
/// UTF-8 width, control characters, and long tool outputs.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        any::<String>(),
        "[\\x00-\\x1f\"\\\\]{0,300}",
        "[a-z€😀ß中]{0,300}",
        // A long tool output (up to ~80 KB).
        ("[ -~]{1,40}", 1usize..2000).prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        2 => Just(Outcome::Garbled),
        1 => Just(Outcome::Unavailable),
        3 => (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(a, b, c, o)| {
            // Any split of at most the bound across the three input kinds.
            let sum = (a + b + c).max(1.0);
            Outcome::Reply { input: a / sum, cache_read: b / sum, cache_write: c / sum, output: o }
        }),
        // The corners: every input token of one kind, full output.
        1 => prop_oneof![
            Just(Outcome::Reply { input: 1.0, cache_read: 0.0, cache_write: 0.0, output: 1.0 }),
            Just(Outcome::Reply { input: 0.0, cache_read: 1.0, cache_write: 0.0, output: 1.0 }),
            Just(Outcome::Reply { input: 0.0, cache_read: 0.0, cache_write: 1.0, output: 1.0 }),
        ],
    ]
}

fn call() -> impl Strategy<Value = Call> {
    (
        proptest::collection::vec(text(), 1..5),
        0usize..4,
        proptest::collection::vec(outcome(), 1..6),
    )
        .prop_map(|(turns, tools, attempts)| Call {
            turns,
            tools,
            attempts,
        })
}

fn request(i: usize, c: &Call, max_tokens: u32) -> ModelRequest {
    ModelRequest {
        role: CallRole::Execute,
        call_key: format!("execute/t1/a0/{i}"),
        model: "m".into(),
        system: "You are careful.".into(),
        turns: c
            .turns
            .iter()
            .enumerate()
            .map(|(k, t)| {
                if k % 2 == 0 {
                    Turn::User { text: t.clone() }
                } else {
                    Turn::ToolResult {
                        call_id: format!("c{k}"),
                        content: t.clone(),
                        is_error: false,
                    }
                }
            })
            .collect(),
        tools: (0..c.tools)
            .map(|k| ToolDef {
                name: format!("tool_{k}"),
                description: "a tool".into(),
                input_schema: serde_json::json!({"type": "object"}),
            })
            .collect(),
        max_tokens,
        json_schema: None,
        trailing_notice: None,
    }
}

fn reply_template(protocol: Protocol, usage: Usage) -> ResponseTemplate {
    let body = render_response(
        protocol,
        &ScriptedReply {
            text: "ok".into(),
            tool_calls: vec![],
            stop_reason: StopReason::EndTurn,
            usage,
            model: "m".into(),
        },
    );
    ResponseTemplate::new(200).set_body_json(body)
}

fn garbled_template(protocol: Protocol) -> ResponseTemplate {
    let whole = serde_json::to_vec(&render_response(
        protocol,
        &ScriptedReply {
            text: "ok".into(),
            tool_calls: vec![],
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model: "m".into(),
        },
    ))
    .unwrap();
    ResponseTemplate::new(200).set_body_bytes(whole[..whole.len() / 2].to_vec())
}

/// One run of calls; returns what it exercised.
fn run(
    protocol: Protocol,
    cap: f64,
    price: Price,
    max_tokens: u32,
    max_attempts: u32,
    calls: &[Call],
) -> Result<Seen, TestCaseError> {
    // One scripted server for all tests: one run at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = env();
    let base_url = match protocol {
        Protocol::Anthropic => e.server.uri(),
        Protocol::Openai => format!("{}/v1", e.server.uri()),
    };
    let client = ModelClient::new(EndpointConfig {
        base_url,
        protocol,
        api_key_env: None,
        request_timeout_ms: 10_000,
        retry: RetryPolicy {
            max_attempts,
            base_delay_ms: 0,
            max_delay_ms: 0,
            retry_after_cap_ms: 0,
            jitter_seed: 1,
        },
    })
    .unwrap();
    let mut ledger = Ledger::new(cap, [("m".to_string(), price)].into()).for_protocol(protocol);
    let mut seen = Seen::default();
    for (i, c) in calls.iter().enumerate() {
        let req = request(i, c, max_tokens);
        // Exactly as Runner::call_model bounds it.
        let body_len = client.wire_body(&req).to_string().len() as u64;
        let bound = CallBound::for_request(protocol, body_len, &req);
        // What the server will answer, attempt by attempt.
        {
            let mut q = e.script.0.lock().unwrap();
            q.clear();
            for o in &c.attempts {
                q.push_back(match o {
                    Outcome::Garbled => garbled_template(protocol),
                    Outcome::Unavailable => ResponseTemplate::new(503),
                    Outcome::Reply {
                        input,
                        cache_read,
                        cache_write,
                        output,
                    } => {
                        // The physical fact, not the harness's bound: a
                        // byte-level BPE token is at least one byte, so the
                        // request's tokens are at most its bytes (plus what
                        // the endpoint adds, which the bound allows for).
                        let n = body_len as f64;
                        let (r, mut w) = ((n * cache_read) as u64, (n * cache_write) as u64);
                        if protocol == Protocol::Openai {
                            w = 0; // its usage has no cache-write field
                        }
                        let usage = Usage {
                            input_tokens: ((n * input) as u64).min(body_len - r.min(body_len)),
                            cache_read_input_tokens: r,
                            cache_creation_input_tokens: w,
                            output_tokens: (bound.output_tokens_max as f64 * output) as u64,
                        };
                        prop_assert!(usage.input_total() <= body_len + 2);
                        reply_template(protocol, usage)
                    }
                });
            }
        }
        let res = match ledger.reserve(
            CallRole::Execute,
            &req.call_key,
            "m",
            bound.input_tokens_max,
            bound.output_tokens_max,
        ) {
            Ok(r) => r,
            Err(ReserveError::Budget(_)) => {
                seen.refused_first += 1;
                ledger.set_blocked(false);
                continue;
            }
            Err(other) => return Err(TestCaseError::fail(other.to_string())),
        };
        let result = e.rt.block_on(async {
            let mut gate = AttemptReserve::new(&mut ledger, CallRole::Execute, res, bound, None);
            let r = client.call_gated(&req, &mut gate).await;
            (r, gate.into_open())
        });
        match result {
            (Ok(reply), Some(open)) => {
                seen.replies += 1;
                let booked = ledger.record(open, reply.usage).unwrap();
                prop_assert!(!booked.overbilled(), "an honest reply billed {booked:?}");
            }
            (Ok(_), None) => return Err(TestCaseError::fail("a reply with no reservation open")),
            (Err(CallError::Model(_)), open) => {
                if let Some(o) = open {
                    ledger.release(o).unwrap();
                }
            }
            (Err(CallError::Stopped(ReserveError::Budget(_))), open) => {
                prop_assert!(open.is_none());
                seen.refused_rereserve += 1;
                ledger.set_blocked(false);
            }
            (Err(CallError::Stopped(other)), _) => {
                return Err(TestCaseError::fail(other.to_string()))
            }
        }
        // After every booking, not only at the end.
        for p in &ledger.snapshot().spend_curve {
            prop_assert!(
                p.spent_usd <= cap,
                "{} of {cap} after {}",
                p.spent_usd,
                p.call_key
            );
        }
    }
    prop_assert!(ledger.spent_usd() <= cap);
    seen.worst_case_bookings = ledger
        .snapshot()
        .spend_curve
        .iter()
        .filter(|p| p.basis == "worst_case")
        .count() as u64;
    Ok(seen)
}

/// What the cases exercised, so a property that stopped reaching its
/// interesting corners (every case refused at once, no garbled attempt ever
/// booked) fails instead of passing vacuously.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    replies: u64,
    worst_case_bookings: u64,
    refused_rereserve: u64,
    refused_first: u64,
}

#[test]
fn spend_never_passes_the_cap() {
    let strategy = (
        any::<bool>(),
        0.001..5.0f64,
        0.05..40.0f64,
        0.1..150.0f64,
        1u32..40_000,
        1u32..=10,
        proptest::collection::vec(call(), 1..6),
    );
    let seen = Mutex::new(Seen::default());
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(CASES));
    runner
        .run(
            &strategy,
            |(
                anthropic,
                cap,
                input_usd_per_mtok,
                output_usd_per_mtok,
                max_tokens,
                max_attempts,
                calls,
            )| {
                let protocol = if anthropic {
                    Protocol::Anthropic
                } else {
                    Protocol::Openai
                };
                let price = Price {
                    input_usd_per_mtok,
                    output_usd_per_mtok,
                };
                let s = run(protocol, cap, price, max_tokens, max_attempts, &calls)?;
                let mut all = seen.lock().unwrap();
                all.replies += s.replies;
                all.worst_case_bookings += s.worst_case_bookings;
                all.refused_rereserve += s.refused_rereserve;
                all.refused_first += s.refused_first;
                Ok(())
            },
        )
        .unwrap();
    let seen = *seen.lock().unwrap();
    eprintln!("{CASES} cases: {seen:?}");
    assert!(
        seen.replies > 50
            && seen.worst_case_bookings > 50
            && seen.refused_rereserve > 5
            && seen.refused_first > 5,
        "the property no longer reaches its corners: {seen:?}"
    );
}

/// The property's sharpest corner, fixed: every attempt garbled, the cap
/// just above a few attempts' worth. Re-reservation is what stops it.
#[test]
fn garbled_attempts_stop_at_the_cap_not_after_it() {
    let price = Price {
        input_usd_per_mtok: 5.0,
        output_usd_per_mtok: 25.0,
    };
    let calls = vec![Call {
        turns: vec!["x".repeat(4000)],
        tools: 2,
        attempts: vec![Outcome::Garbled; 10],
    }];
    // One attempt's worst case is about $0.137 (4096 output tokens at $25/MTok
    // plus ~5.5k input tokens at the cache-write rate): a $0.50 cap allows
    // three; the fourth attempt's reserve would reach ~$0.55.
    let seen = run(Protocol::Anthropic, 0.5, price, 4096, 10, &calls).unwrap();
    assert_eq!(seen.worst_case_bookings, 3, "{seen:?}");
    assert_eq!(
        seen.refused_rereserve, 1,
        "the fourth attempt's reserve is refused: {seen:?}"
    );
}
