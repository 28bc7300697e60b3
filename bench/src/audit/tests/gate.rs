use super::*;

/// The check names summary.json, junit.xml and the pages carry, pinned
/// byte for byte and in the audit's order: renaming a variant must not
/// rename its check, and a new gate must be added here on purpose.
const PINNED: [(AuditGate, &str); 8] = [
    (
        AuditGate::GoalMetImpliesPredicate,
        "audit.goal_met_implies_predicate",
    ),
    (AuditGate::Confined, "audit.confined"),
    (AuditGate::ReportConsistent, "audit.report_consistent"),
    (AuditGate::Spend, "audit.spend"),
    (AuditGate::Allowlist, "audit.allowlist"),
    (AuditGate::JudgeRequests, "audit.judge_requests"),
    (AuditGate::SecretCanary, "audit.secret_canary"),
    (AuditGate::PageSafe, "audit.page_safe"),
];

#[test]
fn each_gate_keeps_its_wire_name_and_its_place() {
    let got: Vec<(AuditGate, String)> = AuditGate::ALL
        .iter()
        .map(|g| (*g, g.check_name()))
        .collect();
    let want: Vec<(AuditGate, String)> = PINNED.iter().map(|(g, n)| (*g, n.to_string())).collect();
    assert_eq!(got, want);
    for (g, n) in PINNED {
        assert_eq!(AuditGate::of_check(n), Some(g), "{n}");
    }
    for not_a_gate in ["audit.nope", "expect.spend", "spend", "audit."] {
        assert_eq!(AuditGate::of_check(not_a_gate), None, "{not_a_gate}");
    }
}

/// The audit runs every gate once, in order, each under its own name and
/// with its own verdict: the result of the gate's own check function.
#[test]
fn the_audit_runs_every_gate_once_under_its_own_name() {
    let r = report(Ending::GoalMet, true);
    let g = honest(Ending::GoalMet, true);
    let checks = audit(&r, &[], &g);
    let direct = [
        check_goal_met_implies_predicate(&r, &g),
        check_confined(&g),
        check_report_consistent(&r, &g),
        check_spend(&r, &g),
        check_allowlist(&[], &g),
        check_judge_requests(&r, &[], &g),
        check_secret_canary(&g),
        check_page_safe(&g),
    ];
    assert_eq!(checks.len(), PINNED.len());
    for ((c, (_, name)), want) in checks.iter().zip(PINNED).zip(direct) {
        assert_eq!(c.name, name);
        assert_eq!(c.kind, CheckKind::Gate, "{name}");
        assert_eq!((c.passed, &c.detail), (want.passed, &want.detail), "{name}");
    }
}

/// The tables that tell a reader what each gate holds (this module's docs,
/// suites/README.md) name every gate.
#[test]
fn the_docs_name_every_gate() {
    for (doc, text) in [
        ("bench/src/audit/mod.rs", include_str!("../mod.rs")),
        (
            "suites/README.md",
            include_str!("../../../../suites/README.md"),
        ),
    ] {
        for g in AuditGate::ALL {
            let cell = format!("| `{}` |", g.check_name());
            assert!(text.contains(&cell), "{doc} has no table row for {cell}");
        }
    }
}
