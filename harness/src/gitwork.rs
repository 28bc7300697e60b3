//! One commit per verified task on a run branch. The harness shells out to
//! the `git` binary rather than linking a library: it is what the operator
//! will use to inspect the result, so both see the same repository.
//!
//! **The harness never runs a program the workspace configures.** A check
//! may write anywhere in the workspace, `.git/` included: a filter, a hook,
//! `core.fsmonitor`, an `include` or a diff driver planted there would run
//! as the harness, unconfined, the next time git touches the repository.
//! So the task commits go to a git dir of the harness's own, `<state>/git`
//! ([`STATE_GIT_DIR`]), with the workspace as its work tree: no check can
//! reach the state dir, so its config is only what the harness wrote. It is
//! filled once, when a run first starts, from the workspace's own `.git`,
//! through `git fetch` (whose reading side, `upload-pack`, git documents as
//! safe to run on an untrusted repository); that `.git` is never used
//! again. Every invocation also runs with no system or global config
//! (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, no system
//! attributes), hooks and fsmonitor off, identity and signing fixed,
//! automatic gc off (it could outlive the call and hold our pipes), and an
//! explicit environment (PATH and LANG; never the harness's own), so
//! neither an API key nor an inherited `GIT_DIR` / `GIT_INDEX_FILE`
//! reaches it. A `.gitattributes` in the work tree can name a filter or a
//! driver, but none is defined in a config git reads, so none runs.
//!
//! The operator reads the run's commits with
//! `git --git-dir <state>/git log <branch>`, or brings them into the
//! workspace's repository with `git -C <workspace> fetch <state>/git <branch>`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a single git command may run before it is killed.
pub const GIT_TIMEOUT_S: u64 = 120;
/// Most bytes kept from a git command's stdout / stderr each.
pub const GIT_OUTPUT_MAX_BYTES: usize = 1024 * 1024;
/// Longest branch name accepted.
pub const BRANCH_MAX_CHARS: usize = 200;
/// Longest task id accepted in a commit trailer.
pub const TASK_ID_MAX_CHARS: usize = 128;
/// Longest commit subject line (the description's first line is cut to fit).
pub const COMMIT_SUBJECT_MAX_CHARS: usize = 200;
/// Most commits `commits_for_task` looks at.
pub const TASK_COMMITS_MAX: usize = 1000;
/// Most paths one task's commit may name: they go on git's command line. A
/// task that wrote more is not committed (the run reports the git error).
pub const COMMIT_PATHS_MAX: usize = 1000;
/// The trailer that ties a commit to a task; resume searches for it.
pub const TASK_TRAILER: &str = "Harness-Task";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("invalid branch name {name:?}: {reason}")]
    InvalidBranch { name: String, reason: String },
    #[error("invalid task id {id:?}: {reason}")]
    InvalidTaskId { id: String, reason: String },
    #[error("cannot run git {args}: {detail}")]
    Spawn { args: String, detail: String },
    #[error("git {args} timed out after {GIT_TIMEOUT_S}s")]
    Timeout { args: String },
    #[error("the run branch {want:?} is not checked out (HEAD is {found:?}): nothing is committed onto another branch")]
    WrongBranch { want: String, found: Option<String> },
    #[error("a task wrote {n} paths, over the {COMMIT_PATHS_MAX}-path commit limit")]
    TooManyPaths { n: usize },
    #[error("git {args} failed (exit code {code:?}): {stderr}")]
    Failed {
        args: String,
        code: Option<i32>,
        stderr: String,
    },
}

/// The harness's own git dir, under the run's state dir.
pub const STATE_GIT_DIR: &str = "git";

#[derive(Debug, Clone)]
pub struct GitWork {
    /// The work tree: the workspace.
    root: PathBuf,
    /// The repository: `<state>/git`, or (only as the `git-in-workspace`
    /// test variant) the workspace's own `.git`.
    git_dir: PathBuf,
    /// Whether git may read configuration beyond the git dir's own (only
    /// the test variant, as before issue 46).
    host_config: bool,
}

