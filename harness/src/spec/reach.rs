//! The spec's reach checks: nothing a tool can reach (the workspace) may
//! hold the spec, the predicate and check scripts, the outbox, the alerts
//! file or the state dir, however the path is spelled.

use super::validate::Checker;
use super::{CheckSpec, Predicate, RunSpec, SpecError};
use std::path::{Component, Path, PathBuf};

/// Most symlinks [`resolve_for_reach`] follows in one path (the kernel's own
/// limit is 40).
pub const REACH_SYMLINKS_MAX: usize = 40;

/// Where `p` would land if it were created now: absolute (a relative path is
/// taken against the current directory, as the harness will use it), every
/// component that exists resolved (symlinks followed, `..` applied to the
/// resolved directory, as the kernel does), the missing rest appended as
/// written. A `..` after a missing component is refused: what it means
/// depends on what will be created there (`<dir>/missing/../workspace/x`
/// is inside the workspace once `missing` exists, and never outside it), so
/// it cannot be checked. Trailing slashes and `.` change nothing.
pub fn resolve_for_reach(p: &Path) -> Result<PathBuf, String> {
    resolve_counting(p, &mut 0)
}

fn resolve_counting(p: &Path, links: &mut usize) -> Result<PathBuf, String> {
    let abs = std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut cur = PathBuf::from("/");
    let mut missing: Option<PathBuf> = None;
    for c in abs.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => cur = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if let Some(m) = &missing {
                    return Err(format!(
                        "{}: \"..\" after {}, which does not exist (write the path without \"..\")",
                        p.display(),
                        m.display()
                    ));
                }
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                if missing.is_some() {
                    cur = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        *links += 1;
                        if *links > REACH_SYMLINKS_MAX {
                            return Err(format!(
                                "{}: more than {REACH_SYMLINKS_MAX} symlinks",
                                p.display()
                            ));
                        }
                        match std::fs::canonicalize(&next) {
                            Ok(t) => cur = t,
                            // A dangling link: it would be created where it points.
                            Err(_) => {
                                let target = std::fs::read_link(&next)
                                    .map_err(|e| format!("{}: {e}", next.display()))?;
                                let joined = if target.is_absolute() {
                                    target
                                } else {
                                    cur.join(target)
                                };
                                cur = resolve_counting(&joined, links)?;
                                missing = Some(next);
                            }
                        }
                    }
                    Ok(_) => cur = next,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        missing = Some(next.clone());
                        cur = next;
                    }
                    Err(e) => return Err(format!("{}: {e}", next.display())),
                }
            }
        }
    }
    Ok(cur)
}

impl RunSpec {
    /// Nothing a tool can reach may hold the predicate, the checks, the spec,
    /// the outbox or the alerts file: tools act inside the workspace only, so
    /// none of those may live inside it. Every path is compared after
    /// [`resolve_for_reach`] (every existing ancestor resolved, `..` after a
    /// missing component refused), so no spelling slips one inside.
    pub(super) fn check_reach(&self, r: &Checker) -> Result<(), SpecError> {
        let ws = resolve_for_reach(&self.workspace)
            .map_err(|e| r.err("workspace", format!("a path that can be checked: {e}")))?;
        let inside = |field: &str, p: &Path| -> Result<bool, SpecError> {
            resolve_for_reach(p)
                .map(|c| c.starts_with(&ws))
                .map_err(|e| r.err(field, format!("a path that can be checked: {e}")))
        };
        if inside("workspace", &self.path)? {
            return Err(r.err(
                "workspace",
                "a directory that does not contain the spec file (a tool could rewrite it)",
            ));
        }
        let mut cmds: Vec<(String, &CheckSpec)> = self
            .checks
            .iter()
            .map(|(n, c)| (format!("checks.{n}.command"), c))
            .collect();
        if let Predicate::Command(c) = &self.predicate {
            cmds.push(("predicate.command".into(), c));
        }
        for (field, c) in cmds {
            for (i, a) in c.command.iter().enumerate() {
                let p = Path::new(a);
                let f = format!("{field}[{i}]");
                if p.is_absolute() && inside(&f, p)? {
                    return Err(r.err(&f, "a program or script outside the workspace (the agent's tools could rewrite anything inside it)"));
                }
            }
        }
        let outbox_checked = !crate::mutants::active(crate::mutants::Mutant::OutboxInWorkspace);
        if let Some(o) = self.outbox.as_ref().filter(|_| outbox_checked) {
            if inside("outbox", o)? {
                return Err(r.err("outbox", "a path outside the workspace"));
            }
        }
        if let Some(f) = &self.alerts.file {
            if inside("alerts.file", f)? {
                return Err(r.err("alerts.file", "a path outside the workspace"));
            }
        }
        Ok(())
    }

    /// The state dir must also be out of the tools' reach, however it is
    /// spelled (relative, through a symlink, with `..`, with a trailing slash).
    pub fn check_state_dir(&self, state_dir: &Path) -> Result<(), SpecError> {
        let bad = |expected: String| SpecError {
            file: "--state-dir".into(),
            field: "state_dir".into(),
            expected,
        };
        let ws = resolve_for_reach(&self.workspace)
            .map_err(|e| bad(format!("a workspace path that can be checked: {e}")))?;
        let sd = resolve_for_reach(state_dir)
            .map_err(|e| bad(format!("a directory path that can be checked: {e}")))?;
        if sd.starts_with(&ws) {
            return Err(bad(format!("a directory outside the workspace {} (no tool may reach the checkpoints or the ledger)", ws.display())));
        }
        Ok(())
    }
}
