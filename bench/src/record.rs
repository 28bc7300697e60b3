//! The record of a case-run and who its case is, as every layer above the
//! runner reads them (the batch, its events and reporters, the summary and
//! the page): kept here, below all of them, so none of them reaches back up
//! into the runner or the summary for a type they share.

use crate::bench_fault::BenchFault;
use crate::score::Check;
use crate::suite::Case;
use harness::ending::Ending;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    pub run: u32,
    /// None when the harness reported no ending (written `<none>`).
    #[serde(with = "ending_or_none")]
    #[schemars(with = "String")]
    pub ending: Option<Ending>,
    pub exit_code: i32,
    pub passed: bool,
    pub score: f64,
    pub cost_usd: f64,
    /// The latency the case's cap judged, in ms: `latency.judged_ms` (the
    /// replayed model time plus the harness's CPU time, or wall time where
    /// `latency.measure` says so; bench/src/latency.rs). 0 when no process
    /// ran.
    pub latency_ms: u64,
    pub expected_ending: Ending,
    pub checks: Vec<Check>,
    pub failures: Vec<String>,
    pub state_dir: String,
    /// Verified task count, for cost-per-verified-task figures.
    pub verified: u64,
    /// Set when the case-run ended because of the bench's own machinery (a
    /// recording miss, no replay server, a failed setup, the live cap), not
    /// the harness: a failure of the gate, but no data point of a comparison.
    #[serde(default)]
    pub bench_fault: Option<BenchFault>,
    /// The root cause a failed case-run leads with (bench::cause), when one
    /// is known; the failures below it are what it caused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// A live or hybrid case-run: how its model calls were answered
    /// (replayed, live, live dollars). None when it was replayed whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_calls: Option<crate::live::LiveCalls>,
    /// Which time the cap judged and the figures beside it (wall time,
    /// model time, harness CPU). None when no harness process ran, and in a
    /// summary written before it existed (schema_version 1, where
    /// `latency_ms` was wall time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::latency::Latency>,
}

/// An ending as summary.json and the knee's case_runs.json spell it: its
/// name, or `<none>` for a case-run that never reached one (the harness did
/// not run or wrote no report). Read back strictly: any other name is an
/// error, never a silent `<none>`.
pub mod ending_or_none {
    use harness::ending::Ending;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub const NONE: &str = "<none>";

    /// `name` read back: an ending, `<none>`, or an error naming it.
    pub fn parse(name: &str) -> Result<Option<Ending>, UnknownEnding> {
        if name == NONE {
            return Ok(None);
        }
        Ending::parse(name)
            .map(Some)
            .ok_or_else(|| UnknownEnding(name.to_string()))
    }

    /// A name that is neither an ending nor `<none>`.
    #[derive(Debug, thiserror::Error)]
    #[error("unknown ending {0:?}")]
    pub struct UnknownEnding(String);

