//! `bench faults`: the faults of the machine the harness runs on, against the
//! real binary, as a gate. Not a mode of `bench chaos`: chaos kills a run and
//! checks the durable state through its oracle; these scenarios let the run
//! go on and check how it ENDS (ARCHITECTURE.md, "Every exit is one of seven endings").
//!
//! - `disk-full`: the state dir on a real tiny tmpfs, filled to every level a
//!   run passes through (0, 1, 2, ... free pages, up to the level where the
//!   whole run fits). Each run must end in an ending whose exit code is its
//!   report's; the report is in report.json or, when it cannot be written, on
//!   stderr as JSON (stdout never names a missing report.json); the alert is
//!   tried (a loopback webhook must receive it although the disk is full);
//!   the checkpoint on disk is never refused (the last good one is kept); no
//!   temp file is left. Then the filler is removed and the same command must
//!   write report.json (re-reporting a durable ending, or resuming). Needs
//!   root and mount(8); otherwise it says it skipped, and why.
//! - `slow-check`: a predicate, a task's verify and a `run_check` tool call
//!   that each sleep 30 s against a 3 s wall clock: TIME_LIMIT within
//!   `harness::run_loop::TIME_LIMIT_MARGIN_MS`, never GOAL_MET, the verify
//!   not judged. The margins are in the output.
//! - `clock-step`: the harness's time of day stepped a day ahead, then a
//!   day behind, mid-run (an LD_PRELOAD shim; faults/clock_step.rs): the run
//!   still meets its goal with its true elapsed time, and a run past a 3 s
//!   limit still ends TIME_LIMIT within the margin.
//!
//! `--self-test`: the scenarios run first as they are (the control: no
//! violation), then once per broken variant only a faults scenario can
//! catch (`harness::mutants::Mutant::faults_scenario`), against a
//! test-variants harness (`--harness`); each must show a violation.

mod clock_step;

use crate::exit::ExitStatus;
use clap::{Args, ValueEnum};
use harness::ending::{Alert, Ending};
use harness::invocation::{HarnessInvocation, ModelSource};
use harness::model::types::{Protocol, Usage};
use harness::report::{AlertLine, Report};
use harness::scenario::{Scenario, ScriptCall, ScriptRun, ScriptTool};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScenarioArg {
    DiskFull,
    SlowCheck,
    ClockStep,
    All,
}

#[derive(Args, Debug)]
pub struct FaultsArgs {
    #[arg(long, value_enum, default_value_t = ScenarioArg::All)]
    pub scenario: ScenarioArg,
    /// Output directory for faults.json and faults.md.
    #[arg(long, default_value = "target/bench/faults")]
    pub out: PathBuf,
    /// The harness binary (default: the one next to this bench binary).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    /// Then run each broken variant a faults scenario catches
    /// (`realtime-elapsed`) and fail unless every one shows a violation;
    /// `--harness` must be a test-variants build
    /// (target/test-variants/release/harness).
    #[arg(long)]
    pub self_test: bool,
}

/// The tmpfs the disk-full scenario mounts, in KiB.
const TMPFS_KIB: u64 = 512;
const PAGE_BYTES: u64 = 4096;
/// Fill levels tried, in free pages, before giving up on finding the level
/// where the whole run fits.
const FREE_PAGES_MAX: u64 = 64;
/// The slow-check scenarios' wall clock.
const SLOW_LIMIT_S: f64 = 3.0;
/// What "slow" means: far past the clock.
const SLOW_SCRIPT: &str = "exec sleep 30";
const MODEL: &str = "claude-opus-5";

/// One checked property of one run.
struct Finding {
    scenario: &'static str,
    label: String,
    ok: bool,
    detail: String,
    /// That the fault was made at all (the clock shim took), not a
    /// promise: a broken variant is never caught by one of these.
    precondition: bool,
}

struct Findings(Vec<Finding>);

impl Findings {
    fn check(&mut self, scenario: &'static str, label: &str, ok: bool, detail: impl Into<String>) {
        self.0.push(Finding {
            scenario,
            label: label.to_string(),
            ok,
            detail: detail.into(),
            precondition: false,
        });
    }

    /// A check that the scenario made its fault (a failure is a
    /// violation: the run proved nothing).
    fn precondition(&mut self, scenario: &'static str, label: &str, ok: bool, detail: String) {
        self.check(scenario, label, ok, detail);
        if let Some(last) = self.0.last_mut() {
            last.precondition = true;
        }
    }
}

