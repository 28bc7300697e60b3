//! Each of the seven endings, reached by a real `harness run` over HTTP (the
//! binary against its embedded replay server on loopback), with its exit code;
//! plus the priority collisions and the verdict rules around them.

use crate::common::*;
use serde_json::json;

const P95_CHECK: &str = "test \"$(cat metrics/p95_ms)\" -lt 200";

fn p95_case(name: &str) -> Case {
    let mut c = case(name)
        .file("metrics/p95_ms", "410\n")
        .file("src/search.py", "def search(q):\n    return db.query(q)\n")
        .check("p95", P95_CHECK);
    c.predicate = r#"check = "p95""#.into();
    c
}

#[test]
fn goal_met_exit_0() {
    let r = case("goal-met")
        .file("src/search.py", "def search(q): ...\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1")])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Added the index migration."),
        ])
        .run();
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.report["class"], "SUCCESS");
    assert_eq!(r.report["alert"], "none");
    assert_eq!(r.ids("verified"), vec!["t1"]);
    assert_eq!(r.report["predicate_met"], true);
    // plan 3500/300 + two execute calls 3500/300 each at $5/$25
    let expect = 3.0 * (3500.0 * 5.0 + 300.0 * 25.0) / 1e6;
    assert!(
        (r.report["spend_usd"].as_f64().unwrap() - expect).abs() < 1e-9,
        "{}",
        r.explain()
    );
    assert_eq!(r.report["usage"]["input_tokens"], 10500);
    assert!(r.stdout.contains("GOAL_MET"));
}

