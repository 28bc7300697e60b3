use super::*;

#[test]
fn overbilled_is_what_records_billed_above_their_reserves() {
    use harness::ledger::journal::{frame, JournalEntry};
    let reserve = |seq, worst_usd| JournalEntry::Reserve {
        seq,
        worst_usd,
        attempt: 0,
        role: None,
        call_key: "plan/0".into(),
        model: "m".into(),
    };
    let record = |seq, cost_usd| JournalEntry::Record {
        seq,
        cost_usd,
        usage: Default::default(),
        basis: "usage".into(),
    };
    let text: String = [
        reserve(1, 0.3),
        record(1, 0.1),
        reserve(2, 0.3),
        record(2, 1.0),
    ]
    .iter()
    .map(|e| frame(e).unwrap())
    .collect();
    assert!((overbilled_usd(text.as_bytes()) - 0.7).abs() < 1e-12);
}

#[test]
fn spend_must_match_the_journal_and_stay_under_the_cap() {
    let e = Ending::NoProgress;
    let mut r = report(e, false);
    r.spend_usd = 1.25;
    let mut g = honest(e, false);
    g.journal = Some((1.25, 0.0));
    let GateResult {
        passed: ok,
        detail: d,
    } = check_spend(&r, &g);
    assert!(ok, "{d}");
    // The report forgot money the journal holds (booked or in flight).
    g.journal = Some((1.25, 0.5));
    let GateResult {
        passed: ok,
        detail: d,
    } = check_spend(&r, &g);
    assert!(!ok && d.contains("journal"), "{d}");
    g.journal = Some((1.5, 0.0));
    assert!(!check_spend(&r, &g).passed);
    // Over the cap, in the report or in the journal.
    r.spend_usd = 28.5;
    g.journal = Some((28.5, 0.0));
    let GateResult {
        passed: ok,
        detail: d,
    } = check_spend(&r, &g);
    assert!(!ok && d.contains("over the $28 cap"), "{d}");
    // Each figure is held to the cap on its own: the report's clause is
    // named even though the journal's fails too.
    assert!(d.contains("report spend $28.500000 is over"), "{d}");
    assert!(d.contains("the ledger journal holds $28.500000"), "{d}");
    // The excess of a reply billed above its reservation is allowed only
    // on a run that ended on it, and only that excess.
    g.journal_overbilled_usd = 0.6;
    assert!(!check_spend(&r, &g).passed);
    r.error_kind = Some(harness::ending::ErrorKind::BilledAboveReserve);
    let GateResult {
        passed: ok,
        detail: d,
    } = check_spend(&r, &g);
    assert!(ok, "{d}");
    g.journal_overbilled_usd = 0.4;
    assert!(!check_spend(&r, &g).passed);
    g.journal_overbilled_usd = 0.0;
    r.error_kind = None;
    // Spend with no journal at all.
    r.spend_usd = 0.5;
    g.journal = None;
    assert!(!check_spend(&r, &g).passed);
    // Nothing spent and no journal (a run refused before any call).
    r.spend_usd = 0.0;
    assert!(check_spend(&r, &g).passed);
    g.spec = None;
    assert!(!check_spend(&r, &g).passed);
}
