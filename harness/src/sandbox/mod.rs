//! The confinement of every process the harness starts on the model's
//! behalf: the goal predicate and the spec's checks, which in real use run
//! code the model wrote (a test suite, a build). The file tools keep the
//! model inside the workspace by construction (`confined.rs`); this module
//! does the same for processes, with what the kernel offers, probed once per
//! process and never pretended:
//!
//! - **Landlock** ([`landlock`]): writes only to the workspace and the
//!   check's private temp dir; reads only those, a read-only system
//!   allowlist (the interpreters and libraries on PATH) and the check's own
//!   script directory. Not `/proc`, not the state dir (ledger, checkpoints,
//!   events), not the spec. A Landlock domain also cannot ptrace, signal or
//!   read `/proc/<pid>/environ` of the harness (scoped to its own domain).
//! - **A network namespace** of its own (no interface but a down loopback),
//!   unless the check is allowed the network.
//! - **A PID namespace** of its own: the check is its namespace's init, sees
//!   no process outside it (the harness included: not even its pid), and
//!   when it exits, the kernel kills everything left in it.
//! - **A pids cgroup** per check ([`cgroup`]): at most
//!   [`Limits::max_processes`] processes, and everything the check started,
//!   `setsid` daemons included, is killed when it ends.
//! - **Resource limits** ([`Limits`]): CPU seconds, file size, open files.
//!
//! [`level`] says which of these this kernel gives; a spec's
//! `[sandbox] min_level` refuses to start a run on less (exit 64), and
//! report.json says which level was in force. docs/sandbox.md has the
//! details, the cost and what happens on an older kernel.

pub mod cgroup;
pub mod landlock_rules;
mod spawn;

use spawn::NetStep;
pub use spawn::{Child, Exec};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How strongly a check is confined, weakest first (so `>=` compares).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing but a clean environment and the timeout.
    None,
    /// Landlock (files, ptrace and signals) and resource limits; the check
    /// is killed by process group at its end.
    Landlock,
    /// Landlock, network and PID namespaces, a pids cgroup and resource
    /// limits.
    Full,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Landlock => "landlock",
            Level::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        [Level::None, Level::Landlock, Level::Full]
            .into_iter()
            .find(|l| l.as_str() == s)
    }
}

/// What the kernel offers this process, probed once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Probe {
    /// The Landlock ABI version, when Landlock is enabled.
    pub landlock_abi: Option<i32>,
    /// A new network namespace can be made (root, or unprivileged user
    /// namespaces).
    pub net_ns: bool,
    /// A pids cgroup can be made under [`cgroup::ROOT`].
    pub cgroup: bool,
    /// A new PID namespace can be made (root, or unprivileged user
    /// namespaces). Absent in reports written before it was probed.
    #[serde(default)]
    pub pid_ns: bool,
}

/// The Landlock ABI every `Landlock` level needs at least: ABI 6 scopes
/// signals and abstract unix sockets to the domain (below it, a check could
/// still signal the harness).
pub const LANDLOCK_MIN_ABI: i32 = 6;

impl Probe {
    pub fn level(&self) -> Level {
        let landlock = self.landlock_abi.is_some_and(|a| a >= LANDLOCK_MIN_ABI);
        match (landlock, self.net_ns && self.cgroup && self.pid_ns) {
            (true, true) => Level::Full,
            (true, false) => Level::Landlock,
            (false, _) => Level::None,
        }
    }
}

/// The probe of this process (run on first use).
pub fn probe() -> &'static Probe {
    &probed().0
}

/// The probe, and the empty network namespace it made (kept open: checks
/// may join it instead of making their own, [`NetNamespaces`]).
fn probed() -> &'static (Probe, Option<std::os::fd::OwnedFd>) {
    static PROBED: OnceLock<(Probe, Option<std::os::fd::OwnedFd>)> = OnceLock::new();
    PROBED.get_or_init(|| {
        let (net_ns, pid_ns, net_fd) = probe_namespaces();
        let probe = Probe {
            landlock_abi: landlock_rules::abi(),
            net_ns,
            cgroup: cgroup::available(),
            pid_ns,
        };
        (probe, net_fd)
    })
}

/// The level checks run at in this process: the strongest the kernel gives.
pub fn level() -> Level {
    probe().level()
}

