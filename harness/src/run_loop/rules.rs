//! The stop policy's parameters, chosen once when a runner opens. In the
//! product they are what the design says. The deliberately broken variants
//! the suite and chaos self-tests must catch (`crate::mutants`,
//! `crate::simfs::Broken`) enter here and only here, so `policy.rs` reads
//! as one policy with no test machinery in its lines.

use crate::ending::Ending;

/// When a drift score halts the run, against the spec's threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DriftHalt {
    /// Strictly above it (the design: exactly at the threshold prunes).
    Above,
    /// At or above it (the `halt-at-threshold` broken variant).
    AtOrAbove,
}

impl DriftHalt {
    pub(super) fn halts(self, score: f64, threshold: f64) -> bool {
        match self {
            DriftHalt::Above => score > threshold,
            DriftHalt::AtOrAbove => score >= threshold,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rules {
    pub drift_halt: DriftHalt,
    /// Laps without progress tolerated beyond the spec's `no_progress_k`
    /// (0; 1 in the `no-progress-off-by-one` variant).
    pub no_progress_slack: u32,
    /// The ending of a planned run whose queue is empty and whose goal is
    /// unmet (QUEUE_EMPTY_GOAL_UNMET; GOAL_MET in `empty-queue-is-success`).
    pub empty_queue: Ending,
    /// A parked task is checkpointed at once (false only in the chaos
    /// self-test's `skip-park-checkpoint`).
    pub checkpoint_after_park: bool,
}

impl Rules {
    pub(super) const DESIGN: Rules = Rules {
        drift_halt: DriftHalt::Above,
        no_progress_slack: 0,
        empty_queue: Ending::QueueEmptyGoalUnmet,
        checkpoint_after_park: true,
    };

    /// This process's rules: the design's, unless a broken variant is
    /// selected (only in a build with the test variants compiled in).
    pub(super) fn of_process() -> Rules {
        use crate::mutants::{active, Mutant};
        let mut rules = Rules::DESIGN;
        if active(Mutant::HaltAtThreshold) {
            rules.drift_halt = DriftHalt::AtOrAbove;
        }
        if active(Mutant::NoProgressOffByOne) {
            rules.no_progress_slack = 1;
        }
        if active(Mutant::EmptyQueueIsSuccess) {
            rules.empty_queue = Ending::GoalMet;
        }
        if crate::simfs::broken() == Some(crate::simfs::Broken::SkipParkCheckpoint) {
            rules.checkpoint_after_park = false;
        }
        rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_runs_the_design() {
        assert_eq!(Rules::of_process(), Rules::DESIGN);
        assert!(!DriftHalt::Above.halts(0.5, 0.5));
        assert!(DriftHalt::Above.halts(0.51, 0.5));
    }
}
