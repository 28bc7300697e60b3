//! Loading eval suites: `suites/<category>/<id>/` with case.toml, run.toml,
//! workspace/, checks/, cassette.json (format: suites/README.md). A case that
//! does not load is an error value naming the file and the field; the rest of
//! the suite still loads and runs, and the gate fails.

pub mod case_check;

use harness::ending::Ending;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The four categories of the main suite (`bench run --suite suites`); the
/// proportions rule of suites/README.md is about these.
pub const CATEGORIES: [&str; 4] = ["happy", "edge", "adversarial", "regression"];
/// Categories that are suites of their own: never loaded as part of the main
/// suite, only when named (`--suite suites/live`, or `--suite suites
/// --category live`). `live` replays traffic recorded from a real model.
pub const STANDALONE_CATEGORIES: [&str; 1] = ["live"];
/// The value of `[expect] ending` that makes the hard gate the ending the live
/// run produced for that cassette variant (`runs[r % n].outcome.ending`).
pub const ENDING_RECORDED: &str = "recorded";

pub fn known_category(c: &str) -> bool {
    CATEGORIES.contains(&c) || STANDALONE_CATEGORIES.contains(&c)
}

fn category_list() -> String {
    CATEGORIES
        .iter()
        .chain(STANDALONE_CATEGORIES.iter())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}
/// Bounded: a suite is a few hundred cases, not an unbounded crawl.
pub const SUITE_MAX_CASES: usize = 5000;
/// `latency_cap_ms` range: a cap of 0 can never pass; a day is no cap.
pub const LATENCY_CAP_MS_MAX: u64 = 24 * 3600 * 1000;
/// A case's title and each `covers` tag, in characters: a line a reader of
/// the FAIL line reads, never a payload every output repeats (a 5 MB title
/// made a 10.5 MB summary.md and a 15.7 MB summary.json).
pub const TITLE_MAX_CHARS: usize = 300;
/// `latency_scale` range: recorded latencies (at most
/// `harness::replay::cassette::MAX_LATENCY_MS`) times this must stay a
/// sleep the replay server can take.
pub const LATENCY_SCALE_MAX: f64 = 100.0;
/// `cost_cap_usd`, `spend_usd_min` and `spend_usd_max` range.
pub const CASE_USD_MAX: f64 = 1_000_000.0;

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// `<phase>:<n>` as in harness/src/chaos_hook.rs.
    pub at: String,
    /// What the harness is sent there: SIGKILL (the default: a crash), or
    /// SIGTERM (a stop request: the harness must suspend, exit 143 and
    /// leave a stop report, or the case-run fails).
    #[serde(default)]
    pub signal: InterruptSignal,
    /// A stop request's report must say this (SIGTERM, SIGINT, SIGHUP only).
    pub stop_report: Option<StopReportExpect>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum InterruptSignal {
    #[default]
    #[serde(rename = "SIGKILL")]
    Sigkill,
    #[serde(rename = "SIGTERM")]
    Sigterm,
    /// Ctrl-C: a stop request like SIGTERM (exit 130).
    #[serde(rename = "SIGINT")]
    Sigint,
    /// A closed terminal: a stop request like SIGTERM (exit 129).
    #[serde(rename = "SIGHUP")]
    Sighup,
}

impl InterruptSignal {
    /// The stop request this is, or None for SIGKILL (a crash).
    pub fn stop_request(self) -> Option<nix::sys::signal::Signal> {
        use nix::sys::signal::Signal;
        match self {
            InterruptSignal::Sigkill => None,
            InterruptSignal::Sigterm => Some(Signal::SIGTERM),
            InterruptSignal::Sigint => Some(Signal::SIGINT),
            InterruptSignal::Sighup => Some(Signal::SIGHUP),
        }
    }
}

/// `[interrupt.stop_report]`: what the stop report of the interrupted run
/// must say, beyond the signal and that it is resumable.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopReportExpect {
    /// `in_flight_task`: the task in flight at the stop.
    pub in_flight_task: Option<String>,
    /// `stopped.cut` must hold this text (what the stop cut).
    pub cut_contains: Option<String>,
}

/// `[[step]]`: a further `harness run` of the case-run, judged on its own
/// (gate `step`): after the scored run has ended and been read
/// (`when = "after"`), or while the `[interrupt]` harness is paused at its
/// point, alive and holding its locks (`when = "paused"`: a second harness
/// beside it).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub when: StepWhen,
    /// Arguments added to the case-run's `harness run` command (a raise).
    #[serde(default)]
    pub args: Vec<String>,
    /// Top-level keys of run.toml replaced for this step (`goal`, `outbox`),
    /// each a string; the spec is a copy beside the case's own.
    #[serde(default)]
    pub spec: BTreeMap<String, String>,
    /// The state dir, relative to the case-run's directory (`state` is the
    /// case-run's own; another name is a second run of the same workspace).
    pub state_dir: Option<String>,
    /// The exit code the step must give.
    pub exit: i32,
    /// Texts its stdout or stderr must hold.
    #[serde(default)]
    pub output_contains: Vec<String>,
    /// Event kinds (events.jsonl `kind`) the step must not append to the
    /// case-run's state dir: `resume` and `start` mean it ran the run again.
    #[serde(default)]
    pub no_new_events: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepWhen {
    After,
    Paused,
}

/// `[raise]`: run the case to its first ending, which must be the one the
/// limit stops (BUDGET_EXHAUSTED for `cap_usd`, TIME_LIMIT for
/// `wall_clock_s`), then run the same command on the same state dir with
/// `--raise-cap-usd` (resp. `--raise-wall-clock-s`); `[expect]` judges the
/// final report. Exactly one of the two, above the spec's own limit.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Raise {
    pub cap_usd: Option<f64>,
    pub wall_clock_s: Option<f64>,
}

impl Raise {
    /// The limit raised, its new value and the field that names it.
    pub fn limit(&self) -> Option<(harness::ledger::LimitKind, f64, &'static str)> {
        use harness::ledger::LimitKind;
        match (self.cap_usd, self.wall_clock_s) {
            (Some(x), None) => Some((LimitKind::HardCapUsd, x, "raise.cap_usd")),
            (None, Some(x)) => Some((LimitKind::WallClockLimitS, x, "raise.wall_clock_s")),
            _ => None,
        }
    }

