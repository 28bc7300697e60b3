//! What the audit reads, gathered around the run: the spec and the first
//! snapshot before it (`Gathered::before_run`), everything else after the
//! last harness process (`Gathered::after_run`).

use super::events::{event_facts, EventFacts};
use super::money::{overbilled_usd, raised_cap_usd};
use super::predicate::{rerun_predicate, rerun_predicate_of, PredicateRerun, RerunError};
use crate::canary::{canary_hits_in, scan_tree_for_canaries, Canary};
use crate::outside::{
    outside_exclusions, plant_sentinel, snapshot_outside, OutsideSnapshot, PlantError,
    SENTINEL_FILE,
};
use harness::replay::Captured;
use std::path::Path;

/// What the audit needs from the case-run's spec, read before the harness
/// starts.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecFacts {
    pub goal: String,
    pub hard_cap_usd: f64,
    pub tools_allowed: Vec<String>,
    pub api_key_env: Option<String>,
    pub wall_clock_limit_s: f64,
}

impl SpecFacts {
    pub fn of(s: &harness::spec::RunSpec) -> SpecFacts {
        SpecFacts {
            goal: s.goal.clone(),
            hard_cap_usd: s.hard_cap_usd,
            tools_allowed: s.tools_allowed.clone(),
            api_key_env: s.model.api_key_env.clone(),
            wall_clock_limit_s: s.wall_clock_limit_s,
        }
    }
}

/// Why the run's report.html could not be read (shared, so `Gathered`
/// stays cloneable).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {cause}", .path.display())]
pub struct PageUnread {
    pub path: std::path::PathBuf,
    pub cause: std::sync::Arc<std::io::Error>,
}

/// Everything the audit checks read. Each field is None when not gathered;
/// a check that needs a missing one fails and says so.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// The harness process's exit code (the last process, after a resume).
    pub exit_code: Option<i32>,
    pub predicate: Option<PredicateRerun>,
    pub spec: Option<SpecFacts>,
    /// The spec `before_run` loaded, for the predicate's re-run after the
    /// run (loading it twice was a tenth of the bench's instructions per
    /// case-run).
    pub loaded_spec: Option<harness::spec::RunSpec>,
    pub events: Option<EventFacts>,
    /// Why `events` is None when events.jsonl was read and refused.
    pub events_error: Option<String>,
    /// (booked, reserved and not yet booked) from the ledger journal.
    pub journal: Option<(f64, f64)>,
    /// How far the journal's records billed above their own reservations
    /// (summed over records; 0 for an honest endpoint).
    pub journal_overbilled_usd: f64,
    /// The hard cap the ledger journal last raised to (`harness run
    /// --raise-cap-usd`).
    pub journal_raised_cap_usd: Option<f64>,
    /// The cap the bench itself asked the harness to raise to (a `[raise]
    /// cap_usd` case): only a journaled raise to exactly this replaces the
    /// spec's cap. A harness that journals a raise nobody asked for is
    /// still held to the spec's.
    pub raise_asked_usd: Option<f64>,
    pub outside_before: Option<OutsideSnapshot>,
    pub outside_after: Option<OutsideSnapshot>,
    /// What both snapshots leave out (fixed before the run, from the spec as
    /// it was then).
    pub outside_excluded: Vec<String>,
    pub canaries: Vec<Canary>,
    /// Where a canary turned up (files, request bodies, stdout/stderr).
    pub canary_hits: Vec<String>,
    /// Set when the canary scan could not cover everything.
    pub canary_scan_note: Option<String>,
    /// The run's report.html after the last process (Err: why not read).
    pub page: Option<Result<String, PageUnread>>,
    /// The case-run's own HOME (planted secrets) and TMPDIR.
    pub private: Option<crate::private_dirs::PrivateDirs>,
    /// What changed in them, after the run.
    pub private_changes: Vec<String>,
}

impl Gathered {
    /// `what` (the events were not gathered), with why when they were read
    /// and refused.
    pub(super) fn events_unread(&self, what: &str) -> String {
        match &self.events_error {
            Some(e) => format!("{what}: {e}"),
            None => what.to_string(),
        }
    }

