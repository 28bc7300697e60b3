//! Starting a confined process without `fork`.
//!
//! `std::process::Command` with a `pre_exec` hook forks: the kernel copies
//! the spawner's page tables, and until the child execs, every page either
//! side writes is copied, with a TLB shootdown across the spawner's
//! threads. A PID namespace cost a second fork (a relay left behind as the
//! namespace's parent for the whole check). In `bench run`'s profile of the
//! anchor shape, that was about a sixth of all CPU: the harness and the
//! bench are large multi-threaded processes, and a case-run starts four
//! confined checks.
//!
//! Here the child is made as `posix_spawn` makes it: `clone` with
//! `CLONE_VM | CLONE_VFORK` (no copy; the calling thread sleeps until the
//! child execs or exits), with `CLONE_NEWPID` in the same call when the
//! level has a PID namespace, so the check is its namespace's init with no
//! relay. Everything that needs memory (paths, argv, the environment, the
//! Landlock ruleset, the cgroup's path) is prepared by the parent in a
//! [`Plan`]; the child, on its own small stack in the parent's memory, only
//! makes syscalls and writes the step that failed, if one did, back into
//! the plan. libc's `posix_spawn` cannot do this: it has no hook for
//! rlimits, a cgroup, `setns` or Landlock, so it is written here by hand.

use super::Limits;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

/// The child's stack, bytes: it runs a few libc wrappers around syscalls.
const CHILD_STACK_BYTES: usize = 64 * 1024;

/// What to run: the program as named (searched on `path_var` when it has no
/// `/`, as `execvp` does), its arguments, its whole environment, where.
pub struct Exec<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, OsString)],
    pub path_var: &'a OsStr,
    pub cwd: &'a Path,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
}

/// How the confinement enters the child, prepared once by
/// `sandbox::confine` (the descriptors it names are kept open by the
/// `Confined` that holds it).
pub(super) struct Confinement {
    pub limits: Option<Limits>,
    pub cgroup_procs: Option<CString>,
    pub net: NetStep,
    pub new_pid: bool,
    /// The Landlock ruleset's descriptor (enforced with `no_new_privs`).
    pub landlock_fd: Option<RawFd>,
}

/// How the child enters its network namespace.
#[derive(Clone, Copy)]
pub(super) enum NetStep {
    Keep,
    /// `unshare(CLONE_NEWNET)`: a new one of its own.
    New,
    /// `setns` into the process's shared one.
    Join(RawFd),
}

/// A started child: waited for by pid.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
}

impl Child {
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Block until it exits; reaps it.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid on our own child with a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                return Ok(ExitStatus::from_raw(status));
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

/// The step of the child's set-up that failed, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
enum Step {
    None = 0,
    ProcessGroup,
    Stdio,
    Chdir,
    Rlimit,
    Cgroup,
    Network,
    Landlock,
    Exec,
}

impl Step {
    fn from_raw(v: i32) -> Step {
        [
            Step::ProcessGroup,
            Step::Stdio,
            Step::Chdir,
            Step::Rlimit,
            Step::Cgroup,
            Step::Network,
            Step::Landlock,
            Step::Exec,
        ]
        .into_iter()
        .find(|s| *s as i32 == v)
        .unwrap_or(Step::None)
    }

    fn what(self) -> &'static str {
        match self {
            Step::None => "start",
            Step::ProcessGroup => "make its process group",
            Step::Stdio => "connect its output",
            Step::Chdir => "enter its directory",
            Step::Rlimit => "set its resource limits",
            Step::Cgroup => "join its cgroup",
            Step::Network => "enter its network namespace",
            Step::Landlock => "enforce its Landlock ruleset",
            Step::Exec => "exec",
        }
    }
}

/// Everything the child reads, as raw pointers into memory the parent owns
/// (kept alive by [`Prepared`] until the child has exec'd or exited), and
/// the two fields it writes when a step fails.
#[repr(C)]
struct Plan {
    /// NULL-terminated: every path `execvp` would try, in order.
    candidates: *const *const libc::c_char,
    argv: *const *const libc::c_char,
    /// `["sh", <candidate>, args...]`: a file without `#!` is a shell
    /// script to `execvp`; slot 1 is written by the child.
    sh_argv: *mut *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    limits: [(libc::__rlimit_resource_t, libc::rlim_t); 3],
    has_limits: bool,
    cgroup_procs: *const libc::c_char,
    net: i32,
    net_fd: RawFd,
    landlock_fd: RawFd,
    failed_step: i32,
    failed_errno: i32,
}

