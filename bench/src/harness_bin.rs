//! Which harness binary a command runs, resolved before its first case-run:
//! the production one (`--harness`, or the one beside the bench), and the
//! test-variants build with the pause points (built once when missing or
//! stale). The one home of that resolution; `batch` re-exports it for the
//! commands that name it there.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The harness binary next to this bench binary.
pub fn default_harness_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("harness")))
        .unwrap_or_else(|| PathBuf::from("harness"))
}

/// Why the harness binary a command needs is not there. Cloned out of the
/// per-process cache of [`interrupt_harness`], hence the `Arc`s.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HarnessBinError {
    #[error("harness binary {} not found; build it with `cargo build --release --workspace` or pass --harness", .0.display())]
    NotFound(PathBuf),
    #[error("building the test-variants harness failed ({0})")]
    BuildFailed(std::process::ExitStatus),
    #[error("cannot run cargo to build the harness: {0}; pass --harness")]
    NoCargo(Arc<std::io::Error>),
    #[error("cannot create {}: {source}", .dir.display())]
    CreateDir {
        dir: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("cannot copy {} to {}: {source}", .from.display(), .to.display())]
    Copy {
        from: PathBuf,
        to: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("{} has no pause points (not a --features test-variants build)", .0.display())]
    NoPausePoints(PathBuf),
}

/// The harness binary: `--harness`, or the one next to this bench binary.
pub fn harness_bin(arg: Option<&Path>) -> Result<PathBuf, HarnessBinError> {
    let p = arg
        .map(Path::to_path_buf)
        .unwrap_or_else(default_harness_bin);
    if p.is_file() {
        Ok(p)
    } else {
        Err(HarnessBinError::NotFound(p))
    }
}

/// Build (when needed) and return the harness binary every bench command
/// that needs the test hooks drives: `bench chaos` (its pause points and
/// simfs log), its self-test (the `chaos-broken` variants, and the baseline
/// with none selected), `bench self-test` (the mutants) and the interrupted
/// half of an `[interrupt]` case. One build serves them all, the
/// test-variants one: the `harness-test-variants` binary (harness/Cargo.toml),
/// built in the one target dir with the one dependency feature set, so only
/// the harness crate compiles again (never every dependency into a second
/// target dir), then copied to `target/test-variants/release/harness` so the
/// hooks never reach `target/release/harness`. `explicit` (--harness) wins.
/// Cargo runs unless `no_build` or the copy is newer than every harness
/// source (a copy `scripts/test` put there is used as it is).
pub fn build_harness(
    explicit: Option<&PathBuf>,
    no_build: bool,
) -> Result<PathBuf, HarnessBinError> {
    if let Some(h) = explicit {
        return Ok(h.clone());
    }
    let root = repo_root();
    let bin = root.join(TEST_VARIANTS_BIN);
    if no_build || newer_than_sources(&bin, &root) {
        return Ok(bin);
    }
    let target = cargo_target_dir(&root);
    // cargo's own progress bar goes to our stderr: a cold build takes
    // minutes, and the person waiting sees why.
    errln!("bench: building the test-variants harness (cargo build --release -p harness --features test-variants --bin {VARIANTS_BIN_NAME}); only the harness crate compiles");
    let st = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "-p", "harness"])
        .args(["--features", "test-variants", "--bin", VARIANTS_BIN_NAME])
        .current_dir(&root)
        .status();
    match st {
        Ok(s) if s.success() => {
            install_copy(&target.join("release").join(VARIANTS_BIN_NAME), &bin)?;
        }
        Ok(s) => return Err(HarnessBinError::BuildFailed(s)),
        Err(e) if bin.is_file() => {
            errln!("bench: cannot run cargo ({e}); using {}", bin.display())
        }
        Err(e) => return Err(HarnessBinError::NoCargo(Arc::new(e))),
    }
    Ok(bin)
}

/// The name of the harness binary with every test variant (harness/Cargo.toml).
const VARIANTS_BIN_NAME: &str = "harness-test-variants";

/// The cargo target dir: `CARGO_TARGET_DIR` when set, else `<root>/target`.
fn cargo_target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
}

/// Copy `from` to `to` through a temp file and a rename, so a command
/// running the old copy (or a concurrent bench) never sees half a binary.
fn install_copy(from: &Path, to: &Path) -> Result<(), HarnessBinError> {
    let dir = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| HarnessBinError::CreateDir {
        dir: dir.to_path_buf(),
        source: Arc::new(e),
    })?;
    let tmp = dir.join(format!(".harness.{}.tmp", std::process::id()));
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::rename(&tmp, to))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            HarnessBinError::Copy {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
                source: Arc::new(e),
            }
        })
}

/// Whether `bin` exists and is newer than everything the harness is built
/// from (its sources, its manifest, the lock file).
fn newer_than_sources(bin: &Path, root: &Path) -> bool {
    fn newest(p: &Path, t: &mut std::time::SystemTime) {
        let Ok(m) = std::fs::metadata(p) else { return };
        if m.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                newest(&e.path(), t);
            }
        } else if let Ok(when) = m.modified() {
            *t = (*t).max(when);
        }
    }
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        return false;
    };
    let mut t = std::time::SystemTime::UNIX_EPOCH;
    // The harness binary is built from these crates (harness -> model,
    // replay, strict).
    for p in [
        "harness/src",
        "harness/Cargo.toml",
        "model/src",
        "model/Cargo.toml",
        "replay/src",
        "replay/Cargo.toml",
        "strict/src",
        "strict/Cargo.toml",
        "Cargo.lock",
    ] {
        newest(&root.join(p), &mut t);
    }
    built >= t
}

/// Whether `bin` carries the test hooks (the `test-hooks` feature): its
/// pause points read `HARNESS_CHAOS_PAUSE_AT`, a name no production binary
/// holds (.ci/run checks that of target/release/harness). Cached per path.
pub fn has_test_hooks(bin: &Path) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, bool>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    *seen.entry(bin.to_path_buf()).or_insert_with(|| {
        std::fs::read(bin).is_ok_and(|b| {
            memchr::memmem::find(&b, harness::chaos_hook::ENV_VAR.as_bytes()).is_some()
        })
    })
}

/// The binary that runs the interrupted half of an `[interrupt]` case (the
/// run killed at its pause point): `harness_bin` when it has the pause
/// points, else the test-variants build (built once per process when
/// missing or stale). The resumed run, which the case scores, stays on
/// `harness_bin`: a production harness resumes what the hooked one left.
pub fn interrupt_harness(harness_bin: &Path) -> Result<PathBuf, HarnessBinError> {
    use std::sync::OnceLock;
    if has_test_hooks(harness_bin) {
        return Ok(harness_bin.to_path_buf());
    }
    static HOOKED: OnceLock<Result<PathBuf, HarnessBinError>> = OnceLock::new();
    HOOKED
        .get_or_init(|| {
            let bin = build_harness(None, false)?;
            if has_test_hooks(&bin) {
                Ok(bin)
            } else {
                Err(HarnessBinError::NoPausePoints(bin))
            }
        })
        .clone()
}

/// Where the harness with every test variant is kept (relative to the
/// repository root): a copy of the `harness-test-variants` binary.
pub const TEST_VARIANTS_BIN: &str = "target/test-variants/release/harness";

/// The repository root (the bench crate's parent).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
