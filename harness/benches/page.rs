//! The morning page of a 40-task run (120 booked calls, 10 drift checks):
//! rendering it, and writing it beside report.json at an ending, each
//! against the report.json it sits beside, side by side in one run.
//! Run: `cargo bench -p harness --features bench --bench page`.

use criterion::{criterion_group, criterion_main, Criterion};
use harness::drift::Band;
use harness::ending::Ending;
use harness::ledger::SpendPoint;
use harness::model::types::CallRole;
use harness::page::RunPage;
use harness::report::Report;
use harness::state::{DriftPoint, RunState};

fn report() -> Report {
    let mut s = RunState::example(40);
    let mut spent = 0.0;
    for i in 0..120u64 {
        let cost = 0.01 + (i % 7) as f64 * 0.003;
        spent += cost;
        s.ledger.spend_curve.push(SpendPoint {
            call: i + 1,
            role: Some(match i % 10 {
                0 => CallRole::Plan,
                9 => CallRole::Judge,
                _ => CallRole::Execute,
            }),
            call_key: format!("execute/t{}/a1/{}", i / 3, i % 3),
            cost_usd: cost,
            spent_usd: spent,
            basis: "usage".into(),
        });
    }
    s.ledger.spent_usd = spent;
    s.hard_cap_usd = 28.0;
    for k in 0..10 {
        s.drift_history.push(DriftPoint {
            step: 4 * k,
            score: 0.05 * k as f64,
            band: Band::Aligned,
            off_goal_task_ids: vec![],
            reasoning: "each task serves the goal".into(),
        });
    }
    Report::build(
        &s,
        "Reduce p95 latency on /api/search to under 200ms.",
        Ending::TimeLimit,
        None,
        None,
        false,
        8 * 3600 * 1000,
    )
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(".").unwrap(); // the filesystem a state dir would use
    let r = report();
    let page = RunPage::from_parts(r.clone(), &[], 0.0, vec![]);
    let html = page.render();
    let json = serde_json::to_vec_pretty(&r).unwrap();
    eprintln!(
        "40-task run: report.html {} bytes, report.json {} bytes",
        html.len(),
        json.len()
    );
    let mut g = c.benchmark_group("page_40_tasks");
    g.bench_function("report_json_serialize", |b| {
        b.iter(|| harness::redact::to_json_vec(&r, true).unwrap())
    });
    g.bench_function("page_render", |b| b.iter(|| page.render()));
    g.bench_function("report_json_write", |b| {
        b.iter(|| r.write(dir.path()).unwrap())
    });
    g.bench_function("page_write", |b| {
        b.iter(|| harness::page::write(&r, dir.path()).unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