/// The owned memory a [`Plan`] points into.
struct Prepared {
    _strings: Vec<CString>,
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    stdin: std::fs::File,
}

fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

/// The paths `execvp` tries for `program`: itself when it names a path,
/// else each `path_var` entry joined with it (an empty entry is the
/// current directory, the child's `cwd`).
fn candidates(program: &str, path_var: &OsStr) -> Vec<Vec<u8>> {
    if program.contains('/') {
        return vec![program.as_bytes().to_vec()];
    }
    std::env::split_paths(path_var)
        .map(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".").to_path_buf()
            } else {
                dir
            };
            dir.join(program).into_os_string().into_vec()
        })
        .collect()
}

impl Prepared {
    fn new(exec: &Exec) -> io::Result<Prepared> {
        let mut strings = Vec::new();
        let mut ptrs = |items: Vec<Vec<u8>>| -> io::Result<Vec<*const libc::c_char>> {
            let mut out = Vec::with_capacity(items.len() + 1);
            for b in items {
                let s = cstring(&b)?;
                out.push(s.as_ptr());
                strings.push(s); // the heap buffer does not move with the CString
            }
            out.push(std::ptr::null());
            Ok(out)
        };
        let candidates = ptrs(candidates(exec.program, exec.path_var))?;
        if candidates.len() == 1 {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let argv = ptrs(
            std::iter::once(exec.program)
                .chain(exec.args.iter().map(String::as_str))
                .map(|a| a.as_bytes().to_vec())
                .collect(),
        )?;
        // ["sh", argv...]: slot 1 (argv[0]) is overwritten with the
        // candidate path by the child; the rest are argv's own strings.
        let sh_argv = std::iter::once(c"sh".as_ptr())
            .chain(argv.iter().copied())
            .collect();
        let envp = ptrs(
            (exec.env.iter())
                .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
                .collect(),
        )?;
        Ok(Prepared {
            _strings: strings,
            candidates,
            argv,
            sh_argv,
            envp,
            cwd: cstring(exec.cwd.as_os_str().as_bytes())?,
            stdin: std::fs::File::open("/dev/null")?,
        })
    }

    fn plan(&mut self, exec: &Exec, c: &Confinement) -> Plan {
        let limits = c.limits.unwrap_or(super::DEFAULT_LIMITS);
        let (net, net_fd) = match c.net {
            NetStep::Keep => (0, -1),
            NetStep::New => (1, -1),
            NetStep::Join(fd) => (2, fd),
        };
        Plan {
            candidates: self.candidates.as_ptr(),
            argv: self.argv.as_ptr(),
            sh_argv: self.sh_argv.as_mut_ptr(),
            envp: self.envp.as_ptr(),
            cwd: self.cwd.as_ptr(),
            stdin: self.stdin.as_raw_fd(),
            stdout: exec.stdout.as_raw_fd(),
            stderr: exec.stderr.as_raw_fd(),
            limits: [
                (libc::RLIMIT_CPU, limits.cpu_seconds as libc::rlim_t),
                (libc::RLIMIT_FSIZE, limits.file_size_bytes as libc::rlim_t),
                (libc::RLIMIT_NOFILE, limits.open_files as libc::rlim_t),
            ],
            has_limits: c.limits.is_some(),
            cgroup_procs: (c.cgroup_procs.as_ref()).map_or(std::ptr::null(), |p| p.as_ptr()),
            net,
            net_fd,
            landlock_fd: c.landlock_fd.unwrap_or(-1),
            failed_step: 0,
            failed_errno: 0,
        }
    }
}

/// Start `exec` confined by `c`. Returns once the child has exec'd (or
/// failed to: then the error names the step and the child is reaped).
pub(super) fn spawn(exec: &Exec, c: &Confinement) -> io::Result<Child> {
    let mut prepared = Prepared::new(exec)?;
    let mut plan = prepared.plan(exec, c);
    let mut stack = vec![0u8; CHILD_STACK_BYTES];
    // SAFETY: the top of our own buffer, aligned down to 16 as the ABI asks.
    let top = unsafe { stack.as_mut_ptr().add(CHILD_STACK_BYTES) };
    let top = (top as usize & !15) as *mut libc::c_void;
    let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    if c.new_pid {
        flags |= libc::CLONE_NEWPID;
    }
    // Every signal blocked across the clone, so no handler of ours runs on
    // the child's stack before it has reset them (as posix_spawn does).
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: plain sigset and clone calls on memory we own; `plan` and
    // `prepared` outlive the child's use of them, which ends at its exec or
    // exit, before clone returns (CLONE_VFORK).
    let pid = unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            top,
            flags,
            (&mut plan as *mut Plan).cast::<libc::c_void>(),
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the child has exec'd or exited; nothing writes the plan now.
    let (step, errno) = unsafe {
        (
            std::ptr::read_volatile(&plan.failed_step),
            std::ptr::read_volatile(&plan.failed_errno),
        )
    };
    drop(stack);
    drop(prepared);
    let mut child = Child { pid };
    if step != 0 {
        let _ = child.wait();
        let e = io::Error::from_raw_os_error(errno);
        return Err(match Step::from_raw(step) {
            Step::Exec => e,
            s => io::Error::new(e.kind(), format!("cannot {}: {e}", s.what())),
        });
    }
    Ok(child)
}

/// The child: syscalls only (it shares the parent's memory), then exec.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's Plan, alive until we exec or exit.
    let plan = unsafe { &mut *arg.cast::<Plan>() };
    // SAFETY: each call is a libc wrapper around one syscall on values the
    // parent prepared.
    let (step, errno) = unsafe { run_steps(plan) };
    plan.failed_step = step as i32;
    plan.failed_errno = errno;
    // SAFETY: _exit runs no destructor and never returns.
    unsafe { libc::_exit(127) }
}

