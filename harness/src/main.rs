// `harness`: run a goal to exactly one of seven endings, or show where a run
// stands. Thin glue over the library; see ARCHITECTURE.md.
//
// Exit codes: 0 GOAL_MET; 2 BUDGET_EXHAUSTED, TIME_LIMIT; 3 DRIFT_DETECTED,
// NO_PROGRESS, QUEUE_EMPTY_GOAL_UNMET; 4 UNRECOVERABLE_ERROR; 64 the spec or
// the command line was rejected before anything ran, or another harness
// holds the state dir (nothing was written).
//
// Once the spec is accepted every exit is an ending (ARCHITECTURE.md, "Every
// exit is one of seven endings"): a panic inside the run is UNRECOVERABLE_ERROR with a
// report (`run_loop::run`); stdout and stderr are written through `console`,
// so a closed pipe never changes the exit code.

use clap::{Parser, Subcommand};
use harness::console;
use harness::ending::{Ending, EXIT_SPEC_REJECTED};
use harness::run_loop::RunEnd;
use harness::run_loop::{run, RunOptions};
use harness::spec::RunSpec;
use std::path::{Path, PathBuf};

#[cfg(feature = "replay")]
use harness::replay::start_for_run as start_replay;

/// A build without the `replay` feature links no replay server; `--replay`
/// stays a flag so the CLI is the same, and is rejected like a bad cassette.
#[cfg(not(feature = "replay"))]
async fn start_replay(
    dir: &Path,
    _case: Option<&str>,
    _run_index: u32,
    _protocol: harness::model::Protocol,
    _strict: bool,
    _latency_scale: f64,
    _faults: Option<&str>,
) -> Result<((), String), String> {
    Err(format!(
        "{}: this harness was built without the `replay` feature",
        dir.display()
    ))
}

#[derive(Parser)]
#[command(
    name = "harness",
    version,
    about = "Run an unattended agent inside a harness it cannot reach"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the spec's goal to one of the seven endings; resume if the state dir holds a checkpoint.
    Run {
        #[arg(long)]
        spec: PathBuf,
        #[arg(long)]
        state_dir: PathBuf,
        /// Serve model traffic from the cassettes in this directory (an embedded
        /// replay server on loopback; no network, no key).
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Which cassette case to replay when the directory holds several.
        #[arg(long)]
        case: Option<String>,
        /// Run index (picks the cassette variant run % variants).
        #[arg(long, default_value_t = 0)]
        run_index: u32,
        /// Also require the canonical request body hash to match the recording.
        #[arg(long)]
        strict: bool,
        /// Replayed latency = recorded latency x this (0 = as fast as possible).
        #[arg(long, default_value_t = 1.0)]
        latency_scale: f64,
        /// Seeded fault injection for the replay, e.g. "429=0.1,500=0.05,seed=7".
        #[arg(long)]
        faults: Option<String>,
        /// Use this endpoint base URL instead of the spec's (e.g. a replay
        /// server the bench runs: http://127.0.0.1:P/replay/<case>/<run>).
        #[arg(long, conflicts_with = "replay")]
        base_url: Option<String>,
        /// Lower the run's dollar cap for this command: the ledger's hard cap
        /// becomes min(the run's cap, this), where the run's cap is the
        /// spec's budget.hard_cap_usd, or the last --raise-cap-usd once the
        /// cap was raised. It only ever tightens, and never undoes a raise
        /// (the raise stays in ledger.jsonl for the next command).
        #[arg(long, value_name = "USD", conflicts_with = "raise_cap_usd")]
        max_usd: Option<f64>,
        /// After BUDGET_EXHAUSTED: raise the run's hard cap to USD and go on
        /// from its checkpoint (journaled in ledger.jsonl: when, old, new).
        #[arg(long, value_name = "USD", conflicts_with = "raise_wall_clock_s")]
        raise_cap_usd: Option<f64>,
        /// After TIME_LIMIT: raise the run's wall-clock limit to SECONDS (of
        /// run time, counted across resumes) and go on from its checkpoint.
        #[arg(long, value_name = "SECONDS")]
        raise_wall_clock_s: Option<f64>,
    },
    /// Print where a run stands, without disturbing it.
    Status {
        #[arg(long)]
        state_dir: PathBuf,
    },
    /// Render the run's morning page (report.html) again from its state
    /// dir, without disturbing it; a refused checkpoint gets a page that
    /// says why (and exits 4, as `status` does).
    Report {
        #[arg(long)]
        state_dir: PathBuf,
        /// Where to write the page (default: <state-dir>/report.html).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// `harness status`: the checkpoint is refused (a run on this state dir ends
/// UNRECOVERABLE_ERROR until a human looks at it).
const EXIT_STATUS_REFUSED: i32 = 4;

fn main() {
    // Not dumpable: a process of the same user cannot read this one's
    // /proc/<pid>/environ or mem (where the API key is), nor ptrace it.
    // (A confined check is kept out by Landlock as well, even as root.)
    let _ = nix::sys::prctl::set_dumpable(false);
    // This process runs one run's checks: they share one (empty) network
    // namespace instead of each making its own (harness::sandbox).
    harness::sandbox::set_net_namespaces(harness::sandbox::NetNamespaces::OnePerProcess);
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap's own exit code for usage errors is 2, which is
            // BUDGET_EXHAUSTED here: map it to the documented rejection code.
            let code = if e.use_stderr() {
                EXIT_SPEC_REJECTED
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    harness::panics::install_hook();
    // The last resort. A panic inside the run is an ending already
    // (`run_loop::run`); one that gets here happened before the state dir
    // was locked (nothing may be written there: it may be another harness's)
    // or while ending the run after a panic. Either way: one clear line and
    // the code of UNRECOVERABLE_ERROR, never Rust's 101.
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || dispatch(cli))) {
        Ok(code) => code,
        Err(payload) => {
            console::err_line(&format!(
                "harness: UNRECOVERABLE_ERROR (exit {}): the harness panicked outside the run: {}",
                Ending::UnrecoverableError.exit_code(),
                harness::panics::describe(payload.as_ref())
            ));
            Ending::UnrecoverableError.exit_code()
        }
    };
    let code = if harness::mutants::active(harness::mutants::Mutant::ExitZero) {
        0
    } else {
        code
    };
    std::process::exit(code);
}

