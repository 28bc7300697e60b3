//! End to end: the driver kills the real harness binary at every stratum in
//! both modes, confirms the kills, builds power-cut images and fills the
//! report in the shape. (Whether the harness then passes is what
//! `bench chaos` reports; the harness bugs it found have their own tests.)
//!
//! Uses the `harness` binary cargo builds next to this test for the
//! workspace's tests (`cargo test --workspace` builds it; with `-p chaos`
//! alone, build it first: `cargo build -p harness`).

use chaos::driver::{self, Config, Mode};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

fn newest_source() -> SystemTime {
    fn walk(p: &std::path::Path, t: &mut SystemTime) {
        for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, t);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                *t = (*t).max(m);
            }
        }
    }
    let mut t = SystemTime::UNIX_EPOCH;
    walk(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../harness/src"),
        &mut t,
    );
    t
}

fn harness_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("harness");
    let fresh = bin
        .metadata()
        .and_then(|m| m.modified())
        .map(|m| m >= newest_source())
        .unwrap_or(false);
    if fresh {
        Some(bin)
    } else {
        eprintln!("SKIPPED: {} is missing or older than harness/src; run `cargo build -p harness` (cargo test --workspace does)", bin.display());
        None
    }
}

#[test]
fn every_stratum_is_killed_and_checked_in_both_modes() {
    let Some(bin) = harness_bin() else { return };
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        kills: 0,
        seed: 4242,
        modes: vec![Mode::Sigkill, Mode::PowerLoss],
        case: None,
        replay_kill: None,
        harness_bin: bin,
        broken: None,
        cases_dir: chaos::cases::default_dir(),
        work_dir: work.path().to_path_buf(),
        jobs: 2,
        keep: false,
        proc_timeout: Duration::from_secs(60),
        max_procs: 12,
        replay_extra: String::new(),
    };
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
        // One kill index per stratum: every named phase, random timing (and I/O errors).
        let cfg = Config {
            kills: driver::strata(mode).len(),
            ..cfg.clone()
        };
        let r = driver::run_mode(&cfg, &prep, mode, &|_, _| {});
        assert_eq!(r.kills as usize, cfg.kills);
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
    assert_eq!(j["invariants"].as_object().unwrap().len(), 8);
    assert!(chaos::report::to_markdown(&info, &reports).contains("| 1. no_torn_checkpoint"));
}