/// Why a scenario could not be set up or written out; the text is what
/// the finding or the error line says.
#[derive(Debug, thiserror::Error)]
enum FaultsError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{}: {source}", .root.display())]
    Case {
        root: PathBuf,
        source: std::io::Error,
    },
    /// The script or its spec did not make a cassette.
    #[error("{0}")]
    Script(bench::scripted::ScriptError),
    /// The scripted calls did not make a cassette (the replay crate's reason).
    #[error("{0}")]
    Cassette(String),
    #[error("cannot run {}: {source}", .bin.display())]
    Spawn {
        bin: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Stat(#[from] nix::errno::Errno),
}

pub fn run(args: FaultsArgs) -> ExitCode {
    let harness = match crate::batch::harness_bin(args.harness.as_deref()) {
        Ok(h) => h,
        Err(e) => {
            errln!("bench faults: {e}");
            return ExitCode::from(ExitStatus::Unloadable);
        }
    };
    let Ran {
        f,
        notes,
        margins,
        clock,
    } = run_scenarios(&harness, args.scenario, None);
    let variants = if args.self_test {
        self_test(&harness, args.scenario)
    } else {
        vec![]
    };
    let failed: Vec<&Finding> = f.0.iter().filter(|x| !x.ok).collect();
    for x in &failed {
        errln!(
            "bench faults: VIOLATION {} / {}: {}",
            x.scenario,
            x.label,
            x.detail
        );
    }
    let json = json!({
        "passed": failed.is_empty(),
        "checks": f.0.len(),
        "violations": failed.iter().map(|x| json!({"scenario": x.scenario, "label": x.label, "detail": x.detail})).collect::<Vec<_>>(),
        "notes": notes,
        "time_limit_margin_ms": harness::run_loop::TIME_LIMIT_MARGIN_MS,
        "slow_check": margins,
        "clock_step": clock,
        "self_test": variants.iter().map(|v| json!({"variant": v.variant, "caught": v.caught, "violations": v.violations, "first": v.first})).collect::<Vec<_>>(),
    });
    let mut md = markdown(f.0.len(), &failed, &notes, &margins);
    md.push_str(&clock_markdown(&clock));
    md.push_str(&self_test_markdown(args.self_test, &variants));
    if let Err(e) = write_out(&args.out, &json, &md) {
        errln!("bench faults: cannot write {}: {e}", args.out.display());
        return ExitCode::from(ExitStatus::Unloadable);
    }
    outln!("{md}");
    if failed.is_empty() && variants.iter().all(|v| v.caught) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitStatus::Failed)
    }
}

/// What one pass over the chosen scenarios found.
struct Ran {
    f: Findings,
    notes: Vec<String>,
    margins: Vec<Value>,
    clock: Vec<Value>,
}

/// Run the chosen scenarios against `harness`, as broken `variant`
/// (HARNESS_CHAOS_BROKEN) when one is given.
fn run_scenarios(harness: &Path, scenario: ScenarioArg, variant: Option<&str>) -> Ran {
    let mut f = Findings(vec![]);
    let mut notes: Vec<String> = vec![];
    let mut margins: Vec<Value> = vec![];
    let mut clock: Vec<Value> = vec![];
    if matches!(scenario, ScenarioArg::DiskFull | ScenarioArg::All) {
        match disk_full(harness, &mut f) {
            Ok(levels) => notes.push(format!(
                "disk-full: {levels} fill level(s) of a {TMPFS_KIB} KiB tmpfs"
            )),
            Err(Skip(why)) => {
                errln!("bench faults: SKIPPED disk-full: {why}");
                notes.push(format!("disk-full: SKIPPED: {why}"));
            }
        }
    }
    if matches!(scenario, ScenarioArg::SlowCheck | ScenarioArg::All) {
        margins = slow_check(harness, &mut f);
    }
    if matches!(scenario, ScenarioArg::ClockStep | ScenarioArg::All) {
        match clock_step::clock_step(harness, &mut f, variant) {
            Ok(c) => clock = c,
            Err(Skip(why)) => {
                errln!("bench faults: SKIPPED clock-step: {why}");
                notes.push(format!("clock-step: SKIPPED: {why}"));
            }
        }
    }
    Ran {
        f,
        notes,
        margins,
        clock,
    }
}

/// Characters of a variant's first violation's detail kept (a detail may
/// hold a whole report).
const FIRST_DETAIL_CHARS: usize = 200;

