//! What a check is, and the one table of which expectations are gates.

use serde::{Deserialize, Serialize};

/// Whether a failed check fails the case-run outright or lowers its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// A guarantee: any failure fails the case-run.
    Gate,
    /// Quality: counted in the score.
    Scored,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Check {
    pub name: String,
    pub kind: CheckKind,
    pub passed: bool,
    pub detail: String,
}

/// The kind of the expectation `key` (a case.toml `[expect]` key; a check's
/// name is its key, or `key.<what>`). Only the quality expectations are
/// listed: every other expectation, including any added later, is a gate
/// until someone argues it is not.
pub fn kind_of(key: &str) -> CheckKind {
    match key {
        "verified"
        | "verified_count"
        | "queue_left"
        | "parked_reason_contains"
        | "files_contain"
        | "outbox_contains"
        | "detail_contains" => CheckKind::Scored,
        _ => CheckKind::Gate,
    }
}

/// A check named after its expectation, with that expectation's kind.
pub(super) fn check(name: String, passed: bool, detail: String) -> Check {
    let key = name.split('.').next().unwrap_or("");
    Check {
        kind: kind_of(key),
        name,
        passed,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_table_lists_quality_and_defaults_to_gate() {
        for k in [
            "verified",
            "verified_count",
            "files_contain",
            "outbox_contains",
            "detail_contains",
            "queue_left",
            "parked_reason_contains",
        ] {
            assert_eq!(kind_of(k), CheckKind::Scored, "{k}");
        }
        for k in [
            "predicate_met",
            "parked",
            "pruned",
            "outbox_total",
            "outbox_key_count",
            "spend_usd_min",
            "spend_usd_max",
            "report",
            "drift_bands",
            "lessons",
            "lessons_refused",
            "compactions",
            "files_absent",
            "notice_at_end",
            "min_budget_notices",
            "commits_count",
            "request_contains_in_order",
            "request_excludes",
            "audit",
            "a_key_added_later",
        ] {
            assert_eq!(kind_of(k), CheckKind::Gate, "{k}");
        }
        assert_eq!(
            check("report.error_kind".into(), true, String::new()).kind,
            CheckKind::Gate
        );
        assert_eq!(
            check("files_contain.db/0042.sql".into(), true, String::new()).kind,
            CheckKind::Scored
        );
    }
}
