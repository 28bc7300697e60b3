//! The page parsed as a browser parses it (html5ever, through scraper):
//! what it must hold, and what a hostile string must never become.

use super::*;
use crate::ending::{Ending, ErrorKind};
use crate::ledger::SpendPoint;
use crate::state::{DriftPoint, ModelClaim, PrunedTask, RejectedTask, RunState};
use scraper::{Html, Selector};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// A run of `n` tasks with a spend curve (a worst-case booking among it)
/// and three drift checks.
fn report(n: usize) -> Report {
    let mut s = RunState::example(n);
    let mut spent = 0.0;
    for i in 0..(2 * n as u64) {
        let cost = 0.0123 + i as f64 * 0.001;
        spent += cost;
        s.ledger.spend_curve.push(SpendPoint {
            call: i + 1,
            role: Some(if i == 0 {
                CallRole::Plan
            } else {
                CallRole::Execute
            }),
            call_key: if i == 0 {
                "plan/1".into()
            } else {
                format!("execute/t{}/a1/{i}", i % 3)
            },
            cost_usd: cost,
            spent_usd: spent,
            basis: if i == 5 {
                "worst_case".into()
            } else {
                "usage".into()
            },
        });
    }
    s.ledger.spent_usd = spent;
    s.hard_cap_usd = 1.0;
    for (step, score, band) in [
        (3, 0.1, Band::Aligned),
        (6, 0.42, Band::Prune),
        (9, 0.2, Band::Aligned),
    ] {
        s.drift_history.push(DriftPoint {
            step,
            score,
            band,
            off_goal_task_ids: vec![],
            reasoning: "on goal".into(),
        });
    }
    s.pruned.push(PrunedTask {
        id: "p1".into(),
        description: "Rewrite the logging library".into(),
        drift_step: 6,
        drift_score: 0.42,
    });
    Report::build(
        &s,
        "Reduce p95 latency on /api/search to under 200ms.",
        Ending::BudgetExhausted,
        None,
        None,
        false,
        61_000,
    )
}
use crate::drift::Band;

fn page_of(r: Report, in_flight: f64) -> Html {
    Html::parse_document(&RunPage::from_parts(r, &[], in_flight, vec![]).render())
}

#[test]
fn the_page_holds_the_ending_the_spend_and_one_row_per_task() {
    let r = report(40);
    let rows = r.verified.len() + r.parked.len() + r.pruned.len() + r.queue_left.len();
    let spend = fmt::usd(r.spend_usd);
    let doc = page_of(r, 0.05);
    let name: String = doc
        .select(&sel(".verdict .name"))
        .next()
        .unwrap()
        .text()
        .collect();
    assert_eq!(name, "BUDGET_EXHAUSTED");
    let text: String = doc.root_element().text().collect();
    assert!(
        text.contains(&format!("{spend} of the $1.00 hard cap")),
        "{text}"
    );
    assert!(
        text.contains("$0.05") && text.contains("reserved for calls in flight"),
        "{text}"
    );
    assert_eq!(doc.select(&sel("#task-table tbody tr")).count(), rows);
    assert_eq!(rows, 41);
    // Spend by call and drift, each an image with a title and a text
    // alternative; over time needs the event log, which this run lacks
    // (tests/e2e's demo has one), and the page says so.
    let figures: Vec<_> = doc.select(&sel("figure > svg[role=img]")).collect();
    assert_eq!(figures.len(), 2, "spend by call, drift");
    assert!(text.contains("No call times"), "{text}");
    for f in &figures {
        assert!(
            f.select(&sel("title")).next().is_some() && f.select(&sel("desc")).next().is_some()
        );
    }
    // No script, nothing fetched: a CSP that allows none.
    assert_eq!(doc.select(&sel("script")).count(), 0);
    let csp = doc
        .select(&sel("meta[http-equiv=Content-Security-Policy]"))
        .next()
        .unwrap();
    assert_eq!(csp.value().attr("content"), Some(html::CSP));
    assert!(
        !text.contains("0000000"),
        "a raw float reached the page: {text}"
    );
}

