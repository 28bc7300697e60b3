//! Deliberately broken harness variants the suite self-test must catch
//! (`bench self-test`). Each is a one-line bug of a kind the seed warns about,
//! at the one place that guarantee lives; the suite (its gates and the audit)
//! must fail every one. Some are dishonest rather than wrong: each lies to
//! one check of the bench (`Mutant::gate`), and the self-test counts it
//! caught only when that check fails, so a loosened gate fails the self-test.
//!
//! They exist only with the `chaos-broken` cargo feature, which the
//! production build never enables; `bench self-test` builds that variant once
//! (into target/test-variants, shared with `bench chaos --self-test` and the panic test) and picks
//! the mutant at run time with `HARNESS_CHAOS_BROKEN` (the same variable the
//! chaos bench's durability variants use: one binary, one selector). Without
//! the feature [`active`] is a constant `false` the optimiser removes.

/// One deliberately broken behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// An empty queue with the goal unmet is reported GOAL_MET.
    EmptyQueueIsSuccess,
    /// A task is verified when the model claims it is done, whatever its
    /// verify says (the model grades its own work).
    TrustsTheClaim,
    /// The drift halt compares `>=` (a score exactly at the threshold halts).
    HaltAtThreshold,
    /// NO_PROGRESS needs K + 1 parked tasks in a row, not K.
    NoProgressOffByOne,
    /// The drift judge also sees the finished tasks (the agent's history).
    JudgeSeesHistory,
    /// On resume the in-flight task goes back to the queue without a verify
    /// (a non-idempotent step runs twice).
    ResumeReexecutes,
    /// The ledger never refuses a reservation: the cap is checked by nobody.
    CapNotEnforced,
    /// Cache-write input tokens are not billed.
    CacheWritesFree,
    /// Checks inherit the harness's whole environment (the API key included).
    CheckEnvInherited,
    /// Checks run without their Landlock ruleset (the level still reads
    /// full): model-written code writes and reads outside the workspace.
    NoLandlock,
    /// Checks keep the host's network namespace (Landlock still denies TCP;
    /// UDP and the loopback are reachable).
    NoNetNamespace,
    /// Checks run without their pids cgroup: no process cap, and a `setsid`
    /// daemon outlives its check.
    NoCgroup,
    /// Checks share the harness's PID namespace: they see (and count) every
    /// process of the host, the harness's pid included.
    NoPidNamespace,
    /// A tool write opens the existing file and writes it in place (through
    /// a hard link, outside the workspace).
    WriteInPlace,
    /// A verified task's commit stages every change in the work tree.
    CommitEverything,
    /// The process exits 0 whatever the ending.
    ExitZero,
    /// Every tool is offered to the model, whatever the spec allows.
    AllowlistIgnored,
    /// Every well-formed lesson is admitted: the harness's checks are
    /// skipped (the model grades its own lesson).
    AdmitsEveryLesson,
    /// A malformed compaction cuts the history to its last line instead of
    /// keeping it (a silent truncation).
    CompactionTruncates,
    /// Checks see the host's whole filesystem (no mount namespace view);
    /// Landlock still holds what it governs.
    NoMountNamespace,
    /// Checks keep the harness's capabilities (root keeps root's).
    CapsKept,
    /// Checks run without their syscall filter.
    NoSeccomp,
    /// Task commits go to the workspace's own `.git`, with the config,
    /// hooks and attributes found there (git as before issue 46).
    GitInWorkspace,
    /// Checks have no memory bound (no memory cgroup, no RLIMIT_AS).
    NoMemoryLimit,
    /// Checks have neither filesystem layer (no mount view, no Landlock):
    /// what the state seal alone must catch (defence in depth, tested as
    /// depth).
    NoFileLayers,
    /// A check's output is kept whole instead of its last
    /// CHECK_OUTPUT_MAX_BYTES (an unbounded observation for the model).
    CheckOutputWhole,
    /// The compaction request's `<goal>` is empty (the summarizer no longer knows what matters).
    CompactionDropsGoal,
    /// A run_command's observation lists only the files it created, not those it changed or removed (so the task's commit leaves them out).
    CommandCommitsCreatedOnly,
    /// edit_file replaces the first of several occurrences of `old` instead of refusing.
    EditFirstOfMany,
    /// A check may read $HOME ("tools need their dotfiles"): both filesystem layers grant it.
    HomeReadable,
    /// Checks start without their rlimits (CPU, file size, open files, address space).
    NoRlimits,
    /// The drift judge's queue also lists the tasks already verified.
    JudgeSeesDone,
    /// Every admitted lesson goes to every later task, relevant or not.
    LessonsReachEveryTask,
    /// A lesson that repeats an admitted one is admitted again.
    DuplicateLessonAdmitted,
    /// The morning page renders the judge's reasoning as markup (PreEscaped).
    ReasoningUnescaped,
    /// Checks have neither filesystem layer AND the state seal ignores ctime (a write with its mtime put back gets past both): what a case needs to see the seal's own check (defence in depth).
    SealMtimeOnly,
    /// After a GOAL_MET report is written, the files the verified tasks
    /// committed are removed from the workspace: the report says the
    /// predicate holds of a workspace that no longer meets it (only the
    /// audit's own re-run of the predicate can tell).
    UndoneAfterReport,
    /// The ledger journal books each reply at half its cost (the run's
    /// memory, and so the report, at the full cost): the journal that
    /// survives a crash forgets money.
    JournalBooksHalf,
    /// The morning page puts the model's claims in without escaping them.
    PageClaimUnescaped,
    /// A call to a tool of the harness that the spec does not allowlist
    /// runs (the offered list is still the allowlist).
    OffListCallRuns,
    /// The executor's tools are offered in reverse order: the same
    /// allowlisted set, another tool list than the recording's.
    ToolsReordered,
    /// Requests are sent naming another model than the spec's (booked at
    /// the spec's model's price).
    ModelRenamed,
    /// Requests are sent with a `max_tokens` one below the spec's bound.
    MaxTokensOffByOne,
    /// The system prompt goes out with a line appended.
    SystemPromptAppended,
    /// Requests carry a sampling temperature the spec does not set.
    TemperatureSet,
    /// A resume takes a checkpoint whatever goal it was written for.
    GoalMismatchAccepted,
    /// Only a GOAL_MET run is re-reported: a run that ended otherwise runs
    /// again.
    RerunsUnmetEndings,
    /// A raise is taken after any ending, not only the one it raises.
    RaiseAfterAnyEnding,
    /// The workspace is not locked: a second harness runs on it beside the
    /// first (with another state dir).
    NoWorkspaceLock,
    /// The stop report leaves out the task in flight.
    StopReportNoInFlight,
    /// A check in flight runs on to its end when the run is asked to stop.
    CheckNotCutByStop,
    /// SIGHUP is not taken as a stop request (a closed terminal kills the
    /// run mid-step).
    HupNotAStop,
    /// The spec's outbox may lie inside the workspace.
    OutboxInWorkspace,
    /// The run's elapsed time is the realtime clock's difference (a date
    /// subtraction) instead of the monotonic clock's: a clock step moves
    /// the wall-clock limit. Caught by `bench faults --scenario clock-step`,
    /// which steps the harness's time of day; no suite case steps a clock.
    RealtimeElapsed,
}