fn dispatch(cli: Cli) -> i32 {
    match cli.cmd {
        Cmd::Status { state_dir } => status(&state_dir),
        Cmd::Report { state_dir, out } => report_page(&state_dir, out),
        Cmd::Run {
            spec,
            state_dir,
            replay,
            case,
            run_index,
            strict,
            latency_scale,
            faults,
            base_url,
            max_usd,
            raise_cap_usd,
            raise_wall_clock_s,
        } => {
            // Before any other thread starts: SIGTERM, SIGINT and SIGHUP are
            // stop requests from here on (harness::stop).
            if let Err(e) = harness::stop::install() {
                console::err_line(&format!("harness: {e}; nothing was run"));
                return Ending::UnrecoverableError.exit_code();
            }
            // One thread: the loop is sequential (one model call, one tool, one
            // check at a time), and a case-run per process under `bench run`
            // made the worker threads' start-up and hand-offs a real share of
            // its CPU. Nothing here uses block_in_place.
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    console::err_line(&format!(
                        "harness: UNRECOVERABLE_ERROR (exit {}): cannot start the async runtime: {e}; nothing was run or written",
                        Ending::UnrecoverableError.exit_code()
                    ));
                    return Ending::UnrecoverableError.exit_code();
                }
            };
            rt.block_on(run_cmd(RunArgs {
                spec_path: spec,
                state_dir,
                replay,
                case,
                run_index,
                strict,
                latency_scale,
                faults,
                base_url,
                max_usd,
                raise: raise_of(raise_cap_usd, raise_wall_clock_s),
            }))
        }
    }
}

/// `harness run`'s arguments, as clap read them (the raise already one).
struct RunArgs {
    spec_path: PathBuf,
    state_dir: PathBuf,
    replay: Option<PathBuf>,
    case: Option<String>,
    run_index: u32,
    strict: bool,
    latency_scale: f64,
    faults: Option<String>,
    base_url: Option<String>,
    max_usd: Option<f64>,
    raise: Option<harness::run_loop::Raise>,
}

