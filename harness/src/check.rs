//! Checks the harness runs: the goal predicate and the spec's named checks
//! (`tests`, `lint`, `p95`, ...). They are commands from the spec, run by the
//! harness with the workspace as working directory and a hard timeout. The
//! model can name a check in a task's verify; it can never supply the command.
//!
//! Inside a run a check is bounded twice: by its own `timeout_s` and by the
//! run's wall clock ([`run_check_by`] with the instant the clock runs out). A
//! check the clock cut is marked `cut_by_run_clock`: that is not a verdict on
//! the check, and the loop never reads it as one (ARCHITECTURE.md, "The wall
//! clock bounds checks and tools").
//!
//! A check runs with an explicit environment ([`CheckEnv`]), never the
//! harness's own: its output goes back to the model (`run_check`), and a test
//! suite that logs its environment would otherwise hand the model the API key.

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Output kept from a check, so a chatty test suite cannot grow the report.
pub const CHECK_OUTPUT_MAX_BYTES: usize = 4096;
/// Variables every check gets from the harness's environment (when set there).
/// TMPDIR is set too, to the run's own temp dir (see [`CheckEnv::tmpdir`]).
pub const CHECK_BASE_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];
/// PATH for a check when the harness itself has none, so `sh` and the usual
/// interpreters are still found.
pub const CHECK_DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSpec {
    /// argv; argv[0] is looked up on PATH or is a path relative to the spec file
    /// (already resolved to absolute by the spec loader).
    pub command: Vec<String>,
    pub timeout_s: u64,
    /// The environment the command runs with.
    #[serde(default)]
    pub env: CheckEnv,
    /// Whether the check keeps the network (the spec's `network = true` on
    /// the check); off by default: a confined check has none.
    #[serde(default)]
    pub network: bool,
}

/// The whole environment of a check: [`CHECK_BASE_ENV`], `TMPDIR`, and the
/// variables the spec passes by name (`[check_env] pass`). Nothing else of
/// the harness's environment is inherited; values are read when the check
/// starts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckEnv {
    /// Names the spec passes through. The spec loader refuses any name that
    /// looks like a secret ([`crate::redact::looks_secret`]); [`CheckEnv::vars`]
    /// skips one again, so no construction path can pass a key.
    pub pass: Vec<String>,
    /// `TMPDIR` for the check: the run's private temp dir (made by the loop,
    /// removed when the run ends). None: the system temp dir.
    pub tmpdir: Option<PathBuf>,
    /// The spec's `[sandbox] memory_mb` (None: the sandbox's default).
    #[serde(default)]
    pub memory_mb: Option<u64>,
}

