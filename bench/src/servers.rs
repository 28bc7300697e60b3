//! The replay servers a batch's case-runs are answered by: one per group of
//! cases with the same faults and latency scale. Below the runner and the
//! live target, which both hand case-runs to them.

use crate::suite::Case;
use harness::replay::{
    CassetteError, FaultPlan, FaultSpecError, Recordings, ReplayError, ReplayOptions, ReplayServer,
};
use std::sync::Arc;

/// One replay server per distinct (faults, latency scale): cases that ask
/// for fault injection get a server configured for it. A group whose server
/// cannot start fails its own case-runs with the reason, never the batch:
/// one bad case does not stop the suite.
pub struct Servers {
    servers: Vec<(String, Group)>,
    failed: Vec<(String, String)>,
}

/// Case-runs one replay server is handed to before the batch starts a fresh
/// one for the group's next case-runs. wiremock 0.6 keeps a clone of every
/// request a mock matched for the mock's lifetime (its
/// `MountedMock::matched_requests`, even with request recording off): about
/// 55 KB per anchor case-run, so one server over a whole suite grew the
/// bench without bound (137 MiB at 1,600 case-runs, 49 MiB at 400). A
/// retired server ends when its last case-run drops it; nothing in flight
/// ever sees a gap.
pub const CASE_RUNS_PER_SERVER: u32 = 256;

/// One group's server (the next one is its `fresh` sibling).
struct Group {
    current: std::sync::Mutex<Arc<ReplayServer>>,
    handed_out: std::sync::atomic::AtomicU32,
}

fn server_key(c: &Case) -> String {
    format!(
        "{}|{}",
        c.file.faults.clone().unwrap_or_default(),
        c.file.latency_scale.unwrap_or(0.0)
    )
}

/// Why a replay server did not start: its faults spec, a cassette the
/// server refuses, or the server itself.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Faults(#[from] FaultSpecError),
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    #[error(transparent)]
    Start(#[from] ReplayError),
}

impl Servers {
    /// One server per group of cases that share faults and latency scale.
    /// Never fails as a whole: a group whose server cannot start is kept
    /// with the reason, which fails that group's case-runs only.
    pub async fn start(cases: &[Case]) -> Servers {
        let mut keys: Vec<String> = cases.iter().map(server_key).collect();
        keys.sort();
        keys.dedup();
        let mut servers = vec![];
        let mut failed = vec![];
        for k in keys {
            let group: Vec<&Case> = (cases.iter()).filter(|c| server_key(c) == k).collect();
            match Self::start_group(&group).await {
                Ok(Some(s)) => servers.push((
                    k,
                    Group {
                        current: std::sync::Mutex::new(Arc::new(s)),
                        handed_out: Default::default(),
                    },
                )),
                Ok(None) => {}
                Err(e) => failed.push((k, format!("cannot start the replay server: {e}"))),
            }
        }
        Servers { servers, failed }
    }

    async fn start_group(group: &[&Case]) -> Result<Option<ReplayServer>, ServerError> {
        let Some(c0) = group.first() else {
            return Ok(None);
        };
        let faults = match &c0.file.faults {
            Some(f) => FaultPlan::parse(f)?,
            None => FaultPlan::none(),
        };
        let latency_scale = c0.file.latency_scale.unwrap_or(0.0);
        start_server(group, faults, latency_scale, None)
            .await
            .map(Some)
    }

    /// The server for `c`, or why there is none.
    pub fn server_for(&self, c: &Case) -> Result<Arc<ReplayServer>, String> {
        let k = server_key(c);
        if let Some(s) = self.for_case(c) {
            return Ok(s);
        }
        Err(self
            .failed
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| "no replay server for this case".to_string()))
    }

    /// The server for the next case-run of `c`: a fresh one for its group
    /// every [`CASE_RUNS_PER_SERVER`] case-runs (when a fresh one cannot
    /// start, the current one goes on serving).
    pub async fn server_for_next_run(&self, c: &Case) -> Result<Arc<ReplayServer>, String> {
        let k = server_key(c);
        if let Some((_, g)) = self.servers.iter().find(|(kk, _)| *kk == k) {
            let n = g
                .handed_out
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n > 0 && n % CASE_RUNS_PER_SERVER == 0 {
                // The fresh server shares the cassettes, prepared once.
                let current = g.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Ok(fresh) = current.fresh().await {
                    *g.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(fresh);
                }
            }
        }
        self.server_for(c)
    }

    pub fn for_case(&self, c: &Case) -> Option<Arc<ReplayServer>> {
        let k = server_key(c);
        self.servers
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, g)| g.current.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

/// A capturing replay server for `cases` with these faults and latency
/// scale, answering every request as run `serve_as_run` when it is set
/// (`ReplayOptions::serve_as_run`): the one way the bench starts a replay
/// server for case-runs.
pub async fn start_server(
    cases: &[&Case],
    faults: FaultPlan,
    latency_scale: f64,
    serve_as_run: Option<u32>,
) -> Result<ReplayServer, ServerError> {
    let mut rec = Recordings::new();
    for c in cases {
        rec.add((*c.cassette).clone(), c.cassette_path.clone())?;
    }
    let opts = ReplayOptions {
        strict: false,
        latency_scale,
        faults,
        capture: true,
        serve_as_run,
    };
    Ok(ReplayServer::start(rec, opts).await?)
}
