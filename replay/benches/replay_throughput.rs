//! Replay server throughput and latency vs a bare wiremock server.
//!
//! Loads a few thousand generated interactions, then drives the replay
//! server (default and strict mode) and a bare `MockServer` answering one
//! fixed mock with 1, 8 and 64 concurrent keep-alive clients. First a fixed
//! one-second pass per configuration prints a table of requests/s and
//! p50/p99 latency (criterion reports throughput but not percentiles), then
//! criterion measures the same configurations. The bare server is the floor:
//! the difference is the cost of the lookup, headers and body handling.
//!
//! Run: `cargo bench -p replay --features bench --bench replay_throughput` (~45 s).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use model::types::{CallRole, Protocol};
use replay::{
    Cassette, FaultPlan, Interaction, Made, MadeHow, Recordings, ReplayOptions, ReplayServer,
};
use serde_json::{json, Value};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CASES: u32 = 40;
const VARIANTS: u32 = 2;
const KEYS_PER_RUN: u32 = 40; // 40 cases x 2 variants x 40 keys = 3200 interactions
const CONCURRENCY: [usize; 3] = [1, 8, 64];
const TABLE_PASS: Duration = Duration::from_millis(1000);

/// One prepared request: where to send it and with which headers/body.
#[derive(Clone)]
struct Req {
    path: String,
    role: &'static str,
    key: String,
    body: Vec<u8>,
}

fn call_key(k: u32) -> (CallRole, String) {
    match k {
        0 => (CallRole::Plan, "plan/0".to_string()),
        k if k == KEYS_PER_RUN - 1 => (CallRole::Judge, "judge/0".to_string()),
        k => (
            CallRole::Execute,
            format!("execute/t{}/a0/{}", k / 8, k % 8),
        ),
    }
}

fn request_body(case: u32, k: u32) -> Value {
    json!({
        "model": "claude-bench",
        "max_tokens": 1024,
        "system": format!("You are the executor for case {case}. Use the tools; stop when the task is done."),
        "messages": [
            {"role": "user", "content": format!("Task step {k}: {}", "edit the file and run the checks. ".repeat(8))}
        ],
        "tools": [{"name": "edit_file", "description": "Replace a string in a file.", "input_schema": {"type": "object"}}]
    })
}

fn response_body(case: u32, v: u32, k: u32) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": format!("msg_{case}_{v}_{k}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [{"type": "text", "text": format!("variant {v} step {k}: {}", "done and verified. ".repeat(20))}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 900, "output_tokens": 120, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    }))
    .unwrap()
}

fn generate() -> (Recordings, Vec<Req>) {
    let mut rec = Recordings::new();
    let mut reqs = Vec::new();
    for c in 0..CASES {
        let case = format!("bench-{c:03}");
        let made = Made {
            how: MadeHow::Scripted,
            when: "2025-06-01".into(),
            by: "replay_throughput bench".into(),
            temperature: None,
            seed: None,
            notes: String::new(),
        };
        let mut cassette = Cassette::new(case.clone(), Protocol::Anthropic, "claude-bench", made);
        for v in 0..VARIANTS {
            for k in 0..KEYS_PER_RUN {
                let (role, key) = call_key(k);
                let body = request_body(c, k);
                let it = Interaction::from_exchange(
                    role,
                    key.clone(),
                    Protocol::Anthropic,
                    &body,
                    200,
                    [("content-type", "application/json")],
                    &response_body(c, v, k),
                    700,
                );
                cassette.push(v, it);
                reqs.push(Req {
                    path: format!("/replay/{case}/{v}/v1/messages"),
                    role: role.as_str(),
                    key,
                    body: serde_json::to_vec(&body).unwrap(),
                });
            }
        }
        // As a recorder states them: every request is then compared with them.
        cassette.conditions_from_bodies().unwrap();
        rec.add(cassette, format!("generated/{case}.json")).unwrap();
    }
    // Interleave cases so consecutive requests hit different parts of the index.
    let n = reqs.len();
    let stride = 977; // prime, coprime with n
    let reqs = (0..n).map(|i| reqs[(i * stride) % n].clone()).collect();
    (rec, reqs)
}

struct Stats {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

/// Drive `base` with `concurrency` clients. Stops after `count` requests
/// (criterion) or at `deadline` (table), whichever is set.
async fn drive(
    client: &reqwest::Client,
    base: &str,
    reqs: &Arc<Vec<Req>>,
    concurrency: usize,
    count: Option<u64>,
    deadline: Option<Duration>,
    keep_latencies: bool,
) -> Stats {
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, base, reqs, next, errors) = (
            client.clone(),
            base.to_string(),
            Arc::clone(reqs),
            Arc::clone(&next),
            Arc::clone(&errors),
        );
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if count.is_some_and(|c| i >= c) || deadline.is_some_and(|d| start.elapsed() >= d) {
                    break;
                }
                let r = &reqs[(i as usize) % reqs.len()];
                let t0 = Instant::now();
                let ok = match client
                    .post(format!("{base}{}", r.path))
                    .header("content-type", "application/json")
                    .header("x-harness-call-role", r.role)
                    .header("x-harness-call-key", &r.key)
                    .header("x-harness-attempt", "0")
                    .body(r.body.clone())
                    .send()
                    .await
                {
                    Ok(resp) => resp.status().as_u16() == 200 && resp.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if keep_latencies {
                    lat.push(t0.elapsed());
                }
                if !ok {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            lat
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap_or_default());
    }
    let elapsed = start.elapsed();
    let issued = next.load(Ordering::Relaxed);
    let requests = match count {
        Some(c) => issued.min(c),
        None => latencies.len() as u64,
    };
    Stats {
        requests,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
        latencies,
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Which server a configuration drives. Each configuration gets a freshly
/// started server: wiremock 0.6 keeps a clone of every request a mock has
/// matched (even with request recording disabled), so a server that has
/// already answered a million requests is slower and bigger than a new one,
/// and reusing servers would make whichever ran first look fastest.
#[derive(Clone, Copy)]
enum Kind {
    Replay,
    ReplayStrict,
    WiremockBare,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Replay => "replay",
            Kind::ReplayStrict => "replay-strict",
            Kind::WiremockBare => "wiremock-bare",
        }
    }
}

