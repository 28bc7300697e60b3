//! DIR/chaos.json, DIR/chaos.md and the terminal table.

use crate::driver::{Calibration, CalibrationFailure, InvCount, Invariant, ModeReport};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub struct RunInfo<'a> {
    pub seed: u64,
    pub mode_label: &'a str,
    pub harness: String,
    pub broken: Option<String>,
    pub work_dir: String,
    pub jobs: usize,
    pub cases: Vec<String>,
    pub calibration: Vec<Calibration>,
    /// Seconds of kills, calibration and checks (not building the harness).
    pub wall_s: f64,
    /// Seconds spent building the harness first (0 with --no-build).
    pub build_s: f64,
}

fn add(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (k, v) in b {
        *a.entry(k.clone()).or_insert(0) += v;
    }
}

/// The shape at the top level (summed over modes), the per-mode
/// breakdown under "modes".
pub fn to_json(info: &RunInfo, modes: &[ModeReport]) -> Value {
    let mut by_phase = BTreeMap::new();
    let mut endings = BTreeMap::new();
    let mut inv: BTreeMap<String, InvCount> = Invariant::ALL
        .iter()
        .map(|n| (n.as_str().to_string(), InvCount::default()))
        .collect();
    let mut by_stratum = BTreeMap::new();
    let mut bit_rot = BTreeMap::new();
    let mut journal_damage = BTreeMap::new();
    for m in modes {
        add(&mut journal_damage, &m.journal_damage);
        add(&mut by_phase, &m.by_phase);
        add(&mut endings, &m.endings);
        add(&mut by_stratum, &m.by_stratum);
        add(&mut bit_rot, &m.bit_rot);
        for (k, c) in &m.invariants {
            let t = inv.entry(k.clone()).or_default();
            t.checked += c.checked;
            t.exercised += c.exercised;
            t.violated += c.violated;
        }
    }
    let violations: Vec<&crate::driver::Violation> =
        modes.iter().flat_map(|m| &m.violations).collect();
    json!({
        "kills": modes.iter().map(|m| m.kills).sum::<u64>(),
        "confirmed_kills": modes.iter().map(|m| m.confirmed_kills).sum::<u64>(),
        "violations": violations,
        "by_phase": by_phase,
        "by_stratum": by_stratum,
        "bit_rot": bit_rot,
        "journal_damage": journal_damage,
        "invariants": inv,
        "calibration_failures": [],
        "endings": endings,
        "seed": info.seed,
        "mode": info.mode_label,
        "signals_sent": modes.iter().map(|m| m.signals_sent).sum::<u64>(),
        "exited_before_signal": modes.iter().map(|m| m.exited_before_signal).sum::<u64>(),
        "power_cuts": modes.iter().map(|m| m.power_cuts).sum::<u64>(),
        "wall_s": info.wall_s,
        "build_s": info.build_s,
        "harness": info.harness,
        "broken_variant": info.broken,
        "work_dir": info.work_dir,
        "jobs": info.jobs,
        "cases": info.cases,
        "calibration": info.cases.iter().cloned().zip(info.calibration.iter().cloned()).collect::<BTreeMap<_, _>>(),
        "modes": modes.iter().map(|m| (m.mode.clone(), m)).collect::<BTreeMap<_, _>>(),
    })
}

fn table<H: AsRef<str>>(header: &[H], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.as_ref().chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(w[i] - c.chars().count());
            if i == 0 {
                s.push_str(&format!(" {c}{pad} |"));
            } else {
                s.push_str(&format!(" {pad}{c} |"));
            }
        }
        s.push('\n');
        s
    };
    let mut s = line(header.iter().map(|h| h.as_ref().to_string()).collect());
    s.push('|');
    for (i, x) in w.iter().enumerate() {
        if i == 0 {
            s.push_str(&format!(":{}|", "-".repeat(x + 1)));
        } else {
            s.push_str(&format!("{}:|", "-".repeat(x + 1)));
        }
    }
    s.push('\n');
    for r in rows {
        s.push_str(&line(r.clone()));
    }
    s
}

/// Invariant x mode table, then phases x mode, endings, and a verdict line.
pub fn summary_tables(modes: &[ModeReport]) -> String {
    let mut out = invariants_table(modes);
    out.push('\n');
    out.push_str(&kill_points_table(modes));
    out.push('\n');
    let strata = keys_of(modes, |m| &m.by_stratum);
    out.push_str(&count_table(
        "stratum (kill indexes)",
        &strata,
        modes,
        |m| &m.by_stratum,
    ));
    out.push('\n');
    let endings = keys_of(modes, |m| &m.endings);
    out.push_str(&count_table("final ending", &endings, modes, |m| {
        &m.endings
    }));
    out
}

/// A table's header: its first column, then one column per mode.
fn mode_header(first: &str, modes: &[ModeReport]) -> Vec<String> {
    let mut header = vec![first.to_string()];
    header.extend(modes.iter().map(|m| m.mode.clone()));
    header
}

