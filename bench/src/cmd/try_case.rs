//! `bench try-case DIR`: one case, one run, the way `bench run` runs it
//! (a fresh copy, the replay server, the real harness binary, every gate and
//! the audit), with what happened in the terminal: the plan, each tool call
//! with its input and the start of its answer, each verify, the ending,
//! then the verdict with its cause first. For a case author; `bench run
//! --case ID` is the gate. A case with a scenario.json is compiled first
//! (as `bench script` would), so an edit is tried at once.

use crate::exit::ExitStatus;
use bench::case_run::RunRecord;
use clap::Args;
use harness::events::{Event, EventLine};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TryCaseArgs {
    /// The case directory (suites/<category>/<id>).
    pub dir: PathBuf,
    /// Where the case-run's copy and state dir are kept for a look after.
    #[arg(long, default_value = "target/bench/try-case")]
    pub out: PathBuf,
    /// The harness binary (default: the one beside this bench).
    #[arg(long)]
    pub harness: Option<PathBuf>,
}

pub fn run(args: TryCaseArgs) -> ExitCode {
    crate::batch::block_on("try-case", ExitStatus::Unloadable, try_case(args))
}

async fn try_case(args: TryCaseArgs) -> ExitCode {
    let dir = args.dir.clone();
    let category = dir
        .parent()
        .and_then(Path::file_name)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    if dir.join("scenario.json").is_file() {
        if let Err(e) = compile_beside(&dir) {
            errln!("bench try-case: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    }
    let case = match bench::suite::load_case(&dir, &category, &bench::suite::report_fields()) {
        Ok(c) => c,
        Err(e) => {
            errln!("bench try-case: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let harness_bin = match crate::batch::harness_bin(args.harness.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            errln!("bench try-case: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let batch = match crate::batch::Batch::start(vec![case], harness_bin, &args.out, 1, 1).await {
        Ok(b) => b,
        Err(e) => {
            errln!("bench try-case: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let mut quiet = crate::events::Fanout(vec![]);
    let records = batch
        .run(&bench::case_run::Overlay::default(), &batch.out, &mut quiet)
        .await;
    let Some(r) = records.into_iter().flatten().next() else {
        errln!("bench try-case: the case-run produced no record");
        return ExitCode::from(ExitStatus::BenchFault);
    };
    print_transcript(&r);
    print_verdict(&r);
    if r.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Failed)
    }
}

/// The scenario did not compile into its cassette: `bench script`'s message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct CompileError(bench::scripted::ScriptError);

/// `bench script DIR`: the cassette from the scenario as it is now.
fn compile_beside(dir: &Path) -> Result<(), CompileError> {
    let (src, out) = bench::scripted::targets(dir);
    if bench::scripted::write_compiled(&src, &out).map_err(CompileError)? {
        outln!("compiled {} -> {}", src.display(), out.display());
    }
    Ok(())
}

/// What events.jsonl says the run did, one line per thing a person follows.
fn print_transcript(r: &RunRecord) {
    let path = Path::new(&r.state_dir).join(harness::events::FILE_NAME);
    let lines = match harness::events::read_events(&path) {
        Ok(l) => l,
        Err(e) => {
            outln!("(no transcript: {e})");
            return;
        }
    };
    for l in &lines {
        if let Some(s) = describe(l) {
            outln!("{s}");
        }
    }
}

fn describe(l: &EventLine) -> Option<String> {
    let t = format!("{:>6} ms", l.t_ms);
    Some(match &l.event {
        Event::Admit(a) => {
            let mut s = format!("{t}  {}: admitted {}", a.origin, a.admitted.join(", "));
            for task in &a.tasks {
                s.push_str(&format!("\n{:>9}    {}: {}", "", task.id, task.description));
            }
            for rej in &a.rejected {
                s.push_str(&format!(
                    "\n{:>9}    rejected {}: {}",
                    "", rej.id, rej.reason
                ));
            }
            s
        }
        Event::ModelCall(m) => format!(
            "{t}  model {} ({}, {} in / {} out, ${:.4})",
            m.call_key,
            m.role.as_str(),
            m.usage.input_tokens,
            m.usage.output_tokens,
            m.cost_usd
        ),
        Event::Tool(tool) => format!(
            "{t}  tool {}{} {}\n{:>9}    -> {}",
            tool.tool.as_str(),
            if tool.is_error { " (error)" } else { "" },
            tool.input,
            "",
            tool.output.replace('\n', "\n             ")
        ),
        Event::Verify {
            task, outcome, why, ..
        } => match why {
            Some(w) => format!("{t}  verify {task}: {outcome:?}: {w}"),
            None => format!("{t}  verify {task}: {outcome:?}"),
        },
        Event::TaskDone { task, .. } => format!("{t}  task {task}: verified"),
        Event::TaskParked { task, reason } => format!("{t}  task {task}: parked ({reason})"),
        Event::Ending(e) => format!(
            "{t}  ending {}{}",
            e.ending.as_str(),
            e.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        ),
        _ => return None,
    })
}

/// The model's last claim (report.json's `model_claims`) beside the
/// harness's own check of it: what the agent said it did, never the verdict.
fn print_final_claim(r: &RunRecord) {
    let Ok(report) = harness::report::Report::load(Path::new(&r.state_dir)) else {
        return;
    };
    match report.model_claims.last() {
        Some(c) => outln!(
            "model said {} (task {}; the harness's check: {})",
            harness::text::printable(&harness::text::clip_chars(&c.text, CLAIM_SHOWN_MAX_CHARS)),
            c.task_id,
            if c.verified {
                "verified"
            } else {
                "NOT verified"
            }
        ),
        None => outln!("model said nothing it claimed (no claim in report.json)"),
    }
}

/// Characters of the model's claim printed (it is the model's own text).
const CLAIM_SHOWN_MAX_CHARS: usize = 400;

fn print_verdict(r: &RunRecord) {
    print_final_claim(r);
    if r.passed {
        outln!(
            "{} ({}, {}, ${:.4})",
            bench::events::verdict_word(true, harness::console::Stream::Stdout),
            r.ending_name(),
            bench::events::latency_words(r),
            r.cost_usd
        );
    } else {
        let headline = r.headline();
        let fail = bench::events::verdict_word(false, harness::console::Stream::Stdout);
        outln!("{fail}: {headline}");
        for f in crate::outputs::failures_beside(&headline, r) {
            outln!("  - {f}");
        }
    }
    outln!("state dir {}", r.state_dir);
}
