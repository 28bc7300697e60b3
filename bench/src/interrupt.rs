//! The bench asked to stop: SIGINT (Ctrl-C), SIGTERM (a CI step's timeout,
//! a supervisor) or SIGHUP. The first signal stops new case-runs from
//! starting and asks every harness in flight to stop (SIGTERM: each
//! suspends at a safe point, harness::stop); the command then writes its
//! summary marked interrupted, with what finished, and exits 128 + the
//! signal. A second signal kills every harness in flight (SIGKILL) and
//! exits at once: nothing is left running.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

static REQUESTED: AtomicI32 = AtomicI32::new(0);
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// Whether this command runs harness processes (all but `bench serve`).
static HARNESS_COMMANDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
/// The harness processes the bench has running.
static CHILDREN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// The signal that interrupted the command, if one did.
pub fn requested() -> Option<nix::sys::signal::Signal> {
    match REQUESTED.load(Ordering::SeqCst) {
        0 => None,
        n => nix::sys::signal::Signal::try_from(n).ok(),
    }
}

/// Resolves once the command is interrupted (at once if it already was).
pub async fn wait() -> nix::sys::signal::Signal {
    loop {
        let woken = WAKE.notified();
        if let Some(s) = requested() {
            return s;
        }
        woken.await;
    }
}

/// A harness process started by this command (its pid): killed by a
/// second signal. Drop the guard when it has been reaped.
pub struct Child(i32);

impl Child {
    pub fn register(pid: u32) -> Child {
        let pid = pid as i32;
        CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid);
        Child(pid)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// Take SIGINT, SIGTERM and SIGHUP for this command: blocked in this
/// thread (call it before the runtime starts, so every thread inherits the
/// mask; `Command` resets it in the harness children) and taken by one
/// `sigwait` thread, as the harness takes its own (harness::stop).
pub fn install(cmd: &'static str) -> Result<(), SignalsError> {
    static ONCE: std::sync::OnceLock<Result<(), SignalsError>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        harness::stop::take_in_thread("bench-signals", move |sig| on_signal(cmd, sig))
            .map_err(SignalsError)
    })
    .clone()
}

/// The signals could not be taken (the harness's reason, as it says it).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SignalsError(String);

fn on_signal(cmd: &str, sig: nix::sys::signal::Signal) {
    let first = REQUESTED
        .compare_exchange(0, sig as i32, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        WAKE.notify_waiters();
        // A command with no harness to stop (`bench serve`) says only that.
        if HARNESS_COMMANDS.load(Ordering::SeqCst) {
            errln!(
                "bench {cmd}: {sig}: no new case-run starts; the {} running are asked to stop (a second signal kills them and exits at once)",
                CHILDREN.lock().map(|c| c.len()).unwrap_or(0)
            );
        } else {
            errln!("bench {cmd}: {sig}: stopping (a second signal exits at once)");
        }
        return;
    }
    let pids: Vec<i32> = CHILDREN
        .lock()
        .map(|c| c.iter().copied().collect())
        .unwrap_or_default();
    for pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    errln!(
        "bench {cmd}: a second signal ({sig}): killed {} harness process(es); exiting at once without a summary",
        pids.len()
    );
    std::process::exit(128 + sig as i32);
}

/// This command runs no harness (`bench serve`): a stop request says
/// only that it stops.
pub fn runs_no_harness() {
    HARNESS_COMMANDS.store(false, Ordering::SeqCst);
}

/// The exit code of an interrupted command: 128 + the signal.
pub fn exit_code(sig: nix::sys::signal::Signal) -> u8 {
    (128 + sig as i32) as u8
}
