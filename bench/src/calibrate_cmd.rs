//! `bench calibrate` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CalibrateArgs {}

pub fn run(_args: CalibrateArgs) -> ExitCode {
    eprintln!("bench calibrate: not built yet");
    ExitCode::from(2)
}
