//! The strata issue 16 added, each in a small seeded run on the production
//! harness: bit rot after commit is refused with the checksum refusal, kills
//! right after a park, during a replan and at the drift check's checkpoint
//! hold every invariant (a parked or pruned task is never run again), and
//! so do kills at and around a compaction (a recorded compaction is never
//! sent again). Whether the bench catches a harness that breaks them is
//! `bench chaos --self-test` (its `skip-checksum` and `skip-park-checkpoint`
//! variants); a harness that skips the checkpoint after a compaction has no
//! variant (it would be harness code), and was tried by hand (chaos/README.md).

use chaos::driver::{self, Config, Mode, ModeReport};

fn run(stratum: &str, kills: usize, seed: u64, case: Option<&str>) -> Option<Vec<ModeReport>> {
    let bin = crate::common::harness_bin()?;
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        kills,
        stratum: Some(stratum.into()),
        case: case.map(str::to_string),
        ..crate::common::config(bin, work.path(), seed)
    };
    let prep = driver::prepare(&cfg).unwrap();
    let reports: Vec<ModeReport> = [Mode::Sigkill, Mode::PowerLoss]
        .iter()
        .map(|m| driver::run_mode(&cfg, &prep, *m, &|_, _| {}))
        .collect();
    for r in &reports {
        assert_eq!(r.kills as usize, kills, "{}", r.mode);
        assert_eq!(
            r.by_stratum.get(stratum).copied(),
            Some(kills as u64),
            "{:?}",
            r.by_stratum
        );
        assert!(
            r.violations.is_empty(),
            "{} {stratum}: {:#?}",
            r.mode,
            r.violations
        );
        assert!(r.endings.keys().all(|e| e != "NONE"), "{:?}", r.endings);
    }
    Some(reports)
}

#[test]
fn bit_rot_after_commit_is_refused_with_the_checksum_refusal() {
    let Some(reports) = run("bit_rot", 8, 11, None) else {
        return;
    };
    let mut only_the_checksum_catches = 0;
    for r in &reports {
        // Every trial rotted a committed checkpoint, and every one ended
        // refusing it: UNRECOVERABLE_ERROR with checkpoint_checksum_mismatch.
        assert_eq!(r.bit_rot.values().sum::<u64>(), 8, "{:?}", r.bit_rot);
        assert_eq!(
            r.refusals.get("checkpoint_checksum_mismatch"),
            Some(&8),
            "{:?}",
            r.refusals
        );
        assert_eq!(
            r.endings.get("UNRECOVERABLE_ERROR"),
            Some(&8),
            "{:?}",
            r.endings
        );
        only_the_checksum_catches += r
            .bit_rot
            .iter()
            .filter(|(k, _)| k.contains("valid without the checksum"))
            .map(|(_, n)| n)
            .sum::<u64>();
    }
    assert!(
        only_the_checksum_catches >= 4,
        "well-formed rot that decodes as a valid state: {only_the_checksum_catches}"
    );
}

#[test]
fn kills_right_after_a_park_never_run_the_parked_task_again() {
    let Some(reports) = run("after_park", 8, 12, Some("release-triage")) else {
        return;
    };
    for r in &reports {
        assert!(
            r.by_phase.contains_key("after_park_before_checkpoint") || r.by_phase.len() >= 2,
            "{:?}",
            r.by_phase
        );
        assert!(r.confirmed_kills >= 8, "{r:?}");
        // Resumes started with a parked or pruned task on disk.
        assert!(
            r.invariants["settled_task_never_rerun"].exercised >= 4,
            "{:?}",
            r.invariants
        );
    }
    let phases: std::collections::BTreeSet<&String> =
        reports.iter().flat_map(|r| r.by_phase.keys()).collect();
    assert!(
        phases.iter().any(|p| *p == "after_park_before_checkpoint"),
        "{phases:?}"
    );
}

#[test]
fn kills_during_a_replan_hold_the_invariants() {
    let Some(reports) = run("during_replan", 6, 13, None) else {
        return;
    };
    for r in &reports {
        assert!(r.confirmed_kills >= 6, "{r:?}");
    }
}

#[test]
fn kills_at_the_drift_checkpoint_never_run_a_pruned_task() {
    let Some(reports) = run("drift_checkpoint", 6, 14, Some("release-triage")) else {
        return;
    };
    for r in &reports {
        assert!(r.confirmed_kills >= 6, "{r:?}");
    }
    let phases: std::collections::BTreeSet<&String> =
        reports.iter().flat_map(|r| r.by_phase.keys()).collect();
    assert!(
        phases
            .iter()
            .any(|p| *p == "after_drift_gate_before_checkpoint"),
        "{phases:?}"
    );
}

#[test]
fn kills_at_a_compaction_reach_its_phase_and_never_send_a_recorded_one_again() {
    // The phase's own stratum: every kill lands right after the compaction's
    // outcome is applied, before its checkpoint. A harness without the
    // pause point (or a case that never compacts) exits before the signal.
    let Some(reports) = run(
        "after_compact_before_checkpoint",
        6,
        15,
        Some("history-compaction"),
    ) else {
        return;
    };
    for r in &reports {
        let at = r
            .by_phase
            .get("after_compact_before_checkpoint")
            .copied()
            .unwrap_or(0);
        assert!(
            at >= 6,
            "{}: {at} kills at the phase: {:?}",
            r.mode,
            r.by_phase
        );
        // Every resume started after a compaction was sent.
        assert!(
            r.invariants["compaction_at_most_once"].exercised >= 6,
            "{:?}",
            r.invariants
        );
    }
    // The window around the call: in flight, answered, the phase, the
    // checkpoint's writes, the next call.
    let Some(reports) = run("compaction", 8, 16, Some("history-compaction")) else {
        return;
    };
    for r in &reports {
        assert!(r.confirmed_kills >= 8, "{r:?}");
    }
    let phases: std::collections::BTreeSet<&String> =
        reports.iter().flat_map(|r| r.by_phase.keys()).collect();
    assert!(phases.len() >= 3, "{phases:?}");
}

#[test]
fn kills_right_after_a_raise_never_raise_twice_and_keep_the_raised_cap() {
    // The raise stratum: the first process ends BUDGET_EXHAUSTED, the next
    // raises the cap (--raise-cap-usd) and is killed right after the raise
    // is journaled, in the checkpoint that records it, or at the next one;
    // the same command again goes on. trial.rs checks the journal holds the
    // one raise and the final report's spend is under the raised cap.
    let Some(reports) = run(
        "after_raise_before_checkpoint",
        8,
        17,
        Some("budget-wind-down"),
    ) else {
        return;
    };
    for r in &reports {
        assert!(r.confirmed_kills >= 8, "{r:?}");
        assert!(
            r.invariants["ledger_never_forgets"].exercised >= 8,
            "{:?}",
            r.invariants
        );
        assert!(
            !r.endings.contains_key("BUDGET_EXHAUSTED"),
            "raised, every run went on past its first cap: {:?}",
            r.endings
        );
    }
    let at: u64 = (reports.iter())
        .map(|r| {
            r.by_phase
                .get("after_raise_before_checkpoint")
                .copied()
                .unwrap_or(0)
        })
        .sum();
    assert!(
        at >= 4,
        "{:?}",
        reports.iter().map(|r| &r.by_phase).collect::<Vec<_>>()
    );
}
