//! Shared by the chaos crate's integration tests: the harness binary cargo
//! builds next to them, and a driver config for a small seeded run.

#![allow(dead_code)] // each test file uses its own subset

use chaos::driver::{Config, Mode};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn newest_source() -> SystemTime {
    fn walk(p: &Path, t: &mut SystemTime) {
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

/// The `harness` binary cargo builds next to this test for the workspace's
/// tests (`cargo test --workspace` builds it; with `-p chaos` alone, build
/// it first: `cargo build -p harness`, with the same profile).
pub fn harness_bin() -> Option<PathBuf> {
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

pub fn config(bin: PathBuf, work: &Path, seed: u64) -> Config {
    Config {
        kills: 0,
        seed,
        modes: vec![Mode::Sigkill, Mode::PowerLoss],
        case: None,
        replay_kill: None,
        stratum: None,
        harness_bin: bin,
        broken: None,
        cases_dir: chaos::cases::default_dir(),
        work_dir: work.to_path_buf(),
        jobs: 2,
        keep: false,
        proc_timeout: Duration::from_secs(60),
        max_procs: 12,
        replay_extra: String::new(),
        interrupted: || false,
    }
}
