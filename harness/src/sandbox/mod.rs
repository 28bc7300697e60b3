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
mod seccomp;
mod spawn;
pub mod view;

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
    /// A new mount namespace can be made (the filesystem view). Absent in
    /// reports written before it was probed.
    #[serde(default)]
    pub mount_ns: bool,
    /// The syscall filter compiled for this architecture. Absent in reports
    /// written before it was probed.
    #[serde(default)]
    pub seccomp: bool,
}

/// The Landlock ABI every `Landlock` level needs at least: ABI 6 scopes
/// signals and abstract unix sockets to the domain (below it, a check could
/// still signal the harness).
pub const LANDLOCK_MIN_ABI: i32 = 6;

impl Probe {
    pub fn level(&self) -> Level {
        let landlock = self.landlock_abi.is_some_and(|a| a >= LANDLOCK_MIN_ABI) && self.seccomp;
        let namespaces = self.net_ns && self.cgroup && self.pid_ns && self.mount_ns;
        match (landlock, namespaces) {
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
        let (net_ns, pid_ns, mount_ns, net_fd) = probe_namespaces();
        let probe = Probe {
            landlock_abi: landlock_rules::abi(),
            net_ns,
            cgroup: cgroup::available(),
            pid_ns,
            mount_ns,
            seccomp: seccomp::filters().is_ok(),
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
fn probe_namespaces() -> (bool, bool, bool, Option<std::os::fd::OwnedFd>) {
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
            // The thread's own mount namespace (unshare gives it its own
            // fs state first); gone with the thread.
            let mount = unshare(CloneFlags::CLONE_NEWNS).is_ok();
            (net, pid, mount, net_fd)
        })
        .and_then(|t| {
            t.join()
                .map_err(|_| std::io::Error::other("the probe thread panicked"))
        });
    tried.unwrap_or((false, false, false, None))
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
    /// Memory, bytes: its memory cgroup's limit (the kernel's OOM killer
    /// ends what passes it, and the check's result says so), or, with no
    /// memory cgroup, its address space (RLIMIT_AS).
    pub memory_bytes: u64,
}

/// Defaults: generous for a test suite or a build, small enough that a
/// runaway cannot take the machine.
pub const DEFAULT_LIMITS: Limits = Limits {
    cpu_seconds: 600,
    file_size_bytes: 1 << 30,
    open_files: 1024,
    max_processes: 256,
    memory_bytes: DEFAULT_MEMORY_MB << 20,
};

/// `[sandbox] memory_mb` when the spec says nothing: a test suite's
/// interpreter and its data, not the machine.
pub const DEFAULT_MEMORY_MB: u64 = 2048;
/// The bounds of `[sandbox] memory_mb`.
pub const MEMORY_MB_MIN: u64 = 16;
pub const MEMORY_MB_MAX: u64 = 1 << 20;

/// What one confined process may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Read and write (the workspace, the check's temp dir).
    pub write: Vec<PathBuf>,
    /// Read and execute only.
    pub read: Vec<PathBuf>,
    /// The check's private temp dir (also its `/tmp` in the view).
    pub tmp: PathBuf,
    /// Whether it keeps the host's network.
    pub network: bool,
    pub limits: Limits,
}

impl Policy {
    /// The policy of a check: `argv` run in `workspace` with `tmpdir`, its
    /// PATH `path_var`. Reads: the system's programs and libraries, a few
    /// files of `/etc`, each PATH entry and what its tool needs to run
    /// ([`path_reach`]), the directory of each absolute file `argv` names
    /// (its script and the files beside it, read-only). The same list is
    /// the mount view (`view.rs`) and the Landlock ruleset: two layers
    /// that agree, each enough alone.
    pub fn for_check(
        argv: &[String],
        workspace: &Path,
        tmpdir: &Path,
        path_var: &std::ffi::OsStr,
    ) -> Policy {
        let mut extra: Vec<PathBuf> = Vec::new();
        for a in argv {
            let p = Path::new(a);
            if p.is_absolute() && p.is_file() {
                if let Some(dir) = p.parent() {
                    extra.push(dir.to_path_buf());
                }
            }
        }
        if crate::mutants::active(crate::mutants::Mutant::HomeReadable) {
            extra.extend(std::env::var_os("HOME").map(PathBuf::from));
        }
        extra.retain(|p| p.exists());
        let mut read = system_reads(path_var).to_vec();
        read.extend(extra);
        read.sort();
        read.dedup();
        Policy {
            write: vec![workspace.to_path_buf(), tmpdir.to_path_buf()],
            read,
            tmp: tmpdir.to_path_buf(),
            network: false,
            limits: DEFAULT_LIMITS,
        }
    }
}

/// PATH values whose reads [`system_reads`] keeps per process; a process
/// that sees more distinct PATHs (none does in a run: one per check env)
/// works the rest out per check.
pub const SYSTEM_READS_CACHED_MAX: usize = 8;

/// The reads every check with PATH `path_var` gets: [`SYSTEM_READ`], the
/// [`ETC_READ`] files and each PATH entry's [`path_reach`], those that
/// exist. Worked out once per process and PATH, not per check: walking the
/// PATH's tool dirs and canonicalizing every link in them was a few hundred
/// `readlink`, `statx` and `getdents64` calls per check (issue 51). A
/// tool installed while a process runs is seen by the next process.
fn system_reads(path_var: &std::ffi::OsStr) -> std::sync::Arc<[PathBuf]> {
    type Cache = std::sync::Mutex<Vec<(std::ffi::OsString, std::sync::Arc<[PathBuf]>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let hit = |c: &Vec<(std::ffi::OsString, std::sync::Arc<[PathBuf]>)>| {
        c.iter()
            .find(|(k, _)| k == path_var)
            .map(|(_, v)| v.clone())
    };
    if let Some(v) = hit(&cache.lock().unwrap_or_else(|p| p.into_inner())) {
        return v;
    }
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    read.extend(ETC_READ.iter().map(|f| Path::new("/etc").join(f)));
    for entry in std::env::split_paths(path_var) {
        read.extend(path_reach(&entry));
    }
    read.retain(|p| p.exists());
    let read: std::sync::Arc<[PathBuf]> = read.into();
    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
    if c.len() < SYSTEM_READS_CACHED_MAX && hit(&c).is_none() {
        c.push((path_var.to_os_string(), read.clone()));
    }
    read
}

/// System directories a check may read and execute from: programs and
/// libraries. Not /etc (only [`ETC_READ`] of it), /proc, /sys, /home,
/// /root, /run, /tmp or /var.
pub const SYSTEM_READ: [&str; 7] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt"];

/// What of `/etc` a program needs to run: the loader's cache and config,
/// the names of users and groups (no password hashes: not `shadow`), time
/// zone, certificates, name resolution (a check allowed the network), the
/// alternatives links `/usr/bin` points through, interpreters' own config.
pub const ETC_READ: [&str; 19] = [
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "hosts",
    "resolv.conf",
    "gai.conf",
    "host.conf",
    "alternatives",
    "mime.types",
    "python3",
    "os-release",
];

/// What a tool installed under the account's home dir needs beyond its
/// PATH entry, by the name of its dir there: its versions or toolchains,
/// never the credentials, tokens and caches beside them (`~/.cargo`'s
/// `credentials.toml` and `registry/`, anything else in `~/.pyenv`).
const HOME_TOOLS: [(&str, &[&str]); 2] = [
    (
        ".cargo",
        &[
            ".rustup/toolchains",
            ".rustup/settings.toml",
            ".rustup/update-hashes",
        ],
    ),
    (
        ".pyenv",
        &[
            ".pyenv/bin",
            ".pyenv/libexec",
            ".pyenv/plugins",
            ".pyenv/shims",
            ".pyenv/versions",
            ".pyenv/version",
            ".pyenv/pyenv.d",
        ],
    ),
];

/// What a PATH entry opens to a check: the entry itself; for an entry
/// under the account's home dir, what its tool needs ([`HOME_TOOLS`]) or,
/// for a tool not listed, the install prefix of each program the entry
/// links to (`~/.local/bin/x` -> `~/.local/pipx/venvs/x/bin/x` opens the
/// venv, not the rest of `~/.local`). Never the tool's whole tree. The
/// home is the account's (the password database), not `$HOME`: a
/// supervisor or the bench may point `$HOME` elsewhere (the bench gives
/// each case-run its own, with canaries planted), and the tools installed
/// under the account's home must still be found.
pub fn path_reach(entry: &Path) -> Vec<PathBuf> {
    let entry = entry.canonicalize().unwrap_or_else(|_| entry.to_path_buf());
    let Some(home) = account_home().or_else(|| std::env::var_os("HOME").map(PathBuf::from)) else {
        return vec![entry];
    };
    let Some(tool) = entry
        .strip_prefix(&home)
        .ok()
        .and_then(|r| r.components().next())
    else {
        return vec![entry];
    };
    let mut reach = vec![entry.clone()];
    match HOME_TOOLS
        .iter()
        .find(|(name, _)| Path::new(name) == Path::new(&tool))
    {
        Some((_, needs)) => reach.extend(needs.iter().map(|n| home.join(n))),
        None => reach.extend(
            linked_prefixes(&entry)
                .into_iter()
                .filter(|p| !home.starts_with(p)),
        ),
    }
    reach
}

/// Programs looked at per PATH entry for their link targets.
pub const PATH_ENTRY_PROGRAMS_MAX: usize = 1000;

/// The install prefixes (`<prefix>/bin/<program>`) the symlinks in `dir`
/// point into.
fn linked_prefixes(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .take(PATH_ENTRY_PROGRAMS_MAX)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
        .filter_map(|e| e.path().canonicalize().ok())
        .filter_map(|t| t.parent()?.parent().map(Path::to_path_buf))
        .collect();
    out.sort();
    out.dedup();
    out
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
    #[error("mount view: {0}")]
    View(std::io::Error),
    #[error("seccomp: {0}")]
    Seccomp(String),
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
    fn new(
        cgroup: Option<cgroup::Group>,
        ruleset: Option<std::os::fd::OwnedFd>,
        steps: spawn::Confinement,
    ) -> Confined {
        Confined {
            cgroup,
            leader: Default::default(),
            _ruleset: ruleset,
            steps,
        }
    }

    /// Whether the check's memory cgroup saw its limit hit (the OOM
    /// killer ended one of its processes).
    pub fn memory_limit_hit(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(cgroup::Group::memory_limit_hit)
    }

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
/// with every rule, the cgroups, the mount view's list, the syscall
/// filters); the child ([`spawn`]) only makes syscalls. The child is also
/// put in a process group of its own, so a kill reaches what it forked
/// even at the Landlock level.
///
/// The layers, first to last as the child enters them: its cgroups (pids,
/// memory), its network and PID namespaces, its mount namespace with the
/// view (`view.rs`), no capabilities, `no_new_privs` and Landlock, the
/// syscall filter (`seccomp.rs`).
pub fn confine(policy: &Policy, level: Level) -> Result<Confined, SandboxError> {
    use crate::mutants::{active, Mutant};
    use std::os::fd::AsRawFd;
    let mut steps = spawn::Confinement {
        limits: None,
        memory_rlimit: false,
        cgroup_procs: Vec::new(),
        net: NetStep::Keep,
        new_pid: false,
        view: None,
        drop_caps: false,
        landlock_fd: None,
        seccomp: None,
    };
    let (mut ruleset, mut group) = (None, None);
    if level == Level::None {
        return Ok(Confined::new(None, None, steps));
    }
    // Both filesystem layers off: what the state seal alone must catch.
    let no_files = active(Mutant::NoFileLayers) || active(Mutant::SealMtimeOnly);
    if !active(Mutant::NoLandlock) && !no_files {
        let created = landlock_rules::prepare(policy).map_err(SandboxError::Landlock)?;
        let fd: Option<std::os::fd::OwnedFd> = created.into();
        // A level that says Landlock and a ruleset the kernel did not
        // make would be a pretence: refuse instead.
        let fd = fd.ok_or_else(|| SandboxError::Landlock("no ruleset was made".into()))?;
        steps.landlock_fd = Some(fd.as_raw_fd());
        ruleset = Some(fd);
    }
    let full = level == Level::Full;
    let mut limits = policy.limits;
    if active(Mutant::NoMemoryLimit) {
        limits.memory_bytes = u64::MAX;
    }
    if full && !active(Mutant::NoCgroup) {
        let g = cgroup::Group::create(&limits).map_err(SandboxError::Cgroup)?;
        steps.cgroup_procs = g.procs_paths_c();
        group = Some(g);
    }
    steps.memory_rlimit = !group.as_ref().is_some_and(cgroup::Group::bounds_memory);
    steps.limits = Some(limits);
    if full && !policy.network && !active(Mutant::NoNetNamespace) {
        steps.net = net_entry();
    }
    steps.new_pid = full && !active(Mutant::NoPidNamespace);
    if full && !active(Mutant::NoMountNamespace) && !no_files {
        steps.view = Some(view::build(policy).map_err(SandboxError::View)?);
    }
    steps.drop_caps = has_capabilities() && !active(Mutant::CapsKept);
    if !active(Mutant::NoSeccomp) {
        steps.seccomp = Some(seccomp::filters().map_err(|e| SandboxError::Seccomp(e.into()))?);
    }
    Ok(Confined::new(group, ruleset, steps))
}

/// Whether this process holds any capability (root does): then a check
/// must be made to hold none. Read once.
fn has_capabilities() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let set = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        };
        // Unreadable: assume so (clearing is harmless; skipping is not).
        set("CapEff:").is_none_or(|v| v != 0)
            || set("CapBnd:").is_none_or(|v| v != 0) && nix::unistd::geteuid().is_root()
    })
}
