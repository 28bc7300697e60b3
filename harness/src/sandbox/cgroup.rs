//! A pids cgroup per confined check: a cap on how many processes it may
//! have at once (a fork bomb stops there) and the one handle that reaches
//! every process it started, `setsid` daemons included, so that nothing
//! outlives the check. cgroup v1's pids hierarchy, or a cgroup v2 root whose
//! pids controller we may use. Beside it, where cgroup v1's memory
//! hierarchy is writable, a memory group: the check's memory bound, and the
//! OOM kills that say a check hit it. No other cgroup is touched.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where the harness makes its groups: `harness-sandbox/` under the pids
/// hierarchy.
pub const ROOT: &str = "/sys/fs/cgroup/pids/harness-sandbox";
/// Where the memory groups go, when that hierarchy is there.
pub const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory/harness-sandbox";

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
    let probe = super::Limits {
        max_processes: 1,
        ..super::DEFAULT_LIMITS
    };
    match Group::create(&probe) {
        Ok(g) => {
            drop(g);
            true
        }
        Err(_) => false,
    }
}

/// One check's groups (pids; memory where there is one), removed (after
/// killing what is in them) when dropped.
pub struct Group {
    dir: PathBuf,
    memory: Option<MemoryGroup>,
}

/// The check's memory group, removed when dropped.
struct MemoryGroup {
    dir: PathBuf,
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        // Its processes are the pids group's: killed before this runs.
        for _ in 0..KILL_ROUNDS_MAX {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(KILL_ROUND_PAUSE);
        }
    }
}

/// A fresh directory `name` under `root` (one left by a killed harness
/// with our pid is emptied by `clear` and made afresh).
fn fresh_dir(root: &str, name: &str, clear: impl Fn(&Path)) -> io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let dir = Path::new(root).join(name);
    if let Err(e) = std::fs::create_dir(&dir) {
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
        clear(&dir);
        std::fs::create_dir(&dir)?;
    }
    Ok(dir)
}

impl Group {
    /// New empty groups allowing `limits.max_processes` at once and, where
    /// a memory group can be made, `limits.memory_bytes` of memory (swap
    /// included where the kernel accounts it).
    pub fn create(limits: &super::Limits) -> io::Result<Group> {
        static N: AtomicU64 = AtomicU64::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        std::fs::create_dir_all(ROOT)?;
        SWEPT.call_once(|| {
            sweep_orphans(Path::new(ROOT));
            sweep_orphans(Path::new(MEMORY_ROOT));
        });
        let name = format!(
            "check-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        // A group of a killed harness whose pid this process now has: what
        // is left in it is an orphan of that check. Emptied and removed
        // (Drop), then made afresh.
        let dir = fresh_dir(ROOT, &name, |d| {
            drop(Group {
                dir: d.to_path_buf(),
                memory: None,
            })
        })?;
        let mut g = Group { dir, memory: None };
        std::fs::write(g.dir.join("pids.max"), limits.max_processes.to_string())?;
        g.memory = memory_group(&name, limits.memory_bytes);
        Ok(g)
    }

    /// Each group's `cgroup.procs`, as the child joins them between clone
    /// and exec (no allocation there).
    pub fn procs_paths_c(&self) -> Vec<CString> {
        let dirs = std::iter::once(&self.dir).chain(self.memory.as_ref().map(|m| &m.dir));
        dirs.filter_map(|d| {
            CString::new(d.join("cgroup.procs").as_os_str().as_encoded_bytes()).ok()
        })
        .collect()
    }

    /// Whether a memory group bounds the check (else the address-space
    /// rlimit does).
    pub fn bounds_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// Whether the memory group's limit was hit: the OOM killer ended one
    /// of its processes (`oom_kill` in `memory.oom_control`), or an
    /// allocation was refused at the limit (`memory.failcnt`).
    pub fn memory_limit_hit(&self) -> bool {
        let Some(m) = &self.memory else {
            return false;
        };
        let read = |f: &str| std::fs::read_to_string(m.dir.join(f)).unwrap_or_default();
        let kills = read("memory.oom_control")
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        kills > 0
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
        drop(Group {
            dir: dir.clone(),
            memory: None,
        });
        if !dir.exists() {
            removed += 1;
        }
    }
    removed
}

/// Groups looked at per sweep.
pub const SWEEP_GROUPS_MAX: usize = 10_000;

/// The check's memory group under [`MEMORY_ROOT`], or None where that
/// hierarchy is not there or not ours to write (then RLIMIT_AS bounds it).
fn memory_group(name: &str, bytes: u64) -> Option<MemoryGroup> {
    if !Path::new(MEMORY_ROOT)
        .parent()
        .is_some_and(|p| p.join("memory.limit_in_bytes").exists())
    {
        return None;
    }
    let dir = fresh_dir(MEMORY_ROOT, name, |d| {
        drop(MemoryGroup {
            dir: d.to_path_buf(),
        })
    })
    .ok()?;
    let group = MemoryGroup { dir };
    std::fs::write(group.dir.join("memory.limit_in_bytes"), bytes.to_string()).ok()?;
    // Swap counts too where the kernel accounts it (else a hog swaps out).
    let _ = std::fs::write(
        group.dir.join("memory.memsw.limit_in_bytes"),
        bytes.to_string(),
    );
    Some(group)
}
