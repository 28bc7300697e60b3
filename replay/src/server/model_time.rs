//! The model time a run was served: how long each answer was held back on
//! purpose (its recorded latency times the scale, an injected latency, a
//! dripped body), as intervals from the request's arrival. The bench judges
//! a case-run's latency on this plus the harness's own CPU time, not on
//! wall time (docs/bench.md, "What a latency cap judges"): the server's
//! delays are the model's time, the rest is the harness's, and what a
//! loaded machine adds is neither.

use std::time::{Duration, Instant};

/// One answer's deliberate hold: from the request's arrival, for `took`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub at: Instant,
    pub took: Duration,
}

/// The time covered by at least one hold, each cut at `until` (when the
/// run's last process ended: a client that gave up on an answer, as a run
/// whose clock ran out does, waited only until then). Overlapping holds
/// (calls in flight together) count once: the model time is how long the
/// run was waiting on some answer, not the sum of the answers' delays.
pub fn covered(holds: &[Held], until: Instant) -> Duration {
    let mut spans: Vec<(Instant, Instant)> = holds
        .iter()
        .map(|h| (h.at, h.at.checked_add(h.took).unwrap_or(until).min(until)))
        .filter(|(a, b)| a < b)
        .collect();
    spans.sort();
    let mut total = Duration::ZERO;
    let mut open: Option<(Instant, Instant)> = None;
    for (a, b) in spans {
        open = match open {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((s, e)) = open {
        total += e - s;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn holds_count_once_where_they_overlap_and_end_when_the_run_ended() {
        let t0 = Instant::now();
        let h = |at: u64, took: u64| Held {
            at: t0 + ms(at),
            took: ms(took),
        };
        let end = t0 + ms(10_000);
        assert_eq!(covered(&[], end), Duration::ZERO);
        // Back to back, then a gap: 300 + 200.
        assert_eq!(covered(&[h(0, 300), h(300, 200)], end), ms(500));
        assert_eq!(covered(&[h(1000, 200), h(0, 300)], end), ms(500));
        // Two calls in flight together: the wait is 500, not 800.
        assert_eq!(covered(&[h(0, 500), h(100, 300)], end), ms(500));
        assert_eq!(covered(&[h(0, 400), h(200, 300)], end), ms(500));
        // A 5 s reply the run gave up on at 3 s: 3 s of model time.
        assert_eq!(covered(&[h(0, 5000)], t0 + ms(3000)), ms(3000));
        // A hold that starts after the end counts nothing.
        assert_eq!(covered(&[h(4000, 100)], t0 + ms(3000)), Duration::ZERO);
    }
}
