//! `bench price` (being written).
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PriceArgs {}

pub fn run(_args: PriceArgs) -> ExitCode {
    eprintln!("bench price: not built yet");
    ExitCode::from(2)
}
