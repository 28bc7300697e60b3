//! The harness's integration tests that need no test hook: the real binary
//! against the embedded replay server, real temp workspaces.
//!
//! One test binary, its files as modules: every release test binary is one
//! more compile and link in CI (about a unit-second each, and the shared
//! helpers compiled again), so tests of a kind are modules here, not new
//! files beside it.

// The helpers every test binary of this crate shares (one directory up,
// beside the binaries that use it).
#[path = "../common/mod.rs"]
mod common;

mod billing;
mod checkpoint;
mod clock;
mod compaction;
mod defaults;
mod endings;
mod exits;
mod faults;
mod ledger_cap;
mod lessons;
mod production_build;
mod raise;
mod replay_roundtrip;
mod sandbox;
mod spec_messages;
mod stop;
