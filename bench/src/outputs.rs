//! What a finished case-run batch leaves behind: summary.json, summary.md
//! and JUnit, written by the `SummaryFiles` reporter from the batch's events
//! (`events`); the table and failures on stdout (`print_outputs`), and
//! (live) recordings and live.json; and the exit status that follows from
//! them. `bench run` and `bench merge` end here (merge replays its merged
//! shards as a batch's events, `replay`, so its files are an unsharded
//! run's).

use crate::events::{CaseMeta, Event, Reporter};
use crate::exit::ExitStatus;
use crate::summary::{case_record, CaseRecord, Outcome, StepSummary, Summary};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The reporter that builds a batch's `Summary` from its events (a case
/// record per `CaseFinished`, under the pass policy) and, at
/// `BatchFinished`, writes summary.json, summary.md and the JUnit file
/// (`Summary::write`). `head` holds everything the events do not say: the
/// run's settings (pass policy, config hash, shard, the suite's case ids,
/// load errors, ...); its cases are ignored. One batch per reporter.
pub struct SummaryFiles {
    head: Summary,
    out: PathBuf,
    junit: Option<PathBuf>,
    step_summary: StepSummary,
    cases: Vec<CaseMeta>,
    records: Vec<Option<CaseRecord>>,
    total: u64,
    written: Option<Result<Summary, OutputsError>>,
}

impl SummaryFiles {
    /// Where the JUnit file is written: `--junit`, else `<out>/junit.xml`.
    pub fn junit_path(&self) -> PathBuf {
        (self.junit.clone()).unwrap_or_else(|| self.out.join("junit.xml"))
    }

    pub fn new(head: Summary, out: &Path, junit: Option<&Path>) -> SummaryFiles {
        SummaryFiles {
            head,
            out: out.to_path_buf(),
            junit: junit.map(Path::to_path_buf),
            step_summary: StepSummary::Append,
            cases: vec![],
            records: vec![],
            total: 0,
            written: None,
        }
    }

    /// Files for a drill-down under a command's own verdict (`bench ab`'s
    /// arms): the same files, but not in the CI's step summary.
    pub fn drill_down(self) -> SummaryFiles {
        SummaryFiles {
            step_summary: StepSummary::Skip,
            ..self
        }
    }

    /// The summary written, or why the files could not be (or that the
    /// batch never finished).
    pub fn into_summary(self) -> Result<Summary, OutputsError> {
        self.written.unwrap_or(Err(OutputsError::Unfinished))
    }

    fn summary(&mut self, wall_ms: u64) -> Summary {
        let pass_rate = self.head.pass_rate_policy;
        let cases: Vec<CaseRecord> = std::mem::take(&mut self.records)
            .into_iter()
            .zip(&self.cases)
            .map(|(r, c)| r.unwrap_or_else(|| case_record(c, vec![], pass_rate)))
            .collect();
        let finished: usize = cases
            .iter()
            .map(|c| {
                c.runs
                    .iter()
                    .filter(|r| {
                        !matches!(
                            r.bench_fault,
                            Some(crate::bench_fault::BenchFault::Interrupted { .. })
                        )
                    })
                    .count()
            })
            .sum();
        let mut s = Summary {
            schema_version: crate::summary::SCHEMA_VERSION,
            interrupted: crate::interrupt::requested().map(|sig| {
                format!("{sig}: {finished} of {} case-runs finished; the rest were not started or were stopped, and are not judged", self.total)
            }),
            cases,
            wall_ms,
            case_runs_per_s: if wall_ms == 0 {
                0.0
            } else {
                self.total as f64 / (wall_ms as f64 / 1000.0)
            },
            ..self.head.clone()
        };
        s.finish();
        s
    }
}

impl Reporter for SummaryFiles {
    fn report(&mut self, event: &Event<'_>) {
        match event {
            Event::BatchStarted { cases, total, .. } => {
                self.cases = cases.to_vec();
                self.records = vec![None; cases.len()];
                self.total = *total;
                self.written = None;
            }
            Event::CaseFinished {
                case_index, runs, ..
            } => {
                let c = &self.cases[*case_index];
                self.records[*case_index] =
                    Some(case_record(c, runs.to_vec(), self.head.pass_rate_policy));
            }
            Event::BatchFinished { wall_ms } => {
                let s = self.summary(*wall_ms);
                let junit = self.junit.clone();
                self.written = Some(
                    write_summary(&s, &self.out, junit.as_deref(), self.step_summary).map(|()| s),
                );
            }
            Event::CaseRunStarted { .. } | Event::CaseRunFinished { .. } => {}
        }
    }
}

