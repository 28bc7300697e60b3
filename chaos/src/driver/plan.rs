//! Kill plans: every kill index gets a stratum from a seed-shuffled cycle
//! and a target (a phase occurrence, a window, a timer, an I/O fault), as a
//! pure function of (seed, mode, kill index, the cases' calibration), so
//! `--replay-kill k` reruns exactly that kill.

use super::calibrate::Calibration;
use super::config::Mode;
use crate::bitrot::RotKind;
use crate::cases::Case;
use crate::proc::Target;
use crate::windows::{self, Window};
use harness::chaos_hook::Phase;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone, PartialEq)]
pub enum Stratum {
    Phase(Phase),
    Window(Window),
    RandomTiming,
    IoError,
    BitRot,
    JournalDamage,
}

/// How the journal-damage stratum damages `ledger.jsonl` before a resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalDamage {
    /// The last line loses a random suffix, newline included (a power cut
    /// mid-append, or a tail the disk lost): a torn tail the harness must
    /// book conservatively, never drop.
    TornLastLine,
    /// A line of garbage before the last line (a disk that returned the
    /// wrong block): the resume must be refused, with the journal's money.
    GarbageLine,
}

impl JournalDamage {
    pub fn as_str(self) -> &'static str {
        match self {
            JournalDamage::TornLastLine => "torn_last_line",
            JournalDamage::GarbageLine => "garbage_line",
        }
    }
}

