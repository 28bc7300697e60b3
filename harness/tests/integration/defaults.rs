//! The spec's defaults are the seed's numbers, pinned: a spec that says
//! nothing about drift, the loop or the budget notice gets exactly what the
//! design document prescribes (drift every 5 tasks, prune above 0.3, halt
//! above 0.5, no-progress K = 5, the pass-rate guard at 70% after 10
//! finished tasks, the budget notice at 70% and the wind-down at 90%).
//! Suite cases that rely on each default without restating it (suites/
//! README.md, "Defaults") fail when one changes; this test says which.

use harness::spec::RunSpec;

const MINIMAL: &str = r#"goal = "Reduce p95 latency on /api/search to under 200ms."
workspace = "workspace"
[predicate]
command = ["true"]
[budget]
hard_cap_usd = 28.0
wall_clock_limit_s = 28800
task_budget_tokens = 74700
[model]
protocol = "anthropic"
base_url = "http://127.0.0.1:9"
executor = "claude-opus-5"
[prices."claude-opus-5"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0
"#;

#[test]
fn a_spec_that_says_nothing_gets_the_seed_s_numbers() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("workspace")).unwrap();
    let p = t.path().join("run.toml");
    std::fs::write(&p, MINIMAL).unwrap();
    let s = RunSpec::load(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.memory, None,
        "no [memory]: the history is never compacted"
    );
    assert_eq!(s.drift_every_tasks, 5, "DRIFT_EVERY = 5");
    assert_eq!(s.drift_prune_above, 0.3, "prune above 0.3");
    assert_eq!(s.drift_halt_above, 0.5, "halt above 0.5");
    assert_eq!(s.no_progress_k, 5, "K = 5 tasks with no change");
    assert_eq!(s.min_pass_rate, 0.7, "halt below ~70% verified");
    assert_eq!(
        s.pass_rate_min_tasks, 10,
        "the guard applies after 10 tasks"
    );
    assert_eq!(harness::ledger::NOTICE_AT_FRACTION, 0.7, "notice at 70%");
    assert_eq!(
        harness::ledger::WIND_DOWN_AT_FRACTION,
        0.9,
        "finish the current task only from 90%"
    );
}