/// What a hostile model or workspace puts where the page shows text: tags,
/// attribute breakouts, a closing style or svg, an entity.
const HOSTILE: [&str; 5] = [
    "<script>alert('task')</script>",
    "\"><img src=x onerror=alert(1)>",
    "</style><script>document.title='owned'</script>",
    "]]></svg><script>alert(2)</script>",
    "&lt;b&gt;not bold&lt;/b&gt;",
];

#[test]
fn hostile_strings_are_text_never_markup() {
    let mut r = report(4);
    r.goal = HOSTILE[0].into();
    r.verified[0].description = HOSTILE[1].into();
    r.verified[0].model_claim = Some(HOSTILE[2].into());
    r.verified[0].verify = HOSTILE[3].into();
    r.parked[0].reason = HOSTILE[3].into();
    r.parked[0].uncommitted_paths = vec![HOSTILE[1].into()];
    r.queue_left.push(HOSTILE[4].into());
    r.model_claims.push(ModelClaim {
        task_id: HOSTILE[1].into(),
        text: HOSTILE[0].into(),
        verified: false,
    });
    r.rejected_tasks.push(RejectedTask {
        id: HOSTILE[2].into(),
        origin: "replan".into(),
        reason: HOSTILE[0].into(),
    });
    r.drift_detail[0].reasoning = HOSTILE[2].into();
    r.drift_detail[0].off_goal_task_ids = vec![HOSTILE[1].into()];
    r.pruned[0].description = HOSTILE[3].into();
    r.detail = Some(HOSTILE[2].into());
    r.error_kind = Some(ErrorKind::Internal);
    r.alert_delivery.push(HOSTILE[1].into());
    r.run_id = HOSTILE[3].into();
    let doc = page_of(r, 0.0);
    assert_eq!(doc.select(&sel("script")).count(), 0, "a script element");
    assert_eq!(doc.select(&sel("img")).count(), 0, "an img element");
    for e in doc
        .root_element()
        .descendants()
        .filter_map(scraper::ElementRef::wrap)
    {
        for (name, _) in e.value().attrs() {
            assert!(
                !name.starts_with("on"),
                "an event handler attribute {name} on <{}>",
                e.value().name()
            );
        }
    }
    // One style sheet, the page's own; one title, the page's own.
    assert_eq!(doc.select(&sel("style")).count(), 1);
    let text: String = doc.root_element().text().collect();
    for h in HOSTILE {
        assert!(text.contains(h), "{h:?} is not shown as text");
    }
}

#[test]
fn a_key_in_the_environment_never_reaches_the_page_even_one_escaping_would_change() {
    // `&` and `<` in the value: escaped, it would no longer match a filter
    // run over the finished page only.
    let (var, value) = ("PAGE_TEST_API_KEY", "sk-page&test<0123456789abcdef");
    // SAFETY: set once, before any thread of this test reads it.
    unsafe { std::env::set_var(var, value) };
    crate::redact::watch_env_var(var);
    let mut r = report(4);
    r.verified[0].model_claim = Some(format!("I used {value} to deploy"));
    r.detail = Some(value.into());
    let dir = tempfile::tempdir().unwrap();
    let html = RunPage::gather(&r, dir.path()).render();
    let escaped = "sk-page&amp;test&lt;0123456789abcdef";
    assert!(
        !html.contains(value) && !html.contains(escaped),
        "the key is on the page"
    );
    assert!(html.contains(&crate::redact::marker(var)));
}

#[test]
fn an_unreadable_event_log_is_said_on_the_page_not_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("events.jsonl"),
        "{\"unix_ms\":1,\"t_ms\":0,\"step\":0,\"kind\":\"no_such_kind\"}\n",
    )
    .unwrap();
    let page = RunPage::gather(&report(4), dir.path());
    assert!(
        page.notes
            .iter()
            .any(|n| n.contains("events.jsonl could not be read")),
        "{:?}",
        page.notes
    );
    let doc = Html::parse_document(&page.render());
    assert_eq!(doc.select(&sel("p.note")).count(), 1);
    assert_eq!(doc.select(&sel(".verdict .name")).count(), 1);
}