impl CheckEnv {
    /// The (name, value) pairs a check starts with.
    pub fn vars(&self) -> Vec<(String, OsString)> {
        let mut out: Vec<(String, OsString)> = Vec::new();
        for name in CHECK_BASE_ENV
            .iter()
            .map(|s| s.to_string())
            .chain(self.pass.iter().cloned())
        {
            if crate::redact::looks_secret(&name) || out.iter().any(|(n, _)| *n == name) {
                continue;
            }
            if let Some(v) = std::env::var_os(&name) {
                let v = if name == "PATH" {
                    absolute_path_entries(&v)
                } else {
                    v
                };
                out.push((name, v));
            }
        }
        if !out.iter().any(|(n, _)| n == "PATH") {
            out.push(("PATH".into(), CHECK_DEFAULT_PATH.into()));
        }
        let tmp = self.tmpdir.clone().unwrap_or_else(std::env::temp_dir);
        out.retain(|(n, _)| n != "TMPDIR");
        out.push(("TMPDIR".into(), tmp.into_os_string()));
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    pub passed: bool,
    /// Exit code, or None when killed by the timeout or a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The run's wall clock ran out before the check finished: it was killed
    /// at the run's deadline (not at its own timeout), or not started because
    /// no time was left. Says nothing about the work it checks.
    pub cut_by_run_clock: bool,
    /// The run was asked to stop (crate::stop) while the check ran: it was
    /// killed whole. Like a clock cut, no verdict on the work.
    pub cut_by_stop: bool,
    /// Tail of stdout+stderr, at most CHECK_OUTPUT_MAX_BYTES.
    pub output: String,
    /// The check never ran its command: it could not be started (not
    /// executable, not found: `output` holds the OS error), or the shell
    /// said so (exit 126: found but not executable; 127: not found). A
    /// failure of the case's machinery, not a verdict on the work.
    pub could_not_run: bool,
}

impl CheckResult {
    /// Cut short by the run (its wall clock, or a stop request): says
    /// nothing about the work, and the loop never reads it as a verdict.
    pub fn cut_short(&self) -> bool {
        self.cut_by_run_clock || self.cut_by_stop
    }
}

/// Shell exit statuses that mean the command never ran (POSIX `sh`):
/// 126 found but not executable, 127 not found.
const EXIT_COULD_NOT_RUN: [i32; 2] = [126, 127];

/// PATH without empty or relative entries: a check runs in the workspace,
/// where `.` (or an empty entry) would find a program the agent wrote.
fn absolute_path_entries(v: &std::ffi::OsStr) -> OsString {
    let kept: Vec<PathBuf> = std::env::split_paths(v)
        .filter(|p| p.is_absolute())
        .collect();
    match std::env::join_paths(&kept) {
        Ok(p) if !kept.is_empty() => p,
        _ => CHECK_DEFAULT_PATH.into(),
    }
}

/// Run a check command in `cwd`, bounded by its own timeout only (outside a
/// run: the bench re-running a predicate). Never panics; a command that cannot
/// start is a failed check with the reason in `output`.
pub fn run_check(spec: &CheckSpec, cwd: &Path) -> CheckResult {
    run_check_by(spec, cwd, None)
}

/// [`run_check`], also bounded by `deadline`: the instant the run's wall
/// clock runs out. The check gets min(its own timeout, the time left); with no
/// time left it is not started.
pub fn run_check_by(spec: &CheckSpec, cwd: &Path, deadline: Option<Instant>) -> CheckResult {
    run_confined(spec, cwd, deadline, Origin::Spec)
}

/// A command the model wrote (the `run_command` tool), run exactly as a
/// check is ([`run_confined`]: the same sandbox, environment, clocks, stop
/// requests and output bound), except that its arguments grant no reads:
/// a spec's check may read the directory of a script it names, a model's
/// command may not (it would name `/home/me/.ssh/id_rsa`).
pub fn run_model_command_by(
    spec: &CheckSpec,
    cwd: &Path,
    deadline: Option<Instant>,
) -> CheckResult {
    run_confined(spec, cwd, deadline, Origin::Model)
}

/// Who wrote a confined command's argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The spec (a check, the predicate): absolute files its argv names are
    /// readable (the check's script and the files beside it).
    Spec,
    /// The model (run_command): nothing beyond the sandbox's fixed reads.
    Model,
}