async fn run_cmd(a: RunArgs) -> i32 {
    // Everything is validated before the state dir is touched.
    let Some(spec) = accepted_spec(&a) else {
        return EXIT_SPEC_REJECTED;
    };
    let mut _server = None;
    let mut base_url_override = a.base_url.clone();
    if let Some(dir) = &a.replay {
        match start_replay(
            dir,
            a.case.as_deref(),
            a.run_index,
            spec.model.protocol,
            a.strict,
            a.latency_scale,
            a.faults.as_deref(),
        )
        .await
        {
            Ok((server, url)) => {
                base_url_override = Some(url);
                _server = Some(server);
            }
            Err(e) => {
                console::err_line(&format!("harness: --replay rejected: {e}"));
                return EXIT_SPEC_REJECTED;
            }
        }
    }
    // One harness per workspace as well as per state dir: two runs of one
    // spec with different state dirs would both work the same files (and
    // both send the non-idempotent post). Held until this process exits.
    let _workspace_lock = match lock_workspace(&spec.workspace, &a.state_dir) {
        Ok(l) => l,
        Err(why) => {
            console::err_line(&format!("harness: not started: {why}; nothing was written"));
            return EXIT_SPEC_REJECTED;
        }
    };
    if let Some(sig) = harness::stop::requested() {
        console::err_line(&format!(
            "harness: stopped by {sig} before the run started: nothing was run and the state dir was not touched (exit {})",
            harness::stop::exit_code(sig)
        ));
        return harness::stop::exit_code(sig);
    }
    // From here on the spec is accepted: every exit is an ending, or a stop
    // request that suspends the run (harness::stop).
    let end = match run_locked(spec, &a, base_url_override).await {
        Ok(end) => end,
        Err(code) => return code,
    };
    print_end(&end, &a.state_dir);
    end.exit_code()
}

/// The spec as this command runs it (`--max-usd` applied), or None with the
/// reason printed: the spec, the state dir, this kernel's confinement or
/// `--base-url` refused. All of it is checked before the state dir is
/// touched, in this order (of two refusals, the same one is reported).
fn accepted_spec(a: &RunArgs) -> Option<RunSpec> {
    let reject = |line: String| {
        console::err_line(&line);
        None
    };
    let mut spec = match RunSpec::load(&a.spec_path) {
        Ok(s) => s,
        Err(e) => return reject(format!("harness: spec rejected: {e}")),
    };
    if let Some(x) = a.max_usd {
        if !(x.is_finite() && x > 0.0) {
            return reject(format!(
                "harness: --max-usd {x}: expected a positive number of US dollars"
            ));
        }
        spec.hard_cap_usd = spec.hard_cap_usd.min(x);
    }
    if let Err(e) = spec.check_state_dir(&a.state_dir) {
        return reject(format!("harness: spec rejected: {e}"));
    }
    if let Some(why) = confinement_refusal(&spec) {
        return reject(why);
    }
    if let Some(u) = &a.base_url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return reject(format!(
                "harness: --base-url: expected an http:// or https:// URL, found {u:?}"
            ));
        }
    }
    Some(spec)
}

/// Checks run code the model wrote: below the confinement the spec asks
/// for, nothing starts (harness::sandbox; docs/sandbox.md). The refusal
/// says how to get the level, or how to accept the weaker one.
fn confinement_refusal(spec: &RunSpec) -> Option<String> {
    let in_force = harness::sandbox::level();
    if in_force >= spec.sandbox_min_level {
        return None;
    }
    Some(format!(
        "harness: spec rejected: {}: [sandbox] min_level = {:?}, but this kernel confines checks only at level {:?} ({:?}); run on a kernel with Landlock ABI {}+, seccomp, network, PID and mount namespaces and a writable pids cgroup, or accept the weaker level with min_level = {:?}",
        spec.path.display(),
        spec.sandbox_min_level.as_str(),
        in_force.as_str(),
        harness::sandbox::probe(),
        harness::sandbox::LANDLOCK_MIN_ABI,
        in_force.as_str()
    ))
}

