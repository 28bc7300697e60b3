//! A stop request: SIGTERM, SIGINT or SIGHUP, from a supervisor (systemd, a
//! Kubernetes pod, a CI step's timeout) or a person pressing Ctrl-C.
//!
//! A stop is not an ending. The run has not ended: it is suspended at a safe
//! point, with its checkpoint, a report that says it was stopped (never one
//! of the seven endings), the page and an alert, and exit code 128 + the
//! signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), distinct from
//! every ending's. Re-running the same `harness run` resumes it.
//!
//! How: `harness run` blocks the three signals in its first thread before any
//! other starts (every later thread inherits the mask; `Command` resets it in
//! children), and one thread takes them with `sigwait`. The first sets the
//! process-wide request, which the loop reads at its safe points; a model
//! call in flight is abandoned ([`requested_wait`]), a check in flight is
//! killed whole (crate::check polls [`requested`]). If the run has not exited
//! within [`STOP_GRACE_S`], or a second signal comes, the process exits at
//! once, leaving what a SIGKILL leaves (which `bench chaos` proves safe).

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// How long a stopped run has, from the first signal, to reach its safe
/// point and write its checkpoint, report, page and alert, in seconds.
/// (A check or model call in flight is cut at once; what remains is the
/// writes, and an alert webhook bounded by its own 5 s timeout.)
pub const STOP_GRACE_S: u64 = 10;

/// The signal that asked for the stop (0: none yet).
static REQUESTED: AtomicI32 = AtomicI32::new(0);
static REQUESTED_AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The signals that ask a run to stop.
pub const STOP_SIGNALS: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// Exit code of a run stopped by `sig`: the shell's convention, 128 + its number.
pub fn exit_code(sig: Signal) -> i32 {
    128 + sig as i32
}

/// The stop request, if one came.
pub fn requested() -> Option<Signal> {
    match REQUESTED.load(Ordering::SeqCst) {
        0 => None,
        n => Signal::try_from(n).ok(),
    }
}

/// When the stop was requested (monotonic), if it was.
pub fn requested_at() -> Option<std::time::Instant> {
    REQUESTED_AT.get().copied()
}

/// Resolves when a stop is requested (at once if one already was): what a
/// model call in flight races against.
pub async fn requested_wait() -> Signal {
    loop {
        // Created before the flag is read: a `notify_waiters` between the
        // read and the await still wakes it (tokio's documented guarantee).
        let woken = WAKE.notified();
        if let Some(s) = requested() {
            return s;
        }
        woken.await;
    }
}

/// Record a stop request and wake what waits on it. The signal thread's
/// first act; also how a library caller (a test) asks a run to stop.
pub fn request(sig: Signal) -> bool {
    let first = REQUESTED
        .compare_exchange(0, sig as i32, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        let _ = REQUESTED_AT.set(std::time::Instant::now());
    }
    WAKE.notify_waiters();
    first
}

/// Take SIGTERM, SIGINT and SIGHUP as stop requests for the rest of the
/// process. Call from the first thread, before any other thread starts.
pub fn install() -> Result<(), String> {
    take_in_thread("stop-signals", |sig| {
        if !request(sig) {
            exit_now(exit_code(sig), &format!("a second signal ({sig})"));
        }
        crate::console::err_line(&format!(
            "harness: {sig}: stopping at the next safe point (within {STOP_GRACE_S} s; a second signal exits at once)"
        ));
        let _ = std::thread::Builder::new()
            .name("stop-grace".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_secs(STOP_GRACE_S));
                exit_now(
                    exit_code(sig),
                    &format!("the stop's grace of {STOP_GRACE_S} s ran out"),
                );
            });
    })
}

/// Block the stop signals in this thread (so in every thread started after
/// it; `Command` resets the mask in children) and hand each one, in order,
/// to `on_signal` on a thread of its own that takes them with `sigwait`.
/// The one way the harness and the bench (bench::interrupt) take them.
pub fn take_in_thread(
    name: &str,
    mut on_signal: impl FnMut(Signal) + Send + 'static,
) -> Result<(), String> {
    let mut set = SigSet::empty();
    for s in STOP_SIGNALS {
        if s == Signal::SIGHUP && crate::mutants::active(crate::mutants::Mutant::HupNotAStop) {
            continue;
        }
        set.add(s);
    }
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|e| format!("cannot block the stop signals: {e}"))?;
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while let Ok(sig) = set.wait() {
                on_signal(sig);
            }
        })
        .map(|_| ())
        .map_err(|e| format!("cannot start the stop-signal thread: {e}"))
}

/// Exit at once, saying why. Not `process::exit`: no destructor or at-exit
/// work may run on a half-written path; what is on disk is what a SIGKILL
/// would leave, which `bench chaos` proves safe.
fn exit_now(code: i32, why: &str) -> ! {
    crate::console::err_line(&format!(
        "harness: {why}: exiting at once (exit {code}); the checkpoint on disk is what a resume continues from"
    ));
    // SAFETY: _exit has no precondition and never returns. That it runs no
    // destructor, at-exit handler or buffer flush is the point (above); the
    // line just written went out flushed (console::err).
    unsafe { libc::_exit(code) }
}
