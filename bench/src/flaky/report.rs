//! flaky.json (the contract `--baseline` reads back), flaky.md and the
//! terminal table.

use super::evidence::{Lane, Stability};
use crate::known_flaky::{Cause, KnownFlaky};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "bench-flaky/1";
/// flaky.json's `schema_version`: the format of docs/schemas/flaky.schema.json.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlakyReport {
    /// This file's format version (`SCHEMA_VERSION`): raised when a
    /// field changes meaning or goes away. A file written before the field
    /// existed reads as 0.
    #[serde(default)]
    pub schema_version: u32,
    pub schema: String,
    pub suite: String,
    pub git_rev: String,
    /// Reruns per lane.
    pub reruns: u32,
    /// No case is flaky beyond its marker (the exit status).
    pub passed: bool,
    pub totals: Totals,
    pub case_runs: u64,
    pub wall_ms: u64,
    pub baseline: Option<String>,
    /// Worst first: by pass^N, then pass rate, then id.
    pub cases: Vec<CaseFlakiness>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Totals {
    pub cases: u64,
    pub flaky: u64,
    /// Flaky, with a marker naming the cause found.
    pub known: u64,
    /// Flaky with no marker, or with a marker naming another cause.
    pub beyond_marker: u64,
    /// Marked, and not flaky now: remove the marker.
    pub fixed: u64,
    pub fails_every_run: u64,
    /// Case-runs that ended in the bench's own machinery (no evidence).
    pub bench_faults: u64,
    /// Flaky cases per cause.
    pub by_cause: std::collections::BTreeMap<Cause, u64>,
    /// Mean pass^k over the cases (tau-bench's suite figure), k = 1, 3, N.
    pub pass_hat: PassHat,
}

/// pass^k for k = 1, 3 and N (None where k exceeds the runs).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PassHat {
    pub k1: Option<f64>,
    pub k3: Option<f64>,
    pub kn: Option<f64>,
}

