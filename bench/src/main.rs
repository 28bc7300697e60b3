//! The `bench` binary: the eval and chaos bench that drives the harness.
//! A thin clap dispatcher: each subcommand lives in its own module with its
//! own `Args` struct and `run`, so subcommands can be added independently.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod serve;

#[derive(Parser, Debug)]
#[command(name = "bench", version, about = "Eval and chaos bench for the harness")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve recorded model traffic (cassettes) on loopback for offline, deterministic evals.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(args) => serve::run(args),
    }
}
