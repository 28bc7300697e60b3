//! The run's rules: the stop policy's parameters and the few other choices
//! the design fixes (what a resume verifies, what the drift judge is shown,
//! what goes on the wire), chosen once when a run opens. In the product
//! they are what the design says. The deliberately broken variants the
//! suite and chaos self-tests must catch (`crate::mutants`,
//! `crate::simfs::Broken`) enter the run loop here and only here, so its
//! rooms read as the design with no test machinery in their lines.

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

/// What the drift judge is shown beside the goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JudgeSees {
    /// The queue only (the design: the judge scores the plan ahead).
    Queue,
    /// The verified tasks too, as if queued (`judge-sees-done`).
    QueueAndDone,
    /// The model's claims too (`judge-sees-history`).
    QueueAndHistory,
}

/// A request sent other than as it was reserved and recorded: each changes
/// one recording condition the replay compares (the broken variants
/// `tools-reordered`, `model-renamed`, `max-tokens-off-by-one`,
/// `system-prompt-appended`, `temperature-set`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OffTheRecording {
    ToolsReordered,
    ModelRenamed,
    MaxTokensOffByOne,
    SystemPromptAppended,
    TemperatureSet,
}

impl OffTheRecording {
    /// The request as this variant sends it.
    pub(super) fn apply(self, req: &mut crate::model::types::ModelRequest) {
        match self {
            OffTheRecording::ToolsReordered => req.tools.reverse(),
            OffTheRecording::ModelRenamed => req.model.push_str("-latest"),
            OffTheRecording::MaxTokensOffByOne => req.max_tokens = req.max_tokens.saturating_sub(1),
            OffTheRecording::SystemPromptAppended => req.system.push_str("\nBe concise."),
            OffTheRecording::TemperatureSet => {}
        }
    }

    /// The sampling every request carries, as this variant sends it: a
    /// temperature the spec does not set.
    pub(super) fn sampling(self, s: &mut crate::model::Sampling) {
        if self == OffTheRecording::TemperatureSet {
            s.temperature = Some(if s.temperature == Some(0.7) { 0.3 } else { 0.7 });
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
    /// On resume the task in flight is verified before anything runs (false
    /// in `resume-reexecutes`: it goes back to the queue unverified).
    pub resume_verifies: bool,
    /// A task's verify decides, whatever the model claims (false in
    /// `trusts-the-claim`: a claim of done stands for the verify).
    pub verify_decides: bool,
    /// A run that ended is re-reported, never run again, whatever its
    /// ending (false in `reruns-unmet-endings`: only GOAL_MET stands).
    pub every_ending_stands: bool,
    /// A limit is raised only for a run that ended on it (false in
    /// `raise-after-any-ending`).
    pub raise_needs_its_ending: bool,
    /// Every request goes on the wire as it was reserved (None).
    pub off_the_recording: Option<OffTheRecording>,
    /// The stop report names the task in flight (false in
    /// `stop-report-no-in-flight`).
    pub stop_report_names_in_flight: bool,
    /// A task verified done at an ending whose write failed with an I/O
    /// error is parked, not verified (false in the chaos self-test's
    /// `verified-in-doubt`).
    pub in_doubt_parks: bool,
    /// GOAL_MET leaves the verified work in place (false in
    /// `undone-after-report`: it is removed after the report).
    pub work_kept_after_report: bool,
    /// A malformed compaction summary keeps the history whole (false in
    /// `compaction-truncates`: it keeps the last line only).
    pub malformed_summary_keeps_history: bool,
    /// A lesson is admitted only by the harness's checks (false in
    /// `admits-every-lesson`).
    pub lessons_checked: bool,
    pub judge_sees: JudgeSees,
}

impl Rules {
    pub(super) const DESIGN: Rules = Rules {
        drift_halt: DriftHalt::Above,
        no_progress_slack: 0,
        empty_queue: Ending::QueueEmptyGoalUnmet,
        checkpoint_after_park: true,
        resume_verifies: true,
        verify_decides: true,
        every_ending_stands: true,
        raise_needs_its_ending: true,
        off_the_recording: None,
        stop_report_names_in_flight: true,
        in_doubt_parks: true,
        work_kept_after_report: true,
        malformed_summary_keeps_history: true,
        lessons_checked: true,
        judge_sees: JudgeSees::Queue,
    };

    /// This process's rules: the design's, unless a broken variant is
    /// selected (only in a build with the test variants compiled in).
    pub(super) fn of_process() -> Rules {
        use crate::mutants::{active, Mutant};
        use crate::simfs::{broken, Broken};
        let d = Rules::DESIGN;
        Rules {
            drift_halt: match active(Mutant::HaltAtThreshold) {
                true => DriftHalt::AtOrAbove,
                false => d.drift_halt,
            },
            no_progress_slack: u32::from(active(Mutant::NoProgressOffByOne)),
            empty_queue: match active(Mutant::EmptyQueueIsSuccess) {
                true => Ending::GoalMet,
                false => d.empty_queue,
            },
            checkpoint_after_park: broken() != Some(Broken::SkipParkCheckpoint),
            resume_verifies: !active(Mutant::ResumeReexecutes),
            verify_decides: !active(Mutant::TrustsTheClaim),
            every_ending_stands: !active(Mutant::RerunsUnmetEndings),
            raise_needs_its_ending: !active(Mutant::RaiseAfterAnyEnding),
            off_the_recording: off_the_recording(),
            stop_report_names_in_flight: !active(Mutant::StopReportNoInFlight),
            in_doubt_parks: broken() != Some(Broken::VerifiedInDoubt),
            work_kept_after_report: !active(Mutant::UndoneAfterReport),
            malformed_summary_keeps_history: !active(Mutant::CompactionTruncates),
            lessons_checked: !active(Mutant::AdmitsEveryLesson),
            judge_sees: if active(Mutant::JudgeSeesDone) {
                JudgeSees::QueueAndDone
            } else if active(Mutant::JudgeSeesHistory) {
                JudgeSees::QueueAndHistory
            } else {
                d.judge_sees
            },
        }
    }
}

/// The broken variant that sends requests off the recording, if one runs.
fn off_the_recording() -> Option<OffTheRecording> {
    use crate::mutants::{active, Mutant};
    [
        (Mutant::ToolsReordered, OffTheRecording::ToolsReordered),
        (Mutant::ModelRenamed, OffTheRecording::ModelRenamed),
        (
            Mutant::MaxTokensOffByOne,
            OffTheRecording::MaxTokensOffByOne,
        ),
        (
            Mutant::SystemPromptAppended,
            OffTheRecording::SystemPromptAppended,
        ),
        (Mutant::TemperatureSet, OffTheRecording::TemperatureSet),
    ]
    .into_iter()
    .find_map(|(m, off)| active(m).then_some(off))
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
