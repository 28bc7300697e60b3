//! Checks the harness runs: the goal predicate and the spec's named checks
//! (`tests`, `lint`, `p95`, ...). They are commands from the spec, run by the
//! harness with the workspace as working directory and a hard timeout. The
//! model can name a check in a task's verify; it can never supply the command.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Output kept from a check, so a chatty test suite cannot grow the report.
pub const CHECK_OUTPUT_MAX_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSpec {
    /// argv; argv[0] is looked up on PATH or is a path relative to the spec file
    /// (already resolved to absolute by the spec loader).
    pub command: Vec<String>,
    pub timeout_s: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    pub passed: bool,
    /// Exit code, or None when killed by the timeout or a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Tail of stdout+stderr, at most CHECK_OUTPUT_MAX_BYTES.
    pub output: String,
}

/// Run a check command in `cwd`. Never panics; a command that cannot start is
/// a failed check with the reason in `output`.
pub fn run_check(spec: &CheckSpec, cwd: &Path) -> CheckResult {
    let Some((prog, args)) = spec.command.split_first() else {
        return CheckResult {
            passed: false,
            exit_code: None,
            timed_out: false,
            output: "empty command".into(),
        };
    };
    let out_file = match tempfile_in_tmp() {
        Ok(f) => f,
        Err(e) => {
            return CheckResult {
                passed: false,
                exit_code: None,
                timed_out: false,
                output: format!("cannot capture output: {e}"),
            }
        }
    };
    let (file, path) = out_file;
    let child = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(file.try_clone().map(Stdio::from).unwrap_or(Stdio::null()))
        .stderr(Stdio::from(file))
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return CheckResult {
                passed: false,
                exit_code: None,
                timed_out: false,
                output: format!("cannot start {prog:?}: {e}"),
            };
        }
    };
    let deadline = Instant::now() + Duration::from_secs(spec.timeout_s.max(1));
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let raw = std::fs::read(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    let tail = if raw.len() > CHECK_OUTPUT_MAX_BYTES {
        &raw[raw.len() - CHECK_OUTPUT_MAX_BYTES..]
    } else {
        &raw[..]
    };
    let output = String::from_utf8_lossy(tail).into_owned();
    match status {
        Some(st) => CheckResult {
            passed: st.success(),
            exit_code: st.code(),
            timed_out: false,
            output,
        },
        None => CheckResult {
            passed: false,
            exit_code: None,
            timed_out: true,
            output,
        },
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
        .write(true)
        .open(&p)?;
    Ok((f, p))
}
