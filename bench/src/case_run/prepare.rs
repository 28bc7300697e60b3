//! Everything before the first harness process starts: the case's private
//! copy (spec, workspace, checks) with the overlay laid on it, its git base,
//! its `[setup]` fixtures, the audit's first look and canaries, the
//! harness's confined environment and invocation, and the `Schedule`.

use super::process::process_limit;
use super::{CaseRun, Interrupted, Prepared, Raised, Schedule, Target};
use crate::audit::{self, Canary};
use crate::spec_overlay::Overlay;
use harness::invocation::{HarnessInvocation, ModelSource};
use std::path::{Path, PathBuf};
use std::time::Duration;

impl<'a> CaseRun<'a> {
    /// The case's private copy, audited and set up, the invocation of the
    /// harness on it, and which processes run it.
    pub(super) async fn prepare(
        &self,
        overlay: &Overlay,
    ) -> Result<(Prepared, Schedule<'a>), Box<crate::record::RunRecord>> {
        let _ = std::fs::remove_dir_all(&self.dir);
        let case_copy = self.dir.join("case");
        self.copy_case(&case_copy)?;
        self.lay_overlay(overlay, &case_copy)?;
        let ws = case_copy.join("workspace");
        self.init_git(&ws)?;
        // The audit (every case-run): read the spec, plant the sentinel,
        // snapshot what lies outside the workspace.
        let mut gathered = audit::Gathered::default();
        if let Err(e) = gathered.before_run(&case_copy) {
            return Err(self.setup_fault(e));
        }
        // Fixtures git cannot hold, made after the sentinel is planted (a
        // hard link may name it).
        if let Some(st) = &self.case.file.setup {
            if let Err(e) = apply_setup(&case_copy, st) {
                return Err(self.setup_fault(format!("setup: {e}")));
            }
        }
        let served = match self.target {
            Target::Replay(server) => server.served_run(self.run),
            Target::Live(_) => self.run,
        };
        let (base, env_remove, session) = self.endpoint(&case_copy)?;
        let (case, run) = (self.case, self.run);
        let key_env = (gathered.spec.as_ref()).and_then(|s| s.api_key_env.as_deref());
        gathered.canaries =
            audit::canaries(key_env, case.id(), run, &env_remove, &case.file.harness_env);
        let state = self.dir.join("state");
        let limit = process_limit(gathered.spec.as_ref().map(|s| s.wall_clock_limit_s));
        let inv = HarnessInvocation::run(
            case_copy.join("run.toml"),
            &state,
            ModelSource::BaseUrl(base),
        )
        .run_index(run)
        .env(harness::events::STARTED_BY_ENV, self.started_by(overlay));
        let (inv, watched) = self.confine(inv, &env_remove, overlay, &mut gathered)?;
        let schedule = self.schedule(&inv, limit).await?;
        let p = Prepared {
            case_copy,
            ws,
            state,
            served,
            session,
            gathered,
            watched,
            limit,
            inv,
            step_checks: vec![],
        };
        Ok((p, schedule))
    }