/// The run itself, under the state dir's lock; Err(exit code) when another
/// harness holds it (not an ending of this run: nothing is written).
async fn run_locked(
    spec: RunSpec,
    a: &RunArgs,
    base_url_override: Option<String>,
) -> Result<RunEnd, i32> {
    let state_dir = &a.state_dir;
    match lock_state_dir(state_dir) {
        Ok(_lock) => {
            // `_lock` is held until the ending is published.
            Ok(run(
                spec,
                state_dir,
                RunOptions {
                    base_url_override,
                    jitter_seed: a.run_index as u64,
                    raise: a.raise,
                    max_usd: a.max_usd,
                    command: command_line(a),
                    #[cfg(feature = "test-hooks")]
                    tamper_goal_before_lap: None,
                },
            )
            .await)
        }
        Err(LockError::Held { holder }) => {
            // Not an ending of this run, and not ours to report in: a
            // report.json here would be read as the running harness's
            // (by `bench`, by `status`, by its own re-report).
            console::err_line(&format!(
                "harness: not started: another harness{holder} is running on {} (run.lock is held); nothing was written; use `harness status --state-dir {}` to watch it",
                state_dir.display(),
                state_dir.display()
            ));
            Err(EXIT_SPEC_REJECTED)
        }
        Err(LockError::Unusable { kind, detail }) => Ok(harness::run_loop::end_before_start(
            &spec, state_dir, kind, detail,
        )
        .await
        .into()),
    }
}

/// This command as a person would retype it to resume the run: the binary
/// as typed when it was a bare name (found on PATH), else its absolute path;
/// every path absolute (the page may be read from another directory); the
/// flags that change what runs, never a `--raise-*` (a raise is journaled
/// and stays the run's: repeating it would be refused).
fn command_line(a: &RunArgs) -> Vec<String> {
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let typed = std::env::args().next().unwrap_or_else(|| "harness".into());
    let bin = if typed.contains('/') {
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or(typed)
    } else {
        typed
    };
    let mut v = vec![bin, "run".into(), "--spec".into(), abs(&a.spec_path)];
    v.extend(["--state-dir".into(), abs(&a.state_dir)]);
    if let Some(d) = &a.replay {
        v.extend(["--replay".into(), abs(d)]);
    }
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(x) = value {
            v.extend([name.to_string(), x]);
        }
    };
    flag("--case", a.case.clone());
    flag(
        "--run-index",
        (a.run_index != 0).then(|| a.run_index.to_string()),
    );
    flag(
        "--latency-scale",
        (a.latency_scale != 1.0).then(|| a.latency_scale.to_string()),
    );
    flag("--faults", a.faults.clone());
    flag("--base-url", a.base_url.clone());
    flag("--max-usd", a.max_usd.map(|x| x.to_string()));
    if a.strict {
        v.push("--strict".into());
    }
    v
}

/// What the run's end prints: the summary of an ending, the refusal of a
/// raise, or the summary of a stop (the run resumable).
fn print_end(end: &RunEnd, state_dir: &Path) {
    match end {
        RunEnd::Ended(outcome) => print_summary(outcome, state_dir),
        RunEnd::Refused(why) => {
            console::err_line(&format!("harness: not raised: {why}"));
        }
        RunEnd::Stopped(s) => {
            console::out(&s.report.human_summary());
            if s.report_written {
                console::out(&format!(
                    "report     {}\n",
                    state_dir.join(harness::report::FILE_NAME).display()
                ));
            }
        }
    }
}

enum LockError {
    /// Another harness holds run.lock; `holder` names its pid when known.
    Held { holder: String },
    /// The state dir cannot be made or its lock file cannot be opened.
    Unusable {
        kind: harness::ending::ErrorKind,
        detail: String,
    },
}

/// One harness per state dir: a second one would interleave checkpoints.
/// Creates the state dir, takes `run.lock` (flock, released when the file is
/// closed, so a killed harness never leaves it held) and writes our pid in it
/// for the message a second harness prints.
fn lock_state_dir(state_dir: &Path) -> Result<std::fs::File, LockError> {
    use std::io::Write;
    harness::durable::create_dir_all_durable(state_dir).map_err(|e| LockError::Unusable {
        kind: harness::ending::ErrorKind::StateDir,
        detail: format!("cannot create state dir {}: {e}", state_dir.display()),
    })?;
    let path = state_dir.join("run.lock");
    let mut lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| LockError::Unusable {
            kind: harness::ending::ErrorKind::StateDirLock,
            detail: format!("cannot open the lock {}: {e}", path.display()),
        })?;
    if lock.try_lock().is_err() {
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        let holder = match pid.trim().parse::<u32>() {
            Ok(p) => format!(" (pid {p})"),
            Err(_) => String::new(),
        };
        return Err(LockError::Held { holder });
    }
    // Best effort: the pid is only for the message above.
    let _ = lock.set_len(0);
    let _ = writeln!(lock, "{}", std::process::id());
    Ok(lock)
}

