//! The results of a suite run (the summary model) and its renderings:
//! summary.json (the contract), summary.md (a CI step summary), JUnit XML,
//! and a terminal table. The reporter that builds it from a batch's events
//! and writes the files is `outputs::SummaryFiles`. Totals are always recomputed from the per-case-run
//! records, never averaged from other totals (that is what makes `merge`
//! exact).

use crate::record::RunRecord;
use crate::stats::{wilson, Z95};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub use crate::record::Outcome;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseRecord {
    pub id: String,
    pub category: String,
    pub title: String,
    pub covers: Vec<String>,
    /// The pass policy's verdict (the gate).
    pub passed: bool,
    /// What the runs did: passed, flaky or failed.
    pub outcome: Outcome,
    pub score: f64,
    pub runs: Vec<RunRecord>,
    /// The case's `known_flaky` marker: it is run and judged like any case,
    /// and labelled in every output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_flaky: Option<crate::known_flaky::KnownFlaky>,
}

/// How the p95 latency is computed (written into summary.json).
pub const P95_DEFINITION: &str = "nearest rank: the smallest latency that at least 95% of the case-runs are at or below, \
i.e. the ceil(0.95 n)-th smallest of n (always an observed value; with fewer than 20 case-runs it is the largest)";

/// The 95th percentile by nearest rank (see P95_DEFINITION); None when empty.
pub fn p95_nearest_rank(values: &[u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    // ceil(0.95 n) in integers: (95 n + 99) / 100, at least 1.
    let rank = ((95 * v.len()).div_ceil(100)).max(1);
    Some(v[rank - 1])
}

/// Latency and cost over the case-runs whose harness wrote a report (a
/// case-run the bench could not start has no latency or cost to count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStats {
    /// Case-runs the figures are over.
    pub case_runs: u64,
    /// Over the latency each cap judged (`RunRecord::latency_ms`): what
    /// `latency_judged` says it was.
    pub latency_ms_mean: Option<f64>,
    pub latency_ms_p95: Option<u64>,
    pub cost_usd_mean_per_case_run: Option<f64>,
    /// Which time `latency_ms_*` are over, counted by measure, e.g. "model
    /// time + harness CPU for 12 case-runs, wall time for 1 (the case
    /// covers wall-clock)" (bench/src/latency.rs).
    #[serde(default)]
    pub latency_judged: String,
    /// Wall time of the same case-runs, kept beside the judged figure.
    #[serde(default)]
    pub wall_ms_p95: Option<u64>,
}