impl Stratum {
    pub fn label(&self) -> String {
        match self {
            Stratum::Phase(p) => p.as_str().to_string(),
            Stratum::Window(w) => w.as_str().to_string(),
            Stratum::RandomTiming => "random_timing".into(),
            Stratum::IoError => "io_error".into(),
            Stratum::BitRot => "bit_rot".into(),
            Stratum::JournalDamage => "journal_damage".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct TrialPlan {
    pub k: usize,
    pub mode: Mode,
    pub case: usize,
    pub stratum: Stratum,
    pub first: Target,
    /// For the during_resume_verify stratum: the resume is paused there.
    pub resume_target: Option<Target>,
    /// For the bit-rot stratum: the committed checkpoint on disk at the
    /// first resume that has one is rotted this way before it starts.
    pub rot: Option<RotKind>,
    /// For the journal-damage stratum: the ledger journal is damaged this
    /// way before the first resume whose journal has a complete line.
    pub journal_damage: Option<JournalDamage>,
    /// Sigterm mode: the first process gets a second SIGTERM during its grace.
    pub stop_twice: bool,
    /// The raise stratum: the first process runs to BUDGET_EXHAUSTED, the
    /// resumes raise the cap to this (`--raise-cap-usd`, the operator's
    /// same command again), and the first of them is killed right after
    /// the raise is journaled (`resume_target`).
    pub raise_cap_usd: Option<f64>,
    /// For the io_error stratum: where its fault is aimed ([`IoSite`]).
    pub io_site: Option<IoSite>,
    pub rng_seed: u64,
}

/// Where an io_error trial's fault is aimed. The stratum's trials take the
/// two in turn (even rounds anywhere, odd rounds in doubt at the end), so
/// at `--kills 200` in power-loss mode (20 strata, 10 io_error trials) each
/// gets 5, and the in-doubt trials take the cases in turn: one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoSite {
    /// Any write or fsync of the run, sticky or once (a uniform draw).
    Anywhere,
    /// Once, on the last directory fsync that makes a workspace write
    /// durable in the case's clean run (`io_sites`): the write lands, is in
    /// doubt, and the run's end settles what it judged done on it.
    InDoubtAtEnd,
}

impl IoSite {
    pub fn as_str(self) -> &'static str {
        match self {
            IoSite::Anywhere => "anywhere",
            IoSite::InDoubtAtEnd => "in_doubt_at_end",
        }
    }
}

/// Sigterm mode: the share of trials whose first process gets a second
/// SIGTERM during its grace (the exit-at-once path).
const STOP_TWICE_SHARE: f64 = 0.3;

pub(super) fn mix(mut x: u64) -> u64 {
    // splitmix64
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Phases reached only through their window stratum: on their own they
/// would duplicate it (every occurrence of them is inside the window).
/// `after_compact_before_checkpoint` is inside the compaction window too but
/// keeps a stratum of its own: that window spreads its kills over eight
/// targets a compaction (the call in flight and answered, the phase, the
/// checkpoint's three writes, the next call), so alone it would put about
/// one kill in eight on the phase it exists for.
fn window_only(p: Phase) -> bool {
    matches!(
        p,
        Phase::AfterParkBeforeCheckpoint | Phase::AfterDriftGateBeforeCheckpoint
    )
}

/// Every kill index gets one of these, in a seed-shuffled cycle: the named
/// phases, the four kill windows, random timing, bit rot, and (power loss
/// only) I/O errors.
pub fn strata(mode: Mode) -> Vec<Stratum> {
    let mut v: Vec<Stratum> = Phase::ALL
        .iter()
        .filter(|p| !window_only(**p))
        .map(|p| Stratum::Phase(*p))
        .collect();
    v.extend(Window::ALL.iter().map(|w| Stratum::Window(*w)));
    v.push(Stratum::RandomTiming);
    v.push(Stratum::BitRot);
    v.push(Stratum::JournalDamage);
    if mode == Mode::PowerLoss {
        v.push(Stratum::IoError);
    }
    v
}

/// The raise stratum's kill in the raising process: right after the raise
/// is journaled (before its checkpoint), in the checkpoint that records it
/// (its temp file written, fsynced, renamed), or at the run's next
/// checkpoint after it. The first two get most kills.
const RAISE_KILLS: [(Phase, u64); 6] = [
    (Phase::AfterRaiseBeforeCheckpoint, 1),
    (Phase::AfterRaiseBeforeCheckpoint, 1),
    (Phase::TempWritten, 1),
    (Phase::AfterFsyncFile, 1),
    (Phase::AfterRenameBeforeFsyncDir, 1),
    (Phase::BeforeInProgressCheckpoint, 1),
];

/// The raise stratum raises the case's cap this many times over: enough for
/// its whole cassette.
pub const RAISE_FACTOR: f64 = 10.0;

/// Phases at which a task is in flight, usable to set up a resume kill.
const SETUP_PHASES: [Phase; 4] = [
    Phase::AfterPostBeforeCheckpoint,
    Phase::BetweenMigrationSteps,
    Phase::DuringModelCall,
    Phase::AfterParkBeforeCheckpoint,
];

/// In the bit-rot stratum, the share of trials whose first process runs to
/// the end (the rot then hits the finished run's checkpoint: the machine's
/// disk rots overnight after the run); the others are killed first at a
/// random phase and the checkpoint on disk at the next resume rots.
const BIT_ROT_AFTER_END_SHARE: f64 = 0.25;

/// The plan of kill `k`: a pure function of (seed, mode, k, case filter and
/// the cases' calibration), so `--replay-kill k` reruns exactly this kill.
pub fn plan(
    seed: u64,
    mode: Mode,
    k: usize,
    cases: &[Case],
    calib: &[Calibration],
    only: Option<usize>,
) -> TrialPlan {
    let order_seed = mix(seed ^ mix(mode.tag()));
    let mut order = strata(mode);
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(order_seed));
    let stratum = order[k % order.len()].clone();
    // The how-manieth trial of its stratum this kill is (0-based).
    let round = k / order.len();
    let rng_seed = mix(order_seed ^ mix(k as u64 + 1));
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let case = rng.gen_range(0..cases.len());
    let mut p = Planner {
        cases,
        calib,
        only,
        rng,
        case,
        round,
        order_seed,
        extras: Extras::default(),
    };
    let first = p.first_target(&stratum);
    if let Some(o) = only {
        p.case = o;
    }
    let stop_twice = mode == Mode::Sigterm && p.rng.gen_bool(STOP_TWICE_SHARE);
    let Extras {
        resume_target,
        rot,
        journal_damage,
        raise_cap_usd,
        io_site,
    } = p.extras;
    TrialPlan {
        k,
        mode,
        case: p.case,
        stratum,
        first,
        resume_target,
        rot,
        journal_damage,
        stop_twice,
        raise_cap_usd,
        io_site,
        rng_seed,
    }
}

/// What a stratum sets besides the first process's target (each stratum
/// sets at most one or two of them).
#[derive(Default)]
struct Extras {
    resume_target: Option<Target>,
    rot: Option<RotKind>,
    journal_damage: Option<JournalDamage>,
    raise_cap_usd: Option<f64>,
    io_site: Option<IoSite>,
}

/// One kill's planning state. The per-stratum steps draw from the one rng
/// in a fixed order: any reordering of draws would change every plan of a
/// seed, and with it the gate's reproducible report.
struct Planner<'a> {
    cases: &'a [Case],
    calib: &'a [Calibration],
    only: Option<usize>,
    rng: ChaCha8Rng,
    /// The kill's case: drawn first, then moved to one that reaches the
    /// stratum's target (or to `--case`).
    case: usize,
    /// The how-manieth trial of its stratum this kill is.
    round: usize,
    /// The seed of this mode's stratum order.
    order_seed: u64,
    extras: Extras,
}

