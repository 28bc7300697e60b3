//! Live runs: the harness against a real model endpoint, through the
//! bench's own proxy (`proxy`), under one command-wide cap (`budget`), with
//! the traffic optionally written as cassettes (`recorder`).
//!
//! Used by `bench record` and `bench diverge --endpoint` (both lay
//! `overlay` over each case), by `bench run` / `bench ab` with `--endpoint`, and
//! by `bench calibrate --endpoint` (its judge calls go through the same
//! proxy, so there is one budget and one key-handling path, not two).
//!
//! `LiveTarget` is what the runner sees: `begin` registers a case-run with the
//! proxy (from the case-run's own run spec: protocol, price table, timeout)
//! and returns its `--base-url` and the environment variables to remove from
//! the harness process; `Session::end` collects the traffic, marks a case-run
//! whose call the cap refused as incomplete, and hands a finished case-run to
//! the recorder. Cases with no cassette yet load through `load_case_live`.

pub mod budget;
pub mod overlay;
pub mod proxy;
pub mod recorder;
pub mod replay_suite;

use crate::suite::{self, Case, ExpectedEnding, LoadError, Suite};
use budget::Caps;
use clap::Args;
use harness::ending::Ending;
use harness::model::Protocol;
use harness::replay::{Captured, Cassette, Made, MadeHow, RunRecording};
use proxy::{LiveProxy, ProxyConfig, RunReg};
use recorder::{CaseMeta, CaseWritten, Recorder};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The flags `bench run` and `bench ab` take to run live.
#[derive(Args, Debug, Clone, Default)]
pub struct LiveArgs {
    /// Run live: send the harness's model calls through the bench's proxy to
    /// this endpoint instead of replaying cassettes (OpenAI-compatible base
    /// URL ends in /v1; Anthropic's has none). Needs --max-usd.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Name of the environment variable holding the endpoint's API key (never
    /// the key). The proxy adds it; the harness runs without it.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Command-wide spending cap in USD over every case-run (required with
    /// --endpoint); priced with each case's run-spec price table.
    #[arg(long)]
    pub max_usd: Option<f64>,
    /// Command-wide cap in tokens (all four usage fields, every case-run): the
    /// guard for a model priced at $0.
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// With --endpoint: write each case's live traffic as a cassette, DIR/<case>.json.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Hybrid replay (with --endpoint, --protocol and --max-usd): each
    /// case-run is answered from its recording while its requests match it
    /// (call key and recording conditions); from the first call that does
    /// not, the rest of that case-run goes live to --endpoint. The traffic
    /// of every case that went live is written under --out as cassettes and
    /// as a suite that replays it offline.
    #[arg(long)]
    pub hybrid: bool,
    /// With --hybrid: the protocol --endpoint speaks; every case-run must
    /// speak it.
    #[arg(long, value_enum)]
    pub protocol: Option<crate::cli::ProtocolArg>,
    /// With --endpoint: the only model a live call may ask for; a call for
    /// another is refused before anything is sent (and its case-run is not
    /// measured).
    #[arg(long)]
    pub model: Option<String>,
}

/// Validated live settings.
#[derive(Debug, Clone)]
pub struct LiveSettings {
    pub endpoint: String,
    pub api_key_env: Option<String>,
    pub caps: Caps,
    /// `--hybrid --protocol P`: replay first, live from the first call the
    /// recording did not see; the endpoint speaks P.
    pub hybrid: Option<Protocol>,
    /// `--model`: the only model a live call may ask for.
    pub model: Option<String>,
}

/// Check the endpoint, the key variable's name and the caps. Errors are
/// usage errors naming the flag.
pub fn settings(
    endpoint: &str,
    api_key_env: Option<&str>,
    max_usd: Option<f64>,
    max_tokens: Option<u64>,
) -> Result<LiveSettings, String> {
    proxy::endpoint_host(endpoint).map_err(|e| e.to_string())?;
    if let Some(n) = api_key_env {
        proxy::check_env_name(n).map_err(|e| e.to_string())?;
        if std::env::var_os(n).is_none_or(|v| v.is_empty()) {
            return Err(format!(
                "--api-key-env {n}: the variable is not set or empty"
            ));
        }
    }
    let max_usd = max_usd.ok_or(
        "--endpoint needs --max-usd: a live command always has a command-wide cap (add --max-tokens for a model priced at $0)",
    )?;
    Ok(LiveSettings {
        endpoint: endpoint.to_string(),
        api_key_env: api_key_env.map(str::to_string),
        caps: Caps::new(max_usd, max_tokens).map_err(|e| e.to_string())?,
        hybrid: None,
        model: None,
    })
}