    /// The case's `[interrupt]` or `[raise]`, made ready to run: the hooked
    /// harness found, the raising command built.
    async fn schedule(
        &self,
        inv: &HarnessInvocation,
        limit: Duration,
    ) -> Result<Schedule<'a>, Box<crate::record::RunRecord>> {
        let file = &self.case.file;
        match (&file.interrupt, &file.raise) {
            (None, None) => Ok(Schedule::Plain),
            (Some(interrupt), None) => {
                let hooked = super::pause::hooked_harness(self.harness_bin)
                    .await
                    .map_err(|e| self.setup_fault(format!("interrupt at {}: {e}", interrupt.at)))?;
                Ok(Schedule::Interrupted(Interrupted { interrupt, hooked }))
            }
            (None, Some(raise)) => {
                let Some((inv, limit, want)) = raise_invocation(inv, raise, limit) else {
                    return Err(self.setup_fault("[raise]: no limit to raise"));
                };
                let raise = *raise;
                Ok(Schedule::Raised(Raised {
                    raise,
                    inv,
                    limit,
                    want,
                }))
            }
            // The suite loader refuses such a case (one second run per case).
            (Some(_), Some(_)) => {
                Err(self.setup_fault("[raise] with [interrupt]: one second run per case"))
            }
        }
    }

    /// Copy the case (spec, workspace, checks) into the case-run's own
    /// directory, so nothing the run does reaches the suite.
    fn copy_case(&self, case_copy: &Path) -> Result<(), Box<crate::record::RunRecord>> {
        for part in ["run.toml", "workspace", "checks"] {
            let src = self.case.dir.join(part);
            if !src.exists() {
                continue;
            }
            let r = if src.is_dir() {
                harness::workspace::copy_tree(&src, &case_copy.join(part))
            } else {
                std::fs::create_dir_all(case_copy)
                    .and_then(|_| std::fs::copy(&src, case_copy.join(part)).map(|_| ()))
            };
            if let Err(e) = r {
                return Err(self.setup_fault(format!("cannot copy {}: {e}", src.display())));
            }
        }
        Ok(())
    }

    /// Lay the arm's or level's settings over the copied run.toml.
    fn lay_overlay(
        &self,
        overlay: &Overlay,
        case_copy: &Path,
    ) -> Result<(), Box<crate::record::RunRecord>> {
        if overlay.is_empty() {
            return Ok(());
        }
        let p = case_copy.join("run.toml");
        let applied = std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| overlay.apply(&t).map_err(|e| e.to_string()));
        applied
            .and_then(|t| std::fs::write(&p, t).map_err(|e| e.to_string()))
            .map_err(|e| self.setup_fault(format!("overlay on {}: {e}", p.display())))
    }

    /// A case that wants its workspace under git gets one commit of it
    /// before the run, the base its branch is compared with.
    fn init_git(&self, ws: &Path) -> Result<(), Box<crate::record::RunRecord>> {
        if self.case.file.workspace_git != Some(true) {
            return Ok(());
        }
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &["commit", "-q", "--allow-empty", "-m", "before the run"],
        ] {
            if let Err(e) = git(ws, args) {
                return Err(self.setup_fault(format!("git {args:?}: {e}")));
            }
        }
        Ok(())
    }

    /// Where the harness's model calls go (`--base-url`), the key variables
    /// taken out of its environment, and a live case-run's session.
    fn endpoint(
        &self,
        case_copy: &Path,
    ) -> Result<(String, Vec<String>, Option<crate::live::Session>), Box<crate::record::RunRecord>>
    {
        match self.target {
            Target::Replay(server) => {
                let mut base = server.base_url_for(self.case.id(), self.run);
                if self.case.cassette.protocol == harness::model::types::Protocol::Openai {
                    base.push_str("/v1");
                }
                Ok((base, vec![], None))
            }
            Target::Live(live) => {
                match live.begin(self.case, self.run, &case_copy.join("run.toml")) {
                    Ok(s) => Ok((s.base_url.clone(), s.env_remove.clone(), Some(s))),
                    Err(e) => Err(self.setup_fault(format!("live: {e}"))),
                }
            }
        }
    }

    /// What the run page's Next gives for this case-run instead of the
    /// harness command the bench ran (its `--base-url` is the bench's replay
    /// server or live proxy, gone once the bench exits): the bench command
    /// that reproduces it, as JSON of `harness::events::StartedBy`.
    fn started_by(&self, overlay: &Overlay) -> String {
        let dir = std::path::absolute(&self.case.dir).unwrap_or_else(|_| self.case.dir.clone());
        let how = match self.target {
            Target::Replay(_) => "against its replay server",
            Target::Live(_) => {
                "through its live proxy (this command replays the case's recording instead)"
            }
        };
        let mut say = format!(
            "This case-run was started by the bench {how}. Reproduce it the way the bench runs it (a fresh copy of the case, its recording, every check and the audit):"
        );
        if self.run > 0 {
            say.push_str(&format!(
                " try-case runs run 0; this was run {}, which `bench run --case {} --runs-per-case {}` also runs.",
                self.run,
                self.case.id(),
                self.run + 1
            ));
        }
        if !(overlay.table.is_empty() && overlay.budget_scale.is_none()) {
            say.push_str(" The config this case-run laid over run.toml (a `bench ab` arm or a `bench knee` level) is not laid by try-case.");
        }
        let started = harness::events::StartedBy {
            say,
            argv: vec!["bench".into(), "try-case".into(), dir.display().to_string()],
        };
        serde_json::to_string(&started).unwrap_or_default()
    }

    /// The harness's environment: key variables removed, the audit's fake
    /// keys set, its own HOME (with planted secrets) and TMPDIR, then what
    /// the case and the overlay ask for. Returns the invocation and every
    /// canary its output is scanned for.
    fn confine(
        &self,
        mut inv: HarnessInvocation,
        env_remove: &[String],
        overlay: &Overlay,
        gathered: &mut audit::Gathered,
    ) -> Result<(HarnessInvocation, Vec<Canary>), Box<crate::record::RunRecord>> {
        let private = crate::private_dirs::PrivateDirs::make(&self.dir, self.case.id(), self.run)
            .map_err(|e| self.setup_fault(e))?;
        let watched: Vec<Canary> = (gathered.canaries.iter())
            .chain(&private.canaries)
            .cloned()
            .collect();
        for name in env_remove {
            inv = inv.env_remove(name);
        }
        // The audit's secret canary: fake keys in every key variable; none
        // may reach a file, a request body or the process's output.
        for c in gathered.canaries.iter().filter(|c| c.in_env) {
            inv = inv.env(&c.var, &c.value);
        }
        let path = private.path_with_tool_dir(&std::env::var_os("PATH").unwrap_or_default());
        inv = inv
            .env("HOME", private.home.display().to_string())
            .env("TMPDIR", private.tmp.display().to_string())
            .env("PATH", path.to_string_lossy().into_owned());
        gathered.private = Some(private);
        // What the case asks for (`harness_env`) comes after the removal.
        let env_set = (self.case.file.harness_env.iter())
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(overlay.harness_env.iter().cloned());
        for (k, v) in env_set {
            inv = inv.env(k, v);
        }
        Ok((inv, watched))
    }
}

