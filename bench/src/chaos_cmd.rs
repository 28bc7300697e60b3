//! `bench chaos`: kill the harness at every step and phase (SIGKILL and a
//! simulated power cut), resume it, and check the eight invariants. The
//! driver lives in the `chaos` crate; this is its command line, progress
//! display and output files. See chaos/README.md.

use chaos::driver::{self, Config, Mode, ModeReport};
use chaos::report::{self, RunInfo};
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Sigkill,
    PowerLoss,
    Both,
}

#[derive(Args, Debug)]
pub struct ChaosArgs {
    /// Kill indexes per mode (each: one kill, then resumes, sometimes killed again, until the run ends).
    #[arg(long)]
    pub kills: Option<usize>,
    /// Seed for every kill plan and crash image (default: from the clock, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    pub mode: ModeArg,
    /// Only this case (a directory under chaos/cases).
    #[arg(long)]
    pub case: Option<String>,
    /// Run only kill index K (with the same --seed/--mode/--case it was found with).
    #[arg(long)]
    pub replay_kill: Option<usize>,
    /// Output directory for chaos.json and chaos.md.
    #[arg(long, default_value = "target/chaos")]
    pub out: PathBuf,
    /// The harness binary (default: build and use target/release/harness).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    /// Do not run cargo to build the harness first.
    #[arg(long)]
    pub no_build: bool,
    /// Run a deliberately broken harness variant (built with the harness's
    /// `chaos-broken` feature into target/chaos-broken, never the production build).
    #[arg(long, value_parser = ["no-dir-fsync", "no-file-fsync", "in-place-checkpoint"])]
    pub broken: Option<String>,
    /// Self-test the bench: each broken variant in both modes, differential
    /// against the production harness on the same kill plan; passes when
    /// power-loss mode catches all three and SIGKILL mode misses the fsync ones.
    /// (--harness then names the chaos-broken build.)
    #[arg(long, conflicts_with_all = ["broken", "replay_kill"])]
    pub self_test: bool,
    /// The production harness the self-test compares against (default: target/release/harness, built).
    #[arg(long)]
    pub baseline_harness: Option<PathBuf>,
    /// Parallel trials (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where trial directories go (default: /dev/shm when writable, else the temp dir).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep every trial directory (those with a violation are always kept).
    #[arg(long)]
    pub keep: bool,
    /// Seconds one harness process may run before it counts as hung.
    #[arg(long, default_value_t = 30)]
    pub timeout_s: u64,
    /// Case directory (default: chaos/cases in this repository).
    #[arg(long)]
    pub cases_dir: Option<PathBuf>,
}

const VARIANTS: [&str; 3] = ["no-dir-fsync", "no-file-fsync", "in-place-checkpoint"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Build (incrementally) and return the harness binary to drive.
fn harness_binary(
    explicit: Option<&PathBuf>,
    broken: bool,
    no_build: bool,
) -> Result<PathBuf, String> {
    if let Some(h) = explicit {
        return Ok(h.clone());
    }
    let root = repo_root();
    let (target_dir, features): (PathBuf, &[&str]) = if broken {
        // Its own target dir: the feature must never reach target/release/harness.
        (
            root.join("target/chaos-broken"),
            &["--features", "chaos-broken"],
        )
    } else {
        (root.join("target"), &[])
    };
    let bin = target_dir.join("release/harness");
    if !no_build {
        eprintln!(
            "bench chaos: cargo build --release -p harness {}--target-dir {}",
            features.iter().map(|f| format!("{f} ")).collect::<String>(),
            target_dir.display()
        );
        let st =
            std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "--release", "--quiet", "-p", "harness"])
                .args(features)
                .arg("--target-dir")
                .arg(&target_dir)
                .current_dir(&root)
                .status();
        match st {
            Ok(s) if s.success() => {}
            Ok(s) => return Err(format!("building the harness failed ({s})")),
            Err(e) if bin.is_file() => eprintln!(
                "bench chaos: cannot run cargo ({e}); using {}",
                bin.display()
            ),
            Err(e) => {
                return Err(format!(
                    "cannot run cargo to build the harness: {e}; pass --harness"
                ))
            }
        }
    }
    Ok(bin)
}

