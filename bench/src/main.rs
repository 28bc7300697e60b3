//! The `bench` binary: the eval and chaos bench that drives the harness.
//! Live runs against a real endpoint (`record`, `diverge --endpoint`, and `run`/`ab`/`calibrate`
//! with `--endpoint`) go through the proxy and cap in `live/`.
//! A thin clap dispatcher: each subcommand lives in cmd/ with its own `Args`
//! struct and `run`, built on the core in lib.rs; no command calls another.

#[macro_use]
extern crate bench;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

// The core, under the names the commands use (`crate::batch`, ...).
use bench::{
    batch, bench_fault, case_run, cli, events, exit, interrupt, live, outputs, prices, stats,
    suite, summary,
};
use cmd::{
    ab, calibrate, chaos, diverge, faults, flaky, guarantees, index, knee, merge, new_case, price,
    record, run, schemas, script, self_test, serve, try_case,
};

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    version,
    about = "Eval and chaos bench for the harness"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve recorded model traffic (cassettes) on loopback for offline, deterministic evals.
    Serve(serve::ServeArgs),
    /// Write a new, runnable case to start from (a commented template, or a copy of another case).
    NewCase(new_case::NewCaseArgs),
    /// Run one case once, as `bench run` would, with the transcript in the terminal.
    TryCase(try_case::TryCaseArgs),
    /// Check the guarantee map (every promise has a case) and render docs/guarantees.md.
    Guarantees(guarantees::GuaranteesArgs),
    /// Compile hand-written scenarios (scenario.json) into cassettes.
    Script(script::ScriptArgs),
    /// Run the eval suites through the real harness binary; gate on full-suite pass.
    Run(run::RunArgs),
    /// Merge sharded `bench run` outputs into one (checks disjoint, complete, same config).
    Merge(merge::MergeArgs),
    /// One page over many `bench run` outputs: each run, every case's history, filters, rerun commands.
    Index(index::IndexArgs),
    /// Kill the harness at every step and phase (SIGKILL and simulated power loss) and check the invariants.
    Chaos(chaos::ChaosArgs),
    /// The machine's faults against the real harness: a real full disk (tmpfs) and checks slower than the wall clock.
    Faults(faults::FaultsArgs),
    /// The suite against deliberately broken harness variants: every one must be caught.
    SelfTest(self_test::SelfTestArgs),
    /// Rerun cases in lanes (as written, identical, new fault seeds, scaled latency): pass^k and the cause of any flakiness.
    Flaky(flaky::FlakyArgs),
    /// Paired A/B comparison of two configurations over the suite.
    Ab(ab::AbArgs),
    /// Measure the drift detector on labeled queues.
    Calibrate(calibrate::CalibrateArgs),
    /// Cost per verified task across budget levels, and the knee.
    Knee(knee::KneeArgs),
    /// Price a night from first principles.
    Price(price::PriceArgs),
    /// Run cases live against a model endpoint and record the traffic as cassettes.
    Record(record::RecordArgs),
    /// Compare the trajectories of two sets of recordings (or a set against a fresh live run): where they part.
    Diverge(diverge::DivergeArgs),
    /// Write the JSON Schemas of the case files and the outputs (docs/schemas/), or check them.
    Schemas(schemas::SchemasArgs),
}

/// Malloc arenas the bench's threads share at most. glibc gives a thread
/// that finds the arenas busy one of its own, up to 8 per core, and memory
/// freed in one is not reused by another: over a long suite the bench's
/// peak grew with the case-runs (160 cases at concurrency 16: 136 MiB over
/// 3,200 case-runs, 213 MiB over 6,400; with 2 arenas 102 and 121 MiB, at
/// the same case-runs/s). The bench's threads mostly wait on processes and
/// sockets, so two arenas cost no throughput. No allocator crate does this
/// one call, hence by hand.
const MALLOC_ARENAS_MAX: i32 = 2;

fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called first thing
    // in main, before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS_MAX);
    }
}

fn main() -> ExitCode {
    bound_malloc_arenas();
    match Cli::parse().command {
        Command::Serve(args) => serve::run(args),
        Command::NewCase(args) => new_case::run(args),
        Command::TryCase(args) => try_case::run(args),
        Command::Guarantees(args) => guarantees::run(args),
        Command::Script(args) => script::run(args),
        Command::Run(args) => run::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Index(args) => index::run(args),
        Command::Chaos(args) => chaos::run(args),
        Command::Faults(args) => faults::run(args),
        Command::SelfTest(args) => self_test::run(args),
        Command::Flaky(args) => flaky::run(args),
        Command::Ab(args) => ab::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Knee(args) => knee::run(args),
        Command::Price(args) => price::run(args),
        Command::Record(args) => record::run(args),
        Command::Diverge(args) => diverge::run(args),
        Command::Schemas(args) => schemas::run(args),
    }
}
