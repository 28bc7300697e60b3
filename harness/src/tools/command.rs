//! The tools that start a process: run_check (a check the spec names) and
//! run_command (a program the spec allows, with the model's arguments),
//! both through crate::check's one confined spawn path.

use super::*;

impl ToolBox<'_> {
    pub(super) fn run_check(&self, name: &str) -> Observation {
        let Some(spec) = self.checks.get(name) else {
            return Observation::err(format!(
                "run_check: no check named {:?}; defined checks: {}",
                clip(name),
                self.check_names()
            ));
        };
        let r = crate::check::run_check_by(spec, self.workspace.root(), self.deadline);
        let (status, code) = check_status(&r);
        // A failing check is a result, not a tool error: the tool worked.
        Observation::ok(format!(
            "check {name}: {status}; exit code: {code}\n--- output (tail) ---\n{}",
            r.output
        ))
    }

    /// Run the model's argv with the workspace as working directory, under
    /// the checks' confinement (one spawn path: crate::check).
    pub(super) fn run_command(&self, argv: &[String]) -> Observation {
        let Some(policy) = self.command else {
            return Observation::err(
                "run_command: the spec lists no program it may run ([tools.run_command] programs); nothing was run".into(),
            );
        };
        let allowed = || policy.programs.join(", ");
        let Some(prog) = argv.first() else {
            return Observation::err(format!(
                "run_command: `argv` is empty; give the program and its arguments, e.g. [\"{}\"]",
                policy
                    .programs
                    .first()
                    .map(String::as_str)
                    .unwrap_or("python3")
            ));
        };
        if argv.len() > RUN_COMMAND_MAX_ARGS {
            return Observation::err(format!(
                "run_command: {} arguments, over the limit of {RUN_COMMAND_MAX_ARGS}; nothing was run",
                argv.len()
            ));
        }
        let bytes: usize = argv.iter().map(|a| a.len() + 1).sum();
        if bytes > RUN_COMMAND_MAX_ARGV_BYTES {
            return Observation::err(format!(
                "run_command: the arguments are {bytes} bytes, over the {RUN_COMMAND_MAX_ARGV_BYTES}-byte limit; nothing was run"
            ));
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Observation::err(
                "run_command: an argument contains a NUL byte; nothing was run".into(),
            );
        }
        // Deny by default: argv[0] exactly as the spec lists it (a bare name
        // looked up on the checks' PATH, which holds absolute entries only).
        if !policy.programs.iter().any(|p| p == prog) {
            return Observation::err(format!(
                "run_command: program {:?} is not allowed; allowed programs: {}; nothing was run",
                clip(prog),
                allowed()
            ));
        }
        let spec = CheckSpec {
            command: argv.to_vec(),
            timeout_s: policy.timeout_s,
            env: policy.env.clone(),
            network: false,
        };
        let r = crate::check::run_model_command_by(&spec, self.workspace.root(), self.deadline);
        let (status, code) = check_status(&r);
        let shown = clip(&argv.join(" "));
        let text = format!(
            "command `{shown}`: {status}; exit code: {code}\n--- output (tail) ---\n{}",
            r.output
        );
        // It may have written in the workspace whatever its exit: a side
        // effect. One that could not start is a tool error (nothing ran).
        let mut o = if r.could_not_run && r.exit_code.is_none() {
            Observation::err(text)
        } else {
            Observation::ok(text)
        };
        o.side_effect = !(r.could_not_run && r.exit_code.is_none());
        o
    }
}

/// How a confined command ended, in words, and its exit code: run_check's
/// and run_command's status line.
fn check_status(r: &crate::check::CheckResult) -> (String, String) {
    let status = if r.passed {
        "passed".to_string()
    } else if r.cut_by_stop {
        "NOT FINISHED (the run was asked to stop)".to_string()
    } else if r.cut_by_run_clock {
        "NOT FINISHED (the run's wall clock ran out)".to_string()
    } else if r.timed_out {
        "FAILED (timed out)".to_string()
    } else {
        match r.exit_code {
            Some(c) => format!("FAILED (exit code {c})"),
            None => "FAILED (killed or did not start)".to_string(),
        }
    };
    let code = r
        .exit_code
        .map(|c| c.to_string())
        .unwrap_or_else(|| "none".into());
    (status, code)
}
