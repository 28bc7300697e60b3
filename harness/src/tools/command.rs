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
        if let Err(o) = check_argv(policy, argv) {
            return o;
        }
        let spec = CheckSpec {
            command: argv.to_vec(),
            timeout_s: policy.timeout_s,
            env: policy.env.clone(),
            network: false,
        };
        // What it writes is the task's work too (its commit holds it): the
        // workspace's files before and after, as the file tools see them.
        let before = workspace_files(self.workspace.root());
        let r = crate::check::run_model_command_by(&spec, self.workspace.root(), self.deadline);
        let after = workspace_files(self.workspace.root());
        let (status, code) = check_status(&r);
        let shown = clip(&argv.join(" "));
        let changed = changed_paths(&before, &after);
        let cut = if before.cut || after.cut {
            format!("\n(the workspace has over {WORKSPACE_SCAN_MAX_FILES} files: what this command changed is listed up to there only)")
        } else {
            String::new()
        };
        let text = format!(
            "command `{shown}`: {status}; exit code: {code}; files changed in the workspace: {}{cut}\n--- output (tail) ---\n{}",
            changed.len(),
            r.output
        );
        // It may have written in the workspace whatever its exit: a side
        // effect. One that could not start is a tool error (nothing ran).
        let mut o = if r.could_not_run && r.exit_code.is_none() {
            Observation::err(text)
        } else {
            Observation::ok(text)
        };
        o.side_effect = !(r.could_not_run && r.exit_code.is_none()) || !changed.is_empty();
        o.wrote = changed;
        o
    }
}

/// The model's argv before anything runs: not empty, bounded, no NUL, and
/// its program one the spec allows (deny by default).
fn check_argv(policy: &CommandPolicy, argv: &[String]) -> Result<(), Observation> {
    let allowed = || policy.programs.join(", ");
    let Some(prog) = argv.first() else {
        return Err(Observation::err(format!(
            "run_command: `argv` is empty; give the program and its arguments, e.g. [\"{}\"]",
            policy
                .programs
                .first()
                .map(String::as_str)
                .unwrap_or("python3")
        )));
    };
    if argv.len() > RUN_COMMAND_MAX_ARGS {
        return Err(Observation::err(format!(
            "run_command: {} arguments, over the limit of {RUN_COMMAND_MAX_ARGS}; nothing was run",
            argv.len()
        )));
    }
    let bytes: usize = argv.iter().map(|a| a.len() + 1).sum();
    if bytes > RUN_COMMAND_MAX_ARGV_BYTES {
        return Err(Observation::err(format!(
                "run_command: the arguments are {bytes} bytes, over the {RUN_COMMAND_MAX_ARGV_BYTES}-byte limit; nothing was run"
            )));
    }
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(Observation::err(
            "run_command: an argument contains a NUL byte; nothing was run".into(),
        ));
    }
    // Deny by default: argv[0] exactly as the spec lists it (a bare name
    // looked up on the checks' PATH, which holds absolute entries only).
    if !policy.programs.iter().any(|p| p == prog) {
        return Err(Observation::err(format!(
            "run_command: program {:?} is not allowed; allowed programs: {}; nothing was run",
            clip(prog),
            allowed()
        )));
    }
    Ok(())
}

/// Files of the workspace compared around one run_command.
pub const WORKSPACE_SCAN_MAX_FILES: usize = 20_000;

/// Each file and symlink of the workspace by its relative path, with what a
/// write, a rename or a new link changes (inode, size, mtime, ctime); no
/// symlink followed, `.git` left out, at most WORKSPACE_SCAN_MAX_FILES.
struct WorkspaceFiles {
    files: BTreeMap<String, (u64, u64, i128, i128)>,
    cut: bool,
}

fn workspace_files(root: &std::path::Path) -> WorkspaceFiles {
    use std::os::unix::fs::MetadataExt;
    let mut out = WorkspaceFiles {
        files: BTreeMap::new(),
        cut: false,
    };
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.eq_ignore_ascii_case(".git") {
                continue;
            }
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push((e.path(), r));
                continue;
            }
            if out.files.len() >= WORKSPACE_SCAN_MAX_FILES {
                out.cut = true;
                return out;
            }
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            out.files.insert(
                r,
                (
                    m.ino(),
                    m.len(),
                    ns(m.mtime(), m.mtime_nsec()),
                    ns(m.ctime(), m.ctime_nsec()),
                ),
            );
        }
    }
    out
}

/// Paths added, changed or removed between two walks, sorted.
fn changed_paths(before: &WorkspaceFiles, after: &WorkspaceFiles) -> Vec<String> {
    let mut out: Vec<String> = after
        .files
        .iter()
        .filter(|(p, id)| before.files.get(*p) != Some(id))
        .map(|(p, _)| p.clone())
        .chain(
            before
                .files
                .keys()
                .filter(|p| !after.files.contains_key(*p))
                .cloned(),
        )
        .collect();
    out.retain(|p| {
        !crate::mutants::active(crate::mutants::Mutant::CommandCommitsCreatedOnly)
            || !before.files.contains_key(p)
    });
    out.sort();
    out.dedup();
    out
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