impl Mutant {
    pub const ALL: [Mutant; 54] = [
        Mutant::EmptyQueueIsSuccess,
        Mutant::TrustsTheClaim,
        Mutant::HaltAtThreshold,
        Mutant::NoProgressOffByOne,
        Mutant::JudgeSeesHistory,
        Mutant::ResumeReexecutes,
        Mutant::CapNotEnforced,
        Mutant::CacheWritesFree,
        Mutant::CheckEnvInherited,
        Mutant::NoLandlock,
        Mutant::NoNetNamespace,
        Mutant::NoCgroup,
        Mutant::NoPidNamespace,
        Mutant::WriteInPlace,
        Mutant::CommitEverything,
        Mutant::ExitZero,
        Mutant::AllowlistIgnored,
        Mutant::AdmitsEveryLesson,
        Mutant::CompactionTruncates,
        Mutant::NoMountNamespace,
        Mutant::CapsKept,
        Mutant::NoSeccomp,
        Mutant::GitInWorkspace,
        Mutant::NoMemoryLimit,
        Mutant::NoFileLayers,
        Mutant::CheckOutputWhole,
        Mutant::CompactionDropsGoal,
        Mutant::CommandCommitsCreatedOnly,
        Mutant::EditFirstOfMany,
        Mutant::HomeReadable,
        Mutant::NoRlimits,
        Mutant::JudgeSeesDone,
        Mutant::LessonsReachEveryTask,
        Mutant::DuplicateLessonAdmitted,
        Mutant::ReasoningUnescaped,
        Mutant::SealMtimeOnly,
        Mutant::UndoneAfterReport,
        Mutant::JournalBooksHalf,
        Mutant::PageClaimUnescaped,
        Mutant::OffListCallRuns,
        Mutant::ToolsReordered,
        Mutant::ModelRenamed,
        Mutant::MaxTokensOffByOne,
        Mutant::SystemPromptAppended,
        Mutant::TemperatureSet,
        Mutant::GoalMismatchAccepted,
        Mutant::RerunsUnmetEndings,
        Mutant::RaiseAfterAnyEnding,
        Mutant::NoWorkspaceLock,
        Mutant::StopReportNoInFlight,
        Mutant::CheckNotCutByStop,
        Mutant::HupNotAStop,
        Mutant::OutboxInWorkspace,
        Mutant::RealtimeElapsed,
    ];