/// Whether this process can make network and PID namespaces, tried in a
/// thread of its own that exits afterwards (`unshare` of these kinds
/// changes only the calling thread): no process is started, which on a
/// virtual machine is most of a probe's cost (two fork-execs of `true`
/// measured 1.5 ms of CPU per harness process). The network namespace made
/// is kept open, so one can serve every check of a run.
fn probe_namespaces() -> (bool, bool, Option<std::os::fd::OwnedFd>) {
    use nix::sched::{unshare, CloneFlags};
    let tried = std::thread::Builder::new()
        .name("sandbox-probe".into())
        .spawn(|| {
            let net = unshare(CloneFlags::CLONE_NEWNET).is_ok();
            let net_fd = net
                .then(|| std::fs::File::open("/proc/thread-self/ns/net").ok())
                .flatten()
                .map(std::os::fd::OwnedFd::from);
            let pid = unshare(CloneFlags::CLONE_NEWPID).is_ok();
            (net, pid, net_fd)
        })
        .and_then(|t| {
            t.join()
                .map_err(|_| std::io::Error::other("the probe thread panicked"))
        });
    tried.unwrap_or((false, false, None))
}

/// Where a check without the network gets its (empty) network namespace.
/// Chosen once per process, at start-up, by [`set_net_namespaces`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetNamespaces {
    /// A new one per check (the default): checks of different runs, which
    /// a bench may run at once in one process, never share one.
    OnePerCheck,
    /// One for the whole process, made by the probe, joined by every
    /// check (`setns`). For a process that runs one run's checks (the
    /// harness): they already share that run's workspace, and each check's
    /// PID namespace ends every process it started, so nothing listens
    /// from one check to the next. Making and tearing down a namespace per
    /// check was the largest kernel cost of a check (`setup_net`, and the
    /// teardown in a kernel worker).
    OnePerProcess,
}

static NET_NAMESPACES: OnceLock<NetNamespaces> = OnceLock::new();

/// Choose, once, where this process's checks get their network namespace
/// (a later call changes nothing).
pub fn set_net_namespaces(choice: NetNamespaces) {
    let _ = NET_NAMESPACES.set(choice);
}

fn net_entry() -> NetStep {
    use std::os::fd::AsRawFd;
    match (NET_NAMESPACES.get(), &probed().1) {
        // The descriptor lives as long as the process (a static).
        (Some(NetNamespaces::OnePerProcess), Some(fd)) => NetStep::Join(fd.as_raw_fd()),
        _ => NetStep::New,
    }
}

/// Bounds on a confined process, each with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// CPU time, seconds (RLIMIT_CPU; SIGXCPU, then SIGKILL).
    pub cpu_seconds: u64,
    /// Largest file it may write, bytes (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
    /// Open file descriptors (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Processes and threads in its cgroup at once (pids.max).
    pub max_processes: u64,
}

/// Defaults: generous for a test suite or a build, small enough that a
/// runaway cannot take the machine.
pub const DEFAULT_LIMITS: Limits = Limits {
    cpu_seconds: 600,
    file_size_bytes: 1 << 30,
    open_files: 1024,
    max_processes: 256,
};

/// What one confined process may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Read and write (the workspace, the check's temp dir).
    pub write: Vec<PathBuf>,
    /// Read and execute only.
    pub read: Vec<PathBuf>,
    /// Whether it keeps the host's network.
    pub network: bool,
    pub limits: Limits,
}

impl Policy {
    /// The policy of a check: `argv` run in `workspace` with `tmpdir`, its
    /// PATH `path_var`. Reads: the system allowlist, every PATH entry's
    /// tree, the directory of each absolute file `argv` names (its script
    /// and the files beside it, read-only).
    pub fn for_check(
        argv: &[String],
        workspace: &Path,
        tmpdir: &Path,
        path_var: &std::ffi::OsStr,
    ) -> Policy {
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        for entry in std::env::split_paths(path_var) {
            read.push(path_root(&entry));
        }
        for a in argv {
            let p = Path::new(a);
            if p.is_absolute() && p.is_file() {
                if let Some(dir) = p.parent() {
                    read.push(dir.to_path_buf());
                }
            }
        }
        read.retain(|p| p.exists());
        read.sort();
        read.dedup();
        Policy {
            write: vec![workspace.to_path_buf(), tmpdir.to_path_buf()],
            read,
            network: false,
            limits: DEFAULT_LIMITS,
        }
    }
}

/// System directories a check may read and execute from: programs,
/// libraries, configuration. Not /proc, /sys, /home, /root, /tmp or /var.
pub const SYSTEM_READ: [&str; 8] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt",
];

