use super::*;

#[test]
fn judge_requests_hold_the_goal_and_the_queue_and_nothing_else() {
    // example(4): t0, t1 verified, t2 queued, t3 parked; goal "g".
    let r = report(Ending::GoalMet, true);
    let g = honest(Ending::GoalMet, true);
    let desc = |id: &str| g.events.as_ref().unwrap().descriptions[id].clone();
    let queue = format!("- t2: {}\n- t3: {}\n", desc("t2"), desc("t3"));
    let good_user = format!("<original_goal>g</original_goal>\n<queue>\n{queue}</queue>");
    let sys = format!("{}\n\nReply with JSON", harness::drift::JUDGE_SYSTEM);
    let ok_req = captured("judge/5", judge_body(&good_user, &sys));
    let GateResult {
        passed: ok,
        detail: d,
    } = check_judge_requests(&r, &[ok_req.clone()], &g);
    assert!(ok, "{d}");
    // OpenAI shape: the system prompt as the first message.
    let o = captured(
        "judge/5",
        serde_json::json!({"messages": [{"role": "system", "content": sys}, {"role": "user", "content": good_user}]}),
    );
    assert!(check_judge_requests(&r, &[o], &g).passed);
    let bad = |user: String, system: String| {
        check_judge_requests(&r, &[captured("judge/5", judge_body(&user, &system))], &g)
    };
    // Another goal (a rewritten goal file), history after the queue, a
    // task the run never had, a description changed.
    assert!(
        !bad(
            good_user.replace("<original_goal>g<", "<original_goal>h<"),
            sys.clone()
        )
        .passed
    );
    assert!(
        !bad(
            format!("{good_user}\n<history>t0 verified</history>"),
            sys.clone()
        )
        .passed
    );
    assert!(!bad(good_user.replace("- t2:", "- t9:"), sys.clone()).passed);
    assert!(
        !bad(
            good_user.replace(&desc("t3"), "Build a dashboard"),
            sys.clone()
        )
        .passed
    );
    // The agent's own claim in the system prompt.
    let mut r = r.clone();
    r.model_claims = vec![harness::state::ModelClaim {
        task_id: "t1".into(),
        text: "I have completed the migration successfully".into(),
        verified: false,
    }];
    let bad = |user: String, system: String| {
        check_judge_requests(&r, &[captured("judge/5", judge_body(&user, &system))], &g)
    };
    let GateResult {
        passed: ok,
        detail: d,
    } = bad(
        good_user.clone(),
        format!("{sys}\nI have completed the migration successfully"),
    );
    assert!(!ok && d.contains("agent's own text"), "{d}");
    // A tool output the executor saw, in the system prompt.
    let exec = captured(
        "execute/t1/a0/1",
        serde_json::json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "p95 measured at 410ms on /api/search"}]}]}),
    );
    let leaked = captured(
        "judge/5",
        judge_body(
            &good_user,
            &format!("{sys}\np95 measured at 410ms on /api/search"),
        ),
    );
    let GateResult {
        passed: ok,
        detail: d,
    } = check_judge_requests(&r, &[exec.clone(), leaked], &g);
    assert!(!ok && d.contains("agent's own text"), "{d}");
    assert!(check_judge_requests(&r, &[exec, ok_req], &g).passed);
    // An assistant turn: not a fresh context.
    let two = captured(
        "judge/5",
        serde_json::json!({"system": sys, "messages": [{"role": "user", "content": good_user}, {"role": "assistant", "content": "I think"}]}),
    );
    let GateResult {
        passed: ok,
        detail: d,
    } = check_judge_requests(&r, &[two], &g);
    assert!(!ok && d.contains("assistant"), "{d}");
    // Not the judge's instruction.
    assert!(!bad(good_user.clone(), "You are the agent.".into()).passed);
}

#[test]
fn a_judge_queue_holds_no_task_that_had_left_it_by_that_step() {
    let r = report(Ending::GoalMet, true);
    let mut g = honest(Ending::GoalMet, true);
    let ev = g.events.as_mut().unwrap();
    // t0 started at step 0, t1 at step 1; t3 pruned by judge/2.
    ev.started_at = [("t0".to_string(), 0), ("t1".to_string(), 1)].into();
    ev.pruned_at = [("t3".to_string(), 2)].into();
    let desc = |id: &str| g.events.as_ref().unwrap().descriptions[id].clone();
    let sys = format!("{}\n\nReply with JSON", harness::drift::JUDGE_SYSTEM);
    let judge = |key: &str, ids: &[&str]| {
        let q: String = ids
            .iter()
            .map(|i| format!("- {i}: {}\n", desc(i)))
            .collect();
        let user = format!("<original_goal>g</original_goal>\n<queue>\n{q}</queue>");
        check_judge_requests(&r, &[captured(key, judge_body(&user, &sys))], &g)
    };
    // judge/1 (after t0): t1 is still queued (it starts at step 1).
    assert!(judge("judge/1", &["t1", "t2", "t3"]).passed);
    // judge/2: t1 finished at step 1; listing it is the judge seeing history.
    let GateResult {
        passed: ok,
        detail: d,
    } = judge("judge/2", &["t1", "t2", "t3"]);
    assert!(
        !ok && d.contains("t1 had left the queue before step 2"),
        "{d}"
    );
    assert!(judge("judge/2", &["t2", "t3"]).passed);
    // judge/3: t3 was pruned at step 2.
    let GateResult {
        passed: ok,
        detail: d,
    } = judge("judge/3", &["t2", "t3"]);
    assert!(!ok && d.contains("pruned"), "{d}");
}
