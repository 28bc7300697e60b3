//! `bench knee`: cost per verified task across budget levels, and the knee.
//!
//! Runs the whole suite once per level with every case's hard cap and
//! visible task budget scaled to the level (`Overlay::budget_scale`), through
//! the same batch runner as `bench run`, and reports per level: spend,
//! verified tasks, verified pass rate, cost per verified task with a
//! case-bootstrap 95% interval, and the share of runs that ended
//! BUDGET_EXHAUSTED. The knee is Kneedle on pass rate against actual spend;
//! separately, the level with the lowest cost per verified task; and how
//! often each level is the knee over case resamples.
//!
//! Outputs in --out: knee.json, knee.md, cost_per_verified.svg,
//! verified_vs_spend.svg, case_runs.json (every case-run's figures and its
//! state dir), and levels/level-<L>/cases/<id>/run-<r>/ (the runs themselves).
//!
//! Exit codes: 0 measured; 1 measured, but some case-run had no usable
//! report or some case did not load (the outputs say which); 2 usage error;
//! 3 the suite could not be loaded or the harness binary is missing.

use crate::batch;
use crate::exit::ExitStatus;
mod plot;
use crate::stats::kneedle;

use crate::batch::RUNS_PER_CASE_MAX;
use bench::knee::analysis::{KneeReport, LevelRow, RunObs};
use bench::knee::run::{Measured, Plan};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub const LEVELS_MAX: usize = 20;
/// A level scales a cap; ten times the cap is far past any useful curve.
pub const LEVEL_MAX: f64 = 10.0;
pub const REPS_MAX: usize = 100_000;

#[derive(Args, Debug)]
pub struct KneeArgs {
    /// Suite root holding happy/ edge/ adversarial/ regression/ (the knee
    /// suite's caps are set close to what its work costs).
    #[arg(long, default_value = "suites/knee")]
    pub suite: PathBuf,
    /// Budget levels: shares of each case's hard cap and task budget.
    #[arg(long, default_value = "1,0.75,0.5,0.25,0.1")]
    pub levels: String,
    /// Case-runs per case per level (run r replays scenario variant r % n).
    #[arg(long, default_value_t = 3)]
    pub runs_per_case: u32,
    #[arg(long, default_value = "target/bench/knee")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 4)]
    pub max_concurrency: usize,
    /// Case-bootstrap resamples for the intervals and the knee frequencies.
    #[arg(long, default_value_t = 2000)]
    pub bootstrap_reps: usize,
    #[arg(long, default_value_t = 20261130)]
    pub seed: u64,
    /// Kneedle's sensitivity S: a knee must be followed by a drop of S times
    /// the mean normalized step (1 is the paper's offline recommendation).
    #[arg(long, default_value_t = kneedle::DEFAULT_SENSITIVITY)]
    pub sensitivity: f64,
    /// The harness binary (default: next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
}

/// A bad flag (exit 2); the message names it.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("--levels: {0:?} is not a number")]
    NotANumber(String),
    #[error("--levels: {0} is not in (0, {LEVEL_MAX}]")]
    OutOfRange(String),
    #[error("--levels: {0} appears twice")]
    Twice(String),
    #[error("--levels: at most {LEVELS_MAX} levels, found {0}")]
    TooMany(usize),
    #[error("--runs-per-case must be 1..={RUNS_PER_CASE_MAX}")]
    RunsPerCase,
    #[error("--sensitivity must be a non-negative number")]
    Sensitivity,
    #[error("--bootstrap-reps must be 1..={REPS_MAX}")]
    BootstrapReps,
}

