//! The chaos driver's tests, on the test-variants harness build.
//!
//! One test binary, its files as modules: every release test binary is one
//! more compile and link in CI (about a unit-second each, and the shared
//! helpers compiled again), so tests of a kind are modules here, not new
//! files beside it.
//! `io_error_bugs` and `power_loss_bugs` stay binaries of their own: each
//! sets a simfs variable in its own process, which every harness the other
//! tests spawn would inherit.

// The helpers every test binary of this crate shares (one directory up,
// beside the binaries that use it).
#[path = "../common/mod.rs"]
mod common;

mod calibration_failure;
mod driver_smoke;
mod other_seeds;
mod replan_kill_bugs;
mod strata;
