//! The checks after every harness process: the checkpoint on disk, the
//! outbox, the in-flight task's classification, partially applied
//! migrations, the ending, the money and the goal hash.

use super::ckpt_writes::checkpoint_writes;
use super::refusal;
use super::{ending, is_refusal, Checks, EPS, REFUSAL_KINDS};
use crate::cases::Case;
use crate::driver::damage::DECOY_RUN_ID;
use crate::driver::observe::{Paths, Proc};
use crate::fsmodel;
use crate::harness_files::{quoted, Event, Report};
use crate::invariant::Invariant;
use crate::oracle::{self, Ckpt, Effect};
use crate::proc::Outcome;
use std::collections::BTreeSet;

/// Every check on process `pr`. `spec_bytes`: the spec as the trial began;
/// `partial_seen`: migrations seen partially applied on any disk so far.
pub(in crate::driver) fn check_process(
    ck: &mut Checks,
    pr: &Proc,
    case: &Case,
    p: &Paths,
    spec_bytes: &[u8],
    partial_seen: &BTreeSet<String>,
) {
    // The report on disk after the process, for a process that exited.
    let report = pr.exited().and(pr.end.report.as_ref());
    refused_bad_frame(ck, pr, p, report);
    disk_holds_what_was_acknowledged(ck, pr, p);
    if report.is_some_and(|r| r.run_id.as_deref() == Some(DECOY_RUN_ID)) {
        ck.fail(
            Invariant::NoTornCheckpoint,
            pr.idx,
            "the harness read a temp file (the decoy) as its checkpoint".into(),
        );
    }
    post_at_most_once(ck, pr);
    in_flight_classified(ck, pr);
    partial_migration_not_rewritten(ck, pr, case, p, partial_seen);
    if let Some(code) = pr.exited() {
        let published = ending::check(ck, pr, code);
        bad_journal_refused(ck, pr, published, report);
    }
    report_keeps_committed_money(ck, pr, report);
    goal_hash_intact(ck, pr, case, p, spec_bytes, report);
}

/// no_torn_checkpoint at the start of a process: a bad frame is refused
/// (UNRECOVERABLE_ERROR naming it, the file left alone, nothing run on from
/// it), a whole frame never is.
fn refused_bad_frame(ck: &mut Checks, pr: &Proc, p: &Paths, report: Option<&Report>) {
    let idx = pr.idx;
    let exited = pr.exited();
    match &pr.spawn.ckpt {
        Ckpt::Invalid(kind, bytes) => {
            if let (Some(code), Some(r)) = (exited, report) {
                let want = format!("checkpoint_{kind}");
                if code != 4 || r.error_kind.as_deref() != Some(want.as_str()) {
                    ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) but ended exit {code} with error_kind {}", quoted(&r.error_kind)));
                }
                if pr.end.ckpt.bytes() != Some(bytes.as_slice()) && !pr.crashed {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        "the refused checkpoint was modified".into(),
                    );
                }
            } else if let Some(code) = exited {
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}), exited {code} and left no report.json"));
            }
            // A refusal happens at load, before any kill point and before any
            // checkpoint: a process that reached one ran on from the bad frame
            // (whether or not it lived to exit). The writes a refusal makes
            // are its report's (report.json, then the page, each atomic): a
            // kill at any step of them is the refusal under way, judged as a
            // whole by `refusal::under_way`.
            if let Outcome::KilledAtPhase { phase, n } = &pr.outcome {
                if let Err(what) = refusal::under_way(&pr.ops, &p.state, kind, phase) {
                    ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) and ran on to {phase}:{n} instead of refusing it: {what}"));
                }
            }
            let (written, _) = checkpoint_writes(&pr.ops, &p.state, exited.is_some());
            if !written.is_empty() {
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("resumed on a checkpoint that is not a whole frame ({kind}) and wrote {} checkpoint(s) over it instead of refusing it", written.len()));
            }
        }
        Ckpt::Valid(..) => {
            if let Some(r) = report {
                if REFUSAL_KINDS.contains(&r.error_kind()) {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        format!("refused a whole, valid checkpoint: {}", quoted(&r.detail)),
                    );
                }
            }
        }
        Ckpt::Absent => {}
    }
}