/// git on the case's own committed files, before the harness starts: no
/// system or global config, no hooks (docs/sandbox.md).
fn git(ws: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    std::process::Command::new("git")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(ws)
        .output()
}

/// A `[setup]` fixture that could not be made.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error("mkfifo {}: {source}", .path.display())]
    Fifo { path: PathBuf, source: nix::Error },
    #[error("{}: {source}", .link.display())]
    RemoveLink {
        link: PathBuf,
        source: std::io::Error,
    },
    #[error("ln {} {}: {source}", .target.display(), .link.display())]
    HardLink {
        target: PathBuf,
        link: PathBuf,
        source: std::io::Error,
    },
}

/// Make the case's `[setup]` fixtures in the case copy.
fn apply_setup(case_copy: &Path, st: &crate::suite::Setup) -> Result<(), SetupError> {
    for f in &st.fifos {
        let path = case_copy.join(f);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).map_err(
            |source| SetupError::Fifo {
                path: path.clone(),
                source,
            },
        )?;
    }
    for h in &st.hard_links {
        let (link, target) = (case_copy.join(&h.link), case_copy.join(&h.target));
        if link.exists() {
            std::fs::remove_file(&link).map_err(|source| SetupError::RemoveLink {
                link: link.clone(),
                source,
            })?;
        }
        std::fs::hard_link(&target, &link).map_err(|source| SetupError::HardLink {
            target: target.clone(),
            link: link.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The raising command (`--raise-cap-usd` or `--raise-wall-clock-s`), its
/// process limit (a raised clock is its wall clock) and the ending the
/// first run must have reached for the raise to be taken.
fn raise_invocation(
    inv: &HarnessInvocation,
    r: &crate::suite::Raise,
    limit: Duration,
) -> Option<(HarnessInvocation, Duration, harness::ending::Ending)> {
    use harness::ledger::LimitKind;
    let (kind, to, _) = r.limit()?;
    let raised = match kind {
        LimitKind::HardCapUsd => (inv.clone().raise_cap_usd(to), limit),
        LimitKind::WallClockLimitS => (inv.clone().raise_wall_clock_s(to), process_limit(Some(to))),
    };
    Some((raised.0, raised.1, r.first_ending()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation() -> HarnessInvocation {
        HarnessInvocation::run(
            "run.toml",
            "state",
            ModelSource::BaseUrl("http://127.0.0.1:1".into()),
        )
    }

    #[test]
    fn a_raise_is_the_same_command_with_the_raise_flag_and_its_clock() {
        use harness::ending::Ending;
        let argv = |inv: &HarnessInvocation| -> Vec<String> {
            inv.args()
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        let base = invocation();
        let limit = Duration::from_secs(7);
        let cap = crate::suite::Raise {
            cap_usd: Some(2.0),
            wall_clock_s: None,
        };
        let (inv, l, want) = raise_invocation(&base, &cap, limit).unwrap();
        assert_eq!(want, Ending::BudgetExhausted);
        assert_eq!(l, limit, "a raised cap keeps the process's clock");
        assert_eq!(argv(&inv)[..argv(&base).len()], argv(&base)[..]);
        assert!(argv(&inv).ends_with(&["--raise-cap-usd".into(), "2".into()]));
        let clock = crate::suite::Raise {
            cap_usd: None,
            wall_clock_s: Some(600.0),
        };
        let (inv, l, want) = raise_invocation(&base, &clock, limit).unwrap();
        assert_eq!(want, Ending::TimeLimit);
        assert_eq!(
            l,
            process_limit(Some(600.0)),
            "the raised clock bounds the process"
        );
        assert!(argv(&inv).ends_with(&["--raise-wall-clock-s".into(), "600".into()]));
        let neither = crate::suite::Raise {
            cap_usd: None,
            wall_clock_s: None,
        };
        assert!(raise_invocation(&base, &neither, limit).is_none());
    }
}