#[test]
fn lessons_have_a_section_only_when_there_were_some() {
    let without = page_of(report(4), 0.0);
    assert!(without.select(&sel("#lessons")).next().is_none());
    let mut r = report(4);
    r.lessons.push(crate::lessons::Lesson {
        call_key: "lesson/t1/a0".into(),
        task_id: "t1".into(),
        attempt: 0,
        step: 0,
        constraint: "Settings are read only from conf/settings.toml.".into(),
        cause: "The loader ignores settings.py.".into(),
        workaround: "Write conf/settings.toml.".into(),
        evidence: "conf/README.md".into(),
        anchor: "conf/README.md".into(),
        anchor_in: crate::lessons::AnchorSource::Observation,
        cost_usd: 0.004,
    });
    r.lessons_refused.push(crate::lessons::RefusedLesson {
        call_key: "lesson/t2/a0".into(),
        task_id: "t2".into(),
        attempt: 0,
        step: 1,
        reason: crate::lessons::LessonRefusal::Vague,
        detail: "names nothing concrete".into(),
        cost_usd: 0.003,
    });
    let doc = page_of(r, 0.0);
    assert!(doc.select(&sel("#lessons")).next().is_some());
    let text: String = doc.root_element().text().collect();
    for want in [
        "1 admitted, 1 refused",
        "lesson/t1/a0",
        "conf/settings.toml",
        "lesson/t2/a0",
        "vague",
    ] {
        assert!(text.contains(want), "{want:?} not on the page: {text}");
    }
}

#[test]
fn compactions_have_a_table_only_when_there_were_some() {
    let without = page_of(report(4), 0.0);
    assert!(without.select(&sel("#compactions")).next().is_none());
    let mut r = report(4);
    r.compactions.push(crate::state::Compaction {
        call_key: "compact/0".into(),
        step: 3,
        bytes_before: 900,
        bytes_after: 120,
        cost_usd: 0.0123,
        outcome: crate::state::CompactOutcome::Malformed,
        detail: Some("`summary` is empty".into()),
    });
    let doc = page_of(r, 0.0);
    assert!(doc.select(&sel("#compactions")).next().is_some());
    let text: String = doc.root_element().text().collect();
    assert!(
        text.contains("compact/0") && text.contains("malformed: `summary` is empty"),
        "{text}"
    );
}

/// The morning page shows what the agent did: each task's tool calls with
/// their input and answer, in a collapsed trail; hostile text there (a tool
/// input the model wrote, a file's content a tool returned) is text, never
/// markup; a task left in the queue shows its description (from `admit`).
#[test]
fn each_task_has_a_trail_of_its_tool_calls_and_hostile_text_in_it_stays_text() {
    use crate::events::{Admit, AdmittedTask, ToolEvent, ToolRef};
    let mut r = report(2);
    r.queue_left.push("t9".into());
    let line = |event| EventLine {
        unix_ms: 1_000,
        t_ms: 0,
        step: 0,
        event,
    };
    let tool = |key: &str, input: &str, output: &str| {
        line(Event::Tool(ToolEvent {
            task: "t1".into(),
            tool: ToolRef::of("write_file"),
            is_error: false,
            side_effect: true,
            call_key: key.into(),
            input: input.into(),
            output: output.into(),
        }))
    };
    let events = vec![
        line(Event::Admit(Admit {
            origin: "plan".into(),
            admitted: vec!["t9".into()],
            tasks: vec![AdmittedTask {
                id: "t9".into(),
                description: "Write the runbook entry".into(),
            }],
            rejected: vec![],
        })),
        tool("execute/t1/a0/0", HOSTILE[0], HOSTILE[1]),
        tool(
            "execute/t1/a0/1",
            r#"{"path":"notes.md"}"#,
            "wrote 12 bytes to notes.md",
        ),
    ];
    let doc = Html::parse_document(&RunPage::from_parts(r, &events, 0.0, vec![]).render());
    assert_eq!(doc.select(&sel("script")).count(), 0, "a script element");
    assert_eq!(doc.select(&sel("img")).count(), 0, "an img element");
    // Open on the page: no collapsed block.
    assert_eq!(doc.select(&sel("details")).count(), 0);
    let trail: Vec<String> = doc
        .select(&sel("div.trail"))
        .map(|d| d.text().collect())
        .collect();
    assert_eq!(trail.len(), 1, "{trail:?}");
    for want in [
        "execute/t1/a0/0",
        "execute/t1/a0/1",
        "2 tool calls",
        "wrote 12 bytes to notes.md",
        HOSTILE[0],
        HOSTILE[1],
    ] {
        assert!(trail[0].contains(want), "{want:?} not in {:?}", trail[0]);
    }
    let tasks: String = doc
        .select(&sel("#task-table"))
        .flat_map(|t| t.text())
        .collect();
    assert!(tasks.contains("Write the runbook entry"), "{tasks}");
}

