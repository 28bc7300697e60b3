//! `bench run` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> ExitCode {
    eprintln!("bench run: not built yet");
    ExitCode::from(2)
}