struct GitOut {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl GitWork {
    /// The repository a run commits to, for the workspace `root` and the
    /// run's `state_dir`: `<state>/git` when it exists (a resume: the
    /// workspace's `.git`, which checks could write, is not read again);
    /// otherwise, when the workspace is a repository (`root/.git`), a new
    /// `<state>/git` filled from it ([`GitWork::import`]); otherwise None.
    /// Requiring `.git` at the root (not in a parent) keeps us from
    /// committing the history of some enclosing repository.
    pub fn for_run(root: &Path, state_dir: &Path) -> Result<Option<GitWork>, GitError> {
        if crate::mutants::active(crate::mutants::Mutant::GitInWorkspace) {
            return Ok(GitWork::in_workspace(root));
        }
        if let Some(gw) = GitWork::of_run(root, state_dir) {
            return Ok(Some(gw));
        }
        if !root.join(".git").exists() {
            return Ok(None);
        }
        GitWork::import(root, state_dir).map(Some)
    }

    /// The run's own repository when it exists (the bench reads a run's
    /// commits through it), never the workspace's.
    pub fn of_run(root: &Path, state_dir: &Path) -> Option<GitWork> {
        let git_dir = state_dir.join(STATE_GIT_DIR);
        if crate::mutants::active(crate::mutants::Mutant::GitInWorkspace) {
            return GitWork::in_workspace(root);
        }
        if !git_dir.join("HEAD").exists() {
            return None;
        }
        let gw = GitWork {
            root: root.to_path_buf(),
            git_dir,
            host_config: false,
        };
        gw.readable().then_some(gw)
    }

    /// The workspace's own repository, as git found it before issue 46
    /// (its config, attributes and the host's config all read): only the
    /// `git-in-workspace` test variant and the tests that plant a
    /// repository commit there.
    fn in_workspace(root: &Path) -> Option<GitWork> {
        if !root.join(".git").exists() {
            return None;
        }
        let gw = GitWork {
            root: root.to_path_buf(),
            git_dir: root.join(".git"),
            host_config: true,
        };
        gw.readable().then_some(gw)
    }

    fn readable(&self) -> bool {
        matches!(self.run(&["rev-parse", "--git-dir"]), Ok(o) if o.code == Some(0))
    }

