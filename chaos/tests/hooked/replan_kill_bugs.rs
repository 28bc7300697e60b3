//! A harness bug the during_replan stratum found (issue 16), fixed in
//! `Runner::prepare` (a resume gives a dry queue its replan).
//!
//! A kill while `replan/<n>` is in flight, or after it answered but before
//! its checkpoint, leaves on disk the checkpoint written after the last task:
//! queue empty, replans not yet counted. The resumed run's `should_stop`
//! sees `planned && queue empty` and ends QUEUE_EMPTY_GOAL_UNMET before
//! `replan_if_dry` can run: the replan is lost (and paid for), and a run
//! that ends GOAL_MET unkilled ends a FAILURE with its replans left. (No
//! invariant is broken: nothing is lost or done twice; the run gives up.)
//! Now the resume replans, and the run ends as unkilled.

use chaos::driver::{self, Config, Mode};

#[test]
fn a_kill_during_a_replan_does_not_end_the_run_early() {
    let Some(bin) = crate::common::harness_bin() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        kills: 6,
        stratum: Some("during_replan".into()),
        case: Some("release-triage".into()),
        ..crate::common::config(bin, work.path(), 5)
    };
    let prep = driver::prepare(&cfg).unwrap();
    assert_eq!(prep.calib[prep.only.unwrap()].ending, "GOAL_MET");
    let r = driver::run_mode(&cfg, &prep, Mode::Sigkill, &|_, _| {});
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!(r.endings.get("GOAL_MET"), Some(&6), "{:?}", r.endings);
}
