use super::*;

#[test]
fn goal_met_with_a_false_predicate_fails() {
    let r = report(Ending::GoalMet, true);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_goal_met_implies_predicate(&r, &honest(Ending::GoalMet, true));
    assert!(ok, "{d}");
    let GateResult {
        passed: ok,
        detail: d,
    } = check_goal_met_implies_predicate(&r, &honest(Ending::GoalMet, false));
    assert!(!ok, "{d}");
    assert!(d.contains("NOT met"), "{d}");
    // The report's own predicate_met must agree with the bench's run.
    let lying = report(Ending::GoalMet, false);
    assert!(!check_goal_met_implies_predicate(&lying, &honest(Ending::GoalMet, true)).passed);
    // A predicate the bench could not run (or did not) proves nothing.
    let mut h = honest(Ending::GoalMet, true);
    h.predicate = Some(PredicateRerun {
        passed: Err(RerunError::NoCheck),
        hard_cap_usd: None,
    });
    assert!(!check_goal_met_implies_predicate(&r, &h).passed);
    assert!(!check_goal_met_implies_predicate(&r, &Gathered::default()).passed);
    // Endings that claim no goal pass whatever the predicate says.
    let q = report(Ending::QueueEmptyGoalUnmet, false);
    assert!(
        check_goal_met_implies_predicate(&q, &honest(Ending::QueueEmptyGoalUnmet, true)).passed
    );
}

/// A raised cap is the run's cap only when the bench asked for that
/// raise: a journaled raise nobody asked for (or to another value)
/// leaves the harness held to the spec's cap.
#[test]
fn the_cap_is_the_raise_the_bench_asked_for_and_no_other() {
    let e = Ending::GoalMet;
    let mut r = report(e, true);
    r.hard_cap_usd = 100.0;
    let held = |asked: Option<f64>, journal: Option<f64>| {
        let mut h = honest(e, true);
        h.raise_asked_usd = asked;
        h.journal_raised_cap_usd = journal;
        check_report_consistent(&r, &h)
    };
    let GateResult {
        passed: ok,
        detail: d,
    } = held(Some(100.0), Some(100.0));
    assert!(ok && d.contains("the raise's"), "{d}");
    for (asked, journal) in [
        (None, Some(100.0)),
        (Some(50.0), Some(100.0)),
        (Some(100.0), None),
    ] {
        let GateResult {
            passed: ok,
            detail: d,
        } = held(asked, journal);
        assert!(
            !ok && d.contains("the spec's 28"),
            "{asked:?} {journal:?}: {d}"
        );
    }
    assert_eq!(raised_cap_usd(b"{\"op\":\"limit\",\"unix_ms\":1,\"limit\":\"hard_cap_usd\",\"old\":28.0,\"new\":100.0}\n"), Some(100.0));
    assert_eq!(raised_cap_usd(b""), None);
}

#[test]
fn report_consistent_catches_each_disagreement() {
    let e = Ending::NoProgress;
    let good = report(e, false);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&good, &honest(e, false));
    assert!(ok, "{d}");
    // The process exited with another code than the report says.
    let mut h = honest(e, false);
    h.exit_code = Some(0);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&good, &h);
    assert!(!ok && d.contains("process exited 0"), "{d}");
    // The report's exit code is not the ending's.
    let mut r = good.clone();
    r.exit_code = 0;
    assert!(!check_report_consistent(&r, &h).passed);
    // A verified task the plan never admitted.
    let mut h = honest(e, false);
    h.events = admitted(&["t0", "t2", "t3"]);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&good, &h);
    assert!(!ok && d.contains("t1"), "{d}");
    // A cap that is not the spec's.
    let mut h = honest(e, false);
    h.spec = spec(5.0);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&good, &h);
    assert!(!ok && d.contains("spec"), "{d}");
    // An unmet-goal ending that reports the predicate met.
    let r = report(Ending::QueueEmptyGoalUnmet, true);
    assert!(!check_report_consistent(&r, &honest(Ending::QueueEmptyGoalUnmet, true)).passed);
    // Class and alert must be the ending's.
    let mut r = good.clone();
    r.class = harness::ending::Class::Success;
    assert!(!check_report_consistent(&r, &honest(e, false)).passed);
    // Nothing gathered: fails and says so.
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&good, &Gathered::default());
    assert!(!ok && d.contains("not gathered"), "{d}");
}
