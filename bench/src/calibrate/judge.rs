//! The LLM judge as a detector: exactly the harness's drift check.
//!
//! The request is built by `harness::drift::judge_request(goal, queue, model,
//! call_key)`, the function the harness itself calls, so what is calibrated
//! is what ships: a fresh context holding only (goal, queue), reasoning
//! first. It is sent through `harness::model::ModelClient` (same wire
//! adapters, same retries) and the reply read with `harness::drift::parse`;
//! a reply that cannot be read is a failed check, never "aligned".
//!
//! Two sources of answers:
//! - a live endpoint (`--endpoint --protocol --model`), optionally recorded
//!   into a cassette (`--record DIR`) so the calibration can be replayed;
//! - recordings: a `calibration-<name>` cassette whose interactions are
//!   `judge/<queue id>`, replayed by `harness::replay::ReplayServer` in
//!   strict mode, so a recording made with a different prompt (the judge
//!   system text or a queue edited since) is refused, not silently reused.
//!
//! HONESTY: calibration figures must come from a real model. A cassette whose
//! `made.how` is "scripted" is a stand-in and is refused here; only the
//! pipeline tests may replay one (`ReplaySource::allow_scripted`), and their
//! numbers are never written to a report.

use super::metrics::CheckFailed;
use super::queues::{LabeledQueue, LabeledSet};
use crate::live::proxy::LiveProxy;
use harness::drift::{self, DriftCheck};
use harness::goal::Goal;
use harness::ledger::{cost_usd, Price, PriceTable};
use harness::model::{
    render_response, CallRole, EndpointConfig, ModelClient, ModelRequest, ParsedReply, Protocol,
    Usage,
};
use harness::replay::{
    Cassette, Interaction, Made, MadeHow, Recordings, ReplayOptions, ReplayServer,
};
use harness::task::Task;
use harness::verify::Verify;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Case ids of judge calibration cassettes start with this.
pub const CASE_PREFIX: &str = "calibration-";
/// Where `bench calibrate` looks for judge recordings by default.
pub const DEFAULT_RECORDINGS: &str = "recordings/calibration";

/// The call key of the judge call for one queue (and run, via the URL).
pub fn call_key(queue_id: &str) -> String {
    format!("judge/{queue_id}")
}

/// The harness's own judge request for a labeled queue. Only the goal text
/// and the tasks' ids and descriptions go in: the label, severity, off-goal
/// ids, tags and notes of the file never do (the verify is required by the
/// `Task` type but `judge_request` does not read it).
pub fn request_for(q: &LabeledQueue, model: &str) -> ModelRequest {
    let goal = Goal::new(q.goal.clone());
    let tasks: Vec<Task> = q
        .queue
        .iter()
        .map(|t| Task {
            id: t.id.clone(),
            description: t.description.clone(),
            verify: Verify::Check {
                name: "calibration".into(),
            },
            origin: "plan".into(),
            attempts: 0,
        })
        .collect();
    drift::judge_request(&goal, &tasks, model, call_key(&q.id))
}

/// One judge check of one queue in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeCheck {
    pub queue_id: String,
    pub outcome: Result<DriftCheck, CheckFailed>,
    pub usage: Usage,
    /// None when the model has no price in the table.
    pub cost_usd: Option<f64>,
    /// Live: wall time of the call including retries. Replay: the latency the
    /// live endpoint had when it was recorded (the cassette's `latency_ms`),
    /// not the replay's, which measures nothing.
    pub latency_ms: u64,
}

#[derive(Debug, Clone)]
pub struct JudgeRun {
    pub model: String,
    pub protocol: Protocol,
    /// Human-readable: where the answers came from.
    pub source: String,
    pub priced: bool,
    /// checks[run][queue index], in the set's order.
    pub checks: Vec<Vec<JudgeCheck>>,
    /// Live with --record: where the cassette was written.
    pub recorded_to: Option<PathBuf>,
}

/// Why the judge was not measured. Each says what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable {
    /// No real recordings: the honest answer is "not measured".
    NoRecordings(String),
    /// Recordings exist but cannot be used as they are (scripted, stale,
    /// incomplete, too few run variants, ambiguous).
    Refused(String),
    /// The endpoint or the flags are wrong.
    Config(String),
}

impl Unavailable {
    pub fn message(&self) -> &str {
        match self {
            Unavailable::NoRecordings(m) | Unavailable::Refused(m) | Unavailable::Config(m) => m,
        }
    }
}

/// How to make the recordings that are missing (issue 9). Shown whenever the
/// judge was not measured for want of them.
pub fn how_to_record(dir: &Path) -> String {
    format!(
        "Calibration figures must come from a real model's answers, so none are shown for the judge. To make them (issue 9):\n\
         1. start a local model server, e.g. llama.cpp: `llama-server -m <model>.gguf --port 8080`\n\
         2. `bench calibrate --detector judge --endpoint http://127.0.0.1:8080/v1 --protocol openai --model <name> --runs 3 --max-usd 1 --max-tokens 2000000 --record {}`\n\
         \x20  (--max-usd/--max-tokens cap the whole command; add `--prices FILE` to price the model, a local model costs $0 per token)\n\
         3. commit {}/{CASE_PREFIX}<name>.json; from then on `bench calibrate` replays it offline, in strict mode.",
        dir.display(),
        dir.display()
    )
}

pub fn price_of(prices: &PriceTable, model: &str) -> Option<Price> {
    prices.get(model).copied()
}

/// Live endpoint settings.
#[derive(Debug, Clone)]
pub struct LiveSource {
    pub endpoint: String,
    pub protocol: Protocol,
    pub model: String,
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    /// Write the answers into `<dir>/calibration-<model>.json`.
    pub record_dir: Option<PathBuf>,
    /// The command-wide cap (`--max-usd`, `--max-tokens`).
    pub caps: crate::live::budget::Caps,
    /// Judge calls in flight at once (`--max-concurrency`).
    pub max_concurrency: usize,
    /// Temperature and structured-output dialect sent with every judge call.
    pub sampling: harness::model::Sampling,
}

