//! One mode's kills: the kill indexes to run, and worker threads that each
//! own a replay server and take the next index.

use super::config::{Config, Mode};
use super::plan::{plan, strata};
use super::prepare::Prepared;
use super::tally::ModeReport;
use super::trial::{run_trial, Ctx, TrialOutcome};
use harness::replay::{ReplayOptions, ReplayServer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One per worker: its own replay server (so request capture and wiremock's
/// retained requests can be cleared between its trials).
fn worker(
    ctx: &Ctx,
    mode: Mode,
    todo: &[usize],
    next: &AtomicUsize,
    results: &Mutex<Vec<TrialOutcome>>,
    progress: &(dyn Fn(usize, usize) + Sync),
) {
    let server = match ctx.rt.block_on(ReplayServer::start(
        ctx.recordings.clone(),
        ReplayOptions {
            strict: false,
            latency_scale: 0.0,
            capture: true,
            serve_as_run: None,
            ..Default::default()
        },
    )) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench chaos: cannot start the replay server: {e}");
            return;
        }
    };
    loop {
        if (ctx.cfg.interrupted)() {
            break; // the trial in flight finished; no new one starts
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= todo.len() {
            break;
        }
        let pl = plan(ctx.cfg.seed, mode, todo[i], ctx.cases, ctx.calib, ctx.only);
        let t = run_trial(ctx, &server, pl);
        ctx.rt.block_on(server.release_retained_requests());
        let bad = !t.violations.is_empty();
        if !bad && !ctx.cfg.keep {
            let _ = std::fs::remove_dir_all(&t.dir);
        }
        let done = {
            let mut r = results.lock().unwrap_or_else(|e| e.into_inner());
            r.push(t);
            r.len()
        };
        progress(done, todo.len());
    }
}

/// Run every kill of one mode.
pub fn run_mode(
    cfg: &Config,
    prep: &Prepared,
    mode: Mode,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> ModeReport {
    let t0 = Instant::now();
    let todo = kill_indexes(cfg, prep, mode);
    let ctx = Ctx {
        cfg,
        cases: &prep.cases,
        calib: &prep.calib,
        only: prep.only,
        rt: &prep.rt,
        recordings: &prep.recordings,
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(todo.len()));
    let jobs = cfg.jobs.clamp(1, todo.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| worker(&ctx, mode, &todo, &next, &results, progress));
        }
    });
    let mut trials = results.into_inner().unwrap_or_else(|e| e.into_inner());
    trials.sort_by_key(|t| t.plan.k);
    let mut r = ModeReport::tally(cfg, mode, &trials);
    r.wall_s = t0.elapsed().as_secs_f64();
    r
}

/// The kill indexes `cfg` asks for: one replayed kill, the first `kills`, or
/// the first `kills` of one stratum.
fn kill_indexes(cfg: &Config, prep: &Prepared, mode: Mode) -> Vec<usize> {
    match (cfg.replay_kill, &cfg.stratum) {
        (Some(k), _) => vec![k],
        (None, None) => (0..cfg.kills).collect(),
        (None, Some(st)) => {
            // The stratum of kill k is a pure function of (seed, mode, k).
            let n = strata(mode).len();
            (0..cfg.kills * n)
                .filter(|k| {
                    &plan(cfg.seed, mode, *k, &prep.cases, &prep.calib, prep.only)
                        .stratum
                        .label()
                        == st
                })
                .take(cfg.kills)
                .collect()
        }
    }
}

pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;
