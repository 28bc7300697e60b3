//! The stop order: `should_stop` is the priority order of the endings, read
//! top to bottom. These tests hold a Runner (opened as a run is, on a temp
//! dir, no model call made) with every ending's condition true at once, and
//! take the conditions away one at a time, so each ending must outrank the
//! ones after it.

use super::open::open;
use super::{RunOptions, Runner};
use crate::check::CheckResult;
use crate::ending::Ending;
use crate::spec::RunSpec;
use crate::state::ParkedTask;

const SPEC: &str = r#"
goal = "Make the tests pass."
workspace = "ws"
[predicate]
command = ["sh", "-c", "exit 1"]
[budget]
hard_cap_usd = 10.0
wall_clock_limit_s = 3600
task_budget_tokens = 1000
[model]
protocol = "anthropic"
base_url = "http://127.0.0.1:9"
executor = "m"
[prices.m]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 1.0
[loop]
no_progress_k = 3
min_pass_rate = 0.5
pass_rate_min_tasks = 4
[drift]
halt_above = 0.6
"#;

async fn runner(dir: &tempfile::TempDir) -> Runner {
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = RunSpec::parse(SPEC, "run.toml", dir.path()).unwrap();
    let opts = RunOptions {
        base_url_override: None,
        jitter_seed: 0,
        raise: None,
        max_usd: None,
        command: vec![],
        #[cfg(feature = "test-hooks")]
        tamper_goal_before_lap: None,
    };
    let Ok((r, resumed)) = open(spec, &dir.path().join("state"), opts).await else {
        panic!("the test run could not be opened")
    };
    assert!(!resumed);
    r
}

/// The goal predicate's result, as the lap's last act would have left it
/// (so `should_stop` runs no command).
fn predicate(passed: bool) -> Option<CheckResult> {
    Some(CheckResult {
        passed,
        exit_code: Some(i32::from(!passed)),
        timed_out: false,
        cut_by_run_clock: false,
        cut_by_stop: false,
        output: String::new(),
        could_not_run: false,
    })
}

fn parked(n: usize) -> ParkedTask {
    ParkedTask {
        id: format!("t{n}"),
        description: "a task".into(),
        reason: "failed".into(),
        step: n as u64,
        uncommitted_paths: vec![],
    }
}

/// One condition of each ending, the ones a test takes away.
#[derive(Clone, Copy)]
enum Condition {
    Goal,
    Budget,
    Clock,
    Drift,
    Streak,
    PassRate,
    QueueEmpty,
}

fn set(r: &mut Runner, c: Condition, on: bool) {
    match c {
        Condition::Goal => {} // read at each call: see `decide`
        Condition::Budget => r.ledger.set_blocked(on),
        Condition::Clock => r.clock_ran_out = on,
        Condition::Drift => r.state.drift_score = if on { 0.9 } else { 0.0 },
        Condition::Streak => r.state.no_progress_streak = if on { 3 } else { 0 },
        Condition::PassRate => {
            r.state.parked = if on {
                (0..4).map(parked).collect()
            } else {
                vec![]
            }
        }
        Condition::QueueEmpty => r.state.planned = on,
    }
}

fn decide(r: &mut Runner, goal_met: bool) -> Option<Ending> {
    r.fresh_predicate = predicate(goal_met);
    r.should_stop()
}

/// The order today: GOAL_MET, BUDGET_EXHAUSTED, TIME_LIMIT, DRIFT_DETECTED,
/// NO_PROGRESS (the streak, then the pass-rate guard),
/// QUEUE_EMPTY_GOAL_UNMET, else go on.
const ORDER: [(Condition, Ending); 7] = [
    (Condition::Goal, Ending::GoalMet),
    (Condition::Budget, Ending::BudgetExhausted),
    (Condition::Clock, Ending::TimeLimit),
    (Condition::Drift, Ending::DriftDetected),
    (Condition::Streak, Ending::NoProgress),
    (Condition::PassRate, Ending::NoProgress),
    (Condition::QueueEmpty, Ending::QueueEmptyGoalUnmet),
];