/// The tree a PATH entry lives in: an entry under the account's home dir
/// (`~/.pyenv/shims`) needs its tool's whole tree (the shim runs
/// `~/.pyenv/versions/...`), so the first component under that home; any
/// other entry, itself. The home is the account's (the password database),
/// not `$HOME`: a supervisor or the bench may point `$HOME` elsewhere (the
/// bench gives each case-run its own, with canaries planted), and the
/// tools installed under the account's home must still be found.
fn path_root(entry: &Path) -> PathBuf {
    let entry = entry.canonicalize().unwrap_or_else(|_| entry.to_path_buf());
    if let Some(home) = account_home().or_else(|| std::env::var_os("HOME").map(PathBuf::from)) {
        if let Ok(rest) = entry.strip_prefix(&home) {
            if let Some(first) = rest.components().next() {
                return home.join(first);
            }
        }
    }
    entry
}

/// The account's home dir from the password database, read once per
/// process (it was read again for every PATH entry of every check).
fn account_home() -> Option<PathBuf> {
    static HOME: OnceLock<Option<PathBuf>> = OnceLock::new();
    HOME.get_or_init(|| {
        nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten()
            .map(|u| u.dir)
    })
    .clone()
}

/// Why a confinement could not be set up (the check then does not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("landlock: {0}")]
    Landlock(String),
    #[error("cgroup: {0}")]
    Cgroup(std::io::Error),
}

/// A confined child's handle: what [`confine`] prepared, the child once
/// [`Confined::spawn`] started it; kills everything it started when
/// dropped.
pub struct Confined {
    cgroup: Option<cgroup::Group>,
    /// The child's pid, which is also its process group's id.
    leader: std::sync::atomic::AtomicI32,
    /// The Landlock ruleset, its rules added: held open for the child.
    _ruleset: Option<std::os::fd::OwnedFd>,
    steps: spawn::Confinement,
}

impl Confined {
    /// Start `exec` under this confinement (once: the cgroup and the
    /// process group are the one child's).
    pub fn spawn(&self, exec: &Exec) -> std::io::Result<Child> {
        let child = spawn::spawn(exec, &self.steps)?;
        self.leader
            .store(child.id() as i32, std::sync::atomic::Ordering::Relaxed);
        Ok(child)
    }

    /// Kill every process of the check: its cgroup, and its process group
    /// (what is left of it at the Landlock level, where `setsid` escapes
    /// the group: a PID namespace or the cgroup is what catches those).
    pub fn kill_all(&self) {
        if let Some(g) = &self.cgroup {
            g.kill_all();
        }
        let leader = self.leader.load(std::sync::atomic::Ordering::Relaxed);
        if leader > 0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(leader),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Prepare what confines a check at `level` under `policy`: everything that
/// needs memory or paths is made here, in the parent (the Landlock ruleset
/// with every rule, the pids cgroup); the child ([`spawn`]) only makes
/// syscalls. The child is also put in a process group of its own, so a
/// kill reaches what it forked even at the Landlock level.
pub fn confine(policy: &Policy, level: Level) -> Result<Confined, SandboxError> {
    use crate::mutants::{active, Mutant};
    use std::os::fd::AsRawFd;
    let mut steps = spawn::Confinement {
        limits: None,
        cgroup_procs: None,
        net: NetStep::Keep,
        new_pid: false,
        landlock_fd: None,
    };
    let (mut ruleset, mut group) = (None, None);
    if level != Level::None {
        if !active(Mutant::NoLandlock) {
            let created = landlock_rules::prepare(policy).map_err(SandboxError::Landlock)?;
            let fd: Option<std::os::fd::OwnedFd> = created.into();
            // A level that says Landlock and a ruleset the kernel did not
            // make would be a pretence: refuse instead.
            let fd = fd.ok_or_else(|| SandboxError::Landlock("no ruleset was made".into()))?;
            steps.landlock_fd = Some(fd.as_raw_fd());
            ruleset = Some(fd);
        }
        if level == Level::Full && !active(Mutant::NoCgroup) {
            let g = cgroup::Group::create(policy.limits.max_processes);
            let g = g.map_err(SandboxError::Cgroup)?;
            steps.cgroup_procs = Some(g.procs_path_c());
            group = Some(g);
        }
        steps.limits = Some(policy.limits);
        if level == Level::Full && !policy.network && !active(Mutant::NoNetNamespace) {
            steps.net = net_entry();
        }
        steps.new_pid = level == Level::Full && !active(Mutant::NoPidNamespace);
    }
    Ok(Confined {
        cgroup: group,
        leader: Default::default(),
        _ruleset: ruleset,
        steps,
    })
}
