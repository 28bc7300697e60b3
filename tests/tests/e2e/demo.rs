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

    // The morning page beside report.json: the ending, the spend, one row
    // per task, spend plotted against call and against time (the events
    // have the times), and no script.
    let page = std::fs::read_to_string(state.join("report.html")).unwrap();
    let doc = scraper::Html::parse_document(&page);
    let sel = |s: &str| scraper::Selector::parse(s).unwrap();
    let text = |s: &str| -> String {
        doc.select(&sel(s))
            .map(|e| e.text().collect::<String>())
            .collect::<Vec<_>>()
            .join("|")
    };
    assert_eq!(text(".verdict .name"), "GOAL_MET");
    let spend = report["spend_usd"].as_f64().unwrap();
    assert!(
        text("body").contains(&format!("${spend:.2} of the $28.00 hard cap")),
        "{}",
        text("body")
    );
    assert_eq!(doc.select(&sel("#task-table tbody tr")).count(), 3);
    assert_eq!(
        doc.select(&sel("figure svg[role=img]")).count(),
        2,
        "{page}"
    );
    assert_eq!(doc.select(&sel("script")).count(), 0);
    assert!(o.stdout.contains("page       "), "{}", o.log());

    // `harness report` renders it again (here, and with --out elsewhere).
    let again = t.path().join("again.html");
    let rr = run(harness(&["report", "--state-dir"])
        .arg(&state)
        .arg("--out")
        .arg(&again));
    assert_eq!(rr.code, 0, "{}", rr.log());
    let again = std::fs::read_to_string(&again).unwrap();
    assert!(
        again.contains("GOAL_MET") && again.len() > 10_000,
        "{again}"
    );

    // A refused checkpoint still gets a page, and the command says so in
    // its exit status, as `harness status` does (exit 4).
    let refused = t.path().join("refused");
    std::fs::create_dir(&refused).unwrap();
    for f in ["checkpoint.json", "ledger.jsonl", "events.jsonl"] {
        std::fs::copy(state.join(f), refused.join(f)).unwrap();
    }
    let mut ck = std::fs::read(refused.join("checkpoint.json")).unwrap();
    let last = ck.len() - 2;
    ck[last] ^= 0x01; // bit rot in the body: the checksum no longer matches
    std::fs::write(refused.join("checkpoint.json"), ck).unwrap();
    let rf = run(harness(&["report", "--state-dir"]).arg(&refused));
    assert_eq!(rf.code, 4, "{}", rf.log());
    let page = std::fs::read_to_string(refused.join("report.html")).unwrap();
    assert!(page.contains("The checkpoint is refused"), "{page}");
    let st = run(harness(&["status", "--state-dir"]).arg(&refused));
    assert_eq!(st.code, 4, "{}", st.log());

    // `harness status` reads the finished state dir: exit 0, the ending.
    let st = run(harness(&["status", "--state-dir"]).arg(&state));
    assert_eq!(st.code, 0, "{}", st.log());
    assert!(st.stdout.contains("GOAL_MET"), "{}", st.log());
}
