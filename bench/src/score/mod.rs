//! Scoring one case-run against its expectations. Every check is a **gate**
//! or **scored** (`CheckKind`):
//! - gates are guarantees of the harness: the expected ending, and every
//!   expectation about a guarantee (exit code, class, alert or page, the
//!   predicate, parking and pruning, posts, notice placement, money, commits,
//!   what a request must and must not carry) plus the audit every case-run
//!   gets (bench/src/audit/). One failed gate fails the case-run, whatever
//!   the score: a check on a guarantee is not a quality score.
//! - scored checks are the quality of the agent's work where partial credit
//!   is meaningful (which tasks were verified, what files and posts contain,
//!   the wording of a reason); the score is the share of scored checks that
//!   pass (1.0 when there are none).
//!
//! pass = every gate passes and score >= PASS_SCORE and latency <= cap and
//! cost <= cap. `kind_of` is the one table that says which is which
//! (suites/README.md explains it to case authors).
//!
//! The report is read as the harness's own [`Report`] type, so a field the
//! harness renames is a compile error here, not a check that quietly reads
//! nothing. One file per concept; [`checks`] runs them in the fixed order the
//! failures are listed in.

mod check;
pub mod commits;
mod files;
mod outbox;
mod report_fields;
mod requests;
mod spend;
mod tasks;
mod verdict;

pub use check::{Check, CheckKind};
pub use verdict::{verdict, Verdict, PASS_SCORE};

use crate::suite::Expect;
use harness::replay::Captured;
use harness::report::Report;
use std::path::Path;

/// What a case-run left behind, as the scorer reads it.
pub struct Artifacts<'a> {
    pub report: &'a Report,
    pub outbox: &'a [harness::outbox::OutboxEntry],
    pub workspace: &'a Path,
    pub requests: &'a [Captured],
    pub commits: Option<usize>,
    /// Files per commit on the run branch, oldest first (only when a case
    /// asks for `commit_files`).
    pub commit_files: Option<&'a commits::CommitFiles>,
}

pub fn checks(e: &Expect, a: &Artifacts) -> Vec<Check> {
    let r = a.report;
    let mut out = vec![];
    report_fields::predicate_met(e, r, &mut out);
    tasks::checks(e, r, &mut out);
    outbox::checks(e, a.outbox, &mut out);
    spend::limits(e, r, &mut out);
    report_fields::checks(e, r, &mut out);
    files::checks(e, a.workspace, &mut out);
    requests::notice_at_end(e, a.requests, &mut out);
    spend::min_budget_notices(e, r, &mut out);
    commits::checks(e, a.commits, a.commit_files, &mut out);
    requests::checks(e, a.requests, &mut out);
    out
}
