//! The results of a suite run, and the reporters that consume them:
//! summary.json (the contract), summary.md (a CI step summary), JUnit XML,
//! and a terminal table. Totals are always recomputed from the per-case-run
//! records, never averaged from other totals (that is what makes `merge`
//! exact).

use crate::runner::RunRecord;
use crate::stats::{wilson, Z95};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    pub id: String,
    pub category: String,
    pub title: String,
    pub covers: Vec<String>,
    pub passed: bool,
    pub score: f64,
    pub runs: Vec<RunRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryTotals {
    pub passed: u64,
    pub total: u64,
    pub pass_rate: f64,
    pub wilson_95: [f64; 2],
    pub runs_passed: u64,
    pub runs_total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub passed: bool,
    pub cases: Vec<CaseRecord>,
    pub categories: BTreeMap<String, CategoryTotals>,
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

pub fn case_record(c: &crate::suite::Case, runs: Vec<RunRecord>, pass_rate: f64) -> CaseRecord {
    let score = if runs.is_empty() {
        0.0
    } else {
        runs.iter().map(|r| r.score).sum::<f64>() / runs.len() as f64
    };
    CaseRecord {
        id: c.id().into(),
        category: c.category().into(),
        title: c.file.title.clone(),
        covers: c.file.covers.clone(),
        passed: case_passes(c.category(), &runs, pass_rate),
        score,
        runs,
    }
}

/// Recompute every total from the case records.
pub fn totals(cases: &[CaseRecord]) -> BTreeMap<String, CategoryTotals> {
    let mut m: BTreeMap<String, CategoryTotals> = BTreeMap::new();
    for c in cases {
        let t = m.entry(c.category.clone()).or_insert(CategoryTotals {
            passed: 0,
            total: 0,
            pass_rate: 0.0,
            wilson_95: [0.0, 1.0],
            runs_passed: 0,
            runs_total: 0,
        });
        t.total += 1;
        t.passed += c.passed as u64;
        t.runs_total += c.runs.len() as u64;
        t.runs_passed += c.runs.iter().filter(|r| r.passed).count() as u64;
    }
    for t in m.values_mut() {
        t.pass_rate = if t.total == 0 {
            0.0
        } else {
            t.passed as f64 / t.total as f64
        };
        let (lo, hi) = wilson(t.passed, t.total, Z95);
        t.wilson_95 = [lo, hi];
    }
    m
}

impl Summary {
    pub fn finish(&mut self) {
        self.cases.sort_by(|a, b| {
            (a.category.as_str(), a.id.as_str()).cmp(&(b.category.as_str(), b.id.as_str()))
        });
        self.categories = totals(&self.cases);
        self.case_runs = self.cases.iter().map(|c| c.runs.len() as u64).sum();
        self.passed = self.load_errors.is_empty()
            && !self.cases.is_empty()
            && self.cases.iter().all(|c| c.passed);
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let total: u64 = self.categories.values().map(|t| t.total).sum();
        let passed: u64 = self.categories.values().map(|t| t.passed).sum();
        s.push_str(&format!(
            "## bench run: {}\n\n{passed}/{total} cases passed ({} case-runs, {} per case){}.\n\n",
            if self.passed { "PASS" } else { "FAIL" },
            self.case_runs,
            self.runs_per_case,
            self.shard
                .as_ref()
                .map(|x| format!(", shard {x}"))
                .unwrap_or_default()
        ));
        s.push_str(
            "| category | passed | total | pass rate | Wilson 95% |\n|---|---:|---:|---:|---|\n",
        );
        for (k, t) in &self.categories {
            s.push_str(&format!(
                "| {k} | {} | {} | {:.1}% | [{:.1}%, {:.1}%] |\n",
                t.passed,
                t.total,
                100.0 * t.pass_rate,
                100.0 * t.wilson_95[0],
                100.0 * t.wilson_95[1]
            ));
        }
        if !self.load_errors.is_empty() {
            s.push_str("\n### Cases that could not be loaded\n\n");
            for e in &self.load_errors {
                s.push_str(&format!("- {e}\n"));
            }
        }
        let failed: Vec<&CaseRecord> = self.cases.iter().filter(|c| !c.passed).collect();
        if !failed.is_empty() {
            s.push_str("\n### Failures\n\n");
            for c in failed {
                s.push_str(&format!("**{}** ({}): {}\n\n", c.id, c.category, c.title));
                for r in c.runs.iter().filter(|r| !r.passed) {
                    s.push_str(&format!("- run {}: expected `{}`, got `{}` (exit {}), score {:.2}; state dir `{}`\n", r.run, r.expected_ending, r.ending, r.exit_code, r.score, r.state_dir));
                    for f in &r.failures {
                        s.push_str(&format!("  - {f}\n"));
                    }
                }
                s.push('\n');
            }
        }
        s.push_str(&format!(
            "\nconfig `{}` at git `{}`\n",
            &self.config_hash[..self.config_hash.len().min(16)],
            self.git_rev
        ));
        s
    }

    pub fn junit(&self) -> Result<String, String> {
        use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
        let mut report = Report::new("bench run");
        for cat in self.categories.keys() {
            let mut suite = TestSuite::new(cat.as_str());
            for c in self.cases.iter().filter(|c| &c.category == cat) {
                for r in &c.runs {
                    let status = if r.passed {
                        TestCaseStatus::success()
                    } else {
                        let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        st.set_message(format!(
                            "expected {}, got {} (exit {})",
                            r.expected_ending, r.ending, r.exit_code
                        ));
                        st.set_description(r.failures.join("\n"));
                        st
                    };
                    let mut tc = TestCase::new(format!("{}#run{}", c.id, r.run), status);
                    tc.set_classname(format!("suites.{}", c.category));
                    tc.set_time(std::time::Duration::from_millis(r.latency_ms));
                    suite.add_test_case(tc);
                }
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
        report.to_string().map_err(|e| e.to_string())
    }

    pub fn table(&self) -> String {
        use tabled::{builder::Builder, settings::Style};
        let mut b = Builder::default();
        b.push_record([
            "category",
            "passed",
            "total",
            "pass rate",
            "Wilson 95%",
            "runs passed",
        ]);
        for (k, t) in &self.categories {
            b.push_record([
                k.clone(),
                t.passed.to_string(),
                t.total.to_string(),
                format!("{:.1}%", 100.0 * t.pass_rate),
                format!(
                    "[{:.1}%, {:.1}%]",
                    100.0 * t.wilson_95[0],
                    100.0 * t.wilson_95[1]
                ),
                format!("{}/{}", t.runs_passed, t.runs_total),
            ]);
        }
        let mut t = b.build();
        t.with(Style::sharp());
        t.to_string()
    }

    /// Write summary.json, summary.md and the JUnit file.
    pub fn write(
        &self,
        out: &std::path::Path,
        junit: Option<&std::path::Path>,
    ) -> Result<(), String> {
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        harness::durable::atomic_write(&out.join("summary.json"), &json)
            .map_err(|e| format!("summary.json: {e}"))?;
        let md = self.markdown();
        harness::durable::atomic_write(&out.join("summary.md"), md.as_bytes())
            .map_err(|e| format!("summary.md: {e}"))?;
        let x = self.junit()?;
        let jpath = junit
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| out.join("junit.xml"));
        harness::durable::atomic_write(&jpath, x.as_bytes())
            .map_err(|e| format!("{}: {e}", jpath.display()))?;
        // A CI step summary, when the CI offers one.
        if let Ok(p) = std::env::var("GITHUB_STEP_SUMMARY") {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
            {
                let _ = f.write_all(md.as_bytes());
            }
        }
        Ok(())
    }
}
