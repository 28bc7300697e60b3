//! `clock-step`: the harness's time of day is stepped mid-run (a day ahead,
//! then a day behind, as an NTP step or `date -s` would) while its
//! monotonic and boot clocks stay true. The wall clock counts elapsed time,
//! never dates (harness/src/clock.rs), so neither step may end a run early
//! nor keep the limit from ending one: the run meets its goal with an
//! `elapsed_ms` that is its real duration, and a run past a 3 s limit ends
//! TIME_LIMIT within the margin of it.
//!
//! Only the harness is stepped: an LD_PRELOAD shim (clock_step.c, built
//! here with cc) in its environment alone; the bench keeps the real clock
//! to measure it. The harness must be dynamically linked (a static binary
//! ignores LD_PRELOAD), and the shim's effect is itself checked: the
//! events the harness stamps with its time of day must carry the steps
//! (ahead in one run, behind in the other), or the scenario proved nothing
//! and says so.

use super::{harness_run_env, look, said, write_case, write_index, Findings, Seen, Skip};
use super::{INDEX_PATH, SLOW_SCRIPT};
use harness::ending::Ending;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub(super) const CLOCK_STEP: &str = bench::guarantees::FAULT_CLOCK_STEP;

/// The shim's source, compiled at run time (no crate, no build script).
const SHIM_C: &str = include_str!("clock_step.c");
/// How far each step moves the time of day, in seconds: a day, far past
/// any limit a run has, so a clock that reads dates cannot hide it.
const STEP_S: i64 = 86_400;
/// When the time of day jumps a day ahead, then a day behind, in ms after
/// the harness loaded: the first lands in the opening predicate, the
/// second before the run ends (its last events are stamped after it).
const AHEAD_AT_MS: u64 = 300;
const BEHIND_AT_MS: u64 = 1_500;
/// How long each check of the goal-met run sleeps, in ms: three of them
/// (the opening predicate, the task's verify, the closing predicate) make a
/// run of about 3 s that spans both steps.
const CHECK_SLEEP_MS: u64 = 1_000;
/// The goal-met run's wall clock, in s: far from reached by a true clock.
const ROOMY_LIMIT_S: f64 = 60.0;
/// The limited run's wall clock, in s, and its predicate outlives it.
const TIGHT_LIMIT_S: f64 = 3.0;
/// An event stamped this far from the bench's own clock, in ms, was
/// stamped by a stepped clock (half a step: no real run is that long).
const STEPPED_MS: u64 = (STEP_S as u64) * 1000 / 2;

/// Build the shim, then run both runs (as broken `variant`, when given).
/// The findings say what held; Skip when the shim cannot work here (no
/// cc, a static harness).
pub(super) fn clock_step(
    harness: &Path,
    f: &mut Findings,
    variant: Option<&str>,
) -> Result<Vec<Value>, Skip> {
    let work = tempfile::tempdir().map_err(|e| Skip(format!("no temp dir: {e}")))?;
    dynamically_linked(harness)?;
    let h = Harness {
        bin: harness,
        shim: build_shim(work.path())?,
        variant,
    };
    let mut out = vec![];
    out.extend(goal_met_run(&h, &work.path().join("ahead-behind"), f));
    out.extend(limited_run(&h, &work.path().join("behind-limit"), f));
    Ok(out)
}

/// The harness the scenario steps: its binary, the shim, and the broken
/// variant it runs as (`--self-test`), if any.
struct Harness<'a> {
    bin: &'a Path,
    shim: PathBuf,
    variant: Option<&'a str>,
}

/// A static harness never loads the shim: say so rather than pass.
fn dynamically_linked(harness: &Path) -> Result<(), Skip> {
    let out = std::process::Command::new("ldd")
        .arg(harness)
        .output()
        .map_err(|e| Skip(format!("cannot run ldd(1) on the harness: {e}")))?;
    let said = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !said.contains("libc.so") {
        return Err(Skip(format!(
            "{} is not dynamically linked to the C library (ldd: {}): LD_PRELOAD cannot step its clock",
            harness.display(),
            said.trim()
        )));
    }
    Ok(())
}