    /// Fill a new `<state>/git` from the workspace's repository: every
    /// branch fetched (git's `upload-pack` reads the workspace's side: it
    /// runs no hook, filter or configured program of that repository),
    /// HEAD set to the branch the workspace has checked out, the index read
    /// from it. Made under a temporary name and renamed into place, so a
    /// killed start leaves no half-filled repository that a resume would
    /// take for the run's.
    fn import(root: &Path, state_dir: &Path) -> Result<GitWork, GitError> {
        let git_dir = state_dir.join(STATE_GIT_DIR);
        let partial = state_dir.join("git.partial");
        let _ = std::fs::remove_dir_all(&partial);
        let mut gw = GitWork {
            root: root.to_path_buf(),
            git_dir: partial.clone(),
            host_config: false,
        };
        let source = root.join(".git");
        let source = source.to_string_lossy();
        gw.run_ok(&["init", "-q", "--template="])?;
        gw.run_ok(&[
            "fetch",
            "-q",
            "--no-tags",
            "--",
            &source,
            "+refs/heads/*:refs/heads/*",
        ])?;
        let head = gw.run_ok(&["ls-remote", "--symref", "--", &source, "HEAD"])?;
        if let Some(branch) = head
            .lines()
            .find_map(|l| l.strip_prefix("ref: refs/heads/"))
            .and_then(|l| l.split('\t').next())
        {
            gw.run_ok(&["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
            gw.run_ok(&["read-tree", "HEAD"])?;
        }
        std::fs::rename(&partial, &git_dir).map_err(|e| GitError::Spawn {
            args: format!("rename {} into place", partial.display()),
            detail: e.to_string(),
        })?;
        gw.git_dir = git_dir;
        Ok(gw)
    }

    /// The repository's directory.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Check out `branch`, creating it from HEAD if it does not exist yet. On
    /// resume the branch exists and this just switches to it (a no-op when
    /// already there), so work continues on the same run branch.
    pub fn ensure_branch(&self, branch: &str) -> Result<(), GitError> {
        self.validate_branch(branch)?;
        if self.current_branch().as_deref() == Some(branch) {
            return Ok(());
        }
        let refname = format!("refs/heads/{branch}");
        let exists = self
            .run(&["rev-parse", "--verify", "--quiet", &refname])?
            .code
            == Some(0);
        // `switch` (unlike `checkout`) never mistakes the name for a path.
        if exists {
            self.run_ok(&["switch", "-q", branch])?;
        } else {
            self.run_ok(&["switch", "-q", "-c", branch])?;
        }
        Ok(())
    }

    /// The checked-out branch, or None when HEAD is detached or git fails.
    pub fn current_branch(&self) -> Option<String> {
        let o = self
            .run(&["symbolic-ref", "--quiet", "--short", "HEAD"])
            .ok()?;
        (o.code == Some(0))
            .then(|| o.stdout.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Commit exactly `paths` (workspace-relative, as the task's tools wrote
    /// them) as the work of `task_id` on `branch`: one commit per verified
    /// task, holding that task's paths and nothing else. Nothing else is
    /// staged: a parked task's edits and changes the operator staged before
    /// the run stay where they are (`commit --only`). A path that neither
    /// exists nor is tracked (written, then removed) is left out. A task with
    /// no file changes (a post) gets an empty commit that says so, so the
    /// morning log lists every verified task. Refused unless `branch` is
    /// checked out: never a commit onto whatever branch HEAD happens to name.
    /// Returns the new commit's sha.
    pub fn commit_task(
        &self,
        task_id: &str,
        description: &str,
        branch: &str,
        paths: &[String],
    ) -> Result<String, GitError> {
        validate_task_id(task_id)?;
        if paths.len() > COMMIT_PATHS_MAX {
            return Err(GitError::TooManyPaths { n: paths.len() });
        }
        let on = self.current_branch();
        if on.as_deref() != Some(branch) {
            return Err(GitError::WrongBranch {
                want: branch.to_string(),
                found: on,
            });
        }
        let kept = self.committable(paths)?;
        let mut changed = false;
        if !kept.is_empty() {
            let mut add = vec!["add", "-A", "--"];
            add.extend(kept.iter().map(String::as_str));
            if crate::mutants::active(crate::mutants::Mutant::CommitEverything) {
                add = vec!["add", "-A"];
            }
            self.run_ok(&add)?;
            let mut diff = vec!["diff", "--cached", "--quiet", "--"];
            diff.extend(kept.iter().map(String::as_str));
            let staged = self.run(&diff)?;
            changed = match staged.code {
                Some(0) => false,
                Some(1) => true,
                code => {
                    return Err(GitError::Failed {
                        args: "diff --cached --quiet".into(),
                        code,
                        stderr: staged.stderr,
                    })
                }
            };
        }
        let first = description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        let subject = if first.is_empty() {
            format!("task {task_id}")
        } else {
            format!("task {task_id}: {first}")
        };
        let subject = clip(&subject, COMMIT_SUBJECT_MAX_CHARS);
        let trailer = format!("{TASK_TRAILER}: {task_id}");
        // verbatim: the default cleanup would drop a subject starting with '#'.
        // --only: exactly the named paths, whatever else the index holds.
        let mut args = vec![
            "commit",
            "-q",
            "--no-verify",
            "--only",
            "--cleanup=verbatim",
            "-m",
            &subject,
        ];
        let note = if paths.is_empty() {
            "No file changes: this task's effect lies outside the workspace (verified by the harness)."
        } else {
            "No file changes: the files this task wrote already held this content (verified by the harness)."
        };
        if changed && crate::mutants::active(crate::mutants::Mutant::CommitEverything) {
            args.retain(|a| *a != "--only");
            args.extend(["-m", &trailer]);
        } else if changed {
            args.extend(["-m", &trailer, "--"]);
            args.extend(kept.iter().map(String::as_str));
        } else {
            args.extend(["--allow-empty", "-m", note, "-m", &trailer]);
        }
        self.run_ok(&args)?;
        Ok(self.run_ok(&["rev-parse", "HEAD"])?.trim().to_string())
    }

    /// The paths of `paths` git can commit: they exist in the work tree, or
    /// git tracks them (a deletion). Sorted, deduplicated.
    fn committable(&self, paths: &[String]) -> Result<Vec<String>, GitError> {
        let mut wanted: Vec<String> = paths.to_vec();
        wanted.sort();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(wanted);
        }
        let mut ls = vec!["ls-files", "-z", "--"];
        ls.extend(wanted.iter().map(String::as_str));
        let tracked_out = self.run_ok(&ls)?;
        let tracked: Vec<&str> = tracked_out.split('\0').filter(|p| !p.is_empty()).collect();
        // An untracked path .gitignore covers is not the task's to commit
        // (`git add` would refuse it): the old `add -A` skipped it too.
        let mut ig = vec![
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--",
        ];
        ig.extend(wanted.iter().map(String::as_str));
        let ignored_out = self.run_ok(&ig)?;
        let ignored: Vec<&str> = ignored_out.split('\0').filter(|p| !p.is_empty()).collect();
        Ok(wanted
            .into_iter()
            .filter(|p| {
                let tracked = tracked.contains(&p.as_str());
                tracked
                    || (!ignored.contains(&p.as_str())
                        && std::fs::symlink_metadata(self.root.join(p)).is_ok())
            })
            .collect())
    }

    /// The commits on `branch` that are not on `base`, oldest first (the
    /// bench counts a run's task commits and reads each one's paths).
    pub fn commits_between(&self, base: &str, branch: &str) -> Result<Vec<String>, GitError> {
        let range = format!("{base}..{branch}");
        let out = self.run_ok(&["rev-list", "--reverse", &range])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// The paths a commit changed against its parent (an empty list for an
    /// empty commit): the bench reads a run's commits through it.
    pub fn commit_paths(&self, sha: &str) -> Result<Vec<String>, GitError> {
        let out = self.run_ok(&[
            "diff-tree",
            "--root",
            "--no-commit-id",
            "--name-only",
            "-r",
            "-z",
            sha,
        ])?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Commits on the current branch whose `Harness-Task` trailer is exactly
    /// `task_id`, newest first. Resume uses this to avoid committing the same
    /// task twice. Any failure (e.g. no commits yet) reads as "none".
    pub fn commits_for_task(&self, task_id: &str) -> Vec<String> {
        if validate_task_id(task_id).is_err() {
            return Vec::new();
        }
        let n = TASK_COMMITS_MAX.to_string();
        let grep = format!("--grep={TASK_TRAILER}: {task_id}");
        let format =
            format!("--format=%H%x1f%(trailers:key={TASK_TRAILER},valueonly,separator=%x1f)%x1e");
        let Ok(o) = self.run(&["log", "-n", &n, "--fixed-strings", &grep, &format]) else {
            return Vec::new();
        };
        if o.code != Some(0) {
            return Vec::new();
        }
        // --grep is a substring match ("t1" would also find "t10"), so the
        // parsed trailer value must match exactly.
        o.stdout
            .split('\x1e')
            .filter_map(|rec| {
                let mut fields = rec.trim_matches(|c| c == '\n' || c == '\r').split('\x1f');
                let sha = fields.next()?.trim();
                let hit = fields.any(|v| v.trim() == task_id);
                (hit && !sha.is_empty()).then(|| sha.to_string())
            })
            .collect()
    }

    fn validate_branch(&self, branch: &str) -> Result<(), GitError> {
        let bad = |reason: &str| GitError::InvalidBranch {
            name: clip(branch, BRANCH_MAX_CHARS),
            reason: reason.into(),
        };
        if branch.is_empty() {
            return Err(bad("empty"));
        }
        if branch.chars().count() > BRANCH_MAX_CHARS {
            return Err(bad("too long"));
        }
        if branch.starts_with('-') {
            return Err(bad("starts with '-'"));
        }
        if branch.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("contains whitespace or control characters"));
        }
        let o = self.run(&["check-ref-format", "--branch", branch])?;
        if o.code != Some(0) {
            return Err(bad(o.stderr.trim()));
        }
        Ok(())
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        // An explicit environment, never the harness's own (no API key, no
        // inherited GIT_* redirect): PATH and LANG as a check gets them.
        cmd.env_clear().envs(
            crate::check::CheckEnv::default()
                .vars()
                .into_iter()
                .filter(|(k, _)| k == "PATH" || k == "LANG"),
        );
        if self.host_config {
            // The test variant: HOME (the global config) as before.
            cmd.envs(std::env::var_os("HOME").map(|h| ("HOME", h)));
        } else {
            // No configuration but the git dir's own, which only the
            // harness writes: no system or global config, no system
            // attributes, and a HOME with nothing in it.
            cmd.env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_ATTR_NOSYSTEM", "1")
                .env("GIT_NO_REPLACE_OBJECTS", "1")
                .env("HOME", "/nonexistent");
        }
        // A pathspec is a literal path: a file the model named `*.py` must
        // not glob-match every other Python file into a task's commit.
        cmd.env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .arg(format!("--git-dir={}", self.git_dir.display()))
            .arg(format!("--work-tree={}", self.root.display()))
            .args([
                "-c",
                "user.name=harness",
                "-c",
                "user.email=harness@localhost",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "gc.auto=0",
                "-c",
                "maintenance.auto=false",
                "-c",
                "core.fsmonitor=false",
            ])
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Run git with a hard timeout; a non-zero exit is returned, not an error.
    /// The state seal watches it as it watches a check: git may write only
    /// its own repository under the state dir.
    fn run(&self, args: &[&str]) -> Result<GitOut, GitError> {
        const OWN: &[&str] = &[STATE_GIT_DIR, "git.partial"];
        let seal = crate::state_seal::watch_except(OWN);
        let out = self.run_unwatched(args);
        seal.end(&format!("git {}", args.first().copied().unwrap_or("")));
        out
    }

    fn run_unwatched(&self, args: &[&str]) -> Result<GitOut, GitError> {
        let shown = args.join(" ");
        let mut child = self.command(args).spawn().map_err(|e| GitError::Spawn {
            args: shown.clone(),
            detail: e.to_string(),
        })?;
        // Pipes are drained on threads so a chatty git cannot block on a full
        // pipe while we wait for it.
        let out = child.stdout.take().map(read_bounded);
        let err = child.stderr.take().map(read_bounded);
        let deadline = Instant::now() + Duration::from_secs(GIT_TIMEOUT_S);
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(GitError::Spawn {
                        args: shown,
                        detail: e.to_string(),
                    });
                }
            }
        };
        let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        let stdout = join(out);
        let stderr = join(err);
        match status {
            Some(st) => Ok(GitOut {
                code: st.code(),
                stdout,
                stderr,
            }),
            None => Err(GitError::Timeout { args: shown }),
        }
    }

    fn run_ok(&self, args: &[&str]) -> Result<String, GitError> {
        let o = self.run(args)?;
        if o.code == Some(0) {
            Ok(o.stdout)
        } else {
            Err(GitError::Failed {
                args: args.join(" "),
                code: o.code,
                stderr: clip(o.stderr.trim(), 2000),
            })
        }
    }
}

fn read_bounded<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    // Keep reading past the cap (discarding) so git never blocks.
                    let room = GIT_OUTPUT_MAX_BYTES.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    })
}

