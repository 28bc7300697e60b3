//! `bench chaos` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ChaosArgs {}

pub fn run(_args: ChaosArgs) -> ExitCode {
    eprintln!("bench chaos: not built yet");
    ExitCode::from(2)
}
