//! one_of_seven_endings on one exited process: the ending is the report the
//! process published, one of the seven with its exit code; the human summary
//! on stdout is held to agree with it, and an injected I/O error that ended
//! the run is named.

use super::Checks;
use crate::driver::observe::Proc;
use crate::harness_files::{quoted, Report};
use crate::invariant::Invariant;

/// The exit code of the ending named `name` (as the harness spells it).
pub(in crate::driver) fn ending_code(name: &str) -> Option<i32> {
    harness::ending::Ending::parse(name).map(|e| e.exit_code())
}

/// (ending, exit) from the harness's human summary on stdout: only ever
/// compared with the report, never a source of the ending.
pub(in crate::driver) fn summary_ending(stdout: &str) -> Option<(String, i32)> {
    let line = stdout.lines().find(|l| l.starts_with("ending "))?;
    let rest = line["ending".len()..].trim_start();
    let name = rest.split_whitespace().next()?.to_string();
    let exit = rest
        .split("exit ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some((name, exit))
}

/// Process `pr` exited `code`: its ending, from the report it published.
/// Returns that report when it names an ending.
pub(in crate::driver) fn check<'a>(ck: &mut Checks, pr: &'a Proc, code: i32) -> Option<&'a Report> {
    let idx = pr.idx;
    let inv = Invariant::OneOfSevenEndings;
    let r = published(ck, pr, code);
    let named = r.and_then(|r| r.ending.as_deref().map(|n| (r, n)));
    match named {
        None if r.is_some() => ck.fail(
            inv,
            idx,
            format!("exit {code} and a report.json that names no ending"),
        ),
        None => {}
        Some((r, name)) => match ending_code(name) {
            None => ck.fail(inv, idx, format!("ending {name:?} is not one of the seven")),
            Some(want) if want != code || r.exit_code != Some(code as i64) => ck.fail(
                inv,
                idx,
                format!(
                    "ending {name} must exit {want}; exited {code} (report.json says {})",
                    quoted(&r.exit_code)
                ),
            ),
            _ => {}
        },
    }
    summary_agrees(ck, pr, code, named);
    if let (Some(errno), Some((r, name))) = (pr.fault_fired, named) {
        // An injected I/O error is refused or classified: UNRECOVERABLE_ERROR
        // naming it, or absorbed as a tool error the run went on from
        // (checked by the others).
        let detail = r.detail.as_deref().unwrap_or("");
        if name == "UNRECOVERABLE_ERROR" && !detail.contains(&format!("os error {errno}")) {
            ck.fail(inv, idx, format!("an injected errno {errno} ended the run UNRECOVERABLE_ERROR without naming it: {}", quoted(&r.detail)));
        }
    }
    named.map(|(r, _)| r)
}

/// The report the process published, if it is the harness's report (each
/// way it is not is a failure of its own).
fn published<'a>(ck: &mut Checks, pr: &'a Proc, code: i32) -> Option<&'a Report> {
    let (inv, idx) = (Invariant::OneOfSevenEndings, pr.idx);
    let stderr_tail = pr.stderr.lines().last().unwrap_or("");
    match &pr.published {
        None => {
            ck.fail(
                inv,
                idx,
                format!("exit {code} and no report.json (stderr: {stderr_tail})"),
            );
            None
        }
        Some(Err(e)) => {
            ck.fail(
                inv,
                idx,
                format!("exit {code} and a report.json that is not a report: {e}"),
            );
            None
        }
        Some(Ok(r)) => {
            if let Some(e) = &r.not_the_contract {
                ck.fail(
                    inv,
                    idx,
                    format!("exit {code} and a report.json that is not the harness's report: {e}"),
                );
            }
            Some(r)
        }
    }
}