fn validate_task_id(id: &str) -> Result<(), GitError> {
    let bad = |reason: &str| GitError::InvalidTaskId {
        id: clip(id, TASK_ID_MAX_CHARS),
        reason: reason.into(),
    };
    if id.trim().is_empty() {
        return Err(bad("empty"));
    }
    if id.chars().count() > TASK_ID_MAX_CHARS {
        return Err(bad("too long"));
    }
    // The id goes into a trailer line; a newline or control character would
    // forge or break the trailer block.
    if id.chars().any(|c| c.is_control()) || id.trim() != id {
        return Err(bad("contains control characters or surrounding whitespace"));
    }
    Ok(())
}

use crate::text::clip_chars as clip;

#[cfg(test)]
mod tests {
    use super::*;

    /// git on the workspace's own repository `dir/.git` (as an operator's
    /// repository is made), with no host config.
    fn raw_git(dir: &Path, args: &[&str]) -> String {
        raw(
            &GitWork {
                root: dir.to_path_buf(),
                git_dir: dir.join(".git"),
                host_config: false,
            },
            args,
        )
    }

    /// git on `gw`'s repository.
    fn raw(gw: &GitWork, args: &[&str]) -> String {
        let o = gw.run(args).unwrap();
        assert_eq!(o.code, Some(0), "git {args:?}: {}", o.stderr);
        o.stdout
    }

