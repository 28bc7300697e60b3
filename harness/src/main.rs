//! `harness`: run a goal to exactly one of seven endings, or show where a run
//! stands. Thin glue over the library; see ARCHITECTURE.md.
//!
//! Exit codes: 0 GOAL_MET; 2 BUDGET_EXHAUSTED, TIME_LIMIT; 3 DRIFT_DETECTED,
//! NO_PROGRESS, QUEUE_EMPTY_GOAL_UNMET; 4 UNRECOVERABLE_ERROR; 64 the spec or
//! the command line was rejected before anything ran (nothing was written).

use clap::{Parser, Subcommand};
use harness::ending::EXIT_SPEC_REJECTED;
use harness::run_loop::{run, RunOptions};
use harness::spec::RunSpec;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "harness",
    version,
    about = "Run an unattended agent inside a harness it cannot reach"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the spec's goal to one of the seven endings; resume if the state dir holds a checkpoint.
    Run {
        #[arg(long)]
        spec: PathBuf,
        #[arg(long)]
        state_dir: PathBuf,
        /// Serve model traffic from the cassettes in this directory (an embedded
        /// replay server on loopback; no network, no key).
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Which cassette case to replay when the directory holds several.
        #[arg(long)]
        case: Option<String>,
        /// Run index (picks the cassette variant run % variants).
        #[arg(long, default_value_t = 0)]
        run_index: u32,
        /// Also require the canonical request body hash to match the recording.
        #[arg(long)]
        strict: bool,
        /// Replayed latency = recorded latency x this (0 = as fast as possible).
        #[arg(long, default_value_t = 1.0)]
        latency_scale: f64,
        /// Seeded fault injection for the replay, e.g. "429=0.1,500=0.05,seed=7".
        #[arg(long)]
        faults: Option<String>,
        /// Use this endpoint base URL instead of the spec's (e.g. a replay
        /// server the bench runs: http://127.0.0.1:P/replay/<case>/<run>).
        #[arg(long, conflicts_with = "replay")]
        base_url: Option<String>,
        /// Lower the run's dollar cap for this command: the ledger's hard cap
        /// becomes min(spec's budget.hard_cap_usd, this). For a live endpoint
        /// the spec's own cap always applies; this only tightens it.
        #[arg(long, value_name = "USD")]
        max_usd: Option<f64>,
    },
    /// Print where a run stands, without disturbing it.
    Status {
        #[arg(long)]
        state_dir: PathBuf,
    },
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap's own exit code for usage errors is 2, which is
            // BUDGET_EXHAUSTED here: map it to the documented rejection code.
            let code = if e.use_stderr() {
                EXIT_SPEC_REJECTED
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match cli.cmd {
        Cmd::Status { state_dir } => status(&state_dir),
        Cmd::Run {
            spec,
            state_dir,
            replay,
            case,
            run_index,
            strict,
            latency_scale,
            faults,
            base_url,
            max_usd,
        } => {
            // One thread: the loop is sequential (one model call, one tool, one
            // check at a time), and a case-run per process under `bench run`
            // made the worker threads' start-up and hand-offs a real share of
            // its CPU. Nothing here uses block_in_place.
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("harness: cannot start the async runtime: {e}");
                    std::process::exit(harness::ending::Ending::UnrecoverableError.exit_code());
                }
            };
            rt.block_on(run_cmd(
                spec,
                state_dir,
                replay,
                case,
                run_index,
                strict,
                latency_scale,
                faults,
                base_url,
                max_usd,
            ))
        }
    };
    std::process::exit(code);
}

