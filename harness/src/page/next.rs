//! The page's **Next** section: what to do after this ending, with the
//! exact command to type. The command is the one the run was started with
//! (recorded in events.jsonl's `start`/`resume` event, crate::events::
//! RunCommand), changed only where the ending calls for it: a raise flag
//! after BUDGET_EXHAUSTED or TIME_LIMIT, a fresh state dir after an ending a
//! re-run would only re-report. A log without the command (an older
//! harness) gets the command's shape and says so. A run another tool
//! started against an endpoint that died with it (a bench case-run's
//! replay server on `--base-url`) gets its commands without that URL (they
//! would reach nothing afterwards), said so, and that tool's reproducing
//! command.

use super::fmt::{pct, usd};
use super::RunPage;
use crate::ending::Ending;
use crate::events::{RunCommand, StartedBy};
use crate::report::StoppedReport;

/// One thing to do: a sentence, the command for it, and the lines that
/// explain it (a failed check's last lines).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub say: String,
    pub command: Option<String>,
    pub lines: Vec<String>,
}

/// A cap raise suggests at least this share of the cap more (a run with no
/// verified task has no cost per task to go by).
pub const RAISE_CAP_MIN_SHARE: f64 = 0.25;
/// A wall-clock raise suggests at least this share of the limit more.
pub const RAISE_CLOCK_MIN_SHARE: f64 = 0.5;
/// Under the command of a run another tool started: why the harness
/// commands leave out its `--base-url` (the URL is not named: it is dead).
pub const DEAD_ENDPOINT: &str = "The --base-url this run was started with was an endpoint of the tool that started it (the bench's replay server or live proxy), which stopped when that tool finished: the harness commands above leave it out, so they call the spec's own endpoint (live, with your key). The command here reproduces the run as that tool ran it.";
/// A failed check's lines shown on the page (its last ones: a test runner
/// ends with the failure and its count).
pub const CHECK_LINES_SHOWN_MAX: usize = 8;
/// Parked tasks whose reasons are shown under Next (the rest are in Tasks).
pub const PARKED_SHOWN_MAX: usize = 3;

/// `argv` as one line a POSIX shell reads back as the same words.
pub fn shell(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(safe) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The recorded command, or its shape when the log did not record it.
struct Cmd<'a>(Option<&'a RunCommand>);

