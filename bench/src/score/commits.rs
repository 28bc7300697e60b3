//! The run branch: how many commits, and which files each one holds.

use super::check::{check, Check};
use crate::suite::Expect;
use std::path::PathBuf;

/// Why the files of the run branch's commits could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CommitFilesError {
    #[error("{} is not a git work tree", .0.display())]
    NotGitTree(PathBuf),
    #[error(transparent)]
    Git(#[from] harness::gitwork::GitError),
    #[error("the report names no git_branch")]
    NoBranch,
}

/// The files each commit of the run branch changed, oldest first.
pub type CommitFiles = Result<Vec<Vec<String>>, CommitFilesError>;

pub(super) fn checks(
    e: &Expect,
    commits: Option<usize>,
    commit_files: Option<&CommitFiles>,
    out: &mut Vec<Check>,
) {
    if let Some(w) = e.commits_count {
        let n = commits.unwrap_or(0);
        out.push(check(
            "commits_count".into(),
            n == w,
            format!("expected {w} commits on the run branch, got {n}"),
        ));
    }
    if let Some(want) = &e.commit_files {
        let (passed, detail) = match commit_files {
            Some(Ok(got)) => {
                let mut want_sorted: Vec<Vec<String>> = want.clone();
                want_sorted.iter_mut().for_each(|c| c.sort());
                (
                    &want_sorted == got,
                    format!("expected {want_sorted:?}, got {got:?}"),
                )
            }
            Some(Err(e)) => (false, format!("the commits could not be read: {e}")),
            None => (false, "the commits were not gathered".into()),
        };
        out.push(check("commit_files".into(), passed, detail));
    }
}