fn build_shim(dir: &Path) -> Result<PathBuf, Skip> {
    let src = dir.join("clock_step.c");
    let so = dir.join("clock_step.so");
    std::fs::write(&src, SHIM_C).map_err(|e| Skip(format!("{}: {e}", src.display())))?;
    let out = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .output()
        .map_err(|e| Skip(format!("cannot run cc to build the clock shim: {e}")))?;
    if !out.status.success() {
        return Err(Skip(format!(
            "cc could not build the clock shim: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(so)
}

/// One run of the harness with its time of day stepped by `steps`
/// (BENCH_CLOCK_STEPS), timed on the bench's own monotonic clock.
struct Stepped {
    seen: Seen,
    process_ms: u64,
    /// The bench's time of day when the run started, in unix ms.
    real_start_ms: u64,
    /// Every `unix_ms` of the run's events.jsonl.
    stamps: Vec<u64>,
}

fn run_stepped(
    h: &Harness,
    steps: &str,
    c: &super::CaseDir,
    state: &Path,
) -> Result<Stepped, super::FaultsError> {
    let real_start_ms = harness::clock::now_unix_ms();
    let t0 = Instant::now();
    let mut env = vec![
        ("LD_PRELOAD", h.shim.display().to_string()),
        ("BENCH_CLOCK_STEPS", steps.to_string()),
    ];
    env.extend(
        h.variant
            .map(|v| (harness::simfs::BROKEN_ENV, v.to_string())),
    );
    let out = harness_run_env(h.bin, c, state, &env)?;
    let process_ms = t0.elapsed().as_millis() as u64;
    let stamps = std::fs::read_to_string(state.join(harness::events::FILE_NAME))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["unix_ms"].as_u64())
        .collect();
    Ok(Stepped {
        seen: look(state, &out),
        process_ms,
        real_start_ms,
        stamps,
    })
}

impl Stepped {
    fn ahead(&self) -> bool {
        self.stamps
            .iter()
            .any(|&t| t > self.real_start_ms + STEPPED_MS)
    }
    fn behind(&self) -> bool {
        self.stamps
            .iter()
            .any(|&t| t + STEPPED_MS < self.real_start_ms)
    }
    fn elapsed_ms(&self) -> u64 {
        self.seen.report.as_ref().map_or(u64::MAX, |r| r.elapsed_ms)
    }
    fn ctx(&self) -> String {
        format!(
            "exit {}; report {}",
            self.seen.code,
            serde_json::to_string(&self.seen.report).unwrap_or_default()
        )
    }
}

fn sleepy(script: &str) -> String {
    format!("sleep {}; {script}", CHECK_SLEEP_MS as f64 / 1000.0)
}

/// A day ahead, then a day behind, during a run with a minute to spare:
/// GOAL_MET, and its elapsed time is the run's true duration.
fn goal_met_run(h: &Harness, root: &Path, f: &mut Findings) -> Option<Value> {
    let what = "ahead then behind, 60 s limit";
    let check = sleepy(&format!("grep -q 'CREATE INDEX' {INDEX_PATH}"));
    let c = write_case(
        root,
        "clock-step",
        &format!("command = [\"sh\", \"-c\", {check:?}]"),
        ROOMY_LIMIT_S,
        &format!("[checks.slow]\ncommand = [\"sh\", \"-c\", {:?}]\ntimeout_s = 30\n", sleepy(&format!("test -f {INDEX_PATH}"))),
        vec![
            said("plan/0", &json!({"tasks": [{"id": "t1", "description": "Add the index, then prove it with the slow suite", "verify": {"kind": "check", "name": "slow"}}]}).to_string()),
            write_index("execute/t1/a0/0"),
            said("execute/t1/a0/1", "done"),
        ],
    );
    let c = match c {
        Ok(c) => c,
        Err(e) => {
            f.check(CLOCK_STEP, what, false, e.to_string());
            return None;
        }
    };
    let steps = format!("{AHEAD_AT_MS}:{STEP_S},{BEHIND_AT_MS}:-{STEP_S}");
    let r = match run_stepped(h, &steps, &c, &root.join("state")) {
        Ok(r) => r,
        Err(e) => {
            f.check(CLOCK_STEP, what, false, e.to_string());
            return None;
        }
    };
    shim_took(f, what, &r, true);
    f.check(
        CLOCK_STEP,
        &format!("{what}: GOAL_MET, exit 0 (a step of the date ends no run)"),
        r.seen.code == 0
            && r.seen
                .report
                .as_ref()
                .is_some_and(|x| x.ending == Ending::GoalMet),
        r.ctx(),
    );
    let (elapsed, process) = (r.elapsed_ms(), r.process_ms);
    f.check(
        CLOCK_STEP,
        &format!("{what}: elapsed_ms is the run's true duration (at least the {} ms its checks slept, at most the {process} ms its process ran)", 3 * CHECK_SLEEP_MS),
        (3 * CHECK_SLEEP_MS..=process).contains(&elapsed),
        format!("elapsed_ms {elapsed}"),
    );
    Some(json!({"what": what, "elapsed_ms": elapsed, "process_ms": process}))
}

/// A day behind during a run whose predicate outlives a 3 s limit: the
/// limit still ends it TIME_LIMIT within the margin, never later.
fn limited_run(h: &Harness, root: &Path, f: &mut Findings) -> Option<Value> {
    let what = "behind, 3 s limit";
    let c = match write_case(
        root,
        "clock-step",
        &format!("command = [\"sh\", \"-c\", {SLOW_SCRIPT:?}]"),
        TIGHT_LIMIT_S,
        "",
        vec![],
    ) {
        Ok(c) => c,
        Err(e) => {
            f.check(CLOCK_STEP, what, false, e.to_string());
            return None;
        }
    };
    let steps = format!("{AHEAD_AT_MS}:-{STEP_S}");
    let r = match run_stepped(h, &steps, &c, &root.join("state")) {
        Ok(r) => r,
        Err(e) => {
            f.check(CLOCK_STEP, what, false, e.to_string());
            return None;
        }
    };
    shim_took(f, what, &r, false);
    let limit_ms = (TIGHT_LIMIT_S * 1000.0) as u64;
    let margin = harness::run_loop::TIME_LIMIT_MARGIN_MS;
    let (elapsed, process) = (r.elapsed_ms(), r.process_ms);
    f.check(
        CLOCK_STEP,
        &format!("{what}: TIME_LIMIT, exit 2"),
        r.seen.code == 2
            && r.seen
                .report
                .as_ref()
                .is_some_and(|x| x.ending == Ending::TimeLimit),
        r.ctx(),
    );
    f.check(
        CLOCK_STEP,
        &format!("{what}: decided at the limit, within {margin} ms of it"),
        (limit_ms..=limit_ms + margin).contains(&elapsed),
        format!("elapsed_ms {elapsed}"),
    );
    f.check(
        CLOCK_STEP,
        &format!("{what}: the process ended within {margin} ms of the limit"),
        process <= limit_ms + margin,
        format!("{process} ms"),
    );
    Some(json!({"what": what, "elapsed_ms": elapsed, "process_ms": process}))
}

/// The shim must have reached the harness: its events carry the stepped
/// date (else the scenario stepped nothing and proves nothing). The
/// goal-met run is checked for the step ahead (a broken clock ends it
/// before the step back), the limited run for the step behind.
fn shim_took(f: &mut Findings, what: &str, r: &Stepped, ahead: bool) {
    let (seen, which) = match ahead {
        true => (r.ahead(), "a day ahead"),
        false => (r.behind(), "a day behind"),
    };
    f.precondition(
        CLOCK_STEP,
        &format!(
            "{what}: the harness's time of day was stepped {which} (its events' unix_ms carry it)"
        ),
        seen,
        format!(
            "{} events; a day ahead seen: {}, a day behind seen: {} (real start {} ms)",
            r.stamps.len(),
            r.ahead(),
            r.behind(),
            r.real_start_ms
        ),
    );
}
