//! Nearest-match helpers for miss messages: a miss names the recording
//! closest to what was asked for.

/// Levenshtein distance over chars (the `strsim` crate, already in the
/// tree through clap), inputs capped at 256 chars so a hostile header
/// cannot make a miss expensive.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let cap = |s: &str| -> String { s.chars().take(256).collect() };
    strsim::levenshtein(&cap(a), &cap(b))
}

/// The candidate closest to `target` (ties broken alphabetically, so the
/// message is deterministic).
pub fn nearest<'a>(target: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(target, c), c))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_and_nearest() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            nearest(
                "plan/1",
                ["plan/0", "judge/1", "execute/t1/a0/0"].into_iter()
            ),
            Some("plan/0")
        );
    }
}