#[test]
fn the_page_says_when_the_run_ran_and_each_plot_has_its_own_caption() {
    let r = report(2);
    let at = |unix_ms| EventLine {
        unix_ms,
        t_ms: 0,
        step: 0,
        event: Event::WallClock { detail: "x".into() },
    };
    // 2026-12-04 03:41:12 UTC and 27 s later; the plan call in between,
    // so both plots (by call and by time) are drawn.
    let plan = EventLine {
        unix_ms: 1_796_355_680_000,
        t_ms: 0,
        step: 0,
        event: Event::ModelCall(crate::events::ModelCall {
            role: CallRole::Plan,
            call_key: "plan/1".into(),
            usage: Default::default(),
            cost_usd: 0.0123,
            reserved_usd: 0.05,
            input_tokens_max: 1000,
            latency_ms: 10,
            attempts: 1,
            billed_unknown_attempts: 0,
            stop: crate::model::types::StopReason::EndTurn,
            notice: false,
        }),
    };
    let events = vec![at(1_796_355_672_000), plan, at(1_796_355_699_000)];
    let doc = Html::parse_document(&RunPage::from_parts(r, &events, 0.0, vec![]).render());
    let facts: String = doc
        .select(&sel("dl.facts"))
        .flat_map(|d| d.text())
        .collect();
    assert!(
        facts.contains("from 2026-12-04 03:41:12 UTC to 2026-12-04 03:41:39 UTC"),
        "{facts}"
    );
    let captions: Vec<String> = doc
        .select(&sel("figcaption"))
        .map(|c| c.text().collect())
        .collect();
    // Two spend plots, each caption saying why it is there: the call plot
    // the money, the time plot the stretches with no spend.
    let spend: Vec<&String> = captions
        .iter()
        .filter(|c| c.starts_with("Call by call") || c.starts_with("Over the run's time"))
        .collect();
    assert_eq!(spend.len(), 2, "{captions:?}");
    assert!(
        spend[0].contains("Spend rose") && !spend[1].contains("Spend rose"),
        "{spend:?}"
    );
    assert!(
        spend[1].contains("longest stretch without a booked call was 19.0 s (after call 4)"),
        "{spend:?}"
    );
}