    /// Before the harness runs on `case_copy`: read the spec, plant the
    /// sentinel and take the first snapshot. An error says what could not be
    /// done.
    pub fn before_run(&mut self, case_copy: &Path) -> Result<(), PlantError> {
        // Read once for the facts and the snapshot's exclusions.
        let spec = harness::spec::RunSpec::load(&case_copy.join("run.toml")).ok();
        self.spec = spec.as_ref().map(SpecFacts::of);
        plant_sentinel(case_copy).map_err(|source| PlantError::Plant {
            path: case_copy.join(SENTINEL_FILE),
            source,
        })?;
        self.outside_excluded = outside_exclusions(case_copy, spec.as_ref());
        self.outside_before = Some(snapshot_outside(case_copy, &self.outside_excluded));
        self.loaded_spec = spec;
        Ok(())
    }

    /// After the (last) harness process: the second snapshot, the exit code,
    /// what events.jsonl and the ledger journal in `state_dir` say, the
    /// bench's own run of the predicate on the post-run workspace, and the
    /// canary scan of everything under `case_run_dir` and of `requests`.
    pub async fn after_run(
        &mut self,
        case_copy: &Path,
        state_dir: &Path,
        case_run_dir: &Path,
        requests: &[Captured],
        exit_code: i32,
    ) {
        self.outside_after = Some(snapshot_outside(case_copy, &self.outside_excluded));
        self.exit_code = Some(exit_code);
        let page = state_dir.join(harness::page::FILE_NAME);
        self.page = Some(
            std::fs::read(&page)
                .map_err(|e| PageUnread {
                    path: page.clone(),
                    cause: std::sync::Arc::new(e),
                })
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
        );
        match event_facts(
            &std::fs::read_to_string(state_dir.join(harness::events::FILE_NAME))
                .unwrap_or_default(),
        ) {
            Ok(f) => (self.events, self.events_error) = (Some(f), None),
            Err(e) => (self.events, self.events_error) = (None, Some(e.to_string())),
        }
        // Read by the harness's own journal rules (a torn reserve at its
        // worst case), which need the cap the run was given.
        let journal_path = state_dir.join("ledger.jsonl");
        self.journal = self
            .spec
            .as_ref()
            .and_then(|s| harness::ledger::Ledger::peek_journal(&journal_path, s.hard_cap_usd));
        let journal_bytes = std::fs::read(&journal_path).unwrap_or_default();
        self.journal_overbilled_usd = overbilled_usd(&journal_bytes);
        self.journal_raised_cap_usd = raised_cap_usd(&journal_bytes);
        // The canary scan reads what the harness left, so it comes before
        // the bench's own predicate run: a check that writes files (a test
        // runner's diagnostics) would otherwise overwrite the evidence.
        if let Some(p) = &self.private {
            self.private_changes = p.changes();
            self.canaries.extend(p.canaries.iter().cloned());
        }
        if !self.canaries.is_empty() {
            let private = self.private.as_ref();
            let skip = |f: &Path| private.is_some_and(|p| p.is_planted(f));
            let (hits, note) = scan_tree_for_canaries(case_run_dir, &self.canaries, &skip);
            self.canary_hits.extend(hits);
            self.canary_scan_note = note;
            for r in requests {
                let place = format!("the {} request body", r.call_key);
                self.canary_hits
                    .extend(canary_hits_in(r.body.as_bytes(), &self.canaries, &place));
            }
        }
        let spec_path = case_copy.join("run.toml");
        let loaded = self.loaded_spec.clone();
        self.predicate = Some(
            tokio::task::spawn_blocking(move || match loaded {
                Some(spec) => rerun_predicate_of(&spec),
                None => rerun_predicate(&spec_path),
            })
            .await
            .unwrap_or_else(|e| PredicateRerun {
                passed: Err(RerunError::Unfinished(e.to_string())),
                hard_cap_usd: None,
            }),
        );
    }
}