/// Parse `--levels`: distinct numbers in (0, LEVEL_MAX], highest first.
pub fn parse_levels(s: &str) -> Result<Vec<f64>, UsageError> {
    let mut out: Vec<f64> = vec![];
    for part in s.split(',') {
        let p = part.trim();
        let v: f64 = p
            .parse()
            .map_err(|_| UsageError::NotANumber(p.to_string()))?;
        if !(v.is_finite() && v > 0.0 && v <= LEVEL_MAX) {
            return Err(UsageError::OutOfRange(p.to_string()));
        }
        if out.iter().any(|o| (o - v).abs() < 1e-9) {
            return Err(UsageError::Twice(p.to_string()));
        }
        out.push(v);
    }
    if out.len() > LEVELS_MAX {
        return Err(UsageError::TooMany(out.len()));
    }
    out.sort_by(|a, b| b.total_cmp(a));
    Ok(out)
}

pub fn run(args: KneeArgs) -> ExitCode {
    batch::block_on("knee", ExitStatus::Unloadable, run_async(args))
}

/// The flags checked, in the order their errors are reported.
fn checked_flags(args: &KneeArgs) -> Result<Vec<f64>, UsageError> {
    let levels = parse_levels(&args.levels)?;
    if args.runs_per_case == 0 || args.runs_per_case > RUNS_PER_CASE_MAX {
        return Err(UsageError::RunsPerCase);
    }
    if !(args.sensitivity.is_finite() && args.sensitivity >= 0.0) {
        return Err(UsageError::Sensitivity);
    }
    if args.bootstrap_reps == 0 || args.bootstrap_reps > REPS_MAX {
        return Err(UsageError::BootstrapReps);
    }
    Ok(levels)
}