/// The one way the harness starts a process on the model's behalf: checks,
/// the predicate and `run_command` all come here.
fn run_confined(
    spec: &CheckSpec,
    cwd: &Path,
    deadline: Option<Instant>,
    origin: Origin,
) -> CheckResult {
    let own = Duration::from_secs(spec.timeout_s.max(1));
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let Some((prog, args)) = spec.command.split_first() else {
        return not_started("empty command".into());
    };
    if let Some(refused) = refused_before_start(left) {
        return refused;
    }
    // Which clock fires first decides what a kill means.
    let (limit, clock_first) = match left {
        Some(l) if l < own => (l, true),
        _ => (own, false),
    };
    let capture = match Capture::new() {
        Ok(c) => c,
        Err(e) => return not_started(format!("cannot capture output: {e}")),
    };
    let env = match CommandEnv::new(spec) {
        Ok(env) => env,
        Err(refused) => return refused,
    };
    // The kernel keeps what the check runs (often code the model wrote)
    // inside the workspace and its temp dir: crate::sandbox.
    let granting: &[String] = match origin {
        Origin::Spec => &spec.command,
        Origin::Model => &[],
    };
    let mut policy = crate::sandbox::Policy::for_check(granting, cwd, &env.tmp, &env.path_var);
    policy.network = spec.network;
    if let Some(mb) = spec.env.memory_mb {
        policy.limits.memory_bytes = mb << 20;
    }
    let confined = match crate::sandbox::confine(&policy, crate::sandbox::level()) {
        Ok(c) => c,
        Err(e) => return not_started(format!("cannot confine {prog:?}: {e}")),
    };
    // Should the kernel let it through, a write to the run's state dir is
    // still seen (crate::state_seal).
    let seal = crate::state_seal::watch();
    let out = capture.file.as_fd();
    let exec = crate::sandbox::Exec {
        program: prog,
        args,
        env: &env.vars,
        path_var: &env.path_var,
        cwd,
        stdout: out,
        stderr: out,
    };
    let child = match confined.spawn(&exec) {
        Ok(c) => c,
        Err(e) => return not_started(format!("cannot start {prog:?}: {e}")),
    };
    let status = wait_with_deadline(child, limit);
    // Nothing the check started outlives it (its cgroup, its process group).
    confined.kill_all();
    let memory_hit = confined.memory_limit_hit();
    drop(confined);
    seal.end(&format!("the command {:?}", spec.command));
    let mut output = output_tail(&capture.read_all());
    if memory_hit {
        // Said where the check's failure is shown (the model, the report).
        output.push_str(&format!(
            "\n[memory: the check passed its {} MB limit ([sandbox] memory_mb); the kernel ended a process of it]",
            policy.limits.memory_bytes >> 20
        ));
    }
    result_of(status, output, clock_first)
}

/// A command not started because the run is already stopping or out of
/// time: starting it would only be killed at once, and the result must say
/// which of the two cut it.
fn refused_before_start(left: Option<Duration>) -> Option<CheckResult> {
    if crate::stop::requested().is_some() {
        return Some(CheckResult {
            passed: false,
            exit_code: None,
            timed_out: false,
            cut_by_run_clock: false,
            cut_by_stop: true,
            output: "not run: the run was asked to stop".into(),
            could_not_run: false,
        });
    }
    if left == Some(Duration::ZERO) {
        return Some(CheckResult {
            passed: false,
            exit_code: None,
            timed_out: true,
            cut_by_run_clock: true,
            cut_by_stop: false,
            output: "not run: the run's wall clock had run out".into(),
            could_not_run: false,
        });
    }
    None
}

/// The environment a confined command runs in, and what the sandbox must
/// know of it (its temp dir and PATH), decided together so they agree.
struct CommandEnv {
    vars: Vec<(String, OsString)>,
    /// The private TMPDIR made for this command, when the caller gave none:
    /// held only so it lives as long as the command (dropping removes it).
    _own_tmp: Option<tempfile::TempDir>,
    tmp: PathBuf,
    path_var: OsString,
}

impl CommandEnv {
    /// A private TMPDIR when the caller gave none (the bench re-running a
    /// predicate): the check may write there and nowhere else but `cwd`.
    fn new(spec: &CheckSpec) -> Result<CommandEnv, CheckResult> {
        let own_tmp = match spec.env.tmpdir {
            Some(_) => None,
            None => match crate::check_tmp::create() {
                Ok(t) => Some(t),
                Err(e) => {
                    return Err(not_started(format!(
                        "cannot make the check's temp dir: {e}"
                    )))
                }
            },
        };
        let mut vars = spec.env.vars();
        if let Some(t) = &own_tmp {
            vars.retain(|(n, _)| n != "TMPDIR");
            vars.push(("TMPDIR".into(), t.path().as_os_str().to_owned()));
        }
        if crate::mutants::active(crate::mutants::Mutant::CheckEnvInherited) {
            let mut all: Vec<(String, OsString)> = std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                .filter(|(k, _)| !vars.iter().any(|(n, _)| n == k))
                .collect();
            all.append(&mut vars);
            vars = all;
        }
        let tmp = vars
            .iter()
            .find(|(n, _)| n == "TMPDIR")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(std::env::temp_dir);
        let path_var = vars
            .iter()
            .find(|(n, _)| n == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| CHECK_DEFAULT_PATH.into());
        Ok(CommandEnv {
            vars,
            _own_tmp: own_tmp,
            tmp,
            path_var,
        })
    }
}

