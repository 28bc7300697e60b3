//! What the driver does to a trial's disk between processes: a power cut
//! (the post-crash image of the operation log), bit rot in a committed
//! checkpoint, a damaged ledger journal, and a decoy temp file.

use super::check::Checks;
use super::observe::Paths;
use super::plan::{mix, IoSite, JournalDamage, TrialPlan};
use crate::bitrot::{self, RotKind};
use crate::cases::Case;
use crate::fsmodel::{self, CrashPolicy, Model, Snapshot};
use crate::invariant::Invariant;
use crate::oracle::Ckpt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

pub const DECOY_RUN_ID: &str = "chaos-decoy-temp-file";
const DECOY_NAME: &str = ".checkpoint.json.tmp-0-chaos";

/// Leave the disk as a power cut right after `ops` would have (the crash
/// policy drawn from the trial's seed and the process index).
///
/// After the fault of an in-doubt trial ([`IoSite::InDoubtAtEnd`]: the
/// directory fsync that makes a workspace write durable failed) the cut
/// drops everything not made durable: the write in doubt is lost, which is
/// the one outcome that tells a verdict standing on it from an honest one.
/// A drawn policy kept it in about half the trials (KeepAll, or Random
/// keeping the rename), so a harness that verified on a failed write was
/// caught at some seeds' 200 kills and not at others (issue 47).
pub(super) fn power_cut(
    snap: Snapshot,
    ops: &[fsmodel::Op],
    plan: &TrialPlan,
    idx: usize,
) -> std::io::Result<()> {
    let mut m = Model::new(snap);
    m.replay(ops);
    let mut crng = ChaCha8Rng::seed_from_u64(mix(plan.rng_seed ^ mix(idx as u64 + 77)));
    let drawn = CrashPolicy::draw(&mut crng);
    let in_doubt = plan.io_site == Some(IoSite::InDoubtAtEnd)
        && ops.iter().any(|o| matches!(o, fsmodel::Op::Fault { .. }));
    let policy = if in_doubt {
        CrashPolicy::DropAll
    } else {
        drawn
    };
    m.crash(policy, &mut crng).apply()
}

/// The bit-rot stratum: rot the committed checkpoint on disk (if there is a
/// whole, valid one) before process `idx` starts. Returns the rot's label.
pub(super) fn rot_checkpoint(
    ck: &mut Checks,
    p: &Paths,
    case: &Case,
    kind: RotKind,
    plan: &TrialPlan,
    idx: usize,
) -> Option<String> {
    let Ckpt::Valid(_, bytes) = Ckpt::read(&p.state, &case.goal_sha256) else {
        return None;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(mix(plan.rng_seed ^ 0xB17_0507));
    let (rotted, rot) = bitrot::rot(&bytes, kind, &case.goal_sha256, &mut rng)?;
    let path = harness::checkpoint::path_in(&p.state);
    if let Err(e) = std::fs::write(&path, &rotted) {
        ck.fail(
            Invariant::NoTornCheckpoint,
            idx,
            format!("bench: cannot write the rotted checkpoint: {e}"),
        );
        return None;
    }
    // The oracle's own reading must see the rot as the checksum does: the
    // check on the resume (a refusal naming checkpoint_checksum_mismatch)
    // rests on it.
    match Ckpt::read(&p.state, &case.goal_sha256) {
        Ckpt::Invalid(k, _) if k == "checksum_mismatch" => {}
        other => ck.fail(
            Invariant::NoTornCheckpoint,
            idx,
            format!(
                "bench: a rotted checkpoint (same length, body bytes at {:?} changed) does not read as a checksum mismatch: {:?}",
                rot.offsets,
                match other {
                    Ckpt::Invalid(k, _) => k,
                    Ckpt::Valid(..) => "valid".into(),
                    Ckpt::Absent => "absent".into(),
                }
            ),
        ),
    }
    Some(rot.label())
}

/// The journal-damage stratum: damage `ledger.jsonl` in the state dir, if it
/// has a complete line. Returns what the journal had committed before.
pub(super) fn damage_journal(
    state: &Path,
    kind: JournalDamage,
    rng: &mut ChaCha8Rng,
) -> Option<f64> {
    let path = state.join("ledger.jsonl");
    let bytes = std::fs::read(&path).ok()?;
    let complete = bytes.iter().rposition(|&b| b == b'\n')? + 1;
    let before = crate::oracle::Journal::read(&path).committed();
    // Start of the last complete line.
    let last_start = bytes[..complete - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let damaged: Vec<u8> = match kind {
        JournalDamage::TornLastLine => {
            // Keep at least one byte of it, never its newline.
            let len = complete - 1 - last_start;
            let keep = rng.gen_range(1..=len.max(1));
            bytes[..last_start + keep.min(len)].to_vec()
        }
        JournalDamage::GarbageLine => {
            let mut v = bytes[..last_start].to_vec();
            v.extend_from_slice(b"\x00\x00{\"op\":\"rec\xffrd\",\"seq\":\n");
            v.extend_from_slice(&bytes[last_start..]);
            v
        }
    };
    std::fs::write(&path, damaged).ok()?;
    Some(before)
}

pub(super) fn plant_decoy(state: &Path, goal_sha: &str) {
    let mut s = harness::state::RunState::new(DECOY_RUN_ID.into(), goal_sha.into(), 0);
    s.planned = true;
    if let Ok(b) = harness::checkpoint::encode(&s) {
        let _ = std::fs::write(state.join(DECOY_NAME), b);
    }
}