/// Recordings settings.
#[derive(Debug, Clone)]
pub struct ReplaySource {
    pub dir: PathBuf,
    /// Which `calibration-*` case when the directory holds several.
    pub case: Option<String>,
    /// Test-only: replay a `made.how = "scripted"` stand-in. Not reachable
    /// from the command line.
    pub allow_scripted: bool,
    /// Keep the request bodies the replay server received (for the test
    /// that asserts what reaches the judge).
    pub capture: bool,
}

/// What a replay run returns besides the checks: the captured bodies, per
/// run, when `capture` was on.
pub type Captured = Vec<Vec<harness::replay::Captured>>;

fn check_from_reply(
    q: &LabeledQueue,
    text: &str,
    usage: Usage,
    price: Option<Price>,
    latency_ms: u64,
) -> JudgeCheck {
    JudgeCheck {
        queue_id: q.id.clone(),
        outcome: drift::parse(text).map_err(CheckFailed),
        usage,
        cost_usd: price.map(|p| cost_usd(&p, &usage)),
        latency_ms,
    }
}

fn failed(q: &LabeledQueue, why: String, latency_ms: u64) -> JudgeCheck {
    JudgeCheck {
        queue_id: q.id.clone(),
        outcome: Err(CheckFailed(why)),
        usage: Usage::default(),
        cost_usd: None,
        latency_ms,
    }
}

/// Every judge request, as it goes on the wire, before any is sent: the
/// model asked for is `--model`, and the body is a drift judge request
/// holding exactly the queue's goal and tasks (the rule the suite's
/// `audit.judge_requests` holds every run's judge calls to; one rule, not a
/// second copy). A request that is not is the bench's own error: nothing
/// is sent.
fn check_live_requests(
    set: &LabeledSet,
    requests: &[ModelRequest],
    client: &ModelClient,
    model: &str,
) -> Result<(), Unavailable> {
    for (q, req) in set.queues.iter().zip(requests) {
        let body = client.wire_body(req);
        let bad = |why: String| {
            Unavailable::Config(format!(
                "the judge request for queue {} ({}) is not the drift judge's: {why}; nothing was sent",
                q.id, req.call_key
            ))
        };
        match body.get("model").and_then(serde_json::Value::as_str) {
            Some(m) if m == model => {}
            other => {
                return Err(bad(format!(
                    "field `model`: expected --model {model:?}, found {other:?}"
                )))
            }
        }
        let tasks = (q.queue.iter())
            .map(|t| (t.id.clone(), t.description.clone()))
            .collect();
        crate::audit::judge_body_ok(&body, &q.goal, &tasks, &Default::default())
            .map_err(|e| bad(e.to_string()))?;
    }
    Ok(())
}

/// Call a live endpoint `runs` times per queue. Every call goes through the
/// bench's live proxy (bench/src/live/), which adds the API key and enforces
/// the command-wide cap (`src.caps`) exactly as it does for `bench record`:
/// one budget and one key path, not two. At most `src.max_concurrency` calls
/// are in flight (default 1: a local model server serves one request at a
/// time anyway, and latency per check should not include queueing behind
/// our own other calls). Once the cap refuses a call, no new call starts and
/// the calibration is refused as incomplete (nothing reported or recorded).
pub async fn run_live(
    set: &LabeledSet,
    src: &LiveSource,
    runs: u32,
    prices: &PriceTable,
) -> Result<JudgeRun, Unavailable> {
    let proxy = open_proxy(src).await?;
    let price = price_of(prices, &src.model);
    let case = format!("{CASE_PREFIX}{}", slug(&src.model));
    let lane = format!("calibrate~{case}");
    let clients = live_clients(&proxy, src, &lane, runs, price)?;
    let requests: Vec<ModelRequest> = (set.queues.iter())
        .map(|q| request_for(q, &src.model))
        .collect();
    check_live_requests(set, &requests, &clients[0], &src.model)?;
    let clients = Arc::new(clients);
    let grid = call_all(set, src, &proxy, clients.clone(), requests, runs).await;
    for run in 0..runs {
        proxy.finish(&lane, run);
    }
    let spend = proxy.budget().spend();
    errln!(
        "bench calibrate: live judge spent ${:.6} and {} tokens in {} calls under {}",
        spend.booked_usd,
        spend.booked_tokens,
        spend.calls,
        src.caps.describe()
    );
    if let Some(r) = proxy.budget().cap_reached() {
        let missing = grid
            .iter()
            .flatten()
            .filter(|s| !matches!(s, Some((_, Ok(_), _))))
            .count();
        return Err(Unavailable::Refused(format!(
            "the command-wide cap was reached ({}): {missing} of {} judge checks were not made, so nothing is reported or recorded; raise --max-usd / --max-tokens",
            r.message,
            set.queues.len() * runs as usize
        )));
    }
    let mut cassette = Cassette::new(
        case.clone(),
        src.protocol,
        src.model.clone(),
        made_live(set, src, runs),
    );
    let checks = live_checks(set, src, &clients, grid, price, &mut cassette);
    let recorded_to = record_live(src, &case, &mut cassette, &checks)?;
    Ok(JudgeRun {
        model: src.model.clone(),
        protocol: src.protocol,
        source: format!("live endpoint {} ({})", src.endpoint, src.protocol.as_str()),
        priced: price.is_some(),
        checks,
        recorded_to,
    })
}

/// One live call's request, its reply (or why there is none) and its wall
/// time; None when the call never finished.
type Slot = Option<(
    ModelRequest,
    Result<harness::model::ModelReply, CheckFailed>,
    u64,
)>;