/// Why a batch's files were not written: the file and the reason.
#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    #[error("the batch did not finish")]
    Unfinished,
    #[error("{}: {source}", .path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{name}: {source}")]
    File {
        name: &'static str,
        source: std::io::Error,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Junit(#[from] quick_junit::SerializeError),
}

/// Write summary.json, summary.md, the page and the JUnit file of `s`: here,
/// above both the summary and the page, so neither names the other.
fn write_summary(
    s: &Summary,
    out: &std::path::Path,
    junit: Option<&std::path::Path>,
    step_summary: StepSummary,
) -> Result<(), OutputsError> {
    std::fs::create_dir_all(out).map_err(|source| OutputsError::Dir {
        path: out.to_path_buf(),
        source,
    })?;
    let json = serde_json::to_vec_pretty(s)?;
    let file = |name: &'static str| move |source| OutputsError::File { name, source };
    harness::durable::atomic_write(&out.join("summary.json"), &json)
        .map_err(file("summary.json"))?;
    let md = s.markdown();
    harness::durable::atomic_write(&out.join("summary.md"), md.as_bytes())
        .map_err(file("summary.md"))?;
    let page = crate::page::suite_page(s, out);
    harness::durable::atomic_write(&out.join(crate::page::FILE_NAME), page.as_bytes())
        .map_err(file(crate::page::FILE_NAME))?;
    let x = s.junit()?;
    let jpath = junit
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| out.join("junit.xml"));
    harness::durable::atomic_write(&jpath, x.as_bytes()).map_err(|source| OutputsError::Dir {
        path: jpath.clone(),
        source,
    })?;
    // A CI step summary, when the CI offers one.
    if let (StepSummary::Append, Ok(p)) = (step_summary, std::env::var("GITHUB_STEP_SUMMARY")) {
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

/// Report a finished summary (`bench merge`'s union of shards) as the
/// events of the batch that would have made it: its cases in order, every
/// run started and finished, each case finished, the batch finished in its
/// wall time.
/// The lock file a command holds in its `--out` dir while it writes there.
pub const OUT_LOCK_FILE: &str = ".bench.lock";

/// Hold `out` for this process: two commands writing one output dir would
/// mix their case dirs and summaries silently (a summary that omits half
/// the case-runs, audits failing on files the other wrote). An advisory
/// flock on `<out>/.bench.lock` (released when this process exits, however
/// it exits), which carries the holder's pid for the refusal message.
pub fn lock_out_dir(out: &Path, cmd: &str) -> Result<std::fs::File, LockError> {
    use std::io::Write;
    std::fs::create_dir_all(out).map_err(|source| LockError::Create {
        out: out.to_path_buf(),
        source,
    })?;
    let path = out.join(OUT_LOCK_FILE);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|source| LockError::Open {
            path: path.clone(),
            source,
        })?;
    match f.try_lock() {
        Ok(()) => {
            let _ = f.set_len(0);
            let _ = writeln!(f, "{} {cmd}", std::process::id());
            Ok(f)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            Err(LockError::InUse {
                out: out.to_path_buf(),
                holder: holder.trim().to_string(),
            })
        }
        Err(std::fs::TryLockError::Error(source)) => Err(LockError::Lock { path, source }),
    }
}

/// Why a command cannot hold its `--out` dir.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot create --out {}: {source}", .out.display())]
    Create {
        out: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--out {} is in use by another bench command{}; give this one another --out", .out.display(), held_by(.holder))]
    InUse { out: PathBuf, holder: String },
    #[error("cannot lock {}: {source}", .path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Who holds the lock, as its lock file says, when it says.
fn held_by(holder: &str) -> String {
    if holder.is_empty() {
        String::new()
    } else {
        format!(" (pid and command: {holder})")
    }
}

pub fn replay(summary: &Summary, reporter: &mut dyn Reporter) {
    let cases: Vec<CaseMeta> = summary
        .cases
        .iter()
        .map(|c| CaseMeta {
            id: c.id.clone(),
            category: c.category.clone(),
            title: c.title.clone(),
            covers: c.covers.clone(),
            known_flaky: c.known_flaky.clone(),
        })
        .collect();
    reporter.report(&Event::BatchStarted {
        cases: &cases,
        runs_per_case: summary.runs_per_case,
        total: summary.case_runs,
    });
    for (ci, (c, rec)) in cases.iter().zip(&summary.cases).enumerate() {
        for r in &rec.runs {
            reporter.report(&Event::CaseRunStarted {
                case_index: ci,
                case: c,
                run: r.run,
            });
            reporter.report(&Event::CaseRunFinished {
                case_index: ci,
                case: c,
                record: r,
            });
        }
        reporter.report(&Event::CaseFinished {
            case_index: ci,
            case: c,
            runs: &rec.runs,
            outcome: Outcome::of(&rec.runs),
        });
    }
    reporter.report(&Event::BatchFinished {
        wall_ms: summary.wall_ms,
    });
}

/// After a live batch: write the recordings and `live.json`, print spend and
/// the cap. `Some(exit code)` overrides the batch's when the cap was reached
/// (1: some case-runs are incomplete) or outputs could not be written.
pub fn live_outputs(t: &crate::live::LiveTarget, out: &Path, cmd: &str) -> Option<ExitCode> {
    let written = t.recorder().map(|r| r.finish()).unwrap_or_default();
    let not_recorded = written.iter().any(|w| w.path.is_none());
    let report = crate::live::LiveReport::collect(t, written);
    for l in report.lines() {
        outln!("{l}");
    }
    match report.write(out) {
        Ok(p) => outln!("live       {}", p.display()),
        Err(e) => {
            errln!("bench {cmd}: cannot write live.json: {e}");
            return Some(ExitCode::from(ExitStatus::Unloadable));
        }
    }
    if report.cap_reached.is_some() || not_recorded {
        Some(ExitCode::from(ExitStatus::Failed))
    } else {
        None
    }
}

/// After a hybrid command, for one target (an arm of `bench ab`, or `bench
/// run`'s): what it observed as a suite that replays offline, under
/// `dir/suite` beside the cassettes in `dir/cassettes` (`live::replay_suite`).
pub fn hybrid_outputs(
    t: &crate::live::LiveTarget,
    cases: &[crate::suite::Case],
    dir: &Path,
    cmd: &str,
) -> Result<(), String> {
    let written = t.recorder().map(|r| r.finish()).unwrap_or_default();
    let suite = dir.join("suite");
    let (n, left_out) = crate::live::replay_suite::write(cases, &written, &suite)
        .map_err(|e| format!("bench {cmd}: cannot write the hybrid suite: {e}"))?;
    outln!(
        "hybrid     {n} of {} cases observed whole: {} (replays offline)",
        cases.len(),
        suite.display()
    );
    for l in left_out {
        outln!("hybrid     left out: {l}");
    }
    Ok(())
}

/// A failed case-run's failures that its headline does not already say
/// (the headline names the expected and actual ending; the ending check's
/// failure says the same words).
pub fn failures_beside<'r>(headline: &str, r: &'r crate::case_run::RunRecord) -> Vec<&'r str> {
    let endings = format!("expected {}, got {}", r.expected_ending, r.ending_name());
    (r.failures.iter())
        .map(String::as_str)
        .filter(|f| !headline.contains(f) && !f.contains(&endings))
        .collect()
}

