//! What the checks' confinement costs per process: `/bin/true` started and
//! waited for unconfined, at the Landlock level, and at the full level
//! (Landlock, a network namespace, a pids cgroup), side by side in one run.
//! The goal: a few milliseconds at most. Run:
//! `cargo bench -p harness --features bench --bench sandbox`.

use criterion::{criterion_group, criterion_main, Criterion};
use harness::sandbox::{confine, Exec, Level, Policy};
use std::os::fd::AsFd;

fn once(policy: &Policy, level: Level, out: &std::fs::File) {
    let confined = confine(policy, level).unwrap();
    let exec = Exec {
        program: "/bin/true",
        args: &[],
        env: &[],
        path_var: std::ffi::OsStr::new("/usr/bin:/bin"),
        cwd: std::path::Path::new("/"),
        stdout: out.as_fd(),
        stderr: out.as_fd(),
    };
    let mut child = confined.spawn(&exec).unwrap();
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
    let null = std::fs::File::create("/dev/null").unwrap();
    let mut g = c.benchmark_group("check_process");
    for level in [Level::None, Level::Landlock, Level::Full] {
        if level > available {
            eprintln!("{level:?}: not available here, not measured");
            continue;
        }
        g.bench_function(level.as_str(), |b| b.iter(|| once(&policy, level, &null)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