enum Running {
    Replay(ReplayServer),
    Bare(MockServer),
}

impl Running {
    fn uri(&self) -> String {
        match self {
            Running::Replay(s) => s.uri(),
            Running::Bare(s) => s.uri(),
        }
    }
}

async fn start(kind: Kind, rec: &Recordings) -> Running {
    let fast = ReplayOptions {
        strict: false,
        latency_scale: 0.0,
        faults: FaultPlan::none(),
        capture: false,
        serve_as_run: None,
    };
    match kind {
        Kind::Replay => Running::Replay(ReplayServer::start(rec.clone(), fast).await.unwrap()),
        Kind::ReplayStrict => Running::Replay(
            ReplayServer::start(
                rec.clone(),
                ReplayOptions {
                    strict: true,
                    ..fast
                },
            )
            .await
            .unwrap(),
        ),
        Kind::WiremockBare => {
            let bare = MockServer::builder()
                .disable_request_recording()
                .start()
                .await;
            Mock::given(any())
                .respond_with(
                    ResponseTemplate::new(200)
                        .set_body_raw(response_body(0, 0, 1), "application/json"),
                )
                .mount(&bare)
                .await;
            Running::Bare(bare)
        }
    }
}

/// Resident set size in MiB (Linux), to show what a run retains.
fn rss_mib() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096.0 / (1024.0 * 1024.0))
}

struct Row {
    label: &'static str,
    conc: usize,
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not, and then
    // criterion runs each routine once as a smoke test: skip the timed table.
    let full = std::env::args().any(|a| a == "--bench");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(128)
        .build()
        .unwrap();
    let (rec, reqs) = generate();
    let reqs = Arc::new(reqs);
    let rss_before = rss_mib();

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(10)
        .configure_from_args();
    let mut rows = Vec::new();
    let mut g = c.benchmark_group("replay_throughput");
    g.throughput(Throughput::Elements(1));
    for kind in [Kind::Replay, Kind::ReplayStrict, Kind::WiremockBare] {
        for conc in CONCURRENCY {
            let server = rt.block_on(start(kind, &rec));
            let base = server.uri();
            if full {
                let st = rt.block_on(async {
                    // Warm up connections.
                    drive(&client, &base, &reqs, conc, Some(200), None, false).await;
                    drive(&client, &base, &reqs, conc, None, Some(TABLE_PASS), true).await
                });
                let mut lat = st.latencies;
                lat.sort_unstable();
                rows.push(Row {
                    label: kind.label(),
                    conc,
                    rps: st.requests as f64 / st.elapsed.as_secs_f64(),
                    p50_ms: pct(&lat, 0.50).as_secs_f64() * 1e3,
                    p99_ms: pct(&lat, 0.99).as_secs_f64() * 1e3,
                    errors: st.errors,
                });
            }
            g.bench_with_input(BenchmarkId::new(kind.label(), conc), &conc, |b, &conc| {
                b.iter_custom(|iters| {
                    // Wall time of `iters` requests at this concurrency; criterion divides by iters.
                    let st =
                        rt.block_on(drive(&client, &base, &reqs, conc, Some(iters), None, false));
                    assert_eq!(st.errors, 0, "{} answered with errors", kind.label());
                    st.elapsed
                })
            });
            drop(server);
        }
    }
    g.finish();

    if full {
        println!(
            "\nreplay_throughput: {} interactions loaded; fresh server per row; {} s per row; latency_scale 0; \
             loopback, keep-alive; RSS {:.0} MiB at start, {:.0} MiB at end",
            rec.interaction_count(),
            TABLE_PASS.as_secs_f64(),
            rss_before.unwrap_or(f64::NAN),
            rss_mib().unwrap_or(f64::NAN)
        );
        println!(
            "{:<15} {:>5} {:>10} {:>10} {:>10} {:>8}",
            "server", "conc", "req/s", "p50 ms", "p99 ms", "errors"
        );
        for r in &rows {
            println!(
                "{:<15} {:>5} {:>10.0} {:>10.3} {:>10.3} {:>8}",
                r.label, r.conc, r.rps, r.p50_ms, r.p99_ms, r.errors
            );
        }
        println!();
    }
    c.final_summary();
}