    /// The ending the first run must reach for the raise to be taken.
    pub fn first_ending(&self) -> Option<Ending> {
        self.limit().map(|(k, _, _)| match k {
            harness::ledger::LimitKind::HardCapUsd => Ending::BudgetExhausted,
            harness::ledger::LimitKind::WallClockLimitS => Ending::TimeLimit,
        })
    }
}

/// What the bench makes in the case copy before the run, for fixtures git
/// cannot hold (suites/README.md, `[setup]`). Paths are relative to the case
/// copy (e.g. `workspace/pipe`, `SENTINEL-outside-workspace.txt`).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Named pipes (FIFOs) to create.
    #[serde(default)]
    pub fifos: Vec<String>,
    /// Hard links to create: `link` becomes a second name of `target`.
    #[serde(default)]
    pub hard_links: Vec<HardLink>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardLink {
    pub link: String,
    pub target: String,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestOrder {
    pub call_key: String,
    pub strings: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestExcludes {
    /// A call key, or a prefix ending in `*`.
    pub call_key: String,
    pub strings: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub ending: String,
    pub predicate_met: Option<bool>,
    pub verified: Option<Vec<String>>,
    pub verified_count: Option<usize>,
    pub parked: Option<Vec<String>>,
    pub parked_reason_contains: Option<BTreeMap<String, String>>,
    pub pruned: Option<Vec<String>>,
    pub queue_left: Option<Vec<String>>,
    pub outbox_total: Option<usize>,
    pub outbox_key_count: Option<BTreeMap<String, usize>>,
    pub outbox_contains: Option<Vec<String>>,
    pub spend_usd_min: Option<f64>,
    pub spend_usd_max: Option<f64>,
    /// Any TOML value: its schema is any JSON value's.
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub report: Option<BTreeMap<String, toml::Value>>,
    pub detail_contains: Option<String>,
    pub drift_bands: Option<Vec<String>>,
    /// `[memory] lessons`: the call keys of the lessons admitted, in order.
    pub lessons: Option<Vec<String>>,
    /// ... and of those refused, with each one's reason (`vague`, `steers`, ...).
    pub lessons_refused: Option<BTreeMap<String, String>>,
    /// `[memory]` compaction: each attempt's outcome, in order (`ok`, `malformed`, ...).
    pub compactions: Option<Vec<String>>,
    pub files_contain: Option<BTreeMap<String, String>>,
    pub files_absent: Option<Vec<String>>,
    pub notice_at_end: Option<bool>,
    pub min_budget_notices: Option<u64>,
    pub commits_count: Option<usize>,
    /// Per commit on the run branch, oldest first: the exact files it changed
    /// (read from the workspace copy's repository; needs workspace_git).
    pub commit_files: Option<Vec<Vec<String>>>,
    pub request_contains_in_order: Option<Vec<RequestOrder>>,
    /// What requests must NOT carry (any attempt of every request whose call
    /// key matches; `judge/*` matches every judge call).
    pub request_excludes: Option<Vec<RequestExcludes>>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub id: String,
    pub category: String,
    pub title: String,
    #[serde(default)]
    pub covers: Vec<String>,
    pub latency_cap_ms: u64,
    pub cost_cap_usd: f64,
    pub faults: Option<String>,
    pub latency_scale: Option<f64>,
    pub workspace_git: Option<bool>,
    pub cassette: Option<String>,
    pub interrupt: Option<Interrupt>,
    pub raise: Option<Raise>,
    /// `[[step]]`: further harness commands of the case-run.
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
    /// Environment variables set on the harness process (after the bench has
    /// removed every provider key variable from it), e.g. a canary key.
    #[serde(default)]
    pub harness_env: BTreeMap<String, String>,
    pub setup: Option<Setup>,
    /// A case known to be flaky: still run by every gate, and shown as
    /// known flaky in every output (`bench flaky` checks the cause).
    pub known_flaky: Option<crate::known_flaky::KnownFlaky>,
    /// Misuses the case's scripted calls make on purpose, for the harness to
    /// refuse (bench/src/suite/case_check.rs): any other is a mistake in the case,
    /// refused at load.
    pub deliberate: Option<Deliberate>,
    pub expect: Expect,
}

/// `[deliberate]`: what a scripted case makes the model do wrong on
/// purpose. Each entry must be a misuse under the case's run.toml and be
/// used by its calls.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deliberate {
    /// Tools the calls name that run.toml's `[tools] allow` does not list
    /// (a hallucinated `bash`, a `post_message` the allowlist leaves out).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Verify kinds a plan uses that the harness does not know (`command`).
    #[serde(default)]
    pub verify_kinds: Vec<String>,
    /// Checks a plan's verify names that run.toml does not define.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// What the hard gate expects.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedEnding {
    /// `ending = "GOAL_MET"` etc.: the same for every run.
    Fixed(Ending),
    /// `ending = "recorded"`: per cassette variant, the ending of the live run
    /// that recorded it; run r expects `endings[r % n]`.
    Recorded(Vec<Ending>),
}

#[derive(Debug, Clone)]
pub struct Case {
    pub dir: PathBuf,
    pub file: CaseFile,
    pub expected: ExpectedEnding,
    /// Shared: the batch's replay-server groups hold clones of every case,
    /// and a cassette is the largest part of one.
    pub cassette: std::sync::Arc<harness::replay::Cassette>,
    pub cassette_path: PathBuf,
    /// SHA-256 over every file of the case (config hash input).
    pub content_sha256: String,
}

impl Case {
    pub fn id(&self) -> &str {
        &self.file.id
    }
    pub fn category(&self) -> &str {
        &self.file.category
    }
    /// The ending case-run `run` must reach (the hard gate).
    pub fn expected_ending(&self, run: u32) -> Ending {
        match &self.expected {
            ExpectedEnding::Fixed(e) => *e,
            ExpectedEnding::Recorded(v) => match v.len() {
                // load_case never builds an empty list; a harmless fallback.
                0 => Ending::UnrecoverableError,
                n => v[run as usize % n],
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct LoadError {
    pub file: String,
    pub field: String,
    pub expected: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: field `{}`: {}",
            self.file, self.field, self.expected
        )
    }
}

/// Top-level report.json fields an expectation may name.
pub fn report_fields() -> Vec<String> {
    let s = harness::state::RunState::example(0);
    let r = harness::report::Report::build(&s, "g", Ending::GoalMet, None, None, true, 0);
    match serde_json::to_value(r) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => vec![],
    }
}

fn err(file: &Path, field: &str, expected: impl Into<String>) -> LoadError {
    LoadError {
        file: file.display().to_string(),
        field: field.into(),
        expected: expected.into(),
    }
}

/// Read and check a case's case.toml and that its run.toml and workspace/
/// exist, without its cassette: what `bench record` needs before a cassette
/// exists. Returns the file and the path its cassette is (or will be) at.
pub fn load_case_file(
    dir: &Path,
    category: &str,
    report_fields: &[String],
) -> Result<(CaseFile, PathBuf), LoadError> {
    let f = &dir.join("case.toml");
    let text = std::fs::read_to_string(f)
        .map_err(|e| err(f, "(file)", format!("a readable case.toml: {e}")))?;
    let file = parse_case_toml(f, &text)?;
    check_case_values(f, &file)?;
    check_identity(f, dir, category, &file)?;
    check_expect_names(f, &file.expect, report_fields)?;
    if let Some(i) = &file.interrupt {
        check_interrupt_at(f, i)?;
    }
    check_steps(f, &file)?;
    if let Some(r) = &file.raise {
        check_raise(f, dir, r, file.interrupt.is_some())?;
    }
    check_harness_env(f, &file)?;
    if let Some(st) = &file.setup {
        check_setup_paths(f, st)?;
    }
    if file.expect.commit_files.is_some() && file.workspace_git != Some(true) {
        return Err(err(
            f,
            "expect.commit_files",
            "workspace_git = true (the commits are read from the workspace copy's repository)",
        ));
    }
    if let Some(fs) = &file.faults {
        harness::replay::FaultPlan::parse(fs).map_err(|e| err(f, "faults", e.to_string()))?;
    }
    for needed in ["run.toml", "workspace"] {
        if !dir.join(needed).exists() {
            return Err(err(
                &dir.join(needed),
                "(file)",
                format!("the case's {needed}"),
            ));
        }
    }
    let cassette_path = dir.join(file.cassette.as_deref().unwrap_or("cassette.json"));
    Ok((file, cassette_path))
}

/// The case is where its id and category say: its directory is named by
/// its id, under the directory of a known category.
fn check_identity(f: &Path, dir: &Path, category: &str, file: &CaseFile) -> Result<(), LoadError> {
    let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if file.id != dir_name {
        return Err(err(
            f,
            "id",
            format!("the directory name {dir_name:?}, found {:?}", file.id),
        ));
    }
    if !known_category(&file.category) {
        return Err(err(
            f,
            "category",
            format!("one of {}, found {:?}", category_list(), file.category),
        ));
    }
    if file.category != category {
        return Err(err(
            f,
            "category",
            format!(
                "{category:?} (the parent directory), found {:?}",
                file.category
            ),
        ));
    }
    Ok(())
}

/// Every name under [expect] is one the harness writes (an ending, a
/// report field, a drift band, a refusal reason, a compaction outcome):
/// a misspelt one would make a check that can never pass.
fn check_expect_names(
    f: &Path,
    expect: &Expect,
    report_fields: &[String],
) -> Result<(), LoadError> {
    if expect.ending != ENDING_RECORDED && Ending::parse(&expect.ending).is_none() {
        return Err(err(
            f,
            "expect.ending",
            format!(
                "one of {}, or {ENDING_RECORDED:?} (the live run's ending per cassette variant), found {:?}",
                Ending::ALL.map(|e| e.as_str()).join(", "),
                expect.ending
            ),
        ));
    }
    if let Some(r) = &expect.report {
        for k in r.keys() {
            if !report_fields.iter().any(|x| x == k) {
                return Err(err(
                    f,
                    &format!("expect.report.{k}"),
                    format!("a report.json field; known: {}", report_fields.join(", ")),
                ));
            }
        }
    }
    if let Some(b) = &expect.drift_bands {
        for (i, x) in b.iter().enumerate() {
            if !["aligned", "prune", "halt"].contains(&x.as_str()) {
                return Err(err(
                    f,
                    &format!("expect.drift_bands[{i}]"),
                    format!("aligned, prune or halt, found {x:?}"),
                ));
            }
        }
    }
    if let Some(m) = &expect.lessons_refused {
        for (k, reason) in m {
            if harness::lessons::LessonRefusal::parse(reason).is_none() {
                return Err(err(
                    f,
                    &format!("expect.lessons_refused.{k}"),
                    format!("a refusal reason (malformed, too_long, steers, vague, restates_task, duplicate, call_refused, call_failed, not_asked), found {reason:?}"),
                ));
            }
        }
    }
    if let Some(c) = &expect.compactions {
        for (i, x) in c.iter().enumerate() {
            if harness::state::CompactOutcome::parse(x).is_none() {
                return Err(err(
                    f,
                    &format!("expect.compactions[{i}]"),
                    format!("ok, malformed, refused or error, found {x:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// A paused step needs a harness paused (`[interrupt]`); a stop report's
/// expectation needs a stop request; a step's state dir stays in the
/// case-run's directory.
fn check_steps(f: &Path, file: &CaseFile) -> Result<(), LoadError> {
    if let Some(i) = &file.interrupt {
        if i.stop_report.is_some() && i.signal.stop_request().is_none() {
            return Err(err(
                f,
                "interrupt.stop_report",
                "a stop request (signal SIGTERM, SIGINT or SIGHUP): a SIGKILL leaves no stop report",
            ));
        }
    }
    for (n, s) in file.steps.iter().enumerate() {
        if s.when == StepWhen::Paused && file.interrupt.is_none() {
            return Err(err(
                f,
                &format!("step[{n}].when"),
                "\"after\", or an [interrupt] to pause at (\"paused\" runs beside the paused harness)",
            ));
        }
        if let Some(d) = &s.state_dir {
            let p = Path::new(d);
            let plain = p
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if d.is_empty() || !plain {
                return Err(err(
                    f,
                    &format!("step[{n}].state_dir"),
                    format!("a relative path inside the case-run's directory, found {d:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// `interrupt.at` names a pause point the harness has: `<phase>:<n>`.
fn check_interrupt_at(f: &Path, i: &Interrupt) -> Result<(), LoadError> {
    let ok =
        i.at.split_once(':')
            .and_then(|(p, n)| {
                Some((
                    harness::chaos_hook::Phase::parse(p)?,
                    n.parse::<u64>().ok()?,
                ))
            })
            .is_some();
    if !ok {
        let phases: Vec<&str> = harness::chaos_hook::Phase::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        return Err(err(
            f,
            "interrupt.at",
            format!(
                "<phase>:<n> with a phase among {}, found {:?}",
                phases.join(", "),
                i.at
            ),
        ));
    }
    Ok(())
}

/// `harness_env` sets environment variables: each name must be one.
fn check_harness_env(f: &Path, file: &CaseFile) -> Result<(), LoadError> {
    for name in file.harness_env.keys() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(
                f,
                &format!("harness_env.{name}"),
                "an environment variable name (letters, digits, '_')",
            ));
        }
    }
    Ok(())
}

/// The fixtures `[setup]` makes stay inside the case copy: relative paths
/// without `..`.
fn check_setup_paths(f: &Path, st: &Setup) -> Result<(), LoadError> {
    let rel_ok = |p: &str| {
        let p = Path::new(p);
        !p.as_os_str().is_empty()
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    let mut fields: Vec<(String, &str)> = st
        .fifos
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("setup.fifos[{i}]"), p.as_str()))
        .collect();
    for (i, h) in st.hard_links.iter().enumerate() {
        fields.push((format!("setup.hard_links[{i}].link"), h.link.as_str()));
        fields.push((format!("setup.hard_links[{i}].target"), h.target.as_str()));
    }
    for (field, p) in fields {
        if !rel_ok(p) {
            return Err(err(
                f,
                &field,
                format!("a path relative to the case copy without `..` (e.g. \"workspace/pipe\"), found {p:?}"),
            ));
        }
    }
    Ok(())
}

/// `[raise]`: one limit, a number above the spec's own (the first run
/// spends at most the spec's cap and runs at most its clock, so a raise to
/// less is one the harness refuses), and not with `[interrupt]`.
fn check_raise(f: &Path, dir: &Path, r: &Raise, interrupted: bool) -> Result<(), LoadError> {
    use harness::ledger::LimitKind;
    if interrupted {
        return Err(err(
            f,
            "raise",
            "no [interrupt] in the same case (one second run per case)",
        ));
    }
    let Some((kind, to, field)) = r.limit() else {
        return Err(err(
            f,
            "raise",
            "exactly one of `cap_usd` or `wall_clock_s`",
        ));
    };
    let spec_path = dir.join("run.toml");
    let spec = harness::spec::RunSpec::load(&spec_path).map_err(|e| {
        err(
            &spec_path,
            "(file)",
            format!("a run spec the raise can be read against: {e}"),
        )
    })?;
    let (spec_limit, spec_field, max) = match kind {
        LimitKind::HardCapUsd => (spec.hard_cap_usd, "budget.hard_cap_usd", CASE_USD_MAX),
        LimitKind::WallClockLimitS => (
            spec.wall_clock_limit_s,
            "budget.wall_clock_limit_s",
            LATENCY_CAP_MS_MAX as f64 / 1000.0,
        ),
    };
    if !(to.is_finite() && to > spec_limit && to <= max) {
        return Err(err(
            f,
            field,
            format!("a number above run.toml's {spec_field} ({spec_limit}: the first run can reach it) and at most {max}, found {to}"),
        ));
    }
    Ok(())
}

/// case.toml to a [`CaseFile`] through the workspace's strict loader. A type
/// error names the field by its path, never the value: `latency_cap_ms`, not
/// `-1`; a missing field is named under its table; the message is serde's.
fn parse_case_toml(f: &Path, text: &str) -> Result<CaseFile, LoadError> {
    strict::from_str::<CaseFile>(strict::Format::Toml, text).map_err(|e| {
        // The line as case.toml errors have always counted it: the lines
        // before the error's first byte (so an error at the start of a line
        // names the line above it).
        let line = e.at.map(|p| text[..p.byte].lines().count().max(1));
        err(
            f,
            &e.field().unwrap_or_else(|| "(file)".to_string()),
            format!(
                "{}{}",
                e.message,
                line.map(|l| format!(" (line {l})")).unwrap_or_default()
            ),
        )
    })
}

/// Every value of a case.toml in its range, so a bad value is this case's
/// load error (named by file and field) and never reaches the replay
/// server or the scorer, where it would stop the whole suite.
fn check_case_values(f: &Path, c: &CaseFile) -> Result<(), LoadError> {
    if let Some(k) = &c.known_flaky {
        k.check()
            .map_err(|(field, expected)| err(f, field, expected))?;
    }
    check_line(f, "title", &c.title)?;
    for (i, t) in c.covers.iter().enumerate() {
        check_line(f, &format!("covers[{i}]"), t)?;
    }
    if !(1..=LATENCY_CAP_MS_MAX).contains(&c.latency_cap_ms) {
        return Err(err(
            f,
            "latency_cap_ms",
            format!(
                "milliseconds in [1, {LATENCY_CAP_MS_MAX}], found {}",
                c.latency_cap_ms
            ),
        ));
    }
    check_usd(f, "cost_cap_usd", c.cost_cap_usd)?;
    if let Some(x) = c.latency_scale {
        if !(x.is_finite() && (0.0..=LATENCY_SCALE_MAX).contains(&x)) {
            return Err(err(
                f,
                "latency_scale",
                format!(
                    "a factor in [0, {LATENCY_SCALE_MAX}] (0 = as fast as possible), found {x}"
                ),
            ));
        }
    }
    if let Some(p) = &c.cassette {
        if p.trim().is_empty() || Path::new(p).is_absolute() {
            return Err(err(
                f,
                "cassette",
                format!("a path relative to the case directory, found {p:?}"),
            ));
        }
    }
    check_expect_values(f, c)
}

/// The values under [expect]: its ids and strings lines of prose, its
/// dollars in range, its paths inside the workspace.
fn check_expect_values(f: &Path, c: &CaseFile) -> Result<(), LoadError> {
    let e = &c.expect;
    let ids = |field: &str, v: &Option<Vec<String>>| -> Result<(), LoadError> {
        for (i, id) in v.iter().flatten().enumerate() {
            check_line(f, &format!("expect.{field}[{i}]"), id)?;
        }
        Ok(())
    };
    ids("verified", &e.verified)?;
    ids("parked", &e.parked)?;
    ids("pruned", &e.pruned)?;
    ids("queue_left", &e.queue_left)?;
    for (k, v) in e.parked_reason_contains.iter().flatten() {
        check_line(f, &format!("expect.parked_reason_contains.{k}"), k)?;
        check_line(f, &format!("expect.parked_reason_contains.{k}"), v)?;
    }
    for k in e.outbox_key_count.iter().flatten().map(|(k, _)| k) {
        check_line(f, &format!("expect.outbox_key_count.{k}"), k)?;
    }
    for (i, t) in e.outbox_contains.iter().flatten().enumerate() {
        check_line(f, &format!("expect.outbox_contains[{i}]"), t)?;
    }
    if let Some(x) = e.spend_usd_min {
        check_usd(f, "expect.spend_usd_min", x)?;
    }
    if let Some(x) = e.spend_usd_max {
        check_usd(f, "expect.spend_usd_max", x)?;
    }
    if let (Some(lo), Some(hi)) = (e.spend_usd_min, e.spend_usd_max) {
        if lo > hi {
            return Err(err(
                f,
                "expect.spend_usd_min",
                format!("at most expect.spend_usd_max ({hi}), found {lo}"),
            ));
        }
    }
    if let Some(d) = &e.detail_contains {
        check_line(f, "expect.detail_contains", d)?;
    }
    for (p, needle) in e.files_contain.iter().flatten() {
        check_ws_path(f, &format!("expect.files_contain.{p}"), p)?;
        check_line(f, &format!("expect.files_contain.{p}"), needle)?;
    }
    for (i, p) in e.files_absent.iter().flatten().enumerate() {
        check_ws_path(f, &format!("expect.files_absent[{i}]"), p)?;
    }
    if e.commits_count.is_some() && c.workspace_git != Some(true) {
        return Err(err(
            f,
            "expect.commits_count",
            "workspace_git = true (commits are counted on the workspace's git repository)",
        ));
    }
    check_requests_in_order(f, e)
}

/// Each `request_contains_in_order` names a call and at least one string.
fn check_requests_in_order(f: &Path, e: &Expect) -> Result<(), LoadError> {
    for (i, ro) in e.request_contains_in_order.iter().flatten().enumerate() {
        check_line(
            f,
            &format!("expect.request_contains_in_order[{i}].call_key"),
            &ro.call_key,
        )?;
        if ro.strings.is_empty() {
            return Err(err(
                f,
                &format!("expect.request_contains_in_order[{i}].strings"),
                "at least one string",
            ));
        }
        for (j, s) in ro.strings.iter().enumerate() {
            check_line(
                f,
                &format!("expect.request_contains_in_order[{i}].strings[{j}]"),
                s,
            )?;
        }
    }
    Ok(())
}

fn check_usd(f: &Path, field: &str, x: f64) -> Result<(), LoadError> {
    if x.is_finite() && (0.0..=CASE_USD_MAX).contains(&x) {
        Ok(())
    } else {
        Err(err(
            f,
            field,
            format!("a number of USD in [0, {CASE_USD_MAX}], found {x}"),
        ))
    }
}

/// A line of prose: every output repeats it (the FAIL line, summary.md,
/// JUnit, the suite page), so it is bounded and holds no control byte.
fn check_line(f: &Path, field: &str, s: &str) -> Result<(), LoadError> {
    if s.trim().is_empty() {
        Err(err(f, field, "a non-empty string"))
    } else if s.chars().count() > TITLE_MAX_CHARS {
        Err(err(
            f,
            field,
            format!(
                "at most {TITLE_MAX_CHARS} characters, found {}",
                s.chars().count()
            ),
        ))
    } else if let Some(c) = s.chars().find(|c| c.is_control()) {
        Err(err(
            f,
            field,
            format!(
                "one line of text without control characters, found U+{:04X}",
                c as u32
            ),
        ))
    } else {
        Ok(())
    }
}

/// A path the bench joins to the post-run workspace: relative, inside it.
fn check_ws_path(f: &Path, field: &str, p: &str) -> Result<(), LoadError> {
    let path = Path::new(p);
    let inside = !p.trim().is_empty()
        && path.is_relative()
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    if inside {
        Ok(())
    } else {
        Err(err(
            f,
            field,
            format!("a path relative to the workspace, without `..`, found {p:?}"),
        ))
    }
}

/// Per cassette variant, the ending its live run reached (`runs[i].outcome`),
/// for `ending = "recorded"`. A variant without an outcome is an error naming
/// the cassette file and the field.
pub fn recorded_endings(
    cassette: &harness::replay::Cassette,
    cassette_path: &Path,
    case_toml: &Path,
) -> Result<Vec<Ending>, LoadError> {
    if cassette.runs.is_empty() {
        return Err(err(cassette_path, "runs", "at least one run variant"));
    }
    let mut out = vec![];
    for (i, r) in cassette.runs.iter().enumerate() {
        let Some(o) = &r.outcome else {
            return Err(err(
                cassette_path,
                &format!("runs[{i}].outcome"),
                format!(
                    "the live run's outcome ({{ending, exit_code, predicate_met, calls, tokens}}), which {} needs for expect.ending = {ENDING_RECORDED:?}; re-record the case with `bench record`",
                    case_toml.display()
                ),
            ));
        };
        let e = Ending::parse(&o.ending).ok_or_else(|| {
            err(
                cassette_path,
                &format!("runs[{i}].outcome.ending"),
                format!(
                    "one of {}, found {:?}",
                    Ending::ALL.map(|e| e.as_str()).join(", "),
                    o.ending
                ),
            )
        })?;
        if o.exit_code != e.exit_code() {
            return Err(err(
                cassette_path,
                &format!("runs[{i}].outcome.exit_code"),
                format!(
                    "{}, the exit code of {}, found {}",
                    e.exit_code(),
                    e.as_str(),
                    o.exit_code
                ),
            ));
        }
        out.push(e);
    }
    Ok(out)
}

pub fn load_case(dir: &Path, category: &str, report_fields: &[String]) -> Result<Case, LoadError> {
    let f = dir.join("case.toml");
    let (file, cassette_path) = load_case_file(dir, category, report_fields)?;
    let cassette = harness::replay::Cassette::load(&cassette_path)
        .map_err(|e| err(&cassette_path, "(cassette)", e.to_string()))?;
    // A scripted cassette its scenario (and run spec) no longer compiles to
    // holds replies for a case that no longer exists: never replayed.
    if let Some(why) = crate::scripted::stale(dir, &cassette_path) {
        return Err(err(&cassette_path, "(cassette)", why));
    }
    case_check::check(dir, &file, &cassette, &cassette_path)?;
    if cassette.case != file.id {
        return Err(err(
            &cassette_path,
            "case",
            format!("the case id {:?}, found {:?}", file.id, cassette.case),
        ));
    }
    let expected = match Ending::parse(&file.expect.ending) {
        Some(e) => ExpectedEnding::Fixed(e),
        None => ExpectedEnding::Recorded(recorded_endings(&cassette, &cassette_path, &f)?),
    };
    // The case's whole directory, hashed as the harness fingerprints a tree.
    let mut content_sha256 = harness::workspace::Workspace::open(dir)
        .map(|w| w.fingerprint())
        .map_err(|e| err(dir, "(dir)", e.to_string()))?;
    // A cassette kept outside the case (recordings/live/<id>.json) is part of
    // the case's content too: a re-recording changes the config hash.
    let inside = match (
        std::fs::canonicalize(&cassette_path),
        std::fs::canonicalize(dir),
    ) {
        (Ok(c), Ok(d)) => c.starts_with(d),
        _ => false,
    };
    if !inside {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(&cassette_path).map_err(|e| {
            err(
                &cassette_path,
                "(cassette)",
                format!("a readable file: {e}"),
            )
        })?;
        let mut h = Sha256::new();
        h.update(format!("case-dir={content_sha256};cassette=").as_bytes());
        h.update(Sha256::digest(&bytes));
        content_sha256 = hex::encode(h.finalize());
    }
    Ok(Case {
        dir: dir.to_path_buf(),
        file,
        expected,
        cassette: cassette.into(),
        cassette_path,
        content_sha256,
    })
}

pub struct Suite {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
}

fn static_category(c: &str) -> Option<&'static str> {
    CATEGORIES
        .iter()
        .chain(STANDALONE_CATEGORIES.iter())
        .copied()
        .find(|k| *k == c)
}

/// The (category, case directory) pairs a suite holds, sorted within a
/// category. `root` is either a suite root holding category directories
/// (`suites/`: without `category`, exactly the four main categories, never a
/// standalone one like `live`, nor drift-calibration/ or demo/), or itself a
/// category directory whose name is a known category (`suites/live`).
/// `category` filters; an unknown category is an error.
pub fn suite_case_dirs(
    root: &Path,
    category: Option<&str>,
) -> Result<Vec<(&'static str, PathBuf)>, LoadError> {
    if !root.is_dir() {
        return Err(err(root, "--suite", "an existing suite directory"));
    }
    let filter = match category {
        None => None,
        Some(c) => Some(static_category(c).ok_or_else(|| {
            err(
                root,
                "--category",
                format!("one of {}, found {c:?}", category_list()),
            )
        })?),
    };
    let subdirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    // Canonical, so `--suite .` inside suites/live names the category too.
    let root_abs = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let root_name = root_abs
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(static_category);
    let holds_categories = subdirs(root).iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(known_category)
    });
    let cats: Vec<(&'static str, PathBuf)> = match root_name {
        Some(cat) if !holds_categories => {
            if let Some(c) = filter {
                if c != cat {
                    return Err(err(
                        root,
                        "--category",
                        format!(
                            "{cat:?} (the suite directory is that category) or none, found {c:?}"
                        ),
                    ));
                }
            }
            vec![(cat, root.to_path_buf())]
        }
        _ => match filter {
            Some(c) => vec![(c, root.join(c))],
            None => CATEGORIES.iter().map(|c| (*c, root.join(c))).collect(),
        },
    };
    let mut out = vec![];
    for (cat, cdir) in cats {
        for d in subdirs(&cdir) {
            out.push((cat, d));
        }
    }
    Ok(out)
}

/// Load every case of a suite (see [`suite_case_dirs`] for which).
pub fn load_suite(root: &Path, category: Option<&str>) -> Result<Suite, LoadError> {
    let fields = report_fields();
    load_suite_with(root, category, |d, cat| load_case(d, cat, &fields))
}

/// The suite walk (case directories, the case-count bound, unique ids) with
/// the loader of one case given: `load_case` for replay, the live commands'
/// loader for cases that may not have a recording yet.
pub fn load_suite_with(
    root: &Path,
    category: Option<&str>,
    load: impl Fn(&Path, &str) -> Result<Case, LoadError>,
) -> Result<Suite, LoadError> {
    let dirs = suite_case_dirs(root, category)?;
    let mut cases = vec![];
    let mut errors = vec![];
    for (cat, d) in dirs {
        if cases.len() + errors.len() >= SUITE_MAX_CASES {
            errors.push(err(
                &d,
                "(suite)",
                format!("at most {SUITE_MAX_CASES} cases"),
            ));
            break;
        }
        match load(&d, cat) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(e),
        }
    }
    // Ids are unique across categories (the replay server routes by id).
    let mut seen = std::collections::BTreeMap::new();
    let mut dup = vec![];
    for (i, c) in cases.iter().enumerate() {
        if let Some(j) = seen.insert(c.id().to_string(), i) {
            dup.push((i, j));
        }
    }
    for (i, j) in dup.iter().rev() {
        errors.push(err(
            &cases[*i].dir.join("case.toml"),
            "id",
            format!("a unique id; also used by {}", cases[*j].dir.display()),
        ));
    }
    let dup_idx: std::collections::BTreeSet<usize> = dup.iter().map(|(i, _)| *i).collect();
    let cases = cases
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dup_idx.contains(i))
        .map(|(_, c)| c)
        .collect();
    Ok(Suite { cases, errors })
}

/// The categories a walk of `root` without `--category` covers (see
/// [`suite_case_dirs`]): the one category a category directory is
/// (`suites/live`), else the four main ones. `bench run` checks that none
/// of them is missing or empty: a gate that silently ran three categories
/// would pass a suite that lost its fourth.
pub fn categories_of_root(root: &Path) -> Vec<&'static str> {
    let root_abs = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let own = root_abs
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(static_category);
    let holds_categories = std::fs::read_dir(root).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().is_dir() && e.file_name().to_str().is_some_and(known_category))
    });
    match own {
        Some(cat) if !holds_categories => vec![cat],
        _ => CATEGORIES.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A case dir whose case.toml is `text` (run.toml and workspace/ exist:
    /// load_case_file only checks they are there).
    fn case_dir(text: &str) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("happy").join("c1");
        std::fs::create_dir_all(dir.join("workspace")).unwrap();
        std::fs::write(dir.join("run.toml"), "").unwrap();
        std::fs::write(dir.join("case.toml"), text).unwrap();
        (t, dir)
    }

    fn load(text: &str) -> Result<CaseFile, LoadError> {
        let (_t, dir) = case_dir(text);
        load_case_file(&dir, "happy", &report_fields()).map(|(f, _)| f)
    }

    /// A valid case.toml with `top` among the top-level keys and `expect`
    /// among [expect]'s.
    fn base(top: &str, expect: &str) -> String {
        let mut t = String::from("id = \"c1\"\ncategory = \"happy\"\ntitle = \"t\"\n");
        if !top.contains("latency_cap_ms") {
            t.push_str("latency_cap_ms = 20000\n");
        }
        if !top.contains("cost_cap_usd") {
            t.push_str("cost_cap_usd = 1.0\n");
        }
        t.push_str(top);
        t.push_str("\n[expect]\nending = \"GOAL_MET\"\n");
        t.push_str(expect);
        t.push('\n');
        t
    }

    /// `[raise]` against a real run spec (hard cap $0.37, clock 28800 s):
    /// one limit, above the spec's, not with `[interrupt]`; each bad input
    /// names case.toml and the field.
    #[test]
    fn a_raise_is_one_limit_above_the_specs_and_bad_input_names_the_field() {
        let spec = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../suites/edge/edge-raise-cap-then-goal-met/run.toml"),
        )
        .unwrap();
        let load_with = |top: &str| {
            let (_t, dir) = case_dir(&base(top, ""));
            std::fs::write(dir.join("run.toml"), &spec).unwrap();
            load_case_file(&dir, "happy", &report_fields()).map(|(f, _)| f)
        };
        let r = load_with("[raise]\ncap_usd = 2.0").unwrap().raise.unwrap();
        assert_eq!(r.first_ending(), Some(Ending::BudgetExhausted));
        let r = load_with("[raise]\nwall_clock_s = 30000")
            .unwrap()
            .raise
            .unwrap();
        assert_eq!(r.first_ending(), Some(Ending::TimeLimit));
        for (top, field, said) in [
            (
                "[raise]\ncap_usd = 0.2",
                "raise.cap_usd",
                "above run.toml's budget.hard_cap_usd (0.37",
            ),
            ("[raise]\ncap_usd = 0.37", "raise.cap_usd", "found 0.37"),
            (
                "[raise]\nwall_clock_s = 60",
                "raise.wall_clock_s",
                "budget.wall_clock_limit_s (28800",
            ),
            ("[raise]\ncap_usd = nan", "raise.cap_usd", "found NaN"),
            (
                "[raise]\ncap_usd = 2.0\nwall_clock_s = 30000",
                "raise",
                "exactly one of",
            ),
            ("[raise]", "raise", "exactly one of"),
            ("[raise]\ncap = 2.0", "raise", "cap"),
            ("[raise]\ncap_usd = \"2\"", "raise.cap_usd", ""),
            (
                "[interrupt]\nat = \"during_model_call:1\"\n[raise]\ncap_usd = 2.0",
                "raise",
                "[interrupt]",
            ),
        ] {
            let e = load_with(top).expect_err(top);
            assert!(e.file.ends_with("case.toml"), "{top}: {e}");
            assert!(e.field.starts_with(field), "{top}: {e}");
            assert!(e.expected.contains(said), "{top}: {e}");
        }
    }

    #[test]
    fn the_base_case_loads() {
        load(&base("", "")).unwrap();
        let f = load(&base("known_flaky = { cause = \"fault\", since = \"2026-12-01\", note = \"seed 13 breaks recovery\" }", "")).unwrap();
        assert_eq!(
            f.known_flaky.map(|k| k.cause),
            Some(crate::known_flaky::Cause::Fault)
        );
        load(&base("latency_scale = 2.5\nworkspace_git = true", "spend_usd_min = 0.1\nspend_usd_max = 0.2\ncommits_count = 1\nfiles_absent = [\"a/b.txt\"]")).unwrap();
    }

    /// Every bad value names its field, for range and type errors alike.
    const BAD: [(&str, &str, &str); 28] = [
        (
            "known_flaky = { cause = \"flaky\", since = \"2026-12-01\", note = \"n\" }",
            "",
            "known_flaky.cause",
        ),
        (
            "known_flaky = { cause = \"timing\", since = \"2026-02-30\", note = \"n\" }",
            "",
            "known_flaky.since",
        ),
        (
            "known_flaky = { cause = \"timing\", since = \"2026-12-01\", note = \" \" }",
            "",
            "known_flaky.note",
        ),
        (
            "known_flaky = { cause = \"timing\", since = \"2026-12-01\" }",
            "",
            "known_flaky.note",
        ),
        ("latency_scale = -1.0", "", "latency_scale"),
        ("latency_scale = nan", "", "latency_scale"),
        ("latency_scale = inf", "", "latency_scale"),
        ("latency_scale = 1e300", "", "latency_scale"),
        ("latency_scale = \"fast\"", "", "latency_scale"),
        ("latency_cap_ms = -1", "", "latency_cap_ms"),
        ("latency_cap_ms = 0", "", "latency_cap_ms"),
        ("latency_cap_ms = 1.5", "", "latency_cap_ms"),
        ("cost_cap_usd = nan", "", "cost_cap_usd"),
        ("cost_cap_usd = -0.5", "", "cost_cap_usd"),
        ("cost_cap_usd = \"1\"", "", "cost_cap_usd"),
        ("workspace_git = \"yes\"", "", "workspace_git"),
        ("covers = [1]", "", "covers[0]"),
        ("covers = [\"\"]", "", "covers[0]"),
        ("cassette = \"/etc/passwd\"", "", "cassette"),
        ("[interrupt]\nat = 3", "", "interrupt.at"),
        ("", "spend_usd_min = -inf", "expect.spend_usd_min"),
        ("", "spend_usd_max = nan", "expect.spend_usd_max"),
        (
            "",
            "spend_usd_min = 0.5\nspend_usd_max = 0.1",
            "expect.spend_usd_min",
        ),
        ("", "verified = [1]", "expect.verified[0]"),
        ("", "verified_count = -2", "expect.verified_count"),
        (
            "",
            "files_absent = [\"../outside\"]",
            "expect.files_absent[0]",
        ),
        (
            "",
            "files_contain = { \"/etc/x\" = \"y\" }",
            "expect.files_contain./etc/x",
        ),
        ("", "commits_count = 2", "expect.commits_count"),
    ];

    #[test]
    fn every_bad_value_is_a_load_error_naming_the_file_and_the_field() {
        for (top, expect, field) in BAD {
            let e = load(&base(top, expect)).expect_err(&format!("{top} {expect}"));
            assert_eq!(e.field, field, "{top} {expect}: {e}");
            assert!(e.file.ends_with("c1/case.toml"), "{e}");
            assert!(!e.expected.is_empty(), "{e}");
        }
        // Missing and unknown fields name the field, under its table.
        let e = load(&base("", "").replace("title = \"t\"\n", "")).unwrap_err();
        assert_eq!(e.field, "title", "{e}");
        let e = load(&base("", "verfied_count = 1")).unwrap_err();
        assert_eq!(e.field, "expect.verfied_count", "{e}");
        // A title is one bounded line: every output repeats it.
        let t = |title: &str| base("", "").replace("title = \"t\"", &format!("title = {title:?}"));
        let e = load(&t(&"x".repeat(5_000_000))).unwrap_err();
        assert_eq!(e.field, "title", "{e}");
        assert!(e.expected.contains("at most 300 characters"), "{e}");
        let ctl = base("", "").replace("title = \"t\"", "title = \"ok \\u001B[2J\\u0007\"");
        let e = load(&ctl).unwrap_err();
        assert!(e.expected.contains("U+001B"), "{e}");
        assert!(load(&t(&"y".repeat(300))).is_ok());
    }

    /// The three mistakes serde finds in a case.toml (an unknown key, a wrong
    /// type, a missing key), each read as file, field path and what was
    /// expected, with the line.
    #[test]
    fn unknown_wrong_type_and_missing_fields_read_as_file_field_expected() {
        let said = |text: &str| {
            let e = load(text).unwrap_err();
            assert!(e.file.ends_with("c1/case.toml"), "{e}");
            (e.field, e.expected)
        };
        let (field, expected) = said(&base("", "verfied_count = 1"));
        assert_eq!(field, "expect.verfied_count");
        assert!(
            expected.starts_with("unknown field `verfied_count`, expected one of `ending`, `predicate_met`, `verified`,"),
            "{expected}"
        );
        assert!(
            expected.ends_with("`request_excludes` (line 8)"),
            "{expected}"
        );
        assert_eq!(
            said(&base("latency_cap_ms = \"slow\"", "")),
            (
                "latency_cap_ms".to_string(),
                "invalid type: string \"slow\", expected u64 (line 5)".to_string()
            )
        );
        assert_eq!(
            said(&base("[interrupt]\nat = [\"after_plan:1\"]", "")),
            (
                "interrupt.at".to_string(),
                "invalid type: sequence, expected a string (line 7)".to_string()
            )
        );
        let (field, expected) = said(&base("", "").replace("title = \"t\"\n", ""));
        assert_eq!(field, "title");
        assert!(
            expected.starts_with("missing field `title` (line "),
            "{expected}"
        );
        assert_eq!(
            said(&base("[interrupt]", "")),
            (
                "interrupt.at".to_string(),
                "missing field `at` (line 5)".to_string()
            )
        );
    }

    /// A scalar key of the base case and a replacement value for it.
    fn keyed_value() -> impl Strategy<Value = (usize, String)> {
        let values = prop_oneof![
            Just("-1".to_string()),
            Just("nan".to_string()),
            Just("-inf".to_string()),
            Just("1e309".to_string()),
            Just("18446744073709551616".to_string()),
            Just("-0.0".to_string()),
            Just("\"\"".to_string()),
            Just("\"../x\"".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            Just("true".to_string()),
            Just("[1, \"a\"]".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|x| format!("{x:?}")),
            "[a-z0-9 ._/-]{0,12}".prop_map(|s| format!("{s:?}")),
        ];
        (0..FUZZ_KEYS.len(), values)
    }

    /// (line prefix in the base text, the field path an error must name)
    const FUZZ_KEYS: [(&str, &str); 9] = [
        ("title = ", "title"),
        ("cost_cap_usd = ", "cost_cap_usd"),
        ("latency_cap_ms = ", "latency_cap_ms"),
        ("latency_scale = ", "latency_scale"),
        ("workspace_git = ", "workspace_git"),
        ("ending = ", "expect.ending"),
        ("spend_usd_min = ", "expect.spend_usd_min"),
        ("spend_usd_max = ", "expect.spend_usd_max"),
        ("verified_count = ", "expect.verified_count"),
    ];

    fn fuzz_base() -> String {
        base(
            "latency_scale = 1.0\nworkspace_git = false",
            "spend_usd_min = 0.0\nspend_usd_max = 5.0\nverified_count = 1",
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// One value replaced: never a panic; when it is refused, the error
        /// names the file and exactly that field.
        #[test]
        fn a_replaced_value_is_accepted_or_refused_by_its_own_field((k, v) in keyed_value()) {
            let (prefix, field) = FUZZ_KEYS[k];
            let text: String = fuzz_base()
                .lines()
                .map(|l| if l.starts_with(prefix) { format!("{prefix}{v}") } else { l.to_string() })
                .collect::<Vec<_>>()
                .join("\n");
            if let Err(e) = load(&text) {
                prop_assert!(e.file.ends_with("c1/case.toml"), "{}", e);
                // A value that breaks the TOML itself is the file's error.
                prop_assert!(e.field == field || e.field == "(file)", "{} = {}: {}", prefix, v, e);
            }
        }

        /// Any mutation of the bytes (cut, duplicate, flip): never a panic,
        /// and any error names the case's file and some field.
        #[test]
        fn a_mutated_case_toml_never_panics_and_errors_name_the_file(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..8)
        ) {
            let mut b = fuzz_base().into_bytes();
            for (at, op, byte) in edits {
                if b.is_empty() { break; }
                let i = at.index(b.len());
                match op {
                    0 => { b.remove(i); }
                    1 => b.insert(i, byte),
                    2 => b[i] = byte,
                    _ => { let tail: Vec<u8> = b[i..].to_vec(); b.extend_from_slice(&tail); }
                }
            }
            let (_t, dir) = case_dir("");
            std::fs::write(dir.join("case.toml"), &b).unwrap();
            if let Err(e) = load_case_file(&dir, "happy", &report_fields()) {
                prop_assert!(e.file.ends_with("c1/case.toml"), "{}", e);
                prop_assert!(!e.field.is_empty() && !e.expected.is_empty(), "{}", e);
            }
        }
    }
}
