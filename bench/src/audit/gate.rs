//! The audit's gates, declared once: the audit runs each of them
//! (`super::run`), `bench guarantees --check` accepts `audit.<name>` only for
//! one of them, and summary.json, junit.xml and the pages name them by the
//! check name made here. A gate added, renamed or removed changes all of
//! those together.

strict::wire_names! {
    /// One check every case-run gets, whatever its case.toml asks (the
    /// table in `super`'s docs says what each holds). Declared in the order
    /// the audit runs them, which is the order their checks appear in
    /// summary.json.
    pub enum AuditGate {
        GoalMetImpliesPredicate = "goal_met_implies_predicate",
        Confined = "confined",
        ReportConsistent = "report_consistent",
        Spend = "spend",
        Allowlist = "allowlist",
        JudgeRequests = "judge_requests",
        SecretCanary = "secret_canary",
        PageSafe = "page_safe",
    }
}

impl AuditGate {
    /// What precedes a gate's wire name in its check name.
    pub const CHECK_PREFIX: &'static str = "audit.";

    /// The check's name in summary.json, junit.xml and the pages:
    /// `audit.<wire name>`.
    pub fn check_name(self) -> String {
        format!("{}{}", Self::CHECK_PREFIX, self.as_str())
    }

    /// The gate a check name (`audit.spend`) names, if any.
    pub fn of_check(name: &str) -> Option<AuditGate> {
        name.strip_prefix(Self::CHECK_PREFIX)
            .and_then(AuditGate::parse)
    }
}

/// What one gate found: whether the case-run passes it, and the line that
/// says why (summary.json's `checks[].detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateResult {
    pub passed: bool,
    pub detail: String,
}

impl GateResult {
    pub fn pass(detail: impl Into<String>) -> GateResult {
        GateResult {
            passed: true,
            detail: detail.into(),
        }
    }

    pub fn fail(detail: impl Into<String>) -> GateResult {
        GateResult {
            passed: false,
            detail: detail.into(),
        }
    }

    /// Passed when `problems` is empty (then `ok` says what held), else
    /// failed with the problems joined.
    pub fn unless(problems: &[String], ok: impl FnOnce() -> String) -> GateResult {
        if problems.is_empty() {
            GateResult::pass(ok())
        } else {
            GateResult::fail(problems.join("; "))
        }
    }
}