async fn run_async(args: KneeArgs) -> ExitCode {
    let levels = match checked_flags(&args) {
        Ok(l) => l,
        Err(e) => {
            errln!("bench knee: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let harness_bin = match batch::harness_bin(args.harness.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            errln!("bench knee: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let plan = Plan {
        suite: args.suite,
        levels,
        runs_per_case: args.runs_per_case,
        out: args.out,
        max_concurrency: args.max_concurrency,
        harness_bin,
        bootstrap_reps: args.bootstrap_reps,
        seed: args.seed,
        sensitivity: args.sensitivity,
    };
    let m = match bench::knee::run::measure(&plan).await {
        Ok(m) => m,
        Err(e) => {
            errln!("bench knee: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    if let Err(e) = write_outputs(&m.report, &m.obs, &m.out) {
        errln!("bench knee: cannot write outputs: {e}");
        return ExitCode::from(ExitStatus::Unloadable);
    }
    show(&m)
}

/// The table, the verdict and the exit: 1 when a case-run had no usable
/// report, a case did not load, or too few cases were comparable.
fn show(m: &Measured) -> ExitCode {
    let report = &m.report;
    outln!("{}", table(report));
    for line in not_comparable_lines(report) {
        outln!("{line}");
    }
    outln!("{}", verdict(report));
    let errored: u64 = report.levels.iter().map(|l| l.errored_runs).sum();
    outln!(
        "{} case-runs in {:.1}s; {}",
        m.obs.len(),
        m.started.elapsed().as_secs_f64(),
        m.out.join("knee.md").display()
    );
    if errored > 0 || m.cases_not_loaded > 0 {
        errln!("bench knee: {errored} case-run(s) without a usable report, {} case(s) not loaded: the figures leave them out", m.cases_not_loaded);
        return ExitCode::from(ExitStatus::Failed);
    }
    if !report.comparable {
        errln!(
            "bench knee: not comparable: {} (more than {:.0}% of the cases): no knee is claimed",
            report
                .not_comparable_note
                .as_deref()
                .unwrap_or("no comparable case"),
            100.0 * crate::bench_fault::NOT_COMPARABLE_SHARE_MAX
        );
        return ExitCode::from(ExitStatus::Failed);
    }
    ExitCode::SUCCESS
}

/// One line per case left out of every level, naming the level, the run and
/// the fault (the missing call key for a recording miss).
pub fn not_comparable_lines(r: &KneeReport) -> Vec<String> {
    let mut out = vec![];
    if let Some(note) = &r.not_comparable_note {
        out.push(format!(
            "not comparable under replay, left out of every level: {note}"
        ));
    }
    for n in &r.not_comparable {
        out.push(format!(
            "NOT COMPARABLE {} at {} run {}: {}",
            n.case,
            pct(n.level),
            n.run,
            n.fault.describe()
        ));
    }
    out
}

fn usd(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |v| format!("${v:.3}"))
}

fn ci(x: Option<[f64; 2]>) -> String {
    x.map_or("n/a".into(), |[lo, hi]| format!("[${lo:.3}, ${hi:.3}]"))
}

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

fn knee_share(r: &KneeReport, level: f64) -> f64 {
    r.knee_bootstrap
        .levels
        .iter()
        .find(|s| s.level == level)
        .map_or(0.0, |s| s.share)
}

/// The terminal table.
pub fn table(r: &KneeReport) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record([
        "level",
        "spend",
        "verified",
        "pass rate",
        "$/verified",
        "95% CI",
        harness::ending::Ending::BudgetExhausted.as_str(),
        "knee in",
        "not comparable",
    ]);
    for l in &r.levels {
        let mark = match (
            Some(l.level) == r.knee_level,
            Some(l.level) == r.min_cost_level,
        ) {
            (true, true) => " (knee, cheapest)",
            (true, false) => " (knee)",
            (false, true) => " (cheapest)",
            _ => "",
        };
        b.push_record([
            format!("{}{mark}", pct(l.level)),
            format!("${:.2}", l.spend_usd),
            format!("{}/{}", l.verified, l.planned),
            format!("{:.1}%", 100.0 * l.pass_rate),
            usd(l.cost_per_verified_usd),
            ci(l.cost_per_verified_ci),
            format!(
                "{:.0}% ({}/{})",
                100.0 * l.budget_exhausted_share,
                (l.budget_exhausted_share * l.runs as f64).round(),
                l.runs
            ),
            pct(knee_share(r, l.level)),
            l.not_comparable_runs.to_string(),
        ]);
    }
    let mut t = b.build();
    t.with(Style::sharp());
    t.to_string()
}

fn verdict(r: &KneeReport) -> String {
    if !r.comparable {
        return format!(
            "not comparable: {} (more than {:.0}% of the cases): no knee and no cheapest level are claimed",
            r.not_comparable_note.as_deref().unwrap_or("no comparable case"),
            100.0 * crate::bench_fault::NOT_COMPARABLE_SHARE_MAX
        );
    }
    let knee = match r.knee_level {
        Some(k) => format!("knee at {} of each cap (Kneedle on verified pass rate vs spend; the knee in {} of {} case resamples)", pct(k), pct(knee_share(r, k)), r.knee_bootstrap.reps),
        None => match &r.knee_candidate {
            Some(c) => format!(
                "no knee confirmed: the point farthest above the chord is {} (difference {:.3}), but Kneedle at S = {} needs the difference to fall by {:.3} after it and it does not; {} is the knee in {} of {} case resamples, no knee in {}",
                pct(c.level),
                c.difference,
                r.kneedle.sensitivity,
                c.drop_needed,
                pct(c.level),
                pct(knee_share(r, c.level)),
                r.knee_bootstrap.reps,
                pct(r.knee_bootstrap.none_share)
            ),
            None => format!("no knee: pass rate against spend is not concave over these levels (no knee in {} of resamples)", pct(r.knee_bootstrap.none_share)),
        },
    };
    let cheap = match r
        .min_cost_level
        .and_then(|m| r.levels.iter().find(|l| l.level == m))
    {
        Some(l) => format!(
            "lowest cost per verified task at {}: {} {} (the cheapest level in {} of resamples)",
            pct(l.level),
            usd(l.cost_per_verified_usd),
            ci(l.cost_per_verified_ci),
            pct(r
                .min_cost_bootstrap
                .levels
                .iter()
                .find(|s| s.level == l.level)
                .map_or(0.0, |s| s.share))
        ),
        None => "no level verified a task".into(),
    };
    format!("{knee}\n{cheap}")
}

/// knee.md: the verdict, the table, the bootstrap frequencies, the plots
/// and the definitions.
pub fn markdown(r: &KneeReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "## bench knee: {} cases x {} runs per level, suite `{}`\n\n",
        r.cases, r.runs_per_case, r.suite
    ));
    for line in verdict(r).lines() {
        s.push_str(&format!("- {line}\n"));
    }
    s.push_str("\n| level | spend | verified / planned | pass rate | cost per verified task | 95% CI | BUDGET_EXHAUSTED | knee in | cheapest in |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n");
    for l in &r.levels {
        s.push_str(&md_level_row(r, l));
    }
    s.push_str(&format!(
        "\nNo knee in {} of the {} case resamples (seed {}).\n\n![cost per verified task by budget level](cost_per_verified.svg)\n\n![verified tasks against spend](verified_vs_spend.svg)\n\n",
        pct(r.knee_bootstrap.none_share),
        r.knee_bootstrap.reps,
        r.knee_bootstrap.seed
    ));
    let nc = not_comparable_lines(r);
    if !nc.is_empty() {
        s.push_str("### Not comparable under replay\n\nThese case-runs ended in the bench's own machinery (for a recording miss: the level changed the traffic and the cassette has no answer for the call named); they are not data points, and their cases are left out of every level so that the levels compare the same cases.\n\n");
        for l in nc {
            s.push_str(&format!("- {l}\n"));
        }
        s.push('\n');
    }
    s.push_str(&md_definitions(r));
    s
}

/// One level's row of knee.md's table, the knee and the cheapest level
/// marked in bold.
fn md_level_row(r: &KneeReport, l: &LevelRow) -> String {
    let cheap = r
        .min_cost_bootstrap
        .levels
        .iter()
        .find(|x| x.level == l.level)
        .map_or(0.0, |x| x.share);
    format!(
        "| {}{}{} | ${:.2} | {}/{} | {:.1}% | {} | {} | {:.0}% of {} | {} | {} |\n",
        pct(l.level),
        if Some(l.level) == r.knee_level {
            " **knee**"
        } else {
            ""
        },
        if Some(l.level) == r.min_cost_level {
            " **cheapest**"
        } else {
            ""
        },
        l.spend_usd,
        l.verified,
        l.planned,
        100.0 * l.pass_rate,
        usd(l.cost_per_verified_usd),
        ci(l.cost_per_verified_ci),
        100.0 * l.budget_exhausted_share,
        l.runs,
        pct(knee_share(r, l.level)),
        pct(cheap)
    )
}

/// What each figure means, from the report itself (knee.json carries the
/// same definitions).
fn md_definitions(r: &KneeReport) -> String {
    let mut s = String::from("### Definitions\n\n");
    s.push_str(&format!("- **pass rate**: {}\n", r.definitions.pass_rate));
    s.push_str(&format!(
        "- **cost per verified task**: {}\n",
        r.definitions.cost_per_verified
    ));
    s.push_str(&format!("- **spend**: {}\n", r.definitions.spend_usd));
    s.push_str(&format!(
        "- **BUDGET_EXHAUSTED**: {}\n",
        r.definitions.budget_exhausted_share
    ));
    s.push_str(&format!(
        "- **knee**: Kneedle (Satopaa et al. 2011), x = {}, y = {}, S = {}, {}\n",
        r.kneedle.x, r.kneedle.y, r.kneedle.sensitivity, r.kneedle.curve
    ));
    s.push_str(&format!(
        "- **cheapest**: {}\n",
        r.definitions.min_cost_level
    ));
    s
}

/// Why an output file could not be made; each message names the file.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{name}: {source}")]
    Write {
        name: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
}

fn write_outputs(r: &KneeReport, obs: &[RunObs], out: &Path) -> Result<(), WriteError> {
    let write = |name: &str, bytes: &[u8]| {
        harness::durable::atomic_write(&out.join(name), bytes).map_err(|source| WriteError::Write {
            name: name.to_string(),
            source,
        })
    };
    write("knee.json", &serde_json::to_vec_pretty(r)?)?;
    write("case_runs.json", &serde_json::to_vec_pretty(obs)?)?;
    let md = markdown(r);
    write("knee.md", md.as_bytes())?;
    plot::cost_per_verified(r, &out.join("cost_per_verified.svg"))?;
    plot::verified_vs_spend(r, &out.join("verified_vs_spend.svg"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case_run::RunRecord;
    use bench::knee::run::observe;
    use harness::ending::Ending;

    #[test]
    fn levels_parse_sorted_and_errors_name_the_flag() {
        assert_eq!(parse_levels("0.5, 1,0.1").unwrap(), vec![1.0, 0.5, 0.1]);
        assert_eq!(parse_levels("1,0.75,0.5,0.25,0.1").unwrap().len(), 5);
        for bad in ["", "1,x", "0", "-0.5", "11", "nan", "1,1.0", "inf"] {
            let e = parse_levels(bad).unwrap_err().to_string();
            assert!(e.starts_with("--levels:"), "{bad}: {e}");
        }
        let many: Vec<String> = (1..=21).map(|i| format!("{}", i as f64 / 10.0)).collect();
        assert!(parse_levels(&many.join(","))
            .unwrap_err()
            .to_string()
            .contains("at most"));
    }

    fn record(state_dir: &Path, ending: &str) -> RunRecord {
        RunRecord {
            live_calls: None,
            latency: None,
            run: 0,
            ending: crate::case_run::ending_or_none::parse(ending).unwrap(),
            exit_code: 0,
            passed: true,
            score: 1.0,
            cost_usd: 0.5,
            latency_ms: 1,
            expected_ending: harness::ending::Ending::GoalMet,
            checks: vec![],
            failures: vec![],
            state_dir: state_dir.display().to_string(),
            verified: 2,
            bench_fault: None,
            cause: None,
        }
    }

    #[test]
    fn observe_reads_the_report_and_names_what_is_wrong() {
        let d = tempfile::tempdir().unwrap();
        let mut report = harness::report::Report::build(
            &harness::state::RunState::example(8),
            "g",
            Ending::BudgetExhausted,
            None,
            None,
            false,
            0,
        );
        report.hard_cap_usd = 1.5;
        let counts = (
            report.verified.len() as u64,
            report.parked.len() as u64,
            report.queue_left.len() as u64,
        );
        assert!(counts.0 > 0 && counts.1 > 0 && counts.2 > 0, "{counts:?}");
        let mut v = serde_json::to_value(&report).unwrap();
        std::fs::write(d.path().join("report.json"), v.to_string()).unwrap();
        let o = observe(0.5, "c", &record(d.path(), "BUDGET_EXHAUSTED"));
        assert_eq!(
            (
                o.verified,
                o.parked,
                o.queue_left,
                o.hard_cap_usd,
                o.error.clone()
            ),
            (counts.0, counts.1, counts.2, 1.5, None)
        );
        v["parked"] = 3.into();
        std::fs::write(d.path().join("report.json"), v.to_string()).unwrap();
        let o = observe(0.5, "c", &record(d.path(), "BUDGET_EXHAUSTED"));
        let e = o.error.unwrap();
        assert!(e.contains("report.json") && e.contains("`parked`"), "{e}");
        std::fs::remove_file(d.path().join("report.json")).unwrap();
        assert!(observe(0.5, "c", &record(d.path(), "GOAL_MET"))
            .error
            .unwrap()
            .contains("report.json"));
        let mut r = record(d.path(), "<none>");
        r.failures = vec!["the harness ran past 600s".into()];
        assert_eq!(
            observe(0.5, "c", &r).error.as_deref(),
            Some("the harness ran past 600s")
        );
    }
}