/// A raise of the cap is a marked point on the spend plot with its label,
/// and the cap line steps there: the old cap before it, the new one after.
#[test]
fn a_raised_cap_is_a_marked_point_and_the_cap_line_steps_there() {
    let mut r = report(4);
    r.hard_cap_usd = 3.0;
    r.limit_raises.push(crate::ledger::LimitRaise {
        unix_ms: 1_000,
        limit: crate::ledger::LimitKind::HardCapUsd,
        old: 1.0,
        new: 3.0,
        after_calls: 5,
    });
    let page = RunPage::from_parts(r, &[], 0.0, vec![]);
    let steps = plot::cap_steps(&page, plot::SpendAxis::Call, 9.0);
    assert_eq!(
        steps,
        vec![(0.0, 1.0), (5.5, 1.0), (5.5, 3.0), (9.0, 3.0)],
        "the old cap up to the raise, the new one after"
    );
    let marks = plot::cap_raises(&page, plot::SpendAxis::Call);
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].spent, page.calls[4].spent_usd, "on the curve");
    let svg = plot::spend(&page, plot::SpendAxis::Call).unwrap().unwrap();
    let label = "cap raised $1.00 \u{2192} $3.00";
    assert_eq!(svg.matches(label).count(), 2, "legend and marker: {svg}");
    let doc = Html::parse_document(&page.render());
    let caption: String = doc
        .select(&sel("figcaption"))
        .flat_map(|c| c.text())
        .collect();
    assert!(
        caption.contains(&format!("after call 5, at ")) && caption.contains(label),
        "{caption}"
    );
    // Never raised: one flat cap line, no marker.
    let plain = RunPage::from_parts(report(4), &[], 0.0, vec![]);
    assert_eq!(
        plot::cap_steps(&plain, plot::SpendAxis::Call, 9.0),
        vec![(0.0, 1.0), (9.0, 1.0)]
    );
    let svg = plot::spend(&plain, plot::SpendAxis::Call).unwrap().unwrap();
    assert!(!svg.contains("cap raised"));
}

/// The `start` event of a run opened by `harness run` (the command the page's
/// Next section repeats).
fn opened(argv: &[&str]) -> EventLine {
    EventLine {
        unix_ms: 1_796_355_672_000,
        t_ms: 0,
        step: 0,
        event: Event::Start(crate::events::RunOpened {
            run_id: "r1".into(),
            spent_usd: 0.0,
            command: Some(crate::events::RunCommand {
                argv: argv.iter().map(|a| a.to_string()).collect(),
                workspace: "/srv/ws".into(),
                wall_clock_limit_s: 600.0,
                utc_offset_s: 3600,
                started_by: None,
            }),
        }),
    }
}

const ARGV: [&str; 6] = [
    "harness",
    "run",
    "--spec",
    "/srv/run.toml",
    "--state-dir",
    "/srv/state",
];

/// The ids of the page's top-level blocks in the order a reader meets them.
fn order_of(doc: &Html) -> Vec<String> {
    let want = ["next", "drift", "trail", "money", "tasks"];
    doc.select(&sel("h2[id]"))
        .filter_map(|h| h.value().attr("id"))
        .filter(|id| want.contains(id))
        .map(String::from)
        .collect()
}

fn next_text(doc: &Html) -> String {
    doc.select(&sel("#next-steps"))
        .flat_map(|e| e.text())
        .collect()
}

/// Every ending's page has one layout: the box with when it ended (UTC and
/// the machine's local time), then Next with the exact command, then what
/// the agent did, then the money; a drifted run's drift comes before the
/// trail (the judge's reasoning is why it ended).
#[test]
fn every_ending_has_the_box_with_when_then_next_then_the_trail_then_the_money() {
    for ending in Ending::ALL {
        let mut r = report(3);
        r.ending = ending;
        let events = vec![opened(&ARGV)];
        let doc = Html::parse_document(&RunPage::from_parts(r, &events, 0.0, vec![]).render());
        let when: String = doc
            .select(&sel(".verdict .when"))
            .flat_map(|e| e.text())
            .collect();
        assert_eq!(
            when, "Ended 2026-12-04 03:41:12 UTC (04:41:12 local, UTC+01:00)",
            "{ending}"
        );
        let order = order_of(&doc);
        let expected: &[&str] = if ending == Ending::DriftDetected {
            &["next", "drift", "trail", "money", "tasks"]
        } else {
            &["next", "trail", "money", "tasks", "drift"]
        };
        assert_eq!(order, expected, "{ending}");
        let next = next_text(&doc);
        if ending != Ending::GoalMet {
            assert!(
                next.contains("harness run --spec /srv/run.toml --state-dir /srv/state"),
                "{ending}: {next}"
            );
        }
        assert!(
            !next.contains("RUN.toml"),
            "{ending}: the recorded command, not its shape: {next}"
        );
    }
}