/// An advisory lock (flock) on the workspace directory itself: no file is
/// added to the workspace, and a killed harness never leaves it held.
/// A workspace that cannot be opened is not locked here: the run's own
/// start reports it, as the ending it is.
fn lock_workspace(workspace: &Path, state_dir: &Path) -> Result<Option<std::fs::File>, String> {
    let Ok(dir) = std::fs::File::open(workspace) else {
        return Ok(None);
    };
    if harness::mutants::active(harness::mutants::Mutant::NoWorkspaceLock) {
        return Ok(None);
    }
    match dir.try_lock() {
        Ok(()) => Ok(Some(dir)),
        Err(std::fs::TryLockError::WouldBlock) => Err(workspace_held(workspace, state_dir)),
        Err(std::fs::TryLockError::Error(e)) => Err(format!(
            "cannot lock the workspace {}: {e}",
            workspace.display()
        )),
    }
}

/// Why the workspace is taken, as it is: the holder runs on this very state
/// dir (its run.lock is held too: the same run, already going), or on
/// another one (a second run of the same workspace); its pid when known,
/// and what to do.
fn workspace_held(workspace: &Path, state_dir: &Path) -> String {
    let lock = state_dir.join("run.lock");
    let same_run = std::fs::File::open(&lock)
        .map(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
        .unwrap_or(false);
    if same_run {
        let holder = std::fs::read_to_string(&lock)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
            .map_or(String::new(), |p| format!(" (pid {p})"));
        return format!(
            "another harness{holder} is already running this run: it holds the state dir {} (its run.lock) and the workspace {}; watch it with `harness status --state-dir {}`, or stop it (SIGTERM) and run this command again to resume",
            state_dir.display(),
            workspace.display(),
            state_dir.display()
        );
    }
    let holder = flock_holder(workspace).map_or(String::new(), |p| format!(" (pid {p})"));
    format!(
        "another harness{holder} is running on the workspace {} with a state dir other than {}: two runs would work the same files; wait for it to end or stop it, or give this run a workspace of its own",
        workspace.display(),
        state_dir.display()
    )
}

/// The pid holding a flock on `path`, from /proc/locks (Linux: a line
/// `N: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<inode> 0 EOF`); None when
/// it cannot be told.
fn flock_holder(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let (major, minor) = (libc::major(m.dev()), libc::minor(m.dev()));
    let want = format!("{major:02x}:{minor:02x}:{}", m.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (kind, pid, dev) = (f.get(1)?, f.get(4)?, f.get(5)?);
        (*kind == "FLOCK" && *dev == want).then(|| pid.parse().ok())?
    })
}

/// The limit `harness run` was asked to raise (clap keeps the two apart).
fn raise_of(cap_usd: Option<f64>, wall_clock_s: Option<f64>) -> Option<harness::run_loop::Raise> {
    use harness::ledger::LimitKind;
    match (cap_usd, wall_clock_s) {
        (Some(to), _) => Some(harness::run_loop::Raise {
            limit: LimitKind::HardCapUsd,
            to,
        }),
        (None, Some(to)) => Some(harness::run_loop::Raise {
            limit: LimitKind::WallClockLimitS,
            to,
        }),
        (None, None) => None,
    }
}

/// The human summary on stdout. Only names report.json when it is there.
fn print_summary(outcome: &harness::run_loop::Outcome, state_dir: &Path) {
    let summary = outcome.report.human_summary();
    // The ending's line in its class's colour (a terminal only: console).
    let tint = match outcome.report.class {
        harness::ending::Class::Success => console::Tint::Ok,
        harness::ending::Class::Partial => console::Tint::Warn,
        harness::ending::Class::Failure => console::Tint::Bad,
    };
    let (first, rest) = summary.split_once('\n').unwrap_or((&summary, ""));
    let on = console::colour_on(console::Stream::Stdout);
    console::out(&format!("{}\n{rest}", console::paint(first, tint, on)));
    if outcome.report_written {
        console::out(&format!(
            "report     {}\n",
            state_dir.join(harness::report::FILE_NAME).display()
        ));
        let page = state_dir.join(harness::page::FILE_NAME);
        if page.is_file() {
            console::out(&format!("page       {}\n", page.display()));
        }
    } else {
        console::out("report     NOT WRITTEN (it is on stderr, with the reason)\n");
    }
}

