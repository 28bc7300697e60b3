//! Helpers for the end-to-end tests in `tests/e2e/` (one test binary, `e2e`): where the repository
//! is, the built `harness` and `bench` binaries, and running them with a
//! clean environment.
//!
//! `CARGO_BIN_EXE_*` exists only inside the package that owns a binary, so
//! this crate finds the binaries in its own profile's target dir (the parent
//! of the test executable's `deps/`). `cargo test --workspace` has just
//! linked them there; `cargo test -p e2e` alone does not, so they are built
//! once per test process when missing or older than a source of the crates
//! that make them (a stale binary would test yesterday's behaviour).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The repository root (this crate lives in `tests/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `target/<profile>`, the directory the test executable's `deps/` is in.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps")
        .to_path_buf()
}

fn newest_mtime(p: &Path, newest: &mut SystemTime) {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if meta.is_dir() {
        for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
            newest_mtime(&e.path(), newest);
        }
    } else if let Ok(m) = meta.modified() {
        *newest = (*newest).max(m);
    }
}

fn stale(bin: &Path, sources: SystemTime) -> bool {
    match std::fs::metadata(bin).and_then(|m| m.modified()) {
        Ok(built) => built < sources,
        Err(_) => true,
    }
}

/// The `harness` and `bench` binaries of this profile, built if needed.
pub fn bins() -> &'static (PathBuf, PathBuf) {
    static BINS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BINS.get_or_init(|| {
        let dir = profile_dir();
        let harness = dir.join("harness");
        let bench = dir.join("bench");
        let mut sources = SystemTime::UNIX_EPOCH;
        for p in [
            "harness/Cargo.toml",
            "harness/src",
            "bench/Cargo.toml",
            "bench/src",
            "chaos/Cargo.toml",
            "chaos/src",
        ] {
            newest_mtime(&repo().join(p), &mut sources);
        }
        if stale(&harness, sources) || stale(&bench, sources) {
            let mut c = Command::new(env!("CARGO"));
            c.args(["build", "--quiet", "-p", "harness", "-p", "bench", "--bins"])
                .current_dir(repo());
            if !cfg!(debug_assertions) {
                c.arg("--release");
            }
            let st = c.status().expect("cargo runs");
            assert!(st.success(), "cargo build of harness and bench failed");
        }
        (harness, bench)
    })
}

pub fn harness_bin() -> &'static Path {
    &bins().0
}

pub fn bench_bin() -> &'static Path {
    &bins().1
}

/// What a finished command left: its exit code (-1 for a signal) and output.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Both streams, for assertion messages.
    pub fn log(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// A command in the repository root with the environment the README's
/// offline commands assume: no provider key of any kind (replay needs none,
/// so a test that passes here cannot lean on one) and CI set (no progress
/// bar in the captured output).
pub fn command(program: &Path) -> Command {
    let mut c = Command::new(program);
    c.current_dir(repo()).env("CI", "1").stdin(Stdio::null());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.ends_with("_API_KEY") || k.ends_with("_AUTH_TOKEN") {
            c.env_remove(&k);
        }
    }
    c
}

pub fn run(c: &mut Command) -> Out {
    let o = c.output().expect("the command starts");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub fn bench(args: &[&str]) -> Command {
    let mut c = command(bench_bin());
    c.args(args);
    c
}

pub fn harness(args: &[&str]) -> Command {
    let mut c = command(harness_bin());
    c.args(args);
    c
}

pub fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A recursive copy (the case fixtures are plain files and directories).
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// One small committed case of each gate category: each is a handful of
/// replayed calls, so a suite of them runs in about a second.
pub const SMALL_CASES: [(&str, &str); 4] = [
    ("happy", "happy-search-p95-index"),
    ("edge", "edge-wind-down-at-90"),
    ("adversarial", "adv-check-logs-env-to-workspace"),
    ("regression", "regression-cache-write-billed-above-reserve"),
];

/// A suite under `root` holding copies of `cases` (category, id).
pub fn small_suite(root: &Path, cases: &[(&str, &str)]) -> PathBuf {
    let suite = root.join("suites");
    for (cat, id) in cases {
        copy_dir(
            &repo().join("suites").join(cat).join(id),
            &suite.join(cat).join(id),
        );
    }
    suite
}
