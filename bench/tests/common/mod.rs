//! Shared by the bench's integration tests: where the repo is, the harness
//! binary the bench runs as a subprocess, and a suite case copied from a
//! committed one.
#![allow(dead_code)] // each test crate uses its own subset

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The harness binary next to the bench binary under test, built if missing:
/// `cargo test -p bench` alone does not build the other package's binary.
pub fn harness_bin() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_bench")).with_file_name("harness");
    if !p.exists() {
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "-q", "-p", "harness", "--bin", "harness"])
            .current_dir(repo());
        if !cfg!(debug_assertions) {
            c.arg("--release");
        }
        assert!(c.status().unwrap().success());
    }
    p
}

/// A harness that breaks one promise on purpose: a wrapper script in `dir`
/// that runs the test-variants build (built in the one target dir if it is
/// missing or stale) as the named variant (harness::mutants).
pub fn variant_harness(dir: &Path, variant: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = bench::batch::build_harness(None, false).unwrap();
    let w = dir.join(format!("harness-{variant}"));
    std::fs::write(
        &w,
        format!(
            "#!/bin/sh\nHARNESS_CHAOS_BROKEN={variant} exec '{}' \"$@\"\n",
            bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
    w
}

/// `bench run` on a suite (CI mode): exit code, summary.json (Null when
/// none was written) and everything it printed.
pub fn bench_run(suite: &Path, out: &Path, extra: &[&str]) -> (i32, Value, String) {
    bench_run_with(&harness_bin(), suite, out, extra)
}

/// [`bench_run`] with another harness binary (e.g. a wrapper script).
pub fn bench_run_with(
    harness: &Path,
    suite: &Path,
    out: &Path,
    extra: &[&str],
) -> (i32, Value, String) {
    // One run per case unless the test asks for more: the tests are about
    // one case-run's verdict (`bench run`'s own default is the gate's 3).
    let runs: &[&str] = if extra.contains(&"--runs-per-case") {
        &[]
    } else {
        &["--runs-per-case", "1"]
    };
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("run")
        .arg("--suite")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .arg("--harness")
        .arg(harness)
        .args(runs)
        .args(extra)
        .env("CI", "1")
        .output()
        .unwrap();
    let summary = std::fs::read(out.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (
        o.status.code().unwrap_or(-1),
        summary,
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// A case built from `src` (a case dir without case.toml), with its own id.
pub fn add_case_from(src: &str, suite: &Path, category: &str, id: &str, expect: &str) {
    let dir = suite.join(category).join(id);
    let src = repo().join(src);
    harness::workspace::copy_tree(&src, &dir).unwrap();
    let mut sc: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("scenario.json")).unwrap()).unwrap();
    sc["case"] = Value::String(id.into());
    std::fs::write(dir.join("scenario.json"), sc.to_string()).unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["script"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    std::fs::write(
        dir.join("case.toml"),
        format!("id = \"{id}\"\ncategory = \"{category}\"\ntitle = \"copy of a committed case\"\nlatency_cap_ms = 60000\ncost_cap_usd = 1.0\n\n[expect]\n{expect}\n"),
    )
    .unwrap();
}