/// One broken variant of `--self-test`: caught when its scenario found a
/// violation.
struct VariantRun {
    variant: &'static str,
    caught: bool,
    violations: usize,
    first: String,
}

/// Each broken variant whose faults scenario was chosen, run as that
/// variant (the disk-full and slow-check scenarios catch none: the suite
/// and chaos do).
fn self_test(harness: &Path, scenario: ScenarioArg) -> Vec<VariantRun> {
    let chosen = |sc: &str| match scenario {
        ScenarioArg::All => true,
        ScenarioArg::ClockStep => sc == clock_step::CLOCK_STEP,
        ScenarioArg::DiskFull | ScenarioArg::SlowCheck => false,
    };
    harness::mutants::Mutant::ALL
        .iter()
        .filter(|m| m.faults_scenario().is_some_and(chosen))
        .map(|m| {
            let ran = run_scenarios(harness, ScenarioArg::ClockStep, Some(m.as_str()));
            // Caught by a broken promise, in runs whose fault was made.
            let fault_made = ran.f.0.iter().all(|x| x.ok || !x.precondition);
            let bad: Vec<&Finding> = (ran.f.0.iter()).filter(|x| !x.ok && fault_made).collect();
            let first = bad.first().map_or(String::new(), |x| {
                let detail = harness::text::clip_chars(&x.detail, FIRST_DETAIL_CHARS);
                format!("{}: {detail}", x.label)
            });
            errln!(
                "bench faults: self-test {:<20} {} ({} violation(s)){}",
                m.as_str(),
                if bad.is_empty() { "MISSED" } else { "CAUGHT" },
                bad.len(),
                match (bad.is_empty(), fault_made) {
                    (false, _) => "",
                    (true, false) => " (the fault was not made: the run proved nothing)",
                    (true, true) => " (is --harness a test-variants build?)",
                }
            );
            VariantRun {
                variant: m.as_str(),
                caught: !bad.is_empty(),
                violations: bad.len(),
                first,
            }
        })
        .collect()
}

/// The clock-step runs: the elapsed time the harness reported beside the
/// time its process ran on the bench's clock.
fn clock_markdown(clock: &[Value]) -> String {
    if clock.is_empty() {
        return String::new();
    }
    let mut md =
        String::from("\n| clock step | elapsed_ms reported | process ran |\n| --- | --- | --- |\n");
    for c in clock {
        md.push_str(&format!(
            "| {} | {} ms | {} ms |\n",
            c["what"].as_str().unwrap_or(""),
            c["elapsed_ms"],
            c["process_ms"]
        ));
    }
    md
}

fn self_test_markdown(asked: bool, variants: &[VariantRun]) -> String {
    if !asked {
        return String::new();
    }
    let mut md = String::from("\n## self-test: broken variants\n\n| variant | caught | violations | first |\n| --- | --- | --- | --- |\n");
    for v in variants {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            v.variant,
            if v.caught { "yes" } else { "NO" },
            v.violations,
            v.first.replace('|', "\\|")
        ));
    }
    if variants.is_empty() {
        md.push_str("\nNo broken variant is caught by the chosen scenario.\n");
    }
    md
}

/// faults.md, also printed: the counts, the notes (what ran or was
/// skipped), the slow-check margins and every violation.
fn markdown(checks: usize, failed: &[&Finding], notes: &[String], margins: &[Value]) -> String {
    let mut md = format!(
        "# bench faults\n\n{} checks, {} violation(s).\n\n",
        checks,
        failed.len()
    );
    for n in notes {
        md.push_str(&format!("- {n}\n"));
    }
    if !margins.is_empty() {
        md.push_str(&format!(
            "\n| slow check | TIME_LIMIT decided at | over the {SLOW_LIMIT_S} s limit | process ran |\n| --- | --- | --- | --- |\n"
        ));
        for m in margins {
            md.push_str(&format!(
                "| {} | {} ms | +{} ms | {} ms |\n",
                m["what"].as_str().unwrap_or(""),
                m["elapsed_ms"],
                m["over_ms"],
                m["process_ms"]
            ));
        }
    }
    for x in failed {
        md.push_str(&format!(
            "\n- VIOLATION {} / {}: {}\n",
            x.scenario, x.label, x.detail
        ));
    }
    md
}

fn write_out(out: &Path, json: &Value, md: &str) -> Result<(), FaultsError> {
    std::fs::create_dir_all(out)?;
    let mut j = serde_json::to_vec_pretty(json)?;
    j.push(b'\n');
    std::fs::write(out.join("faults.json"), j)?;
    Ok(std::fs::write(out.join("faults.md"), md)?)
}

