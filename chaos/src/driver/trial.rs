//! One kill index, start to end: a fresh copy of the case, the first
//! process killed (or faulted) as planned, then resumes with the same command
//! (the disk damaged between them as the stratum says, sometimes killed
//! again) until the run ends; the oracle's checks after every process and at
//! the end.

use super::calibrate::Calibration;
use super::check::process::check_process;
use super::check::run_end::{final_checks, RunSoFar};
use super::check::stop::check_stop;
use super::check::{Checks, EPS};
use super::config::{Config, Mode};
use super::damage;
use super::observe::{observe, published_report, Obs, Paths, Proc};
use super::plan::{mix, JournalDamage, TrialPlan};
use crate::bitrot::RotKind;
use crate::cases::Case;
use crate::compaction;
use crate::fsmodel::{self, Snapshot};
use crate::harness_files::{self, Report};
use crate::invariant::Invariant;
use crate::oracle::Effect;
use crate::proc::{self, Outcome, Spawn, Target};
use crate::rerun;
use harness::chaos_hook::Phase;
use harness::ending::Ending;
use harness::invocation::{HarnessInvocation, ModelSource};
use harness::replay::{Recordings, ReplayServer};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Shared by the worker threads of one mode. run.rs builds it and every
/// trial reads it: it lives here so that run names trial, never the reverse.
pub(super) struct Ctx<'a> {
    pub(super) cfg: &'a Config,
    pub(super) cases: &'a [Case],
    pub(super) calib: &'a [Calibration],
    pub(super) only: Option<usize>,
    pub(super) rt: &'a tokio::runtime::Runtime,
    pub(super) recordings: &'a Recordings,
}

/// One finished kill index.
pub struct TrialOutcome {
    pub plan: TrialPlan,
    pub case_id: String,
    pub signals_sent: u64,
    pub confirmed: Vec<String>,
    pub exited_before_signal: u64,
    /// Sigterm mode: each stop (a second signal sent?, the exit code).
    pub stops: Vec<(bool, i32)>,
    pub power_cuts: u64,
    pub resumes: u64,
    pub kills_during_resume: u64,
    pub io_fault: Option<String>,
    pub ending: Option<String>,
    pub refusal: Option<String>,
    /// The bit-rot stratum's rot, as `Rot::label` says it.
    pub bit_rot: Option<String>,
    /// The journal-damage stratum's damage, and what the journal had
    /// committed just before it.
    pub journal_damage: Option<(JournalDamage, f64)>,
    pub exercised: BTreeSet<Invariant>,
    pub violations: Vec<(Invariant, usize, String)>,
    pub dir: PathBuf,
}

/// A trial under way: its files, and what the run so far has shown.
struct Trial<'a> {
    ctx: &'a Ctx<'a>,
    server: &'a ReplayServer,
    plan: TrialPlan,
    case: &'a Case,
    p: Paths,
    /// The spec as the trial began (the goal hash check compares it).
    spec_bytes: Vec<u8>,
    run_index: u32,
    url: String,
    /// Draws the kills during resumes.
    rng: ChaCha8Rng,
    ck: Checks,
    out: TrialOutcome,
    procs: Vec<Proc>,
    /// The most the ledger journal has committed at any spawn.
    max_committed: f64,
    /// Journal seq -> worst case of every call in flight at a kill.
    inflight_reserves: BTreeMap<u64, f64>,
    /// Migrations seen partially applied on any disk.
    partial_seen: BTreeSet<String>,
    /// Power loss: a power cut after a process that exited was survived.
    post_cut_done: bool,
    extra_kills: usize,
    /// The report that ended the run: its ending (as published) and
    /// report.json on disk after it.
    final_ending: Option<String>,
    final_report: Option<Report>,
    rot_pending: Option<RotKind>,
    damage_pending: Option<JournalDamage>,
    reruns: rerun::Tracker,
    compactions: compaction::Tracker,
    /// What the replay server answered, priced: what the provider bills.
    billed: f64,
    previous_killed: bool,
}

