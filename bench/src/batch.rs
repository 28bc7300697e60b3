//! A batch of case-runs: every case `runs_per_case` times through the real
//! harness with one overlay, at most `max_concurrency` at a time. `bench run`
//! runs one batch with no overlay; `bench knee` runs one per budget level
//! (each into its own output directory, so the state dirs never collide).
//! What to show while it runs is the caller's: each finished case-run is
//! handed to `on_done`.

use crate::runner::{self, Overlay, RunRecord, Servers};
use crate::suite::Case;
use std::path::PathBuf;
use std::sync::Arc;

pub struct Batch {
    pub cases: Arc<Vec<Case>>,
    pub servers: Arc<Servers>,
    pub harness_bin: PathBuf,
    /// Case-run directories go under `<out>/cases/<id>/run-<r>/`.
    pub out: PathBuf,
    pub runs_per_case: u32,
    pub max_concurrency: usize,
}

impl Batch {
    pub fn total(&self) -> u64 {
        self.cases.len() as u64 * self.runs_per_case as u64
    }

    /// Run every case-run with `overlay`. `on_done(case index, record)` sees
    /// each record as it is collected. Returns the records per case (in the
    /// order of `cases`), each case's runs sorted by run index.
    pub async fn run<F>(&self, overlay: &Overlay, mut on_done: F) -> Vec<Vec<RunRecord>>
    where
        F: FnMut(usize, &RunRecord),
    {
        let sem = Arc::new(tokio::sync::Semaphore::new(self.max_concurrency.clamp(1, crate::run_cmd::CONCURRENCY_MAX)));
        let overlay = Arc::new(overlay.clone());
        let mut handles = vec![];
        for ci in 0..self.cases.len() {
            for r in 0..self.runs_per_case {
                let (cases, servers, sem, hb, out, ov) = (self.cases.clone(), self.servers.clone(), sem.clone(), self.harness_bin.clone(), self.out.clone(), overlay.clone());
                handles.push(tokio::spawn(async move {
                    let _permit = sem.acquire_owned().await;
                    let c = &cases[ci];
                    let rec = match servers.for_case(c) {
                        Some(s) => runner::run_case(c, r, &s, &hb, &out, &ov).await,
                        None => unreachable_record(c, r),
                    };
                    (ci, rec)
                }));
            }
        }
        let mut per_case: Vec<Vec<RunRecord>> = vec![vec![]; self.cases.len()];
        for h in handles {
            // A task that panicked has no record; the caller sees a short case.
            let Ok((ci, rec)) = h.await else { continue };
            on_done(ci, &rec);
            per_case[ci].push(rec);
        }
        for runs in &mut per_case {
            runs.sort_by_key(|r| r.run);
        }
        per_case
    }
}

/// The record of a case-run that had no replay server to run against.
pub fn unreachable_record(c: &Case, r: u32) -> RunRecord {
    RunRecord {
        run: r,
        ending: "<none>".into(),
        exit_code: -1,
        passed: false,
        score: 0.0,
        cost_usd: 0.0,
        latency_ms: 0,
        expected_ending: c.ending.as_str().into(),
        checks: vec![],
        failures: vec!["no replay server for this case".into()],
        state_dir: String::new(),
        verified: 0,
    }
}