impl LiveArgs {
    /// `None` for a replay run; errors are usage errors.
    pub fn settings(&self) -> Result<Option<LiveSettings>, String> {
        let Some(e) = &self.endpoint else {
            if self.hybrid {
                return Err("--hybrid needs --endpoint URL, --protocol P and --max-usd X: the calls the recording did not see go live there, under that cap".into());
            }
            if self.api_key_env.is_some()
                || self.max_usd.is_some()
                || self.max_tokens.is_some()
                || self.record.is_some()
                || self.protocol.is_some()
                || self.model.is_some()
            {
                return Err(
                    "--api-key-env, --max-usd, --max-tokens, --record, --protocol and --model go with --endpoint"
                        .into(),
                );
            }
            return Ok(None);
        };
        let mut s = settings(
            e,
            self.api_key_env.as_deref(),
            self.max_usd,
            self.max_tokens,
        )?;
        if let Some(m) = &self.model {
            if m.trim().is_empty() {
                return Err("--model: expected the model name".into());
            }
            s.model = Some(m.clone());
        }
        match (self.hybrid, self.protocol) {
            (true, Some(p)) => s.hybrid = Some(overlay::protocol(p)),
            (true, None) => {
                return Err(
                    "--hybrid needs --protocol openai|anthropic: the protocol --endpoint speaks"
                        .into(),
                )
            }
            (false, Some(_)) => {
                return Err(
                    "--protocol goes with --hybrid (a live run speaks each case's own protocol)"
                        .into(),
                )
            }
            (false, None) => {}
        }
        if s.hybrid.is_some() && self.record.is_some() {
            return Err(
                "--record does not go with --hybrid: hybrid writes what went live under --out"
                    .into(),
            );
        }
        Ok(Some(s))
    }
}

/// Why a live case-run cannot begin; each message names the spec file or
/// the flag to fix.
#[derive(Debug, thiserror::Error)]
pub enum BeginError {
    #[error("{shown}: {cause}")]
    Io {
        shown: String,
        cause: std::io::Error,
    },
    #[error("{shown}: {}", .cause.message())]
    Toml {
        shown: String,
        cause: toml::de::Error,
    },
    #[error("{0}: field `model`: expected a table")]
    ModelNotTable(String),
    #[error("--seed {seed}: seed + run {run} is past the largest seed a spec takes")]
    SeedPast { seed: u64, run: u32 },
    #[error("{0}")]
    Rewrite(toml::ser::Error),
    #[error("{}: field `{}`: expected {}", .0.file, .0.field, .0.expected)]
    Spec(harness::spec::SpecError),
    #[error(
        "{shown}: field `model.protocol`: expected {} (--hybrid --protocol: what --endpoint speaks), found {}",
        .speaks.as_str(),
        .found.as_str()
    )]
    HybridProtocol {
        shown: String,
        speaks: Protocol,
        found: Protocol,
    },
    /// The case's replay server, as `case_run::Servers` refused it.
    #[error("{0}")]
    Recording(String),
}

/// Start the proxy for a command.
pub async fn start_proxy(s: &LiveSettings, max_in_flight: usize) -> Result<Arc<LiveProxy>, String> {
    LiveProxy::start(ProxyConfig {
        endpoint: s.endpoint.clone(),
        api_key_env: s.api_key_env.clone(),
        caps: s.caps,
        max_in_flight,
        live_model: s.model.clone(),
    })
    .await
    .map(Arc::new)
    .map_err(|e| e.to_string())
}

/// How a live command's case-runs reach the model.
pub struct LiveTarget {
    pub proxy: Arc<LiveProxy>,
    /// `bench ab`'s arm: case-runs are registered as `<lane>~<case>`.
    lane: Option<String>,
    recorder: Option<Arc<Recorder>>,
    /// `bench record --seed S`: run i's spec gets `model.seed = S + i`.
    seed_base: Option<u64>,
    /// Removed from every harness process's environment.
    key_env: Option<String>,
    cut_short: AtomicU64,
    not_started: AtomicU64,
    /// Hybrid: the replay servers whose recordings answer first, and the
    /// protocol the endpoint speaks.
    hybrid: Option<(Arc<crate::servers::Servers>, Protocol)>,
}