pub(super) fn run_trial(ctx: &Ctx, server: &ReplayServer, plan: TrialPlan) -> TrialOutcome {
    let case = &ctx.cases[plan.case];
    let dir = ctx
        .cfg
        .work_dir
        .join(format!("{}-{}", plan.mode.as_str(), plan.k));
    let _ = std::fs::remove_dir_all(&dir);
    let mut out = TrialOutcome {
        plan: plan.clone(),
        case_id: case.id.clone(),
        signals_sent: 0,
        confirmed: vec![],
        exited_before_signal: 0,
        stops: vec![],
        power_cuts: 0,
        resumes: 0,
        kills_during_resume: 0,
        io_fault: None,
        ending: None,
        refusal: None,
        bit_rot: None,
        journal_damage: None,
        exercised: BTreeSet::new(),
        violations: vec![],
        dir: dir.clone(),
    };
    let p = match Paths::make(&dir, case) {
        Ok(p) => p,
        Err(e) => {
            let mut ck = Checks::new();
            ck.fail(
                Invariant::OneOfSevenEndings,
                0,
                format!("trial setup failed: {e}"),
            );
            out.violations = ck.found;
            return out;
        }
    };
    let mut t = Trial::new(ctx, server, plan, case, p, out);
    let mut finished = false;
    for idx in 0..ctx.cfg.max_procs {
        if idx > 0 {
            t.before_resume(idx);
        }
        let spawn = observe(&t.p, case);
        let target = t.target_of(idx, &spawn);
        t.note_spawn(idx, &spawn);
        let pr = t.run_process(idx, spawn, &target);
        check_process(&mut t.ck, &pr, case, &t.p, &t.spec_bytes, &t.partial_seen);
        check_stop(&mut t.ck, &pr, &t.p);
        t.check_reruns(&pr);
        t.check_compaction_records(&pr);
        let done = t.settle(&pr);
        t.procs.push(pr);
        if done {
            finished = true;
            break;
        }
    }
    t.finish(finished)
}

