//! What a batch reports while it runs, and who shows it. These types are the
//! contract between the batch (`batch`) and its reporters (nextest's split:
//! the runner knows what happened, a reporter knows how to say it, and no
//! reporter reaches back into the runner). A command attaches reporters
//! instead of printing or writing from a closure of its own: the terminal
//! (`Terminal`: a progress bar or lines), the files a finished batch leaves
//! (`outputs::SummaryFiles`: summary.json, summary.md, JUnit), several at
//! once through `Fanout`, or none (`Quiet`).
//!
//! There are no retries in the bench: a case runs exactly `runs_per_case`
//! times and every run counts. So there is no retry event; a case whose runs
//! disagree (some passed, some failed) is reported flaky when the case
//! finishes (`Event::CaseFinished`'s outcome), not by rerunning it.

use crate::record::{Outcome, RunRecord};

pub use crate::record::CaseMeta;

/// One thing that happened in a batch. For one batch a reporter sees, in
/// this order: `BatchStarted` once; per case-run `CaseRunStarted` before its
/// `CaseRunFinished` (case-runs interleave, in completion order); per case
/// one `CaseFinished` after the last of its `CaseRunFinished`; and
/// `BatchFinished` last. `case_index` indexes `BatchStarted`'s `cases`.
#[derive(Debug)]
pub enum Event<'a> {
    /// The batch is about to start `total` case-runs over `cases`.
    BatchStarted {
        cases: &'a [CaseMeta],
        runs_per_case: u32,
        total: u64,
    },
    /// A case-run was taken off the queue and is starting.
    CaseRunStarted {
        case_index: usize,
        case: &'a CaseMeta,
        run: u32,
    },
    /// A case-run ended and its record was collected.
    CaseRunFinished {
        case_index: usize,
        case: &'a CaseMeta,
        record: &'a RunRecord,
    },
    /// Every run of a case is in: when its `runs_per_case`-th run finishes,
    /// or, for a case some of whose runs never came back (a batch stopped at
    /// its first failure, a worker that panicked), when the batch ends, with
    /// the runs it has (maybe none). `runs` are sorted by run index;
    /// `outcome` is what they did (`Outcome::Flaky`: some passed, some
    /// failed), whatever a pass policy later makes of them.
    CaseFinished {
        case_index: usize,
        case: &'a CaseMeta,
        runs: &'a [RunRecord],
        outcome: Outcome,
    },
    /// Every case has finished; the batch took `wall_ms`.
    BatchFinished { wall_ms: u64 },
}

use harness::console::{paint, Stream, Tint};

pub trait Reporter {
    fn report(&mut self, event: &Event<'_>);
}

/// Says nothing (`bench knee` prints its own per-level lines afterwards).
pub struct Quiet;

impl Reporter for Quiet {
    fn report(&mut self, _: &Event<'_>) {}
}

/// Hands every event to each of its reporters, in their order (`bench run`:
/// the terminal, then the summary files).
pub struct Fanout<'r>(pub Vec<&'r mut dyn Reporter>);

impl Reporter for Fanout<'_> {
    fn report(&mut self, event: &Event<'_>) {
        for r in &mut self.0 {
            r.report(event);
        }
    }
}

/// How the terminal reporter words a finished case-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// `bench run`: `[d/t] category/id run r: PASS|FAIL (ending, ms, $)`;
    /// above a progress bar only the failures are printed.
    Gate,
    /// `bench record`: `[d/t] id run r: ending (exit c, s)`, every one, with
    /// the failures when the run had no ending.
    Live,
    /// `bench self-test`: the bar only (its verdicts are per variant).
    Progress,
    /// `bench ab`: `[d/t] arm id run r: PASS|FAIL|NOT COMPARABLE, why
    /// (ending, $)` through each arm's [`Arm`]; above a progress bar only
    /// the case-runs that did not pass.
    Paired,
}

/// The terminal: an indicatif bar over `total` case-runs on a terminal, or
/// one line per case-run on stderr in CI / when stderr is not a terminal.
/// One reporter can span several batches (`bench self-test`'s control and
/// variants share a bar); `finish` clears it. It shows finished case-runs
/// only; the table and the failures after a batch are `outputs`'.
pub struct Terminal {
    bar: Option<indicatif::ProgressBar>,
    lines: Lines,
    done: u64,
    total: u64,
}