// --- a case written from a script ---

fn usage() -> Option<Usage> {
    Some(Usage {
        input_tokens: 3500,
        output_tokens: 300,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    })
}

fn said(key: &str, text: &str) -> ScriptCall {
    ScriptCall {
        key: key.into(),
        when_request_contains: None,
        plan: None,
        text: text.into(),
        tools: vec![],
        stop: None,
        usage: usage(),
        latency_ms: None,
        faults_before: vec![],
    }
}

fn tool(key: &str, name: &str, input: Value) -> ScriptCall {
    ScriptCall {
        tools: vec![ScriptTool {
            name: name.into(),
            input,
        }],
        ..said(key, "")
    }
}

const INDEX_PATH: &str = "db/0042_search_index.sql";

fn index_task(id: &str) -> Value {
    json!({"id": id, "description": "Add an index on search_events(created_at) as migration 0042",
           "verify": {"kind": "file_contains", "path": INDEX_PATH, "text": "CREATE INDEX"}})
}

fn write_index(key: &str) -> ScriptCall {
    tool(
        key,
        "write_file",
        json!({"path": INDEX_PATH, "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON search_events(created_at);\n"}),
    )
}

/// A case on disk: `<root>/workspace`, `<root>/run.toml`, `<root>/cassettes`.
struct CaseDir {
    root: PathBuf,
}

impl CaseDir {
    fn spec(&self) -> PathBuf {
        self.root.join("run.toml")
    }
    fn cassettes(&self) -> PathBuf {
        self.root.join("cassettes")
    }
    fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }
}

/// `predicate` and `extra` are TOML fragments of the spec.
fn write_case(
    root: &Path,
    name: &str,
    predicate: &str,
    wall_clock_limit_s: f64,
    extra: &str,
    calls: Vec<ScriptCall>,
) -> Result<CaseDir, FaultsError> {
    let io = |source: std::io::Error| FaultsError::Case {
        root: root.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(root.join("workspace")).map_err(io)?;
    std::fs::create_dir_all(root.join("cassettes")).map_err(io)?;
    let spec = format!(
        r#"goal = "Reduce p95 latency on /api/search to under 200ms."
workspace = "workspace"

[predicate]
{predicate}
timeout_s = 30

[budget]
hard_cap_usd = 28.0
wall_clock_limit_s = {wall_clock_limit_s}
task_budget_tokens = 74700

[model]
protocol = "anthropic"
base_url = "http://127.0.0.1:9"
api_key_env = "BENCH_FAULTS_NO_KEY"
executor = "{MODEL}"
judge = "{MODEL}"
max_tokens = 4096

[prices."{MODEL}"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0

{extra}
"#
    );
    std::fs::write(root.join("run.toml"), spec).map_err(io)?;
    let sc = Scenario {
        schema: None,
        case: name.into(),
        protocol: Protocol::Anthropic,
        model: MODEL.into(),
        notes: "bench faults".into(),
        when: None,
        indifferent_to: vec![],
        runs: vec![ScriptRun { calls }],
    };
    let conditions =
        bench::scripted::conditions_of_spec(&root.join("run.toml")).map_err(FaultsError::Script)?;
    let cas = sc
        .to_cassette("2026-12-01", "bench faults", &conditions)
        .map_err(FaultsError::Cassette)?;
    let text = serde_json::to_string_pretty(&cas)?;
    std::fs::write(root.join("cassettes").join(format!("{name}.json")), text).map_err(io)?;
    Ok(CaseDir {
        root: root.to_path_buf(),
    })
}

fn harness_run(harness: &Path, c: &CaseDir, state_dir: &Path) -> Result<Output, FaultsError> {
    harness_run_env(harness, c, state_dir, &[])
}

/// `harness_run` with more environment for the harness alone.
fn harness_run_env(
    harness: &Path,
    c: &CaseDir,
    state_dir: &Path,
    env: &[(&str, String)],
) -> Result<Output, FaultsError> {
    HarnessInvocation::run(
        c.spec(),
        state_dir,
        ModelSource::Replay {
            dir: c.cassettes(),
            latency_scale: 0.0,
        },
    )
    .command(harness)
    .envs(env.iter().map(|(k, v)| (k, v)))
    .stdin(Stdio::null())
    .output()
    .map_err(|source| FaultsError::Spawn {
        bin: harness.to_path_buf(),
        source,
    })
}

// --- disk-full ---

struct Skip(String);

/// A loopback webhook that answers 200 and keeps every JSON body it gets.
struct Webhook {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn webhook() -> Result<Webhook, FaultsError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/alert", listener.local_addr()?);
    let bodies = Arc::new(Mutex::new(vec![]));
    let keep = bodies.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            if let Some(body) = read_http_body(&mut conn) {
                if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    keep.lock().unwrap_or_else(|e| e.into_inner()).push(v);
                }
            }
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    Ok(Webhook { url, bodies })
}

/// The body of one HTTP/1.1 request with a content-length.
fn read_http_body(conn: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = vec![];
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(body) = bench::http_request::complete_body(&buf) {
            return Some(buf[body].to_vec());
        }
    }
}

struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount_tmpfs(dir: &Path) -> Result<Tmpfs, Skip> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if uid != "0" {
        return Err(Skip(format!(
            "a real full disk needs a tmpfs mount, which needs root (id -u is {uid:?})"
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Skip(format!("{}: {e}", dir.display())))?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={TMPFS_KIB}k"), "tmpfs"])
        .arg(dir)
        .output()
        .map_err(|e| Skip(format!("cannot run mount(8): {e}")))?;
    if !out.status.success() {
        return Err(Skip(format!(
            "mount -t tmpfs is not allowed here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(Tmpfs(dir.to_path_buf()))
}

fn avail_bytes(dir: &Path) -> Result<u64, FaultsError> {
    let st = nix::sys::statvfs::statvfs(dir)?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

/// What one run left behind.
struct Seen {
    code: i32,
    /// report.json's (None when it is there but not a report), or else the
    /// report on stderr.
    report: Option<Report>,
    report_written: bool,
    checkpoint: Result<Option<harness::state::RunState>, harness::checkpoint::Refusal>,
    stdout: String,
    stderr: String,
    temps: Vec<String>,
}

fn look(state_dir: &Path, out: &Output) -> Seen {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let on_disk: Option<Option<Report>> = std::fs::read(state_dir.join(harness::report::FILE_NAME))
        .ok()
        .map(|b| serde_json::from_slice(&b).ok());
    let report_written = on_disk.is_some();
    let report = on_disk.unwrap_or_else(|| {
        harness::report::json_on_stderr(&stderr).and_then(|l| serde_json::from_str(l).ok())
    });
    let checkpoint = if state_dir.join(harness::checkpoint::FILE_NAME).exists() {
        harness::checkpoint::load(state_dir, None)
    } else {
        Ok(None)
    };
    let temps = std::fs::read_dir(state_dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.contains(harness::durable::TEMP_MARKER))
                .collect()
        })
        .unwrap_or_default();
    Seen {
        code: out.status.code().unwrap_or(-1),
        report,
        report_written,
        checkpoint,
        stdout,
        stderr,
        temps,
    }
}

/// The guarantees of one run on a full disk, as findings.
fn check_ending(f: &mut Findings, label: &str, state_dir: &Path, s: &Seen, hook: Option<&[Value]>) {
    const SC: &str = DISK_FULL;
    let tail = |t: &str| {
        t.chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<String>()
    };
    let ctx = format!("exit {}; stderr: {}", s.code, tail(&s.stderr));
    f.check(
        SC,
        &format!("{label}: the exit code is the report's ending"),
        s.report.as_ref().is_some_and(|r| r.exit_code == s.code),
        ctx.clone(),
    );
    let named = format!(
        "report     {}",
        state_dir.join(harness::report::FILE_NAME).display()
    );
    if s.report_written {
        f.check(
            SC,
            &format!("{label}: stdout names report.json"),
            s.stdout.contains(&named),
            ctx.clone(),
        );
    } else {
        f.check(
            SC,
            &format!("{label}: a missing report is said plainly, never named"),
            !s.stdout.contains(&named)
                && s.stdout.contains("report     NOT WRITTEN")
                && s.stderr.contains("the report was NOT written"),
            ctx.clone(),
        );
    }
    f.check(
        SC,
        &format!("{label}: the last good checkpoint is kept (never refused)"),
        s.checkpoint.is_ok(),
        format!("{:?}", s.checkpoint.as_ref().err().map(|r| r.to_string())),
    );
    f.check(
        SC,
        &format!("{label}: no temp file left"),
        s.temps.is_empty(),
        format!("{:?}", s.temps),
    );
    if s.report.as_ref().is_none_or(|r| r.alert != Alert::None) {
        if let Some(posts) = hook {
            let ending = s.report.as_ref().map(|r| r.ending);
            f.check(
                SC,
                &format!("{label}: the webhook got the alert although the disk is full"),
                posts
                    .iter()
                    .filter_map(|p| serde_json::from_value::<AlertLine>(p.clone()).ok())
                    .any(|a| Some(a.ending) == ending),
                format!(
                    "alert_delivery: {:?}",
                    s.report.as_ref().map(|r| &r.alert_delivery)
                ),
            );
        }
    }
}

/// Three tasks, a post and a drift check: checkpoints, journal lines, an
/// outbox line and the report, all on the tmpfs.
fn disk_full_calls() -> Vec<ScriptCall> {
    vec![
        said(
            "plan/0",
            &json!({"tasks": [
                {"id": "t1", "description": "Write the rollout note", "verify": {"kind": "file_contains", "path": "notes/rollout.md", "text": "rollout"}},
                {"id": "t2", "description": "Post the rollout note", "verify": {"kind": "outbox_has", "key": "rollout-1"}},
                index_task("t3"),
            ]})
            .to_string(),
        ),
        tool("execute/t1/a0/0", "write_file", json!({"path": "notes/rollout.md", "content": "rollout plan\n"})),
        said("execute/t1/a0/1", "done"),
        tool("execute/t2/a0/0", "post_message", json!({"channel": "#eng", "text": "rollout today", "idempotency_key": "rollout-1"})),
        said("execute/t2/a0/1", "done"),
        said("judge/2", &json!({"reasoning": "on goal", "off_goal_task_ids": [], "drift_score": 0.05}).to_string()),
        write_index("execute/t3/a0/0"),
        said("execute/t3/a0/1", "done"),
    ]
}

fn disk_full(harness: &Path, f: &mut Findings) -> Result<u64, Skip> {
    let work = tempfile::tempdir().map_err(|e| Skip(format!("no temp dir: {e}")))?;
    let mnt = work.path().join("tiny");
    let _fs = mount_tmpfs(&mnt)?;
    let hook = webhook().map_err(|e| Skip(format!("no loopback webhook: {e}")))?;
    let d = DiskFull {
        harness,
        work: work.path(),
        mnt: &mnt,
        hook: &hook,
    };
    let (mut levels, mut mid_run, mut whole) = (0u64, 0u64, false);
    for free_pages in 0..=FREE_PAGES_MAX {
        levels += 1;
        let Some(first) = d.level(f, free_pages) else {
            break;
        };
        let had_checkpoint = matches!(first.checkpoint, Ok(Some(_)));
        if !first.report_written && had_checkpoint {
            mid_run += 1;
        }
        if first.report_written
            && first
                .report
                .as_ref()
                .is_some_and(|r| r.ending == Ending::GoalMet)
        {
            whole = true;
            break;
        }
    }
    f.check(
        DISK_FULL,
        "the tmpfs filled mid-run (a checkpoint landed, the report did not) at some level",
        mid_run >= 1,
        format!("{mid_run} of {levels} levels"),
    );
    f.check(
        DISK_FULL,
        "some level had room for the whole run",
        whole,
        format!("tried up to {FREE_PAGES_MAX} free pages"),
    );
    Ok(levels)
}

const DISK_FULL: &str = bench::guarantees::FAULT_DISK_FULL;

/// What every fill level shares: the binary, the scratch dir, the tmpfs
/// and the webhook that must receive the alerts.
struct DiskFull<'a> {
    harness: &'a Path,
    work: &'a Path,
    mnt: &'a Path,
    hook: &'a Webhook,
}

impl DiskFull<'_> {
    /// One fill level: the run on the full disk, then the same command with
    /// the space freed. None when the level could not be set up or run (a
    /// finding says why) and the scenario stops there.
    fn level(&self, f: &mut Findings, free_pages: u64) -> Option<Seen> {
        let label = format!("{free_pages} free page(s)");
        let case_root = self.work.join(format!("case-{free_pages}"));
        let c = match write_case(
            &case_root,
            "disk-full",
            &format!(r#"command = ["grep", "-q", "CREATE INDEX", "{INDEX_PATH}"]"#),
            600.0,
            &format!(
                "[drift]\nevery_tasks = 2\n\n[alerts]\nwebhook_url = {:?}",
                self.hook.url
            ),
            disk_full_calls(),
        ) {
            Ok(c) => c,
            Err(e) => {
                f.check(
                    DISK_FULL,
                    &label,
                    false,
                    format!("cannot write the case: {e}"),
                );
                return None;
            }
        };
        let state = self.mnt.join("state");
        let filler = self.mnt.join("filler");
        let _ = std::fs::remove_dir_all(&state);
        let _ = std::fs::remove_file(&filler);
        let fill = avail_bytes(self.mnt)
            .unwrap_or(0)
            .saturating_sub(free_pages * PAGE_BYTES);
        if let Err(e) = std::fs::write(&filler, vec![0u8; fill as usize]) {
            f.check(
                DISK_FULL,
                &label,
                false,
                format!("cannot fill the tmpfs: {e}"),
            );
            return None;
        }
        let posts_before = self.posts().len();
        let first = self.run(f, &label, &c, &state)?;
        let posts: Vec<Value> = self.posts()[posts_before..].to_vec();
        check_ending(f, &label, &state, &first, Some(&posts));
        // Space is free again: the same command writes the report.
        let _ = std::fs::remove_file(&filler);
        let again = self.run(f, &label, &c, &state)?;
        let rl = format!("{label}, re-run after freeing space");
        check_rerun(f, &rl, &state, &first, &again);
        Some(first)
    }

    fn posts(&self) -> std::sync::MutexGuard<'_, Vec<Value>> {
        self.hook.bodies.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self, f: &mut Findings, label: &str, c: &CaseDir, state: &Path) -> Option<Seen> {
        match harness_run(self.harness, c, state) {
            Ok(o) => Some(look(state, &o)),
            Err(e) => {
                f.check(DISK_FULL, label, false, e.to_string());
                None
            }
        }
    }
}

/// The re-run with space freed: the guarantees of any ending, a written
/// report, the durable ending reported again, and spend that never drops.
fn check_rerun(f: &mut Findings, rl: &str, state: &Path, first: &Seen, again: &Seen) {
    check_ending(f, rl, state, again, None);
    f.check(
        DISK_FULL,
        &format!("{rl}: report.json written"),
        again.report_written,
        again.stderr.clone(),
    );
    let durable_ending = first
        .checkpoint
        .as_ref()
        .ok()
        .and_then(|c| c.as_ref())
        .and_then(|c| c.finished.as_ref())
        .map(|fin| fin.ending);
    if let Some(e) = durable_ending {
        let reported = again.report.as_ref().map(|r| r.ending);
        f.check(
            DISK_FULL,
            &format!("{rl}: the durable ending is re-reported"),
            reported == Some(e),
            format!("first made {e} durable, the re-run reported {reported:?}"),
        );
    }
    let spend = |r: &Option<Report>| r.as_ref().map_or(0.0, |r| r.spend_usd);
    f.check(
        DISK_FULL,
        &format!("{rl}: spend never decreases"),
        spend(&again.report) + 1e-9 >= spend(&first.report),
        format!("{} then {}", spend(&first.report), spend(&again.report)),
    );
}

// --- slow-check ---

const SLOW_CHECK: &str = bench::guarantees::FAULT_SLOW_CHECK;

/// One slow-check scenario: a case whose check outlives the wall clock.
struct SlowScenario {
    what: &'static str,
    /// The spec's [predicate] command.
    predicate: String,
    /// More of the spec ([checks]).
    extra: String,
    calls: Vec<ScriptCall>,
    /// The in-flight task's expected parked reason prefix.
    parked: Option<&'static str>,
}

fn slow_check_toml(script: &str) -> String {
    format!("[checks.slow]\ncommand = [\"sh\", \"-c\", {script:?}]\ntimeout_s = 30\n")
}

/// The three places a check runs: the predicate, a task's verify and a
/// `run_check` tool call.
fn slow_scenarios() -> Vec<SlowScenario> {
    vec![
        SlowScenario {
            what: "predicate",
            predicate: format!("command = [\"sh\", \"-c\", {SLOW_SCRIPT:?}]"),
            extra: String::new(),
            calls: vec![],
            parked: None,
        },
        SlowScenario {
            what: "verify",
            predicate: "command = [\"false\"]".into(),
            // Fails fast at admission (nothing done yet), slow after the work.
            extra: slow_check_toml(&format!("test -f {INDEX_PATH} || exit 1; {SLOW_SCRIPT}")),
            calls: vec![
                said("plan/0", &json!({"tasks": [{"id": "t1", "description": "Add the index, then prove it with the slow suite", "verify": {"kind": "check", "name": "slow"}}]}).to_string()),
                write_index("execute/t1/a0/0"),
                said("execute/t1/a0/1", "done"),
            ],
            parked: Some("not judged"),
        },
        SlowScenario {
            what: "run_check tool",
            predicate: format!(r#"command = ["grep", "-q", "CREATE INDEX", "{INDEX_PATH}"]"#),
            extra: slow_check_toml(SLOW_SCRIPT),
            calls: vec![
                said("plan/0", &json!({"tasks": [index_task("t1")]}).to_string()),
                tool("execute/t1/a0/0", "run_check", json!({"name": "slow"})),
                write_index("execute/t1/a0/1"),
                said("execute/t1/a0/2", "done"),
            ],
            parked: Some("run ended (TIME_LIMIT)"),
        },
    ]
}

fn slow_check(harness: &Path, f: &mut Findings) -> Vec<Value> {
    let work = match tempfile::tempdir() {
        Ok(w) => w,
        Err(e) => {
            f.check(SLOW_CHECK, "temp dir", false, e.to_string());
            return vec![];
        }
    };
    slow_scenarios()
        .into_iter()
        .enumerate()
        .filter_map(|(i, sc)| slow_one(harness, &work.path().join(format!("slow-{i}")), sc, f))
        .collect()
}

/// Run one slow-check scenario and check its ending; its margins, or None
/// when it could not run (a finding says why).
fn slow_one(harness: &Path, root: &Path, sc: SlowScenario, f: &mut Findings) -> Option<Value> {
    let what = sc.what;
    let c = match write_case(
        root,
        "slow",
        &sc.predicate,
        SLOW_LIMIT_S,
        &sc.extra,
        sc.calls,
    ) {
        Ok(c) => c,
        Err(e) => {
            f.check(SLOW_CHECK, what, false, e.to_string());
            return None;
        }
    };
    let state = root.join("state");
    let t0 = Instant::now();
    let out = match harness_run(harness, &c, &state) {
        Ok(o) => o,
        Err(e) => {
            f.check(SLOW_CHECK, what, false, e.to_string());
            return None;
        }
    };
    let process_ms = t0.elapsed().as_millis() as u64;
    let s = look(&state, &out);
    let elapsed = s.report.as_ref().map_or(u64::MAX, |r| r.elapsed_ms);
    check_slow(f, what, &s, elapsed, process_ms);
    if let Some(prefix) = sc.parked {
        let reason = s
            .report
            .as_ref()
            .and_then(|r| r.parked.first())
            .map_or("", |p| p.reason.as_str());
        f.check(
            SLOW_CHECK,
            &format!("{what}: the task in flight is parked as {prefix:?}"),
            reason.starts_with(prefix),
            reason.to_string(),
        );
    }
    f.check(
        SLOW_CHECK,
        &format!("{what}: no half-done work after the limit"),
        what != "run_check tool" || !c.workspace().join(INDEX_PATH).exists(),
        "the write after the cut run_check must not happen",
    );
    let limit_ms = (SLOW_LIMIT_S * 1000.0) as u64;
    Some(json!({
        "what": what,
        "elapsed_ms": elapsed,
        "over_ms": elapsed.saturating_sub(limit_ms),
        "process_ms": process_ms,
    }))
}

/// TIME_LIMIT, decided and the process gone within the margin, the
/// predicate not met.
fn check_slow(f: &mut Findings, what: &str, s: &Seen, elapsed: u64, process_ms: u64) {
    let limit_ms = (SLOW_LIMIT_S * 1000.0) as u64;
    let margin = harness::run_loop::TIME_LIMIT_MARGIN_MS;
    let ctx = format!(
        "exit {}; report {}",
        s.code,
        serde_json::to_string(&s.report).unwrap_or_default()
    );
    f.check(
        SLOW_CHECK,
        &format!("{what}: TIME_LIMIT, exit 2"),
        s.code == 2
            && s.report
                .as_ref()
                .is_some_and(|r| r.ending == Ending::TimeLimit),
        ctx.clone(),
    );
    f.check(
        SLOW_CHECK,
        &format!("{what}: decided within {margin} ms of the limit"),
        elapsed <= limit_ms + margin,
        format!("at {elapsed} ms"),
    );
    f.check(
        SLOW_CHECK,
        &format!("{what}: the process ended within {margin} ms of the limit"),
        process_ms <= limit_ms + margin,
        format!("{process_ms} ms"),
    );
    f.check(
        SLOW_CHECK,
        &format!("{what}: the predicate is not met"),
        s.report.as_ref().is_some_and(|r| !r.predicate_met),
        ctx,
    );
}
