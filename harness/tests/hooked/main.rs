//! The harness's integration tests that need the test hooks (pause points,
//! simfs fault injection, the goal tamper, panic points): built only with
//! `--features test-variants`, by `scripts/test`'s first pass.
//!
//! One test binary, its files as modules: every release test binary is one
//! more compile and link in CI (about a unit-second each, and the shared
//! helpers compiled again), so tests of a kind are modules here, not new
//! files beside it.

// The helpers every test binary of this crate shares (one directory up,
// beside the binaries that use it).
#[path = "../common/mod.rs"]
mod common;

mod chaos_found;
mod compaction_resume;
mod disk_full;
mod integrity;
mod ledger_journal;
mod panics;
mod reach;
mod resume;
mod state_seal;
