//! A harness bug `bench chaos` found with I/O-error injection
//! (HARNESS_SIMFS_FAULT): it failed on the harness as it was; the fix landed
//! with it (Ledger::record books in memory before journaling).
//!
//! Reproduction through the bench (seed 1, kill 4):
//!     bench chaos --seed 1 --mode power-loss --replay-kill 4

use harness::model::types::{CallRole, Usage};

#[test]
fn a_billed_call_is_booked_even_when_its_record_cannot_be_journaled() {
    let d = tempfile::tempdir().unwrap();
    // The journal's 2nd data write (the record after the call) fails once with ENOSPC.
    std::env::set_var(harness::simfs::FAULT_ENV, "enospc:write:2:once");
    let price = harness::ledger::Price {
        input_usd_per_mtok: 5.0,
        output_usd_per_mtok: 25.0,
    };
    let mut ledger = harness::ledger::Ledger::new(28.0, [("m".to_string(), price)].into());
    ledger.open_journal(&d.path().join("ledger.jsonl")).unwrap();
    let r = ledger
        .reserve(CallRole::Execute, "execute/t1/a0/0", "m", 2000, 4096)
        .unwrap();
    // The call was made and answered: the provider billed it.
    let usage = Usage {
        input_tokens: 3500,
        output_tokens: 700,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    };
    let billed = harness::ledger::cost_usd(&price, &usage);
    let err = ledger.record(r, usage);
    assert!(
        err.is_err(),
        "the fault plan makes the record's append fail"
    );
    // The run now ends UNRECOVERABLE_ERROR (ledger_journal) and writes its
    // final checkpoint and report from this ledger; the finished checkpoint
    // is never resumed, so the open reserve is never booked either. The
    // report shows less than the provider billed.
    assert!(
        ledger.spent_usd() + 1e-12 >= billed,
        "billed ${billed} but the ledger (and so the final report) shows ${}",
        ledger.spent_usd()
    );
}