/// How a live or hybrid case-run's model calls were answered: what a
/// verdict on it rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct LiveCalls {
    /// Calls its recording answered (hybrid).
    pub replayed: u64,
    /// Calls sent to the endpoint, and what the command-wide cap booked them at.
    pub live: u64,
    pub live_usd: f64,
    /// Hybrid: why the recording stopped answering (the replay's miss for
    /// the first call it did not see); every later call went live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
}

/// One registered case-run. Dropped without `end` (the case-run failed
/// before it had a report), it unregisters itself and tells the recorder.
pub struct Session {
    target: Arc<LiveTarget>,
    key: String,
    case: String,
    run: u32,
    pub base_url: String,
    pub env_remove: Vec<String>,
    meta: CaseMeta,
    ended: bool,
    /// Hybrid: the server whose captures of this case-run are dropped at its end.
    replay_server: Option<Arc<harness::replay::ReplayServer>>,
}

/// What a finished live case-run leaves for the scorer.
pub struct RunEnd {
    /// Set when the command-wide cap refused one of its calls: the case-run
    /// is incomplete and must count as failed.
    pub refused: Option<String>,
    /// Set when a live call got no model answer (the endpoint failed, or the
    /// proxy refused to send it): the case-run measured no model behaviour.
    pub not_measured: Option<String>,
    pub captured: Vec<Captured>,
    pub calls: LiveCalls,
}

impl LiveTarget {
    pub fn new(
        proxy: Arc<LiveProxy>,
        lane: Option<&str>,
        recorder: Option<Arc<Recorder>>,
        seed_base: Option<u64>,
        key_env: Option<String>,
    ) -> Arc<LiveTarget> {
        Arc::new(LiveTarget {
            proxy,
            lane: lane.map(str::to_string),
            recorder,
            seed_base,
            key_env,
            cut_short: AtomicU64::new(0),
            not_started: AtomicU64::new(0),
            hybrid: None,
        })
    }

    /// The same target, hybrid: each case-run asks `servers` (its recording)
    /// first and goes live from the first call it did not see.
    pub fn hybrid(
        proxy: Arc<LiveProxy>,
        lane: Option<&str>,
        recorder: Arc<Recorder>,
        servers: Arc<crate::servers::Servers>,
        protocol: Protocol,
        key_env: Option<String>,
    ) -> Arc<LiveTarget> {
        let mut t = Arc::into_inner(LiveTarget::new(proxy, lane, Some(recorder), None, key_env))
            .expect("a target just made has one owner");
        t.hybrid = Some((servers, protocol));
        Arc::new(t)
    }

    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// Once the cap has refused a call no new case-run starts: the reason.
    pub fn stopped(&self) -> Option<String> {
        self.proxy.budget().cap_reached().map(|r| {
            format!(
                "not started: the command-wide cap was reached ({})",
                r.message
            )
        })
    }

    /// A case-run that `stopped` kept from starting.
    pub fn note_not_started(&self, case: &str, run: u32) {
        self.not_started.fetch_add(1, Ordering::SeqCst);
        if let Some(r) = &self.recorder {
            // The recorder needs the case's facts only when a run is kept;
            // a run that never ran is a gap, whatever they are.
            r.add(
                case,
                run,
                CaseMeta {
                    protocol: Protocol::Openai,
                    model: String::new(),
                    temperature: None,
                    seed_base: None,
                },
                Err(recorder::Gap::NotRun),
            );
        }
    }

    pub fn cut_short(&self) -> u64 {
        self.cut_short.load(Ordering::SeqCst)
    }

    pub fn not_started(&self) -> u64 {
        self.not_started.load(Ordering::SeqCst)
    }