    /// The wire name (`HARNESS_CHAOS_BROKEN`, `bench self-test --variants`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mutant::EmptyQueueIsSuccess => "empty-queue-is-success",
            Mutant::TrustsTheClaim => "trusts-the-claim",
            Mutant::HaltAtThreshold => "halt-at-threshold",
            Mutant::NoProgressOffByOne => "no-progress-off-by-one",
            Mutant::JudgeSeesHistory => "judge-sees-history",
            Mutant::ResumeReexecutes => "resume-reexecutes",
            Mutant::CapNotEnforced => "cap-not-enforced",
            Mutant::CacheWritesFree => "cache-writes-free",
            Mutant::CheckEnvInherited => "check-env-inherited",
            Mutant::NoLandlock => "no-landlock",
            Mutant::NoNetNamespace => "no-net-namespace",
            Mutant::NoCgroup => "no-cgroup",
            Mutant::NoPidNamespace => "no-pid-namespace",
            Mutant::WriteInPlace => "write-in-place",
            Mutant::CommitEverything => "commit-everything",
            Mutant::ExitZero => "exit-zero",
            Mutant::AllowlistIgnored => "allowlist-ignored",
            Mutant::AdmitsEveryLesson => "admits-every-lesson",
            Mutant::CompactionTruncates => "compaction-truncates",
            Mutant::NoMountNamespace => "no-mount-namespace",
            Mutant::CapsKept => "caps-kept",
            Mutant::NoSeccomp => "no-seccomp",
            Mutant::GitInWorkspace => "git-in-workspace",
            Mutant::NoMemoryLimit => "no-memory-limit",
            Mutant::NoFileLayers => "no-file-layers",
            Mutant::CheckOutputWhole => "check-output-whole",
            Mutant::CompactionDropsGoal => "compaction-drops-goal",
            Mutant::CommandCommitsCreatedOnly => "command-commits-created-only",
            Mutant::EditFirstOfMany => "edit-first-of-many",
            Mutant::HomeReadable => "home-readable",
            Mutant::NoRlimits => "no-rlimits",
            Mutant::JudgeSeesDone => "judge-sees-done",
            Mutant::LessonsReachEveryTask => "lessons-reach-every-task",
            Mutant::DuplicateLessonAdmitted => "duplicate-lesson-admitted",
            Mutant::ReasoningUnescaped => "reasoning-unescaped",
            Mutant::SealMtimeOnly => "seal-mtime-only",
            Mutant::UndoneAfterReport => "undone-after-report",
            Mutant::JournalBooksHalf => "journal-books-half",
            Mutant::PageClaimUnescaped => "page-claim-unescaped",
            Mutant::OffListCallRuns => "off-list-call-runs",
            Mutant::ToolsReordered => "tools-reordered",
            Mutant::ModelRenamed => "model-renamed",
            Mutant::MaxTokensOffByOne => "max-tokens-off-by-one",
            Mutant::SystemPromptAppended => "system-prompt-appended",
            Mutant::TemperatureSet => "temperature-set",
            Mutant::GoalMismatchAccepted => "goal-mismatch-accepted",
            Mutant::RerunsUnmetEndings => "reruns-unmet-endings",
            Mutant::RaiseAfterAnyEnding => "raise-after-any-ending",
            Mutant::NoWorkspaceLock => "no-workspace-lock",
            Mutant::StopReportNoInFlight => "stop-report-no-in-flight",
            Mutant::CheckNotCutByStop => "check-not-cut-by-stop",
            Mutant::HupNotAStop => "hup-not-a-stop",
            Mutant::OutboxInWorkspace => "outbox-in-workspace",
            Mutant::RealtimeElapsed => "realtime-elapsed",
        }
    }

    /// What the variant breaks, for the self-test's report.
    pub fn breaks(self) -> &'static str {
        match self {
            Mutant::EmptyQueueIsSuccess => "an empty queue is not success (QUEUE_EMPTY_GOAL_UNMET)",
            Mutant::TrustsTheClaim => "the model never grades its own work",
            Mutant::HaltAtThreshold => "drift halts strictly above halt_above",
            Mutant::NoProgressOffByOne => "K parked tasks in a row end NO_PROGRESS",
            Mutant::JudgeSeesHistory => "the judge sees only (goal, queue)",
            Mutant::ResumeReexecutes => "resume verifies, never re-executes",
            Mutant::CapNotEnforced => "spend never passes the hard cap",
            Mutant::CacheWritesFree => "all four usage fields are billed",
            Mutant::CheckEnvInherited => "no key reaches a check, the model or a file",
            Mutant::NoLandlock => {
                "code a check runs reads and writes only the workspace (Landlock)"
            }
            Mutant::NoNetNamespace => "a check has no network unless allowed (network namespace)",
            Mutant::NoCgroup => "a check's processes are capped and none outlives it (pids cgroup)",
            Mutant::NoPidNamespace => {
                "a check sees no process outside its own, the harness included (PID namespace)"
            }
            Mutant::WriteInPlace => "nothing outside the workspace changes",
            Mutant::CommitEverything => "one task per commit",
            Mutant::ExitZero => "the exit code is the ending's",
            Mutant::AllowlistIgnored => "only the spec's allowlisted tools are offered",
            Mutant::AdmitsEveryLesson => "a lesson is admitted only by the harness's checks",
            Mutant::CompactionTruncates => {
                "a malformed compaction keeps the history, never truncates it"
            }
            Mutant::NoMountNamespace => {
                "a check sees only the workspace, its tools and a minimal /etc (mount namespace)"
            }
            Mutant::CapsKept => "a check holds no capability, whatever the harness's uid",
            Mutant::NoSeccomp => {
                "a check cannot make device nodes, unix sockets, mounts or immutable files (seccomp)"
            }
            Mutant::GitInWorkspace => {
                "the harness never runs a program the workspace configures (its own git dir)"
            }
            Mutant::NoMemoryLimit => "a check's memory is bounded ([sandbox] memory_mb)",
            Mutant::NoFileLayers => {
                "a write past both filesystem layers into the state dir ends the run state_tampered (the seal)"
            }
            Mutant::CheckOutputWhole => "a check's output is kept to its last 4096 bytes",
            Mutant::CompactionDropsGoal => "the compaction request carries the immutable goal",
            Mutant::CommandCommitsCreatedOnly => "every file a run_command changed or removed is in its task's commit",
            Mutant::EditFirstOfMany => "edit_file refuses an ambiguous edit and changes nothing",
            Mutant::HomeReadable => "a check cannot read the home directory (its planted secrets)",
            Mutant::NoRlimits => "the rlimits (CPU, file size, open files) hold for every check",
            Mutant::JudgeSeesDone => "the judge sees the goal and the queue at that step only",
            Mutant::LessonsReachEveryTask => "a lesson reaches only the tasks it is relevant to",
            Mutant::DuplicateLessonAdmitted => "a duplicate lesson is refused",
            Mutant::ReasoningUnescaped => "the judge's reasoning is escaped on the page like every other text",
            Mutant::SealMtimeOnly => "the state seal sees a write into the state dir whose writer restored the mtime",
            Mutant::UndoneAfterReport => {
                "GOAL_MET stands on the predicate the post-run workspace meets (the audit re-runs it, never believes the report)"
            }
            Mutant::JournalBooksHalf => "the ledger journal books what the report spends",
            Mutant::PageClaimUnescaped => "the morning page escapes every value (a claim included)",
            Mutant::OffListCallRuns => "a tool call off the allowlist does nothing",
            Mutant::ToolsReordered => {
                "a replayed reply answers only the tool list it was recorded under"
            }
            Mutant::ModelRenamed => "a replayed reply answers only the model it was recorded for",
            Mutant::MaxTokensOffByOne => {
                "a replayed reply answers only the length limit it was recorded under"
            }
            Mutant::SystemPromptAppended => {
                "a replayed reply answers only the system prompt it was recorded under"
            }
            Mutant::TemperatureSet => {
                "a replayed reply answers only the sampling it was recorded under"
            }
            Mutant::GoalMismatchAccepted => "a resume refuses a checkpoint written for another goal",
            Mutant::RerunsUnmetEndings => {
                "a finished run of any ending is re-reported, never run again"
            }
            Mutant::RaiseAfterAnyEnding => {
                "a raise is refused after any ending but the one it raises"
            }
            Mutant::NoWorkspaceLock => "a second harness on the same workspace is refused",
            Mutant::StopReportNoInFlight => "the stop report names the task in flight",
            Mutant::CheckNotCutByStop => "a check in flight is cut by a stop request",
            Mutant::HupNotAStop => "SIGHUP is a stop request like SIGTERM and SIGINT",
            Mutant::OutboxInWorkspace => "a spec that puts the outbox inside the workspace is refused",
            Mutant::RealtimeElapsed => "the wall clock cannot be moved by stepping the system clock",
        }
    }

    /// The one check of the bench a dishonest variant lies to, which alone
    /// must catch it (another check may see it too, but is not what it
    /// probes): `audit.<gate>`
    /// (`bench::audit::AuditGate`) or `replay.<field>` (the replay server's
    /// comparison of a request's recording conditions, model::conditions).
    /// `bench self-test` counts such a variant caught only when that check
    /// failed in one of its case-runs, so a loosened check fails the
    /// self-test even where another check happens to fail too. None: any
    /// failed case-run catches it.
    pub fn gate(self) -> Option<&'static str> {
        Some(match self {
            Mutant::UndoneAfterReport => "audit.goal_met_implies_predicate",
            Mutant::WriteInPlace => "audit.confined",
            Mutant::ExitZero => "audit.report_consistent",
            Mutant::JournalBooksHalf => "audit.spend",
            Mutant::OffListCallRuns => "audit.allowlist",
            Mutant::JudgeSeesHistory => "audit.judge_requests",
            Mutant::CheckEnvInherited => "audit.secret_canary",
            Mutant::PageClaimUnescaped => "audit.page_safe",
            Mutant::ToolsReordered => "replay.tools",
            Mutant::ModelRenamed => "replay.model",
            Mutant::MaxTokensOffByOne => "replay.max_tokens",
            Mutant::SystemPromptAppended => "replay.system",
            Mutant::TemperatureSet => "replay.temperature",
            _ => return None,
        })
    }

    /// The `bench faults` scenario that alone can catch this variant (a
    /// fault of the machine no suite case makes), or None: the suite
    /// catches it. `bench self-test` leaves such a variant to
    /// `bench faults --self-test`.
    pub fn faults_scenario(self) -> Option<&'static str> {
        match self {
            Mutant::RealtimeElapsed => Some("clock-step"),
            _ => None,
        }
    }

    pub fn parse(s: &str) -> Option<Mutant> {
        Mutant::ALL.iter().copied().find(|m| m.as_str() == s)
    }
}