impl Cmd<'_> {
    fn argv(&self) -> Vec<String> {
        match self.0 {
            // Another tool's endpoint died with it: the command goes
            // without it (to the spec's own endpoint), and says so.
            Some(c) if c.started_by.is_some() => without_base_url(&c.argv),
            Some(c) => c.argv.clone(),
            None => [
                "harness",
                "run",
                "--spec",
                "RUN.toml",
                "--state-dir",
                "STATE_DIR",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    /// The value after `flag` in the command (the state dir, the spec).
    fn value_of(&self, flag: &str) -> String {
        let argv = self.argv();
        let i = argv.iter().position(|a| a == flag);
        i.and_then(|i| argv.get(i + 1).cloned())
            .unwrap_or_else(|| "STATE_DIR".into())
    }

    /// Who started the run, when another tool did (its endpoint is gone).
    fn started_by(&self) -> Option<&StartedBy> {
        self.0.and_then(|c| c.started_by.as_ref())
    }

    fn with(&self, extra: &[String]) -> String {
        let mut v = self.argv();
        v.extend(extra.iter().cloned());
        shell(&v)
    }

    /// The same command on a fresh state dir beside the old one.
    fn fresh(&self) -> String {
        let old = self.value_of("--state-dir");
        let mut v = self.argv();
        if let Some(i) = v.iter().position(|a| a == "--state-dir") {
            if let Some(x) = v.get_mut(i + 1) {
                *x = format!("{}-2", old.trim_end_matches('/'));
            }
        }
        shell(&v)
    }

    /// Said once under Next when the command is a shape, not the record,
    /// or when another tool started the run: that tool's command, and why
    /// the harness commands leave out the `--base-url` it ran with.
    fn caveat(&self) -> Option<Step> {
        if let Some(b) = self.started_by() {
            return Some(Step {
                say: b.say.clone(),
                command: Some(shell(&b.argv)),
                lines: vec![DEAD_ENDPOINT.into()],
            });
        }
        self.0.is_none().then(|| Step {
            say: "events.jsonl does not record the command this run was started with (an older harness, or a torn log): RUN.toml and STATE_DIR stand for the spec and state dir it was started with; add the flags it was started with.".into(),
            command: None,
            lines: vec![],
        })
    }
}

/// `argv` without its `--base-url URL` (or `--base-url=URL`).
fn without_base_url(argv: &[String]) -> Vec<String> {
    let mut out = vec![];
    let mut skip = false;
    for a in argv {
        if skip {
            skip = false;
        } else if a == "--base-url" {
            skip = true;
        } else if !a.starts_with("--base-url=") {
            out.push(a.clone());
        }
    }
    out
}

/// What to do after the run's ending, in order.
pub fn for_ending(p: &RunPage) -> Vec<Step> {
    let r = &p.report;
    let cmd = Cmd(p.command.as_ref());
    let mut steps = match r.ending {
        Ending::GoalMet => goal_met(p),
        Ending::BudgetExhausted => vec![raise_cap(p, &cmd)],
        Ending::TimeLimit => vec![raise_clock(p, &cmd)],
        Ending::DriftDetected => drifted(&cmd),
        Ending::NoProgress | Ending::QueueEmptyGoalUnmet => failed_checks(p, &cmd),
        Ending::UnrecoverableError => vec![Step {
            say: "Fix the cause (the detail above names it), then run the same command again:"
                .into(),
            command: Some(cmd.with(&[])),
            lines: r.detail.iter().flat_map(|d| last_lines(d)).collect(),
        }],
    };
    if r.ending != Ending::GoalMet || cmd.started_by().is_some() {
        steps.extend(cmd.caveat());
    }
    steps
}

fn goal_met(p: &RunPage) -> Vec<Step> {
    let r = &p.report;
    let say = "Nothing to resume: the goal's predicate passed.".to_string();
    match (&r.git_branch, &p.command) {
        (Some(b), Some(c)) => vec![Step {
            say: format!("{say} Review the run branch's commits, one per verified task:"),
            command: Some(shell(&[
                "git".into(),
                "-C".into(),
                c.workspace.clone(),
                "log".into(),
                "--stat".into(),
                b.clone(),
            ])),
            lines: vec![],
        }],
        _ => vec![Step {
            say,
            command: None,
            lines: vec![],
        }],
    }
}

/// BUDGET_EXHAUSTED: the raise, a figure with its basis, and the task that
/// spent most.
fn raise_cap(p: &RunPage, cmd: &Cmd) -> Step {
    let r = &p.report;
    let left = r.queue_left.len().max(1) as f64;
    let per_task = r
        .cost_per_verified_task_usd
        .filter(|c| c.is_finite() && *c > 0.0);
    let floor = RAISE_CAP_MIN_SHARE * r.hard_cap_usd;
    let need = per_task.map_or(floor, |c| (c * left).max(floor));
    let to = round_up_usd(r.hard_cap_usd.max(r.spend_usd) + need);
    let basis = match per_task {
        Some(c) if c * left >= floor => format!(
            "{} per verified task x {}, above the {} cap",
            usd(c),
            tasks_left(r.queue_left.len()),
            usd(r.hard_cap_usd)
        ),
        _ => format!(
            "a quarter more than the {} cap (no cost per verified task to go by, or it is less)",
            usd(r.hard_cap_usd)
        ),
    };
    let mut lines = vec![];
    if let Some((task, n, spent)) = super::by_task(p).into_iter().next() {
        lines.push(format!(
            "The task that spent most: {task}, {} ({} of the spend) over {n} call(s).",
            usd(spent),
            pct(spent, r.spend_usd)
        ));
    }
    Step {
        say: format!(
            "Raise the cap to {} and go on from the checkpoint (suggested: {basis}):",
            usd(to)
        ),
        command: Some(cmd.with(&["--raise-cap-usd".into(), fmt_usd_arg(to)])),
        lines,
    }
}

/// TIME_LIMIT: the raise, with a figure and its basis.
fn raise_clock(p: &RunPage, cmd: &Cmd) -> Step {
    let r = &p.report;
    let elapsed_s = r.elapsed_ms as f64 / 1000.0;
    let limit = p
        .command
        .as_ref()
        .map_or(elapsed_s, |c| c.wall_clock_limit_s)
        .max(elapsed_s);
    let verified = r.verified.len();
    let left = r.queue_left.len().max(1) as f64;
    let floor = RAISE_CLOCK_MIN_SHARE * limit;
    let per_task = (verified > 0).then(|| elapsed_s / verified as f64);
    let need = per_task.map_or(floor, |t| (t * left).max(floor));
    let to = ((limit + need) / 60.0).ceil() * 60.0;
    let basis = match per_task {
        Some(t) if t * left >= floor => format!(
            "{:.0} s per verified task x {}, above the {:.0} s limit",
            t,
            tasks_left(r.queue_left.len()),
            limit
        ),
        _ => format!("half again the {limit:.0} s limit"),
    };
    Step {
        say: format!(
            "Raise the wall clock to {to:.0} s of run time and go on from the checkpoint (suggested: {basis}):"
        ),
        command: Some(cmd.with(&["--raise-wall-clock-s".into(), format!("{to:.0}")])),
        lines: vec![],
    }
}

fn drifted(cmd: &Cmd) -> Vec<Step> {
    vec![
        Step {
            say: "Read the judge's reasoning (the Drift section, first on this page) and the queue it judged (Tasks: pruned and left in the queue); the queue as the checkpoint holds it:".into(),
            command: Some(shell(&[
                "harness".into(),
                "status".into(),
                "--state-dir".into(),
                cmd.value_of("--state-dir"),
            ])),
            lines: vec![],
        },
        Step {
            say: "The run has ended: the same command would only re-report DRIFT_DETECTED. Narrow the goal in the spec, then start on a fresh state dir:".into(),
            command: Some(cmd.fresh()),
            lines: vec![],
        },
    ]
}

/// NO_PROGRESS and QUEUE_EMPTY_GOAL_UNMET: why the checks failed (the
/// parked tasks' reasons, their last lines), then a fresh start.
fn failed_checks(p: &RunPage, cmd: &Cmd) -> Vec<Step> {
    let r = &p.report;
    let mut steps: Vec<Step> = r
        .parked
        .iter()
        .take(PARKED_SHOWN_MAX)
        .map(|t| Step {
            say: format!("Task {} was parked; its check's last lines:", t.id),
            command: None,
            lines: last_lines(&t.reason),
        })
        .collect();
    if r.parked.len() > PARKED_SHOWN_MAX {
        steps.push(Step {
            say: format!(
                "{} more parked task(s): see Tasks below.",
                r.parked.len() - PARKED_SHOWN_MAX
            ),
            command: None,
            lines: vec![],
        });
    }
    if let Some(d) = &r.detail {
        steps.push(Step {
            say: "The run's detail:".into(),
            command: None,
            lines: last_lines(d),
        });
    }
    steps.push(Step {
        say: "The run has ended: the same command would only re-report it. Fix what the checks say (or the plan's coverage of the goal), then start on a fresh state dir:".into(),
        command: Some(cmd.fresh()),
        lines: vec![],
    });
    steps
}

/// What to do after a stop request suspended the run.
pub fn for_stopped(r: &StoppedReport, command: Option<&RunCommand>) -> Vec<Step> {
    let cmd = Cmd(command);
    let d = &r.stopped;
    let mut steps = vec![if d.resumable {
        Step {
            say: match &r.in_flight_task {
                Some(t) => format!("Resume: run the same command; it goes on from the checkpoint, and task {t} (in flight at the stop) is verified first, never re-run blindly:"),
                None => "Resume: run the same command; it goes on from the checkpoint:".into(),
            },
            command: Some(cmd.with(&[])),
            lines: vec![],
        }
    } else {
        Step {
            say: "There is no checkpoint: the same command starts the run over.".into(),
            command: Some(cmd.with(&[])),
            lines: d
                .checkpoint_error
                .iter()
                .flat_map(|e| last_lines(e))
                .collect(),
        }
    }];
    steps.extend(cmd.caveat());
    steps
}

/// What a raise is sized for: the tasks left, or one more when the queue
/// is empty (the goal unmet: a replan will add some).
fn tasks_left(n: usize) -> String {
    match n {
        0 => "one more task (the queue is empty)".into(),
        n => format!("{n} task(s) left in the queue"),
    }
}

/// The last lines of a text (a check's output ends with its verdict).
fn last_lines(s: &str) -> Vec<String> {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(CHECK_LINES_SHOWN_MAX);
    lines[from..].iter().map(|l| l.to_string()).collect()
}

/// Up to the cent; to the dollar from $10 (a figure a person types).
fn round_up_usd(x: f64) -> f64 {
    if x >= 10.0 {
        x.ceil()
    } else {
        (x * 100.0).ceil() / 100.0
    }
}

fn fmt_usd_arg(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_quotes_only_what_a_shell_would_split_or_expand() {
        let argv: Vec<String> = [
            "harness",
            "run",
            "--spec",
            "/tmp/a b/run.toml",
            "--faults",
            "429=0.1,seed=7",
            "it's",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shell(&argv),
            r"harness run --spec '/tmp/a b/run.toml' --faults 429=0.1,seed=7 'it'\''s'"
        );
        assert_eq!(shell(&["".into()]), "''");
    }

    #[test]
    fn last_lines_keep_the_end_of_a_check_without_blank_lines() {
        let out: String = (1..=20).map(|i| format!("line {i}\n\n")).collect();
        let l = last_lines(&out);
        assert_eq!(l.len(), CHECK_LINES_SHOWN_MAX);
        assert_eq!(l.last().unwrap(), "line 20");
    }

    #[test]
    fn a_raise_figure_is_one_a_person_types() {
        assert_eq!(fmt_usd_arg(round_up_usd(1.2345)), "1.24");
        assert_eq!(fmt_usd_arg(round_up_usd(28.01)), "29");
    }
}