/// The set-up steps, in order; returns the step that failed and its errno
/// (exec returns only on failure).
unsafe fn run_steps(p: &mut Plan) -> (Step, i32) {
    let errno = || *libc::__errno_location();
    reset_signals();
    if libc::setpgid(0, 0) != 0 {
        return (Step::ProcessGroup, errno());
    }
    for (from, to) in [(p.stdin, 0), (p.stdout, 1), (p.stderr, 2)] {
        let ok = match from == to {
            true => libc::fcntl(to, libc::F_SETFD, 0) == 0, // keep it across exec
            false => libc::dup2(from, to) == to,
        };
        if !ok {
            return (Step::Stdio, errno());
        }
    }
    if libc::chdir(p.cwd) != 0 {
        return (Step::Chdir, errno());
    }
    if p.has_limits {
        for (res, v) in p.limits {
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            if libc::setrlimit(res, &lim) != 0 {
                return (Step::Rlimit, errno());
            }
        }
    }
    if !p.cgroup_procs.is_null() {
        let fd = libc::open(p.cgroup_procs, libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
            return (Step::Cgroup, errno());
        }
        libc::close(fd);
    }
    let net = match p.net {
        1 => libc::unshare(libc::CLONE_NEWNET),
        2 => libc::setns(p.net_fd, libc::CLONE_NEWNET),
        _ => 0,
    };
    if net != 0 {
        return (Step::Network, errno());
    }
    if p.landlock_fd >= 0
        && (libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::syscall(libc::SYS_landlock_restrict_self, p.landlock_fd, 0u32) != 0)
    {
        return (Step::Landlock, errno());
    }
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    (Step::Exec, exec_candidates(p))
}

/// `execvp`'s search over the prepared candidates: on to the next when one
/// is missing or not ours to run, a file without `#!` run by `/bin/sh`.
/// Returns the errno to report (only when nothing could be exec'd).
unsafe fn exec_candidates(p: &mut Plan) -> i32 {
    let mut denied = false;
    let mut i = 0;
    loop {
        let cand = *p.candidates.add(i);
        if cand.is_null() {
            return if denied { libc::EACCES } else { libc::ENOENT };
        }
        libc::execve(cand, p.argv, p.envp);
        match *libc::__errno_location() {
            libc::ENOEXEC => {
                *p.sh_argv.add(1) = cand;
                libc::execve(c"/bin/sh".as_ptr(), p.sh_argv, p.envp);
                return *libc::__errno_location();
            }
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR => {}
            e => return e,
        }
        i += 1;
    }
}

