//! Replies that bill what their request could not have: booked as billed,
//! never clipped, never wrapped, and the run ends on them with the facts in
//! `detail`. Through the real binary and its embedded replay server.

use crate::common::*;
use harness::model::types::Usage;
use serde_json::json;

#[test]
fn a_reply_billing_above_its_reservation_ends_the_run_booked_as_billed() {
    // The cache-heavy turn: 160,000 cache-write tokens reported for a
    // request of a few kilobytes, under a $1.00 cap.
    let mut heavy = write_index("execute/t1/a0/0");
    heavy.usage = Some(Usage {
        input_tokens: 500,
        output_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 160_000,
    });
    let mut c = case("overbilled").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        heavy,
        text("execute/t1/a0/1", "never requested"),
    ]);
    c.hard_cap_usd = 1.0;
    let r = c.run();
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "billed_above_reserve");
    let detail = r.report["detail"].as_str().unwrap();
    let billed = (500.0 * 5.0 + 160_000.0 * 5.0 * 1.25) / 1e6; // $1.0025
    assert!(detail.contains(&format!("billed ${billed:.6}")), "{detail}");
    assert!(
        detail.contains("more than its reservation") && detail.contains("of the $1.00 cap"),
        "{detail}"
    );
    // Booked honestly: the plan call plus the whole bill, over the cap.
    let plan_cost = (3500.0 * 5.0 + 300.0 * 25.0) / 1e6;
    let spend = r.report["spend_usd"].as_f64().unwrap();
    assert!(
        (spend - (plan_cost + billed)).abs() < 1e-9,
        "{}",
        r.explain()
    );
    assert_eq!(r.report["usage"]["cache_creation_input_tokens"], 160_000);
}

#[test]
fn usage_counts_never_wrap() {
    // Eight replies claiming u64::MAX output tokens: the first already bills
    // more than any request could, so the run ends there; the total is the
    // saturated count, never a wrapped small number.
    let calls = (0..8)
        .map(|i| {
            let mut t = tool(
                &format!("execute/t1/a0/{i}"),
                "list_files",
                json!({"path": format!("dir{i}")}), // never an identical repeated call
            );
            t.usage = Some(Usage {
                input_tokens: 100,
                output_tokens: u64::MAX,
                cache_read_input_tokens: 0,
                cache_creation_input_tokens: 0,
            });
            t
        })
        .collect::<Vec<_>>();
    let c = case("u64-max")
        .call(plan("plan/0", json!([index_task("t1")])))
        .calls(calls.clone());
    let r = c.run();
    assert_eq!(
        r.report["error_kind"],
        "billed_above_reserve",
        "{}",
        r.explain()
    );
    assert_eq!(
        r.report["usage"]["output_tokens"].as_u64(),
        Some(u64::MAX),
        "{}",
        r.explain()
    );
    assert!(r.report["spend_usd"].as_f64().unwrap() > 1e14);

    // Output free (a local model): all eight are booked, and the total
    // saturates (a wrapping sum would be u64::MAX - 7 + the plan's 300).
    let mut free = case("u64-max-free")
        .call(plan("plan/0", json!([index_task("t1")])))
        .calls(calls)
        .toml("[loop]\nloop_cap = 8\nretries_per_task = 0\n");
    free.output_usd_per_mtok = 0.0;
    let r = free.run();
    assert_eq!(r.report["model_calls"], 9, "{}", r.explain());
    assert_eq!(
        r.report["usage"]["output_tokens"].as_u64(),
        Some(u64::MAX),
        "{}",
        r.explain()
    );
}
