//! Checkpoint save of a 40-task state vs the bare durable sequence (write +
//! fsync + rename + fsync dir) of the same bytes, side by side in one run.
//! The goal: save within 1.3x of bare. Run: `cargo bench -p harness --features bench --bench checkpoint`.

use criterion::{criterion_group, criterion_main, Criterion};
use harness::state::RunState;
use std::io::Write;

fn bare(dir: &std::path::Path, bytes: &[u8]) {
    let tmp = dir.join(".bare.tmp");
    let fin = dir.join("bare.json");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::rename(&tmp, &fin).unwrap();
    std::fs::File::open(dir).unwrap().sync_all().unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(".").unwrap(); // the same filesystem the state dir would use
    let state = RunState::example(40);
    let bytes = harness::checkpoint::encode(&state).unwrap();
    eprintln!("40-task checkpoint frame: {} bytes", bytes.len());
    let mut g = c.benchmark_group("checkpoint_40_tasks");
    g.bench_function("bare_write_fsync_rename_fsyncdir", |b| {
        b.iter(|| bare(dir.path(), &bytes))
    });
    g.bench_function("harness_checkpoint_save", |b| {
        b.iter(|| harness::checkpoint::save(dir.path(), &state).unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(60).measurement_time(std::time::Duration::from_secs(6));
    targets = bench
}
criterion_main!(benches);