    /// Register case-run `run` of `case_id` whose (overlaid) spec is at
    /// `spec_path`. With a seed base, the spec's `model.seed` is set first.
    pub fn begin(
        self: &Arc<Self>,
        case: &Case,
        run: u32,
        spec_path: &Path,
    ) -> Result<Session, BeginError> {
        let case_id = case.id();
        let shown = spec_path.display().to_string();
        let text = self.seeded_spec(spec_path, run)?;
        let dir = spec_path.parent().unwrap_or(Path::new("."));
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let spec = harness::spec::RunSpec::parse(&text, &shown, &dir).map_err(BeginError::Spec)?;
        let key = match &self.lane {
            Some(l) => format!("{l}~{case_id}"),
            None => case_id.to_string(),
        };
        let (replay, replay_server) = self.hybrid_replay(case, run, &spec, &shown)?;
        // Answer 504 a second before the harness's own timeout would fire,
        // so the harness sees the timeout as a retryable 5xx and no second
        // upstream call starts while the first is still running.
        let timeout = Duration::from_millis(
            (spec.model.request_timeout_s * 1000)
                .saturating_sub(1000)
                .max(1000),
        );
        let base_url = self.proxy.register(
            &key,
            run,
            RunReg {
                protocol: spec.model.protocol,
                prices: spec.prices.clone(),
                timeout,
                record: self.recorder.is_some(),
                replay,
            },
        );
        let env_remove = self.env_remove(&spec);
        Ok(Session {
            target: self.clone(),
            key,
            case: case_id.to_string(),
            run,
            base_url,
            env_remove,
            meta: CaseMeta {
                protocol: spec.model.protocol,
                model: spec.model.executor.clone(),
                temperature: spec.model.temperature,
                seed_base: self.seed_base,
            },
            ended: false,
            replay_server,
        })
    }

    /// The spec's text at `spec_path`; with a seed base, first rewritten
    /// with `model.seed` = seed base + `run`, so each run of a live case
    /// asks the endpoint for its own reproducible sample.
    fn seeded_spec(&self, spec_path: &Path, run: u32) -> Result<String, BeginError> {
        let shown = || spec_path.display().to_string();
        let io = |cause| BeginError::Io {
            shown: shown(),
            cause,
        };
        let text = std::fs::read_to_string(spec_path).map_err(io)?;
        let Some(s) = self.seed_base else {
            return Ok(text);
        };
        let mut t: toml::Table = text.parse().map_err(|cause| BeginError::Toml {
            shown: shown(),
            cause,
        })?;
        let m = t
            .entry("model")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        let Some(m) = m.as_table_mut() else {
            return Err(BeginError::ModelNotTable(shown()));
        };
        let seed = s
            .checked_add(run as u64)
            .filter(|x| *x <= i64::MAX as u64)
            .ok_or(BeginError::SeedPast { seed: s, run })?;
        m.insert("seed".into(), toml::Value::Integer(seed as i64));
        let text = toml::to_string(&t).map_err(BeginError::Rewrite)?;
        std::fs::write(spec_path, &text).map_err(io)?;
        Ok(text)
    }

    /// Hybrid: the case-run's replay base URL and its server (None, None
    /// when not hybrid). The case must speak what --endpoint speaks, or its
    /// first live call would be sent in the wrong protocol.
    fn hybrid_replay(
        &self,
        case: &Case,
        run: u32,
        spec: &harness::spec::RunSpec,
        shown: &str,
    ) -> Result<(Option<String>, Option<Arc<harness::replay::ReplayServer>>), BeginError> {
        let Some((servers, protocol)) = &self.hybrid else {
            return Ok((None, None));
        };
        if spec.model.protocol != *protocol {
            return Err(BeginError::HybridProtocol {
                shown: shown.to_string(),
                speaks: *protocol,
                found: spec.model.protocol,
            });
        }
        let server = servers.server_for(case).map_err(BeginError::Recording)?;
        Ok((Some(server.base_url_for(case.id(), run)), Some(server)))
    }

    /// The variables removed from the harness's environment on top of every
    /// provider key variable, which `case_run::process::start` removes from every
    /// harness process: the named ones may be any name.
    fn env_remove(&self, spec: &harness::spec::RunSpec) -> Vec<String> {
        let mut env_remove: Vec<String> = self.key_env.iter().cloned().collect();
        if let Some(n) = &spec.model.api_key_env {
            if !env_remove.contains(n) {
                env_remove.push(n.clone());
            }
        }
        env_remove
    }
}

impl Session {
    /// The case-run is over: `report` is its report.json (None when it left
    /// none), `exit_code` the harness's.
    pub fn end(mut self, report: Option<&harness::report::Report>, exit_code: i32) -> RunEnd {
        self.ended = true;
        self.finish(report, exit_code, None)
    }