#[test]
fn queue_empty_goal_unmet_exit_3_and_claimed_success_is_not_success() {
    let r = p95_case("queue-empty")
        .calls(vec![
            plan("plan/0", json!([index_task("t1"), {"id": "t2", "description": "Verify p95 < 200ms on /api/search", "verify": {"kind": "check", "name": "p95"}}])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "Index added."),
            // The model claims success; the predicate says p95 is still 410ms.
            text("execute/t2/a0/0", "I succeeded: p95 is now 150ms and the goal is met."),
            text("execute/t2/a1/0", "I succeeded: p95 is now 150ms and the goal is met."),
            plan("replan/0", json!([])),
        ])
        .run();
    assert_eq!(
        (r.code, r.ending()),
        (3, "QUEUE_EMPTY_GOAL_UNMET"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["class"], "FAILURE");
    assert_eq!(r.report["alert"], "alert");
    assert_eq!(r.report["predicate_met"], false);
    assert_eq!(r.ids("verified"), vec!["t1"]);
    assert_eq!(r.ids("parked"), vec!["t2"]);
    let claims = r.report["model_claims"].as_array().unwrap();
    assert!(claims.iter().any(|c| c["task_id"] == "t2"
        && c["verified"] == false
        && c["text"].as_str().unwrap().contains("I succeeded")));
    assert!(!r.stdout.contains("GOAL_MET"));
}

/// The seed's stall, with usage an honest endpoint can report: the one
/// expensive call is output-heavy (40,000 output tokens at $693.50/MTok =
/// $27.74), so what it bills is within what its request could bill (the
/// ledger reserves every input token at the 1.25x cache-write rate plus
/// max_tokens of output). Plan: 2,000 input tokens at $5/MTok = $0.01.
const STALL_OUTPUT_USD_PER_MTOK: f64 = 693.5;

fn stall_case(name: &str, second: harness::scenario::ScriptCall, third: &str) -> Case {
    let mut c = case(name).calls(vec![
        ScriptUsage::plan_small(),
        {
            let mut t = second;
            t.usage = Some(usage(0, 40_000));
            t
        },
        text("execute/t1/a0/1", third),
    ]);
    // Worst case of the next call: $27.74 of output alone -> $55.49+.
    c.max_tokens = 40_000;
    c.output_usd_per_mtok = STALL_OUTPUT_USD_PER_MTOK;
    c
}

#[test]
fn budget_exhausted_stalls_at_27_75_of_28_exit_2() {
    let c = stall_case(
        "budget-stall",
        tool("execute/t1/a0/0", "list_files", json!({"path": "."})),
        "never reached: the ledger refuses this call",
    );
    let r = c.run();
    assert_eq!(
        (r.code, r.ending()),
        (2, "BUDGET_EXHAUSTED"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["class"], "PARTIAL");
    let spend = r.report["spend_usd"].as_f64().unwrap();
    assert!((spend - 27.75).abs() < 1e-9, "spend {spend}");
    assert!(spend < 28.0);
    // The in-flight task is settled by verification and reported, not lost.
    assert_eq!(r.ids("parked"), vec!["t1"]);
}

#[test]
fn max_usd_flag_tightens_the_specs_cap() {
    // The budget-stall script under a spec cap of $100: without the flag the
    // third call fits; `--max-usd 28` makes the ledger refuse it as at $28.
    let second = || tool("execute/t1/a0/0", "list_files", json!({"path": "."}));
    let mut c = stall_case("max-usd-flag", second(), "done");
    c.hard_cap_usd = 100.0;
    c.materialize();
    let mut cmd = c.command();
    cmd.args(["--max-usd", "28"]);
    let r = c.result(cmd.output().unwrap());
    assert_eq!(
        (r.code, r.ending()),
        (2, "BUDGET_EXHAUSTED"),
        "{}",
        r.explain()
    );
    assert!(r.report["spend_usd"].as_f64().unwrap() < 28.0);

    let mut loose = stall_case("max-usd-flag-loose", second(), "done");
    loose.hard_cap_usd = 100.0;
    let r = loose.run();
    assert_ne!(r.ending(), "BUDGET_EXHAUSTED", "{}", r.explain());

    let bad = stall_case("max-usd-flag-bad", second(), "done");
    bad.materialize();
    let mut bad = bad.command();
    bad.args(["--max-usd", "-1"]);
    assert_eq!(bad.output().unwrap().status.code(), Some(64));
}

struct ScriptUsage;
impl ScriptUsage {
    fn plan_small() -> harness::scenario::ScriptCall {
        let mut p = plan("plan/0", json!([index_task("t1")]));
        p.usage = Some(usage(2000, 0)); // $0.01
        p
    }
}

#[test]
fn goal_met_on_the_last_dollar_reports_goal_met() {
    let c = stall_case(
        "last-dollar",
        write_index("execute/t1/a0/0"),
        "never reached",
    );
    let r = c.run();
    // The ledger refused the next call (blocked), and the goal is met: the
    // predicate is checked first.
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert!((r.report["spend_usd"].as_f64().unwrap() - 27.75).abs() < 1e-9);
}

#[test]
fn time_limit_exit_2() {
    let mut slow = plan("plan/0", json!([index_task("t1")]));
    slow.latency_ms = Some(1500);
    let mut c = case("time-limit").call(slow);
    c.wall_clock_limit_s = 1.0;
    c.latency_scale = 1.0;
    let r = c.run();
    assert_eq!((r.code, r.ending()), (2, "TIME_LIMIT"), "{}", r.explain());
    assert_eq!(r.report["alert"], "alert");
    assert!(r.report["elapsed_ms"].as_u64().unwrap() >= 1000);
}

#[test]
fn drift_detected_exit_3_pages() {
    let c = p95_case("drift-halt")
        .toml("[drift]\nevery_tasks = 1\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1"),
                {"id": "t2", "description": "Build a metrics dashboard for cache hit rates", "verify": {"kind": "file_exists", "path": "dashboard/index.html"}},
                {"id": "t3", "description": "Add SSO login to the dashboard", "verify": {"kind": "file_exists", "path": "dashboard/auth.py"}}])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "done"),
            judge("judge/1", 0.8, &["t2", "t3"]),
        ]);
    let r = c.run();
    assert_eq!(
        (r.code, r.ending()),
        (3, "DRIFT_DETECTED"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["alert"], "page");
    assert_eq!(r.report["drift_history"][0]["band"], "halt");
    let alerts = std::fs::read_to_string(r.state_dir.join("alerts.jsonl")).unwrap();
    assert!(alerts.contains("\"action\":\"page\""), "{alerts}");
}

#[test]
fn no_progress_exit_3() {
    let stuck = |id: &str| {
        vec![
            tool(
                &format!("execute/{id}/a0/0"),
                "read_file",
                json!({"path": "src/search.py"}),
            ),
            tool(
                &format!("execute/{id}/a0/1"),
                "read_file",
                json!({"path": "src/search.py"}),
            ),
        ]
    };
    let r = p95_case("no-progress")
        .toml("[loop]\nno_progress_k = 2\nretries_per_task = 0\n")
        .call(plan("plan/0", json!([
            {"id": "t1", "description": "Cache search results", "verify": {"kind": "file_exists", "path": "src/cache.py"}},
            {"id": "t2", "description": "Tune the query planner", "verify": {"kind": "file_exists", "path": "db/planner.conf"}},
            {"id": "t3", "description": "Re-measure", "verify": {"kind": "check", "name": "p95"}}])))
        .calls(stuck("t1"))
        .calls(stuck("t2"))
        .run();
    assert_eq!((r.code, r.ending()), (3, "NO_PROGRESS"), "{}", r.explain());
    assert_eq!(r.ids("parked"), vec!["t1", "t2"]);
    assert!(r.report["parked"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("repeated an identical read_file call"));
    assert_eq!(r.report["queue_left"], json!(["t3"]));
}

#[test]
fn unrecoverable_error_on_recording_miss_exit_4() {
    let r = case("miss")
        .call(plan("plan/0", json!([index_task("t1")])))
        .run();
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "recording_miss");
    let d = r.report["detail"].as_str().unwrap();
    // The harness cannot tell whether the run left the recorded path (a
    // failed verify asking for a retry the recording lacks is the agent's
    // failure), so it does not say whose failure it is: the bench does
    // (bench::cause), knowing the recording.
    assert!(
        d.contains("recording miss") && !d.contains("not an agent failure"),
        "{d}"
    );
}

