//! Every injected fault kind (429 with Retry-After, 500, added latency, a
//! truncated body, a malformed body) is survived or classified through the
//! real harness run, and the faults are reproducible from their seed.

use crate::common::*;
use serde_json::{json, Value};

fn three_calls(name: &str) -> Case {
    case(name).calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ])
}

fn attempts(r: &RunResult) -> Vec<(String, u64)> {
    std::fs::read_to_string(r.state_dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "model_call")
        .map(|e| {
            (
                e["data"]["call_key"].as_str().unwrap().to_string(),
                e["data"]["attempts"].as_u64().unwrap(),
            )
        })
        .collect()
}

const CLEAN_SPEND: f64 = 3.0 * (3500.0 * 5.0 + 300.0 * 25.0) / 1e6;

#[test]
fn every_fault_kind_at_rate_one_is_survived_by_retries() {
    for kind in ["429=1.0,retry_after=0", "500=1.0", "latency=1.0:30"] {
        let mut c = three_calls("faulty");
        c.faults = Some(format!("{kind},seed=5"));
        let r = c.run();
        assert_eq!(
            (r.code, r.ending()),
            (0, "GOAL_MET"),
            "{kind}: {}",
            r.explain()
        );
        let a = attempts(&r);
        let expect = if kind.starts_with("latency") { 1 } else { 4 }; // faults only on attempts 0..3
        assert!(a.iter().all(|(_, n)| *n == expect), "{kind}: {a:?}");
        // Failed attempts (429/500) are not billed: spend is the clean run's.
        assert!(
            (r.report["spend_usd"].as_f64().unwrap() - CLEAN_SPEND).abs() < 1e-9,
            "{kind}: {}",
            r.explain()
        );
    }
}

#[test]
fn truncated_and_malformed_bodies_are_retried_and_booked_at_worst_case() {
    for kind in ["truncate=1.0", "malformed=1.0"] {
        let mut c = three_calls("garbled");
        c.faults = Some(format!("{kind},seed=5"));
        let r = c.run();
        assert_eq!(
            (r.code, r.ending()),
            (0, "GOAL_MET"),
            "{kind}: {}",
            r.explain()
        );
        // HTTP 200 with an unparseable body may have been billed: each such
        // attempt is booked at its worst case, never at zero, and the next
        // attempt is reserved again first; the reply is booked from usage.
        let curve = r.report["spend_curve"].as_array().unwrap();
        for key in ["plan/0", "execute/t1/a0/0", "execute/t1/a0/1"] {
            let bases: Vec<&str> = curve
                .iter()
                .filter(|p| p["call_key"] == key)
                .map(|p| p["basis"].as_str().unwrap())
                .collect();
            assert_eq!(
                bases,
                ["worst_case", "worst_case", "worst_case", "usage"],
                "{kind} {key}: {curve:?}"
            );
        }
        // Three calls, however many attempts were booked.
        assert_eq!(r.report["model_calls"], 3, "{kind}");
        assert!(
            r.report["spend_usd"].as_f64().unwrap() > CLEAN_SPEND + 3.0 * 3.0 * 4096.0 * 25.0 / 1e6
        );
    }
}

#[test]
fn faults_that_outlive_the_retries_are_classified_not_panicked() {
    let mut c = three_calls("down");
    c.faults = Some("500=1.0,seed=1".into());
    c.http_attempts = 3; // faults hit attempts 0, 1 and 2: all of them
    let r = c.run();
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "model_unavailable");
    assert!(r.report["detail"]
        .as_str()
        .unwrap()
        .contains("gave up after 3 attempts"));
}

#[test]
fn faults_are_reproducible_from_their_seed() {
    let run = |seed: u64| {
        let mut c = case("seeded").calls(vec![
            plan("plan/0", json!([index_task("t1"), {"id": "t2", "description": "Post the rollout note", "verify": {"kind": "outbox_has", "key": "k"}}])),
            tool("execute/t1/a0/0", "list_files", json!({"path": "."})),
            write_index("execute/t1/a0/1"),
            text("execute/t1/a0/2", "done"),
        ]);
        c.faults = Some(format!("429=0.3,500=0.3,retry_after=0,seed={seed}"));
        let r = c.run();
        assert_eq!(r.ending(), "GOAL_MET", "{}", r.explain());
        attempts(&r)
    };
    let a = run(11);
    assert_eq!(a, run(11), "same seed, same faults");
    assert_ne!(a, run(12), "another seed, other faults");
    assert!(
        a.iter().any(|(_, n)| *n > 1),
        "the plan injected something: {a:?}"
    );
}
