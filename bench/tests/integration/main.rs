//! The bench's integration tests: the real `bench` and `harness` binaries on
//! scratch suites.
//!
//! One test binary, its files as modules: every release test binary is one
//! more compile and link in CI (about a unit-second each, and the shared
//! helpers compiled again), so tests of a kind are modules here, not new
//! files beside it.

// The helpers every test binary of this crate shares (one directory up,
// beside the binaries that use it).
#[path = "../common/mod.rs"]
mod common;

mod ab;
mod audit;
mod bad_case;
mod calibrate;
mod diverge;
mod flaky;
mod knee;
mod live;
mod live_outage;
mod live_suite;
mod new_case;
mod run;
mod schemas;
mod serve;
