//! The private TMPDIR a run's checks get (and a check run outside a run):
//! a directory in the system temp dir, removed when its owner ends. A
//! killed harness cannot remove its own, so every new one first sweeps the
//! directories of owners that are gone: the name carries the owner's pid,
//! and a directory whose owner no longer exists (and that this user owns)
//! is removed. Nothing is left behind by a bad night, and nothing of a
//! live run is touched.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Every such directory's name starts with this, then `<pid>-`.
pub const PREFIX: &str = "harness-check-tmp-";
/// Entries of the temp dir looked at per sweep, so a temp dir with
/// millions of files cannot stall a start.
pub const SWEEP_ENTRIES_MAX: usize = 10_000;

/// A new private temp dir for checks, after sweeping the orphans.
pub fn create() -> std::io::Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    sweep_orphans(&tmp);
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(&tmp)
}

/// Remove the check temp dirs under `dir` whose owner process is gone;
/// returns how many were removed. Errors are skipped: a sweep never stops
/// a run.
pub fn sweep_orphans(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = 0;
    for e in rd.flatten().take(SWEEP_ENTRIES_MAX) {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| owner_pid(n, PREFIX)) else {
            continue;
        };
        // Not a symlink, a directory, this user's: never follow or touch
        // anything else under a shared temp dir.
        let Ok(md) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !md.is_dir() || md.uid() != me || alive(pid) {
            continue;
        }
        if std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The owner pid a name of the form `<prefix><pid>-<rest>` carries (a
/// check temp dir's, a check cgroup's).
pub(crate) fn owner_pid(name: &str, prefix: &str) -> Option<i32> {
    let (pid, _) = name.strip_prefix(prefix)?.split_once('-')?;
    pid.parse().ok().filter(|p| *p > 0)
}

/// Does process `pid` exist? (A pid that exists but is another user's
/// answers EPERM: alive.)
pub(crate) fn alive(pid: i32) -> bool {
    use nix::errno::Errno;
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(Errno::ESRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dirs_of_gone_owners_are_swept() {
        let t = tempfile::tempdir().unwrap();
        // A pid no process has (above the kernel's pid_max of 2^22).
        let gone = t.path().join(format!("{PREFIX}{}-abc", 5_000_000));
        let live = t.path().join(format!("{PREFIX}{}-def", std::process::id()));
        let other = t.path().join("harness-check-tmp-notapid");
        let file = t.path().join(format!("{PREFIX}5000001-file"));
        for d in [&gone, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("x"), "y").unwrap();
        }
        std::fs::write(&file, "not a dir").unwrap();
        assert_eq!(sweep_orphans(t.path()), 1);
        assert!(!gone.exists());
        assert!(live.exists() && other.exists() && file.exists());
    }
}
