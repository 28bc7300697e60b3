//! `bench ab` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct AbArgs {}

pub fn run(_args: AbArgs) -> ExitCode {
    eprintln!("bench ab: not built yet");
    ExitCode::from(2)
}
