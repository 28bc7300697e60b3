//! What a finished case-run batch leaves behind: summary.json, summary.md
//! and JUnit (`Summary::write`), the table and failures on stdout, and
//! (live) recordings and live.json; and the exit status that follows from
//! them. `bench run`, `bench merge` and `bench ab` end here.

use crate::exit::ExitStatus;
use crate::summary::Summary;
use std::path::Path;
use std::process::ExitCode;

/// After a live batch: write the recordings and `live.json`, print spend and
/// the cap. `Some(exit code)` overrides the batch's when the cap was reached
/// (1: some case-runs are incomplete) or outputs could not be written.
pub fn live_outputs(t: &crate::live::LiveTarget, out: &Path, cmd: &str) -> Option<ExitCode> {
    let written = t.recorder().map(|r| r.finish()).unwrap_or_default();
    let not_recorded = written.iter().any(|w| w.path.is_none());
    let report = crate::live::LiveReport::collect(t, written);
    for l in report.lines() {
        println!("{l}");
    }
    match report.write(out) {
        Ok(p) => println!("live       {}", p.display()),
        Err(e) => {
            eprintln!("bench {cmd}: cannot write live.json: {e}");
            return Some(ExitCode::from(ExitStatus::Unloadable));
        }
    }
    if report.cap_reached.is_some() || not_recorded {
        Some(ExitCode::from(ExitStatus::Failed))
    } else {
        None
    }
}

/// Write the outputs, print the table and the failures, and pick the exit code.
pub fn finish_outputs(summary: &Summary, out: &Path, junit: Option<&Path>) -> ExitCode {
    if let Err(e) = summary.write(out, junit) {
        eprintln!("bench run: cannot write outputs: {e}");
        return ExitCode::from(ExitStatus::Unloadable);
    }
    println!("{}", summary.table());
    for l in summary.flaky_lines() {
        println!("{l}");
    }
    for c in summary.cases.iter().filter(|c| !c.passed) {
        for r in c.runs.iter().filter(|r| !r.passed) {
            println!(
                "FAIL {}/{} run {}: expected {}, got {} -- {}",
                c.category,
                c.id,
                r.run,
                r.expected_ending,
                r.ending,
                r.failures.join("; ")
            );
        }
    }
    for e in &summary.load_errors {
        println!("NOT LOADED {e}");
    }
    println!(
        "{} cases, {} case-runs in {:.1}s ({:.1} case-runs/s): {}",
        summary.cases.len(),
        summary.case_runs,
        summary.wall_ms as f64 / 1000.0,
        summary.case_runs_per_s,
        if summary.passed { "PASS" } else { "FAIL" }
    );
    println!("summary    {}", out.join("summary.md").display());
    if summary.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Failed)
    }
}
