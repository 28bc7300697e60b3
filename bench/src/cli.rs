//! clap value types that more than one command takes.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    Openai,
    Anthropic,
}
