//! The test machinery an `[interrupt]` case runs on, in one place: the
//! harness built with its test hooks (a production binary has no pause
//! points), the variable that names the pause point, and the line the
//! hooked harness writes when it is paused there (harness::chaos_hook).
//! The case-run's other rooms name none of these.

use harness::invocation::HarnessInvocation;
use std::path::{Path, PathBuf};

/// The line a hooked harness writes to stderr when it paused.
const PAUSED_LINE_PREFIX: &str = "HARNESS_CHAOS_PAUSED";

/// The binary that runs the interrupted half: `harness_bin` when it has
/// the pause points, else the test-variants build (crate::harness_bin),
/// looked up off the async threads (it may build it once).
pub(super) async fn hooked_harness(harness_bin: &Path) -> Result<PathBuf, HookedError> {
    let hb = harness_bin.to_path_buf();
    tokio::task::spawn_blocking(move || crate::harness_bin::interrupt_harness(&hb))
        .await?
        .map_err(HookedError::from)
}

/// Why no hooked harness could be had (each says its own reason).
#[derive(Debug, thiserror::Error)]
pub(super) enum HookedError {
    #[error(transparent)]
    Lookup(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Bin(#[from] crate::harness_bin::HarnessBinError),
}

/// `inv` told to pause at `at` (a phase and its count).
pub(super) fn arm(inv: &HarnessInvocation, at: &str) -> HarnessInvocation {
    inv.clone().env(harness::chaos_hook::ENV_VAR, at)
}

/// Whether a stderr line says the harness is paused.
pub(super) fn is_paused_line(line: &str) -> bool {
    line.starts_with(PAUSED_LINE_PREFIX)
}