/// Is `m` the variant this process runs as? Always false unless the crate
/// was built with the `chaos-broken` feature AND `HARNESS_CHAOS_BROKEN`
/// names `m`.
#[cfg(feature = "chaos-broken")]
pub fn active(m: Mutant) -> bool {
    static M: std::sync::OnceLock<Option<Mutant>> = std::sync::OnceLock::new();
    *M.get_or_init(|| {
        std::env::var(crate::simfs::BROKEN_ENV)
            .ok()
            .and_then(|v| Mutant::parse(&v))
    }) == Some(m)
}

#[cfg(not(feature = "chaos-broken"))]
#[inline(always)]
pub fn active(_m: Mutant) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct_from_the_chaos_variants() {
        for m in Mutant::ALL {
            assert_eq!(Mutant::parse(m.as_str()), Some(m));
            assert!(crate::simfs::Broken::parse(m.as_str()).is_none());
        }
        for b in crate::simfs::Broken::NAMES {
            assert!(Mutant::parse(b).is_none());
        }
    }

    #[cfg(not(feature = "chaos-broken"))]
    #[test]
    fn a_production_build_runs_no_mutant_whatever_the_environment() {
        std::env::set_var(crate::simfs::BROKEN_ENV, "exit-zero");
        assert!(Mutant::ALL.iter().all(|m| !active(*m)));
    }
}