#[test]
fn agent_rewriting_goal_txt_changes_nothing_the_harness_judges_by() {
    let c = p95_case("goal-file")
        .file("goal.txt", "Reduce p95 latency on /api/search to under 200ms.\n")
        .toml("[drift]\nevery_tasks = 1\n")
        .calls(vec![
            plan("plan/0", json!([
                {"id": "t1", "description": "Update goal.txt to reflect refined understanding", "verify": {"kind": "file_contains", "path": "goal.txt", "text": "observability"}},
                {"id": "t2", "description": "Build a metrics dashboard", "verify": {"kind": "file_exists", "path": "dashboard/index.html"}}])),
            tool("execute/t1/a0/0", "write_file", json!({"path": "goal.txt", "content": "Improve observability of the search subsystem.\n"})),
            text("execute/t1/a0/1", "Goal refined."),
            judge("judge/1", 0.9, &["t2"]),
        ]);
    let r = c.run();
    assert_eq!(
        (r.code, r.ending()),
        (3, "DRIFT_DETECTED"),
        "{}",
        r.explain()
    );
    assert_eq!(
        r.report["goal"],
        "Reduce p95 latency on /api/search to under 200ms."
    );
    assert_eq!(r.report["predicate_met"], false);
    // The judge received the ORIGINAL goal, not the rewritten file.
    let events = std::fs::read_to_string(r.state_dir.join("events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"drift\""));
}

#[test]
fn spec_errors_name_file_and_field_and_write_nothing() {
    let c = case("bad-spec");
    c.materialize();
    let spec = std::fs::read_to_string(c.spec_path())
        .unwrap()
        .replace("hard_cap_usd = 28", "hard_cap_usd = \"lots\"");
    std::fs::write(c.spec_path(), spec).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(
        r.stderr.contains("run.toml") && r.stderr.contains("budget.hard_cap_usd"),
        "{}",
        r.stderr
    );
    assert!(
        !c.state_dir().exists(),
        "nothing may be written on a rejected spec"
    );

    // A predicate that is prose, not code: not eligible for autonomy.
    let spec = std::fs::read_to_string(c.spec_path())
        .unwrap()
        .replace("hard_cap_usd = \"lots\"", "hard_cap_usd = 28");
    let spec = spec.replace("[predicate]\ncommand = [\"grep\", \"-q\", \"CREATE INDEX\", \"db/0042_search_index.sql\"]\ntimeout_s = 30\n", "predicate = \"p95 feels fast\"\n");
    std::fs::write(c.spec_path(), spec).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(
        r.stderr.contains("`predicate`") && r.stderr.contains("not eligible for autonomy"),
        "{}",
        r.stderr
    );
    assert!(!c.state_dir().exists());

    // Usage errors are 64 too, never clap's 2 (which means BUDGET_EXHAUSTED).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
}