impl<'a> Trial<'a> {
    fn new(
        ctx: &'a Ctx<'a>,
        server: &'a ReplayServer,
        plan: TrialPlan,
        case: &'a Case,
        p: Paths,
        out: TrialOutcome,
    ) -> Trial<'a> {
        let run_index = ((plan.mode.tag() as u32) << 24) | (plan.k as u32 & 0x00FF_FFFF);
        Trial {
            ctx,
            server,
            spec_bytes: std::fs::read(&p.spec).unwrap_or_default(),
            url: server.base_url_for(&case.replay_case, run_index),
            run_index,
            rng: ChaCha8Rng::seed_from_u64(plan.rng_seed ^ 0xC4A0),
            rot_pending: plan.rot,
            damage_pending: plan.journal_damage,
            plan,
            case,
            p,
            ck: Checks::new(),
            out,
            procs: vec![],
            max_committed: 0.0,
            inflight_reserves: BTreeMap::new(),
            partial_seen: BTreeSet::new(),
            post_cut_done: false,
            extra_kills: 0,
            final_ending: None,
            final_report: None,
            reruns: rerun::Tracker::default(),
            compactions: compaction::Tracker::default(),
            billed: 0.0,
            previous_killed: false,
        }
    }

    /// Before resume `idx`: the decoy, and the stratum's damage to the disk
    /// once there is something to damage.
    fn before_resume(&mut self, idx: usize) {
        // A valid-looking frame under a temp name: a harness that ever
        // reads temp files would resume from it (run id DECOY_RUN_ID).
        damage::plant_decoy(&self.p.state, &self.case.goal_sha256);
        self.out.resumes += 1;
        if let Some(kind) = self.rot_pending {
            if let Some(label) =
                damage::rot_checkpoint(&mut self.ck, &self.p, self.case, kind, &self.plan, idx)
            {
                self.out.bit_rot = Some(label);
                self.rot_pending = None;
            }
        }
        if let Some(kind) = self.damage_pending {
            let mut drng = ChaCha8Rng::seed_from_u64(mix(self.plan.rng_seed ^ 0x1ED6_E800));
            if let Some(before) = damage::damage_journal(&self.p.state, kind, &mut drng) {
                self.out.journal_damage = Some((kind, before.max(self.max_committed)));
                self.damage_pending = None;
            }
        }
    }

    /// Where process `idx` is killed: the plan's first target, the plan's
    /// resume target, or now and then a random kill during a resume.
    fn target_of(&mut self, idx: usize, spawn: &Obs) -> Target {
        if let Some(s) = spawn.ckpt.state() {
            self.reruns.on_disk(s, idx);
            self.compactions.on_disk(s.compaction_attempts, idx);
            if idx > 0 && !(s.parked.is_empty() && s.pruned.is_empty()) {
                self.ck.ex(Invariant::SettledTaskNeverRerun);
            }
        }
        if idx > 0 && self.compactions.seen() {
            self.ck.ex(Invariant::CompactionAtMostOnce);
        }
        let rng = &mut self.rng;
        if idx == 0 {
            self.plan.first.clone()
        } else if idx == 1 && self.plan.resume_target.is_some() {
            self.plan.resume_target.clone().unwrap_or(Target::None)
        } else if self.extra_kills < 2 && !self.post_cut_done && rng.gen_bool(0.3) {
            self.extra_kills += 1;
            if spawn.inflight.is_some() && rng.gen_bool(0.5) {
                Target::Pause {
                    phase: Phase::DuringResumeVerify.as_str().into(),
                    n: 1,
                }
            } else {
                let ph = Phase::ALL[rng.gen_range(0..Phase::ALL.len())];
                Target::Pause {
                    phase: ph.as_str().into(),
                    n: rng.gen_range(1..=2),
                }
            }
        } else {
            Target::None
        }
    }

    /// The disk at spawn: committed spend never decreases, and what the
    /// end-of-run checks will hold the run to (calls in flight, partially
    /// applied migrations).
    fn note_spawn(&mut self, idx: usize, spawn: &Obs) {
        let committed = spawn.journal.committed();
        // After the bench damaged the journal the oracle's reading of it is
        // not the money: the final report is held to what it had committed
        // before (end of the run).
        if self.out.journal_damage.is_none() && committed + EPS < self.max_committed {
            let max = self.max_committed;
            self.ck.fail(Invariant::LedgerNeverForgets, idx, format!("committed spend went down across a kill: ${max:.6} before, ${committed:.6} in the journal now"));
        }
        self.max_committed = self.max_committed.max(committed);
        // The promise "a reserve with no record is booked at its worst case"
        // is about resuming; a finished run is re-reported, never resumed.
        if spawn.resumable() {
            for (seq, (_, worst)) in spawn.journal.open() {
                self.inflight_reserves.insert(seq, worst);
            }
        }
        for (m, e) in &spawn.migrations {
            if matches!(e, Effect::Partial(_)) {
                self.partial_seen.insert(m.clone());
            }
        }
    }

    /// Run process `idx` against `target`, power-cut the disk after it if
    /// the mode says so, and read what it did.
    fn run_process(&mut self, idx: usize, spawn: Obs, target: &Target) -> Proc {
        let p = &self.p;
        let power_loss = self.plan.mode == Mode::PowerLoss;
        let snapshot = power_loss.then(|| Snapshot::take(&[p.state.clone(), p.ws.clone()]));
        let log = p.logs.join(format!("p{idx}.jsonl"));
        let s = self.spawn_of(idx, &spawn, &log);
        let (outcome, stderr) = proc::run(&s, target);
        let _ = std::fs::write(p.logs.join(format!("p{idx}.stderr")), &stderr);
        let stdout = std::fs::read_to_string(&s.stdout).unwrap_or_default();
        let ops = fsmodel::read_log(&log);
        let fault_fired = ops.iter().find_map(|o| match o {
            fsmodel::Op::Fault { errno, .. } => Some(*errno),
            _ => None,
        });
        let exited = outcome.exit_code().is_some();
        let published = exited
            .then(|| published_report(&p.state, &stderr))
            .flatten();
        self.count_signal(idx, target, &outcome, fault_fired);
        // ---- power loss: the disk as a power cut at this moment leaves it
        let cut = power_loss
            && (outcome.killed()
                || matches!(outcome, Outcome::SignalNotConfirmed { .. })
                || (exited && (fault_fired.is_some() || !self.post_cut_done)));
        if let (true, Some(snap)) = (cut, snapshot) {
            if let Err(e) = damage::power_cut(snap, &ops, &self.plan, idx) {
                self.ck.fail(
                    Invariant::OneOfSevenEndings,
                    idx,
                    format!("could not build the post-crash image: {e}"),
                );
            }
            self.out.power_cuts += 1;
            if exited && fault_fired.is_none() {
                self.post_cut_done = true;
            }
        }
        let end = observe(&self.p, self.case);
        let events = harness_files::events_from(&self.p.state, spawn.events_len);
        Proc {
            idx,
            outcome,
            stdout,
            stderr,
            ops,
            spawn,
            end,
            published,
            events,
            fault_fired,
            crashed: cut,
        }
    }

    /// Process `idx`'s command: the simfs log on, the broken variant if one
    /// is tested, the raised cap once the run needs it, and the mode's signal.
    fn spawn_of(&self, idx: usize, spawn: &Obs, log: &Path) -> Spawn {
        let cfg = self.ctx.cfg;
        let p = &self.p;
        let mut env = vec![(
            harness::simfs::LOG_ENV.to_string(),
            log.display().to_string(),
        )];
        env.push(("TMPDIR".into(), cfg.work_dir.display().to_string()));
        if let Some(b) = &cfg.broken {
            env.push((harness::simfs::BROKEN_ENV.into(), b.clone()));
        }
        let mut invocation =
            HarnessInvocation::run(&p.spec, &p.state, ModelSource::BaseUrl(self.url.clone()));
        // The raise stratum: as an operator would, once the run ended
        // BUDGET_EXHAUSTED, and from then on the same command again.
        if let Some(usd) = self.plan.raise_cap_usd {
            let exhausted = spawn
                .ckpt
                .state()
                .and_then(|s| s.finished.as_ref())
                .map(|f| f.ending)
                == Some(harness::ending::Ending::BudgetExhausted);
            if idx > 0 && (exhausted || journal_limits(&p.state) > 0) {
                invocation = invocation.raise_cap_usd(usd);
            }
        }
        for (k, v) in env {
            invocation = invocation.env(k, v);
        }
        let kill = match self.plan.mode {
            Mode::Sigterm => proc::Kill::Stop {
                twice: idx == 0 && self.plan.stop_twice,
            },
            Mode::Sigkill | Mode::PowerLoss => proc::Kill::Sigkill,
        };
        Spawn {
            kill,
            harness: cfg.harness_bin.clone(),
            invocation,
            stdout: p.logs.join(format!("p{idx}.stdout")),
            timeout: cfg.proc_timeout,
        }
    }

    /// The signal and fault counts of one process.
    fn count_signal(
        &mut self,
        idx: usize,
        target: &Target,
        outcome: &Outcome,
        fault_fired: Option<i32>,
    ) {
        let out = &mut self.out;
        if matches!(target, Target::Pause { .. } | Target::Timer { .. }) {
            out.signals_sent += !matches!(outcome, Outcome::ExitedBeforeSignal { .. }) as u64;
        }
        match outcome {
            Outcome::KilledAtPhase { phase, .. } => {
                out.confirmed.push(phase.clone());
                out.kills_during_resume += (idx > 0) as u64;
            }
            Outcome::KilledByTimer { .. } => {
                out.confirmed.push("random_timing".into());
                out.kills_during_resume += (idx > 0) as u64;
            }
            Outcome::ExitedBeforeSignal { .. } => out.exited_before_signal += 1,
            Outcome::Stopped { at, code, twice } => {
                out.confirmed
                    .push(at.split(':').next().unwrap_or(at).to_string());
                out.stops.push((*twice, *code));
                out.kills_during_resume += (idx > 0) as u64;
            }
            _ => {}
        }
        if let Target::Fault { spec } = target {
            out.io_fault = Some(format!(
                "{} {}{}",
                spec.split(':').take(2).collect::<Vec<_>>().join(":"),
                self.plan.io_site.map_or("?", |s| s.as_str()),
                if fault_fired.is_some() {
                    ""
                } else {
                    " (not reached)"
                }
            ));
        }
    }

    /// settled_task_never_rerun: what this process sent the replay server;
    /// nothing settled runs again.
    fn check_reruns(&mut self, pr: &Proc) {
        let case = self.case;
        let mut billed = 0.0;
        let keys: Vec<String> = self
            .server
            .take_captured(&case.replay_case, self.run_index)
            .into_iter()
            .map(|c| {
                billed += case.cost_usd.get(&c.call_key).copied().unwrap_or(0.0);
                c.call_key
            })
            .collect();
        self.billed += billed;
        for v in self
            .compactions
            .process(pr.idx, &keys, self.previous_killed)
        {
            self.ck.fail(Invariant::CompactionAtMostOnce, pr.idx, v);
        }
        for v in self
            .reruns
            .process(pr.idx, &keys, &case.prunes, self.previous_killed)
        {
            self.ck.fail(Invariant::SettledTaskNeverRerun, pr.idx, v);
        }
        self.previous_killed = pr.exited().is_none();
    }

    /// compaction_at_most_once: the checkpoint on disk after the process
    /// lists each compaction attempt it counts once, in order.
    fn check_compaction_records(&mut self, pr: &Proc) {
        let Some(s) = pr.end.ckpt.state() else { return };
        let keys: Vec<String> = s.compactions.iter().map(|c| c.call_key.clone()).collect();
        if let Err(e) = compaction::records_in_order(&keys, s.compaction_attempts) {
            self.ck.fail(
                Invariant::CompactionAtMostOnce,
                pr.idx,
                format!("the checkpoint on disk after process {} {e}", pr.idx),
            );
        }
    }

    /// Whether the run is over after `pr`: it ended (and no power cut or
    /// pending damage still has to be survived), or it cannot go on.
    fn settle(&mut self, pr: &Proc) -> bool {
        let idx = pr.idx;
        let inv = Invariant::OneOfSevenEndings;
        match &pr.outcome {
            Outcome::Hung => {
                let t = self.ctx.cfg.proc_timeout;
                self.ck.fail(
                    inv,
                    idx,
                    format!("process {idx} still running after {t:?}: killed"),
                );
                true
            }
            Outcome::SpawnFailed(e) => {
                self.ck
                    .fail(inv, idx, format!("cannot start the harness: {e}"));
                true
            }
            Outcome::SignalNotConfirmed { status } => {
                self.ck
                    .fail(inv, idx, format!("sent SIGKILL but waitpid says {status}"));
                false
            }
            _ if pr.exited().is_some() => {
                self.final_ending = pr
                    .published
                    .as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .and_then(|r| r.ending.clone());
                self.final_report = pr.end.report.clone();
                // The raise stratum goes on after the first ending.
                let to_raise = self.plan.raise_cap_usd.is_some()
                    && journal_limits(&self.p.state) == 0
                    && self.final_ending.as_deref() == Some(Ending::BudgetExhausted.as_str());
                // Done unless a power cut still has to be survived, or the
                // bit rot has yet to hit a committed checkpoint.
                !to_raise
                    && !(self.plan.mode == Mode::PowerLoss && pr.crashed)
                    && self.rot_pending.is_none()
                    && self.damage_pending.is_none()
            }
            _ => false,
        }
    }

    /// End of the run: the checks on the final disk, and the outcome.
    fn finish(mut self, finished: bool) -> TrialOutcome {
        let case = self.case;
        let n = self.procs.len();
        let ck = &mut self.ck;
        if !finished {
            let max = self.ctx.cfg.max_procs;
            ck.fail(
                Invariant::OneOfSevenEndings,
                max,
                format!("no ending after {max} harness processes"),
            );
        }
        self.billed += self
            .server
            .take_captured(&case.replay_case, self.run_index)
            .iter()
            .map(|c| case.cost_usd.get(&c.call_key).copied().unwrap_or(0.0))
            .sum::<f64>();
        if self.plan.rot.is_some() && self.rot_pending.is_some() {
            ck.fail(
                Invariant::NoTornCheckpoint,
                n,
                "bench: the bit-rot stratum found no committed checkpoint to rot".into(),
            );
        }
        // The ledger never forgets, through a damaged journal: whatever the
        // damage, the final report shows at least what was committed before it.
        if let (Some((kind, before)), Some(r)) =
            (self.out.journal_damage, self.final_report.as_ref())
        {
            let spent = r.spend();
            if spent + EPS < before {
                ck.fail(
                    Invariant::LedgerNeverForgets,
                    n,
                    format!(
                        "after the journal was damaged ({}), the final report shows ${spent:.6}, less than the ${before:.6} it had committed before",
                        kind.as_str()
                    ),
                );
            }
            ck.ex(Invariant::LedgerNeverForgets);
        }
        if let (Some(usd), true) = (self.plan.raise_cap_usd, finished) {
            check_raise(ck, &self.p.state, usd, n);
        }
        if let (true, Some(last)) = (finished, self.procs.last()) {
            self.out.ending = self.final_ending.clone();
            let so_far = RunSoFar {
                billed: self.billed,
                inflight_reserves: &self.inflight_reserves,
                partial_seen: &self.partial_seen,
                io_fault: self.out.io_fault.is_some(),
                journal_damaged: self.out.journal_damage.is_some(),
            };
            if let Some(k) =
                final_checks(ck, last, case, &self.p, &so_far, self.final_report.as_ref())
            {
                self.out.refusal = Some(k);
            }
        }
        ck.ex(Invariant::NoTornCheckpoint);
        ck.ex(Invariant::OneOfSevenEndings);
        ck.ex(Invariant::LedgerNeverForgets);
        ck.ex(Invariant::GoalHashIntact);
        self.out.exercised = self.ck.exercised;
        self.out.violations = self.ck.found;
        self.out
    }
}

