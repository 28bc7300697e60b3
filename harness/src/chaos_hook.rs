//! Named phases at which the chaos bench can kill the harness. The pause
//! itself is test machinery, compiled in only with the `test-hooks` cargo
//! feature (the test-variants build); the production build has the phase
//! names and an empty [`point`], and never reads `HARNESS_CHAOS_PAUSE_AT`.
//! With the feature, when that variable is `<phase>:<n>`, the n-th time
//! (1-based, counted within this process) the harness reaches `<phase>`, it
//! writes `HARNESS_CHAOS_PAUSED <phase> <n>` to stderr and sleeps until it is
//! killed (or asked to stop), so the driver's signal lands at exactly that
//! step, not by wall-clock luck.

/// The kill points the harness exposes. Names are the wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    BeforeInProgressCheckpoint,
    TempWritten,
    AfterFsyncFile,
    AfterRenameBeforeFsyncDir,
    BetweenMigrationSteps,
    AfterPostBeforeCheckpoint,
    DuringModelCall,
    DuringDriftCall,
    DuringResumeVerify,
    BetweenLedgerRecordAndCheckpoint,
    /// A task was just parked; the checkpoint that records it is next.
    AfterParkBeforeCheckpoint,
    /// `drift::gate` has applied the judge's verdict (maybe pruned the
    /// queue); the checkpoint that records it is next.
    AfterDriftGateBeforeCheckpoint,
    /// A `compact/<n>` call was booked (or refused) and its outcome applied
    /// to the state (the history replaced or kept, the attempt recorded);
    /// the checkpoint that records it is next.
    AfterCompactBeforeCheckpoint,
    /// `--raise-cap-usd` / `--raise-wall-clock-s`: the raise is journaled in
    /// ledger.jsonl and applied to the state; the checkpoint that records
    /// it (the run no longer ended) is next.
    AfterRaiseBeforeCheckpoint,
    /// A check's process is running (the n-th check of the process: a
    /// verify, the goal predicate, a `run_check`). Not in [`Phase::ALL`]
    /// (chaos draws its kill points from there): the suite's `[interrupt]`
    /// lands a stop request while a check is in flight.
    DuringCheck,
}

impl Phase {
    pub const ALL: [Phase; 14] = [
        Phase::BeforeInProgressCheckpoint,
        Phase::TempWritten,
        Phase::AfterFsyncFile,
        Phase::AfterRenameBeforeFsyncDir,
        Phase::BetweenMigrationSteps,
        Phase::AfterPostBeforeCheckpoint,
        Phase::DuringModelCall,
        Phase::DuringDriftCall,
        Phase::DuringResumeVerify,
        Phase::BetweenLedgerRecordAndCheckpoint,
        Phase::AfterParkBeforeCheckpoint,
        Phase::AfterDriftGateBeforeCheckpoint,
        Phase::AfterCompactBeforeCheckpoint,
        Phase::AfterRaiseBeforeCheckpoint,
    ];
    /// Pause points the suite's cases use and chaos does not draw.
    pub const CASE_ONLY: [Phase; 1] = [Phase::DuringCheck];
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::BeforeInProgressCheckpoint => "before_in_progress_checkpoint",
            Phase::TempWritten => "temp_written",
            Phase::AfterFsyncFile => "after_fsync_file",
            Phase::AfterRenameBeforeFsyncDir => "after_rename_before_fsync_dir",
            Phase::BetweenMigrationSteps => "between_migration_steps",
            Phase::AfterPostBeforeCheckpoint => "after_post_before_checkpoint",
            Phase::DuringModelCall => "during_model_call",
            Phase::DuringDriftCall => "during_drift_call",
            Phase::DuringResumeVerify => "during_resume_verify",
            Phase::BetweenLedgerRecordAndCheckpoint => "between_ledger_record_and_checkpoint",
            Phase::AfterParkBeforeCheckpoint => "after_park_before_checkpoint",
            Phase::AfterDriftGateBeforeCheckpoint => "after_drift_gate_before_checkpoint",
            Phase::AfterCompactBeforeCheckpoint => "after_compact_before_checkpoint",
            Phase::AfterRaiseBeforeCheckpoint => "after_raise_before_checkpoint",
            Phase::DuringCheck => "during_check",
        }
    }
    pub fn parse(s: &str) -> Option<Phase> {
        (Phase::ALL.iter().chain(&Phase::CASE_ONLY))
            .copied()
            .find(|p| p.as_str() == s)
    }
}

/// Read only by a harness built with the `test-hooks` feature.
pub const ENV_VAR: &str = "HARNESS_CHAOS_PAUSE_AT";

/// Mark that the harness has reached `phase`. Without the `test-hooks`
/// feature only a panic point (itself empty without `fault-injection`).
#[cfg_attr(feature = "fault-injection", track_caller)]
pub fn point(phase: Phase) {
    // Every kill point is also a panic point for tests/hooked/panics.rs; an empty
    // inline function unless built with the `fault-injection` feature.
    crate::fault_injection::panic_point(phase.as_str());
    #[cfg(feature = "test-hooks")]
    pause::at(phase);
}

/// The pause points: an endless sleep a deployed harness must never be able
/// to enter, so they are not in its binary at all.
#[cfg(feature = "test-hooks")]
mod pause {
    use super::{Phase, ENV_VAR};
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    fn target() -> &'static Option<(Phase, u64)> {
        static T: OnceLock<Option<(Phase, u64)>> = OnceLock::new();
        T.get_or_init(|| {
            let v = std::env::var(ENV_VAR).ok()?;
            let (p, n) = v.split_once(':')?;
            Some((Phase::parse(p)?, n.parse().ok()?))
        })
    }

    /// Sleep until killed (or asked to stop) if the chaos variable names this phase and this is
    /// its n-th occurrence; otherwise return at once.
    pub(super) fn at(phase: Phase) {
        let Some((want, n)) = *target() else { return };
        if want != phase {
            return;
        }
        static COUNTS: OnceLock<Mutex<HashMap<Phase, u64>>> = OnceLock::new();
        let hit = {
            let mut m = COUNTS
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let c = m.entry(phase).or_insert(0);
            *c += 1;
            *c == n
        };
        if hit {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "HARNESS_CHAOS_PAUSED {} {}",
                phase.as_str(),
                n
            );
            let _ = std::io::stderr().flush();
            // Until killed, or until a stop request (crate::stop): then
            // the run goes on to its next safe point, so `bench chaos
            // --mode sigterm` lands a stop at exactly this step.
            while crate::stop::requested().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}