/// no_torn_checkpoint (and goal_hash_intact) at the end of a process: the
/// checkpoint on disk is a whole frame, the last one the process went on
/// from or a newer one, never the decoy.
fn disk_holds_what_was_acknowledged(ck: &mut Checks, pr: &Proc, p: &Paths) {
    let idx = pr.idx;
    let (cands, acked) = checkpoint_writes(&pr.ops, &p.state, pr.exited().is_some());
    match &pr.end.ckpt {
        // The bad frame this process found at its start, left alone as a
        // refusal must (checked above): nothing this process wrote.
        Ckpt::Invalid(_, b)
            if matches!(&pr.spawn.ckpt, Ckpt::Invalid(_, sb) if sb == b) && cands.is_empty() => {}
        Ckpt::Invalid(kind, b) if kind == "goal_mismatch" => {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "checkpoint on disk carries another goal's hash ({} bytes)",
                    b.len()
                ),
            );
        }
        Ckpt::Invalid(kind, b) => {
            let how = if pr.crashed {
                "power cut"
            } else if pr.outcome.killed() {
                "SIGKILL"
            } else {
                "exit"
            };
            ck.fail(Invariant::NoTornCheckpoint, idx, format!("after the {how} the checkpoint on disk is not a whole frame ({kind}, {} bytes, sha {}): the write was not atomic", b.len(), oracle::digest(b)));
        }
        end => {
            let on_disk = end.bytes();
            let allowed: Vec<Option<&[u8]>> = match acked {
                Some(i) => cands[i..].iter().map(|c| Some(c.as_slice())).collect(),
                None => std::iter::once(pr.spawn.ckpt.bytes())
                    .chain(cands.iter().map(|c| Some(c.as_slice())))
                    .collect(),
            };
            if !allowed.contains(&on_disk) {
                let what = match (acked, on_disk) {
                    (Some(_), None) => "no checkpoint at all".to_string(),
                    (_, Some(b)) if Some(b) == pr.spawn.ckpt.bytes() => {
                        "the checkpoint from before this process".into()
                    }
                    (_, Some(b)) => match cands.iter().position(|c| c == b) {
                        Some(j) => format!("checkpoint write #{} of {}", j + 1, cands.len()),
                        None => format!(
                            "a checkpoint this process never wrote (sha {})",
                            oracle::digest(b)
                        ),
                    },
                    _ => "nothing".into(),
                };
                ck.fail(Invariant::NoTornCheckpoint, idx, format!("the harness went on from checkpoint write #{} of {} as durable, but after the {} the disk holds {what}", acked.map(|i| i + 1).unwrap_or(0), cands.len(), if pr.crashed { "power cut" } else { "kill" }));
            }
            if let Some(s) = end.state() {
                if s.run_id == DECOY_RUN_ID {
                    ck.fail(
                        Invariant::NoTornCheckpoint,
                        idx,
                        "the checkpoint was taken from a temp file".into(),
                    );
                }
            }
        }
    }
}

/// post_at_most_once: no idempotency key twice in the outbox.
fn post_at_most_once(ck: &mut Checks, pr: &Proc) {
    for (k, n) in &pr.end.outbox {
        ck.ex(Invariant::PostAtMostOnce);
        if *n > 1 {
            ck.fail(
                Invariant::PostAtMostOnce,
                pr.idx,
                format!("outbox holds {n} posts with idempotency key {k:?}"),
            );
        }
    }
}

/// in_flight_classified: the task in flight at spawn is classified on
/// resume as the disk says, with the matching consequence.
fn in_flight_classified(ck: &mut Checks, pr: &Proc) {
    let Some((task, expect)) = &pr.spawn.inflight else {
        return;
    };
    let idx = pr.idx;
    let Some(outcome) = pr.events.iter().find_map(|e| match e {
        Event::ResumeVerify { task: t, outcome } if t == task => Some(outcome),
        _ => None,
    }) else {
        return;
    };
    ck.ex(Invariant::InFlightClassified);
    let got = outcome.as_deref().unwrap_or("?");
    if got != expect.wire() {
        ck.fail(Invariant::InFlightClassified, idx, format!("in-flight task {task} classified {got} on resume, but the disk says {} ({expect:?})", expect.wire()));
        return;
    }
    let done = || {
        pr.events
            .iter()
            .any(|e| matches!(e, Event::TaskDone { task: t } if t == task))
    };
    let parked = || {
        pr.events
            .iter()
            .any(|e| matches!(e, Event::TaskParked { task: t } if t == task))
    };
    match expect {
        Effect::Done if !done() => ck.fail(
            Invariant::InFlightClassified,
            idx,
            format!("{task} verified done on resume but not completed"),
        ),
        Effect::Partial(_) if !parked() => ck.fail(
            Invariant::InFlightClassified,
            idx,
            format!("{task} partially applied on resume but not parked"),
        ),
        Effect::NotStarted => {
            let first = pr.events.iter().find_map(|e| match e {
                Event::TaskStart { task } => Some(task),
                _ => None,
            });
            if let Some(first) = first.filter(|f| *f != task) {
                ck.fail(Invariant::InFlightClassified, idx, format!("{task} was not started but {first:?} ran first: not re-queued at the front"));
            }
        }
        _ => {}
    }
}

