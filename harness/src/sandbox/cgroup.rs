//! A pids cgroup per confined check: a cap on how many processes it may
//! have at once (a fork bomb stops there) and the one handle that reaches
//! every process it started, `setsid` daemons included, so that nothing
//! outlives the check. cgroup v1's pids hierarchy, or a cgroup v2 root whose
//! pids controller we may use; no other cgroup is touched.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where the harness makes its groups: `harness-sandbox/` under the pids
/// hierarchy.
pub const ROOT: &str = "/sys/fs/cgroup/pids/harness-sandbox";

/// How long [`Group::kill_all`] keeps killing a group that still has
/// processes (each round reads the list again: a process forked while the
/// last round ran is in it), milliseconds.
pub const KILL_ROUNDS_MAX: u32 = 100;
const KILL_ROUND_PAUSE: Duration = Duration::from_millis(2);

/// Whether groups can be made here (the hierarchy exists and is writable).
pub fn available() -> bool {
    let Some(parent) = Path::new(ROOT).parent() else {
        return false;
    };
    if !parent.join("cgroup.procs").exists() {
        return false;
    }
    match Group::create(1) {
        Ok(g) => {
            drop(g);
            true
        }
        Err(_) => false,
    }
}

/// One check's group, removed (after killing what is in it) when dropped.
pub struct Group {
    dir: PathBuf,
}

impl Group {
    /// A new empty group allowing `max_processes` at once.
    pub fn create(max_processes: u64) -> io::Result<Group> {
        static N: AtomicU64 = AtomicU64::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        std::fs::create_dir_all(ROOT)?;
        SWEPT.call_once(|| {
            sweep_orphans(Path::new(ROOT));
        });
        let dir = Path::new(ROOT).join(format!(
            "check-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = std::fs::create_dir(&dir) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
            // A group of a killed harness whose pid this process now has:
            // what is left in it is an orphan of that check. Emptied and
            // removed (Drop), then made afresh.
            drop(Group { dir: dir.clone() });
            std::fs::create_dir(&dir)?;
        }
        let g = Group { dir };
        std::fs::write(g.dir.join("pids.max"), max_processes.to_string())?;
        Ok(g)
    }

    /// The group's `cgroup.procs`, as the child joins it between fork and
    /// exec (no allocation there).
    pub fn procs_path_c(&self) -> CString {
        CString::new(self.dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
            .unwrap_or_default()
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// SIGKILL every process in the group until it is empty (bounded by
    /// [`KILL_ROUNDS_MAX`] rounds).
    pub fn kill_all(&self) {
        for _ in 0..KILL_ROUNDS_MAX {
            let pids = self.pids();
            if pids.is_empty() {
                return;
            }
            for p in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(KILL_ROUND_PAUSE);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_all();
        // A process killed a moment ago may still be leaving the group.
        for _ in 0..KILL_ROUNDS_MAX {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(KILL_ROUND_PAUSE);
        }
    }
}

/// Groups under `root` whose harness is gone (killed before it could
/// remove them): every process left in one is killed and the group
/// removed, so nothing a check started outlives a killed harness for longer
/// than the next harness's first check. Returns how many were removed.
pub fn sweep_orphans(root: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for e in rd.flatten().take(SWEEP_GROUPS_MAX) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| crate::check_tmp::owner_pid(n, "check-"))
        else {
            continue;
        };
        if crate::check_tmp::alive(pid) {
            continue;
        }
        let dir = e.path();
        drop(Group { dir: dir.clone() });
        if !dir.exists() {
            removed += 1;
        }
    }
    removed
}

/// Groups looked at per sweep.
pub const SWEEP_GROUPS_MAX: usize = 10_000;
