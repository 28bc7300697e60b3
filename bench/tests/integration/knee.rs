//! `bench knee` end to end on the knee suite (real harness subprocesses,
//! replayed cassettes): the outputs and their shape, that lower levels
//! really bite, bad input, and that the knee suite's cassettes are what its
//! scenarios compile to.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// The harness binary next to the bench binary. `cargo test --workspace`
/// builds it; `cargo test -p bench` alone does not, so build it then.
fn harness() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_bench")).with_file_name("harness");
    if !bin.is_file() {
        let profile: &[&str] = if cfg!(debug_assertions) {
            &[]
        } else {
            &["--release"]
        };
        let st = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "harness", "--bin", "harness"])
            .args(profile)
            .current_dir(repo())
            .status()
            .unwrap();
        assert!(st.success(), "building the harness binary");
    }
    bin
}

fn knee(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("knee")
        .arg("--harness")
        .arg(harness())
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

#[test]
fn knee_suite_cassettes_are_fresh() {
    let cases: Vec<PathBuf> = std::fs::read_dir(repo().join("suites/knee/happy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert!(cases.len() >= 8, "the knee suite has {} cases", cases.len());
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["script", "--check"])
        .args(&cases)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn three_levels_on_the_knee_suite() {
    let out = tempfile::tempdir().unwrap();
    let o = knee(&[
        "--levels",
        "0.1,1,0.5",
        "--runs-per-case",
        "1",
        "--bootstrap-reps",
        "200",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stderr}\n{stdout}");
    // One progress line per level, highest first; the table and the verdict.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[level "))
        .collect();
    assert_eq!(progress.len(), 3, "{stderr}");
    assert!(
        progress[0].contains("100% of each cap") && progress[2].contains("10% of each cap"),
        "{stderr}"
    );
    assert!(
        stdout.contains("BUDGET_EXHAUSTED")
            && stdout.contains("$/verified")
            && stdout.contains("lowest cost per verified task"),
        "{stdout}"
    );

    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("knee.json")).unwrap())
            .unwrap();
    let levels = j["levels"].as_array().unwrap();
    assert_eq!(
        levels
            .iter()
            .map(|l| l["level"].as_f64().unwrap())
            .collect::<Vec<_>>(),
        vec![1.0, 0.5, 0.1]
    );
    for l in levels {
        for k in [
            "level",
            "spend_usd",
            "verified",
            "pass_rate",
            "cost_per_verified_usd",
            "cost_per_verified_ci",
            "budget_exhausted_share",
        ] {
            assert!(l.get(k).is_some(), "levels[] lacks {k}: {l}");
        }
        assert_eq!(
            l["runs"].as_u64(),
            Some(levels[0]["runs"].as_u64().unwrap())
        );
        assert_eq!(l["errored_runs"].as_u64(), Some(0));
        if let Some(ci) = l["cost_per_verified_ci"].as_array() {
            let (lo, hi, c) = (
                ci[0].as_f64().unwrap(),
                ci[1].as_f64().unwrap(),
                l["cost_per_verified_usd"].as_f64().unwrap(),
            );
            assert!(lo <= c + 1e-9 && c <= hi + 1e-9, "{l}");
        }
    }
    for k in [
        "knee_level",
        "min_cost_level",
        "knee_bootstrap",
        "knee_candidate",
    ] {
        assert!(j.get(k).is_some(), "knee.json lacks {k}");
    }
    // The caps are set close to what the work costs: scaling them bites.
    let v = |i: usize| levels[i]["verified"].as_u64().unwrap();
    let ex = |i: usize| levels[i]["budget_exhausted_share"].as_f64().unwrap();
    let spend = |i: usize| levels[i]["spend_usd"].as_f64().unwrap();
    assert!(
        v(0) > v(1) && v(1) > v(2),
        "verified should fall with the level: {levels:?}"
    );
    assert!(spend(0) > spend(1) && spend(1) > spend(2));
    assert!(
        ex(0) < 0.2 && ex(1) > 0.5 && ex(2) == 1.0,
        "BUDGET_EXHAUSTED shares {} {} {}",
        ex(0),
        ex(1),
        ex(2)
    );
    // The knee frequencies are shares of the resamples.
    let kb = &j["knee_bootstrap"];
    let total: f64 = kb["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["share"].as_f64().unwrap())
        .sum::<f64>()
        + kb["none_share"].as_f64().unwrap();
    assert!((total - 1.0).abs() < 1e-9 && kb["reps"].as_u64() == Some(200));

    let md = std::fs::read_to_string(out.path().join("knee.md")).unwrap();
    assert!(
        md.contains("| level |")
            && md.contains("cost_per_verified.svg")
            && md.contains("pass rate"),
        "{md}"
    );
    for (svg, must) in [
        (
            "cost_per_verified.svg",
            [
                "Cost per verified task by budget level",
                "cost per verified task (USD)",
                "budget level",
                "95% case-bootstrap interval",
            ],
        ),
        (
            "verified_vs_spend.svg",
            [
                "Verified tasks against spend",
                "verified tasks (count)",
                "(USD)",
                "100% cap",
            ],
        ),
    ] {
        let text = std::fs::read_to_string(out.path().join(svg)).unwrap();
        assert!(text.starts_with("<svg"), "{svg}");
        for m in must {
            assert!(text.contains(m), "{svg} lacks {m:?}");
        }
    }
    let runs: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("case_runs.json")).unwrap())
            .unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len() as u64, 3 * levels[0]["runs"].as_u64().unwrap());
    // The overlay really scaled each case's cap (report.json's hard_cap_usd).
    let cap = |case: &str, level: f64| {
        runs.iter()
            .find(|r| r["case"] == case && r["level"].as_f64() == Some(level))
            .unwrap()["hard_cap_usd"]
            .as_f64()
            .unwrap()
    };
    for r in runs.iter().filter(|r| r["level"].as_f64() == Some(1.0)) {
        let case = r["case"].as_str().unwrap();
        assert!(
            (cap(case, 0.5) - 0.5 * cap(case, 1.0)).abs() < 1e-9
                && (cap(case, 0.1) - 0.1 * cap(case, 1.0)).abs() < 1e-9,
            "{case}"
        );
    }
}

