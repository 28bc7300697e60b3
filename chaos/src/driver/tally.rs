//! One mode's results: the trials of its kill indexes summed into a
//! [`ModeReport`] (counts per phase, stratum, ending and invariant, and every
//! violation with the command that replays it).

use super::config::{Config, Mode};
use super::trial::TrialOutcome;
use crate::invariant::Invariant;
use crate::proc::Target;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize)]
pub struct InvCount {
    pub checked: u64,
    /// Of `checked`: kills on which the invariant was not vacuous.
    pub exercised: u64,
    pub violated: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub kill: usize,
    pub mode: Mode,
    pub case: String,
    pub invariant: String,
    pub process: usize,
    pub stratum: String,
    pub detail: String,
    pub replay: String,
    pub trial_dir: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ModeReport {
    pub mode: String,
    pub kills: u64,
    pub signals_sent: u64,
    pub confirmed_kills: u64,
    pub exited_before_signal: u64,
    pub power_cuts: u64,
    pub resumes: u64,
    pub kills_during_resume: u64,
    /// Sigterm mode: SIGTERMs sent, those followed by a second one, those
    /// the harness took as a stop (exit 128 + signal) and those that came
    /// while it was publishing an ending (which it finished).
    pub stops: u64,
    pub stops_twice: u64,
    pub stops_suspended: u64,
    pub stops_ended: u64,
    pub by_phase: BTreeMap<String, u64>,
    /// Kill indexes per stratum (label).
    pub by_stratum: BTreeMap<String, u64>,
    pub io_faults: BTreeMap<String, u64>,
    /// Committed checkpoints rotted by the bit-rot stratum, per kind.
    pub bit_rot: BTreeMap<String, u64>,
    /// Ledger journals damaged by the journal-damage stratum, per kind.
    pub journal_damage: BTreeMap<String, u64>,
    pub invariants: BTreeMap<String, InvCount>,
    pub endings: BTreeMap<String, u64>,
    pub refusals: BTreeMap<String, u64>,
    pub violations: Vec<Violation>,
    pub wall_s: f64,
}

impl ModeReport {
    /// The report of `trials` (in kill order).
    pub(super) fn tally(cfg: &Config, mode: Mode, trials: &[TrialOutcome]) -> ModeReport {
        let mut r = ModeReport {
            mode: mode.as_str().into(),
            ..Default::default()
        };
        for inv in Invariant::ALL {
            r.invariants
                .insert(inv.as_str().into(), InvCount::default());
        }
        for t in trials {
            r.add(cfg, mode, t);
        }
        r
    }

    fn add(&mut self, cfg: &Config, mode: Mode, t: &TrialOutcome) {
        let r = self;
        r.kills += 1;
        r.signals_sent += t.signals_sent;
        r.confirmed_kills += t.confirmed.len() as u64;
        r.exited_before_signal += t.exited_before_signal;
        r.power_cuts += t.power_cuts;
        r.resumes += t.resumes;
        r.kills_during_resume += t.kills_during_resume;
        for (twice, code) in &t.stops {
            r.stops += 1;
            r.stops_twice += *twice as u64;
            if crate::proc::is_stop_code(*code) {
                r.stops_suspended += 1;
            } else {
                r.stops_ended += 1;
            }
        }
        for ph in &t.confirmed {
            *r.by_phase.entry(ph.clone()).or_insert(0) += 1;
        }
        if let Some(f) = &t.io_fault {
            *r.io_faults.entry(f.clone()).or_insert(0) += 1;
        }
        if let Some((d, _)) = &t.journal_damage {
            *r.journal_damage.entry(d.as_str().to_string()).or_insert(0) += 1;
        }
        if let Some(b) = &t.bit_rot {
            *r.bit_rot.entry(b.clone()).or_insert(0) += 1;
        }
        *r.by_stratum.entry(t.plan.stratum.label()).or_insert(0) += 1;
        *r.endings
            .entry(t.ending.clone().unwrap_or_else(|| "NONE".into()))
            .or_insert(0) += 1;
        if let Some(k) = &t.refusal {
            *r.refusals.entry(k.clone()).or_insert(0) += 1;
        }
        for inv in Invariant::ALL {
            let c = r.invariants.get_mut(inv.as_str()).expect("all inserted");
            c.checked += 1;
            c.exercised += t.exercised.contains(&inv) as u64;
            c.violated += t.violations.iter().any(|(v, ..)| *v == inv) as u64;
        }
        for (inv, process, detail) in &t.violations {
            r.violations.push(Violation {
                kill: t.plan.k,
                mode,
                case: t.case_id.clone(),
                invariant: inv.as_str().into(),
                process: *process,
                stratum: match (t.plan.raise_cap_usd, &t.plan.resume_target) {
                    (Some(usd), Some(at)) => format!(
                        "{} (run to BUDGET_EXHAUSTED, then --raise-cap-usd {usd} killed at {})",
                        t.plan.stratum.label(),
                        describe_target(at)
                    ),
                    _ => format!(
                        "{} ({})",
                        t.plan.stratum.label(),
                        describe_target(&t.plan.first)
                    ),
                },
                detail: detail.clone(),
                replay: replay_command(cfg, mode, t.plan.k),
                trial_dir: t.dir.display().to_string(),
            });
        }
    }
}

/// The exact command that replays kill `k` of `mode`.
pub fn replay_command(cfg: &Config, mode: Mode, k: usize) -> String {
    let mut s = format!(
        "bench chaos --seed {} --mode {} --replay-kill {k}",
        cfg.seed,
        mode.as_str()
    );
    if let Some(c) = &cfg.case {
        s.push_str(&format!(" --case {c}"));
    }
    // (--stratum only selects which kill indexes run; kill k is the same plan
    // with or without it.)
    if let Some(b) = &cfg.broken {
        s.push_str(&format!(" --broken {b}"));
    }
    if !cfg.replay_extra.is_empty() {
        s.push(' ');
        s.push_str(&cfg.replay_extra);
    }
    s
}

pub fn describe_target(t: &Target) -> String {
    match t {
        Target::None => "run to the end".into(),
        Target::Pause { phase, n } => format!("{phase}:{n}"),
        Target::Timer { delay_us } => format!("after {:.1} ms", *delay_us as f64 / 1000.0),
        Target::Fault { spec } => spec.clone(),
    }
}