fn default_work_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() && tempfile_ok(shm) {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("bench-chaos-{}", std::process::id()))
}

fn tempfile_ok(d: &Path) -> bool {
    let p = d.join(format!(".bench-chaos-probe-{}", std::process::id()));
    let ok = std::fs::write(&p, b"x").is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}

fn modes_of(m: ModeArg) -> Vec<Mode> {
    match m {
        ModeArg::Sigkill => vec![Mode::Sigkill],
        ModeArg::PowerLoss => vec![Mode::PowerLoss],
        ModeArg::Both => vec![Mode::Sigkill, Mode::PowerLoss],
    }
}

fn mode_label(m: ModeArg) -> &'static str {
    match m {
        ModeArg::Sigkill => "sigkill",
        ModeArg::PowerLoss => "power-loss",
        ModeArg::Both => "both",
    }
}

type ProgressFn = Box<dyn Fn(usize, usize) + Sync + Send>;

/// A progress bar on a terminal, plain lines otherwise.
fn progress_for(label: String, total: usize) -> (ProgressFn, Option<indicatif::ProgressBar>) {
    if std::io::stderr().is_terminal() {
        let pb = indicatif::ProgressBar::new(total as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix:>16} [{bar:40}] {pos}/{len} kills {elapsed_precise} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb.set_prefix(label);
        let pb2 = pb.clone();
        (
            Box::new(move |done, _| pb2.set_position(done as u64)),
            Some(pb),
        )
    } else {
        let step = (total / 10).max(1);
        (
            Box::new(move |done, total| {
                if done % step == 0 || done == total {
                    eprintln!("bench chaos: {label}: {done}/{total} kills");
                }
            }),
            None,
        )
    }
}

fn run_modes(
    cfg: &Config,
    prep: &driver::Prepared,
    modes: &[Mode],
    prefix: &str,
) -> Vec<ModeReport> {
    let mut out = vec![];
    for &m in modes {
        let total = if cfg.replay_kill.is_some() {
            1
        } else {
            cfg.kills
        };
        let (cb, pb) = progress_for(format!("{prefix}{}", m.as_str()), total);
        let r = driver::run_mode(cfg, prep, m, &*cb);
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        eprintln!(
            "bench chaos: {prefix}{}: {} kills, {} confirmed SIGKILLs, {} power cuts, {} violation(s) in {:.1} s",
            m.as_str(),
            r.kills,
            r.confirmed_kills,
            r.power_cuts,
            r.violations.len(),
            r.wall_s
        );
        out.push(r);
    }
    out
}

fn write_out(out: &Path, name: &str, json: &serde_json::Value, md: &str) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut j = serde_json::to_vec_pretty(json).map_err(|e| e.to_string())?;
    j.push(b'\n');
    harness::durable::atomic_write(&out.join(format!("{name}.json")), &j)
        .map_err(|e| format!("{name}.json: {e}"))?;
    harness::durable::atomic_write(&out.join(format!("{name}.md")), md.as_bytes())
        .map_err(|e| format!("{name}.md: {e}"))?;
    Ok(())
}