    fn finish(
        &self,
        report: Option<&harness::report::Report>,
        exit_code: i32,
        failed: Option<&str>,
    ) -> RunEnd {
        let t = &self.target;
        let traffic = t.proxy.finish(&self.key, self.run);
        t.proxy.case_run_done();
        if let Some(s) = &self.replay_server {
            // Its copy of what the proxy already captured.
            drop(s.take_captured(&self.case, self.run));
        }
        let not_measured = not_measured(&traffic);
        let refused = traffic.refused.first().map(|m| {
            format!("incomplete: the command-wide cap refused a call of this case-run ({m})")
        });
        if refused.is_some() {
            t.cut_short.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(rec) = &t.recorder {
            // The endpoint's failure first, as the case-run's cause has it.
            let gap = not_measured
                .clone()
                .or(refused.clone())
                .or(failed.map(str::to_string));
            let variant = self.recording(&traffic, gap, report, exit_code);
            rec.add(&self.case, self.run, self.meta.clone(), variant);
        }
        RunEnd {
            refused,
            not_measured,
            captured: traffic.captured,
            calls: LiveCalls {
                replayed: traffic.replayed,
                live: traffic.live,
                // A call still in flight is counted at its reservation (the
                // most it can be booked at; the budget books what it cost
                // when it answers).
                live_usd: traffic.live_usd + traffic.in_flight_usd,
                diverged: traffic.diverged,
            },
        }
    }
}

impl Session {
    /// What the recorder keeps of this case-run: its recording, or why the
    /// cassette has a gap for it (`gap`: not measured, refused or failed,
    /// the first of them that holds; then exchanges that were not kept, or
    /// no report).
    fn recording(
        &self,
        traffic: &proxy::RunTraffic,
        gap: Option<String>,
        report: Option<&harness::report::Report>,
        exit_code: i32,
    ) -> Result<RunRecording, recorder::Gap> {
        if let Some(g) = gap {
            return Err(recorder::Gap::Incomplete(g));
        }
        if traffic.dropped > 0 {
            return Err(recorder::Gap::Dropped(traffic.dropped));
        }
        match report {
            None => Err(recorder::Gap::NoReport(exit_code)),
            Some(rep) => {
                recorder::interactions(self.meta.protocol, &traffic.exchanges).map(|interactions| {
                    RunRecording {
                        run: self.run,
                        interactions,
                        outcome: Some(recorder::outcome(rep, exit_code)),
                    }
                })
            }
        }
    }
}

/// Why a case-run's traffic does not measure the model: the first live
/// call the upstream failed (no connection, dropped, unreadable or
/// over-billed reply), the endpoint left unanswered (an error status its
/// retries did not get past: overloaded, refused), the proxy rejected, or
/// one still in flight when the case-run ended (the endpoint slower than
/// the run's clock), with how many there were. An endpoint failure of any
/// kind: what the harness did next answered the failure, not the model.
fn not_measured(traffic: &proxy::RunTraffic) -> Option<String> {
    let in_flight = (traffic.in_flight > 0).then(|| {
        format!(
            "{} live call(s) still unanswered when the case-run ended: the endpoint was slower than the run's clock (counted at their reserved ${:.4})",
            traffic.in_flight, traffic.in_flight_usd
        )
    });
    traffic
        .upstream_failed
        .first()
        .or(traffic.unanswered.values().next())
        .or(traffic.rejected.first())
        .cloned()
        .or(in_flight)
        .map(|m| {
            format!(
                "{m} ({} of its live calls failed, {} left unanswered, {} refused)",
                traffic.upstream_failed.len(),
                traffic.unanswered.len() + traffic.in_flight as usize,
                traffic.rejected.len()
            )
        })
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.ended {
            self.ended = true;
            let _ = self.finish(
                None,
                -1,
                Some("the case-run failed before the harness could report"),
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Cases with no cassette yet
// ---------------------------------------------------------------------------

/// Load a case for a live command. A case whose cassette exists loads as
/// usual (`suite::load_case`, every check). A case whose cassette does not
/// exist yet (it is what the recording will make) is checked by
/// `suite::load_case_file` and carries an empty in-memory placeholder
/// cassette that nothing ever serves (a live case-run never replays); with
/// `ending = "recorded"` its expected endings are unknown until recorded.
pub fn load_case_live(dir: &Path, category: &str) -> Result<Case, LoadError> {
    let fields = suite::report_fields();
    let (file, cassette_path) = suite::load_case_file(dir, category, &fields)?;
    if cassette_path.exists() {
        return suite::load_case(dir, category, &fields);
    }
    let expected = match Ending::parse(&file.expect.ending) {
        Some(e) => ExpectedEnding::Fixed(e),
        None => ExpectedEnding::Recorded(vec![]),
    };
    let content_sha256 = harness::workspace::Workspace::open(dir)
        .map(|w| w.fingerprint())
        .map_err(|e| LoadError {
            file: dir.display().to_string(),
            field: "(dir)".into(),
            expected: e.to_string(),
        })?;
    let mut cassette = Cassette::new(
        file.id.clone(),
        Protocol::Openai,
        "placeholder",
        Made {
            how: MadeHow::Scripted,
            when: "1970-01-01".into(),
            by: "bench live (no recording yet)".into(),
            temperature: None,
            seed: None,
            notes: "placeholder for a case with no recording yet; never served".into(),
        },
    );
    cassette.runs.push(RunRecording {
        run: 0,
        interactions: vec![],
        outcome: None,
    });
    Ok(Case {
        dir: dir.to_path_buf(),
        file,
        expected,
        cassette: cassette.into(),
        cassette_path,
        content_sha256,
    })
}

/// `suite::load_suite` for a live command: the same walk, each case loaded
/// with `load_case_live`.
pub fn load_suite_live(root: &Path, category: Option<&str>) -> Result<Suite, LoadError> {
    suite::load_suite_with(root, category, load_case_live)
}

// ---------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------

/// `live.json` next to a live command's other outputs.
#[derive(Debug, Serialize)]
pub struct LiveReport {
    pub upstream: String,
    pub caps: Caps,
    pub spend: budget::Spend,
    /// Set when the command-wide cap refused a call.
    pub cap_reached: Option<CapReached>,
    pub recordings: Vec<CaseWritten>,
}

#[derive(Debug, Serialize)]
pub struct CapReached {
    pub message: String,
    /// Case-runs that had ended when the cap first refused a call.
    pub after_case_runs: u64,
    /// Case-runs a refusal cut short, and case-runs never started.
    pub cut_short: u64,
    pub not_started: u64,
}

impl LiveReport {
    pub fn collect(target: &LiveTarget, recordings: Vec<CaseWritten>) -> LiveReport {
        let p = &target.proxy;
        LiveReport {
            upstream: p.upstream_host().to_string(),
            caps: p.budget().caps(),
            spend: p.budget().spend(),
            cap_reached: p.budget().cap_reached().map(|r| CapReached {
                message: r.message,
                after_case_runs: p.cap_reached_after().unwrap_or(0),
                cut_short: target.cut_short(),
                not_started: target.not_started(),
            }),
            recordings,
        }
    }

    /// Lines for the terminal: spend in tokens and dollars, the cap, what
    /// was recorded.
    pub fn lines(&self) -> Vec<String> {
        let s = &self.spend;
        let mut v = vec![format!(
            "live: upstream {}: the command spent ${:.6} and {} tokens in {} calls ({} refused) under {}",
            self.upstream,
            s.booked_usd,
            s.booked_tokens,
            s.calls,
            s.refused,
            self.caps.describe()
        )];
        if s.over_reservation > 0 {
            v.push(format!(
                "live: WARNING: {} call(s) reported more usage than their reserved worst case",
                s.over_reservation
            ));
        }
        if let Some(c) = &self.cap_reached {
            v.push(format!(
                "live: COMMAND CAP REACHED after {} case-run(s): {}; {} case-run(s) cut short and {} not started, all counted as failed",
                c.after_case_runs, c.message, c.cut_short, c.not_started
            ));
        }
        for w in &self.recordings {
            match (&w.path, &w.error) {
                (Some(p), _) => v.push(format!(
                    "recorded {} ({} run(s)) -> {p}{}",
                    w.case,
                    w.runs_recorded,
                    if w.left_out.is_empty() {
                        String::new()
                    } else {
                        format!("; left out: {}", w.left_out.join("; "))
                    }
                )),
                (None, e) => v.push(format!(
                    "NOT RECORDED {}: {}{}",
                    w.case,
                    e.as_deref().unwrap_or("unknown"),
                    if w.left_out.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", w.left_out.join("; "))
                    }
                )),
            }
        }
        v
    }

    /// Write `dir/live.json` (atomically).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        let p = dir.join("live.json");
        let mut j = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        j.push(b'\n');
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        harness::durable::atomic_write(&p, &j).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    }
}

/// Provenance for cassettes a command records: the command, the bench's
/// version and the upstream's host (never a path, query or key).
pub fn provenance(command: &str, upstream_host: &str) -> recorder::Provenance {
    recorder::Provenance {
        by: format!(
            "{command} {} via {upstream_host}",
            env!("CARGO_PKG_VERSION")
        ),
    }
}
