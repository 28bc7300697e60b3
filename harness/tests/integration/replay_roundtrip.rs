//! Round trip: the committed demo cassette replayed to the real harness
//! reproduces usage (all four token fields), stop reasons and tool calls
//! exactly, and the ledger books the dollars computed from the cassette by hand.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

#[test]
fn demo_cassette_round_trips_through_the_harness() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let t = tempfile::tempdir().unwrap();
    let case = t.path().join("case");
    let st = Command::new("cp")
        .arg("-r")
        .arg(repo.join("suites/demo/p95-index"))
        .arg(&case)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--spec"])
        .arg(case.join("run.toml"))
        .arg("--state-dir")
        .arg(t.path().join("state"))
        .arg("--replay")
        .arg(repo.join("recordings/demo"))
        .args(["--latency-scale", "0"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("recordings/demo/p95-index.json")).unwrap(),
    )
    .unwrap();
    let its = cassette["runs"][0]["interactions"].as_array().unwrap();
    // By hand: $5/$25 per MTok, cache reads 0.1x input, cache writes 1.25x input.
    let (mut usd, mut u) = (0.0, [0u64; 4]);
    let mut stops = vec![];
    let mut tools = vec![];
    for it in its {
        let b = &it["response"]["body"];
        let g = |k: &str| b["usage"][k].as_u64().unwrap_or(0);
        let f = [
            g("input_tokens"),
            g("output_tokens"),
            g("cache_read_input_tokens"),
            g("cache_creation_input_tokens"),
        ];
        for i in 0..4 {
            u[i] += f[i];
        }
        usd +=
            (f[0] as f64 * 5.0 + f[1] as f64 * 25.0 + f[2] as f64 * 0.5 + f[3] as f64 * 6.25) / 1e6;
        stops.push(b["stop_reason"].as_str().unwrap().to_string());
        for c in b["content"].as_array().unwrap() {
            if c["type"] == "tool_use" {
                tools.push(c["name"].as_str().unwrap().to_string());
            }
        }
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(t.path().join("state/report.json")).unwrap())
            .unwrap();
    assert!(
        (report["spend_usd"].as_f64().unwrap() - usd).abs() < 1e-12,
        "ledger {} vs by hand {usd}",
        report["spend_usd"]
    );
    let ru = &report["usage"];
    assert_eq!(
        [
            ru["input_tokens"].as_u64().unwrap(),
            ru["output_tokens"].as_u64().unwrap(),
            ru["cache_read_input_tokens"].as_u64().unwrap(),
            ru["cache_creation_input_tokens"].as_u64().unwrap()
        ],
        u
    );
    assert!(
        u[2] > 0 && u[3] > 0,
        "the demo exercises cache reads and writes"
    );
    let events: Vec<Value> = std::fs::read_to_string(t.path().join("state/events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got_stops: Vec<String> = events
        .iter()
        .filter(|e| e["kind"] == "model_call")
        .map(|e| e["data"]["stop"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got_stops, stops);
    let got_tools: Vec<String> = events
        .iter()
        .filter(|e| e["kind"] == "tool")
        .map(|e| e["data"]["tool"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got_tools, tools);
    assert_eq!(report["model_calls"].as_u64().unwrap() as usize, its.len());
}