    /// The name written for `e`.
    pub fn name(e: Option<Ending>) -> &'static str {
        e.map_or(NONE, Ending::as_str)
    }

    pub fn serialize<S: Serializer>(e: &Option<Ending>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name(*e))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Ending>, D::Error> {
        parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl RunRecord {
    /// A case-run that could not be carried out: failed, with the reason.
    pub fn failed(case: &Case, run: u32, msg: String, state_dir: String) -> RunRecord {
        RunRecord {
            run,
            ending: None,
            exit_code: -1,
            passed: false,
            score: 0.0,
            cost_usd: 0.0,
            latency_ms: 0,
            expected_ending: case.expected_ending(run),
            checks: vec![],
            cause: Some(msg.clone()),
            failures: vec![msg],
            state_dir,
            verified: 0,
            bench_fault: None,
            live_calls: None,
            latency: None,
        }
    }

    /// A case-run the bench's machinery could not carry out: failed, with
    /// the fault as its reason.
    pub fn faulted(case: &Case, run: u32, fault: BenchFault, state_dir: String) -> RunRecord {
        RunRecord {
            bench_fault: Some(fault.clone()),
            ..RunRecord::failed(case, run, fault.describe(), state_dir)
        }
    }

    /// The first line of a failed case-run: its root cause when known, else
    /// what ending was expected and which came; when the ending was the
    /// expected one, it says so rather than "expected X, got X" (the gates
    /// that failed follow it).
    pub fn headline(&self) -> String {
        let endings = if self.ending == Some(self.expected_ending) {
            format!("ended {} as expected; gates failed", self.expected_ending)
        } else {
            format!(
                "expected {}, got {}",
                self.expected_ending,
                self.ending_name()
            )
        };
        match &self.cause {
            Some(c) => format!("{c} ({endings})"),
            None => endings,
        }
    }

    /// Wall time of the case-run's harness process(es), in ms (what
    /// `latency_ms` was before the cap judged model plus CPU time).
    pub fn wall_ms(&self) -> u64 {
        self.latency.map_or(self.latency_ms, |l| l.wall_ms)
    }

    /// The ending's name, `<none>` when there was none.
    pub fn ending_name(&self) -> &'static str {
        ending_or_none::name(self.ending)
    }

    /// The harness ran and wrote a report (the ending is one of the seven):
    /// the case-runs whose latency and cost the summary's statistics use.
    pub fn reported(&self) -> bool {
        self.ending.is_some()
    }
}

/// What a case's runs did, whatever the pass policy makes of them: a case
/// that passes some runs but not all is flaky, shown as such in every
/// output even when the 2-of-3 policy passes it (adversarial cases, which
/// must pass every run, fail when flaky).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every run passed.
    Passed,
    /// Some runs passed, some failed.
    Flaky,
    /// No run passed (or there was no run).
    Failed,
}

impl Outcome {
    pub fn of(runs: &[RunRecord]) -> Outcome {
        let ok = runs.iter().filter(|r| r.passed).count();
        match ok {
            0 => Outcome::Failed,
            n if n == runs.len() => Outcome::Passed,
            _ => Outcome::Flaky,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Flaky => "flaky",
            Outcome::Failed => "failed",
        }
    }
}

/// Who a case is, as the reporters name it: what a loaded case (`bench run`)
/// and a shard's summary record (`bench merge`) both know. Reporters see
/// this, never the loaded case (its fixtures and cassette are the runner's).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CaseMeta {
    pub id: String,
    pub category: String,
    pub title: String,
    pub covers: Vec<String>,
    pub known_flaky: Option<crate::known_flaky::KnownFlaky>,
}

impl CaseMeta {
    pub fn of(c: &Case) -> CaseMeta {
        CaseMeta {
            id: c.id().to_string(),
            category: c.category().to_string(),
            title: c.file.title.clone(),
            covers: c.file.covers.clone(),
            known_flaky: c.file.known_flaky.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ending::Ending;

    fn failed(ending: Option<Ending>, cause: Option<&str>) -> RunRecord {
        RunRecord {
            live_calls: None,
            run: 0,
            ending,
            exit_code: 0,
            passed: false,
            score: 0.0,
            cost_usd: 0.0,
            latency_ms: 1,
            latency: None,
            expected_ending: Ending::GoalMet,
            checks: vec![],
            failures: vec!["gate outbox_total: expected 0 posts, got 1".into()],
            state_dir: String::new(),
            verified: 1,
            bench_fault: None,
            cause: cause.map(String::from),
        }
    }

    #[test]
    fn the_headline_never_says_expected_x_got_x() {
        let right = failed(Some(Ending::GoalMet), None);
        assert_eq!(right.headline(), "ended GOAL_MET as expected; gates failed");
        let wrong = failed(Some(Ending::BudgetExhausted), Some("the cap"));
        assert_eq!(
            wrong.headline(),
            "the cap (expected GOAL_MET, got BUDGET_EXHAUSTED)"
        );
        assert_eq!(
            failed(None, None).headline(),
            "expected GOAL_MET, got <none>"
        );
    }
}