    /// A temp dir holding `ws/` (a repository with one commit on main) and
    /// `state/`, and the run's repository for them.
    fn repo() -> (tempfile::TempDir, GitWork) {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(d.path().join("state")).unwrap();
        raw_git(&ws, &["init", "-q", "-b", "main"]);
        std::fs::write(ws.join("README"), "hi\n").unwrap();
        raw_git(&ws, &["add", "-A"]);
        raw_git(&ws, &["commit", "-q", "-m", "init"]);
        let gw = GitWork::for_run(&ws, &d.path().join("state"))
            .unwrap()
            .unwrap();
        (d, gw)
    }

    #[test]
    fn a_run_repository_needs_a_repo_at_the_root() {
        let d = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        assert!(GitWork::for_run(d.path(), state.path()).unwrap().is_none());
        std::fs::create_dir(d.path().join(".git")).unwrap();
        assert!(
            GitWork::for_run(d.path(), state.path()).is_err(),
            "an empty .git is not a repository"
        );
        let (r, _) = repo();
        std::fs::create_dir(r.path().join("ws/sub")).unwrap();
        let state = tempfile::tempdir().unwrap();
        assert!(
            GitWork::for_run(&r.path().join("ws/sub"), state.path())
                .unwrap()
                .is_none(),
            "a parent's repository is not ours"
        );
    }