/// The live proxy every judge call goes through, asked to refuse, before
/// anything is sent, a call for another model than `--model` (as `bench
/// record --model`).
async fn open_proxy(src: &LiveSource) -> Result<Arc<LiveProxy>, Unavailable> {
    let mut settings = crate::live::settings(
        &src.endpoint,
        src.api_key_env.as_deref(),
        Some(src.caps.max_usd),
        src.caps.max_tokens,
    )
    .map_err(|e| Unavailable::Config(e.to_string()))?;
    settings.model = Some(src.model.clone());
    crate::live::start_proxy(&settings, src.max_concurrency)
        .await
        .map_err(|e| Unavailable::Config(e.to_string()))
}

/// One client per run, each on its own proxy lane. The proxy prices each
/// call with the model's price; a model with no price is $0 to it, so only
/// --max-tokens bounds it (refused without one).
fn live_clients(
    proxy: &LiveProxy,
    src: &LiveSource,
    lane: &str,
    runs: u32,
    price: Option<Price>,
) -> Result<Vec<ModelClient>, Unavailable> {
    let budget_prices: PriceTable = [(
        src.model.clone(),
        price.unwrap_or(Price {
            input_usd_per_mtok: 0.0,
            output_usd_per_mtok: 0.0,
        }),
    )]
    .into();
    let mut clients = Vec::new();
    for run in 0..runs {
        let base_url = proxy.register(
            lane,
            run,
            crate::live::proxy::RunReg {
                protocol: src.protocol,
                prices: budget_prices.clone(),
                timeout: std::time::Duration::from_millis(
                    src.timeout_ms.saturating_sub(1000).max(1000),
                ),
                record: false,
                replay: None,
            },
        );
        let cfg = EndpointConfig {
            base_url,
            protocol: src.protocol,
            // The proxy adds the key; the client never holds it.
            api_key_env: None,
            request_timeout_ms: src.timeout_ms,
            retry: Default::default(),
        };
        clients.push(
            ModelClient::new(cfg)
                .map_err(|e| Unavailable::Config(format!("--endpoint: {e}")))?
                .with_sampling(src.sampling),
        );
    }
    Ok(clients)
}

/// Every (run, queue) call, run by run, queue by queue, on the batch's
/// worker pool; once the cap is reached no new call starts.
async fn call_all(
    set: &LabeledSet,
    src: &LiveSource,
    proxy: &LiveProxy,
    clients: Arc<Vec<ModelClient>>,
    requests: Vec<ModelRequest>,
    runs: u32,
) -> Vec<Vec<Slot>> {
    let n_total = set.queues.len() * runs as usize;
    let mut grid: Vec<Vec<Slot>> = (0..runs).map(|_| vec![None; set.queues.len()]).collect();
    let jobs: Vec<(u32, usize)> = (0..runs)
        .flat_map(|run| (0..set.queues.len()).map(move |qi| (run, qi)))
        .collect();
    let requests = Arc::new(requests);
    let budget = proxy.budget().clone();
    let work = move |(run, qi): (u32, usize)| {
        let (client, req, budget) = (
            clients[run as usize].clone(),
            requests[qi].clone(),
            budget.clone(),
        );
        async move {
            if let Some(r) = budget.cap_reached() {
                let why = format!("not made: the command-wide cap was reached ({})", r.message);
                return (run, qi, req, Err(CheckFailed(why)), 0);
            }
            let started = Instant::now();
            let res = client
                .call(&req)
                .await
                .map_err(|e| CheckFailed(format!("model call failed: {e}")));
            let wall = started.elapsed().as_millis().min(u64::MAX as u128) as u64;
            (run, qi, req, res, wall)
        }
    };
    let mut done = 0;
    crate::batch::pool(
        jobs,
        src.max_concurrency
            .clamp(1, crate::live::proxy::IN_FLIGHT_MAX),
        work,
        |(run, qi, req, res, wall)| {
            done += 1;
            log_call(
                &format!(
                    "judge {done}/{n_total}: run {} {}",
                    run + 1,
                    set.queues[qi].id
                ),
                &res,
                wall,
            );
            grid[run as usize][qi] = Some((req, res, wall));
            crate::batch::Flow::Continue
        },
    )
    .await;
    grid
}

/// One progress line per finished call, so a slow local model shows it is
/// moving.
fn log_call(head: &str, res: &Result<harness::model::ModelReply, CheckFailed>, wall: u64) {
    match res {
        Ok(reply) => match drift::parse(&reply.text) {
            Ok(dc) => errln!(
                "{head}: score {:.2} ({:.1} s)",
                dc.drift_score,
                wall as f64 / 1000.0
            ),
            Err(e) => errln!("{head}: unreadable reply: {e}"),
        },
        Err(e) => errln!("{head}: {e}"),
    }
}

/// `made` of the cassette a live run records.
fn made_live(set: &LabeledSet, src: &LiveSource, runs: u32) -> Made {
    Made {
        how: MadeHow::Recorded,
        when: today_utc(),
        by: format!("bench calibrate --record ({})", src.endpoint),
        // As a harness run with `[model] temperature` set would send it;
        // None: the server's default applied.
        temperature: src.sampling.temperature,
        seed: None,
        notes: format!(
            "Judge calls of the drift-calibration set ({} queues, {runs} run(s)), request built by harness::drift::judge_request. \
             Response bodies are re-rendered from the parsed reply (text, usage, stop reason and model exactly as the endpoint returned them).",
            set.queues.len()
        ),
    }
}