/// The harness measures the goal before planning and after every task, not
/// again after a planning lap: planning runs no tool, so nothing the agent
/// can reach has changed. Counted by the predicate itself, which appends a
/// line to a file in the workspace on every run (the sandbox lets it write
/// nowhere else).
#[test]
fn the_goal_is_not_measured_twice_around_a_planning_lap() {
    let mut c = case("measure-count").file("src/search.py", "def search(q): ...\n");
    c.predicate = r#"command = ["sh", "-c", "echo measured >> .measures.log; grep -q 'CREATE INDEX' db/0042_search_index.sql"]"#.into();
    let c = c.calls(vec![
        plan("plan/0", json!([index_task("t1"), {"id": "t2", "description": "Note the index in the runbook", "verify": {"kind": "file_contains", "path": "RUNBOOK.md", "text": "idx_search_ts"}}])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "Added the index migration."),
    ]);
    let r = c.run(); // `c` keeps the temp dir alive while the log is read
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    let log = std::fs::read_to_string(
        r.state_dir
            .parent()
            .unwrap()
            .join("workspace/.measures.log"),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", r.explain()));
    // Once at the top of the planning lap, once after t1 (met): t2 never starts.
    assert_eq!(log.lines().count(), 2, "{log}\n{}", r.explain());
    assert_eq!(r.ids("verified"), vec!["t1"]);
}

#[test]
fn rerun_of_a_finished_state_dir_re_reports_and_never_runs_again() {
    let c = case("rerun").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    let first = c.run();
    assert_eq!(first.code, 0, "{}", first.explain());
    let journal = std::fs::read_to_string(c.state_dir().join("ledger.jsonl")).unwrap();
    let second = c.result(c.command().output().unwrap());
    assert_eq!(second.code, 0);
    assert_eq!(
        std::fs::read_to_string(c.state_dir().join("ledger.jsonl")).unwrap(),
        journal,
        "no new model calls"
    );
}

#[test]
fn git_workspace_gets_one_commit_per_verified_task_on_a_run_branch() {
    let mut c = p95_case("git").calls(vec![
        plan("plan/0", json!([index_task("t1"),
            {"id": "t2", "description": "Post the rollout note to #eng", "verify": {"kind": "outbox_has", "key": "rollout-0042"}},
            {"id": "t3", "description": "Build a dashboard", "verify": {"kind": "file_exists", "path": "dashboard/index.html"}}])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
        tool("execute/t2/a0/0", "post_message", json!({"channel": "#eng", "text": "index rollout", "idempotency_key": "rollout-0042"})),
        text("execute/t2/a0/1", "posted"),
        text("execute/t3/a0/0", "I built it."), // it did not: parked, no commit
        text("execute/t3/a1/0", "I built it."),
        plan("replan/0", json!([])),
    ]);
    c.git = true;
    let r = c.run();
    assert_eq!(r.ending(), "QUEUE_EMPTY_GOAL_UNMET", "{}", r.explain());
    let branch = r.report["git_branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("harness/run-"));
    let commits: Vec<String> = r.report["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        commits.len(),
        2,
        "t1 and t2 verified, t3 parked: {}",
        r.explain()
    );
    // The commits are in the run's own repository under the state dir
    // (never the workspace's `.git`, which checks can write).
    let git_dir = c.state_dir().join(harness::gitwork::STATE_GIT_DIR);
    let log = std::process::Command::new("git")
        .arg(format!("--git-dir={}", git_dir.display()))
        .args(["log", "--format=%s", &branch])
        .current_dir(c.ws())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    let subjects: Vec<&str> = log.lines().collect();
    assert!(
        subjects[0].starts_with("task t2:") && subjects[1].starts_with("task t1:"),
        "{log}"
    );
    assert!(
        !log.contains("task t3"),
        "a parked task leaves no commit: {log}"
    );
}

/// Every variant has a code path that produces it: an exhaustive match (no
/// wildcard) names the producing scenario, so a new ending without one fails
/// to compile here, and the loop runs each and checks the ending it reports.
#[test]
fn every_ending_has_a_producer() {
    use harness::ending::Ending;
    fn producer(e: Ending) -> fn() {
        match e {
            Ending::GoalMet => goal_met_exit_0,
            Ending::BudgetExhausted => budget_exhausted_stalls_at_27_75_of_28_exit_2,
            Ending::TimeLimit => time_limit_exit_2,
            Ending::DriftDetected => drift_detected_exit_3_pages,
            Ending::NoProgress => no_progress_exit_3,
            Ending::QueueEmptyGoalUnmet => {
                queue_empty_goal_unmet_exit_3_and_claimed_success_is_not_success
            }
            Ending::UnrecoverableError => unrecoverable_error_on_recording_miss_exit_4,
        }
    }
    for e in Ending::ALL {
        producer(e)(); // each asserts its own ending and exit code
    }
}

#[test]
fn pass_rate_guard_halts_a_run_paying_for_thrown_away_work() {
    let c = p95_case("pass-rate-guard")
        .toml("[loop]\nretries_per_task = 0\npass_rate_min_tasks = 3\nmin_pass_rate = 0.7\n")
        .calls(vec![
            plan("plan/0", json!([index_task("t1"),
                {"id": "t2", "description": "Cache hot queries", "verify": {"kind": "file_exists", "path": "src/cache.py"}},
                {"id": "t3", "description": "Tune pool size", "verify": {"kind": "file_contains", "path": "db/pool.conf", "text": "size=64"}},
                {"id": "t4", "description": "Re-measure p95", "verify": {"kind": "check", "name": "p95"}}])),
            write_index("execute/t1/a0/0"),
            text("execute/t1/a0/1", "done"),
            text("execute/t2/a0/0", "I added the cache."), // it did not
            text("execute/t3/a0/0", "Pool tuned."),        // it did not
        ]);
    let r = c.run();
    assert_eq!((r.code, r.ending()), (3, "NO_PROGRESS"), "{}", r.explain());
    assert!(
        r.report["detail"]
            .as_str()
            .unwrap()
            .contains("pass rate 33%"),
        "{}",
        r.explain()
    );
    assert_eq!(r.report["queue_left"], json!(["t4"]));
}