pub fn run(args: ChaosArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench chaos: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: ChaosArgs) -> Result<ExitCode, String> {
    let t0 = Instant::now();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 % 1_000_000)
            .unwrap_or(1)
    });
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let work_dir = args.work_dir.clone().unwrap_or_else(default_work_dir);
    let mut replay_extra = vec![];
    if let Some(h) = &args.harness {
        replay_extra.push(format!("--harness {}", h.display()));
    }
    if let Some(c) = &args.cases_dir {
        replay_extra.push(format!("--cases-dir {}", c.display()));
    }
    let base = Config {
        kills: args.kills.unwrap_or(if args.self_test { 60 } else { 200 }),
        seed,
        modes: modes_of(args.mode),
        case: args.case.clone(),
        replay_kill: args.replay_kill,
        harness_bin: PathBuf::new(),
        broken: args.broken.clone(),
        cases_dir: args
            .cases_dir
            .clone()
            .unwrap_or_else(chaos::cases::default_dir),
        work_dir: work_dir.clone(),
        jobs,
        keep: args.keep,
        proc_timeout: Duration::from_secs(args.timeout_s.max(1)),
        max_procs: 12,
        replay_extra: replay_extra.join(" "),
    };
    eprintln!(
        "bench chaos: seed {seed} (replay any kill with --seed {seed}); trials in {}",
        work_dir.display()
    );
    if args.self_test {
        return self_test(&args, base, t0);
    }
    let cfg = Config {
        harness_bin: harness_binary(args.harness.as_ref(), args.broken.is_some(), args.no_build)?,
        ..base
    };
    let build_s = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let prep = driver::prepare(&cfg)?;
    let modes = run_modes(&cfg, &prep, &cfg.modes, "");
    let info = RunInfo {
        seed,
        mode_label: mode_label(args.mode),
        harness: cfg.harness_bin.display().to_string(),
        broken: cfg.broken.clone(),
        work_dir: work_dir.display().to_string(),
        jobs,
        cases: prep.cases.iter().map(|c| c.id.clone()).collect(),
        calibration: prep.calib.clone(),
        wall_s: t0.elapsed().as_secs_f64(),
        build_s,
    };
    let json = report::to_json(&info, &modes);
    let md = report::to_markdown(&info, &modes);
    write_out(&args.out, "chaos", &json, &md)?;
    println!("{}", report::summary_tables(&modes));
    let violations: Vec<&driver::Violation> = modes.iter().flat_map(|m| &m.violations).collect();
    for v in violations.iter().take(20) {
        println!(
            "VIOLATION {} kill {} ({}, {}, {}): {}\n  replay: {}",
            v.invariant,
            v.kill,
            v.mode.as_str(),
            v.case,
            v.stratum,
            v.detail,
            v.replay
        );
    }
    if violations.len() > 20 {
        println!(
            "... and {} more (see {})",
            violations.len() - 20,
            args.out.join("chaos.md").display()
        );
    }
    println!(
        "{} violation(s) over {} kill indexes in {:.1} s (+{:.1} s building the harness); report {}",
        violations.len(),
        modes.iter().map(|m| m.kills).sum::<u64>(),
        info.wall_s,
        build_s,
        args.out.join("chaos.md").display()
    );
    if violations.is_empty() && !args.keep {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// (kill, invariant) pairs: what the self-test compares.
fn pairs(m: &ModeReport) -> std::collections::BTreeSet<(usize, String)> {
    m.violations
        .iter()
        .map(|v| (v.kill, v.invariant.clone()))
        .collect()
}

fn self_test(args: &ChaosArgs, base: Config, t0: Instant) -> Result<ExitCode, String> {
    let broken_bin = harness_binary(args.harness.as_ref(), true, args.no_build)?;
    let base_bin = harness_binary(args.baseline_harness.as_ref(), false, args.no_build)?;
    let modes = vec![Mode::Sigkill, Mode::PowerLoss];
    // The production harness on the very same kill plan: violations it shows
    // too are the harness's own bugs, not something the variant broke.
    let bcfg = Config {
        harness_bin: base_bin.clone(),
        broken: None,
        modes: modes.clone(),
        ..base.clone()
    };
    let bprep = driver::prepare(&bcfg)?;
    let baseline = run_modes(&bcfg, &bprep, &modes, "baseline ");
    let mut rows = vec![];
    let mut results = serde_json::Map::new();
    let mut ok = true;
    for v in VARIANTS {
        let cfg = Config {
            harness_bin: broken_bin.clone(),
            broken: Some(v.to_string()),
            modes: modes.clone(),
            ..base.clone()
        };
        let prep = driver::prepare(&cfg)?;
        let reports = run_modes(&cfg, &prep, &modes, &format!("{v} "));
        let mut cells = vec![v.to_string()];
        let mut caught = [false; 2];
        let mut detail = serde_json::Map::new();
        for (i, (m, b)) in reports.iter().zip(&baseline).enumerate() {
            let base_pairs = pairs(b);
            let own: Vec<(usize, String)> = pairs(m)
                .into_iter()
                .filter(|p| !base_pairs.contains(p))
                .collect();
            let mut by_inv: std::collections::BTreeMap<String, usize> = Default::default();
            for (_, inv) in &own {
                *by_inv.entry(inv.clone()).or_insert(0) += 1;
            }
            caught[i] = !own.is_empty();
            let inv_s = by_inv
                .iter()
                .map(|(k, n)| format!("{k} ({n})"))
                .collect::<Vec<_>>()
                .join(", ");
            cells.push(if caught[i] {
                format!(
                    "CAUGHT on {} of {} kills: {inv_s}",
                    own.iter()
                        .map(|p| p.0)
                        .collect::<std::collections::BTreeSet<_>>()
                        .len(),
                    m.kills
                )
            } else {
                format!("missed: nothing beyond the baseline on {} kills", m.kills)
            });
            detail.insert(
                m.mode.clone(),
                serde_json::json!({
                    "kills": m.kills,
                    "violations": m.violations.len(),
                    "baseline_violations": b.violations.len(),
                    "attributable": own.len(),
                    "attributable_by_invariant": by_inv,
                    "caught": caught[i],
                }),
            );
        }
        let fsync_variant = v != "in-place-checkpoint";
        let as_expected = caught[1] && !(fsync_variant && caught[0]);
        ok &= as_expected;
        cells.push(if as_expected {
            "as expected".into()
        } else {
            "UNEXPECTED".into()
        });
        rows.push(cells);
        let info = RunInfo {
            seed: base.seed,
            mode_label: "both",
            harness: broken_bin.display().to_string(),
            broken: Some(v.into()),
            work_dir: base.work_dir.display().to_string(),
            jobs: base.jobs,
            cases: prep.cases.iter().map(|c| c.id.clone()).collect(),
            calibration: prep.calib.clone(),
            wall_s: t0.elapsed().as_secs_f64(),
            build_s: 0.0,
        };
        detail.insert("as_expected".into(), as_expected.into());
        detail.insert("report".into(), report::to_json(&info, &reports));
        results.insert(v.into(), serde_json::Value::Object(detail));
    }
    let mut md = String::from("# bench chaos --self-test\n\nThree deliberately broken harness variants (cargo feature `chaos-broken` of the harness crate, selected at run time by HARNESS_CHAOS_BROKEN, built into target/chaos-broken, never the production build). Each runs the same kill plan (seed, kill indexes) as the production harness; a variant is CAUGHT in a mode when it shows a violation (kill, invariant) that the production harness does not show on that plan. Power-loss mode must catch all three; SIGKILL mode alone must miss the two fsync variants, because a SIGKILL leaves the page cache intact.\n\n");
    md.push_str(&format!(
        "seed {} · {} kill indexes per variant and mode · baseline (production harness) violations: sigkill {}, power-loss {} · wall {:.1} s\n\n",
        base.seed,
        base.kills,
        baseline[0].violations.len(),
        baseline[1].violations.len(),
        t0.elapsed().as_secs_f64()
    ));
    let header = ["variant", "SIGKILL mode", "power-loss mode", "verdict"];
    let mut t = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        ":---|".repeat(header.len())
    );
    for r in &rows {
        t.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    md.push_str(&t);
    md.push_str(&format!(
        "\n**Self-test {}.**\n",
        if ok { "passed" } else { "FAILED" }
    ));
    let binfo = RunInfo {
        seed: base.seed,
        mode_label: "both",
        harness: base_bin.display().to_string(),
        broken: None,
        work_dir: base.work_dir.display().to_string(),
        jobs: base.jobs,
        cases: bprep.cases.iter().map(|c| c.id.clone()).collect(),
        calibration: bprep.calib.clone(),
        wall_s: t0.elapsed().as_secs_f64(),
        build_s: 0.0,
    };
    let json = serde_json::json!({"seed": base.seed, "kills_per_mode": base.kills, "passed": ok, "baseline": report::to_json(&binfo, &baseline), "variants": results, "wall_s": t0.elapsed().as_secs_f64()});
    write_out(&args.out, "self-test", &json, &md)?;
    println!(
        "{t}\nself-test {} in {:.1} s; report {}",
        if ok { "passed" } else { "FAILED" },
        t0.elapsed().as_secs_f64(),
        args.out.join("self-test.md").display()
    );
    if !args.keep {
        let _ = std::fs::remove_dir_all(&base.work_dir);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
