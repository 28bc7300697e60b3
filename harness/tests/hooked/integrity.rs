//! Goal integrity and secrets: an in-process goal mutation ends the run as
//! UNRECOVERABLE_ERROR; no API key ever reaches a report, event log,
//! checkpoint, journal or alert.

use crate::common::*;
use harness::run_loop::{run, RunOptions};
use harness::spec::RunSpec;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goal_mutated_in_process_is_unrecoverable() {
    let c = case("tamper").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    c.materialize();
    let spec = RunSpec::load(&c.spec_path()).unwrap();
    let (_server, url) = harness::replay::embed::start_for_run(
        &c.cassette_dir(),
        None,
        0,
        spec.model.protocol,
        false,
        0.0,
        None,
    )
    .await
    .unwrap();
    // Lap 1 plans; the goal is corrupted in memory before lap 2.
    let out = run(
        spec,
        &c.state_dir(),
        RunOptions {
            base_url_override: Some(url),
            jitter_seed: 0,
            raise: None,
            max_usd: None,
            command: vec![],
            tamper_goal_before_lap: Some(2),
        },
    )
    .await;
    let harness::run_loop::RunEnd::Ended(out) = out else {
        panic!("the run was stopped, not ended");
    };
    assert_eq!(
        out.ending,
        harness::ending::Ending::UnrecoverableError,
        "{}",
        out.report.human_summary()
    );
    assert_eq!(out.report.error_kind.as_deref(), Some("goal_tampered"));
    assert!(out.report.detail.unwrap().contains("goal text mutated"));
    assert!(
        !c.ws().join("db/0042_search_index.sql").exists(),
        "no task ran after the mutation"
    );
}

#[test]
fn no_api_key_is_written_anywhere() {
    let secret = "sk-ant-api03-THIS-IS-A-TEST-KEY-0123456789abcdef";
    let mut c = case("secrets").calls(vec![
        plan("plan/0", json!([index_task("t1"), {"id": "t2", "description": "Post a note", "verify": {"kind": "outbox_has", "key": "note"}}])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    // Unmet predicate so the run goes through several code paths, then a miss.
    c.predicate = r#"command = ["false"]"#.into();
    c.env.push(("HARNESS_TEST_API_KEY".into(), secret.into()));
    let r = c.run();
    assert_eq!(r.ending(), "UNRECOVERABLE_ERROR", "{}", r.explain());
    let mut checked = 0;
    for entry in std::fs::read_dir(&r.state_dir).unwrap() {
        let p = entry.unwrap().path();
        let body = std::fs::read(&p).unwrap();
        assert!(
            !String::from_utf8_lossy(&body).contains(secret),
            "{} contains the API key",
            p.display()
        );
        checked += 1;
    }
    assert!(checked >= 5, "checked {checked} files");
    assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret));
}

#[test]
fn a_spec_with_a_literal_key_is_refused() {
    let c = case("literal-key").toml("");
    c.materialize();
    let spec = std::fs::read_to_string(c.spec_path()).unwrap().replace(
        "api_key_env = \"HARNESS_TEST_API_KEY\"",
        "api_key = \"sk-ant-123\"",
    );
    std::fs::write(c.spec_path(), spec).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.code, 64);
    assert!(r.stderr.contains("model.api_key"), "{}", r.stderr);
    assert!(!r.stderr.contains("sk-ant-123"));
}

#[test]
fn path_traversal_and_symlink_escapes_are_refused_through_the_real_loop() {
    let c = case("escape").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        tool(
            "execute/t1/a0/0",
            "write_file",
            json!({"path": "../outside.txt", "content": "escaped"}),
        ),
        tool(
            "execute/t1/a0/1",
            "write_file",
            json!({"path": "/tmp/harness-escape-abs.txt", "content": "escaped"}),
        ),
        tool(
            "execute/t1/a0/2",
            "write_file",
            json!({"path": "link/escaped.txt", "content": "escaped"}),
        ),
        tool(
            "execute/t1/a0/3",
            "read_file",
            json!({"path": "link/../../state/checkpoint.json"}),
        ),
        write_index("execute/t1/a0/4"),
        text("execute/t1/a0/5", "done"),
    ]);
    c.materialize();
    let outside = c.root.path().join("outside-dir");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, c.ws().join("link")).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert!(!c.root.path().join("outside.txt").exists());
    assert!(!std::path::Path::new("/tmp/harness-escape-abs.txt").exists());
    assert!(!outside.join("escaped.txt").exists());
    let events = std::fs::read_to_string(r.state_dir.join("events.jsonl")).unwrap();
    assert_eq!(
        events
            .matches("\"tool\":\"write_file\",\"is_error\":true")
            .count(),
        3,
        "{events}"
    );
}
