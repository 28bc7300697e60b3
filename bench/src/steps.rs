//! `[[step]]` (crate::suite::Step): a further `harness run` of a case-run,
//! judged on its own as the gate `step`. A step is what a person does next
//! to a run: run the same command again after it ended, resume it under a
//! changed goal, raise a limit, start a second harness beside a running one.
//! Each says what the harness must answer: its exit code, words of its
//! output, and which events it must not add to the run's events.jsonl
//! (`resume`, `start`: it ran the run again).

use crate::score::{Check, CheckKind};
use crate::suite::Step;
use harness::invocation::HarnessInvocation;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Where a case-run's steps run: its command, directories and bound.
#[derive(Clone)]
pub struct StepCtx {
    pub harness_bin: PathBuf,
    /// The case-run's own `harness run` (its environment, model, run index).
    pub inv: HarnessInvocation,
    /// The case-run's directory (a step's `state_dir` is relative to it).
    pub run_dir: PathBuf,
    /// The case's private copy (run.toml, workspace/).
    pub case_copy: PathBuf,
    /// The case-run's state dir.
    pub state: PathBuf,
    /// The bound on one harness process.
    pub limit: Duration,
}

/// Run `steps` (numbered as in case.toml) one after the other.
pub async fn run(ctx: &StepCtx, steps: &[(usize, &Step)]) -> Vec<Check> {
    let mut out = Vec::with_capacity(steps.len());
    for (n, s) in steps {
        out.push(run_one(ctx, *n, s).await);
    }
    out
}

fn gate(n: usize, passed: bool, detail: String) -> Check {
    Check {
        name: format!("step[{n}]"),
        kind: CheckKind::Gate,
        passed,
        detail,
    }
}

async fn run_one(ctx: &StepCtx, n: usize, s: &Step) -> Check {
    let spec = match spec_for(ctx, n, s) {
        Ok(p) => p,
        Err(e) => {
            return gate(
                n,
                false,
                format!("the bench could not write the step's spec: {e}"),
            )
        }
    };
    let state = match &s.state_dir {
        Some(d) => ctx.run_dir.join(d),
        None => ctx.state.clone(),
    };
    let events_before = event_kinds(&ctx.state).len();
    let mut cmd = (ctx.inv.clone())
        .with_spec(&spec)
        .with_state_dir(&state)
        .command(&ctx.harness_bin);
    cmd.args(&s.args);
    // Its own process group, like every harness the bench runs (case_run/process.rs).
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return gate(
                n,
                false,
                format!("cannot start {}: {e}", ctx.harness_bin.display()),
            )
        }
    };
    let _running = child.id().map(crate::interrupt::Child::register);
    let out = match tokio::time::timeout(ctx.limit, child.wait_with_output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => {
            return gate(
                n,
                false,
                format!("the step's harness could not be waited for: {e}"),
            )
        }
        Err(_) => {
            return gate(
                n,
                false,
                format!(
                    "the step's harness ran past {:.0}s and was killed",
                    ctx.limit.as_secs_f64()
                ),
            )
        }
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut added = event_kinds(&ctx.state);
    let added = added.split_off(events_before.min(added.len()));
    judge(n, s, out.status.code(), &said, &added)
}

/// The verdict on one step's exit, output and added events.
fn judge(n: usize, s: &Step, code: Option<i32>, said: &str, added: &[String]) -> Check {
    let mut wrong = vec![];
    if code != Some(s.exit) {
        wrong.push(format!("exited {code:?}, not {}", s.exit));
    }
    for t in &s.output_contains {
        if !said.contains(t.as_str()) {
            wrong.push(format!("its output lacks {t:?}"));
        }
    }
    for k in &s.no_new_events {
        if added.iter().any(|a| a == k) {
            wrong.push(format!("it added a {k:?} event to events.jsonl"));
        }
    }
    let what = format!(
        "harness run {}{}{}",
        s.args.join(" "),
        s.state_dir
            .as_deref()
            .map_or(String::new(), |d| format!(" (state dir {d})")),
        if s.spec.is_empty() {
            String::new()
        } else {
            format!(" (spec: {:?} replaced)", s.spec.keys().collect::<Vec<_>>())
        }
    );
    let tail = tail(said.trim(), STEP_OUTPUT_TAIL_CHARS);
    match wrong.is_empty() {
        true => gate(n, true, format!("{what}: exit {}, as expected", s.exit)),
        false => gate(
            n,
            false,
            format!("{what}: {}; output: {tail}", wrong.join("; ")),
        ),
    }
}

/// How much of a failed step's output its check quotes, in characters.
const STEP_OUTPUT_TAIL_CHARS: usize = 600;

/// The last `max` characters of `s`.
fn tail(s: &str, max: usize) -> &str {
    let n = s.chars().count();
    match s.char_indices().nth(n.saturating_sub(max)) {
        Some((i, _)) if n > max => &s[i..],
        _ => s,
    }
}

/// run.toml as the step runs it: the case's own, or a copy beside it with
/// the step's keys replaced (beside it, so its relative paths mean the same).
fn spec_for(ctx: &StepCtx, n: usize, s: &Step) -> Result<PathBuf, SpecCopyError> {
    let own = ctx.case_copy.join("run.toml");
    if s.spec.is_empty() {
        return Ok(own);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| SpecCopyError::Io { path, cause }
    };
    let text = std::fs::read_to_string(&own).map_err(io(&own))?;
    let mut t: toml::Table = text.parse().map_err(|cause| SpecCopyError::Toml {
        path: own.clone(),
        cause: Box::new(cause),
    })?;
    for (k, v) in &s.spec {
        t.insert(k.clone(), toml::Value::String(v.clone()));
    }
    let p = ctx.case_copy.join(format!("run-step-{n}.toml"));
    std::fs::write(&p, t.to_string()).map_err(io(&p))?;
    Ok(p)
}

/// Why a step's run.toml could not be written beside the case's own.
#[derive(Debug, thiserror::Error)]
enum SpecCopyError {
    #[error("{}: {cause}", path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {cause}", path.display())]
    Toml {
        path: PathBuf,
        cause: Box<toml::de::Error>,
    },
}

/// The `kind` of every line of the state dir's events.jsonl, in order.
fn event_kinds(state: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(state.join("events.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(exit: i32) -> Step {
        Step {
            when: crate::suite::StepWhen::After,
            args: vec![],
            spec: Default::default(),
            state_dir: None,
            exit,
            output_contains: vec!["QUEUE_EMPTY_GOAL_UNMET".into()],
            no_new_events: vec!["resume".into()],
        }
    }

    #[test]
    fn a_step_passes_only_on_its_exit_its_words_and_no_forbidden_event() {
        let s = step(3);
        let said = "ending QUEUE_EMPTY_GOAL_UNMET";
        assert!(judge(0, &s, Some(3), said, &["rereport".into()]).passed);
        let wrong_exit = judge(0, &s, Some(0), said, &[]);
        assert!(!wrong_exit.passed && wrong_exit.detail.contains("exited Some(0), not 3"));
        assert!(!judge(0, &s, Some(3), "ending GOAL_MET", &[]).passed);
        let ran_again = judge(0, &s, Some(3), said, &["resume".into()]);
        assert!(!ran_again.passed && ran_again.detail.contains("\"resume\" event"));
        assert!(!judge(0, &s, None, said, &[]).passed, "killed by a signal");
    }

    #[test]
    fn the_tail_keeps_the_last_characters() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("ééé", 2), "éé");
    }
}