/// BUDGET_EXHAUSTED: the raise with a figure, its basis, and the task
/// that spent most; TIME_LIMIT: the clock's raise; DRIFT_DETECTED: how to
/// see the queue; a run with a parked task: its check's last lines.
#[test]
fn next_gives_the_command_each_ending_calls_for() {
    let page = |ending, edit: &dyn Fn(&mut Report)| {
        let mut r = report(4);
        r.ending = ending;
        edit(&mut r);
        let doc =
            Html::parse_document(&RunPage::from_parts(r, &[opened(&ARGV)], 0.0, vec![]).render());
        next_text(&doc)
    };
    let budget = page(Ending::BudgetExhausted, &|_| {});
    assert!(budget.contains("--raise-cap-usd 1.25"), "{budget}");
    assert!(budget.contains("The task that spent most: t"), "{budget}");
    let budget = page(Ending::BudgetExhausted, &|r| {
        r.cost_per_verified_task_usd = Some(0.5);
        r.queue_left = vec!["a".into(), "b".into(), "c".into()];
    });
    assert!(
        budget.contains("--raise-cap-usd 2.5")
            && budget.contains("$0.50 per verified task x 3 task(s) left in the queue"),
        "{budget}"
    );
    let clock = page(Ending::TimeLimit, &|r| r.verified.clear());
    assert!(
        clock.contains("--raise-wall-clock-s 900") && clock.contains("half again the 600 s limit"),
        "{clock}"
    );
    let drift = page(Ending::DriftDetected, &|_| {});
    assert!(
        drift.contains("harness status --state-dir /srv/state"),
        "{drift}"
    );
    assert!(drift.contains("--state-dir /srv/state-2"), "{drift}");
    let parked = page(Ending::NoProgress, &|r| {
        r.parked[0].reason =
            "check `pytest -q` failed:\nE assert 3 == 2\n1 failed, 4 passed".into();
    });
    assert!(
        parked.contains("its check's last lines") && parked.contains("1 failed, 4 passed"),
        "{parked}"
    );
    // No command in the log (an older harness): its shape, said so.
    let mut r = report(3);
    r.ending = Ending::TimeLimit;
    let doc = Html::parse_document(&RunPage::from_parts(r, &[], 0.0, vec![]).render());
    let next = next_text(&doc);
    assert!(
        next.contains("harness run --spec RUN.toml --state-dir STATE_DIR --raise-wall-clock-s")
            && next.contains("does not record the command"),
        "{next}"
    );
}