impl Terminal {
    pub fn new(total: u64, what: &str, lines: Lines) -> Terminal {
        Terminal {
            bar: progress_bar(total, what),
            lines,
            done: 0,
            total,
        }
    }

    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }

    fn line(&self, arm: Option<&str>, case: &CaseMeta, rec: &RunRecord) -> Option<String> {
        let (done, total) = (self.done, self.total);
        match self.lines {
            Lines::Paired => Some(format!(
                "[{done}/{total}] {} {} run {}: {} ({}, ${:.4})",
                arm.unwrap_or("?"),
                case.id,
                rec.run,
                match (&rec.bench_fault, rec.passed) {
                    (Some(f), _) => format!("NOT COMPARABLE, {}", f.describe()),
                    (None, passed) => verdict_word(passed, Stream::Stderr),
                },
                rec.ending_name(),
                rec.cost_usd
            )),
            Lines::Gate => Some(format!(
                "[{done}/{total}] {}/{} run {}: {} ({}, {}, ${:.4})",
                case.category,
                case.id,
                rec.run,
                verdict_word(rec.passed, Stream::Stderr),
                rec.ending_name(),
                latency_words(rec),
                rec.cost_usd
            )),
            Lines::Live => Some(format!(
                "[{done}/{total}] {} run {}: {} (exit {}, {:.1} s){}",
                case.id,
                rec.run,
                rec.ending_name(),
                rec.exit_code,
                rec.wall_ms() as f64 / 1000.0,
                if rec.ending.is_none() {
                    format!(" -- {}", rec.failures.join("; "))
                } else {
                    String::new()
                }
            )),
            Lines::Progress => None,
        }
    }
}

/// PASS or FAIL, coloured when `stream` is (harness::console: a terminal,
/// NO_COLOR, CLICOLOR_FORCE).
/// A case-run's latency on its line: the judged figure and which, with
/// wall time beside it ("1834 ms judged (model + CPU), wall 13500 ms").
pub fn latency_words(rec: &RunRecord) -> String {
    match rec.latency {
        Some(l) => l.short(),
        None => format!("{} ms", rec.latency_ms),
    }
}

pub fn verdict_word(passed: bool, stream: Stream) -> String {
    let on = harness::console::colour_on(stream);
    match passed {
        true => paint("PASS", Tint::Ok, on),
        false => paint("FAIL", Tint::Bad, on),
    }
}

impl Reporter for Terminal {
    fn report(&mut self, event: &Event<'_>) {
        self.report_arm(None, event)
    }
}

impl Terminal {
    /// A finished case-run of `arm` (a lane of a batch of several, `Arm`)
    /// or of the one batch (None).
    fn report_arm(&mut self, arm: Option<&str>, event: &Event<'_>) {
        let Event::CaseRunFinished { case, record, .. } = event else {
            return;
        };
        self.done += 1;
        let line = self.line(arm, case, record);
        match (&self.bar, line) {
            (Some(b), line) => {
                b.inc(1);
                let show = match self.lines {
                    Lines::Gate | Lines::Paired => !record.passed,
                    Lines::Live => true,
                    Lines::Progress => false,
                };
                if let (true, Some(l)) = (show, line) {
                    b.println(l);
                }
            }
            (None, Some(l)) => errln!("{l}"),
            (None, None) => {}
        }
    }
}

/// One lane of a batch of several (`bench ab`'s arm "A" or "B") as the
/// terminal the lanes share sees it: its finished case-runs, named by arm,
/// on one bar over every lane's case-runs. The lanes' events reach the
/// terminal from the one task that makes them, so the borrow never clashes.
pub struct Arm<'t> {
    pub name: &'static str,
    pub terminal: &'t std::cell::RefCell<Terminal>,
}

impl Reporter for Arm<'_> {
    fn report(&mut self, event: &Event<'_>) {
        self.terminal
            .borrow_mut()
            .report_arm(Some(self.name), event)
    }
}

/// A progress bar over `total` case-runs on a terminal; None in CI or when
/// stderr is not a terminal (the reporter prints one plain line per case-run).
pub fn progress_bar(total: u64, what: &str) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if std::env::var_os("CI").is_some() || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:40}} {{pos}}/{{len}} {what} {{elapsed}} {{msg}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}
