//! What the checks' confinement costs per process: `/bin/true` started and
//! waited for unconfined, at the Landlock level, and at the full level
//! (Landlock, a network namespace, a pids cgroup), side by side in one run.
//! The goal: a few milliseconds at most. Run:
//! `cargo bench -p harness --features bench --bench sandbox`.

use criterion::{criterion_group, criterion_main, Criterion};
use harness::sandbox::{confine, Level, Policy};
use std::process::{Command, Stdio};

fn once(policy: &Policy, level: Level) {
    let mut cmd = Command::new("/bin/true");
    cmd.env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let confined = confine(&mut cmd, policy, level).unwrap();
    let mut child = cmd.spawn().unwrap();
    confined.set_leader(child.id());
    assert!(child.wait().unwrap().success());
    confined.kill_all();
}

fn bench(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let policy = Policy::for_check(
        &["/bin/true".into()],
        ws.path(),
        tmp.path(),
        std::ffi::OsStr::new("/usr/bin:/bin"),
    );
    let available = harness::sandbox::level();
    eprintln!(
        "this kernel: {:?} -> {:?}",
        harness::sandbox::probe(),
        available
    );
    let mut g = c.benchmark_group("check_process");
    for level in [Level::None, Level::Landlock, Level::Full] {
        if level > available {
            eprintln!("{level:?}: not available here, not measured");
            continue;
        }
        g.bench_function(level.as_str(), |b| b.iter(|| once(&policy, level)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