/// The keys of one per-mode tally over all modes, sorted once (a key one
/// mode never saw still gets its row, with 0 there).
fn keys_of(modes: &[ModeReport], tally: fn(&ModeReport) -> &BTreeMap<String, u64>) -> Vec<String> {
    let mut keys: Vec<String> = modes
        .iter()
        .flat_map(|m| tally(m).keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// One row per key, one column per mode: that mode's tally of the key.
fn count_table(
    first: &str,
    keys: &[String],
    modes: &[ModeReport],
    tally: fn(&ModeReport) -> &BTreeMap<String, u64>,
) -> String {
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let mut r = vec![k.clone()];
            for m in modes {
                r.push(tally(m).get(k).copied().unwrap_or(0).to_string());
            }
            r
        })
        .collect();
    table(&mode_header(first, modes), &rows)
}

/// Each invariant's checked / exercised / violated counts, per mode.
fn invariants_table(modes: &[ModeReport]) -> String {
    let mut header = vec!["invariant".to_string()];
    for m in modes {
        header.push(format!("{} checked", m.mode));
        header.push(format!("{} exercised", m.mode));
        header.push(format!("{} violated", m.mode));
    }
    let rows: Vec<Vec<String>> = Invariant::ALL
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut r = vec![format!("{}. {}", i + 1, n.as_str())];
            for m in modes {
                let c = &m.invariants[n.as_str()];
                r.push(c.checked.to_string());
                r.push(c.exercised.to_string());
                r.push(c.violated.to_string());
            }
            r
        })
        .collect();
    table(&header, &rows)
}

/// Confirmed kills per phase, then the run's totals (the stop rows only
/// where some mode sent stop requests).
fn kill_points_table(modes: &[ModeReport]) -> String {
    let mut phases: Vec<String> = harness::chaos_hook::Phase::ALL
        .iter()
        .map(|p| p.as_str().to_string())
        .collect();
    phases.push("random_timing".into());
    let mut rows: Vec<Vec<String>> = phases
        .iter()
        .map(|p| {
            let mut r = vec![p.clone()];
            for m in modes {
                r.push(m.by_phase.get(p).copied().unwrap_or(0).to_string());
            }
            r
        })
        .collect();
    let total = |f: &dyn Fn(&ModeReport) -> u64, name: &str| {
        let mut r = vec![name.to_string()];
        for m in modes {
            r.push(f(m).to_string());
        }
        r
    };
    rows.push(total(&|m| m.kills, "kill indexes run"));
    rows.push(total(&|m| m.confirmed_kills, "confirmed kills (all)"));
    rows.push(total(
        &|m| m.kills_during_resume,
        "  of which during a resume",
    ));
    rows.push(total(
        &|m| m.exited_before_signal,
        "exited before the signal",
    ));
    if modes.iter().any(|m| m.stops > 0) {
        rows.push(total(&|m| m.stops, "SIGTERMs sent (stop requests)"));
        rows.push(total(
            &|m| m.stops_twice,
            "  then a second SIGTERM in the grace",
        ));
        rows.push(total(
            &|m| m.stops_suspended,
            "  suspended: exit 143, resumed after",
        ));
        rows.push(total(
            &|m| m.stops_ended,
            "  came while an ending was published: that ending",
        ));
    }
    rows.push(total(&|m| m.power_cuts, "power cuts simulated"));
    rows.push(total(
        &|m| m.io_faults.values().sum(),
        "I/O faults injected",
    ));
    rows.push(total(&|m| m.resumes, "resumes"));
    rows.push(total(
        &|m| m.bit_rot.values().sum(),
        "committed checkpoints rotted",
    ));
    rows.push(total(
        &|m| m.journal_damage.values().sum(),
        "ledger journals damaged",
    ));
    let header = mode_header("kill point (confirmed SIGKILLs or SIGTERMs)", modes);
    table(&header, &rows)
}

pub fn to_markdown(info: &RunInfo, modes: &[ModeReport]) -> String {
    let nviol: usize = modes.iter().map(|m| m.violations.len()).sum();
    let mut s = run_header(info, modes, nviol);
    s.push_str(&summary_tables(modes));
    for m in modes {
        s.push_str(&tally_line(
            m,
            "I/O faults injected (errno:class site)",
            &m.io_faults,
        ));
        s.push_str(&tally_line(
            m,
            "ledger journals damaged (kind)",
            &m.journal_damage,
        ));
        s.push_str(&tally_line(
            m,
            "committed checkpoints rotted (kind)",
            &m.bit_rot,
        ));
        s.push_str(&tally_line(
            m,
            "runs that ended refusing to resume",
            &m.refusals,
        ));
    }
    s.push_str(&cases_markdown(info));
    s.push_str(&invariants_markdown());
    if nviol > 0 {
        s.push_str("\n## Violations\n\n");
        for m in modes {
            for v in &m.violations {
                s.push_str(&format!("- **{}** kill {} ({}, {}, {}, process {}): {}\n  - replay: `{}`\n  - trial dir: `{}`\n", v.invariant, v.kill, v.mode.as_str(), v.case, v.stratum, v.process, v.detail, v.replay, v.trial_dir));
            }
        }
    }
    s
}