/// The checks, run by run, in the set's order; every answered call also
/// goes into the cassette.
fn live_checks(
    set: &LabeledSet,
    src: &LiveSource,
    clients: &[ModelClient],
    grid: Vec<Vec<Slot>>,
    price: Option<Price>,
    cassette: &mut Cassette,
) -> Vec<Vec<JudgeCheck>> {
    let mut checks = Vec::new();
    for (run, row_slots) in grid.into_iter().enumerate() {
        let mut row = Vec::new();
        for (qi, slot) in row_slots.into_iter().enumerate() {
            let q = &set.queues[qi];
            let Some((req, res, wall)) = slot else {
                row.push(failed(
                    q,
                    "model call failed: the task did not finish".into(),
                    0,
                ));
                continue;
            };
            match res {
                Ok(reply) => {
                    cassette.push(
                        run as u32,
                        interaction(src.protocol, &clients[run], &req, &reply),
                    );
                    row.push(check_from_reply(q, &reply.text, reply.usage, price, wall));
                }
                Err(e) => row.push(failed(q, e.0, wall)),
            }
        }
        checks.push(row);
    }
    checks
}

/// A live exchange as a cassette interaction: the request as it went on the
/// wire (sampling settings included), the reply re-rendered from the parsed
/// one.
fn interaction(
    protocol: Protocol,
    client: &ModelClient,
    req: &ModelRequest,
    reply: &harness::model::ModelReply,
) -> Interaction {
    let parsed = ParsedReply {
        text: reply.text.clone(),
        tool_calls: reply.tool_calls.clone(),
        stop_reason: reply.stop_reason.clone(),
        usage: reply.usage,
        model: reply.model.clone(),
    };
    let body = render_response(protocol, &parsed).to_string();
    Interaction::from_exchange(
        CallRole::Judge,
        req.call_key.clone(),
        protocol,
        &client.wire_body(req),
        200,
        [("content-type", "application/json")],
        body.as_bytes(),
        reply.latency_ms,
    )
}

/// With --record, the cassette into `<dir>/<case>.json`, unless a call
/// failed: a cassette with holes would make every later replay fail on the
/// missing keys, so then measure and report but do not record. (Unreadable
/// replies ARE recorded: they are the model's answers, and how often the
/// judge cannot be read is part of its calibration.)
fn record_live(
    src: &LiveSource,
    case: &str,
    cassette: &mut Cassette,
    checks: &[Vec<JudgeCheck>],
) -> Result<Option<PathBuf>, Unavailable> {
    let Some(dir) = &src.record_dir else {
        return Ok(None);
    };
    let failed_calls = checks
        .iter()
        .flatten()
        .filter(|c| {
            c.outcome
                .as_ref()
                .is_err_and(|e| e.0.starts_with("model call failed"))
        })
        .count();
    if failed_calls > 0 {
        errln!("bench calibrate: NOT recording: {failed_calls} judge call(s) failed (listed in the report); fix the endpoint and run again");
        return Ok(None);
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Unavailable::Config(format!("--record {}: {e}", dir.display())))?;
    let path = dir.join(format!("{case}.json"));
    cassette
        .conditions_from_bodies()
        .map_err(|e| Unavailable::Config(format!("--record {}: {e}", path.display())))?;
    cassette
        .save(&path)
        .map_err(|e| Unavailable::Config(format!("--record: {e}")))?;
    Ok(Some(path))
}

/// Pick the calibration cassette to replay, refusing anything that would
/// put numbers in a report that no real judge produced.
pub fn select_cassette(
    src: &ReplaySource,
    set: &LabeledSet,
    runs: u32,
) -> Result<(PathBuf, Cassette), Unavailable> {
    let cands = candidates(src)?;
    let (path, cassette) = pick(src, cands)?;
    if cassette.made.how == MadeHow::Scripted && !src.allow_scripted {
        let only_scripted = format!(
            "{} is made.how = \"scripted\": its answers were written by a person or a script, not given by a model. \
             A scripted stand-in tests the pipeline; it is never a judge's calibration, so it is not reported. \
             There are no recordings of a real judge yet",
            path.display()
        );
        return Err(Unavailable::NoRecordings(only_scripted));
    }
    check_runs(&path, &cassette, set, runs)?;
    Ok((path, cassette))
}

/// Every `calibration-*` cassette in the recordings directory, by case id;
/// none (or no directory) is "no recordings yet", one that does not load is
/// refused.
fn candidates(src: &ReplaySource) -> Result<Vec<(PathBuf, Cassette)>, Unavailable> {
    let none = || {
        Unavailable::NoRecordings(format!("there are no recordings of a real judge yet (looked for {CASE_PREFIX}*.json cassettes in {})", src.dir.display()))
    };
    if !src.dir.is_dir() {
        return Err(none());
    }
    let recs = match Recordings::load_dir(&src.dir) {
        Ok(r) => r,
        Err(e) if e.errors.iter().all(|x| x.message.contains("no *.json")) => return Err(none()),
        Err(e) => {
            return Err(Unavailable::Refused(format!(
                "the recordings in {} do not load:\n{e}",
                src.dir.display()
            )))
        }
    };
    let mut cands: Vec<(PathBuf, Cassette)> = recs
        .into_cases()
        .into_iter()
        .filter(|c| c.cassette.case.starts_with(CASE_PREFIX))
        .map(|c| (c.source, c.cassette))
        .collect();
    cands.sort_by(|a, b| a.1.case.cmp(&b.1.case));
    if cands.is_empty() {
        return Err(none());
    }
    Ok(cands)
}

