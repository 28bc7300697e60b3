//! End to end: the driver kills the real harness binary at every stratum in
//! both modes, confirms the kills, builds power-cut images and fills the
//! report in the shape. (Whether the harness then passes is what
//! `bench chaos` reports; the harness bugs it found have their own tests.)
//!
//! Uses the `harness` binary cargo builds next to this test for the
//! workspace's tests (`cargo test --workspace` builds it; with `-p chaos`
//! alone, build it first: `cargo build -p harness`).

use chaos::driver::{self, Config, Invariant, Mode};

#[test]
fn every_stratum_is_killed_and_checked_in_both_modes() {
    let Some(bin) = crate::common::harness_bin() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let cfg = crate::common::config(bin, work.path(), 4242);
    let prep = driver::prepare(&cfg).unwrap();
    assert!(
        prep.calib
            .iter()
            .all(|c| c.phases.values().sum::<u64>() > 20),
        "{:?}",
        prep.calib
    );
    let mut reports = vec![];
    for mode in [Mode::Sigkill, Mode::PowerLoss] {
        // One kill index per stratum: every named phase, the kill windows,
        // random timing, bit rot (and I/O errors).
        let cfg = Config {
            kills: driver::strata(mode).len(),
            ..cfg.clone()
        };
        let r = driver::run_mode(&cfg, &prep, mode, &|_, _| {});
        assert_eq!(r.kills as usize, cfg.kills);
        assert_eq!(
            r.by_stratum.len(),
            cfg.kills,
            "one kill per stratum: {:?}",
            r.by_stratum
        );
        assert_eq!(r.bit_rot.values().sum::<u64>(), 1, "{:?}", r.bit_rot);
        for (name, c) in &r.invariants {
            assert_eq!(c.checked, r.kills, "{name}");
        }
        let named = harness::chaos_hook::Phase::ALL
            .iter()
            .filter(|p| r.by_phase.contains_key(p.as_str()))
            .count();
        assert!(
            named >= 8,
            "{mode:?}: confirmed kills at only {named} named phases: {:?}",
            r.by_phase
        );
        assert!(r.confirmed_kills >= 10, "{mode:?}: {r:?}");
        if mode == Mode::PowerLoss {
            assert!(r.power_cuts >= r.kills, "{r:?}");
            assert_eq!(r.io_faults.values().sum::<u64>(), 1);
        }
        for v in &r.violations {
            assert!(
                v.replay.contains("--seed 4242")
                    && v.replay.contains(&format!("--replay-kill {}", v.kill)),
                "{v:?}"
            );
        }
        assert!(
            r.endings.keys().all(|e| e != "NONE"),
            "every run ended: {:?}",
            r.endings
        );
        reports.push(r);
    }
    let info = chaos::report::RunInfo {
        seed: 4242,
        mode_label: "both",
        harness: String::new(),
        broken: None,
        work_dir: String::new(),
        jobs: 2,
        cases: prep.cases.iter().map(|c| c.id.clone()).collect(),
        calibration: prep.calib.clone(),
        wall_s: 0.0,
        build_s: 0.0,
    };
    let j = chaos::report::to_json(&info, &reports);
    for k in [
        "kills",
        "confirmed_kills",
        "violations",
        "by_phase",
        "invariants",
        "endings",
        "seed",
        "mode",
    ] {
        assert!(j.get(k).is_some(), "chaos.json lacks {k}");
    }
    assert_eq!(
        j["invariants"].as_object().unwrap().len(),
        Invariant::ALL.len()
    );
    assert!(chaos::report::to_markdown(&info, &reports).contains("| 1. no_torn_checkpoint"));
}