#[allow(clippy::too_many_arguments)]
async fn run_cmd(
    spec_path: PathBuf,
    state_dir: PathBuf,
    replay: Option<PathBuf>,
    case: Option<String>,
    run_index: u32,
    strict: bool,
    latency_scale: f64,
    faults: Option<String>,
    base_url: Option<String>,
    max_usd: Option<f64>,
) -> i32 {
    // Everything is validated before the state dir is touched.
    let mut spec = match RunSpec::load(&spec_path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("harness: spec rejected: {e}");
            return EXIT_SPEC_REJECTED;
        }
    };
    if let Some(x) = max_usd {
        if !(x.is_finite() && x > 0.0) {
            eprintln!("harness: --max-usd {x}: expected a positive number of US dollars");
            return EXIT_SPEC_REJECTED;
        }
        spec.hard_cap_usd = spec.hard_cap_usd.min(x);
    }
    if let Err(e) = spec.check_state_dir(&state_dir) {
        eprintln!("harness: spec rejected: {e}");
        return EXIT_SPEC_REJECTED;
    }
    let mut _server = None;
    if let Some(u) = &base_url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            eprintln!("harness: --base-url: expected an http:// or https:// URL, found {u:?}");
            return EXIT_SPEC_REJECTED;
        }
    }
    let mut base_url_override = base_url;
    if let Some(dir) = replay {
        match harness::replay::start_for_run(
            &dir,
            case.as_deref(),
            run_index,
            spec.model.protocol,
            strict,
            latency_scale,
            faults.as_deref(),
        )
        .await
        {
            Ok((server, url)) => {
                base_url_override = Some(url);
                _server = Some(server);
            }
            Err(e) => {
                eprintln!("harness: --replay rejected: {e}");
                return EXIT_SPEC_REJECTED;
            }
        }
    }
    if let Err(e) = std::fs::create_dir_all(&state_dir) {
        eprintln!(
            "harness: cannot create state dir {}: {e}",
            state_dir.display()
        );
        return harness::ending::Ending::UnrecoverableError.exit_code();
    }
    // One harness per state dir: a second one would interleave checkpoints.
    let lock = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(state_dir.join("run.lock"))
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("harness: cannot open lock in {}: {e}", state_dir.display());
            return harness::ending::Ending::UnrecoverableError.exit_code();
        }
    };
    if lock.try_lock().is_err() {
        eprintln!("harness: another harness is running on {} (run.lock is held); use `harness status` to watch it", state_dir.display());
        return EXIT_SPEC_REJECTED;
    }
    let outcome = run(
        spec,
        &state_dir,
        RunOptions {
            base_url_override,
            jitter_seed: run_index as u64,
            tamper_goal_before_lap: None,
        },
    )
    .await;
    print!("{}", outcome.report.human_summary());
    println!(
        "report     {}",
        state_dir.join(harness::report::FILE_NAME).display()
    );
    outcome.ending.exit_code()
}

fn status(state_dir: &Path) -> i32 {
    if !state_dir.is_dir() {
        eprintln!("harness status: {} is not a state dir", state_dir.display());
        return EXIT_SPEC_REJECTED;
    }
    match harness::checkpoint::load(state_dir, None) {
        Ok(None) => println!("no checkpoint yet in {}", state_dir.display()),
        Ok(Some(s)) => {
            println!("run        {}", s.run_id);
            println!("step       {} (resumes: {})", s.step, s.resumes);
            match &s.finished {
                Some(f) => println!("ending     {} (exit {})", f.ending, f.ending.exit_code()),
                None => println!("ending     none yet (running or interrupted)"),
            }
            // By the resume rules: in-flight and torn reserves at their worst case.
            let journal = harness::ledger::Ledger::peek_journal(
                &state_dir.join("ledger.jsonl"),
                s.hard_cap_usd,
            );
            let (booked, in_flight) = journal.unwrap_or((s.ledger.spent_usd, 0.0));
            println!("spend      ${booked:.4} of ${:.2} cap ({:.0}%), ${in_flight:.4} reserved in flight", s.hard_cap_usd, 100.0 * booked / s.hard_cap_usd.max(1e-12));
            if let Some(t) = &s.in_progress {
                println!("in flight  {}: {}", t.id, t.description);
            }
            println!(
                "queue      {} task(s): {}",
                s.queue.len(),
                s.queue
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!(
                "done       {} verified, {} parked, {} pruned",
                s.completed.len(),
                s.parked.len(),
                s.pruned.len()
            );
            match s.drift_history.last() {
                Some(d) => println!(
                    "drift      {:.2} ({:?}) at step {}",
                    d.score, d.band, d.step
                ),
                None => println!("drift      not checked yet"),
            }
        }
        Err(r) => {
            println!("checkpoint REFUSED: {r}");
            println!(
                "(a run on this state dir ends as UNRECOVERABLE_ERROR until a human looks at it)"
            );
        }
    }
    0
}