/// The last [`CHECK_OUTPUT_MAX_BYTES`] of what the command wrote: the end
/// of a failing check's output is where its error is.
fn output_tail(raw: &[u8]) -> String {
    let whole = crate::mutants::active(crate::mutants::Mutant::CheckOutputWhole);
    let tail = if raw.len() > CHECK_OUTPUT_MAX_BYTES && !whole {
        &raw[raw.len() - CHECK_OUTPUT_MAX_BYTES..]
    } else {
        raw
    };
    String::from_utf8_lossy(tail).into_owned()
}

/// How the command ended, as the check's result: a cut says which clock
/// fired, a stop says so in the output the model and the report see.
fn result_of(status: Waited, output: String, clock_first: bool) -> CheckResult {
    match status {
        Waited::Exited(st) => CheckResult {
            passed: st.success(),
            exit_code: st.code(),
            timed_out: false,
            cut_by_run_clock: false,
            cut_by_stop: false,
            could_not_run: st.code().is_some_and(|c| EXIT_COULD_NOT_RUN.contains(&c)),
            output,
        },
        Waited::Cut => CheckResult {
            passed: false,
            exit_code: None,
            timed_out: true,
            cut_by_run_clock: clock_first,
            cut_by_stop: false,
            output,
            could_not_run: false,
        },
        Waited::Stopped => CheckResult {
            passed: false,
            exit_code: None,
            timed_out: false,
            cut_by_run_clock: false,
            cut_by_stop: true,
            output: format!("{output}\n[killed: the run was asked to stop]"),
            could_not_run: false,
        },
    }
}

/// A check that could not be started: failed, with why.
fn not_started(why: String) -> CheckResult {
    CheckResult {
        passed: false,
        exit_code: None,
        timed_out: false,
        cut_by_run_clock: false,
        cut_by_stop: false,
        output: why,
        could_not_run: true,
    }
}

/// How long a check's wait sleeps between looks at the stop request: the
/// longest a stopped run waits for a check in flight to be killed, in ms.
const STOP_POLL_MS: u64 = 50;

/// How a check's wait ended.
enum Waited {
    Exited(std::process::ExitStatus),
    /// Killed at its limit (or could not be waited for).
    Cut,
    /// Killed because the run was asked to stop (crate::stop).
    Stopped,
}

/// Wait for the child, killing it at the deadline or on a stop request. A
/// waiter thread blocks in `wait` and reports over a channel, so a check
/// that ends in 2 ms is seen in 2 ms (a polling loop added up to its sleep
/// to every check, several per lap); the channel is read in slices of
/// [`STOP_POLL_MS`] only to see a stop request.
fn wait_with_deadline(mut child: crate::sandbox::Child, limit: Duration) -> Waited {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::Builder::new()
        .name("check-wait".into())
        .spawn(move || {
            let _ = tx.send(child.wait());
        });
    if waiter.is_err() {
        return Waited::Cut; // the Child was dropped with the closure: not waitable
    }
    let deadline = Instant::now() + limit;
    // The bench's `[interrupt] at = "during_check:<n>"`: the check runs.
    crate::chaos_hook::point(crate::chaos_hook::Phase::DuringCheck);
    let cut_by_stop = !crate::mutants::active(crate::mutants::Mutant::CheckNotCutByStop);
    let cut = loop {
        if cut_by_stop && crate::stop::requested().is_some() {
            break Waited::Stopped;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Waited::Cut;
        }
        match rx.recv_timeout(left.min(Duration::from_millis(STOP_POLL_MS))) {
            Ok(Ok(st)) => return Waited::Exited(st),
            Ok(Err(_)) => return Waited::Cut,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Waited::Cut,
        }
    };
    // Still running: kill it; the waiter then reaps it. The pid cannot have
    // been reused: it is not reaped until the waiter's `wait` returns, which
    // is what we wait for next.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = rx.recv();
    cut
}

