//! `bench self-test`: the suite measured against deliberately broken
//! harnesses. A bench is worth what it catches, so every guarantee the suite
//! gates has a one-line bug of the kind the seed warns about
//! (`harness::mutants`), and the full gate suite must fail each one.
//!
//! One build serves every variant: the harness with the `chaos-broken`
//! feature (target/test-variants, the same build `bench chaos --self-test`
//! uses), the variant chosen per process by `HARNESS_CHAOS_BROKEN`. First a
//! control batch with no variant set must pass every case (a self-test whose
//! control fails measures nothing); then one batch per variant, every case
//! once. A variant is caught when at least one case-run fails; the report
//! lists which cases caught it and the first failure of each.
//!
//! A dishonest variant (`Mutant::gate`) is built to get past every check
//! but one: an audit gate it lies to, or a recording condition of the
//! replay it sends another value of. It counts as caught only when that
//! check failed in one of its case-runs: an honest harness passes a loose
//! gate, so a loosened gate is seen only by the self-test failing here.
//!
//! A gate of the bench that no harness can lie to is probed directly:
//! the hybrid switch to live must be one-way (`hybrid.sticky`,
//! `live::proxy::sticky_probe`: after the first call the recording did not
//! see, a call it did see still goes live). A loosened switch fails the
//! self-test there.
//!
//! The score is also given per promise class (suites/guarantees.toml: each
//! variant counts in the class of every promise that names it).
//!
//! Exit codes: 0 every variant caught and the control clean; 1 a variant got
//! through or the control failed; 3 the suite or the harness could not be
//! loaded or built; 2 usage error.

use crate::batch::{self, Batch};
use crate::case_run::{Overlay, RunRecord};
use crate::events::{Lines, Terminal};
use crate::exit::ExitStatus;
use clap::Args;
use harness::mutants::Mutant;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Cases named per variant in the table (all of them are in the JSON).
const CAUGHT_BY_SHOWN: usize = 3;
/// Characters of a case's first failure kept in the table.
const FAILURE_SHOWN_CHARS: usize = 120;

#[derive(Args, Debug, Clone)]
pub struct SelfTestArgs {
    /// Suite root holding happy/ edge/ adversarial/ regression/ (every
    /// category runs: the gate is the full suite).
    #[arg(long, default_value = "suites")]
    pub suite: PathBuf,
    /// Only these variants (comma-separated wire names); default: all.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// A `chaos-broken` harness build (default: build it into target/test-variants).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    /// Do not run cargo; use the existing build.
    #[arg(long)]
    pub no_build: bool,
    /// Stop each variant's batch at its first failed case-run (no new one
    /// starts; those in flight finish): enough for the gate, and what CI
    /// runs. Without it every case runs under every variant, so the report
    /// shows every case that catches each.
    #[arg(long)]
    pub first_catch: bool,
    /// A self-test.json of an earlier run: with --first-catch, each variant
    /// runs the cases that caught it there first, then the rest of the
    /// suite in order. Only the order changes: a variant is caught iff one
    /// of its case-runs fails, and one whose old catchers pass now goes on
    /// through every other case. CI passes reports/self-test/self-test.json.
    #[arg(long)]
    pub prior: Option<PathBuf>,
    /// Case-runs at once.
    #[arg(long, default_value_t = 4)]
    pub max_concurrency: usize,
    #[arg(long, default_value = "target/bench/self-test")]
    pub out: PathBuf,
    /// The guarantee map whose promise classes the score is given per.
    #[arg(long, default_value = "suites/guarantees.toml")]
    pub map: PathBuf,
}

/// One variant's result (self-test.json).
#[derive(Debug, Serialize, Deserialize)]
pub struct VariantResult {
    pub variant: String,
    pub breaks: String,
    pub caught: bool,
    /// (case id, its first failure) for every case that failed.
    pub caught_by: Vec<(String, String)>,
    /// A dishonest variant's one check (`Mutant::gate`): it is caught only
    /// when that check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// The cases whose case-run failed on `gate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caught_by_gate: Vec<String>,
    pub wall_s: f64,
}

/// The mutation score of one promise class: its variants (those of this
/// run that a promise of the class names) and how many were caught.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClassScore {
    pub class: String,
    pub variants: usize,
    pub caught: usize,
    pub missed: Vec<String>,
}

/// One gate of the bench probed with traffic that a loosened gate lets
/// through.
#[derive(Debug, Serialize, Deserialize)]
pub struct GateProbe {
    pub gate: String,
    pub held: bool,
    pub detail: String,
}