/// The title, the run's parameters, each mode's pace, and the verdict.
fn run_header(info: &RunInfo, modes: &[ModeReport], nviol: usize) -> String {
    let mut s = String::from("# bench chaos\n\n");
    s.push_str(&format!(
        "seed {} · mode {} · {} kill indexes · harness `{}`{} · {} jobs · wall {:.1} s (+{:.1} s building the harness)\n\n",
        info.seed,
        info.mode_label,
        modes.iter().map(|m| m.kills).sum::<u64>(),
        info.harness,
        info.broken.as_ref().map(|b| format!(" (broken variant `{b}`)")).unwrap_or_default(),
        info.jobs,
        info.wall_s,
        info.build_s
    ));
    for m in modes {
        s.push_str(&format!(
            "- {}: {} kill indexes in {:.1} s ({:.0} ms each)\n",
            m.mode,
            m.kills,
            m.wall_s,
            1000.0 * m.wall_s / m.kills.max(1) as f64
        ));
    }
    s.push_str(&format!(
        "\n**{}**\n\n",
        if nviol == 0 {
            "Zero violations.".to_string()
        } else {
            format!("{nviol} violation(s).")
        }
    ));
    s
}

/// One mode's tally of `what` on a line ("k xN, ..."), empty if none.
fn tally_line(m: &ModeReport, what: &str, tally: &BTreeMap<String, u64>) -> String {
    if tally.is_empty() {
        return String::new();
    }
    let items: Vec<String> = tally.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    format!("\n{} {what}: {}\n", m.mode, items.join(", "))
}

/// The "Cases" section: each case's clean run, from the calibration.
fn cases_markdown(info: &RunInfo) -> String {
    let mut s = String::from("\n## Cases\n\n");
    let mut rows = vec![];
    for (c, cal) in info.cases.iter().zip(&info.calibration) {
        rows.push(vec![
            c.clone(),
            cal.ending.clone(),
            cal.phases.values().sum::<u64>().to_string(),
            cal.writes.to_string(),
            cal.fsyncs.to_string(),
            format!("{:.1}", cal.wall_us as f64 / 1000.0),
        ]);
    }
    s.push_str(&table(
        &[
            "case",
            "clean ending",
            "phase points",
            "writes",
            "fsyncs",
            "clean run ms",
        ],
        &rows,
    ));
    s
}

/// The "What the invariants check" section.
fn invariants_markdown() -> String {
    let mut s = String::from("\n## What the invariants check\n\n");
    for (i, inv) in Invariant::ALL.iter().enumerate() {
        s.push_str(&format!(
            "{}. `{}`: {}\n",
            i + 1,
            inv.as_str(),
            inv.describe()
        ));
    }
    s
}

/// chaos.json when the clean calibration run failed: no kill was run.
pub fn calibration_failure_json(info: &RunInfo, failures: &[CalibrationFailure]) -> Value {
    json!({
        "kills": 0,
        "confirmed_kills": 0,
        "violations": [],
        "calibration_failures": failures,
        "seed": info.seed,
        "mode": info.mode_label,
        "harness": info.harness,
        "broken_variant": info.broken,
        "work_dir": info.work_dir,
        "cases": info.cases,
        "wall_s": info.wall_s,
        "build_s": info.build_s,
    })
}

/// chaos.md when the clean calibration run failed.
pub fn calibration_failure_markdown(info: &RunInfo, failures: &[CalibrationFailure]) -> String {
    let mut s = String::from("# bench chaos\n\n");
    s.push_str(&format!(
        "seed {} · mode {} · harness `{}`{}\n\n",
        info.seed,
        info.mode_label,
        info.harness,
        info.broken
            .as_ref()
            .map(|b| format!(" (broken variant `{b}`)"))
            .unwrap_or_default(),
    ));
    s.push_str(&format!(
        "**The harness failed {} clean calibration run(s): with no fault injected, it did not reach the case's expected ending. No kill was run.** This is a finding about the harness under test, not about the case.\n\n",
        failures.len()
    ));
    let rows: Vec<Vec<String>> = failures
        .iter()
        .map(|f| {
            vec![
                f.case.clone(),
                f.expected_ending.clone(),
                f.ending
                    .clone()
                    .unwrap_or_else(|| "(no report.json)".into()),
                f.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".into()),
                f.error_kind.clone().unwrap_or_default(),
                f.detail.clone().unwrap_or_default().replace('|', "\\|"),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "case",
            "expected ending",
            "clean run ended (report.json)",
            "exit",
            "error_kind",
            "detail",
        ],
        &rows,
    ));
    s.push('\n');
    for f in failures {
        s.push_str(&format!("- {}\n", f.describe()));
    }
    s
}
