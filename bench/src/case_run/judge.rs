//! The verdict on what the harness did: the case's checks, a `[raise]`
//! case's raise gate, the steps, the audit, the score, a bench fault read
//! from the report or the live proxy, and the root cause of a failure.

use super::{CaseRun, Collected, FirstEnding, Prepared, Ran, Target, Took};
use crate::audit;
use crate::bench_fault::{self, BenchFault};
use crate::record::RunRecord;
use crate::score::{self, Artifacts, Check, Verdict};
use std::path::Path;

impl CaseRun<'_> {
    /// The checks, the audit and the verdict on what the harness did; a
    /// live case-run the cap cut short or the model never answered fails.
    pub(super) fn judge(&self, p: Prepared, ran: Ran, c: Collected) -> RunRecord {
        let (case, report) = (self.case, &c.report);
        let artifacts = Artifacts {
            report,
            outbox: &c.outbox,
            workspace: &p.ws,
            requests: &c.requests,
            commits: c.commits,
            commit_files: c.commit_files.as_ref(),
        };
        let latency = self.latency(&ran.took);
        let mut checks = score::checks(&case.file.expect, &artifacts);
        if let Some((r, ended)) = &ran.raised {
            checks.push(raise_check(r, ended, report, &p.state));
        }
        checks.extend(p.step_checks.iter().cloned());
        checks.extend(audit::audit(report, &c.requests, &p.gathered));
        let Verdict {
            score,
            passed,
            mut failures,
            ..
        } = score::verdict(case, p.served, report, &checks, &latency);
        // The exit code is part of what is tested: audit.report_consistent
        // gates it against the ending and the report.
        // A recording miss is the replay running out of answers (report.json's
        // error_kind, read typed); the missing key comes from what was sent.
        let replayed = match self.target {
            Target::Replay(_) => Some(&*case.cassette),
            Target::Live(_) => None,
        };
        let mut bench_fault = bench_fault::from_report(report, replayed, p.served, &c.requests);
        let cut_short = live_cut_short(c.live_end.as_ref(), &mut failures, &mut bench_fault);
        let passed = passed && !cut_short;
        let cause = match passed {
            true => None,
            false => root_cause(&p, report, replayed, bench_fault.as_ref()),
        };
        RunRecord {
            cause,
            run: self.run,
            ending: Some(report.ending),
            exit_code: ran.spawned.code,
            passed,
            score,
            cost_usd: report.spend_usd,
            latency_ms: latency.judged_ms,
            latency: Some(latency),
            expected_ending: case.expected_ending(p.served),
            checks,
            failures,
            state_dir: p.state.display().to_string(),
            verified: report.verified.len() as u64,
            bench_fault,
            live_calls: c.live_end.map(|e| e.calls),
        }
    }

    /// The latency the case's cap judges: the replayed model time the run
    /// was served (taken from its replay server) plus the harness's CPU
    /// time, with wall time beside it (bench/src/latency.rs).
    fn latency(&self, took: &Took) -> crate::latency::Latency {
        let model = match self.target {
            Target::Replay(server) => {
                Some(server.take_model_time(self.case.id(), self.run, took.ended))
            }
            Target::Live(_) => None,
        };
        crate::latency::Latency::judge(self.case, took.wall, model, took.cpu)
    }
}

/// Why a case-run failed (crate::cause), read against the recorded
/// variant it was served when it was replayed.
fn root_cause(
    p: &Prepared,
    report: &harness::report::Report,
    replayed: Option<&harness::replay::Cassette>,
    bench_fault: Option<&BenchFault>,
) -> Option<String> {
    let variant = replayed
        .filter(|c| !c.runs.is_empty())
        .map(|c| &c.runs[p.served as usize % c.runs.len()]);
    let held = |prefix: &str| {
        variant.is_some_and(|v| {
            v.interactions
                .iter()
                .any(|i| i.call_key.starts_with(prefix))
        })
    };
    crate::cause::root_cause(
        bench_fault,
        report,
        p.gathered.events.as_ref(),
        variant.is_some().then_some(&held as &dyn Fn(&str) -> bool),
    )
}

/// A case-run the command-wide cap cut short is incomplete, never a pass;
/// one whose live call the model never answered measured nothing. Either
/// adds its failure and fault; returns whether one did.
fn live_cut_short(
    end: Option<&crate::live::RunEnd>,
    failures: &mut Vec<String>,
    bench_fault: &mut Option<BenchFault>,
) -> bool {
    let Some(e) = end else { return false };
    // The endpoint's failure first: worst-case bookings of its failed
    // replies are what run a cap out, so a cap refusal after one is its
    // consequence, listed after it.
    let (msg, fault): (&String, fn(String) -> BenchFault) = match (&e.not_measured, &e.refused) {
        (Some(m), _) => (m, |detail| BenchFault::LiveNotMeasured { detail }),
        (None, Some(m)) => (m, |detail| BenchFault::LiveCapReached { detail }),
        (None, None) => return false,
    };
    failures.push(msg.clone());
    if let (Some(_), Some(cap)) = (&e.not_measured, &e.refused) {
        failures.push(cap.clone());
    }
    *bench_fault = Some(fault(msg.clone()));
    true
}

/// The `raise` gate: the first ending, and exactly one raise of the limit
/// to the case's value in the ledger journal (what the harness journals
/// before it goes on) and in the final report.
fn raise_check(
    r: &crate::suite::Raise,
    first: &FirstEnding,
    report: &harness::report::Report,
    state: &Path,
) -> Check {
    use harness::ledger::journal::{parse, JournalEntry};
    let (kind, to, _) = match r.limit() {
        Some(x) => x,
        None => return raise_gate(false, "no limit to raise".into()),
    };
    let journal = std::fs::read(state.join("ledger.jsonl")).unwrap_or_default();
    let journaled: Vec<(f64, f64)> = parse(&journal)
        .lines
        .into_iter()
        .filter_map(|l| match l.entry {
            JournalEntry::Limit {
                limit, old, new, ..
            } if limit == kind => Some((old, new)),
            _ => None,
        })
        .collect();
    let reported: Vec<f64> = (report.limit_raises.iter())
        .filter(|x| x.limit == kind)
        .map(|x| x.new)
        .collect();
    let name = match kind {
        harness::ledger::LimitKind::HardCapUsd => "hard_cap_usd",
        harness::ledger::LimitKind::WallClockLimitS => "wall_clock_limit_s",
    };
    let what = format!(
        "first run ended {} at ${:.6}; {name} raised to {to}: ledger journal {journaled:?} (old, new), report {reported:?}",
        first.ending.as_str(),
        first.spend_usd
    );
    let ok = matches!(journaled.as_slice(), [(_, n)] if *n == to) && reported == [to];
    raise_gate(
        ok,
        if ok {
            what
        } else {
            format!("not exactly one raise to {to}: {what}")
        },
    )
}

fn raise_gate(passed: bool, detail: String) -> Check {
    Check {
        name: "raise".into(),
        kind: score::CheckKind::Gate,
        passed,
        detail,
    }
}
