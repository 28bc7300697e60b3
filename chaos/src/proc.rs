//! Spawning the real `harness` binary, killing it with SIGKILL through `nix`
//! (its whole process group: the harness and any check it was running), or
//! asking it to stop with SIGTERM (sigterm mode: once, or twice), and
//! confirming with waitpid how the harness died or exited.

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// When to kill.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Run to the end.
    None,
    /// `HARNESS_CHAOS_PAUSE_AT=<phase>:<n>`: SIGKILL once the harness says it is paused there.
    Pause { phase: String, n: u64 },
    /// SIGKILL this long after spawn, wherever the harness is.
    Timer { delay_us: u64 },
    /// `HARNESS_SIMFS_FAULT=<spec>`: inject an I/O error and let it run.
    Fault { spec: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Died of SIGKILL, confirmed by waitpid, at a named phase.
    KilledAtPhase {
        phase: String,
        n: u64,
    },
    /// Died of SIGKILL, confirmed by waitpid, at a random time.
    KilledByTimer {
        delay_us: u64,
    },
    /// The signal was sent but waitpid reported something else.
    SignalNotConfirmed {
        status: String,
    },
    /// Exited on its own before the kill point was reached (counted apart).
    ExitedBeforeSignal {
        code: i32,
    },
    /// Exited on its own; no kill was planned.
    Exited {
        code: i32,
    },
    /// Sent SIGTERM (sigterm mode; `twice`: a second one right after) at
    /// `at` (a phase occurrence or `random_timing`), and exited `code`.
    Stopped {
        at: String,
        code: i32,
        twice: bool,
    },
    /// Still running at the timeout: killed, and a violation.
    Hung,
    SpawnFailed(String),
}

impl Outcome {
    /// The process did not end the run: killed, or stopped by a signal and
    /// suspended (exit 128 + the signal: `harness::stop`), to be resumed.
    pub fn killed(&self) -> bool {
        match self {
            Outcome::KilledAtPhase { .. } | Outcome::KilledByTimer { .. } => true,
            Outcome::Stopped { code, .. } => is_stop_code(*code),
            _ => false,
        }
    }
    /// The exit code of a process that ended the run (a stop the harness
    /// took while publishing an ending exits with that ending's code).
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            Outcome::ExitedBeforeSignal { code } | Outcome::Exited { code } => Some(*code),
            Outcome::Stopped { code, .. } if !is_stop_code(*code) => Some(*code),
            _ => None,
        }
    }
}

/// The exit code of a harness a stop request suspended: 128 + the signal.
pub fn is_stop_code(code: i32) -> bool {
    harness::stop::STOP_SIGNALS
        .iter()
        .any(|s| harness::stop::exit_code(*s) == code)
}

/// What the driver sends at its kill point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// SIGKILL to the process group (sigkill and power-loss modes).
    Sigkill,
    /// SIGTERM to the harness (sigterm mode), and with `twice` a second one
    /// a moment later, during its grace.
    Stop { twice: bool },
}

/// How long after the first SIGTERM the second is sent, in ms.
const SECOND_SIGNAL_AFTER_MS: u64 = 2;

pub struct Spawn {
    pub kill: Kill,
    pub harness: PathBuf,
    /// `harness run`'s command line, built by the one builder the bench
    /// uses too (its argv; provider keys removed, the driver's env set).
    pub invocation: harness::invocation::HarnessInvocation,
    pub stdout: PathBuf,
    pub timeout: Duration,
}

/// Every variable the driver sets; removed from the inherited environment first.
pub const DRIVER_ENV: [&str; 4] = [
    harness::chaos_hook::ENV_VAR,
    harness::simfs::LOG_ENV,
    harness::simfs::FAULT_ENV,
    harness::simfs::BROKEN_ENV,
];

enum Ev {
    Paused,
    Eof,
}

/// Run one harness process to its end or to its kill. Returns the outcome and
/// what it wrote on stderr.
pub fn run(s: &Spawn, target: &Target) -> (Outcome, String) {
    let mut cmd = command(s, target);
    let stdout = match std::fs::File::create(&s.stdout) {
        Ok(f) => f,
        Err(e) => {
            return (
                Outcome::SpawnFailed(format!("{}: {e}", s.stdout.display())),
                String::new(),
            )
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
    // Its own process group, so the kill takes what it started with it (a
    // check script forked but not yet exec'd still shares the run.lock open
    // file description, and would make the resume see "another harness is
    // running").
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return (
                Outcome::SpawnFailed(format!("{}: {e}", s.harness.display())),
                String::new(),
            )
        }
    };
    let pid = Pid::from_raw(child.id() as i32);
    let (rx, reader) = read_stderr(child.stderr.take().expect("stderr is piped"));
    let w = Watch {
        pid,
        kill: s.kill,
        start,
        deadline: start + s.timeout,
        rx,
    };
    let outcome = match target {
        Target::Pause { phase, n } => w.at_pause(phase, *n),
        Target::Timer { delay_us } => w.at_timer(*delay_us),
        Target::None | Target::Fault { .. } => w.to_end(),
    };
    // The child is reaped by waitpid above; std's Child must not wait again.
    std::mem::forget(child);
    if outcome.killed() || matches!(outcome, Outcome::Hung | Outcome::SignalNotConfirmed { .. }) {
        wait_group_gone(pid);
    }
    let stderr = reader.join().unwrap_or_default();
    (outcome, stderr)
}

