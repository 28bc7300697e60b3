//! A batch of case-runs: every case `runs_per_case` times through the real
//! harness with one overlay, at most `max_concurrency` at a time. `bench run`
//! runs one batch with no overlay; `bench knee` runs one per budget level,
//! each into its own directory so the state dirs never collide. What to show
//! while it runs is the caller's: each finished case-run is handed to
//! `on_done`.

use crate::runner::{self, Overlay, RunRecord, Servers};
use crate::suite::Case;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Run a subcommand's async body on a multi-threaded runtime; a runtime that
/// cannot start is exit `on_error` with the reason on stderr.
pub fn block_on<F: Future<Output = ExitCode>>(cmd: &str, on_error: u8, body: F) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(body),
        Err(e) => {
            eprintln!("bench {cmd}: cannot start the runtime: {e}");
            ExitCode::from(on_error)
        }
    }
}

/// The harness binary: `--harness`, or the one next to this bench binary.
pub fn harness_bin(arg: Option<&Path>) -> Result<PathBuf, String> {
    let p = arg
        .map(Path::to_path_buf)
        .unwrap_or_else(runner::default_harness_bin);
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!("harness binary {} not found; build it with `cargo build --release --workspace` or pass --harness", p.display()))
    }
}

pub struct Batch {
    pub cases: Arc<Vec<Case>>,
    pub servers: Arc<Servers>,
    pub harness_bin: PathBuf,
    /// The output root, created and canonical.
    pub out: PathBuf,
    pub runs_per_case: u32,
    pub max_concurrency: usize,
}

impl Batch {
    /// Start the replay servers for `cases` and create the output root.
    /// Errors say which of the two failed.
    pub async fn start(
        cases: Vec<Case>,
        harness_bin: PathBuf,
        out: &Path,
        runs_per_case: u32,
        max_concurrency: usize,
    ) -> Result<Batch, String> {
        let servers = Servers::start(&cases)
            .await
            .map_err(|e| format!("cannot start the replay server: {e}"))?;
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let out = std::fs::canonicalize(out).unwrap_or(out.to_path_buf());
        Ok(Batch {
            cases: Arc::new(cases),
            servers: Arc::new(servers),
            harness_bin,
            out,
            runs_per_case,
            max_concurrency,
        })
    }

    pub fn total(&self) -> u64 {
        self.cases.len() as u64 * self.runs_per_case as u64
    }

    /// Run every case-run with `overlay`, case-run directories under
    /// `<out>/cases/<id>/run-<r>/`. `on_done(case index, record)` sees each
    /// record as it is collected. Returns the records per case (in the
    /// order of `cases`), each case's runs sorted by run index.
    pub async fn run<F>(&self, overlay: &Overlay, out: &Path, mut on_done: F) -> Vec<Vec<RunRecord>>
    where
        F: FnMut(usize, &RunRecord),
    {
        let sem = Arc::new(tokio::sync::Semaphore::new(
            self.max_concurrency
                .clamp(1, crate::run_cmd::CONCURRENCY_MAX),
        ));
        let overlay = Arc::new(overlay.clone());
        let mut handles = vec![];
        for ci in 0..self.cases.len() {
            for r in 0..self.runs_per_case {
                let (cases, servers, sem, hb, out, ov) = (
                    self.cases.clone(),
                    self.servers.clone(),
                    sem.clone(),
                    self.harness_bin.clone(),
                    out.to_path_buf(),
                    overlay.clone(),
                );
                handles.push(tokio::spawn(async move {
                    let _permit = sem.acquire_owned().await;
                    let c = &cases[ci];
                    let rec = match servers.for_case(c) {
                        Some(s) => runner::run_case(c, r, &s, &hb, &out, &ov).await,
                        None => RunRecord::failed(
                            c,
                            r,
                            "no replay server for this case".into(),
                            String::new(),
                        ),
                    };
                    (ci, rec)
                }));
            }
        }
        let mut per_case: Vec<Vec<RunRecord>> = vec![vec![]; self.cases.len()];
        for h in handles {
            // A task that panicked has no record; `total()` tells the caller.
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
