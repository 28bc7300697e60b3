//! `scripts/demo`: one harness run of the seed's p95 goal, offline.

use e2e::*;

#[test]
fn the_demo_reaches_goal_met_with_one_commit_per_verified_task() {
    // The script makes its work dir under TMPDIR: a temp dir of the test's,
    // so the test leaves nothing behind.
    let t = tempfile::tempdir().unwrap();
    let mut demo = command(&repo().join("scripts/demo"));
    demo.env("TMPDIR", t.path());
    // Its first line is `cargo build --release -p harness`. Under `cargo
    // test` that build would use the `-p harness` feature set, not the
    // workspace's, and relink target/release/harness while the other tests
    // of this binary run it; the binary is built already (bins()), so the
    // script gets a `cargo` that does nothing and runs the rest verbatim.
    // A debug test build has no release binary: the script builds its own.
    if harness_bin().starts_with(repo().join("target/release")) {
        let shim = t.path().join("bin");
        std::fs::create_dir(&shim).unwrap();
        std::fs::write(shim.join("cargo"), "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(shim.join("cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        demo.env("PATH", format!("{}:{path}", shim.display()));
    }
    let o = run(&mut demo);
    assert_eq!(o.code, 0, "GOAL_MET is exit 0: {}", o.log());
    assert!(o.stdout.contains("exit code  0"), "{}", o.log());

    let ws = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("workspace  "))
        .expect("the demo prints its workspace");
    let ws = std::path::Path::new(ws.trim());
    assert!(ws.starts_with(t.path()), "{}", ws.display());
    // <work>/case/workspace -> <work>/state
    let state = ws.parent().unwrap().parent().unwrap().join("state");
    let report = read_json(&state.join("report.json"));
    assert_eq!(report["ending"], "GOAL_MET");
    assert_eq!(report["class"], "SUCCESS");
    assert_eq!(report["exit_code"], 0);
    let verified = report["verified"].as_array().unwrap();
    assert_eq!(
        verified.len(),
        3,
        "three tasks planned and verified: {report}"
    );
    assert!(state.join("events.jsonl").is_file());

    // One commit per verified task on the run branch, on top of the one
    // the script made before the run.
    let commits: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("commit     "))
        .collect();
    assert_eq!(commits.len(), 1 + verified.len(), "{}", o.log());
    assert!(commits.iter().any(|l| l.ends_with("before the run")));

    // `harness status` reads the finished state dir: exit 0, the ending.
    let st = run(harness(&["status", "--state-dir"]).arg(&state));
    assert_eq!(st.code, 0, "{}", st.log());
    assert!(st.stdout.contains("GOAL_MET"), "{}", st.log());
}
