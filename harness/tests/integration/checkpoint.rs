//! A torn or corrupted checkpoint is refused, never resumed from: truncated
//! at every byte offset, and with random bit flips (proptest). Each refusal
//! is a named value the loop turns into UNRECOVERABLE_ERROR.

use harness::checkpoint::{decode, encode, load, save, Refusal};
use harness::state::RunState;
use proptest::prelude::*;

fn frame() -> (RunState, Vec<u8>) {
    let s = RunState::example(40);
    let b = encode(&s).unwrap();
    (s, b)
}

#[test]
fn whole_frame_round_trips() {
    let (s, b) = frame();
    assert_eq!(decode(&b, Some(&s.goal_sha256)).unwrap(), s);
}

#[test]
fn truncated_at_every_byte_offset_is_refused() {
    let (s, b) = frame();
    for cut in 0..b.len() {
        let r = decode(&b[..cut], Some(&s.goal_sha256));
        assert!(
            r.is_err(),
            "a checkpoint cut at byte {cut} of {} was accepted",
            b.len()
        );
    }
}

#[test]
fn goal_and_schema_mismatch_are_refused_by_name() {
    let (_, b) = frame();
    let other = harness::goal::sha256_hex("Improve observability of the search subsystem.");
    assert!(matches!(
        decode(&b, Some(&other)),
        Err(Refusal::GoalMismatch { .. })
    ));
    let text = String::from_utf8(b)
        .unwrap()
        .replacen("schema=1", "schema=2", 1);
    assert!(matches!(
        decode(text.as_bytes(), None),
        Err(Refusal::SchemaMismatch { found: 2, .. })
    ));
}

#[test]
fn a_body_that_breaks_invariants_is_refused_even_with_a_good_checksum() {
    // A body already wrong before serialization: the checksum cannot catch it,
    // the invariant check after reading does.
    let mut s = RunState::example(8);
    let dup = s.queue[0].clone();
    s.queue.push(dup);
    assert!(encode(&s).is_err(), "the writer refuses it first");
    let body = serde_json::to_string(&s).unwrap();
    use sha2::Digest;
    let frame = format!(
        "harness-checkpoint schema=1 len={} sha256={}\n{body}",
        body.len(),
        hex::encode(sha2::Sha256::digest(body.as_bytes()))
    );
    assert!(matches!(
        decode(frame.as_bytes(), None),
        Err(Refusal::BodyInvalid(_))
    ));
}

#[test]
fn save_then_load_and_temp_files_are_never_read() {
    let d = tempfile::tempdir().unwrap();
    let (s, b) = frame();
    save(d.path(), &s).unwrap();
    // A stray temp file full of garbage next to it changes nothing.
    std::fs::write(d.path().join(".checkpoint.json.tmp-1-1"), &b[..b.len() / 2]).unwrap();
    assert_eq!(load(d.path(), Some(&s.goal_sha256)).unwrap().unwrap(), s);
    // No checkpoint at all is a fresh run, not a refusal.
    assert_eq!(load(&d.path().join("nope"), None).unwrap(), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn random_bit_flips_are_refused(flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..6)) {
        let (s, b) = frame();
        let mut c = b.clone();
        for (i, bit) in &flips {
            let at = i.index(c.len());
            c[at] ^= 1 << bit;
        }
        prop_assume!(c != b);
        let r = decode(&c, Some(&s.goal_sha256));
        prop_assert!(r.is_err(), "bit flips {:?} were accepted", flips);
    }

    #[test]
    fn random_truncations_of_random_states_are_refused(n in 0usize..60, cut_frac in 0.0f64..1.0) {
        let s = RunState::example(n);
        let b = encode(&s).unwrap();
        let cut = ((b.len() as f64) * cut_frac) as usize;
        prop_assert!(decode(&b[..cut.min(b.len() - 1)], None).is_err());
    }
}
