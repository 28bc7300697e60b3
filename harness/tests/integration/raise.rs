//! Raise the limit a run ended on and go on (`--raise-cap-usd`,
//! `--raise-wall-clock-s`), through the real binary: the raise is a ledger
//! journal line, the goal and the verified tasks are unchanged, the run
//! continues from its checkpoint; any other raise is refused and changes
//! nothing.

use crate::common::*;
use serde_json::json;

/// Output priced so that one call's worst case (40,000 tokens) is $27.74:
/// under a $28 cap the second execute call cannot be reserved.
const OUTPUT_USD_PER_MTOK: f64 = 693.5;

fn notes_task(id: &str) -> serde_json::Value {
    json!({"id": id, "description": "Write docs/notes.md with the rollout notes",
           "verify": {"kind": "file_contains", "path": "docs/notes.md", "text": "rollout"}})
}

/// t1 writes the index, then its closing call is refused by the ledger
/// (BUDGET_EXHAUSTED with t2 still queued); raised, t2 runs and the goal
/// (both files) is met.
fn capped_case(name: &str) -> Case {
    let mut c = case(name).calls(vec![
        plan("plan/0", json!([index_task("t1"), notes_task("t2")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
        tool(
            "execute/t2/a0/0",
            "write_file",
            json!({"path": "docs/notes.md", "content": "rollout of idx_search_ts\n"}),
        ),
        text("execute/t2/a0/1", "done"),
    ]);
    c.predicate = r#"command = ["sh", "-c", "grep -q 'CREATE INDEX' db/0042_search_index.sql && grep -q rollout docs/notes.md"]"#.into();
    c.max_tokens = 40_000;
    c.output_usd_per_mtok = OUTPUT_USD_PER_MTOK;
    c
}

fn run_with(c: &Case, args: &[&str]) -> RunResult {
    c.materialize();
    let mut cmd = c.command();
    cmd.args(args);
    c.result(cmd.output().unwrap())
}

fn bytes(p: std::path::PathBuf) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

#[test]
fn a_raised_cap_lets_a_budget_exhausted_run_go_on_to_its_goal() {
    let c = capped_case("raise-cap");
    let first = c.run();
    assert_eq!(
        (first.code, first.ending()),
        (2, "BUDGET_EXHAUSTED"),
        "{}",
        first.explain()
    );
    assert_eq!(first.ids("verified"), vec!["t1"]);
    assert_eq!(first.report["queue_left"], json!(["t2"]));
    let spent = first.report["spend_usd"].as_f64().unwrap();

    // Refused, and nothing changes: lower than the cap, the other limit.
    let ckpt = bytes(harness::checkpoint::path_in(&c.state_dir()));
    let journal = bytes(c.state_dir().join("ledger.jsonl"));
    for (args, said) in [
        (vec!["--raise-cap-usd", "20"], "above the current limit 28"),
        (vec!["--raise-cap-usd", "nan"], "above the current limit 28"),
        (
            vec!["--raise-wall-clock-s", "9999"],
            "ended BUDGET_EXHAUSTED, not TIME_LIMIT",
        ),
    ] {
        let r = run_with(&c, &args);
        assert_eq!(r.code, 64, "{args:?}: {}", r.explain());
        assert!(r.stderr.contains(said), "{args:?}: {}", r.stderr);
        assert_eq!(bytes(harness::checkpoint::path_in(&c.state_dir())), ckpt);
        assert_eq!(bytes(c.state_dir().join("ledger.jsonl")), journal);
        assert_eq!(r.ending(), "BUDGET_EXHAUSTED");
    }

    let r = run_with(&c, &["--raise-cap-usd", "100"]);
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.ids("verified"), vec!["t1", "t2"]);
    assert_eq!(r.report["goal_sha256"], first.report["goal_sha256"]);
    assert_eq!(r.report["hard_cap_usd"], 100.0);
    assert!(r.report["spend_usd"].as_f64().unwrap() > spent);
    let raises = &r.report["limit_raises"];
    assert_eq!(raises[0]["limit"], "hard_cap_usd", "{raises}");
    assert_eq!(
        (raises[0]["old"].as_f64(), raises[0]["new"].as_f64()),
        (Some(28.0), Some(100.0))
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(c.state_dir().join("ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let raised: Vec<_> = lines.iter().filter(|l| l["op"] == "limit").collect();
    assert_eq!(raised.len(), 1, "{lines:?}");
    assert_eq!(
        (raised[0]["old"].as_f64(), raised[0]["new"].as_f64()),
        (Some(28.0), Some(100.0))
    );
    let page = std::fs::read_to_string(c.state_dir().join("report.html")).unwrap();
    assert!(page.contains("Limit raised"), "the page shows the raise");

    // The raised cap is the journal's: a plain re-run re-reports, and a
    // raise of a run that ended GOAL_MET is refused.
    let again = run_with(&c, &[]);
    assert_eq!((again.code, again.ending()), (0, "GOAL_MET"));
    let r = run_with(&c, &["--raise-cap-usd", "200"]);
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(
        r.stderr.contains("ended GOAL_MET, not BUDGET_EXHAUSTED"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_raised_wall_clock_lets_a_time_limit_run_go_on() {
    // t1's closing call takes 5 s on the wire; the run's clock is 2 s: the
    // call is cut, t1 (its index written) is verified at the ending, and t2
    // is left in the queue for the raised clock.
    let mut c = capped_case("raise-clock");
    c.max_tokens = 4096;
    c.output_usd_per_mtok = 25.0;
    c.wall_clock_limit_s = 2.0;
    c.latency_scale = 1.0;
    c.calls[2].latency_ms = Some(5_000);
    let first = c.run();
    assert_eq!(
        (first.code, first.ending()),
        (2, "TIME_LIMIT"),
        "{}",
        first.explain()
    );
    let r = run_with(&c, &["--raise-cap-usd", "100"]);
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(
        r.stderr.contains("ended TIME_LIMIT, not BUDGET_EXHAUSTED"),
        "{}",
        r.stderr
    );

    c.latency_scale = 0.0;
    let r = run_with(&c, &["--raise-wall-clock-s", "600"]);
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["limit_raises"][0]["limit"], "wall_clock_limit_s");
    assert_eq!(r.report["limit_raises"][0]["new"].as_f64(), Some(600.0));
}