/// What the marker and the evidence say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarkerStatus {
    /// Not flaky, not marked.
    Clean,
    /// Flaky for the cause its marker names.
    Known,
    /// Flaky, and not marked (or marked for another cause): fails the command.
    BeyondMarker,
    /// Marked, and its cause no longer reproduces: remove the marker.
    Fixed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaneResult {
    pub lane: Lane,
    pub runs: u64,
    pub passed: u64,
    /// Bench faults in this lane (not counted in runs).
    pub bench_faults: u64,
    /// What it varied, e.g. "seeds 12..21" or "latency x1.00..x2.00".
    pub varied: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub passed: u64,
    pub runs: u64,
    /// The pass rate is lower now.
    pub fell: bool,
    /// Fisher's exact test, one-sided, that the rate fell (only when it did).
    pub p_value: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFlakiness {
    pub id: String,
    pub category: String,
    pub title: String,
    /// The runs as written (what the gate samples).
    pub runs: u64,
    pub passed: u64,
    pub pass_rate: f64,
    pub wilson_95: [f64; 2],
    pub pass_hat: PassHat,
    pub stability: Stability,
    pub cause: Option<Cause>,
    pub evidence: String,
    pub remedy: Option<String>,
    pub marker: Option<KnownFlaky>,
    pub marker_status: MarkerStatus,
    pub lanes: Vec<LaneResult>,
    /// Lanes not run, and why.
    pub not_run: Vec<String>,
    pub baseline: Option<Baseline>,
    /// A failing case-run's state dir, to start from.
    pub example_failure: Option<String>,
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

fn status_words(c: &CaseFlakiness) -> String {
    match c.marker_status {
        MarkerStatus::Clean => match c.stability {
            Stability::Passes => "stable".into(),
            Stability::FailsEveryRun => "fails every run".into(),
            Stability::NoEvidence => "no evidence (bench faults)".into(),
            Stability::Flaky => "flaky".into(),
        },
        MarkerStatus::Known => "known flaky".into(),
        MarkerStatus::BeyondMarker => match &c.marker {
            Some(m) => format!(
                "FLAKY: marked {} but the evidence says {}",
                m.cause,
                c.cause.map(|x| x.as_str()).unwrap_or("?")
            ),
            None => "FLAKY".into(),
        },
        MarkerStatus::Fixed => "fixed: remove the marker".into(),
    }
}

fn baseline_words(b: &Option<Baseline>, now: (u64, u64)) -> String {
    match b {
        None => "-".into(),
        Some(b) if b.fell => format!(
            "fell {}/{} -> {}/{} (p = {})",
            b.passed,
            b.runs,
            now.0,
            now.1,
            opt(b.p_value)
        ),
        Some(b) => format!("{}/{} before", b.passed, b.runs),
    }
}

/// One case's line of the markdown table.
fn case_row(c: &CaseFlakiness) -> String {
    format!(
        "| `{}` | {} | {}/{} | {:.0}% [{:.0}%, {:.0}%] | {} | {} | {} | {} | {} | {} |\n",
        c.id,
        c.category,
        c.passed,
        c.runs,
        100.0 * c.pass_rate,
        100.0 * c.wilson_95[0],
        100.0 * c.wilson_95[1],
        opt(c.pass_hat.k1),
        opt(c.pass_hat.k3),
        opt(c.pass_hat.kn),
        status_words(c),
        c.cause.map(|x| x.as_str()).unwrap_or("-"),
        baseline_words(&c.baseline, (c.passed, c.runs)),
    )
}

/// The evidence of one notable case: its finding and remedy, each lane,
/// what did not run, its marker and a failing run to look at.
fn evidence_section(c: &CaseFlakiness) -> String {
    let mut s = format!(
        "**{}** ({}): {}. {}\n\n",
        c.id,
        status_words(c),
        c.evidence,
        c.cause
            .map(|x| format!("Remedy: {}.", x.remedy()))
            .unwrap_or_default()
    );
    for l in &c.lanes {
        s.push_str(&format!(
            "- {}: {}/{} passed ({}){}\n",
            l.lane.as_str(),
            l.passed,
            l.runs,
            l.varied,
            if l.bench_faults > 0 {
                format!(", {} bench faults", l.bench_faults)
            } else {
                String::new()
            }
        ));
    }
    for n in &c.not_run {
        s.push_str(&format!("- not run: {n}\n"));
    }
    if let Some(m) = &c.marker {
        s.push_str(&format!("- marker: {}: {}\n", m.label(), m.note.trim()));
    }
    if let Some(d) = &c.example_failure {
        s.push_str(&format!("- a failing case-run: `{d}`\n"));
    }
    s.push('\n');
    s
}

impl FlakyReport {
    pub fn markdown(&self) -> String {
        let t = &self.totals;
        let mut s = format!(
            "## bench flaky: {}\n\n{} cases, {} reruns per lane, {} case-runs in {:.1} s. Flaky: {} ({} known, {} beyond their marker); fixed markers: {}; failing every run: {}; bench faults: {}.\n\n",
            if self.passed { "PASS" } else { "FAIL" },
            t.cases,
            self.reruns,
            self.case_runs,
            self.wall_ms as f64 / 1000.0,
            t.flaky,
            t.known,
            t.beyond_marker,
            t.fixed,
            t.fails_every_run,
            t.bench_faults
        );
        s.push_str(&format!(
            "Suite mean pass^1 {}, pass^3 {}, pass^{} {} (tau-bench's estimator, C(c,k)/C(n,k) per case, over the runs as written).\n\n",
            opt(t.pass_hat.k1),
            opt(t.pass_hat.k3),
            self.reruns,
            opt(t.pass_hat.kn)
        ));
        if !t.by_cause.is_empty() {
            s.push_str("Causes: ");
            s.push_str(
                &t.by_cause
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            s.push_str(".\n\n");
        }
        s.push_str(&format!(
            "| case | category | passed | pass rate [Wilson 95%] | pass^1 | pass^3 | pass^{} | status | cause | baseline |\n|---|---|---:|---|---:|---:|---:|---|---|---|\n",
            self.reruns
        ));
        for c in &self.cases {
            s.push_str(&case_row(c));
        }
        let notable: Vec<&CaseFlakiness> = (self.cases.iter())
            .filter(|c| {
                c.stability != Stability::Passes
                    || c.marker.is_some()
                    || c.baseline.as_ref().is_some_and(|b| b.fell)
            })
            .collect();
        if !notable.is_empty() {
            s.push_str("\n### Evidence\n\n");
            for c in notable {
                s.push_str(&evidence_section(c));
            }
        }
        s.push_str(&format!(
            "\nsuite `{}` at git `{}`\n",
            self.suite, self.git_rev
        ));
        s
    }

    pub fn table(&self) -> String {
        use tabled::{builder::Builder, settings::Style};
        let mut b = Builder::default();
        b.push_record([
            "case".to_string(),
            "passed".into(),
            "Wilson 95%".into(),
            "pass^1".into(),
            "pass^3".into(),
            format!("pass^{}", self.reruns),
            "status".into(),
            "cause".into(),
        ]);
        for c in &self.cases {
            b.push_record([
                c.id.clone(),
                format!("{}/{}", c.passed, c.runs),
                format!(
                    "[{:.0}%, {:.0}%]",
                    100.0 * c.wilson_95[0],
                    100.0 * c.wilson_95[1]
                ),
                opt(c.pass_hat.k1),
                opt(c.pass_hat.k3),
                opt(c.pass_hat.kn),
                status_words(c),
                c.cause
                    .map(|x| x.as_str().to_string())
                    .unwrap_or_else(|| "-".into()),
            ]);
        }
        let mut t = b.build();
        t.with(Style::sharp());
        t.to_string()
    }
}