/// The human summary is the same report: it must say the same ending, and
/// so must the report.json left on disk (after a power cut too), unless an
/// injected I/O error kept the harness from writing it.
fn summary_agrees(ck: &mut Checks, pr: &Proc, code: i32, named: Option<(&Report, &str)>) {
    let (inv, idx) = (Invariant::OneOfSevenEndings, pr.idx);
    let stderr_tail = pr.stderr.lines().last().unwrap_or("");
    let summary = summary_ending(&pr.stdout);
    match (&summary, named) {
        (None, _) => ck.fail(
            inv,
            idx,
            format!("exit {code} with no ending line on stdout (stderr: {stderr_tail})"),
        ),
        (Some((name, e)), Some((r, rname))) if name != rname || r.exit_code != Some(*e as i64) => {
            ck.fail(
                inv,
                idx,
                format!(
                    "stdout says {name} exit {e} but report.json says {} exit {}",
                    quoted(&r.ending),
                    quoted(&r.exit_code)
                ),
            )
        }
        _ => {}
    }
    if pr.fault_fired.is_some() {
        return;
    }
    if let (Some((name, _)), Some(d)) = (&summary, &pr.end.report) {
        if d.ending.as_deref() != Some(name.as_str()) || d.exit_code != Some(code as i64) {
            ck.fail(
                inv,
                idx,
                format!(
                    "stdout says {name} exit {code} but report.json says {} exit {}",
                    quoted(&d.ending),
                    quoted(&d.exit_code)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::observe::Obs;
    use crate::oracle::{Ckpt, Journal};
    use crate::proc::Outcome;

    #[test]
    fn endings_parse() {
        let s = "ending     GOAL_MET (SUCCESS, exit 0, none)\ngoal       x\n";
        assert_eq!(summary_ending(s), Some(("GOAL_MET".into(), 0)));
        assert_eq!(ending_code("QUEUE_EMPTY_GOAL_UNMET"), Some(3));
        assert_eq!(ending_code("NOPE"), None);
    }

    fn obs(report: Option<Report>) -> Obs {
        Obs {
            ckpt: Ckpt::Absent,
            journal: Journal::default(),
            outbox: Default::default(),
            migrations: Default::default(),
            inflight: None,
            events_len: 0,
            report,
        }
    }

    fn report(ending: &str, exit: i64) -> Report {
        Report {
            ending: Some(ending.into()),
            exit_code: Some(exit),
            ..Default::default()
        }
    }

    /// A process that exited `code`, printed `stdout`, published `published`
    /// and left `on_disk` as report.json.
    fn exited(code: i32, stdout: &str, published: Option<Report>, on_disk: Option<Report>) -> Proc {
        Proc {
            idx: 1,
            outcome: Outcome::Exited { code },
            stdout: stdout.into(),
            stderr: "last stderr line".into(),
            ops: vec![],
            spawn: obs(None),
            end: obs(on_disk),
            published: published.map(Ok),
            events: vec![],
            fault_fired: None,
            crashed: false,
        }
    }

    fn findings(pr: &Proc) -> Vec<String> {
        let mut ck = Checks::new();
        check(&mut ck, pr, pr.exited().unwrap());
        ck.found.into_iter().map(|(_, _, d)| d).collect()
    }

    const GOAL_MET: &str = "ending     GOAL_MET (SUCCESS, exit 0, none)\n";

    #[test]
    fn the_ending_is_the_published_report() {
        let r = report("GOAL_MET", 0);
        let ok = exited(0, GOAL_MET, Some(r.clone()), Some(r.clone()));
        assert_eq!(findings(&ok), Vec::<String>::new());
        // The report names an ending that does not exit as the process did;
        // stdout agrees with the process, so only the report can have said it.
        let bad = report("BUDGET_EXHAUSTED", 0);
        let f = findings(&exited(0, GOAL_MET, Some(bad.clone()), Some(bad)));
        assert!(
            f.iter()
                .any(|d| d.starts_with("ending BUDGET_EXHAUSTED must exit 2")),
            "{f:?}"
        );
        let f = findings(&exited(0, GOAL_MET, None, None));
        assert!(
            f.iter()
                .any(|d| d == "exit 0 and no report.json (stderr: last stderr line)"),
            "{f:?}"
        );
        let f = findings(&exited(0, GOAL_MET, Some(report("DONE", 0)), None));
        assert!(
            f.iter()
                .any(|d| d == "ending \"DONE\" is not one of the seven"),
            "{f:?}"
        );
    }

    #[test]
    fn stdout_is_held_to_the_report() {
        let r = report("GOAL_MET", 0);
        let f = findings(&exited(0, "goal x\n", Some(r.clone()), Some(r.clone())));
        assert!(
            f.iter()
                .any(|d| d.starts_with("exit 0 with no ending line on stdout")),
            "{f:?}"
        );
        let q = report("QUEUE_EMPTY_GOAL_UNMET", 3);
        let f = findings(&exited(
            3,
            "ending     GOAL_MET (SUCCESS, exit 3, none)\n",
            Some(q.clone()),
            Some(q),
        ));
        assert!(
            f.iter().any(|d| d
                == "stdout says GOAL_MET exit 3 but report.json says \"QUEUE_EMPTY_GOAL_UNMET\" exit 3"),
            "{f:?}"
        );
        // The report left on disk (after a power cut) must still be it.
        let f = findings(&exited(0, GOAL_MET, Some(r), Some(report("TIME_LIMIT", 1))));
        assert!(
            f.iter()
                .any(|d| d
                    == "stdout says GOAL_MET exit 0 but report.json says \"TIME_LIMIT\" exit 1"),
            "{f:?}"
        );
    }

    #[test]
    fn an_injected_errno_that_ends_the_run_is_named_in_the_report() {
        let mut r = report("UNRECOVERABLE_ERROR", 4);
        r.detail = Some("checkpoint write failed".into());
        let stdout = "ending     UNRECOVERABLE_ERROR (FAILURE, exit 4, alert)\n";
        let mut pr = exited(4, stdout, Some(r.clone()), None);
        pr.fault_fired = Some(5);
        let f = findings(&pr);
        assert!(
            f.iter().any(|d| d.starts_with(
                "an injected errno 5 ended the run UNRECOVERABLE_ERROR without naming it"
            )),
            "{f:?}"
        );
        r.detail = Some("checkpoint write failed: Input/output error (os error 5)".into());
        pr.published = Some(Ok(r));
        assert_eq!(findings(&pr), Vec::<String>::new());
    }
}