impl Planner<'_> {
    /// How many times case `c`'s clean run passes phase `p`.
    fn count(&self, c: usize, p: Phase) -> u64 {
        self.calib[c].phases.get(p.as_str()).copied().unwrap_or(0)
    }

    /// The drawn case if it reaches `p` (or none does), else a random case
    /// that does: a phase no case reaches makes a clean run, not a crash.
    fn pick_case_for(&mut self, p: Phase) -> usize {
        if let Some(o) = self.only {
            return o;
        }
        let r: Vec<usize> = (0..self.cases.len())
            .filter(|c| self.count(*c, p) > 0)
            .collect();
        if r.contains(&self.case) || r.is_empty() {
            self.case
        } else {
            r[self.rng.gen_range(0..r.len())]
        }
    }

    /// `--case` wins over the drawn case for the strata that take any case.
    fn take_only(&mut self) {
        if let Some(o) = self.only {
            self.case = o;
        }
    }

    /// A pause at a random occurrence (from `lo`) of `p` in the case's run.
    fn pause_in(&mut self, p: Phase, lo: u64, max: u64) -> Target {
        Target::Pause {
            phase: p.as_str().into(),
            n: self.rng.gen_range(lo..=max),
        }
    }

    /// The first process's target for `stratum`, recording the extras.
    fn first_target(&mut self, stratum: &Stratum) -> Target {
        match stratum {
            Stratum::Phase(Phase::AfterRaiseBeforeCheckpoint) => self.raise(),
            Stratum::Phase(Phase::DuringResumeVerify) => self.resume_verify(),
            Stratum::Phase(p) => {
                self.case = self.pick_case_for(*p);
                let max = self.count(self.case, *p).max(1);
                self.pause_in(*p, 1, max)
            }
            Stratum::Window(w) => self.window(*w),
            Stratum::BitRot => self.bit_rot(),
            Stratum::JournalDamage => self.journal_damage(),
            Stratum::RandomTiming => self.random_timing(),
            Stratum::IoError => self.io_error(),
        }
    }

    /// The raise stratum: a case whose clean run ends BUDGET_EXHAUSTED
    /// (else a clean run: there is nothing to raise) runs to its end; the
    /// resume raising its cap is the one killed.
    fn raise(&mut self) -> Target {
        let exhausted = |c: &Case| c.expected_ending == harness::ending::Ending::BudgetExhausted;
        if let Some(o) = self.only {
            self.case = o;
        } else {
            let r: Vec<usize> = (0..self.cases.len())
                .filter(|c| exhausted(&self.cases[*c]))
                .collect();
            if !r.is_empty() && !r.contains(&self.case) {
                self.case = r[self.rng.gen_range(0..r.len())];
            }
        }
        if exhausted(&self.cases[self.case]) {
            let usd = self.cases[self.case].hard_cap_usd * RAISE_FACTOR;
            self.extras.raise_cap_usd = Some((usd * 1e6).round() / 1e6);
            let (phase, n) = RAISE_KILLS[self.rng.gen_range(0..RAISE_KILLS.len())];
            self.extras.resume_target = Some(Target::Pause {
                phase: phase.as_str().into(),
                n,
            });
        }
        Target::None
    }

    /// The during_resume_verify stratum: a first kill with a task in
    /// flight, so the resume has something to verify, paused there.
    fn resume_verify(&mut self) -> Target {
        let setup = SETUP_PHASES[self.rng.gen_range(0..SETUP_PHASES.len())];
        self.case = self.pick_case_for(setup);
        let max = self.count(self.case, setup).max(1);
        // during_model_call 1 is the plan call: no task in flight yet.
        let lo = if setup == Phase::DuringModelCall {
            2.min(max)
        } else {
            1
        };
        self.extras.resume_target = Some(Target::Pause {
            phase: Phase::DuringResumeVerify.as_str().into(),
            n: 1,
        });
        self.pause_in(setup, lo, max)
    }

    /// A kill window: a random one of its calibrated targets, in a case
    /// that reaches the window.
    fn window(&mut self, w: Window) -> Target {
        let calib = self.calib;
        let targets = |c: usize| -> &[windows::Target] {
            calib[c]
                .windows
                .get(w.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        if let Some(o) = self.only {
            self.case = o;
        } else if targets(self.case).is_empty() {
            let r: Vec<usize> = (0..self.cases.len())
                .filter(|c| !targets(*c).is_empty())
                .collect();
            if !r.is_empty() {
                self.case = r[self.rng.gen_range(0..r.len())];
            }
        }
        match targets(self.case) {
            [] => Target::None, // no case reaches this window: a clean run
            ts => {
                let (phase, n) = ts[self.rng.gen_range(0..ts.len())].clone();
                Target::Pause { phase, n }
            }
        }
    }

    /// Bit rot: the kind of rot, then where the first process stops.
    fn bit_rot(&mut self) -> Target {
        self.take_only();
        // Digits and letters are the well-formed rot only the checksum
        // catches; raw byte flips are the rest.
        self.extras.rot = Some(match self.rng.gen_range(0..10) {
            0..=3 => RotKind::Digit,
            4..=6 => RotKind::Letter,
            _ => RotKind::Bytes,
        });
        let phases: Vec<Phase> = Phase::ALL
            .iter()
            .copied()
            .filter(|p| *p != Phase::DuringResumeVerify && self.count(self.case, *p) > 0)
            .collect();
        if phases.is_empty() || self.rng.gen_bool(BIT_ROT_AFTER_END_SHARE) {
            Target::None
        } else {
            let p = phases[self.rng.gen_range(0..phases.len())];
            let max = self.count(self.case, p);
            self.pause_in(p, 1, max)
        }
    }

    /// Journal damage: the kind of damage, and a kill after some money
    /// was journaled, so there is a resume.
    fn journal_damage(&mut self) -> Target {
        self.take_only();
        self.extras.journal_damage = Some(if self.rng.gen_bool(0.5) {
            JournalDamage::TornLastLine
        } else {
            JournalDamage::GarbageLine
        });
        let phases: Vec<Phase> = [
            Phase::DuringModelCall,
            Phase::AfterPostBeforeCheckpoint,
            Phase::TempWritten,
            Phase::DuringDriftCall,
        ]
        .into_iter()
        .filter(|p| self.count(self.case, *p) > 0)
        .collect();
        match phases.as_slice() {
            [] => Target::None,
            ps => {
                let p = ps[self.rng.gen_range(0..ps.len())];
                let max = self.count(self.case, p);
                self.pause_in(p, 1, max)
            }
        }
    }

    fn random_timing(&mut self) -> Target {
        self.take_only();
        // A deterministic span (~2 ms per model call or atomic write of a
        // clean run, about its wall time here), so (seed, k) alone fixes the
        // delay; where it lands still depends on the machine's speed.
        let steps = [
            Phase::DuringModelCall,
            Phase::DuringDriftCall,
            Phase::TempWritten,
        ]
        .iter()
        .map(|p| self.count(self.case, *p))
        .sum::<u64>();
        let span = 2_000 * steps.max(5);
        Target::Timer {
            delay_us: self.rng.gen_range(0..span),
        }
    }

    fn io_error(&mut self) -> Target {
        if self.round % 2 == 1 {
            if let Some(t) = self.in_doubt_at_end() {
                self.extras.io_site = Some(IoSite::InDoubtAtEnd);
                return t;
            }
        }
        self.extras.io_site = Some(IoSite::Anywhere);
        self.take_only();
        let errno = if self.rng.gen_bool(0.5) {
            "eio"
        } else {
            "enospc"
        };
        let (class, max) = if self.rng.gen_bool(0.5) {
            ("write", self.calib[self.case].writes)
        } else {
            ("fsync", self.calib[self.case].fsyncs)
        };
        let n = self.rng.gen_range(1..=max.max(1));
        let mode = if self.rng.gen_bool(0.5) {
            "sticky"
        } else {
            "once"
        };
        Target::Fault {
            spec: format!("{errno}:{class}:{n}:{mode}"),
        }
    }
}

impl Planner<'_> {
    /// [`IoSite::InDoubtAtEnd`]: the cases with a site, in a seed-shuffled
    /// order, taken in turn by the stratum's odd rounds; `None` when no case
    /// (or not `--case`) writes the workspace.
    fn in_doubt_at_end(&mut self) -> Option<Target> {
        let mut cases: Vec<usize> = (0..self.cases.len())
            .filter(|c| self.only.is_none_or(|o| o == *c))
            .filter(|c| !self.calib[*c].in_doubt_fsyncs.is_empty())
            .collect();
        if cases.is_empty() {
            return None;
        }
        cases.shuffle(&mut ChaCha8Rng::seed_from_u64(mix(self.order_seed ^ 0x10E)));
        self.case = cases[(self.round / 2) % cases.len()];
        let n = *self.calib[self.case].in_doubt_fsyncs.last()?;
        let errno = if self.rng.gen_bool(0.5) {
            "eio"
        } else {
            "enospc"
        };
        // Once: a sticky error would fail the next fsync too, and the run
        // would end on that error (the anywhere draw's case), not go on from
        // a write in doubt.
        Some(Target::Fault {
            spec: format!("{errno}:fsync:{n}:once"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn plans_are_reproducible_and_stratified() {
        let cases = crate::cases::load_all(&crate::cases::default_dir()).unwrap();
        let calib: Vec<Calibration> = cases
            .iter()
            .map(|_| Calibration {
                phases: Phase::ALL
                    .iter()
                    .map(|p| (p.as_str().to_string(), 3))
                    .collect(),
                writes: 40,
                fsyncs: 40,
                in_doubt_fsyncs: vec![7, 21],
                wall_us: 30_000,
                ending: "GOAL_MET".into(),
                windows: Window::ALL
                    .iter()
                    .map(|w| {
                        (
                            w.as_str().to_string(),
                            vec![("temp_written".to_string(), 2)],
                        )
                    })
                    .collect(),
            })
            .collect();
        for mode in [Mode::Sigkill, Mode::PowerLoss, Mode::Sigterm] {
            let n = strata(mode).len();
            let mut seen = BTreeMap::new();
            for k in 0..n * 3 {
                let a = plan(7, mode, k, &cases, &calib, None);
                let b = plan(7, mode, k, &cases, &calib, None);
                assert_eq!(
                    (a.case, &a.first, &a.stratum),
                    (b.case, &b.first, &b.stratum)
                );
                *seen.entry(a.stratum.label()).or_insert(0) += 1;
            }
            assert_eq!(seen.len(), n);
            assert!(seen.values().all(|v| *v == 3), "{seen:?}");
        }
    }

    /// The CI draw (`--kills 200`): every stratum gets at least
    /// `MIN_TRIALS_AT_200` trials in every mode, and in power loss the
    /// io_error stratum aims its fault at the last write in doubt of every
    /// case at least once (issue 47: a uniform draw missed the one case where
    /// "verified at end" stood on a failed write).
    #[test]
    fn the_200_kill_draw_gives_every_stratum_its_trials_and_every_case_a_write_in_doubt() {
        const MIN_TRIALS_AT_200: usize = 10;
        let cases = crate::cases::load_all(&crate::cases::default_dir()).unwrap();
        let calib: Vec<Calibration> = (0..cases.len())
            .map(|c| Calibration {
                phases: Phase::ALL
                    .iter()
                    .map(|p| (p.as_str().to_string(), 3))
                    .collect(),
                writes: 40,
                fsyncs: 40,
                in_doubt_fsyncs: vec![5, 10 + c as u64],
                ..Default::default()
            })
            .collect();
        for seed in [1, 2, 7, 0xDEAD_BEEF] {
            for mode in [Mode::Sigkill, Mode::PowerLoss, Mode::Sigterm] {
                let mut seen: BTreeMap<String, usize> = BTreeMap::new();
                let mut in_doubt = BTreeMap::new();
                for k in 0..200 {
                    let pl = plan(seed, mode, k, &cases, &calib, None);
                    *seen.entry(pl.stratum.label()).or_insert(0) += 1;
                    if pl.io_site == Some(IoSite::InDoubtAtEnd) {
                        let want = format!(":fsync:{}:once", 10 + pl.case);
                        assert!(
                            matches!(&pl.first, Target::Fault { spec } if spec.ends_with(&want)),
                            "{:?}",
                            pl.first
                        );
                        *in_doubt.entry(pl.case).or_insert(0) += 1;
                    }
                }
                assert_eq!(seen.len(), strata(mode).len(), "{mode:?}: {seen:?}");
                assert!(
                    seen.values().all(|n| *n >= MIN_TRIALS_AT_200),
                    "seed {seed} {mode:?}: {seen:?}"
                );
                if mode == Mode::PowerLoss {
                    assert_eq!(
                        in_doubt.len(),
                        cases.len(),
                        "seed {seed}: in doubt {in_doubt:?}"
                    );
                } else {
                    assert!(in_doubt.is_empty());
                }
            }
        }
    }
}
