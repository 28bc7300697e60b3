//! `bench knee` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct KneeArgs {}

pub fn run(_args: KneeArgs) -> ExitCode {
    eprintln!("bench knee: not built yet");
    ExitCode::from(2)
}