/// partial_migration_parked: a migration once partially applied on disk has
/// none of its steps written again.
fn partial_migration_not_rewritten(
    ck: &mut Checks,
    pr: &Proc,
    case: &Case,
    p: &Paths,
    partial_seen: &BTreeSet<String>,
) {
    for m in partial_seen.iter().chain(
        pr.spawn
            .migrations
            .iter()
            .filter(|(_, e)| matches!(e, Effect::Partial(_)))
            .map(|(m, _)| m),
    ) {
        ck.ex(Invariant::PartialMigrationParked);
        let steps = &case.migrations[m];
        for op in &pr.ops {
            if let fsmodel::Op::Open { path, .. } = op {
                if steps.iter().any(|(sp, _)| p.ws.join(sp) == *path) {
                    ck.fail(Invariant::PartialMigrationParked, pr.idx, format!("migration {m} was partially applied on disk and was written again ({})", path.display()));
                    break;
                }
            }
        }
    }
}

/// ledger_never_forgets: a journal with a corrupt line is refused, never
/// resumed from. `published`: the report the process published, with its
/// ending; `report`: report.json on disk after it.
fn bad_journal_refused(
    ck: &mut Checks,
    pr: &Proc,
    published: Option<&Report>,
    report: Option<&Report>,
) {
    let (Some(line), Some(name)) = (
        pr.spawn.journal.bad_line,
        published.and_then(|r| r.ending.as_deref()),
    ) else {
        return;
    };
    let refused = name == "UNRECOVERABLE_ERROR"
        && report
            .map(|r| r.error_kind() == "ledger_journal")
            .unwrap_or(false);
    if !refused && pr.spawn.resumable() {
        ck.fail(
            Invariant::LedgerNeverForgets,
            pr.idx,
            format!(
                "ledger journal line {line} is not a journal entry but the run went on ({name})"
            ),
        );
    }
}

/// ledger_never_forgets: a report never shows less money than the journal
/// had committed when the process started.
fn report_keeps_committed_money(ck: &mut Checks, pr: &Proc, report: Option<&Report>) {
    let Some(r) = report else { return };
    if pr.spawn.resumable() && !is_refusal(r, &pr.spawn) && pr.fault_fired.is_none() {
        let spent = r.spend();
        if spent + EPS < pr.spawn.journal.committed() {
            ck.fail(Invariant::LedgerNeverForgets, pr.idx, format!("report spend ${spent:.6} is below the ${:.6} the journal had committed when the process started", pr.spawn.journal.committed()));
        }
    }
}

/// goal_hash_intact: the checkpoint and the report carry the spec's goal
/// and its hash, and the spec file is unchanged.
fn goal_hash_intact(
    ck: &mut Checks,
    pr: &Proc,
    case: &Case,
    p: &Paths,
    spec_bytes: &[u8],
    report: Option<&Report>,
) {
    let idx = pr.idx;
    if let Some(s) = pr.end.ckpt.state() {
        if s.goal_sha256 != case.goal_sha256 {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "checkpoint goal hash {} != {}",
                    s.goal_sha256, case.goal_sha256
                ),
            );
        }
    }
    if let Some(r) = report {
        if r.goal_sha256.as_deref() != Some(case.goal_sha256.as_str())
            || r.goal.as_deref() != Some(case.goal.as_str())
        {
            ck.fail(
                Invariant::GoalHashIntact,
                idx,
                format!(
                    "report goal/hash differ from the spec's: {} / {}",
                    quoted(&r.goal),
                    quoted(&r.goal_sha256)
                ),
            );
        }
    }
    if std::fs::read(&p.spec).unwrap_or_default() != spec_bytes {
        ck.fail(
            Invariant::GoalHashIntact,
            idx,
            "the spec file changed".into(),
        );
    }
}
