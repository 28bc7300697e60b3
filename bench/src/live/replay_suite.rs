//! After a hybrid command: what it observed, as a suite that replays offline.
//! Each case whose case-runs were all measured is copied from the suite it
//! ran from, its cassette replaced by the hybrid recording (every run's
//! replayed turns and its live tail, with the conditions read from the
//! requests that were sent). Its scenario.json is left out: the cassette is a
//! recording now, not a compilation of the scenario, so the stale-cassette
//! check has nothing to compare it with.
//!
//! The next run replays it with `bench run --suite DIR` (or, for `bench ab`,
//! as the arm's own suite: `--suite-b DIR`), and `bench diverge` compares its
//! cassettes with the original recordings.

use super::recorder::CaseWritten;
use crate::suite::Case;
use std::path::Path;

/// The files of a case that the copy does not take from the original.
const REPLACED: [&str; 2] = ["cassette.json", "scenario.json"];

/// Write the suite under `dir`; returns how many cases it holds, and a line
/// for each case left out (no complete recording).
pub fn write(
    cases: &[Case],
    written: &[CaseWritten],
    dir: &Path,
) -> Result<(usize, Vec<String>), String> {
    let mut n = 0;
    let mut left_out = Vec::new();
    for w in written {
        let Some(cassette) = &w.path else {
            left_out.push(format!(
                "{}: {}",
                w.case,
                w.error.as_deref().unwrap_or("not recorded")
            ));
            continue;
        };
        if !w.left_out.is_empty() {
            left_out.push(format!("{}: {}", w.case, w.left_out.join("; ")));
            continue;
        }
        let Some(case) = cases.iter().find(|c| c.id() == w.case) else {
            continue;
        };
        if case.file.cassette.is_some() {
            left_out.push(format!(
                "{}: its case.toml names its cassette file (`cassette`); copy it by hand",
                w.case
            ));
            continue;
        }
        let to = dir
            .join(case.category())
            .join(case.dir.file_name().unwrap_or(case.id().as_ref()));
        copy_case(&case.dir, &to)
            .and_then(|_| std::fs::copy(cassette, to.join("cassette.json")).map(|_| ()))
            .map_err(|e| format!("{}: {e}", to.display()))?;
        n += 1;
    }
    Ok((n, left_out))
}

fn copy_case(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    harness::workspace::copy_tree(from, to)?;
    for f in REPLACED {
        match std::fs::remove_file(to.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}