impl RunStats {
    pub fn of<'a>(runs: impl Iterator<Item = &'a RunRecord>) -> RunStats {
        let measured: Vec<&RunRecord> = runs.filter(|r| r.reported()).collect();
        let n = measured.len();
        let lat: Vec<u64> = measured.iter().map(|r| r.latency_ms).collect();
        let wall: Vec<u64> = measured.iter().map(|r| r.wall_ms()).collect();
        let mean = |sum: f64| (n > 0).then(|| sum / n as f64);
        RunStats {
            case_runs: n as u64,
            latency_ms_mean: mean(lat.iter().map(|x| *x as f64).sum()),
            latency_ms_p95: p95_nearest_rank(&lat),
            cost_usd_mean_per_case_run: mean(measured.iter().map(|r| r.cost_usd).sum()),
            latency_judged: crate::latency::judged_over(measured.iter().map(|r| r.latency)),
            wall_ms_p95: p95_nearest_rank(&wall),
        }
    }
    /// What the latency columns are over and the wall time beside them:
    /// "Latency is what each cap judged: model time + harness CPU for 12
    /// case-runs; wall-time p95 13500 ms."
    pub fn latency_note(&self) -> String {
        format!(
            "Latency is what each cap judged: {}; wall-time p95 {}.",
            if self.latency_judged.is_empty() {
                "no case-run"
            } else {
                &self.latency_judged
            },
            self.wall_ms_p95.map_or("n/a".into(), |m| format!("{m} ms"))
        )
    }

    pub(crate) fn cells(&self) -> [String; 3] {
        [
            self.latency_ms_mean
                .map_or("n/a".into(), |m| format!("{m:.0} ms")),
            self.latency_ms_p95
                .map_or("n/a".into(), |m| format!("{m} ms")),
            self.cost_usd_mean_per_case_run
                .map_or("n/a".into(), |c| format!("${c:.4}")),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryTotals {
    pub passed: u64,
    pub total: u64,
    /// Cases that passed some runs but not all (passed by the policy or not).
    pub flaky: u64,
    pub pass_rate: f64,
    pub wilson_95: [f64; 2],
    pub runs_passed: u64,
    pub runs_total: u64,
    pub stats: RunStats,
}

/// summary.json's `schema_version`: the format of docs/schemas/summary.schema.json.
/// 2: a run's `latency_ms` is the latency its cap judged (model time plus
/// harness CPU, or wall time where its `latency` says so), no longer wall
/// time; `latency` and the stats' `latency_judged` and `wall_ms_p95` added.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// This file's format version (`SCHEMA_VERSION`): raised when a
    /// field changes meaning or goes away. A file written before the field
    /// existed reads as 0.
    #[serde(default)]
    pub schema_version: u32,
    pub passed: bool,
    pub cases: Vec<CaseRecord>,
    pub categories: BTreeMap<String, CategoryTotals>,
    /// Every category together.
    pub overall: CategoryTotals,
    pub p95_definition: String,
    /// The categories this run was asked for (the four main ones, or those
    /// named with --category): `merge` refuses shards whose union lacks one.
    pub categories_required: Vec<String>,
    pub git_rev: String,
    pub config_hash: String,
    pub runs_per_case: u32,
    pub pass_rate_policy: f64,
    pub shard: Option<String>,
    /// Every case id of the suite before sharding: what `merge` checks
    /// completeness against.
    pub suite_case_ids: Vec<String>,
    pub load_errors: Vec<crate::suite::LoadError>,
    pub case_runs: u64,
    pub wall_ms: u64,
    pub case_runs_per_s: f64,
    /// Set when the command was interrupted (SIGINT, SIGTERM, SIGHUP): the
    /// signal, and what finished. An interrupted run never passes; its
    /// unfinished case-runs are bench faults (`interrupted`), not verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// Per-category policy: adversarial cases must pass every run; the others
/// pass when at least `pass_rate` of their runs pass.
pub fn case_passes(category: &str, runs: &[RunRecord], pass_rate: f64) -> bool {
    if runs.is_empty() {
        return false;
    }
    let ok = runs.iter().filter(|r| r.passed).count();
    if category == "adversarial" {
        ok == runs.len()
    } else {
        ok as f64 / runs.len() as f64 >= pass_rate - 1e-12
    }
}

/// A case's record from its runs (sorted by run index) under the pass policy.
pub fn case_record(
    c: &crate::record::CaseMeta,
    runs: Vec<RunRecord>,
    pass_rate: f64,
) -> CaseRecord {
    let score = if runs.is_empty() {
        0.0
    } else {
        runs.iter().map(|r| r.score).sum::<f64>() / runs.len() as f64
    };
    CaseRecord {
        id: c.id.clone(),
        category: c.category.clone(),
        title: c.title.clone(),
        covers: c.covers.clone(),
        passed: case_passes(&c.category, &runs, pass_rate),
        outcome: Outcome::of(&runs),
        score,
        runs,
        known_flaky: c.known_flaky.clone(),
    }
}

/// The totals of a set of case records.
pub fn totals_of(cases: &[&CaseRecord]) -> CategoryTotals {
    let total = cases.len() as u64;
    let passed = cases.iter().filter(|c| c.passed).count() as u64;
    let (lo, hi) = wilson(passed, total, Z95);
    CategoryTotals {
        passed,
        total,
        flaky: cases.iter().filter(|c| c.outcome == Outcome::Flaky).count() as u64,
        pass_rate: if total == 0 {
            0.0
        } else {
            passed as f64 / total as f64
        },
        wilson_95: [lo, hi],
        runs_passed: cases
            .iter()
            .map(|c| c.runs.iter().filter(|r| r.passed).count() as u64)
            .sum(),
        runs_total: cases.iter().map(|c| c.runs.len() as u64).sum(),
        stats: RunStats::of(cases.iter().flat_map(|c| c.runs.iter())),
    }
}

/// Recompute every per-category total from the case records.
pub fn totals(cases: &[CaseRecord]) -> BTreeMap<String, CategoryTotals> {
    let mut by: BTreeMap<String, Vec<&CaseRecord>> = BTreeMap::new();
    for c in cases {
        by.entry(c.category.clone()).or_default().push(c);
    }
    by.into_iter().map(|(k, v)| (k, totals_of(&v))).collect()
}

/// Why the policy passed or failed a flaky case, in words.
pub(crate) fn policy_words(c: &CaseRecord, pass_rate: f64) -> String {
    match (c.passed, c.category == "adversarial") {
        (true, _) => format!(
            "passed by the policy (at least {:.0}% of runs)",
            100.0 * pass_rate
        ),
        (false, true) => "failed: adversarial cases must pass every run".into(),
        (false, false) => format!(
            "failed: fewer than {:.0}% of runs passed",
            100.0 * pass_rate
        ),
    }
}

/// One sentence for a known-flaky case: its marker and what this run did.
pub(crate) fn known_flaky_words(c: &CaseRecord) -> Option<String> {
    let k = c.known_flaky.as_ref()?;
    Some(format!(
        "{}: {}; this time {}, {} runs passed",
        k.label(),
        k.note.trim(),
        c.outcome.as_str(),
        runs_passed(c)
    ))
}

pub(crate) fn runs_passed(c: &CaseRecord) -> String {
    format!(
        "{}/{}",
        c.runs.iter().filter(|r| r.passed).count(),
        c.runs.len()
    )
}

/// Whether a written summary also goes to the CI's step summary
/// (`GITHUB_STEP_SUMMARY`, when the CI offers one): a command's own
/// verdict does; a drill-down under it (`bench ab`'s per-arm summaries)
/// does not, so the step summary holds one verdict per command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSummary {
    Append,
    Skip,
}

impl Summary {
    pub fn finish(&mut self) {
        self.cases.sort_by(|a, b| {
            (a.category.as_str(), a.id.as_str()).cmp(&(b.category.as_str(), b.id.as_str()))
        });
        for c in &mut self.cases {
            c.outcome = Outcome::of(&c.runs);
        }
        self.categories = totals(&self.cases);
        self.overall = totals_of(&self.cases.iter().collect::<Vec<_>>());
        self.p95_definition = P95_DEFINITION.into();
        self.case_runs = self.cases.iter().map(|c| c.runs.len() as u64).sum();
        self.passed = self.load_errors.is_empty()
            && self.interrupted.is_none()
            && !self.cases.is_empty()
            && self.cases.iter().all(|c| c.passed);
    }

    /// The summary.json a `bench run --out DIR` wrote.
    pub fn read(dir: &Path) -> Result<Summary, ReadError> {
        let path = dir.join("summary.json");
        match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice::<Summary>(&b)
                .map_err(|source| ReadError::Parse { path, source }),
            Err(source) => Err(ReadError::Io { path, source }),
        }
    }

    /// The ids of the cases that did not pass (failed, flaky under the
    /// policy, faulted or interrupted), in the summary's order.
    pub fn not_passed(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.id.clone())
            .collect()
    }

    /// summary.md: GitHub-flavoured markdown for a CI step summary. Text
    /// from outside the bench (titles, causes, failures, load errors) goes
    /// through [`md`]; the whole is kept under [`SUMMARY_MD_MAX_BYTES`].
    /// Live or hybrid: how the case-runs' model calls were answered. None
    /// when every case-run was replayed whole.
    pub fn traffic_line(&self) -> Option<String> {
        let runs: Vec<&RunRecord> = self.cases.iter().flat_map(|c| &c.runs).collect();
        let calls: Vec<&crate::live::LiveCalls> =
            runs.iter().filter_map(|r| r.live_calls.as_ref()).collect();
        if calls.is_empty() {
            return None;
        }
        let replayed: u64 = calls.iter().map(|c| c.replayed).sum();
        let live: u64 = calls.iter().map(|c| c.live).sum();
        let usd: f64 = calls.iter().map(|c| c.live_usd).sum();
        let went_live = calls.iter().filter(|c| c.live > 0).count();
        let measured = runs
            .iter()
            .filter(|r| r.live_calls.is_some() && r.bench_fault.is_none())
            .count();
        Some(format!(
            "Model traffic: {replayed} calls replayed, {live} live (${usd:.4}); {went_live} of {} case-runs went live; {measured} of {} measured under their own conditions.",
            runs.len(),
            runs.len()
        ))
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.md_head(&mut s);
        self.md_table(&mut s);
        if let Some(line) = self.traffic_line() {
            s.push_str(&format!("\n{line}\n"));
        }
        self.md_flaky(&mut s);
        self.md_known_flaky(&mut s);
        self.md_load_errors(&mut s);
        self.md_failures(&mut s);
        s.push_str(&format!(
            "\nconfig `{}` at git `{}`\n",
            &self.config_hash[..self.config_hash.len().min(16)],
            self.git_rev
        ));
        bound_markdown(s)
    }

    /// The verdict line: PASS, FAIL or INTERRUPTED, and the counts.
    fn md_head(&self, s: &mut String) {
        let total: u64 = self.categories.values().map(|t| t.total).sum();
        let passed: u64 = self.categories.values().map(|t| t.passed).sum();
        s.push_str(&format!(
            "## bench run: {}\n\n{passed}/{total} cases passed ({} case-runs, {} per case){}.\n\n",
            match (&self.interrupted, self.passed) {
                (Some(i), _) => format!("INTERRUPTED ({})", md(i)),
                (None, true) => "PASS".into(),
                (None, false) => "FAIL".into(),
            },
            self.case_runs,
            self.runs_per_case,
            self.shard
                .as_ref()
                .map(|x| format!(", shard {x}"))
                .unwrap_or_default()
        ));
    }

    /// The table per category and overall, and how its latency is read.
    fn md_table(&self, s: &mut String) {
        s.push_str(
            "| category | passed | total | flaky | pass rate | Wilson 95% | mean latency | p95 latency | mean cost per case-run |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n",
        );
        for (k, t) in self
            .categories
            .iter()
            .map(|(k, t)| (k.as_str(), t))
            .chain(std::iter::once(("**all**", &self.overall)))
        {
            let [mean, p95, cost] = t.stats.cells();
            s.push_str(&format!(
                "| {k} | {} | {} | {} | {:.1}% | [{:.1}%, {:.1}%] | {mean} | {p95} | {cost} |\n",
                t.passed,
                t.total,
                t.flaky,
                100.0 * t.pass_rate,
                100.0 * t.wilson_95[0],
                100.0 * t.wilson_95[1]
            ));
        }
        s.push_str(&format!(
            "\nLatency and cost over the case-runs whose harness wrote a report; p95 by {P95_DEFINITION}.\n"
        ));
        s.push_str(&format!("{}\n", self.overall.stats.latency_note()));
    }

    /// Cases that passed some runs but not all, with their failed runs.
    fn md_flaky(&self, s: &mut String) {
        let flaky: Vec<&CaseRecord> = self
            .cases
            .iter()
            .filter(|c| c.outcome == Outcome::Flaky)
            .collect();
        if !flaky.is_empty() {
            s.push_str("\n### Flaky\n\nCases that passed some runs but not all, whatever the policy made of them.\n\n");
            for c in flaky {
                s.push_str(&format!(
                    "- **{}** ({}): flaky, {} runs passed; {}; failed run(s): {}\n",
                    md(&c.id),
                    c.category,
                    runs_passed(c),
                    policy_words(c, self.pass_rate_policy),
                    c.runs
                        .iter()
                        .filter(|r| !r.passed)
                        .map(|r| format!(
                            "run {}: {}{}",
                            r.run,
                            md(&r.headline()),
                            r.failures
                                .first()
                                .filter(|f| Some(*f) != r.cause.as_ref())
                                .map(|f| format!("; {}", md(f)))
                                .unwrap_or_default()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }

    /// Cases marked `known_flaky`, never hidden.
    fn md_known_flaky(&self, s: &mut String) {
        let known: Vec<String> = self
            .cases
            .iter()
            .filter_map(|c| {
                Some(format!(
                    "- **{}** ({}): {}\n",
                    md(&c.id),
                    c.category,
                    md(&known_flaky_words(c)?)
                ))
            })
            .collect();
        if !known.is_empty() {
            s.push_str("\n### Known flaky\n\nCases marked `known_flaky` in case.toml: run and judged like every case, never hidden.\n\n");
            s.push_str(&known.concat());
        }
    }

    /// Case files that did not load.
    fn md_load_errors(&self, s: &mut String) {
        if !self.load_errors.is_empty() {
            s.push_str("\n### Cases that could not be loaded\n\n");
            for e in &self.load_errors {
                s.push_str(&format!("- {}\n", md(&e.to_string())));
            }
        }
    }

    /// Every failed case and its failed runs: cause, ending, state dir.
    fn md_failures(&self, s: &mut String) {
        let failed: Vec<&CaseRecord> = self.cases.iter().filter(|c| !c.passed).collect();
        if !failed.is_empty() {
            s.push_str("\n### Failures\n\n");
            for c in failed {
                s.push_str(&format!(
                    "**{}** ({}, {}, {} runs passed): {}\n\n",
                    md(&c.id),
                    c.category,
                    c.outcome.as_str(),
                    runs_passed(c),
                    md(&c.title)
                ));
                for r in c.runs.iter().filter(|r| !r.passed) {
                    if let Some(cause) = &r.cause {
                        let cause = md(cause);
                        s.push_str(&format!("- run {}: **{cause}**\n  - expected `{}`, got `{}` (exit {}), score {:.2}; state dir `{}`\n", r.run, r.expected_ending, r.ending_name(), r.exit_code, r.score, r.state_dir));
                    } else {
                        s.push_str(&format!("- run {}: expected `{}`, got `{}` (exit {}), score {:.2}; state dir `{}`\n", r.run, r.expected_ending, r.ending_name(), r.exit_code, r.score, r.state_dir));
                    }
                    for f in &r.failures {
                        s.push_str(&format!("  - {}\n", md(f)));
                    }
                }
                s.push('\n');
            }
        }
    }

    /// One JUnit test case per suite case (the unit the gate judges), its
    /// runs as reruns: a flaky case the policy passes is a success with
    /// `flakyFailure` elements, one per failed run; a failed case is a
    /// `failure` (its first failed run) with `rerunFailure` for the other
    /// failed runs. Every case carries an `outcome` property (passed, flaky,
    /// failed), since a flaky case the policy fails has no JUnit element of
    /// its own.
    pub fn junit(&self) -> Result<String, quick_junit::SerializeError> {
        use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
        let mut report = Report::new("bench run");
        for cat in self.categories.keys() {
            let mut suite = TestSuite::new(cat.as_str());
            for c in self.cases.iter().filter(|c| &c.category == cat) {
                suite.add_test_case(self.junit_case(c));
            }
            report.add_test_suite(suite);
        }
        if !self.load_errors.is_empty() {
            let mut suite = TestSuite::new("load");
            for e in &self.load_errors {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                st.set_message(e.to_string());
                suite.add_test_case(TestCase::new(e.file.clone(), st));
            }
            report.add_test_suite(suite);
        }
        report.to_string()
    }

    /// A case as one JUnit test case: its status from its runs (skipped when
    /// the command's interruption cut them, flaky failures under a pass),
    /// its time the sum of its runs', its outcome as properties.
    fn junit_case(&self, c: &CaseRecord) -> quick_junit::TestCase {
        use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus};
        let failed: Vec<&RunRecord> = c.runs.iter().filter(|r| !r.passed).collect();
        let cut = |r: &&RunRecord| {
            matches!(
                r.bench_fault,
                Some(crate::bench_fault::BenchFault::Interrupted { .. })
            )
        };
        let status = if !failed.is_empty() && failed.iter().all(cut) {
            // Not finished because the command was interrupted: no
            // verdict, said as skipped with the reason.
            let mut st = TestCaseStatus::skipped();
            st.set_message(format!(
                "not finished: {} of {} run(s) interrupted ({})",
                failed.len(),
                c.runs.len(),
                self.interrupted.as_deref().unwrap_or("interrupted")
            ));
            st
        } else if c.passed {
            // A flaky case the policy passes: flakyFailure per failed run.
            let mut st = TestCaseStatus::success();
            st.add_reruns(failed.iter().map(|r| junit_rerun(r)));
            st
        } else {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let head = match failed.first() {
                Some(r) => junit_said(&format!(
                    "{}; {}",
                    junit_run_message(r),
                    r.failures.join("; ")
                )),
                None => "no run".into(),
            };
            st.set_message(format!(
                "{}, {} runs passed ({}): {head}",
                c.outcome.as_str(),
                runs_passed(c),
                policy_words(c, self.pass_rate_policy)
            ));
            if let Some((r, rest)) = failed.split_first() {
                st.set_description(junit_said(&r.failures.join("\n")));
                st.add_reruns(rest.iter().map(|r| junit_rerun(r)));
            }
            st
        };
        let mut tc = TestCase::new(c.id.as_str(), status);
        tc.set_classname(format!("suites.{}", c.category));
        // The time is wall time, as a CI reader expects of it; the
        // `latency` property says what each run's cap judged.
        tc.set_time(std::time::Duration::from_millis(
            c.runs.iter().map(|r| r.wall_ms()).sum(),
        ));
        tc.add_property(Property::new("outcome", c.outcome.as_str()));
        let judged: Vec<String> = (c.runs.iter())
            .filter_map(|r| Some(format!("run {}: {}", r.run, r.latency?.words())))
            .collect();
        if !judged.is_empty() {
            tc.add_property(Property::new("latency", judged.join("; ")));
        }
        tc.add_property(Property::new("runs_passed", runs_passed(c)));
        if let Some(k) = &c.known_flaky {
            tc.add_property(Property::new("known_flaky", k.label()));
        }
        tc
    }

    /// One line per flaky case and per known-flaky case, for the terminal.
    pub fn flaky_lines(&self) -> Vec<String> {
        let flaky = (self.cases.iter())
            .filter(|c| c.outcome == Outcome::Flaky)
            .map(|c| {
                format!(
                    "FLAKY {}/{}: {} runs passed; {}",
                    c.category,
                    c.id,
                    runs_passed(c),
                    policy_words(c, self.pass_rate_policy)
                )
            });
        let known = (self.cases.iter()).filter_map(|c| {
            Some(format!(
                "KNOWN FLAKY {}/{}: {}",
                c.category,
                c.id,
                known_flaky_words(c)?
            ))
        });
        flaky.chain(known).collect()
    }

    pub fn table(&self) -> String {
        use tabled::{builder::Builder, settings::Style};
        let mut b = Builder::default();
        b.push_record([
            "category",
            "passed",
            "total",
            "flaky",
            "pass rate",
            "Wilson 95%",
            "runs passed",
            "mean latency",
            "p95 latency",
            "mean cost/run",
        ]);
        for (k, t) in self
            .categories
            .iter()
            .map(|(k, t)| (k.as_str(), t))
            .chain(std::iter::once(("all", &self.overall)))
        {
            let [mean, p95, cost] = t.stats.cells();
            b.push_record([
                k.to_string(),
                t.passed.to_string(),
                t.total.to_string(),
                t.flaky.to_string(),
                format!("{:.1}%", 100.0 * t.pass_rate),
                format!(
                    "[{:.1}%, {:.1}%]",
                    100.0 * t.wilson_95[0],
                    100.0 * t.wilson_95[1]
                ),
                format!("{}/{}", t.runs_passed, t.runs_total),
                mean,
                p95,
                cost,
            ]);
        }
        let mut t = b.build();
        t.with(Style::sharp());
        t.to_string()
    }
}

/// What the model or a check wrote, as XML 1.0 can carry it (no control
/// byte) and bounded.
fn junit_said(s: &str) -> String {
    harness::text::printable(&harness::text::clip_chars(s, MD_FIELD_MAX_CHARS)).into_owned()
}

fn junit_run_message(r: &RunRecord) -> String {
    junit_said(&format!(
        "run {}: {} (exit {})",
        r.run,
        r.headline(),
        r.exit_code
    ))
}

/// A failed run of a case as a JUnit rerun (flakyFailure or rerunFailure).
fn junit_rerun(r: &RunRecord) -> quick_junit::TestRerun {
    let mut x = quick_junit::TestRerun::new(quick_junit::NonSuccessKind::Failure);
    x.set_message(junit_run_message(r));
    x.set_description(junit_said(&r.failures.join("\n")));
    x.set_time(std::time::Duration::from_millis(r.wall_ms()));
    x
}

/// Why an output dir's summary.json could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Parse {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
}

/// The hash `bench merge` compares across shards: every case's id and
/// content, the runs per case and the pass rate.
pub fn config_hash(cases: &[crate::suite::Case], runs_per_case: u32, pass_rate: f64) -> String {
    use sha2::{Digest, Sha256};
    let mut ids: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| (c.id(), c.content_sha256.as_str()))
        .collect();
    ids.sort();
    let mut h = Sha256::new();
    for (id, sha) in ids {
        h.update(format!("{id}={sha};").as_bytes());
    }
    h.update(format!("runs_per_case={runs_per_case};pass_rate={pass_rate}").as_bytes());
    hex::encode(h.finalize())
}

pub fn git_rev(dir: &std::path::Path) -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// GitHub's step summary shows at most 1 MiB: summary.md stays under it,
/// in bytes (summary.json keeps everything).
pub const SUMMARY_MD_MAX_BYTES: usize = 1000 * 1024;
/// One piece of outside text in summary.md, in characters.
pub const MD_FIELD_MAX_CHARS: usize = 2000;

/// Text from outside the bench as one markdown table cell or list item:
/// bounded, control bytes made printable (harness::text::printable), `&`,
/// `<`, `>` as entities (GitHub renders inline HTML), `|` escaped (a table
/// cell), line breaks folded (a list item).
pub fn md(s: &str) -> String {
    let clipped = harness::text::clip_chars(s, MD_FIELD_MAX_CHARS);
    let mut out = String::with_capacity(clipped.len());
    for c in harness::text::printable(&clipped).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut at a line boundary under [`SUMMARY_MD_MAX_BYTES`], saying so.
fn bound_markdown(mut s: String) -> String {
    if s.len() <= SUMMARY_MD_MAX_BYTES {
        return s;
    }
    let note = "\n\n**summary.md was cut here to stay under GitHub's 1 MiB step-summary limit; summary.json has every case-run.**\n";
    let mut cut = SUMMARY_MD_MAX_BYTES - note.len();
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = s[..cut].rfind('\n').unwrap_or(cut);
    s.truncate(cut);
    s.push_str(note);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(r: u32, passed: bool, latency_ms: u64, cost_usd: f64) -> RunRecord {
        RunRecord {
            live_calls: None,
            latency: None,
            run: r,
            ending: Some(if passed {
                harness::ending::Ending::GoalMet
            } else {
                harness::ending::Ending::NoProgress
            }),
            exit_code: if passed { 0 } else { 3 },
            passed,
            score: if passed { 1.0 } else { 0.5 },
            cost_usd,
            latency_ms,
            expected_ending: harness::ending::Ending::GoalMet,
            checks: vec![],
            failures: if passed {
                vec![]
            } else {
                vec![format!("ending: run {r} wrong")]
            },
            state_dir: String::new(),
            verified: 1,
            bench_fault: None,
            cause: None,
        }
    }

    fn case(id: &str, category: &str, runs: Vec<RunRecord>) -> CaseRecord {
        CaseRecord {
            id: id.into(),
            category: category.into(),
            title: "t".into(),
            covers: vec![],
            passed: case_passes(category, &runs, 0.66),
            outcome: Outcome::of(&runs),
            score: 1.0,
            runs,
            known_flaky: None,
        }
    }

    fn summary(cases: Vec<CaseRecord>) -> Summary {
        let mut s = Summary {
            schema_version: crate::summary::SCHEMA_VERSION,
            passed: false,
            cases,
            categories: Default::default(),
            overall: totals_of(&[]),
            p95_definition: String::new(),
            categories_required: vec![],
            git_rev: "g".into(),
            config_hash: "0".repeat(64),
            runs_per_case: 3,
            pass_rate_policy: 0.66,
            shard: None,
            suite_case_ids: vec![],
            load_errors: vec![],
            case_runs: 0,
            wall_ms: 0,
            case_runs_per_s: 0.0,
            interrupted: None,
        };
        s.finish();
        s
    }

    #[test]
    fn hostile_and_huge_text_stays_text_and_the_file_stays_under_a_mebibyte() {
        let hostile = "<script>alert(1)</script></table>| \u{1b}[2J\u{7} &";
        let mut runs: Vec<RunRecord> = (0..3).map(|r| run(r, false, 1, 0.0)).collect();
        for r in &mut runs {
            r.cause = Some(format!("cause {hostile}"));
            r.failures = vec![format!("files_contain: {hostile}"), "x".repeat(5_000_000)];
        }
        let mut c = case("c", "happy", runs);
        c.title = format!("title {hostile}");
        let many: Vec<CaseRecord> = (0..400)
            .map(|i| {
                let mut k = c.clone();
                k.id = format!("c{i}");
                k
            })
            .collect();
        let md = summary(many).markdown();
        assert!(md.len() <= SUMMARY_MD_MAX_BYTES, "{}", md.len());
        assert!(md.contains("cut here"), "the cut is said");
        for raw in ["<script", "</table>", "\u{1b}", "\u{7}"] {
            assert!(!md.contains(raw), "{raw:?} reached summary.md");
        }
        assert!(md.contains(
            "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/table&gt;\\| \u{241b}[2J\u{2407} &amp;"
        ));
        // JUnit: no control byte (XML 1.0 cannot carry ESC or BEL), bounded.
        let one = summary(vec![c.clone()]);
        let x = one.junit().unwrap();
        assert!(
            !x.contains('\u{1b}') && !x.contains('\u{7}'),
            "a control byte in JUnit"
        );
        assert!(
            x.len() < 4 * MD_FIELD_MAX_CHARS * 6,
            "JUnit holds {} bytes",
            x.len()
        );
    }

    #[test]
    fn a_known_flaky_case_is_labelled_in_every_output_whatever_it_did() {
        let mut stable = case(
            "marked",
            "happy",
            vec![run(0, true, 1, 0.0), run(1, true, 1, 0.0)],
        );
        stable.known_flaky = Some(crate::known_flaky::KnownFlaky {
            cause: crate::known_flaky::Cause::Timing,
            since: "2026-12-01".into(),
            note: "slow runner".into(),
        });
        let s = summary(vec![
            stable,
            case("plain", "happy", vec![run(0, true, 1, 0.0)]),
        ]);
        let label = "known flaky (timing, since 2026-12-01)";
        let md = s.markdown();
        assert!(
            md.contains("### Known flaky")
                && md.contains(&format!(
                    "**marked** (happy): {label}: slow runner; this time passed, 2/2 runs passed"
                )),
            "{md}"
        );
        assert!(!md.contains("**plain** (happy): known"), "{md}");
        let junit = s.junit().unwrap();
        assert!(
            junit.contains(&format!("name=\"known_flaky\" value=\"{label}\"")),
            "{junit}"
        );
        assert_eq!(junit.matches("known_flaky").count(), 1, "{junit}");
        let lines = s.flaky_lines();
        assert_eq!(
            lines,
            vec![format!(
                "KNOWN FLAKY happy/marked: {label}: slow runner; this time passed, 2/2 runs passed"
            )]
        );
        let page = crate::page::suite_page(&s, std::path::Path::new("/out"));
        assert!(
            page.contains("Known flaky") && page.contains(label),
            "the suite page"
        );
        // summary.json keeps it, and reads back.
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.cases[0].known_flaky, s.cases[0].known_flaky);
        assert_eq!(back.cases[1].known_flaky, None);
    }

    #[test]
    fn p95_is_the_nearest_rank_on_hand_computed_fixtures() {
        // 20 values: rank ceil(0.95 * 20) = 19, the second largest (1000),
        // not the 2000 outlier and not an interpolation between them.
        let v = [
            120, 80, 300, 95, 110, 1000, 90, 100, 105, 85, 130, 99, 101, 102, 103, 104, 106, 107,
            108, 2000,
        ];
        assert_eq!(p95_nearest_rank(&v), Some(1000));
        // 7 values: rank ceil(6.65) = 7, the largest.
        assert_eq!(p95_nearest_rank(&[5, 1, 7, 3, 2, 6, 4]), Some(7));
        // 21 values 1..=21: rank ceil(19.95) = 20.
        let v: Vec<u64> = (1..=21).rev().collect();
        assert_eq!(p95_nearest_rank(&v), Some(20));
        // 100 values 1..=100: rank 95.
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(p95_nearest_rank(&v), Some(95));
        assert_eq!(p95_nearest_rank(&[42]), Some(42));
        assert_eq!(p95_nearest_rank(&[]), None);
    }

    #[test]
    fn latency_and_cost_per_category_and_overall_are_over_reported_case_runs() {
        let mut never_started = run(2, false, 0, 0.0);
        never_started.ending = None;
        never_started.exit_code = -1;
        let s = summary(vec![
            case(
                "h1",
                "happy",
                vec![
                    run(0, true, 100, 0.10),
                    run(1, true, 300, 0.30),
                    never_started,
                ],
            ),
            case("e1", "edge", vec![run(0, true, 1000, 0.5)]),
        ]);
        let h = &s.categories["happy"].stats;
        // The case-run that never started has no latency or cost to count.
        assert_eq!(h.case_runs, 2);
        assert_eq!(h.latency_ms_mean, Some(200.0));
        assert_eq!(h.latency_ms_p95, Some(300));
        assert!((h.cost_usd_mean_per_case_run.unwrap() - 0.20).abs() < 1e-12);
        let all = &s.overall.stats;
        assert_eq!(all.case_runs, 3);
        assert!((all.latency_ms_mean.unwrap() - 1400.0 / 3.0).abs() < 1e-9);
        assert_eq!(all.latency_ms_p95, Some(1000));
        assert!((all.cost_usd_mean_per_case_run.unwrap() - 0.9 / 3.0).abs() < 1e-12);
        assert_eq!(s.overall.total, 2);
        assert!(s.p95_definition.starts_with("nearest rank"));
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["categories"]["happy"]["stats"]["latency_ms_p95"], 300);
        assert_eq!(j["overall"]["stats"]["latency_ms_p95"], 1000);
        let md = s.markdown();
        assert!(
            md.contains("| **all** |") && md.contains("p95 latency"),
            "{md}"
        );
    }

    #[test]
    fn a_case_that_passes_some_runs_is_flaky_everywhere_whatever_the_policy() {
        let s = summary(vec![
            // 2 of 3: flaky, and the 2-of-3 policy passes it.
            case(
                "happy-flaky",
                "happy",
                vec![
                    run(0, true, 1, 0.1),
                    run(1, false, 1, 0.1),
                    run(2, true, 1, 0.1),
                ],
            ),
            // 1 of 3 adversarial: flaky, and failed (must pass every run).
            case(
                "adv-flaky",
                "adversarial",
                vec![
                    run(0, false, 1, 0.1),
                    run(1, true, 1, 0.1),
                    run(2, false, 1, 0.1),
                ],
            ),
            case("solid", "happy", vec![run(0, true, 1, 0.1); 3]),
            case("broken", "edge", vec![run(0, false, 1, 0.1); 3]),
        ]);
        let by = |id: &str| s.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(
            (by("happy-flaky").outcome, by("happy-flaky").passed),
            (Outcome::Flaky, true)
        );
        assert_eq!(
            (by("adv-flaky").outcome, by("adv-flaky").passed),
            (Outcome::Flaky, false)
        );
        assert_eq!(by("solid").outcome, Outcome::Passed);
        assert_eq!(by("broken").outcome, Outcome::Failed);
        assert_eq!(s.categories["happy"].flaky, 1);
        assert_eq!(s.categories["adversarial"].flaky, 1);
        assert_eq!(s.overall.flaky, 2);
        // summary.json: a closed enum value.
        let j = serde_json::to_value(&s).unwrap();
        let outcomes: Vec<&str> = j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(
            outcomes.iter().filter(|o| **o == "flaky").count(),
            2,
            "{outcomes:?}"
        );
        // Terminal.
        let lines = s.flaky_lines();
        assert!(lines.contains(&"FLAKY happy/happy-flaky: 2/3 runs passed; passed by the policy (at least 66% of runs)".to_string()), "{lines:?}");
        assert!(lines.contains(&"FLAKY adversarial/adv-flaky: 1/3 runs passed; failed: adversarial cases must pass every run".to_string()), "{lines:?}");
        assert!(s.table().contains("flaky"));
        // summary.md.
        let md = s.markdown();
        assert!(
            md.contains("### Flaky")
                && md.contains("**happy-flaky** (happy): flaky, 2/3 runs passed"),
            "{md}"
        );
        // JUnit: one test case per case; the policy-passed flaky case is a
        // success with a flakyFailure for its failed run, the failed one a
        // failure with a rerunFailure; both say outcome = flaky.
        let x = s.junit().unwrap();
        let tc = |id: &str| {
            let start = x.find(&format!("<testcase name=\"{id}\"")).unwrap();
            let end = start + x[start..].find("</testcase>").unwrap();
            x[start..end].to_string()
        };
        let hf = tc("happy-flaky");
        assert!(
            hf.contains("<flakyFailure") && !hf.contains("<failure"),
            "{hf}"
        );
        assert!(hf.contains("name=\"outcome\" value=\"flaky\""), "{hf}");
        let af = tc("adv-flaky");
        assert!(
            af.contains("<failure") && af.contains("<rerunFailure"),
            "{af}"
        );
        assert!(af.contains("name=\"outcome\" value=\"flaky\""), "{af}");
        assert!(af.contains("flaky, 1/3 runs passed"), "{af}");
        assert!(tc("solid").contains("value=\"passed\""));
        assert_eq!(x.matches("<testcase ").count(), 4, "{x}");
    }
}
