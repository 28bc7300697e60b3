//! The invariants the oracle checks on every kill index: a closed set, so a
//! check cannot name one that the report does not list, and the report's
//! tables and descriptions come from the same place.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    NoTornCheckpoint,
    PostAtMostOnce,
    InFlightClassified,
    PartialMigrationParked,
    OneOfSevenEndings,
    LedgerNeverForgets,
    GoalHashIntact,
    ReportAgrees,
    SettledTaskNeverRerun,
    CompactionAtMostOnce,
    StopHonored,
}

impl Invariant {
    /// In the order the report numbers them.
    pub const ALL: [Invariant; 11] = [
        Invariant::NoTornCheckpoint,
        Invariant::PostAtMostOnce,
        Invariant::InFlightClassified,
        Invariant::PartialMigrationParked,
        Invariant::OneOfSevenEndings,
        Invariant::LedgerNeverForgets,
        Invariant::GoalHashIntact,
        Invariant::ReportAgrees,
        Invariant::SettledTaskNeverRerun,
        Invariant::CompactionAtMostOnce,
        Invariant::StopHonored,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::NoTornCheckpoint => "no_torn_checkpoint",
            Invariant::PostAtMostOnce => "post_at_most_once",
            Invariant::InFlightClassified => "in_flight_classified",
            Invariant::PartialMigrationParked => "partial_migration_parked",
            Invariant::OneOfSevenEndings => "one_of_seven_endings",
            Invariant::LedgerNeverForgets => "ledger_never_forgets",
            Invariant::GoalHashIntact => "goal_hash_intact",
            Invariant::ReportAgrees => "report_agrees",
            Invariant::SettledTaskNeverRerun => "settled_task_never_rerun",
            Invariant::CompactionAtMostOnce => "compaction_at_most_once",
            Invariant::StopHonored => "stop_honored",
        }
    }

    /// Position in [`Invariant::ALL`] (for per-invariant arrays).
    pub fn index(self) -> usize {
        self as usize
    }

    /// What the invariant checks, one paragraph (chaos.md).
    pub fn describe(self) -> &'static str {
        match self {
            Invariant::NoTornCheckpoint => "after every kill or power cut the checkpoint on disk is a whole frame, and it is the last one the harness went on from (or a newer one); a resume on a bad frame (torn, or rotted after commit by the bit-rot stratum) ends UNRECOVERABLE_ERROR with a report naming the refusal and leaves the file alone; a valid-looking decoy temp file is never read.",
            Invariant::PostAtMostOnce => "no idempotency key appears twice in the outbox, on any disk.",
            Invariant::InFlightClassified => "the in-flight task's resume classification (done / not started / partially applied) equals the oracle's reading of the disk, with the matching consequence (completed / front of the queue / parked).",
            Invariant::PartialMigrationParked => "once a migration is partially applied on disk, none of its steps is written again and its task is never reported verified.",
            Invariant::OneOfSevenEndings => "every exit is one of the seven endings with its exit code (stdout and report.json agree); kills are confirmed by waitpid; no process hangs and every run ends within the process bound; an injected I/O error that ends the run is UNRECOVERABLE_ERROR naming the errno.",
            Invariant::LedgerNeverForgets => "committed spend (booked + worst case of calls in flight) never decreases across resumes; the final spend covers everything the replay server answered (what the provider bills); every call in flight at a kill is booked at exactly its reserved worst case (the harness's documented promise); the report equals the journal; a journal with a corrupt line is refused.",
            Invariant::GoalHashIntact => "every checkpoint and report carries the spec's goal and its SHA-256; the spec file is unchanged.",
            Invariant::ReportAgrees => "every task the final report lists as verified verifies on the final workspace and outbox (posts exactly once); GOAL_MET only when the predicate passes there; the report and the final checkpoint agree.",
            Invariant::SettledTaskNeverRerun => "a task that was parked, verified or pruned is never executed again (no `execute/<task>/...` request reaches the replay server) once that is durable: once a checkpoint on disk at a resume lists it, or once the harness went on from it (the same process sent a later model call: the checkpoint after a task, and after a drift check, comes before the next call).",
            Invariant::StopHonored => "(sigterm mode) a SIGTERM suspends the run, never ends it: the harness exits 143 (128 + the signal) with report.json saying it was STOPPED by SIGTERM (no ending; the ended-run reader refuses it), a checkpoint on disk to resume from, nothing published as an ending, and no task verified or parked by the cut; unless it was already publishing an ending, which it then finishes (that ending, code and report). A second SIGTERM during the grace exits 143 at once. The resume then goes on under every other invariant: nothing run twice, the money kept, spend never above the cap.",
            Invariant::CompactionAtMostOnce => "a `compact/<n>` call is made again only when the kill came before the checkpoint that records it: once a checkpoint on disk at a resume counts more than n compaction attempts, or the process that made it sent a later model call (the checkpoint after a compaction comes before the next call), no process sends `compact/<n>` again; every checkpoint on disk and the final report list the attempts `compact/0`, `compact/1`, ... each once, in order, as many as the checkpoint counts, the report as the final checkpoint; an `ok` compaction's cost in the report is what the provider billed for its call (that every `compact/<n>` answered is in the final spend, and one in flight at a kill booked at its worst case, is `ledger_never_forgets`).",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, inv) in Invariant::ALL.iter().enumerate() {
            assert_eq!(inv.index(), i);
            assert_eq!(
                serde_json::to_value(inv).unwrap(),
                serde_json::Value::String(inv.as_str().into())
            );
        }
    }
}
