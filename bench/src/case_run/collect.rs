//! What the ended harness left: its report (or, when the bench was
//! interrupted, its stop report), its outbox, the requests it sent, its
//! commits; and the audit's after-look.

use super::process::Spawned;
use super::{CaseRun, Collected, Prepared, Ran, Target};
use crate::bench_fault::BenchFault;
use crate::record::RunRecord;
use crate::score::commits::{CommitFiles, CommitFilesError};
use std::path::Path;

impl CaseRun<'_> {
    /// What the ended harness left, read; the audit's after-look taken.
    pub(super) async fn collect(
        &self,
        p: &mut Prepared,
        ran: &Ran,
    ) -> Result<Collected, Box<RunRecord>> {
        self.not_suspended(p)?;
        let report = self.read_report(&p.state, &ran.spawned)?;
        // Through the harness's own reader and type (a torn or foreign line
        // is skipped there, as the harness itself skips it).
        let outbox = harness::outbox::Outbox::new(p.state.join("outbox.jsonl"))
            .read_all()
            .map(|c| c.entries)
            .unwrap_or_default();
        let (requests, live_end) = match (self.target, p.session.take()) {
            (Target::Live(_), Some(s)) => {
                let mut end = s.end(Some(&report), ran.spawned.code);
                (std::mem::take(&mut end.captured), Some(end))
            }
            (Target::Replay(server), _) => (server.take_captured(self.case.id(), self.run), None),
            (Target::Live(_), None) => (vec![], None),
        };
        let commits = report.git_branch.as_deref().and_then(|b| {
            let gw = harness::gitwork::GitWork::of_run(&p.ws, &p.state)?;
            gw.commits_between("main", b).ok().map(|c| c.len())
        });
        let commit_files = match (
            &self.case.file.expect.commit_files,
            report.git_branch.as_deref(),
        ) {
            (Some(_), Some(b)) => Some(branch_commit_files(&p.ws, &p.state, b)),
            (Some(_), None) => Some(Err(CommitFilesError::NoBranch)),
            _ => None,
        };
        (p.gathered)
            .after_run(
                &p.case_copy,
                &p.state,
                &self.dir,
                &requests,
                ran.spawned.code,
            )
            .await;
        Ok(Collected {
            report,
            outbox,
            requests,
            live_end,
            commits,
            commit_files,
        })
    }

    /// The bench was interrupted and the harness suspended (its stop
    /// report says so): no verdict on a run that did not finish.
    fn not_suspended(&self, p: &Prepared) -> Result<(), Box<RunRecord>> {
        let Some(sig) = crate::interrupt::requested() else {
            return Ok(());
        };
        if harness::report::StoppedReport::load(&p.state).is_ok()
            || harness::report::Report::load(&p.state).is_err()
        {
            let fault = BenchFault::Interrupted {
                signal: sig.to_string(),
            };
            let state = p.state.display().to_string();
            return Err(Box::new(RunRecord::faulted(
                self.case, self.run, fault, state,
            )));
        }
        Ok(())
    }

    /// The harness's report, parsed once into its own type: a report it
    /// would not have written is no report.
    fn read_report(
        &self,
        state: &Path,
        spawned: &Spawned,
    ) -> Result<harness::report::Report, Box<RunRecord>> {
        let parsed = std::fs::read(state.join("report.json"))
            .ok()
            .map(|b| serde_json::from_slice::<harness::report::Report>(&b));
        match parsed {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) if !(e.is_syntax() || e.is_eof()) => {
                Err(self.fail(format!("report.json is not a harness report: {e}")))
            }
            _ => Err(self.fail(format!(
                "no report.json (exit {}); stderr: {}",
                spawned.code,
                spawned.stderr_tail.trim()
            ))),
        }
    }
}

/// The files each commit of `main..branch` changed, oldest first: read
/// through the harness's own git helper, the one that made the commits.
fn branch_commit_files(ws: &Path, state: &Path, branch: &str) -> CommitFiles {
    let gw = harness::gitwork::GitWork::of_run(ws, state)
        .ok_or_else(|| CommitFilesError::NotGitTree(ws.to_path_buf()))?;
    let commits = gw.commits_between("main", branch)?;
    commits
        .iter()
        .map(|sha| gw.commit_paths(sha).map_err(CommitFilesError::from))
        .collect()
}
