use super::*;

#[tokio::test]
async fn after_run_reruns_the_predicate_on_the_post_run_workspace() {
    let t = case_copy();
    let state = t.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    // Two admits as the harness writes them, with a torn line between
    // (a kill mid-append), which is skipped.
    let admit = |origin: &str, ids: &[&str]| {
        serde_json::to_string(&harness::events::EventLine {
            unix_ms: 1,
            t_ms: 0,
            step: 0,
            event: harness::events::Event::Admit(harness::events::Admit {
                origin: origin.into(),
                admitted: ids.iter().map(|s| s.to_string()).collect(),
                tasks: vec![],
                rejected: vec![],
            }),
        })
        .unwrap()
    };
    std::fs::write(
        state.join(harness::events::FILE_NAME),
        format!(
            "{}\nnot json\n{}\n",
            admit("plan", &["t1", "t2"]),
            admit("replan/0", &["t3"])
        ),
    )
    .unwrap();
    let mut h = Gathered::default();
    h.before_run(t.path()).unwrap();
    assert_eq!(h.spec.as_ref().unwrap().hard_cap_usd, 0.02);
    h.after_run(t.path(), &state, t.path(), &[], 3).await;
    assert_eq!(h.predicate.as_ref().unwrap().passed, Ok(false));
    assert_eq!(h.predicate.as_ref().unwrap().hard_cap_usd, Some(0.02));
    assert_eq!(
        h.events.as_ref().unwrap().admitted,
        admitted(&["t1", "t2", "t3"]).unwrap().admitted
    );
    assert_eq!(h.exit_code, Some(3));
    std::fs::write(t.path().join("workspace/src/a.txt"), "after\n").unwrap();
    h.after_run(t.path(), &state, t.path(), &[], 0).await;
    assert_eq!(h.predicate.as_ref().unwrap().passed, Ok(true));
    assert!(check_confined(&h).passed);
}
