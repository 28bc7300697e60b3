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

/// `--max-usd` tightens the run's cap for one command, and once the cap was
/// raised the run's cap is the raise: the flag never undoes it for later
/// commands, never loosens it, and says so when it tightens below it; with
/// `--raise-cap-usd` it is refused (the raise names the cap). The same raise
/// command again is never journaled twice.
#[test]
fn max_usd_only_tightens_a_raised_cap_and_never_undoes_it() {
    // capped_case with a third task, t3, for the run to go on to once t2
    // is parked by the clock.
    let mut c = capped_case("raise-max-usd");
    c.calls[0] = plan(
        "plan/0",
        json!([index_task("t1"), notes_task("t2"), notes_task("t3")]),
    );
    c.calls.push(tool(
        "execute/t3/a0/0",
        "write_file",
        json!({"path": "docs/notes.md", "content": "rollout of idx_search_ts\n"}),
    ));
    c.calls.push(text("execute/t3/a0/1", "done"));
    // Both parked (t2 by the clock, t3 by the budget), the last raise replans.
    c.calls.push(plan("replan/0", json!([notes_task("t4")])));
    c.calls.push(tool(
        "execute/t4/a0/0",
        "write_file",
        json!({"path": "docs/notes.md", "content": "rollout of idx_search_ts\n"}),
    ));
    c.calls.push(text("execute/t4/a0/1", "done"));
    let first = c.run();
    assert_eq!(first.ending(), "BUDGET_EXHAUSTED", "{}", first.explain());
    let ckpt = bytes(harness::checkpoint::path_in(&c.state_dir()));
    let journal = bytes(c.state_dir().join("ledger.jsonl"));
    let r = run_with(&c, &["--raise-cap-usd", "100", "--max-usd", "50"]);
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(r.stderr.contains("--max-usd"), "{}", r.stderr);
    assert_eq!(bytes(harness::checkpoint::path_in(&c.state_dir())), ckpt);
    assert_eq!(bytes(c.state_dir().join("ledger.jsonl")), journal);

    // Raised to $100, the run goes on and runs out of its 2 s clock in
    // t2's first call (5 s on the wire), cut and booked at its worst case.
    c.wall_clock_limit_s = 2.0;
    c.latency_scale = 1.0;
    c.calls[3].latency_ms = Some(5_000);
    let r = run_with(&c, &["--raise-cap-usd", "100"]);
    assert_eq!((r.code, r.ending()), (2, "TIME_LIMIT"), "{}", r.explain());
    assert_eq!(r.report["hard_cap_usd"], 100.0);
    let spent = r.report["spend_usd"].as_f64().unwrap();
    assert!(spent > 22.0, "the cut call at its worst case: {spent}");

    // The same raise again: re-reported, not journaled twice.
    let again = run_with(&c, &["--raise-cap-usd", "100"]);
    assert_eq!(
        (again.code, again.ending()),
        (2, "TIME_LIMIT"),
        "{}",
        again.explain()
    );
    let journal = c.state_dir().join("ledger.jsonl");
    let limits = || {
        std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["op"] == "limit")
            .collect::<Vec<_>>()
    };
    assert_eq!(limits().len(), 1, "{:?}", limits());

    // The clock raised with --max-usd 50, below the raised $100 (but above
    // the spec's $28): this command runs under $50, and says so; t2 was
    // parked at the TIME_LIMIT ending, and t3's first call (its worst case
    // $27.74 on top of what is spent) does not fit.
    c.latency_scale = 0.0;
    let r = run_with(&c, &["--raise-wall-clock-s", "600", "--max-usd", "50"]);
    assert_eq!(
        (r.code, r.ending()),
        (2, "BUDGET_EXHAUSTED"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["hard_cap_usd"], 50.0, "{}", r.explain());
    assert!(r.report["spend_usd"].as_f64().unwrap() <= 50.0);
    assert!(
        r.stderr
            .contains("--max-usd 50 is below the run's raised cap $100"),
        "{}",
        r.stderr
    );
    // The cap's raise stands in the journal (the clock's is added).
    let l = limits();
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(
        (l[0]["limit"].as_str(), l[0]["new"].as_f64()),
        (Some("hard_cap_usd"), Some(100.0))
    );

    // Raised again from the $50 it ended on (the cap in force), on to the
    // goal (t3 was parked at that ending: a replanned t4 writes the notes).
    let r = run_with(&c, &["--raise-cap-usd", "120"]);
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["hard_cap_usd"], 120.0);
    let raises = &r.report["limit_raises"];
    assert_eq!(
        (raises[2]["old"].as_f64(), raises[2]["new"].as_f64()),
        (Some(50.0), Some(120.0)),
        "{raises}"
    );
}