#[test]
fn bad_input_is_a_usage_or_suite_error_naming_what() {
    let o = knee(&["--levels", "1,abc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--levels: \"abc\" is not a number"));
    let o = knee(&["--runs-per-case", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let missing = tempfile::tempdir().unwrap();
    let o = knee(&["--suite", missing.path().join("nope").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--suite"));
    let empty = tempfile::tempdir().unwrap();
    let o = knee(&["--suite", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no cases"));
}

/// A budget level that changes the traffic: at three times its cap the
/// goal-met-on-the-last-dollar case keeps calling past the calls its
/// cassette holds, and the replay misses (execute/t1/a0/2). That case-run is
/// not a data point of the curve; the case leaves every level, the output
/// names the level, the run and the call key, and with 1 of 2 cases left
/// out no knee is claimed (exit 1).
#[test]
fn a_level_that_changes_the_traffic_is_not_a_data_point() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case_from(
        "suites/edge/edge-goal-met-on-last-dollar",
        &suite,
        "happy",
        "last-dollar",
        "ending = \"GOAL_MET\"",
    );
    add_case_from(
        "suites/knee/happy/knee-api-docs",
        &suite,
        "happy",
        "api-docs",
        "ending = \"GOAL_MET\"",
    );
    let out = t.path().join("out");
    let o = knee(&[
        "--suite",
        suite.to_str().unwrap(),
        "--levels",
        "1,3",
        "--runs-per-case",
        "1",
        "--bootstrap-reps",
        "50",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("knee.json")).unwrap()).unwrap();
    assert_eq!(j["cases"], 1, "{j}");
    assert_eq!(j["cases_not_comparable"], 1);
    assert_eq!(j["comparable"], false);
    assert!(j["knee_level"].is_null() && j["min_cost_level"].is_null());
    let nc = j["not_comparable"].as_array().unwrap();
    assert_eq!(nc.len(), 1, "{nc:?}");
    assert_eq!(nc[0]["case"], "last-dollar");
    assert_eq!(nc[0]["level"].as_f64(), Some(3.0));
    assert_eq!(nc[0]["fault"]["kind"], "recording_miss");
    assert_eq!(nc[0]["fault"]["call_key"], "execute/t1/a0/2");
    let levels = j["levels"].as_array().unwrap();
    // Both levels count the same one case; the miss is not an error run.
    for l in levels {
        assert_eq!(l["runs"], 1, "{l}");
        assert_eq!(l["errored_runs"], 0, "{l}");
    }
    assert_eq!(levels[0]["not_comparable_runs"], 1);
    assert!(
        stdout.contains("NOT COMPARABLE last-dollar at 300% run 0: recording miss: no recording for call_key execute/t1/a0/2")
            && stdout.contains("not comparable: 1 of 2 cases not comparable"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("knee.md")).unwrap();
    assert!(
        md.contains("### Not comparable under replay") && md.contains("execute/t1/a0/2"),
        "{md}"
    );
    for svg in ["cost_per_verified.svg", "verified_vs_spend.svg"] {
        let text = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(text.contains("1 of 2 cases not comparable"), "{svg}");
    }
}