    /// The run's repository is the state dir's, filled from the
    /// workspace's once: what a check plants in the workspace's `.git`
    /// (a filter, a hook, fsmonitor, an include) is never read, and a
    /// resume opens the state dir's again without reading the workspace's.
    #[test]
    fn what_the_workspace_configures_never_runs() {
        let (d, gw) = repo();
        let ws = gw.root().to_path_buf();
        assert_eq!(gw.git_dir(), d.path().join("state").join(STATE_GIT_DIR));
        let marker = d.path().join("RAN");
        let script = d.path().join("evil.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho ran >> {}\ncat\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let evil = format!(
            "[filter \"x\"]\n\tclean = {s}\n\tsmudge = {s}\n[core]\n\tfsmonitor = {s}\n\thooksPath = hooks\n[include]\n\tpath = {inc}\n[diff \"x\"]\n\ttextconv = {s}\n",
            s = script.display(),
            inc = d.path().join("inc").display()
        );
        std::fs::write(
            d.path().join("inc"),
            format!("[core]\n\tpager = {}\n", script.display()),
        )
        .unwrap();
        let cfg = ws.join(".git/config");
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.push_str(&evil);
        std::fs::write(&cfg, text).unwrap();
        std::fs::create_dir_all(ws.join(".git/info")).unwrap();
        std::fs::write(ws.join(".git/info/attributes"), "* filter=x diff=x\n").unwrap();
        std::fs::write(ws.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::copy(&script, ws.join("hooks/pre-commit")).unwrap();
        gw.ensure_branch("run").unwrap();
        std::fs::write(ws.join("a.txt"), "a\n").unwrap();
        let sha = gw
            .commit_task("t1", "x", "run", &["a.txt".into(), ".gitattributes".into()])
            .unwrap();
        assert_eq!(
            gw.commit_paths(&sha).unwrap(),
            vec![".gitattributes", "a.txt"]
        );
        let resumed = GitWork::for_run(&ws, &d.path().join("state"))
            .unwrap()
            .unwrap();
        assert_eq!(resumed.commits_for_task("t1"), vec![sha]);
        assert!(!marker.exists(), "a program the workspace configured ran");
    }

    #[test]
    fn ensure_branch_creates_then_resumes() {
        let (_d, gw) = repo();
        assert_eq!(gw.current_branch().as_deref(), Some("main"));
        gw.ensure_branch("harness/run-1").unwrap();
        assert_eq!(gw.current_branch().as_deref(), Some("harness/run-1"));
        std::fs::write(gw.root().join("a"), "1").unwrap();
        let sha = gw
            .commit_task("t1", "first", "harness/run-1", &["a".into()])
            .unwrap();
        // Resume: back on main, ensure_branch returns to the existing branch
        // with its commit, not a fresh one from main.
        raw(&gw, &["switch", "-q", "main"]);
        gw.ensure_branch("harness/run-1").unwrap();
        assert_eq!(gw.current_branch().as_deref(), Some("harness/run-1"));
        assert_eq!(raw(&gw, &["rev-parse", "HEAD"]).trim(), sha);
        gw.ensure_branch("harness/run-1").unwrap();
    }

    #[test]
    fn ensure_branch_refuses_bad_names() {
        let (_d, gw) = repo();
        for b in ["", "-x", "a..b", "a b", "a\nb", "x.lock", "a~1"] {
            assert!(
                matches!(gw.ensure_branch(b), Err(GitError::InvalidBranch { .. })),
                "{b:?}"
            );
        }
        assert_eq!(gw.current_branch().as_deref(), Some("main"));
    }

    #[test]
    fn commit_task_message_and_lookup() {
        let (_d, gw) = repo();
        gw.ensure_branch("run").unwrap();
        std::fs::create_dir(gw.root().join("src")).unwrap();
        std::fs::write(gw.root().join("src/x.rs"), "fn x() {}\n").unwrap();
        let s1 = gw
            .commit_task(
                "t1",
                "\n  # add x  \nmore detail\n",
                "run",
                &["src/x.rs".into()],
            )
            .unwrap();
        assert_eq!(s1.len(), 40);
        let msg = raw(&gw, &["log", "-1", "--format=%B"]);
        assert_eq!(msg.trim_end(), "task t1: # add x\n\nHarness-Task: t1");
        assert_eq!(raw(&gw, &["status", "--porcelain"]), "");

        std::fs::write(gw.root().join("src/y.rs"), "fn y() {}\n").unwrap();
        let s10 = gw
            .commit_task("t10", "", "run", &["src/y.rs".into()])
            .unwrap();
        assert_eq!(raw(&gw, &["log", "-1", "--format=%s"]).trim(), "task t10");

        assert_eq!(gw.commits_for_task("t1"), vec![s1.clone()]);
        assert_eq!(gw.commits_for_task("t10"), vec![s10]);
        assert!(gw.commits_for_task("t2").is_empty());
        assert!(gw.commits_for_task("").is_empty());
        // Nothing changed in the workspace (e.g. a post): still one commit,
        // empty, saying why, so every verified task is in the log.
        let s3 = gw
            .commit_task("t3", "post the rollout note", "run", &[])
            .unwrap();
        assert_eq!(raw(&gw, &["show", "--stat", "--format=", &s3]).trim(), "");
        assert!(raw(&gw, &["log", "-1", "--format=%B"]).contains("outside the workspace"));
        assert_eq!(gw.commits_for_task("t3"), vec![s3]);
        // Deletions are committed too.
        std::fs::remove_file(gw.root().join("src/x.rs")).unwrap();
        let s4 = gw
            .commit_task("t4", "rm x", "run", &["src/x.rs".into()])
            .unwrap();
        assert_eq!(gw.commit_paths(&s4).unwrap(), vec!["src/x.rs"]);
    }

    #[test]
    fn commit_task_refuses_forged_trailers() {
        let (_d, gw) = repo();
        std::fs::write(gw.root().join("a"), "1").unwrap();
        for id in ["", " t1", "t1\nHarness-Task: t9", "t\x01"] {
            assert!(
                matches!(
                    gw.commit_task(id, "x", "main", &["a".into()]),
                    Err(GitError::InvalidTaskId { .. })
                ),
                "{id:?}"
            );
        }
        assert!(gw
            .commit_task(&"x".repeat(TASK_ID_MAX_CHARS + 1), "x", "main", &[])
            .is_err());
    }

    #[test]
    fn works_on_an_unborn_branch() {
        let d = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        raw_git(d.path(), &["init", "-q", "-b", "main"]);
        let gw = GitWork::for_run(d.path(), state.path()).unwrap().unwrap();
        assert!(gw.commits_for_task("t1").is_empty());
        gw.ensure_branch("run").unwrap();
        std::fs::write(d.path().join("f"), "x").unwrap();
        let sha = gw.commit_task("t1", "first", "run", &["f".into()]).unwrap();
        assert_eq!(gw.commits_for_task("t1"), vec![sha]);
    }

    #[test]
    fn a_commit_holds_exactly_the_tasks_paths() {
        let (_d, gw) = repo();
        gw.ensure_branch("run").unwrap();
        let w = |p: &str, c: &str| {
            let f = gw.root().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        };
        // The operator staged a change before the run; a parked task left an
        // edit and a new file; a check left a cache file.
        w("README", "operator edit\n");
        raw(&gw, &["add", "README"]);
        w("parked.txt", "parked task's edit\n");
        w("cache/.pytest", "x");
        // The verified task wrote these two, one of them a name with glob
        // characters that must not match the others.
        w("src/a.rs", "fn a() {}\n");
        w("*.txt", "literal\n");
        let sha = gw
            .commit_task(
                "t2",
                "the verified one",
                "run",
                &["src/a.rs".into(), "*.txt".into(), "src/a.rs".into()],
            )
            .unwrap();
        assert_eq!(gw.commit_paths(&sha).unwrap(), vec!["*.txt", "src/a.rs"]);
        let status = raw(&gw, &["status", "--porcelain"]);
        assert!(
            status.contains("M  README"),
            "the operator's staged change stays staged: {status}"
        );
        assert!(status.contains("?? parked.txt"), "{status}");
        // A path written then removed, never tracked, is left out; an
        // ignored untracked path is not the task's to commit.
        w(".gitignore", "build/\n");
        raw(&gw, &["add", ".gitignore"]);
        raw(
            &gw,
            &["commit", "-q", "-m", "ignore build/", "--", ".gitignore"],
        );
        w("build/out.bin", "x");
        w("gone.txt", "x");
        std::fs::remove_file(gw.root().join("gone.txt")).unwrap();
        w("kept.txt", "kept\n");
        let sha = gw
            .commit_task(
                "t3",
                "x",
                "run",
                &["gone.txt".into(), "build/out.bin".into(), "kept.txt".into()],
            )
            .unwrap();
        assert_eq!(gw.commit_paths(&sha).unwrap(), vec!["kept.txt"]);
        // Paths that did not change: an empty commit, still one per task.
        let sha = gw
            .commit_task("t4", "x", "run", &["kept.txt".into()])
            .unwrap();
        assert!(gw.commit_paths(&sha).unwrap().is_empty());
        assert!(raw(&gw, &["log", "-1", "--format=%B"]).contains("already held"));
    }

    #[test]
    fn nothing_is_committed_onto_another_branch() {
        let (_d, gw) = repo();
        std::fs::write(gw.root().join("a"), "1").unwrap();
        let head = raw(&gw, &["rev-parse", "HEAD"]);
        let e = gw
            .commit_task("t1", "x", "harness/run-1", &["a".into()])
            .unwrap_err();
        assert!(matches!(e, GitError::WrongBranch { .. }), "{e}");
        assert_eq!(raw(&gw, &["rev-parse", "HEAD"]), head);
    }

    #[test]
    fn git_runs_without_the_harness_environment() {
        let (_d, gw) = repo();
        std::env::set_var("OPENAI_API_KEY", "sk-openai-gitwork-test-0123456789");
        std::env::set_var("GIT_INDEX_FILE", "/nonexistent/index");
        let o = gw.run(&["-c", "alias.showenv=!env", "showenv"]).unwrap();
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(!o.stdout.contains("sk-openai-gitwork-test"), "{}", o.stdout);
        assert!(!o.stdout.contains("/nonexistent/index"), "{}", o.stdout);
        assert!(o.stdout.contains("GIT_LITERAL_PATHSPECS=1"));
    }

    #[test]
    fn hooks_do_not_run() {
        let (_d, gw) = repo();
        // A hooks path pointing into the workspace: model-written files there
        // must never execute.
        std::fs::create_dir(gw.root().join("hooks")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        // post-commit is not skipped by --no-verify; only the hooksPath
        // override stops it.
        for name in ["pre-commit", "post-commit"] {
            let hook = gw.root().join("hooks").join(name);
            std::fs::write(&hook, "#!/bin/sh\ntouch ran\n").unwrap();
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        raw(&gw, &["config", "core.hooksPath", "hooks"]);
        gw.commit_task("t1", "with hook", "main", &[]).unwrap();
        assert!(!gw.root().join("ran").exists());
    }

    #[test]
    fn redirecting_env_is_removed() {
        // Variables that would point a commit at another repository.
        const GIT_REDIRECT_VARS: [&str; 8] = [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_COMMON_DIR",
            "GIT_NAMESPACE",
            "GIT_CEILING_DIRECTORIES",
        ];
        let gw = GitWork {
            root: PathBuf::from("."),
            git_dir: PathBuf::from("state/git"),
            host_config: false,
        };
        let cmd = gw.command(&["status"]);
        // The environment is cleared; only these are set.
        let envs: Vec<String> = cmd
            .get_envs()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for k in &envs {
            assert!(
                [
                    "PATH",
                    "HOME",
                    "LANG",
                    "GIT_CONFIG_NOSYSTEM",
                    "GIT_CONFIG_GLOBAL",
                    "GIT_ATTR_NOSYSTEM",
                    "GIT_NO_REPLACE_OBJECTS",
                    "GIT_LITERAL_PATHSPECS",
                    "GIT_TERMINAL_PROMPT"
                ]
                .contains(&k.as_str()),
                "{k} is passed to git"
            );
        }
        for v in GIT_REDIRECT_VARS {
            assert!(!envs.iter().any(|k| k == v), "{v} passed to git");
        }
        let args: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"commit.gpgsign=false".to_string()));
        assert!(args.contains(&"user.email=harness@localhost".to_string()));
    }
}