#[tokio::test]
async fn each_ending_outranks_the_ones_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = runner(&dir).await;
    for (c, _) in ORDER {
        set(&mut r, c, true);
    }
    let mut goal_met = true;
    for (c, ending) in ORDER {
        assert_eq!(
            decide(&mut r, goal_met),
            Some(ending),
            "with {ending} and every ending after it true"
        );
        match c {
            Condition::Goal => goal_met = false,
            _ => set(&mut r, c, false),
        }
    }
    assert_eq!(
        decide(&mut r, false),
        None,
        "no ending's condition holds: the loop goes on"
    );
}

#[tokio::test]
async fn each_ending_alone_is_decided() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = runner(&dir).await;
    for (c, ending) in ORDER {
        let goal_met = matches!(c, Condition::Goal);
        set(&mut r, c, true);
        assert_eq!(decide(&mut r, goal_met), Some(ending), "{ending} alone");
        set(&mut r, c, false);
    }
}

#[tokio::test]
async fn the_pass_rate_guard_says_why_in_the_plan_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = runner(&dir).await;
    set(&mut r, Condition::PassRate, true);
    assert_eq!(decide(&mut r, false), Some(Ending::NoProgress));
    let note = r.plan_note.clone().unwrap_or_default();
    assert!(
        note.contains("verified pass rate 0% (0 of 4 tasks)"),
        "{note}"
    );
}

/// The end of the run settles the task in flight: `finish` verifies it, and
/// a task whose write failed with an I/O error is parked, never "verified at
/// end" from what the page cache shows (issue 47: `bench chaos --seed 1
/// --mode power-loss --replay-kill 2446`, ENOSPC on the directory fsync of
/// t3's write, then the budget). `doubt`: how the failure is known.
async fn settle_in_flight(ending: Ending, doubt: Option<&str>) -> super::Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut r = runner(&dir).await;
    // The write landed: the page cache says done.
    std::fs::write(dir.path().join("ws/out.txt"), "BATCH_SIZE = 5000\n").unwrap();
    r.state.in_progress = Some(crate::task::Task {
        id: "t3".into(),
        description: "write the batch size".into(),
        verify: crate::verify::Verify::FileContains {
            path: "out.txt".into(),
            text: "BATCH_SIZE".into(),
        },
        origin: "plan".into(),
        attempts: 1,
    });
    match doubt {
        Some("attempt") => r.attempt_io_failed = Some("write_file".into()),
        Some(_) => {
            r.task_paths.insert("out.txt".into());
            r.state.writes_in_doubt.push(crate::state::WriteInDoubt {
                path: "out.txt".into(),
                error: "No space left on device (os error 28)".into(),
            });
        }
        None => {}
    }
    r.last_predicate = predicate(ending == Ending::GoalMet);
    r.finish(ending, None, None).await
}

#[tokio::test]
async fn a_task_in_flight_whose_write_failed_is_parked_at_the_end_never_verified() {
    for doubt in ["attempt", "writes_in_doubt"] {
        let o = settle_in_flight(Ending::BudgetExhausted, Some(doubt)).await;
        assert!(
            o.report.verified.is_empty(),
            "{doubt}: {:?}",
            o.report.verified
        );
        assert_eq!(o.report.parked.len(), 1, "{doubt}");
        assert!(
            o.report.parked[0].reason.contains("may not be durable"),
            "{doubt}: {}",
            o.report.parked[0].reason
        );
        assert_eq!(o.ending, Ending::BudgetExhausted);
    }
    // GOAL_MET never stands on it.
    let o = settle_in_flight(Ending::GoalMet, Some("attempt")).await;
    assert_eq!(o.ending, Ending::UnrecoverableError);
    assert_eq!(
        o.report.error_kind,
        Some(crate::ending::ErrorKind::WriteNotDurable)
    );
    // Without a failed write the same task is verified at end.
    let o = settle_in_flight(Ending::BudgetExhausted, None).await;
    assert_eq!(o.report.verified.len(), 1);
    assert_eq!(o.report.verified[0].how, crate::state::VerifiedHow::AtEnd);
}
