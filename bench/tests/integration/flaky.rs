//! `bench flaky` on the committed flaky suite (suites/flaky): the marker
//! accepted, a fallen pass rate marked with its exact test, and bad input
//! refused with the file and field. (Every cause on 10 reruns is the CI
//! gate's: scripts/flaky-check.)

use crate::common::{harness_bin, repo};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn flaky(out: &Path, extra: &[&str]) -> (i32, Value, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("flaky")
        .arg("--suite")
        .arg(repo().join("suites/flaky"))
        .arg("--out")
        .arg(out)
        .arg("--harness")
        .arg(harness_bin())
        .args(extra)
        .env("CI", "1")
        .output()
        .unwrap();
    let report = std::fs::read(out.join("flaky.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), report, text)
}

#[test]
fn a_known_flaky_case_passes_and_a_fallen_rate_is_marked_with_its_test() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let (code, r, text) = flaky(&first, &["--case", "flaky-variant", "--reruns", "4"]);
    assert_eq!(code, 0, "{text}");
    let c = &r["cases"][0];
    assert_eq!(c["id"], "flaky-variant");
    assert_eq!(
        (c["passed"].as_u64(), c["runs"].as_u64()),
        (Some(2), Some(4)),
        "{c}"
    );
    assert_eq!(c["cause"], "variant", "{c}");
    assert_eq!(c["marker_status"], "known", "{c}");
    // pass^3 of 2/4 is 0: no three runs in a row all pass.
    assert_eq!(c["pass_hat"]["k3"].as_f64(), Some(0.0), "{c}");
    assert!(std::fs::read_to_string(first.join("flaky.md"))
        .unwrap()
        .contains("known flaky"));

    // A baseline that passed 4/4: the fall 4/4 -> 2/4 is shown, with
    // Fisher's one-sided p = C(6,2)C(2,2)/C(8,4) = 15/70.
    let base = tmp.path().join("base");
    std::fs::create_dir_all(&base).unwrap();
    let mut b = r.clone();
    b["cases"][0]["passed"] = 4.into();
    std::fs::write(base.join("flaky.json"), serde_json::to_string(&b).unwrap()).unwrap();
    let (code, r, text) = flaky(
        &tmp.path().join("second"),
        &[
            "--case",
            "flaky-variant",
            "--reruns",
            "4",
            "--baseline",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "a fall is marked, not a failure by itself: {text}");
    let bl = &r["cases"][0]["baseline"];
    assert_eq!(bl["fell"], true, "{bl}");
    let p = bl["p_value"].as_f64().unwrap();
    assert!((p - 15.0 / 70.0).abs() < 1e-9, "{p}");
    assert!(std::fs::read_to_string(tmp.path().join("second/flaky.md"))
        .unwrap()
        .contains("fell 4/4 -> 2/4"));
}

#[test]
fn an_unmarked_flaky_case_fails_the_command_and_a_stale_marker_is_fixed() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, r, text) = flaky(tmp.path(), &["--case", "flaky-unstable", "--reruns", "4"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(r["cases"][0]["cause"], "unstable", "{}", r["cases"][0]);
    assert!(text.contains("FLAKY flaky-unstable: unstable"), "{text}");
    let (code, r, text) = flaky(
        &tmp.path().join("m"),
        &["--case", "flaky-marker-fixed", "--reruns", "2"],
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["cases"][0]["marker_status"], "fixed");
    assert!(text.contains("remove the marker"), "{text}");
}

#[test]
fn bad_input_is_refused_naming_what_was_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, text) = flaky(tmp.path(), &["--reruns", "0"]);
    assert_eq!(code, 2, "{text}");
    let base = tmp.path().join("base");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(base.join("flaky.json"), r#"{"schema": 3}"#).unwrap();
    let (code, _, text) = flaky(
        &tmp.path().join("o"),
        &["--baseline", base.to_str().unwrap()],
    );
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("flaky.json") && text.contains("schema"),
        "{text}"
    );
    let (code, _, text) = flaky(
        &tmp.path().join("o2"),
        &["--baseline", tmp.path().join("nowhere").to_str().unwrap()],
    );
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("neither flaky.json nor summary.json"),
        "{text}"
    );
}