/// Where a check's stdout and stderr go: one file both write to, read back
/// after the exit. An anonymous memory file on Linux (memfd): a named temp
/// file in /tmp, created and unlinked several times per lap by hundreds of
/// parallel case-runs, made ext4 (no journal) scan past thousands of recently
/// deleted inodes on every file creation (bench run's throughput profile).
struct Capture {
    file: std::fs::File,
    /// Set when the fallback named temp file is used: removed on drop.
    path: Option<std::path::PathBuf>,
}

impl Capture {
    fn new() -> std::io::Result<Capture> {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::memfd::{memfd_create, MFdFlags};
            if let Ok(fd) = memfd_create("harness-check", MFdFlags::MFD_CLOEXEC) {
                return Ok(Capture {
                    file: std::fs::File::from(fd),
                    path: None,
                });
            }
        }
        let (file, path) = tempfile_in_tmp()?;
        Ok(Capture {
            file,
            path: Some(path),
        })
    }

    /// Everything written so far (the child has exited).
    fn read_all(&self) -> Vec<u8> {
        use std::io::{Read, Seek, SeekFrom};
        let mut raw = vec![];
        let mut f = &self.file;
        if f.seek(SeekFrom::Start(0)).is_ok() {
            let _ = f.read_to_end(&mut raw);
        }
        raw
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn tempfile_in_tmp() -> std::io::Result<(std::fs::File, std::path::PathBuf)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let p = std::env::temp_dir().join(format!(
        "harness-check-{}-{}.out",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let f = std::fs::OpenOptions::new()
        .create_new(true)
        .read(true)
        .write(true)
        .open(&p)?;
    Ok((f, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_s: u64) -> CheckSpec {
        CheckSpec {
            command: vec!["sh".into(), "-c".into(), script.into()],
            timeout_s,
            env: CheckEnv::default(),
            network: false,
        }
    }

    #[test]
    fn stdout_and_stderr_are_captured_in_order_with_the_exit_code() {
        let d = tempfile::tempdir().unwrap();
        let r = run_check(
            &sh("echo one; echo two >&2; echo three; exit 3", 10),
            d.path(),
        );
        assert!(!r.passed);
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.timed_out);
        assert_eq!(r.output, "one\ntwo\nthree\n");
        let ok = run_check(&sh("pwd", 10), d.path());
        assert!(ok.passed, "{ok:?}");
        assert_eq!(
            std::path::Path::new(ok.output.trim())
                .canonicalize()
                .unwrap(),
            d.path().canonicalize().unwrap(),
            "runs in the workspace"
        );
    }

    #[test]
    fn a_check_past_its_timeout_is_killed_and_fails() {
        let d = tempfile::tempdir().unwrap();
        let r = run_check(&sh("echo started; exec sleep 30", 1), d.path());
        assert!(r.timed_out && !r.passed, "{r:?}");
        assert_eq!(r.exit_code, None);
        assert_eq!(r.output, "started\n", "output before the kill is kept");
    }

    #[test]
    fn the_run_clock_cuts_a_check_before_its_own_timeout_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let r = run_check_by(
            &sh("echo started; exec sleep 30", 30),
            d.path(),
            Some(t0 + Duration::from_millis(300)),
        );
        assert!(r.timed_out && r.cut_by_run_clock && !r.passed, "{r:?}");
        assert_eq!(r.output, "started\n");
        // Its own timeout first: a timeout on merit, not the clock.
        let own = run_check_by(
            &sh("exec sleep 30", 1),
            d.path(),
            Some(Instant::now() + Duration::from_secs(20)),
        );
        assert!(own.timed_out && !own.cut_by_run_clock, "{own:?}");
        // No time left: not started at all.
        let none = run_check_by(
            &sh("touch ran", 30),
            d.path(),
            Some(Instant::now() - Duration::from_millis(1)),
        );
        assert!(none.cut_by_run_clock && !none.passed, "{none:?}");
        assert!(!d.path().join("ran").exists(), "nothing ran");
        // A check that ends in time is not touched by the clock.
        let ok = run_check_by(
            &sh("exit 0", 30),
            d.path(),
            Some(Instant::now() + Duration::from_secs(20)),
        );
        assert!(ok.passed && !ok.cut_by_run_clock, "{ok:?}");
        let bad = run_check_by(
            &sh("exit 3", 30),
            d.path(),
            Some(Instant::now() + Duration::from_secs(20)),
        );
        assert!(
            !bad.passed && !bad.cut_by_run_clock && bad.exit_code == Some(3),
            "{bad:?}"
        );
    }

    #[test]
    fn only_the_tail_of_a_chatty_check_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let r = run_check(
            &sh(
                "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done",
                10,
            ),
            d.path(),
        );
        assert!(r.passed);
        assert_eq!(r.output.len(), CHECK_OUTPUT_MAX_BYTES);
        assert!(r.output.ends_with("line-1999\n"));
    }

    #[test]
    fn a_command_that_cannot_start_is_a_failed_check() {
        let d = tempfile::tempdir().unwrap();
        let r = run_check(
            &CheckSpec {
                command: vec!["/nonexistent/check-binary".into()],
                timeout_s: 5,
                env: CheckEnv::default(),
                network: false,
            },
            d.path(),
        );
        assert!(!r.passed && r.output.contains("cannot start"), "{r:?}");
        let empty = run_check(
            &CheckSpec {
                command: vec![],
                timeout_s: 5,
                env: CheckEnv::default(),
                network: false,
            },
            d.path(),
        );
        assert!(!empty.passed);
    }

    #[test]
    fn a_check_sees_only_its_documented_environment() {
        let d = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        // Set in the harness's (this test process's) environment: the key the
        // model client would use, a harmless variable the spec passes, one it
        // does not, and a secret-looking one a careless spec asks to pass.
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-check-env-test-0123456789");
        std::env::set_var("HARNESS_CHECK_ENV_PASSED", "passed-value");
        std::env::set_var("HARNESS_CHECK_ENV_NOT_PASSED", "not-passed");
        std::env::set_var("HARNESS_CHECK_ENV_TOKEN", "tok-0123456789");
        let mut spec = sh("env", 10);
        spec.env = CheckEnv {
            pass: vec![
                "HARNESS_CHECK_ENV_PASSED".into(),
                "HARNESS_CHECK_ENV_TOKEN".into(),
                "ANTHROPIC_API_KEY".into(),
            ],
            tmpdir: Some(tmp.path().to_path_buf()),
            memory_mb: None,
        };
        let r = run_check(&spec, d.path());
        assert!(r.passed, "{r:?}");
        let names: Vec<&str> = r
            .output
            .lines()
            .filter_map(|l| l.split_once('=').map(|(n, _)| n))
            .filter(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(n)) // the shell's own
            .collect();
        let mut allowed = vec!["PATH", "TMPDIR", "HARNESS_CHECK_ENV_PASSED"];
        for v in ["HOME", "LANG"] {
            if std::env::var_os(v).is_some() {
                allowed.push(v);
            }
        }
        for n in &names {
            assert!(
                allowed.contains(n),
                "{n} leaked into the check: {}",
                r.output
            );
        }
        assert!(r.output.contains("HARNESS_CHECK_ENV_PASSED=passed-value"));
        assert!(r
            .output
            .contains(&format!("TMPDIR={}", tmp.path().display())));
        for leaked in ["sk-ant-check-env-test", "not-passed", "tok-0123456789"] {
            assert!(!r.output.contains(leaked), "{leaked}: {}", r.output);
        }
    }

    #[test]
    fn no_capture_file_is_left_behind() {
        let d = tempfile::tempdir().unwrap();
        let mine = format!("harness-check-{}-", std::process::id());
        let leftovers = || {
            std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
                .count()
        };
        run_check(&sh("echo x", 5), d.path());
        // The fallback path (a named temp file) is removed when dropped.
        let (file, path) = tempfile_in_tmp().unwrap();
        let c = Capture {
            file,
            path: Some(path.clone()),
        };
        use std::io::Write;
        (&c.file).write_all(b"abc").unwrap();
        assert_eq!(c.read_all(), b"abc");
        drop(c);
        assert!(!path.exists());
        assert_eq!(leftovers(), 0);
    }
}
