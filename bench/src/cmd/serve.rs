//! `bench serve`: load a recordings tree and serve it with the replay server
//! until the process is stopped.

use crate::exit::ExitStatus;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use harness::replay::{FaultPlan, Recordings, ReplayOptions, ReplayServer};

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory of cassettes; every *.json under it is loaded (recursively).
    #[arg(long, value_name = "DIR")]
    pub recordings: PathBuf,
    /// Port on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Also require the request body's canonical SHA-256 to match the recording.
    #[arg(long)]
    pub strict: bool,
    /// Multiply recorded latencies by this (0 = as fast as possible).
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_scale)]
    pub latency_scale: f64,
    /// Seeded fault injection, e.g. "429=0.1,500=0.05,latency=0.1:200,truncate=0.02,malformed=0.02,seed=7".
    #[arg(long, value_name = "SPEC", value_parser = parse_faults)]
    pub faults: Option<FaultPlan>,
}

/// A --latency-scale clap refuses; the text is clap's reason.
#[derive(Debug, thiserror::Error)]
#[error("\"{0}\" is not a finite number >= 0")]
struct ScaleError(String);

fn parse_scale(s: &str) -> Result<f64, ScaleError> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(ScaleError(s.to_string())),
    }
}

fn parse_faults(s: &str) -> Result<FaultPlan, harness::replay::FaultSpecError> {
    FaultPlan::parse(s)
}

/// SIGINT, SIGTERM and SIGHUP stop the server as they stop every bench
/// command (crate::interrupt, through `batch::block_on`): the listener is
/// closed, its port released, and the command exits 128 + the signal.
pub fn run(args: ServeArgs) -> ExitCode {
    crate::interrupt::runs_no_harness();
    crate::batch::block_on("serve", ExitStatus::Failed, serve(args))
}

/// The recordings loaded and the server listening; Err is the exit code,
/// the reason already printed.
async fn start(args: &ServeArgs) -> Result<(ReplayServer, Summary), ExitCode> {
    let recordings = match Recordings::load_dir(&args.recordings) {
        Ok(r) => r,
        Err(e) => {
            // Every bad file, each naming its field: fix them all in one go.
            errln!(
                "bench serve: cannot load recordings from {}: {e}",
                args.recordings.display()
            );
            return Err(ExitCode::from(ExitStatus::Failed));
        }
    };
    let (cases, interactions) = (recordings.case_count(), recordings.interaction_count());
    let mut example_case: Vec<&str> = recordings.case_ids().collect();
    example_case.sort_unstable();
    let example_case = example_case
        .first()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "<case>".into());
    let listener = TcpListener::bind(("127.0.0.1", args.port)).map_err(|e| {
        errln!("bench serve: cannot bind 127.0.0.1:{}: {e}", args.port);
        ExitCode::from(ExitStatus::Failed)
    })?;
    let opts = ReplayOptions {
        strict: args.strict,
        latency_scale: args.latency_scale,
        faults: args.faults.clone().unwrap_or_else(FaultPlan::none),
        capture: false,
        serve_as_run: None,
    };
    let server = ReplayServer::start_on(listener, recordings, opts)
        .await
        .map_err(|e| {
            errln!("bench serve: {e}");
            ExitCode::from(ExitStatus::Failed)
        })?;
    Ok((
        server,
        Summary {
            cases,
            interactions,
            example_case,
        },
    ))
}

/// What the banner says about the recordings served.
struct Summary {
    cases: usize,
    interactions: usize,
    example_case: String,
}

fn banner(args: &ServeArgs, server: &ReplayServer, s: &Summary) {
    let o = server.options();
    outln!("replay server listening on {}", server.uri());
    outln!(
        "  {} cases, {} interactions from {}",
        s.cases,
        s.interactions,
        args.recordings.display()
    );
    outln!(
        "  strict={} latency_scale={} faults={}",
        o.strict,
        o.latency_scale,
        o.faults
    );
    outln!(
        "  base URL per case and run: {}/replay/<case>/<run>",
        server.uri()
    );
    outln!(
        "    e.g. {}  (run r uses cassette variant r % variants)",
        server.base_url_for(&s.example_case, 0)
    );
    outln!("  stop with Ctrl-C or SIGTERM");
}

async fn serve(args: ServeArgs) -> ExitCode {
    let (server, summary) = match start(&args).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    banner(&args, &server, &summary);
    // Serve until the command is asked to stop; meanwhile report misses
    // as they happen, so a broken eval is visible here too.
    let mut reported = 0u64;
    loop {
        tokio::select! {
            sig = crate::interrupt::wait() => {
                let uri = server.uri();
                // Dropping the server shuts its listener down.
                drop(server);
                errln!("bench serve: {sig}: stopped the replay server on {uri}");
                return ExitCode::SUCCESS;
            }
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        let misses = server.counters().misses;
        if misses > reported {
            let recent = server.recent_misses();
            let new = ((misses - reported) as usize).min(recent.len());
            for m in &recent[recent.len() - new..] {
                errln!("replay miss: {m}");
            }
            reported = misses;
        }
    }
}