/// `harness run`'s command with the driver's variables: none inherited,
/// then the one the target needs.
fn command(s: &Spawn, target: &Target) -> std::process::Command {
    let mut inv = s.invocation.clone();
    for v in DRIVER_ENV {
        inv = inv.env_remove(v);
    }
    let mut cmd = inv.command(&s.harness);
    match target {
        Target::Pause { phase, n } => {
            cmd.env(harness::chaos_hook::ENV_VAR, format!("{phase}:{n}"));
        }
        Target::Fault { spec } => {
            cmd.env(harness::simfs::FAULT_ENV, spec);
        }
        _ => {}
    }
    cmd
}

/// Collects stderr on a thread (the pipe must be drained or the harness
/// blocks), telling the driver when the harness says it is paused.
fn read_stderr(
    err: std::process::ChildStderr,
) -> (mpsc::Receiver<Ev>, std::thread::JoinHandle<String>) {
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("HARNESS_CHAOS_PAUSED") {
                let _ = tx.send(Ev::Paused);
            }
            all.push_str(&line);
            all.push('\n');
        }
        let _ = tx.send(Ev::Eof);
        all
    });
    (rx, reader)
}

/// A spawned harness the driver waits on until its kill point.
struct Watch {
    pid: Pid,
    kill: Kill,
    start: Instant,
    deadline: Instant,
    rx: mpsc::Receiver<Ev>,
}

impl Watch {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// SIGKILL to the group, and to the harness itself should it have left it.
    fn sigkill(&self) {
        let _ = kill(Pid::from_raw(-self.pid.as_raw()), Signal::SIGKILL);
        let _ = kill(self.pid, Signal::SIGKILL);
    }

    fn hung(&self) -> Outcome {
        self.sigkill();
        let _ = reap(self.pid);
        Outcome::Hung
    }

    /// Kill (or stop) once the harness says it is paused at `phase:n`.
    fn at_pause(&self, phase: &str, n: u64) -> Outcome {
        match self.rx.recv_timeout(self.left()) {
            Ok(Ev::Paused) if self.kill != Kill::Sigkill => {
                stop(self.pid, self.kill, format!("{phase}:{n}"), self.deadline)
            }
            Ok(Ev::Paused) => {
                self.sigkill();
                match reap(self.pid) {
                    Reaped::Signaled(Signal::SIGKILL) => Outcome::KilledAtPhase {
                        phase: phase.to_string(),
                        n,
                    },
                    other => Outcome::SignalNotConfirmed {
                        status: format!("{other:?}"),
                    },
                }
            }
            Ok(Ev::Eof) => exited(reap(self.pid), true),
            Err(_) => self.hung(),
        }
    }

    /// Kill (or stop) `delay_us` after the spawn, unless it ended first.
    fn at_timer(&self, delay_us: u64) -> Outcome {
        let at = self.start + Duration::from_micros(delay_us);
        match self
            .rx
            .recv_timeout(at.saturating_duration_since(Instant::now()))
        {
            Ok(Ev::Eof) => exited(reap(self.pid), true),
            _ if self.kill != Kill::Sigkill => {
                stop(self.pid, self.kill, "random_timing".into(), self.deadline)
            }
            _ => {
                // Paused lines cannot happen (no pause target); timeout: kill now.
                self.sigkill();
                match reap(self.pid) {
                    Reaped::Signaled(Signal::SIGKILL) => Outcome::KilledByTimer { delay_us },
                    Reaped::Exited(code) => Outcome::ExitedBeforeSignal { code },
                    other => Outcome::SignalNotConfirmed {
                        status: format!("{other:?}"),
                    },
                }
            }
        }
    }

    /// No kill planned: the run's end, or a hang at the timeout.
    fn to_end(&self) -> Outcome {
        match self.rx.recv_timeout(self.left()) {
            Ok(_) => exited(reap(self.pid), false),
            Err(_) => self.hung(),
        }
    }
}

