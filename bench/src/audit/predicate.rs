//! The bench's own run of the case's goal predicate, after the run, on the
//! post-run workspace: what `audit.goal_met_implies_predicate` holds a
//! GOAL_MET to.

use std::path::Path;

/// Why the bench could not run the case's goal predicate itself (a
/// predicate that did not run proves nothing).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RerunError {
    #[error("spec did not load: {0}")]
    Spec(harness::spec::SpecError),
    #[error("the predicate timed out after {0}s")]
    TimedOut(u64),
    #[error("the spec's predicate names no defined check")]
    NoCheck,
    /// The blocking task running it panicked or was cancelled.
    #[error("the predicate run did not finish: {0}")]
    Unfinished(String),
}

/// The bench's own run of the case's goal predicate on the post-run
/// workspace, with the spec it read (from the case copy's run.toml).
#[derive(Debug, Clone, PartialEq)]
pub struct PredicateRerun {
    /// Ok(passed) or why it could not be run.
    pub passed: Result<bool, RerunError>,
    /// The spec's hard cap, when the spec loaded.
    pub hard_cap_usd: Option<f64>,
}

/// Load the spec at `spec_path` and run its predicate in its workspace, as
/// the harness does (same `harness::check::run_check`, same timeout).
pub fn rerun_predicate(spec_path: &Path) -> PredicateRerun {
    match harness::spec::RunSpec::load(spec_path) {
        Ok(s) => rerun_predicate_of(&s),
        Err(e) => PredicateRerun {
            passed: Err(RerunError::Spec(e)),
            hard_cap_usd: None,
        },
    }
}

/// [`rerun_predicate`] of a spec already loaded (the one `before_run` read:
/// the spec the run was given, loaded once per case-run).
pub fn rerun_predicate_of(spec: &harness::spec::RunSpec) -> PredicateRerun {
    let check = match &spec.predicate {
        harness::spec::Predicate::Command(c) => Some(c),
        harness::spec::Predicate::Check(n) => spec.checks.get(n),
    };
    let passed = match check {
        Some(c) => {
            let r = harness::check::run_check(c, &spec.workspace);
            if r.timed_out {
                Err(RerunError::TimedOut(c.timeout_s))
            } else {
                Ok(r.passed)
            }
        }
        None => Err(RerunError::NoCheck),
    };
    PredicateRerun {
        passed,
        hard_cap_usd: Some(spec.hard_cap_usd),
    }
}