/// The hybrid switch's probe, run in `dir`.
async fn hybrid_sticky(dir: &std::path::Path) -> GateProbe {
    let r = bench::live::proxy::sticky_probe(dir).await;
    let p = GateProbe {
        gate: "hybrid.sticky".into(),
        held: r.is_ok(),
        detail: r.unwrap_or_else(|e| e.to_string()),
    };
    errln!(
        "bench self-test: gate {} {}: {}",
        p.gate,
        if p.held { "HELD" } else { "LOOSE" },
        p.detail
    );
    p
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SelfTestReport {
    pub cases: usize,
    /// Every case under every variant, or each stopped at its first catch.
    pub mode: String,
    pub control_failures: Vec<(String, String)>,
    pub control_wall_s: f64,
    pub variants: Vec<VariantResult>,
    pub caught: usize,
    /// Caught / variants per promise class of the guarantee map.
    #[serde(default)]
    pub classes: Vec<ClassScore>,
    /// The bench's own gates probed directly (`hybrid.sticky`): each must
    /// hold.
    #[serde(default)]
    pub bench_gates: Vec<GateProbe>,
    pub wall_s: f64,
}

pub fn run(args: SelfTestArgs) -> ExitCode {
    batch::block_on("self-test", ExitStatus::Unloadable, run_async(args))
}

/// `--variants` names a variant the harness does not have.
#[derive(Debug, thiserror::Error)]
#[error("--variants: no variant {name:?} the suite catches; the variants are {} (a variant a `bench faults` scenario catches is run by `bench faults --self-test`)",
    Mutant::ALL.iter().filter(|m| m.faults_scenario().is_none()).map(|m| m.as_str()).collect::<Vec<_>>().join(", "))]
struct UnknownVariant {
    name: String,
}

/// The variants to run: those named, or every variant the suite can
/// catch. A variant only a `bench faults` scenario can catch (a stepped
/// clock: no case-run makes that fault) is `bench faults --self-test`'s,
/// and named here it is refused.
fn chosen(names: &[String]) -> Result<Vec<Mutant>, UnknownVariant> {
    if names.is_empty() {
        return Ok(Mutant::ALL
            .into_iter()
            .filter(|m| m.faults_scenario().is_none())
            .collect());
    }
    names
        .iter()
        .map(|n| match Mutant::parse(n) {
            Some(m) if m.faults_scenario().is_none() => Ok(m),
            _ => Err(UnknownVariant { name: n.clone() }),
        })
        .collect()
}