/// How long a killed process group may take to be gone after its leader was
/// reaped (a bound, never reached in practice: SIGKILL is not ignorable).
const GROUP_GONE_TIMEOUT_MS: u64 = 5_000;

/// Wait until no live process is left in the killed harness's process group.
/// waitpid reports the harness's own death, but a check script it had just
/// forked (not yet exec'd) dies of the same SIGKILL a moment later, and until
/// it does it holds the run.lock open file description: a resume spawned in
/// that moment is refused with "another harness is running" (seen under load,
/// a random-timing kill). Zombies do not count: their files are closed.
fn wait_group_gone(pgid: Pid) {
    let deadline = Instant::now() + Duration::from_millis(GROUP_GONE_TIMEOUT_MS);
    while Instant::now() < deadline {
        if kill(Pid::from_raw(-pgid.as_raw()), None) == Err(nix::errno::Errno::ESRCH) {
            return;
        }
        if !group_has_live_member(pgid.as_raw()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Is any non-zombie process in process group `pgid` (from /proc/<pid>/stat)?
fn group_has_live_member(pgid: i32) -> bool {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return false;
    };
    rd.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // pid (comm) state ppid pgrp ...: comm may hold spaces and parens.
            let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
                return false;
            };
            let mut f = rest.split(' ');
            let state = f.next().unwrap_or("");
            let _ppid = f.next();
            let pgrp = f.next().and_then(|g| g.parse::<i32>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X"
        })
}

/// Sigterm mode: SIGTERM (twice if asked), then wait for the exit until
/// `deadline`; a harness still running then is SIGKILLed and hung.
fn stop(pid: Pid, how: Kill, at: String, deadline: Instant) -> Outcome {
    let twice = how == Kill::Stop { twice: true };
    wait_takes_stop_signals(pid, deadline);
    let _ = kill(pid, Signal::SIGTERM);
    if twice {
        std::thread::sleep(Duration::from_millis(SECOND_SIGNAL_AFTER_MS));
        let _ = kill(pid, Signal::SIGTERM);
    }
    loop {
        match waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return Outcome::Stopped { at, code, twice },
            Ok(WaitStatus::Signaled(_, sig, _)) => {
                return Outcome::SignalNotConfirmed {
                    status: format!(
                        "sent SIGTERM at {at}; the harness died of {sig} instead of exiting"
                    ),
                }
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => {
                return Outcome::SignalNotConfirmed {
                    status: format!("sent SIGTERM at {at}; waitpid: {e}"),
                }
            }
        }
        if Instant::now() >= deadline {
            let _ = kill(Pid::from_raw(-pid.as_raw()), Signal::SIGKILL);
            let _ = reap(pid);
            return Outcome::Hung;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wait (until `deadline`) until the harness has blocked SIGTERM for its
/// stop thread (harness::stop::install, its first act). Before that, the
/// kernel's default action kills it outright: a SIGKILL by another name,
/// which sigkill mode covers; this mode is about the stop the harness takes.
fn wait_takes_stop_signals(pid: Pid, deadline: Instant) {
    let bit = 1u64 << (Signal::SIGTERM as i32 - 1);
    while Instant::now() < deadline {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .and_then(|h| u64::from_str_radix(h.trim(), 16).ok());
        match blocked {
            Some(m) if m & bit != 0 => return,
            None => return, // gone (or no /proc): nothing to wait for
            Some(_) => std::thread::sleep(Duration::from_micros(200)),
        }
    }
}

#[derive(Debug)]
#[allow(dead_code)] // the fields are read through Debug in messages
enum Reaped {
    Exited(i32),
    Signaled(Signal),
    Other(String),
}

fn reap(pid: Pid) -> Reaped {
    loop {
        match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, code)) => return Reaped::Exited(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Reaped::Signaled(sig),
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Reaped::Other(e.to_string()),
        }
    }
}

fn exited(r: Reaped, kill_planned: bool) -> Outcome {
    match r {
        Reaped::Exited(code) if kill_planned => Outcome::ExitedBeforeSignal { code },
        Reaped::Exited(code) => Outcome::Exited { code },
        other => Outcome::SignalNotConfirmed {
            status: format!("{other:?}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_group_is_waited_for_until_no_member_lives() {
        // A leader with a child in its group, as the harness with a check.
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30; wait"]);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let t0 = Instant::now();
        while !group_has_live_member(pid.as_raw()) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(group_has_live_member(pid.as_raw()));
        let _ = kill(Pid::from_raw(-pid.as_raw()), Signal::SIGKILL);
        assert!(matches!(reap(pid), Reaped::Signaled(Signal::SIGKILL)));
        std::mem::forget(child);
        wait_group_gone(pid);
        assert!(
            !group_has_live_member(pid.as_raw()),
            "a group member outlived the wait"
        );
    }
}