/// The `limit` entries in the trial's ledger journal (the cap raises), read
/// through the harness's one journal parser as `oracle::Journal` reads the
/// money: a limit line torn before its newline is no raise, as the harness
/// reads it.
fn journal_limits(state: &std::path::Path) -> usize {
    use harness::ledger::journal::{parse, JournalEntry};
    let bytes = std::fs::read(state.join("ledger.jsonl")).unwrap_or_default();
    parse(&bytes)
        .lines
        .iter()
        .filter(|l| matches!(l.entry, JournalEntry::Limit { .. }))
        .count()
}

/// The raise stratum, at the end of the run (ledger_never_forgets): the cap
/// was raised exactly once, however often the raising command was killed
/// and run again; the final report's cap is the raised one, its spend is
/// never above it, and it lists the one raise.
fn check_raise(ck: &mut Checks, state: &std::path::Path, usd: f64, n: usize) {
    let inv = Invariant::LedgerNeverForgets;
    ck.ex(inv);
    let limits = journal_limits(state);
    if limits != 1 {
        ck.fail(inv, n, format!("the raise stratum raised the cap to ${usd} once, but ledger.jsonl holds {limits} limit lines"));
    }
    let Ok(Some(r)) = harness_files::read_report(state) else {
        return;
    };
    if r.ending.as_deref() == Some(Ending::UnrecoverableError.as_str()) {
        return; // a refused resume (a fault the stratum did not plan) reports the checkpoint's figures
    }
    let cap = r.hard_cap_usd.unwrap_or(f64::NAN);
    let spent = r.spend_usd.unwrap_or(f64::NAN);
    let raises = r.limit_raises.len();
    if (cap - usd).abs() > EPS || !(spent <= cap + EPS) || raises != 1 {
        ck.fail(inv, n, format!("after the cap was raised to ${usd}, the final report says hard_cap_usd {cap}, spend_usd {spent}, {raises} limit raise(s)"));
    }
}

#[cfg(test)]
mod tests {
    use harness::ledger::journal::{frame, JournalEntry, LimitKind};

    /// Two whole raises, a release, and a third raise torn before its
    /// newline: the harness reads two raises, and so does the check.
    #[test]
    fn journal_limits_counts_the_raises_the_harness_reads() {
        let dir = tempfile::tempdir().unwrap();
        let raise = |new: f64| JournalEntry::Limit {
            unix_ms: 1,
            limit: LimitKind::HardCapUsd,
            old: 1.0,
            new,
        };
        let mut text = frame(&raise(2.0)).unwrap();
        text += &frame(&JournalEntry::Release { seq: 3 }).unwrap();
        text += &frame(&raise(3.0)).unwrap();
        text += frame(&raise(4.0)).unwrap().trim_end();
        std::fs::write(dir.path().join("ledger.jsonl"), text).unwrap();
        assert_eq!(super::journal_limits(dir.path()), 2);
    }
}