/// Why `--prior` gives no earlier catchers.
#[derive(Debug, thiserror::Error)]
enum PriorError {
    #[error("--prior {}: cannot read: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--prior {}: not a self-test.json: {source}", .path.display())]
    NotReport {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The cases (indices into `cases`) that caught each variant in an earlier
/// self-test.json. A case the suite no longer has is skipped.
fn prior_catchers(
    path: &std::path::Path,
    cases: &[crate::suite::Case],
) -> Result<std::collections::HashMap<String, Vec<usize>>, PriorError> {
    let text = std::fs::read_to_string(path).map_err(|source| PriorError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let prior: SelfTestReport =
        serde_json::from_str(&text).map_err(|source| PriorError::NotReport {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(prior
        .variants
        .into_iter()
        .map(|v| {
            // A dishonest variant's gate catchers first: a batch stopped by
            // another check's failure would run again, whole.
            let first = (v.caught_by_gate.iter())
                .chain(v.caught_by.iter().map(|(id, _)| id))
                .filter_map(|id| cases.iter().position(|c| c.id() == id))
                .collect();
            (v.variant, first)
        })
        .collect())
}

/// Every case whose case-run failed, with its first failure.
fn failures(cases: &[crate::suite::Case], per_case: &[Vec<RunRecord>]) -> Vec<(String, String)> {
    cases
        .iter()
        .zip(per_case)
        .filter_map(|(c, runs)| {
            let bad = runs.iter().find(|r| !r.passed)?;
            let why = bad
                .failures
                .first()
                .cloned()
                .unwrap_or_else(|| format!("ended {}", bad.ending_name()));
            Some((c.id().to_string(), why))
        })
        .collect()
}

/// The variants, the harness build and the suite, ready to run; Err is the
/// exit code, the reason already printed.
async fn start(args: &SelfTestArgs) -> Result<(Vec<Mutant>, Batch), ExitCode> {
    let variants = chosen(&args.variants).map_err(|e| {
        errln!("bench self-test: {e}");
        ExitCode::from(ExitStatus::Usage)
    })?;
    if args.max_concurrency == 0 {
        errln!("bench self-test: --max-concurrency must be at least 1");
        return Err(ExitCode::from(ExitStatus::Usage));
    }
    let unloadable = |e: &dyn std::fmt::Display| {
        errln!("bench self-test: {e}");
        ExitCode::from(ExitStatus::Unloadable)
    };
    let bin =
        batch::build_harness(args.harness.as_ref(), args.no_build).map_err(|e| unloadable(&e))?;
    let suite = crate::suite::load_suite(&args.suite, None).map_err(|e| unloadable(&e))?;
    if !suite.errors.is_empty() {
        for e in &suite.errors {
            errln!("bench self-test: case not loaded: {e}");
        }
        return Err(ExitCode::from(ExitStatus::Unloadable));
    }
    let b = Batch::start(suite.cases, bin, &args.out, 1, args.max_concurrency)
        .await
        .map_err(|e| unloadable(&e))?;
    Ok((variants, b))
}

/// The earlier run's catchers to try first; --prior only orders a
/// --first-catch run.
fn prior_order(
    args: &SelfTestArgs,
    cases: &[crate::suite::Case],
) -> Result<std::collections::HashMap<String, Vec<usize>>, ExitCode> {
    match &args.prior {
        Some(p) if args.first_catch => prior_catchers(p, cases).map_err(|e| {
            errln!("bench self-test: {e}");
            ExitCode::from(ExitStatus::Usage)
        }),
        Some(_) => {
            errln!("bench self-test: --prior orders a --first-catch run; without --first-catch every case runs anyway");
            Err(ExitCode::from(ExitStatus::Usage))
        }
        None => Ok(Default::default()),
    }
}

/// One variant's batch: every case, or (--first-catch) up to its first
/// failed case-run, its prior catchers first. A dishonest variant whose first
/// failed case-run did not fail on its gate goes on through every case: the
/// gate may still catch it in another.
async fn run_variant(
    b: &Batch,
    m: &Mutant,
    first_catch: Option<&[usize]>,
    terminal: &mut Terminal,
) -> VariantResult {
    let t0 = Instant::now();
    let overlay = Overlay {
        harness_env: vec![(
            harness::simfs::BROKEN_ENV.to_string(),
            m.as_str().to_string(),
        )],
        ..Default::default()
    };
    let dir = b.out.join(m.as_str());
    let mut per_case = match first_catch {
        Some(first) => b.run_until_failure(&overlay, &dir, first, terminal).await,
        None => b.run(&overlay, &dir, terminal).await,
    };
    let gate = m.gate();
    if let Some(g) = gate {
        // Only a batch stopped early by another check's failure left cases unrun.
        let stopped_early = !failures(&b.cases, &per_case).is_empty();
        if first_catch.is_some()
            && stopped_early
            && gate_catchers(&b.cases, &per_case, g).is_empty()
        {
            per_case = b.run(&overlay, &dir.join("every-case"), terminal).await;
        }
    }
    let caught_by = failures(&b.cases, &per_case);
    let caught_by_gate = gate.map_or_else(Vec::new, |g| gate_catchers(&b.cases, &per_case, g));
    let r = VariantResult {
        variant: m.as_str().to_string(),
        breaks: m.breaks().to_string(),
        caught: match gate {
            Some(_) => !caught_by_gate.is_empty(),
            None => !caught_by.is_empty(),
        },
        caught_by,
        gate: gate.map(str::to_string),
        caught_by_gate,
        wall_s: t0.elapsed().as_secs_f64(),
    };
    errln!(
        "bench self-test: {:<24} {} ({} cases{}), {:.1}s",
        r.variant,
        if r.caught { "CAUGHT" } else { "MISSED" },
        r.caught_by.len(),
        match &r.gate {
            Some(g) => format!(", {} by {g}", r.caught_by_gate.len()),
            None => String::new(),
        },
        r.wall_s
    );
    r
}

/// Did this case-run fail on `gate` (`Mutant::gate`): the audit check of
/// that name failed, or the replay refused a call sent under another value
/// of that recording condition (compared by type, `BenchFault::OtherConditions`).
fn failed_on(rec: &RunRecord, gate: &str) -> bool {
    match gate.split_once('.') {
        Some(("audit", _)) => rec.checks.iter().any(|c| c.name == gate && !c.passed),
        Some(("replay", field)) => matches!(
            &rec.bench_fault,
            Some(crate::bench_fault::BenchFault::OtherConditions { difference, .. })
                if difference.field.as_str() == field
        ),
        _ => false,
    }
}

/// The cases one of whose case-runs failed on `gate`.
fn gate_catchers(
    cases: &[crate::suite::Case],
    per_case: &[Vec<RunRecord>],
    gate: &str,
) -> Vec<String> {
    cases
        .iter()
        .zip(per_case)
        .filter(|(_, runs)| runs.iter().any(|r| failed_on(r, gate)))
        .map(|(c, _)| c.id().to_string())
        .collect()
}

/// Why the guarantee map gives no promise classes.
#[derive(Debug, thiserror::Error)]
#[error("--map {}: {source} (the score per promise class reads it)", .path.display())]
struct MapUnread {
    path: PathBuf,
    source: bench::guarantees::MapError,
}

/// Each variant's promise classes: the class of every promise of the map
/// that names it.
fn variant_classes(
    path: &std::path::Path,
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>, MapUnread> {
    let map = bench::guarantees::load(path).map_err(|source| MapUnread {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for p in &map.promises {
        for v in &p.variants {
            out.entry(v.clone()).or_default().insert(p.class.clone());
        }
    }
    Ok(out)
}

/// The class a variant no promise names is scored under (`bench
/// guarantees --check` refuses such a variant; the score still counts it).
const NO_CLASS: &str = "(no promise)";

/// Caught / variants per promise class, classes in name order.
fn class_scores(
    results: &[VariantResult],
    classes: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<ClassScore> {
    let mut by: std::collections::BTreeMap<&str, ClassScore> = Default::default();
    for r in results {
        let of: Vec<&str> = match classes.get(&r.variant) {
            Some(c) if !c.is_empty() => c.iter().map(String::as_str).collect(),
            _ => vec![NO_CLASS],
        };
        for c in of {
            let e = by.entry(c).or_insert_with(|| ClassScore {
                class: c.to_string(),
                variants: 0,
                caught: 0,
                missed: vec![],
            });
            e.variants += 1;
            if r.caught {
                e.caught += 1;
            } else {
                e.missed.push(r.variant.clone());
            }
        }
    }
    by.into_values().collect()
}

async fn run_async(args: SelfTestArgs) -> ExitCode {
    let t_all = Instant::now();
    let (variants, b) = match start(&args).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let n_cases = b.cases.len();
    let mut terminal = Terminal::new(
        b.total() * (1 + variants.len() as u64),
        "case-runs",
        Lines::Progress,
    );
    let prior = match prior_order(&args, &b.cases) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let classes = match variant_classes(&args.map) {
        Ok(c) => c,
        Err(e) => {
            errln!("bench self-test: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let mode = if args.first_catch {
        "each variant stopped at its first failed case-run"
    } else {
        "every case under every variant"
    };

    // The control: the same broken build with no variant selected.
    let t0 = Instant::now();
    let control = b
        .run(&Overlay::default(), &b.out.join("control"), &mut terminal)
        .await;
    let control_failures = failures(&b.cases, &control);
    let control_wall_s = t0.elapsed().as_secs_f64();
    errln!(
        "bench self-test: control (no variant): {} of {n_cases} cases failed, {control_wall_s:.1}s",
        control_failures.len()
    );

    let mut results = vec![];
    for m in &variants {
        let first = args
            .first_catch
            .then(|| prior.get(m.as_str()).map(Vec::as_slice).unwrap_or(&[]));
        results.push(run_variant(&b, m, first, &mut terminal).await);
    }
    terminal.finish();
    let bench_gates = vec![hybrid_sticky(&b.out.join("hybrid-probe")).await];
    let caught = results.iter().filter(|r| r.caught).count();
    let report = SelfTestReport {
        cases: n_cases,
        mode: mode.to_string(),
        control_failures,
        control_wall_s,
        caught,
        classes: class_scores(&results, &classes),
        variants: results,
        bench_gates,
        wall_s: t_all.elapsed().as_secs_f64(),
    };
    write_report(&b.out, &report);
    let held = report.bench_gates.iter().all(|g| g.held);
    if report.control_failures.is_empty() && caught == report.variants.len() && held {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Missed)
    }
}

/// The table, self-test.json and .md (a write that fails is said, not
/// fatal: the verdict is the exit code), the verdict and where the report is.
fn write_report(out: &std::path::Path, report: &SelfTestReport) {
    let md = markdown(report);
    outln!("{}", table(report));
    outln!("{}", class_table(report));
    for (name, body) in [
        (
            "self-test.json",
            serde_json::to_string_pretty(report).unwrap_or_default(),
        ),
        ("self-test.md", md),
    ] {
        let p = out.join(name);
        if let Err(e) = std::fs::write(&p, body) {
            errln!("bench self-test: cannot write {}: {e}", p.display());
        }
    }
    outln!("{}", verdict(report));
    outln!("report     {}", out.join("self-test.md").display());
}

fn verdict(r: &SelfTestReport) -> String {
    let mut v = format!(
        "{} of {} variants caught by the suite ({} cases, 1 run each; {}), {:.0}s",
        r.caught,
        r.variants.len(),
        r.cases,
        r.mode,
        r.wall_s
    );
    if !r.control_failures.is_empty() {
        v.push_str(&format!(
            "; FAIL: the control (no variant) failed {} case(s), first {}: {}",
            r.control_failures.len(),
            r.control_failures[0].0,
            r.control_failures[0].1
        ));
    }
    let missed: Vec<String> = (r.variants.iter())
        .filter(|v| !v.caught)
        .map(|v| match &v.gate {
            Some(g) if !v.caught_by.is_empty() => {
                format!(
                    "{} (failed cases, but never {g}, the one check it probes)",
                    v.variant
                )
            }
            _ => v.variant.clone(),
        })
        .collect();
    if !missed.is_empty() {
        v.push_str(&format!("; FAIL: missed {}", missed.join(", ")));
    }
    for g in r.bench_gates.iter().filter(|g| !g.held) {
        v.push_str(&format!(
            "; FAIL: the bench's gate {} is loose: {}",
            g.gate, g.detail
        ));
    }
    v
}

use harness::text::clip_chars as clip;

fn caught_by_cell(v: &VariantResult) -> String {
    let mut cell: Vec<String> = (v.caught_by.iter().take(CAUGHT_BY_SHOWN))
        .map(|(id, why)| format!("{id}: {}", clip(why, FAILURE_SHOWN_CHARS)))
        .collect();
    if v.caught_by.len() > CAUGHT_BY_SHOWN {
        cell.push(format!("(+{} more)", v.caught_by.len() - CAUGHT_BY_SHOWN));
    }
    cell.join("\n")
}

fn table(r: &SelfTestReport) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record([
        "variant",
        "breaks",
        "caught",
        "cases",
        "caught by (first failure)",
    ]);
    for v in &r.variants {
        b.push_record([
            v.variant.clone(),
            v.breaks.clone(),
            caught_cell(v, "NO"),
            v.caught_by.len().to_string(),
            caught_by_cell(v),
        ]);
    }
    b.build().with(Style::sharp()).to_string()
}

fn markdown(r: &SelfTestReport) -> String {
    let mut md = format!(
        "# bench self-test\n\n{}\n\nThe harness built with the `chaos-broken` feature (never the production build); each variant is one deliberately broken behaviour (`harness::mutants`), selected by `HARNESS_CHAOS_BROKEN`, run through every case of the suite once. The control (no variant) must pass every case: {} failed ({:.1}s).\n\n| variant | breaks | caught | cases | caught by (first failure) | wall |\n|---|---|---|---:|---|---:|\n",
        verdict(r),
        r.control_failures.len(),
        r.control_wall_s
    );
    for v in &r.variants {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1}s |\n",
            v.variant,
            v.breaks,
            caught_cell(v, "**NO**"),
            v.caught_by.len(),
            caught_by_cell(v).replace('|', "\\|").replace('\n', "<br>"),
            v.wall_s
        ));
    }
    md.push_str("\n## Mutation score per promise class\n\nEach variant counts in the class of every promise of suites/guarantees.toml that names it.\n\n| class | caught | variants | score | missed |\n|---|---:|---:|---:|---|\n");
    for c in &r.classes {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            c.class,
            c.caught,
            c.variants,
            score(c),
            c.missed.join(", ")
        ));
    }
    md
}

/// Caught / variants as a percentage.
fn score(c: &ClassScore) -> String {
    format!("{:.0}%", 100.0 * c.caught as f64 / c.variants.max(1) as f64)
}

/// The caught column: yes (with the gate that caught a dishonest variant),
/// or `no` as the table spells it.
fn caught_cell(v: &VariantResult, no: &str) -> String {
    match (v.caught, &v.gate) {
        (true, Some(g)) => format!("yes, by {g}"),
        (true, None) => "yes".into(),
        (false, Some(g)) => format!("{no} (never {g})"),
        (false, None) => no.into(),
    }
}

/// The mutation score per promise class, for the terminal.
fn class_table(r: &SelfTestReport) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record(["promise class", "caught", "variants", "score", "missed"]);
    for c in &r.classes {
        b.push_record([
            c.class.clone(),
            c.caught.to_string(),
            c.variants.to_string(),
            score(c),
            c.missed.join(", "),
        ]);
    }
    b.build().with(Style::sharp()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_fault::BenchFault;

    /// A dishonest variant's gate is a check the bench has: an audit gate
    /// of the map's list, or a recording condition the replay compares.
    #[test]
    fn every_gate_names_a_check_the_bench_makes() {
        let fields: Vec<&str> = harness::model::ConditionField::ALL
            .iter()
            .map(|f| f.as_str())
            .collect();
        for m in Mutant::ALL {
            let Some(g) = m.gate() else { continue };
            let ok = match g.split_once('.') {
                Some(("audit", _)) => bench::audit::AuditGate::of_check(g).is_some(),
                Some(("replay", f)) => fields.contains(&f),
                _ => false,
            };
            assert!(ok, "{}: gate {g:?} is no check of the bench", m.as_str());
        }
    }

    fn record(checks: Vec<bench::score::Check>, fault: Option<BenchFault>) -> RunRecord {
        RunRecord {
            live_calls: None,
            run: 0,
            ending: Some(harness::ending::Ending::UnrecoverableError),
            exit_code: 1,
            passed: false,
            score: 0.0,
            cost_usd: 0.0,
            latency_ms: 1,
            latency: None,
            expected_ending: harness::ending::Ending::GoalMet,
            checks,
            failures: vec![],
            state_dir: String::new(),
            verified: 0,
            bench_fault: fault,
            cause: None,
        }
    }

    fn check(name: &str, passed: bool) -> bench::score::Check {
        bench::score::Check {
            name: name.into(),
            kind: bench::score::CheckKind::Gate,
            passed,
            detail: String::new(),
        }
    }

    /// A case-run failed on a gate only when that very check failed: a
    /// passed audit check, another audit check or another recording
    /// condition is not it.
    #[test]
    fn a_case_run_fails_on_a_gate_only_by_that_check() {
        let spend = "audit.spend";
        assert!(failed_on(&record(vec![check(spend, false)], None), spend));
        assert!(!failed_on(&record(vec![check(spend, true)], None), spend));
        assert!(!failed_on(
            &record(vec![check("audit.confined", false)], None),
            spend
        ));
        let other = |field| BenchFault::OtherConditions {
            call_key: "execute/t1/a0/0".into(),
            difference: harness::model::Difference {
                field,
                recorded: "a".into(),
                requested: "b".into(),
            },
        };
        let tools = Some(other(harness::model::ConditionField::Tools));
        assert!(failed_on(&record(vec![], tools.clone()), "replay.tools"));
        assert!(!failed_on(&record(vec![], tools), "replay.model"));
        let miss = BenchFault::RecordingMiss {
            call_key: None,
            detail: "tools".into(),
        };
        assert!(!failed_on(&record(vec![], Some(miss)), "replay.tools"));
    }

    fn result(variant: &str, caught: bool) -> VariantResult {
        VariantResult {
            variant: variant.into(),
            breaks: String::new(),
            caught,
            caught_by: vec![],
            gate: None,
            caught_by_gate: vec![],
            wall_s: 0.0,
        }
    }

    /// A variant counts in every class that names it; one no promise names
    /// is scored apart, never dropped.
    #[test]
    fn the_score_counts_each_variant_in_each_of_its_classes() {
        let classes = [
            ("a", vec!["money"]),
            ("b", vec!["money", "resume"]),
            ("c", vec!["resume"]),
        ]
        .into_iter()
        .map(|(v, cs)| (v.to_string(), cs.into_iter().map(String::from).collect()))
        .collect();
        let results = [
            result("a", true),
            result("b", false),
            result("c", true),
            result("d", true),
        ];
        let s = class_scores(&results, &classes);
        let got: Vec<(&str, usize, usize, Vec<&str>)> = s
            .iter()
            .map(|c| {
                let missed = c.missed.iter().map(String::as_str).collect();
                (c.class.as_str(), c.caught, c.variants, missed)
            })
            .collect();
        assert_eq!(
            got,
            [
                (NO_CLASS, 1, 1, vec![]),
                ("money", 1, 2, vec!["b"]),
                ("resume", 1, 2, vec!["b"]),
            ]
        );
    }
}
