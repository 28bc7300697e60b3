use super::*;

/// events.jsonl's setbacks as the cause line reads them: a failed
/// verify with the harness's why, a refused plan task with its reason,
/// and whether a call of another task was answered after the verify.
#[test]
fn setbacks_are_read_in_order_with_what_followed_them() {
    let call = |key: &str, role: &str| {
        format!(
            r#"{{"unix_ms":1,"t_ms":1,"step":0,"kind":"model_call","data":{{"role":"{role}","call_key":"{key}","usage":{{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"cost_usd":0.0,"reserved_usd":0.0,"input_tokens_max":1,"latency_ms":0,"attempts":1,"billed_unknown_attempts":0,"stop":"end_turn","notice":false}}}}"#
        )
    };
    let verify = |task: &str| {
        format!(
            r#"{{"unix_ms":1,"t_ms":1,"step":0,"kind":"verify","data":{{"task":"{task}","attempt":0,"attempt_end":"the model said it was finished","outcome":{{"outcome":"not_started"}},"why":"check \"tests\" failed (exit 1): FAILED"}}}}"#
        )
    };
    let admit = r#"{"unix_ms":1,"t_ms":1,"step":0,"kind":"admit","data":{"origin":"plan","admitted":["t1","t2"],"tasks":[],"rejected":[{"id":"t9","origin":"plan","reason":"check \"unit\" is not defined by the spec"}]}}"#;
    let log = [
        admit.to_string(),
        verify("t1"),
        call("lesson/t1/a0", "lesson"),
        call("execute/t1/a1/0", "execute"),
        verify("t2"),
        call("execute/t3/a0/0", "execute"),
        verify("t1"),
    ]
    .join("\n");
    let f = event_facts(&log).unwrap();
    let got: Vec<(String, bool)> = f
        .setbacks
        .iter()
        .map(|s| match s {
            Setback::VerifyFailed {
                task,
                why,
                answered_after,
                ..
            } => {
                assert_eq!(why, "check \"tests\" failed (exit 1): FAILED");
                (format!("verify {task}"), *answered_after)
            }
            Setback::TaskRejected { id, reason, .. } => {
                assert!(reason.contains("\"unit\" is not defined"), "{reason}");
                (format!("rejected {id}"), false)
            }
        })
        .collect();
    let want = [
        ("rejected t9", false),
        // Its own lesson and retry do not take the run past it; t3's call does.
        ("verify t1", true),
        ("verify t2", true),
        ("verify t1", false),
    ];
    let want: Vec<(String, bool)> = want.iter().map(|(s, b)| (s.to_string(), *b)).collect();
    assert_eq!(got, want);
}

#[test]
fn an_events_line_the_harness_would_not_write_is_refused_and_named() {
    // JSON, but no event of the harness's: the readers must not skip it
    // (a skipped admit or tool call would weaken report_consistent and
    // the allowlist), so the checks that need the events fail with why.
    let e = event_facts("{\"kind\":\"tool\",\"data\":{\"admitted\":[\"x\"]}}\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("events.jsonl line 1"), "{e}");
    let g = Gathered {
        events_error: Some(e),
        ..honest(Ending::GoalMet, true)
    };
    let g = Gathered { events: None, ..g };
    let GateResult {
        passed: ok,
        detail: d,
    } = check_allowlist(&[], &g);
    assert!(!ok && d.contains("events.jsonl line 1"), "{d}");
    let GateResult {
        passed: ok,
        detail: d,
    } = check_report_consistent(&report(Ending::GoalMet, true), &g);
    assert!(!ok && d.contains("events.jsonl line 1"), "{d}");
    // A torn last line (not JSON) is a kill mid-append: skipped.
    assert!(event_facts("{\"kind\":\"ad").unwrap().admitted.is_empty());
}
