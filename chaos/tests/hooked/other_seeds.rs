//! Findings of seeds other than CI's (issues 47 and 48), each replayed by
//! its kill index: an oracle false alarm, and a harness defect.

use chaos::driver::{self, Config, IoSite, Mode, Stratum};

/// The violations of kill `k` of `seed` in `mode`, replayed.
fn replay(seed: u64, mode: Mode, k: usize) -> Vec<driver::Violation> {
    let bin = crate::common::harness_bin().expect("the harness binary");
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        replay_kill: Some(k),
        modes: vec![mode],
        ..crate::common::config(bin, work.path(), seed)
    };
    let prep = driver::prepare(&cfg).unwrap();
    driver::run_mode(&cfg, &prep, mode, &|_, _| {}).violations
}

/// Issue 48: a resume on a rotted frame refused it, and was killed while
/// writing its refusal's report (report.json past its fsync, or the page);
/// the oracle, which allowed only `temp_written`, called that "ran on".
#[test]
fn a_refusal_killed_at_any_step_of_its_report_is_a_refusal() {
    if crate::common::harness_bin().is_none() {
        return;
    }
    for (seed, mode, k) in [
        (7, Mode::PowerLoss, 158), // after_fsync_file:1, report.json
        (4, Mode::PowerLoss, 131), // after_fsync_file:2, the page
        (2, Mode::Sigkill, 180),   // after_rename_before_fsync_dir:2, the page
    ] {
        let v = replay(seed, mode, k);
        assert!(v.is_empty(), "seed {seed} {mode:?} kill {k}: {v:#?}");
    }
}

/// Issue 47: ENOSPC on the directory fsync of t3's write in
/// budget-wind-down, then the budget ends the run with t3 in flight; the
/// end of the run verified it from the page cache ("verified at end") and
/// the power cut took the write: report_agrees. Now it is parked.
#[test]
fn a_task_whose_write_is_in_doubt_when_the_run_ends_is_not_verified() {
    if crate::common::harness_bin().is_none() {
        return;
    }
    let v = replay(1, Mode::PowerLoss, 2446);
    assert!(v.is_empty(), "{v:#?}");
}

/// The CI draw reaches that site: at seed 1 and 200 kills, one io_error
/// trial of power-loss mode faults budget-wind-down's last write in doubt.
#[test]
fn the_ci_draw_faults_the_last_write_in_doubt_of_budget_wind_down() {
    let Some(bin) = crate::common::harness_bin() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        modes: vec![Mode::PowerLoss],
        ..crate::common::config(bin, work.path(), 1)
    };
    let prep = driver::prepare(&cfg).unwrap();
    let bwd = prep
        .cases
        .iter()
        .position(|c| c.id == "budget-wind-down")
        .unwrap();
    let last = *prep.calib[bwd].in_doubt_fsyncs.last().unwrap();
    let aimed: Vec<_> = (0..200)
        .map(|k| driver::plan(1, Mode::PowerLoss, k, &prep.cases, &prep.calib, None))
        .filter(|p| p.stratum == Stratum::IoError && p.io_site == Some(IoSite::InDoubtAtEnd))
        .filter(|p| p.case == bwd)
        .collect();
    assert_eq!(aimed.len(), 1, "{aimed:#?}");
    assert!(
        matches!(&aimed[0].first, chaos::proc::Target::Fault { spec } if spec.ends_with(&format!(":fsync:{last}:once"))),
        "{:?}",
        aimed[0].first
    );
}
