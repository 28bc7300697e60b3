//! The server tests' fixtures: one scripted cassette with two run variants
//! (and the checked-in example beside it), a server over both, and a client
//! call that speaks the harness's wire headers. Shared so each file's tests
//! sit beside the code they test and still exercise it over real HTTP.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{
    ReplayOptions, ReplayServer, HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE, HEADER_MISS,
};
use crate::cassette::{body_sha256, Cassette, Recordings};
use crate::faults::FaultPlan;

/// The scripted cassette's case id.
pub(super) const CASE: &str = "srv";

pub(super) fn system_body(system: &str) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 512,
        "system": system,
        "messages": [{"role": "user", "content": "Fix the typo in README.md"}]
    })
}

/// Two run variants; plan/0 carries a real body + hash; execute/t1/a0/0
/// has scripted faults; judge/0 is hand-written (no body); one
/// interaction has a 200 ms recorded latency and one a raw body.
pub(super) fn test_cassette() -> Cassette {
    let plan_body = system_body("You are a careful planner.");
    let variant = |v: u32| {
        json!({
            "run": v,
            "interactions": [
                {
                    "role": "plan", "call_key": "plan/0",
                    "request": {"method": "POST", "path": "/v1/messages", "body": plan_body, "body_sha256": body_sha256(&plan_body)},
                    "response": {"status": 200, "headers": {"content-type": "application/json", "request-id": format!("req_{v}")},
                                 "body": {"id": format!("msg_plan_v{v}"), "type": "message", "content": [{"type": "text", "text": format!("plan variant {v}")}]}},
                    "latency_ms": 0
                },
                {
                    "role": "execute", "call_key": "execute/t1/a0/0",
                    "request": {"path": "/v1/messages", "body": null, "body_sha256": null},
                    "response": {"status": 200, "body": {"id": format!("msg_exec_v{v}"), "content": []}},
                    "latency_ms": 200,
                    "faults_before": [
                        {"status": 429, "headers": {"retry-after": "1"}, "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}},
                        {"status": 500, "body_raw": "upstream connect error"}
                    ]
                },
                {
                    "role": "judge", "call_key": "judge/0",
                    "request": {"path": "/v1/messages", "body": null, "body_sha256": null},
                    "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "body_raw": format!("event: ping\ndata: {{\"v\": {v}}}\n\n")},
                    "latency_ms": 0
                }
            ]
        })
    };
    serde_json::from_value(json!({
        "format": crate::cassette::FORMAT,
        "case": CASE,
        "protocol": "anthropic",
        "model": "claude-test",
        "made": {"how": "scripted", "when": "2025-01-01", "by": "server tests", "temperature": null, "seed": null, "notes": ""},
        // These tests are about matching by key, variant and attempt; the
        // conditions have tests of their own (matching.rs).
        "conditions": model::conditions::every_role_as(model::types::Protocol::Anthropic, &json!({})),
        "indifferent_to": model::conditions::ConditionField::ALL,
        "runs": [variant(0), variant(1)]
    }))
    .unwrap()
}

pub(super) fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../recordings/examples/example-fix-typo.json")
}

pub(super) async fn server(opts: ReplayOptions) -> ReplayServer {
    let mut rec = Recordings::new();
    rec.add(test_cassette(), "mem/srv.json").unwrap();
    rec.add(example_any_conditions(), example_path()).unwrap();
    ReplayServer::start(rec, opts).await.unwrap()
}

/// The checked-in example, declared indifferent to every condition: the
/// tests that serve it are about keys, variants and bytes, and send bodies
/// of their own (the conditions have tests of their own, matching.rs).
pub(super) fn example_any_conditions() -> Cassette {
    let mut c = Cassette::load(example_path()).unwrap();
    c.indifferent_to = model::conditions::ConditionField::ALL.to_vec();
    c
}

pub(super) fn fast() -> ReplayOptions {
    ReplayOptions {
        strict: false,
        latency_scale: 0.0,
        faults: FaultPlan::none(),
        capture: false,
        serve_as_run: None,
    }
}

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: reqwest::header::HeaderMap,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    pub(super) fn miss_message(&self) -> String {
        assert_eq!(self.status, 404);
        assert_eq!(
            self.headers.get(HEADER_MISS).map(|v| v.to_str().unwrap()),
            Some("1")
        );
        let v = self.json();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "recording_miss");
        v["error"]["message"].as_str().unwrap().to_string()
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn call(
    client: &reqwest::Client,
    base: &str,
    endpoint: &str,
    role: &str,
    key: &str,
    attempt: u32,
    body: &Value,
) -> Reply {
    let resp = client
        .post(format!("{base}{endpoint}"))
        .header(HEADER_CALL_ROLE, role)
        .header(HEADER_CALL_KEY, key)
        .header(HEADER_ATTEMPT, attempt.to_string())
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap().to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

pub(super) fn plan(spec: &str) -> ReplayOptions {
    ReplayOptions {
        faults: FaultPlan::parse(spec).unwrap(),
        ..fast()
    }
}
