//! The `bench` binary: the eval and chaos bench that drives the harness.
//! Live runs against a real endpoint (`record`, and `run`/`ab`/`calibrate`
//! with `--endpoint`) go through the proxy and cap in `live/`.
//! A thin clap dispatcher: each subcommand lives in its own module with its
//! own `Args` struct and `run`, so subcommands can be added independently.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ab_cmd;
mod audit;
mod batch;
mod bench_fault;
mod calibrate_cmd;
mod chaos_cmd;
mod faults_cmd;
mod knee_cmd;
mod live;
mod merge_cmd;
mod price_cmd;
mod record_cmd;
mod run_cmd;
mod runner;
mod score;
mod script;
mod self_test_cmd;
mod serve;
mod stats;
mod suite;
mod summary;

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
    /// Compile hand-written scenarios (scenario.json) into cassettes.
    Script(script::ScriptArgs),
    /// Run the eval suites through the real harness binary; gate on full-suite pass.
    Run(run_cmd::RunArgs),
    /// Merge sharded `bench run` outputs into one (checks disjoint, complete, same config).
    Merge(merge_cmd::MergeArgs),
    /// Kill the harness at every step and phase (SIGKILL and simulated power loss) and check the invariants.
    Chaos(chaos_cmd::ChaosArgs),
    /// The machine's faults against the real harness: a real full disk (tmpfs) and checks slower than the wall clock.
    Faults(faults_cmd::FaultsArgs),
    /// The suite against deliberately broken harness variants: every one must be caught.
    SelfTest(self_test_cmd::SelfTestArgs),
    /// Paired A/B comparison of two configurations over the suite.
    Ab(ab_cmd::AbArgs),
    /// Measure the drift detector on labeled queues.
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// Cost per verified task across budget levels, and the knee.
    Knee(knee_cmd::KneeArgs),
    /// Price a night from first principles.
    Price(price_cmd::PriceArgs),
    /// Run cases live against a model endpoint and record the traffic as cassettes.
    Record(record_cmd::RecordArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(args) => serve::run(args),
        Command::Script(args) => script::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Merge(args) => merge_cmd::run(args),
        Command::Chaos(args) => chaos_cmd::run(args),
        Command::Faults(args) => faults_cmd::run(args),
        Command::SelfTest(args) => self_test_cmd::run(args),
        Command::Ab(args) => ab_cmd::run(args),
        Command::Calibrate(args) => calibrate_cmd::run(args),
        Command::Knee(args) => knee_cmd::run(args),
        Command::Price(args) => price_cmd::run(args),
        Command::Record(args) => record_cmd::run(args),
    }
}
