//! What a batch reports while it runs, and who shows it. The batch emits
//! typed events; a command picks a reporter instead of printing from a
//! closure of its own (nextest's split: the runner knows what happened, the
//! reporter knows how to say it). The files a finished batch leaves
//! (summary.json, summary.md, JUnit) are `outputs`' job, from the summary.

use crate::runner::RunRecord;
use crate::suite::Case;

/// One thing that happened in a batch.
#[derive(Debug)]
pub enum Event<'a> {
    /// A case-run ended and its record was collected (in completion order).
    CaseRunFinished {
        case_index: usize,
        case: &'a Case,
        record: &'a RunRecord,
    },
}

pub trait Reporter {
    fn report(&mut self, event: &Event<'_>);
}

/// Says nothing (`bench knee` prints its own per-level lines afterwards).
pub struct Quiet;

impl Reporter for Quiet {
    fn report(&mut self, _: &Event<'_>) {}
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
}

/// The terminal: an indicatif bar over `total` case-runs on a terminal, or
/// one line per case-run on stderr in CI / when stderr is not a terminal.
/// One reporter can span several batches (`bench self-test`'s control and
/// variants share a bar); `finish` clears it.
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

    fn line(&self, case: &Case, rec: &RunRecord) -> Option<String> {
        let (done, total) = (self.done, self.total);
        match self.lines {
            Lines::Gate => Some(format!(
                "[{done}/{total}] {}/{} run {}: {} ({}, {} ms, ${:.4})",
                case.category(),
                case.id(),
                rec.run,
                if rec.passed { "PASS" } else { "FAIL" },
                rec.ending,
                rec.latency_ms,
                rec.cost_usd
            )),
            Lines::Live => Some(format!(
                "[{done}/{total}] {} run {}: {} (exit {}, {:.1} s){}",
                case.id(),
                rec.run,
                rec.ending,
                rec.exit_code,
                rec.latency_ms as f64 / 1000.0,
                if rec.ending == "<none>" {
                    format!(" -- {}", rec.failures.join("; "))
                } else {
                    String::new()
                }
            )),
            Lines::Progress => None,
        }
    }
}

impl Reporter for Terminal {
    fn report(&mut self, event: &Event<'_>) {
        let Event::CaseRunFinished { case, record, .. } = event;
        self.done += 1;
        let line = self.line(case, record);
        match (&self.bar, line) {
            (Some(b), line) => {
                b.inc(1);
                let show = match self.lines {
                    Lines::Gate => !record.passed,
                    Lines::Live => true,
                    Lines::Progress => false,
                };
                if let (true, Some(l)) = (show, line) {
                    b.println(l);
                }
            }
            (None, Some(l)) => eprintln!("{l}"),
            (None, None) => {}
        }
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
