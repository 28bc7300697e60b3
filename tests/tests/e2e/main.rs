//! End-to-end: the built `harness` and `bench` binaries, run the way the
//! README runs them, from the repository root, offline. One test binary;
//! each concern is a module.

mod architecture;
mod bad_input;
mod demo;
mod exits;
mod main_command;
mod shard;