/// Every caught signal back to its default (a handler of the parent's must
/// never run in the child, which shares its memory), and SIGPIPE to its
/// default as `std::process::Command` leaves it (Rust ignores it).
unsafe fn reset_signals() {
    let mut dfl: libc::sigaction = std::mem::zeroed();
    dfl.sa_sigaction = libc::SIG_DFL;
    for sig in 1..libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
            continue;
        }
        if old.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE {
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{confine, level, Level, Policy};
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    /// Run `program` in `ws` at `lvl`, its PATH `path`: (exit code, output).
    fn run(program: &str, ws: &Path, path: &str, lvl: Level) -> io::Result<(i32, String)> {
        let tmp = tempfile::tempdir().unwrap();
        let policy = Policy::for_check(&[], ws, tmp.path(), OsStr::new(path));
        let confined = confine(&policy, lvl).unwrap();
        let out = tempfile::tempfile().unwrap();
        let env = [("PATH".to_string(), OsString::from(path))];
        let exec = Exec {
            program,
            args: &[],
            env: &env,
            path_var: OsStr::new(path),
            cwd: ws,
            stdout: out.as_fd(),
            stderr: out.as_fd(),
        };
        let code = confined.spawn(&exec)?.wait()?.code().unwrap_or(-1);
        use std::io::{Read, Seek};
        let mut text = String::new();
        let mut f = out;
        f.rewind()?;
        f.read_to_string(&mut text)?;
        Ok((code, text))
    }

    fn script(path: &Path, body: &str, mode: u32) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// As `execvp`: a file without `#!` is run by /bin/sh, at every level
    /// this kernel gives.
    #[test]
    fn a_script_without_a_shebang_runs_in_sh() {
        for lvl in [Level::None, level()] {
            let ws = tempfile::tempdir().unwrap();
            script(&ws.path().join("check"), "echo from-sh\nexit 3\n", 0o755);
            let r = run("./check", ws.path(), "/usr/bin:/bin", lvl).unwrap();
            assert_eq!(r, (3, "from-sh\n".into()), "{lvl:?}");
        }
    }

    /// As `execvp`: a PATH entry whose file is not executable is passed
    /// over for the next one.
    #[test]
    fn the_path_search_passes_over_what_cannot_be_run() {
        let ws = tempfile::tempdir().unwrap();
        let (a, b) = (ws.path().join("a"), ws.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        script(&a.join("tool"), "#!/bin/sh\necho a\n", 0o644);
        script(&b.join("tool"), "#!/bin/sh\necho b\n", 0o755);
        let path = format!("{}:{}:/usr/bin:/bin", a.display(), b.display());
        let r = run("tool", ws.path(), &path, level()).unwrap();
        assert_eq!(r, (0, "b\n".into()));
        let missing = run("no-such-tool", ws.path(), &path, level()).unwrap_err();
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT), "{missing}");
    }

    /// The harness ignores SIGPIPE (Rust does) and blocks its stop signals;
    /// a check gets neither: a writer to a closed pipe dies of SIGPIPE as
    /// in a shell (ignored, `yes` would complain of EPIPE), and no signal is
    /// blocked. Any other signal the spawner ignores stays ignored, as
    /// across any exec (and as `std::process::Command` leaves it).
    #[test]
    fn a_check_gets_default_signals_and_an_empty_mask() {
        let ws = tempfile::tempdir().unwrap();
        script(
            &ws.path().join("check"),
            "#!/bin/sh
yes | head -n 1
grep -E '^Sig(Blk|Ign)' /proc/self/status || echo no-proc
",
            0o755,
        );
        for lvl in [Level::None, level()] {
            let (code, out) = run("./check", ws.path(), "/usr/bin:/bin", lvl).unwrap();
            assert_eq!(code, 0, "{lvl:?}: {out}");
            assert!(out.starts_with("y\n"), "{lvl:?}: {out}");
            assert!(
                !out.contains("Broken pipe"),
                "{lvl:?}: SIGPIPE was ignored: {out}"
            );
            if lvl == Level::None {
                // /proc is out of a confined check's reach; unconfined, the
                // grep's own mask and ignored set show what it inherited.
                let ours = std::fs::read_to_string("/proc/self/status").unwrap();
                let ignored = |status: &str| {
                    let hex = status.lines().find_map(|l| l.strip_prefix("SigIgn:\t"));
                    u64::from_str_radix(hex.unwrap_or("x").trim(), 16).unwrap()
                };
                let pipe = 1u64 << (libc::SIGPIPE - 1);
                assert_eq!(ignored(&out), ignored(&ours) & !pipe, "{out}");
                assert!(out.contains("SigBlk:\t0000000000000000"), "{out}");
            }
        }
    }

    /// A step of the child's set-up that fails is named, and the child is
    /// reaped (no zombie is left for the caller to find).
    #[test]
    fn a_failed_set_up_step_is_named() {
        let ws = tempfile::tempdir().unwrap();
        let gone = ws.path().join("gone");
        let e = run("true", &gone, "/usr/bin:/bin", Level::None).unwrap_err();
        assert!(e.to_string().contains("cannot enter its directory"), "{e}");
    }
}