/// A dollar figure as `status` prints it: never a negative zero (an empty
/// sum of f64 is -0.0, and `{:.4}` keeps the sign), never a rounding residue.
fn usd(x: f64) -> f64 {
    if x.abs() < 0.000_05 {
        0.0
    } else {
        x
    }
}

/// `harness report`: the page written atomically to `out` (default the
/// state dir's report.html); exit 0, EXIT_STATUS_REFUSED when the
/// checkpoint is refused (the page says so), EXIT_SPEC_REJECTED when there
/// is no state dir or the page cannot be written.
fn report_page(state_dir: &Path, out: Option<PathBuf>) -> i32 {
    let rendered = match harness::page::render_state_dir(state_dir) {
        Ok(r) => r,
        Err(e) => {
            console::err_line(&format!("harness report: {e}"));
            return EXIT_SPEC_REJECTED;
        }
    };
    let out = out.unwrap_or_else(|| state_dir.join(harness::page::FILE_NAME));
    if let Err(e) = harness::durable::atomic_write(&out, rendered.html.as_bytes()) {
        console::err_line(&format!(
            "harness report: cannot write {}: {e}",
            out.display()
        ));
        return EXIT_SPEC_REJECTED;
    }
    console::out(&format!(
        "page       {} ({} bytes)\n",
        out.display(),
        rendered.html.len()
    ));
    match rendered.refusal {
        Some(r) => {
            console::err_line(&format!("harness report: the checkpoint is refused: {r}"));
            EXIT_STATUS_REFUSED
        }
        None => 0,
    }
}

fn status(state_dir: &Path) -> i32 {
    if !state_dir.is_dir() {
        console::err_line(&format!(
            "harness status: {} is not a state dir",
            state_dir.display()
        ));
        return EXIT_SPEC_REJECTED;
    }
    let mut out = String::new();
    let code = status_text(state_dir, &mut out);
    console::out(&out);
    code
}

/// The status text, and the exit code: 0, or EXIT_STATUS_REFUSED when the
/// checkpoint is refused.
fn status_text(state_dir: &Path, out: &mut String) -> i32 {
    use std::fmt::Write;
    macro_rules! line {
        ($($t:tt)*) => {{ let _ = writeln!(out, $($t)*); }};
    }
    match harness::checkpoint::load(state_dir, None) {
        Ok(None) => line!("no checkpoint yet in {}", state_dir.display()),
        Ok(Some(s)) => {
            line!("run        {}", s.run_id);
            line!("step       {} (resumes: {})", s.step, s.resumes);
            match &s.finished {
                Some(f) => line!("ending     {} (exit {})", f.ending, f.ending.exit_code()),
                None => match harness::report::StoppedReport::load(state_dir) {
                    Ok(r) => line!(
                        "ending     none: STOPPED by {} (exit {}), resumable: re-run the same harness run",
                        r.stopped.signal,
                        r.stopped.exit_code
                    ),
                    Err(_) => line!("ending     none yet (running or interrupted)"),
                },
            }
            // By the resume rules: in-flight and torn reserves at their worst case.
            let journal = harness::ledger::Ledger::peek_journal(
                &state_dir.join("ledger.jsonl"),
                s.hard_cap_usd,
            );
            let (booked, in_flight) = journal.unwrap_or((s.ledger.spent_usd, 0.0));
            let (booked, in_flight) = (usd(booked), usd(in_flight));
            line!("spend      ${booked:.4} of ${:.2} cap ({:.0}%), ${in_flight:.4} reserved in flight", s.hard_cap_usd, 100.0 * booked / s.hard_cap_usd.max(1e-12));
            if let Some(t) = &s.in_progress {
                line!("in flight  {}: {}", t.id, t.description);
            }
            line!(
                "queue      {} task(s): {}",
                s.queue.len(),
                s.queue
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            line!(
                "done       {} verified, {} parked, {} pruned",
                s.completed.len(),
                s.parked.len(),
                s.pruned.len()
            );
            match s.drift_history.last() {
                Some(d) => line!(
                    "drift      {:.2} ({:?}) at step {}",
                    d.score,
                    d.band,
                    d.step
                ),
                None => line!("drift      not checked yet"),
            }
        }
        Err(r) => {
            line!("checkpoint REFUSED: {r}");
            line!(
                "(a run on this state dir ends as UNRECOVERABLE_ERROR until a human looks at it)"
            );
            return EXIT_STATUS_REFUSED;
        }
    }
    0
}