/// The cassette `--judge-case` names, or the only one there is.
fn pick(
    src: &ReplaySource,
    mut cands: Vec<(PathBuf, Cassette)>,
) -> Result<(PathBuf, Cassette), Unavailable> {
    match &src.case {
        Some(want) => {
            let want_case = if want.starts_with(CASE_PREFIX) {
                want.clone()
            } else {
                format!("{CASE_PREFIX}{want}")
            };
            let names: Vec<String> = cands.iter().map(|c| c.1.case.clone()).collect();
            cands
                .into_iter()
                .find(|c| c.1.case == want_case)
                .ok_or_else(|| {
                    Unavailable::Config(format!(
                        "--judge-case {want}: no cassette \"{want_case}\" in {}; there are: {}",
                        src.dir.display(),
                        names.join(", ")
                    ))
                })
        }
        None if cands.len() == 1 => Ok(cands.remove(0)),
        None => Err(Unavailable::Config(format!(
            "{} holds {} judge recordings ({}); pick one with --judge-case",
            src.dir.display(),
            cands.len(),
            cands
                .iter()
                .map(|c| c.1.case.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Enough recorded runs, each with a judge call for every queue of the set:
/// replaying a run twice would show a spread never measured, and a missing
/// queue means the set changed since the recording.
fn check_runs(
    path: &Path,
    cassette: &Cassette,
    set: &LabeledSet,
    runs: u32,
) -> Result<(), Unavailable> {
    let variants = cassette.runs.len() as u32;
    if runs > variants {
        return Err(Unavailable::Refused(format!(
            "--runs {runs}, but {} holds {variants} recorded run(s): replaying run {variants} would serve run 0's answers again and show a run-to-run spread that was never measured; record more runs or lower --runs",
            path.display()
        )));
    }
    for (r, run) in cassette.runs.iter().enumerate().take(runs as usize) {
        let have: std::collections::BTreeSet<&str> = run
            .interactions
            .iter()
            .map(|i| i.call_key.as_str())
            .collect();
        let missing: Vec<&str> = set
            .queues
            .iter()
            .filter(|q| !have.contains(call_key(&q.id).as_str()))
            .map(|q| q.id.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(Unavailable::Refused(format!(
                "{} run {r} has no judge call for {} of the {} queues ({}); the set changed since it was recorded: record again",
                path.display(),
                missing.len(),
                set.queues.len(),
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

/// The sampling settings a recording was made with, so the replayed requests
/// are byte-for-byte the recorded ones (strict mode hashes the body): the
/// temperature from `made`, the structured-output dialect from the recorded
/// request bodies (`response_format.type` "json_object" is llama-cpp-python's).
fn recorded_sampling(c: &Cassette) -> harness::model::Sampling {
    use harness::model::StructuredOutput;
    let json_object = c
        .runs
        .iter()
        .flat_map(|r| &r.interactions)
        .filter_map(|i| i.request.body.as_ref())
        .any(|b| b["response_format"]["type"] == "json_object");
    harness::model::Sampling {
        temperature: c.made.temperature,
        seed: None,
        structured_output: if json_object {
            StructuredOutput::JsonObject
        } else {
            StructuredOutput::JsonSchema
        },
    }
}

/// Replay the judge's recorded answers through the same client code. The
/// server runs in strict mode for recorded cassettes: each request body must
/// hash to the recorded one, so the answers replayed are answers to exactly
/// the request the harness would send today.
pub async fn run_replay(
    set: &LabeledSet,
    src: &ReplaySource,
    runs: u32,
    prices: &PriceTable,
) -> Result<(JudgeRun, Captured), Unavailable> {
    let (path, cassette) = select_cassette(src, set, runs)?;
    let (model, protocol, case, made) = (
        cassette.model.clone(),
        cassette.protocol,
        cassette.case.clone(),
        cassette.made.clone(),
    );
    let strict = made.how == MadeHow::Recorded;
    let sampling = recorded_sampling(&cassette);
    let recs = Recordings::from_cassettes([(path.clone(), cassette)])
        .map_err(|e| Unavailable::Refused(e.to_string()))?;
    // Recorded latencies, read before the server takes the recordings.
    let latency = recorded_latencies(&recs, &case, set, runs);
    let opts = ReplayOptions {
        strict,
        latency_scale: 0.0,
        capture: src.capture,
        ..Default::default()
    };
    let server = ReplayServer::start(recs, opts)
        .await
        .map_err(|e| Unavailable::Config(e.to_string()))?;
    let price = price_of(prices, &model);
    let mut checks = Vec::new();
    let mut captured = Vec::new();
    for run in 0..runs {
        let cfg = EndpointConfig {
            base_url: server.base_url_for(&case, run),
            protocol,
            api_key_env: None,
            request_timeout_ms: 30_000,
            retry: Default::default(),
        };
        let client = ModelClient::new(cfg)
            .map_err(|e| Unavailable::Config(e.to_string()))?
            .with_sampling(sampling);
        let lat = &latency[run as usize];
        checks.push(replay_run(&client, set, &model, lat, price).await);
        captured.push(server.take_captured(&case, run));
    }
    refuse_misses(&checks, &path)?;
    let how = match made.how {
        MadeHow::Recorded => "recorded",
        MadeHow::Scripted => "SCRIPTED STAND-IN",
    };
    let source = format!(
        "replay of {} (made.how = {how}, by {}, {}; strict body match: {strict})",
        path.display(),
        made.by,
        made.when
    );
    let run = JudgeRun {
        model,
        protocol,
        source,
        priced: price.is_some(),
        checks,
        recorded_to: None,
    };
    Ok((run, captured))
}

/// One replayed run: every queue's judge call, with the latency it had
/// when recorded.
async fn replay_run(
    client: &ModelClient,
    set: &LabeledSet,
    model: &str,
    latency: &[u64],
    price: Option<Price>,
) -> Vec<JudgeCheck> {
    let mut row = Vec::new();
    for (qi, q) in set.queues.iter().enumerate() {
        let req = request_for(q, model);
        let lat = latency[qi];
        match client.call(&req).await {
            Ok(reply) => row.push(check_from_reply(q, &reply.text, reply.usage, price, lat)),
            Err(e) => row.push(failed(q, format!("replay: {e}"), lat)),
        }
    }
    row
}

/// The latency each recorded judge call had live, per run and queue (0 when
/// there is none). A judge's recording has one reply per key: the body is
/// only read to choose among conditional ones.
fn recorded_latencies(recs: &Recordings, case: &str, set: &LabeledSet, runs: u32) -> Vec<Vec<u64>> {
    (0..runs)
        .map(|r| {
            (set.queues.iter())
                .map(|q| {
                    recs.get(case, r, &call_key(&q.id), b"")
                        .map_or(0, |i| i.latency_ms)
                })
                .collect()
        })
        .collect()
}

/// In strict mode a miss means the request changed since the recording
/// (the judge prompt, the schema, or a queue's text): the recorded answers
/// are answers to another question. Refuse rather than report them.
fn refuse_misses(checks: &[Vec<JudgeCheck>], path: &Path) -> Result<(), Unavailable> {
    let misses: Vec<String> = checks
        .iter()
        .flatten()
        .filter_map(|c| {
            c.outcome
                .as_ref()
                .err()
                .filter(|e| e.0.contains("recording miss"))
                .map(|e| format!("{}: {e}", c.queue_id))
        })
        .collect();
    if !misses.is_empty() {
        return Err(Unavailable::Refused(format!(
            "{} of {} judge requests do not match {} (strict replay): the judge request or the queues changed since it was recorded; record again. First: {}",
            misses.len(),
            checks.iter().flatten().count(),
            path.display(),
            misses[0]
        )));
    }
    Ok(())
}

/// A model name as a case-id segment: A-Z a-z 0-9 - _ . only.
pub fn slug(model: &str) -> String {
    let s: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    let max = 100usize;
    if s.is_empty() {
        "model".into()
    } else {
        s.chars().take(max).collect()
    }
}

/// Today's date (UTC) as YYYY-MM-DD, for `made.when`.
pub fn today_utc() -> String {
    let days = chrono::Utc::now().timestamp().div_euclid(86_400);
    civil_from_days(days)
}

/// The date `z` days after 1970-01-01, as YYYY-MM-DD.
fn civil_from_days(z: i64) -> String {
    chrono::DateTime::from_timestamp(z.saturating_mul(86_400), 0)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "1970-01-01".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::queues;
    use harness::model::request_body;
    use serde_json::Value;

    fn set() -> LabeledSet {
        queues::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/drift-calibration"))
            .unwrap()
    }

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calibrate")
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), "1970-01-01");
        assert_eq!(civil_from_days(19_782), "2024-02-29");
        assert_eq!(civil_from_days(20_000), "2024-10-04");
    }

    #[test]
    fn stand_in_fixture_says_it_is_scripted_and_a_stand_in() {
        let c = Cassette::load(fixtures().join("stand-in-judge/recordings/cassette.json")).unwrap();
        assert_eq!(c.made.how, MadeHow::Scripted);
        assert!(c.made.notes.contains("STAND-IN"), "{}", c.made.notes);
        // And it is what its scenario compiles to.
        let compiled =
            crate::scripted::compile(&fixtures().join("stand-in-judge/scenario.json")).unwrap();
        assert_eq!(compiled, std::fs::read_to_string(fixtures().join("stand-in-judge/recordings/cassette.json")).unwrap(), "run `bench script bench/tests/fixtures/calibrate/stand-in-judge --out bench/tests/fixtures/calibrate/stand-in-judge/recordings/cassette.json`");
    }

    #[test]
    fn scripted_cassettes_are_refused_as_calibration() {
        let s = set();
        let src = ReplaySource {
            dir: fixtures().join("stand-in-judge/recordings"),
            case: None,
            allow_scripted: false,
            capture: false,
        };
        let e = select_cassette(&src, &s, 1).unwrap_err();
        assert!(matches!(e, Unavailable::NoRecordings(_)), "{e:?}");
        assert!(
            e.message().contains("made.how = \"scripted\"")
                && e.message().contains("no recordings of a real judge yet"),
            "{}",
            e.message()
        );
        // An empty or missing directory: no recordings, not an error.
        let empty = tempfile::tempdir().unwrap();
        for d in [empty.path().to_path_buf(), empty.path().join("nope")] {
            let src = ReplaySource {
                dir: d,
                case: None,
                allow_scripted: false,
                capture: false,
            };
            assert!(matches!(
                select_cassette(&src, &s, 1),
                Err(Unavailable::NoRecordings(_))
            ));
        }
    }

    #[test]
    fn too_many_runs_or_missing_queues_are_refused() {
        let s = set();
        let src = ReplaySource {
            dir: fixtures().join("stand-in-judge/recordings"),
            case: None,
            allow_scripted: true,
            capture: false,
        };
        let e = select_cassette(&src, &s, 5).unwrap_err();
        assert!(
            e.message().contains("--runs 5") && e.message().contains("never measured"),
            "{}",
            e.message()
        );
        let mut small = s.clone();
        small.queues[0].id = "not-recorded".into();
        let e = select_cassette(&src, &small, 1).unwrap_err();
        assert!(e.message().contains("not-recorded"), "{}", e.message());
    }

    /// The pipeline end to end on the scripted stand-in: request built by the
    /// harness, sent through ModelClient to the replay server, parsed by
    /// drift::parse. And the request bodies the server received hold the
    /// goal and the queue and nothing else.
    #[test]
    fn judge_sees_only_goal_and_queue_on_the_wire() {
        let s = set();
        let src = ReplaySource {
            dir: fixtures().join("stand-in-judge/recordings"),
            case: None,
            allow_scripted: true,
            capture: true,
        };
        let prices: PriceTable = [(
            "stand-in-judge".to_string(),
            Price {
                input_usd_per_mtok: 1.0,
                output_usd_per_mtok: 2.0,
            },
        )]
        .into();
        let (run, captured) = rt().block_on(run_replay(&s, &src, 2, &prices)).unwrap();
        assert_eq!(run.checks.len(), 2);
        assert!(run.source.contains("SCRIPTED STAND-IN"));
        for row in &run.checks {
            assert_eq!(row.len(), s.queues.len());
            for c in row {
                let dc = c
                    .outcome
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{}: {e}", c.queue_id));
                assert!((0.0..=1.0).contains(&dc.drift_score));
                // 900 in + 250 out at $1 / $2 per MTok.
                assert!(
                    (c.cost_usd.unwrap() - 0.0014).abs() < 1e-12,
                    "{:?}",
                    c.cost_usd
                );
                assert_eq!(c.latency_ms, 1500);
            }
        }
        for (r, bodies) in captured.iter().enumerate() {
            assert_eq!(bodies.len(), s.queues.len(), "run {r}");
            for (q, cap) in s.queues.iter().zip(bodies) {
                assert_eq!(cap.call_key, call_key(&q.id));
                let body: Value = serde_json::from_str(&cap.body).unwrap();
                // 1. Exactly the harness's judge request, nothing added.
                assert_eq!(
                    body,
                    request_body(run.protocol, &request_for(q, &run.model))
                );
                // 2. Its parts: the model, the token cap, the schema, the
                //    judge system prompt, and ONE user message holding the
                //    goal and the queue, built here from the file by hand.
                let keys: Vec<&str> = body
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(
                    keys,
                    ["model", "max_tokens", "messages", "response_format"],
                    "{keys:?}"
                );
                let msgs = body["messages"].as_array().unwrap();
                assert_eq!(msgs.len(), 2);
                assert_eq!(msgs[0]["role"], "system");
                assert_eq!(msgs[0]["content"], drift::JUDGE_SYSTEM);
                assert_eq!(msgs[1]["role"], "user");
                let mut expect = format!("<original_goal>{}</original_goal>\n<queue>\n", q.goal);
                for t in &q.queue {
                    expect.push_str(&format!("- {}: {}\n", t.id, t.description));
                }
                expect.push_str("</queue>");
                assert_eq!(msgs[1]["content"], expect);
                assert_eq!(
                    body["response_format"]["json_schema"]["schema"],
                    drift::schema()
                );
                // 3. Nothing of the label file besides goal and queue: no
                //    label, severity, off-goal list, tags, notes or domain.
                //    (The user message is checked: the fixed system prompt
                //    itself says "0.0 = fully aligned".)
                let user = msgs[1]["content"].as_str().unwrap().to_lowercase();
                for leak in [
                    "aligned", "drifted", "mild", "moderate", "severe", "hard_", "off_goal",
                    "notes", "domain",
                ] {
                    assert!(
                        !user.contains(leak),
                        "{}: the judge's message contains {leak:?}",
                        q.id
                    );
                }
                for line in q.notes.lines().filter(|l| l.trim().len() > 20) {
                    assert!(!cap.body.contains(line.trim()), "{}: notes leaked", q.id);
                }
                // 4. Nothing of any other queue.
                for other in s.queues.iter().filter(|o| o.goal != q.goal) {
                    assert!(
                        !cap.body.contains(&other.goal),
                        "{} carries {}'s goal",
                        q.id,
                        other.id
                    );
                }
            }
        }
    }

    #[test]
    fn unreadable_judge_reply_is_a_failed_check_not_aligned() {
        let q = &set().queues[0];
        let c = check_from_reply(q, "Looks fine to me.", Usage::default(), None, 5);
        assert!(c.outcome.is_err());
        assert_eq!(c.cost_usd, None);
    }

    /// The scripted stand-in judge served as a plain OpenAI "live" endpoint,
    /// and a live source pointed at it recording into a temp dir.
    fn stand_in_live(
        rt: &tokio::runtime::Runtime,
        caps: crate::live::budget::Caps,
        max_concurrency: usize,
    ) -> (ReplayServer, Cassette, tempfile::TempDir, LiveSource) {
        let fixture =
            Cassette::load(fixtures().join("stand-in-judge/recordings/cassette.json")).unwrap();
        let recs = Recordings::from_cassettes([("fixture", fixture.clone())]).unwrap();
        let server = rt
            .block_on(ReplayServer::start(
                recs,
                ReplayOptions {
                    latency_scale: 0.0,
                    ..Default::default()
                },
            ))
            .unwrap();
        let out = tempfile::tempdir().unwrap();
        let live = LiveSource {
            endpoint: server.base_url_for(&fixture.case, 0),
            protocol: Protocol::Openai,
            model: fixture.model.clone(),
            api_key_env: None,
            timeout_ms: 10_000,
            record_dir: Some(out.path().to_path_buf()),
            caps,
            max_concurrency,
            sampling: Default::default(),
        };
        (server, fixture, out, live)
    }

    #[test]
    fn live_judge_calls_stop_at_the_command_wide_cap() {
        // The stand-in as the endpoint again; a token cap that lets a few
        // calls through: the rest are never made and the calibration is
        // refused as incomplete, with nothing recorded.
        let s = set();
        let rt = rt();
        let (_server, _fixture, out, live) = stand_in_live(
            &rt,
            crate::live::budget::Caps::new(0.0, Some(20_000)).unwrap(),
            1,
        );
        let e = rt
            .block_on(run_live(&s, &live, 1, &PriceTable::new()))
            .unwrap_err();
        assert!(
            matches!(e, Unavailable::Refused(_))
                && e.message().contains("--max-tokens 20000")
                && e.message().contains("judge checks were not made"),
            "{e:?}"
        );
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }

    #[test]
    fn live_endpoint_calls_go_through_the_model_client_and_can_be_recorded() {
        // A stand-in "live" endpoint: the replay server answering the
        // scripted fixture, addressed as a plain OpenAI base URL. What is
        // tested is the live code path (client, parse, --record); the answers
        // are the stand-in's, and the cassette written is checked, not kept.
        let s = set();
        let rt = rt();
        // The stand-in is unpriced: $0 to the proxy, bounded by tokens.
        let (_server, fixture, out, live) = stand_in_live(
            &rt,
            crate::live::budget::Caps::new(1.0, Some(10_000_000)).unwrap(),
            2,
        );
        let run = rt
            .block_on(run_live(&s, &live, 1, &PriceTable::new()))
            .unwrap();
        assert!(!run.priced);
        assert!(run.checks[0]
            .iter()
            .all(|c| c.outcome.is_ok() && c.cost_usd.is_none()));
        let written = Cassette::load(run.recorded_to.as_ref().unwrap()).unwrap();
        assert_eq!(
            written.case,
            format!("{CASE_PREFIX}{}", slug(&fixture.model))
        );
        assert_eq!(written.made.how, MadeHow::Recorded);
        let it = &written.runs[0].interactions[0];
        assert_eq!(it.call_key, call_key(&s.queues[0].id));
        // The recorded request is the harness's request, so strict replay of
        // the written cassette serves the same answers back.
        let strict = ReplaySource {
            dir: out.path().to_path_buf(),
            case: None,
            allow_scripted: false,
            capture: false,
        };
        let (replayed, _) = rt
            .block_on(run_replay(&s, &strict, 1, &PriceTable::new()))
            .unwrap();
        for (a, b) in replayed.checks[0].iter().zip(&run.checks[0]) {
            assert_eq!(a.outcome, b.outcome);
        }
        // Edit one queue's text: the recording now answers another question
        // and strict replay refuses it instead of reporting stale answers.
        let mut edited = s.clone();
        edited.queues[3].queue[0].description.push_str(" (edited)");
        let e = rt
            .block_on(run_replay(&edited, &strict, 1, &PriceTable::new()))
            .unwrap_err();
        assert!(
            matches!(e, Unavailable::Refused(_))
                && e.message().contains("record again")
                && e.message().contains(&edited.queues[3].id),
            "{e:?}"
        );
    }

    /// A live source at `endpoint` (an OpenAI base URL), unpriced, bounded
    /// by tokens, recording nothing.
    fn live_at(endpoint: String, model: &str) -> LiveSource {
        LiveSource {
            endpoint,
            protocol: Protocol::Openai,
            model: model.into(),
            api_key_env: None,
            timeout_ms: 5_000,
            record_dir: None,
            caps: crate::live::budget::Caps::new(1.0, Some(10_000_000)).unwrap(),
            max_concurrency: 2,
            sampling: Default::default(),
        }
    }

    /// An endpoint whose replies are malformed: an envelope that is not the
    /// protocol's, and a well-formed reply whose judge text lacks a field.
    /// Each is a failed check whose error says what is wrong (the field),
    /// never a panic, and the calibration returns within its clock (the
    /// client's retries of an unparseable 200 included).
    #[test]
    fn a_malformed_live_reply_is_a_failed_check_naming_the_field() {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let mut s = set();
        s.queues.truncate(2);
        let rt = rt();
        let reply = |content: &str| {
            serde_json::json!({"id": "c1", "object": "chat.completion", "model": "judge-m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        };
        for (body, said) in [
            (
                serde_json::json!({"id": "c1", "choices": "not a list"}),
                "model call failed",
            ),
            (
                reply(r#"{"reasoning": "fine", "off_goal_task_ids": []}"#),
                "missing field `drift_score`",
            ),
            (
                reply(r#"{"reasoning": "fine", "off_goal_task_ids": [], "drift_score": "high"}"#),
                "drift_score",
            ),
        ] {
            let server = rt.block_on(MockServer::start());
            rt.block_on(
                Mock::given(method("POST"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(&body))
                    .mount(&server),
            );
            let live = live_at(format!("{}/v1", server.uri()), "judge-m");
            let t0 = std::time::Instant::now();
            let run = rt
                .block_on(run_live(&s, &live, 1, &PriceTable::new()))
                .unwrap();
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(60),
                "{:?}",
                t0.elapsed()
            );
            for c in &run.checks[0] {
                let e = c
                    .outcome
                    .as_ref()
                    .expect_err("a malformed reply is no check");
                assert!(e.0.contains(said), "{body}: {e}");
            }
            // Every call reached the endpoint with the judge's model.
            let got = rt.block_on(server.received_requests()).unwrap();
            assert!(!got.is_empty());
            for r in got {
                let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                assert_eq!(v["model"], "judge-m");
            }
        }
    }

    /// What is checked before anything is sent: the model on the wire is
    /// `--model`, and the body is the drift judge's request for the queue
    /// (the rule of audit.judge_requests).
    #[test]
    fn a_live_judge_request_is_checked_before_it_is_sent() {
        let s = set();
        let reqs: Vec<ModelRequest> = s.queues.iter().map(|q| request_for(q, "m")).collect();
        let c = ModelClient::new(EndpointConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            protocol: Protocol::Openai,
            api_key_env: None,
            request_timeout_ms: 1000,
            retry: Default::default(),
        })
        .unwrap();
        check_live_requests(&s, &reqs, &c, "m").unwrap();
        let e = check_live_requests(&s, &reqs, &c, "other").unwrap_err();
        assert!(e.message().contains("field `model`"), "{e:?}");
        assert!(e.message().contains("nothing was sent"), "{e:?}");
        // A request built for another queue: its goal is not this queue's.
        let mut shifted = reqs.clone();
        shifted.rotate_left(1);
        let e = check_live_requests(&s, &shifted, &c, "m").unwrap_err();
        assert!(e.message().contains("original goal"), "{e:?}");
    }
}