/// After the `SummaryFiles` reporter: print the table and the failures and
/// pick the exit code (exit 3 when the files could not be written).
pub fn finish_outputs(files: SummaryFiles, out: &Path) -> ExitCode {
    let junit = files.junit_path();
    match files.into_summary() {
        Ok(summary) => print_outputs(&summary, out, &junit),
        Err(e) => {
            errln!("bench run: cannot write outputs: {e}");
            ExitCode::from(ExitStatus::Unloadable)
        }
    }
}

/// Print the table and the failures of a written summary, each fact once;
/// the last lines are where the files are; and pick the exit code.
pub fn print_outputs(summary: &Summary, out: &Path, junit: &Path) -> ExitCode {
    use harness::console::{colour_on, paint, Stream, Tint};
    let on = colour_on(Stream::Stdout);
    outln!("{}", summary.table());
    for l in summary.flaky_lines() {
        outln!("{l}");
    }
    if let Some(l) = summary.traffic_line() {
        outln!("{l}");
    }
    let cut = |r: &&crate::case_run::RunRecord| {
        matches!(
            r.bench_fault,
            Some(crate::bench_fault::BenchFault::Interrupted { .. })
        )
    };
    for c in summary.cases.iter().filter(|c| !c.passed) {
        // An interrupted command's unfinished case-runs are counted in its
        // `interrupted` line, not listed as failures.
        for r in c.runs.iter().filter(|r| !r.passed && !cut(r)) {
            // The cause and failures can quote what the model or a check
            // wrote: printable and bounded on a terminal too.
            let said = |s: &str| {
                harness::text::printable(&harness::text::clip_chars(
                    s,
                    crate::summary::MD_FIELD_MAX_CHARS,
                ))
                .into_owned()
            };
            let headline = r.headline();
            let rest = failures_beside(&headline, r);
            outln!(
                "{} {}/{} run {}: {}{}",
                paint("FAIL", Tint::Bad, on),
                c.category,
                c.id,
                r.run,
                said(&headline),
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(" -- {}", said(&rest.join("; ")))
                }
            );
        }
    }
    for e in &summary.load_errors {
        outln!("NOT LOADED {e}");
    }
    outln!(
        "{} cases, {} case-runs in {:.1}s ({:.1} case-runs/s): {}",
        summary.cases.len(),
        summary.case_runs,
        summary.wall_ms as f64 / 1000.0,
        summary.case_runs_per_s,
        match (&summary.interrupted, summary.passed) {
            (Some(_), _) => paint("INTERRUPTED", Tint::Warn, on),
            (None, true) => paint("PASS", Tint::Ok, on),
            (None, false) => paint("FAIL", Tint::Bad, on),
        }
    );
    if let Some(i) = &summary.interrupted {
        outln!("interrupted {i}");
    }
    outln!("summary    {}", out.join("summary.md").display());
    outln!("report     {}", out.join(crate::page::FILE_NAME).display());
    outln!("junit      {}", junit.display());
    if summary.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Failed)
    }
}