/// The page of a run stopped by SIGTERM: the same layout (box with when,
/// Next with the resume command, the trail), not a bare list.
#[test]
fn a_stopped_run_s_page_has_the_box_the_resume_command_and_the_trail() {
    use crate::events::{ToolEvent, ToolRef};
    let report = crate::report::StoppedReport {
        stopped: crate::report::StopDetail {
            signal: "SIGTERM".into(),
            exit_code: 143,
            at_unix_ms: 1_796_355_699_000,
            grace_s: 25,
            took_ms: 120,
            cut: Some("model call execute/t2/a0/0 abandoned".into()),
            resumable: true,
            checkpoint_error: None,
            resume: "re-run".into(),
        },
        run_id: "r1".into(),
        goal: "Reduce p95".into(),
        goal_sha256: "ab".into(),
        spend_usd: 0.1234,
        hard_cap_usd: 28.0,
        steps: 4,
        elapsed_ms: 27_000,
        resumes: 0,
        verified: vec![],
        parked: vec![],
        queue_left: vec!["t3".into()],
        in_flight_task: Some("t2".into()),
    };
    let tool = EventLine {
        unix_ms: 1_796_355_690_000,
        t_ms: 0,
        step: 1,
        event: Event::Tool(ToolEvent {
            task: "t2".into(),
            tool: ToolRef::of("edit_file"),
            is_error: false,
            side_effect: true,
            call_key: "execute/t2/a0/0".into(),
            input: r#"{"path":"app.py","old":"slow()","new":"fast()"}"#.into(),
            output: "edit_file: replaced 1 occurrence in app.py at line 3; wrote 9 bytes".into(),
        }),
    };
    let page = StoppedPage::from_parts(report, &[opened(&ARGV), tool], vec![]);
    let doc = Html::parse_document(&page.render());
    let name: String = doc
        .select(&sel(".verdict .name"))
        .flat_map(|e| e.text())
        .collect();
    assert_eq!(name, "STOPPED by SIGTERM: not finished");
    let when: String = doc
        .select(&sel(".verdict .when"))
        .flat_map(|e| e.text())
        .collect();
    assert_eq!(
        when,
        "Stopped 2026-12-04 03:41:39 UTC (04:41:39 local, UTC+01:00)"
    );
    assert_eq!(order_of(&doc), ["next", "trail", "money", "tasks"]);
    let next = next_text(&doc);
    assert!(
        next.contains("harness run --spec /srv/run.toml --state-dir /srv/state")
            && next.contains("task t2 (in flight at the stop) is verified first"),
        "{next}"
    );
    let diff: String = doc
        .select(&sel("pre.diff"))
        .flat_map(|e| e.text())
        .collect();
    assert!(diff.contains("@@ -3,1 +3,1 @@\n-slow()\n+fast()"), "{diff}");
    let text: String = doc.root_element().text().collect();
    assert!(
        text.contains("$0.12 of $28.00 (<1%)"),
        "one money format: {text}"
    );
    assert!(!text.contains("task(s): "), "no dangling list: {text}");
    assert_eq!(doc.select(&sel("script")).count(), 0);
}

/// A case-run the bench started: its `--base-url` was the bench's replay
/// server, dead once the bench exits, so no Next step may give a command
/// with it (every ending); the harness commands go without it, said so,
/// beside the bench's reproducing command.
#[test]
fn a_bench_case_run_s_next_gives_the_bench_command_never_the_dead_base_url() {
    const DEAD: &str = "http://127.0.0.1:40123/case/happy-x/run/0";
    let argv = [&ARGV[..], &["--base-url", DEAD, "--run-index", "0"]].concat();
    let bench = crate::events::StartedBy {
        say: "This case-run was started by the bench against its replay server.".into(),
        argv: ["bench", "try-case", "/srv/suites/happy/happy-x"]
            .map(String::from)
            .to_vec(),
    };
    let mut start = opened(&argv);
    if let Event::Start(o) = &mut start.event {
        o.command.as_mut().unwrap().started_by = Some(bench.clone());
    }
    let check = |next: &str, what: &str| {
        assert!(!next.contains(DEAD), "{what}: the dead URL: {next}");
        assert!(
            next.contains("bench try-case /srv/suites/happy/happy-x")
                && next.contains("started by the bench")
                && next.contains(super::next::DEAD_ENDPOINT),
            "{what}: {next}"
        );
    };
    for ending in Ending::ALL {
        let mut r = report(3);
        r.ending = ending;
        let page = RunPage::from_parts(r, std::slice::from_ref(&start), 0.0, vec![]).render();
        let doc = Html::parse_document(&page);
        let next = next_text(&doc);
        check(&next, ending.as_str());
        // The harness command the ending calls for, without the dead URL.
        if ending == Ending::BudgetExhausted {
            assert!(
                next.contains("--state-dir /srv/state --run-index 0 --raise-cap-usd"),
                "{next}"
            );
        }
    }
    // Without the bench's word the same argv is the command (a run of the
    // harness against an endpoint of the user's own).
    let mut r = report(3);
    r.ending = Ending::TimeLimit;
    let doc = Html::parse_document(&RunPage::from_parts(r, &[opened(&argv)], 0.0, vec![]).render());
    assert!(next_text(&doc).contains(DEAD));
}
