//! When the collector takes the next allocator sample (and, with it, the scheduler counters):
//! at the configured interval while something moves, and at up to [`QUIET_LONGEST`] while
//! nothing does. Each sample costs the collector a wake-up, and a wake-up is most of its cost
//! (~24 µs of CPU on an idle H200 host before any work, ~55 µs a cycle inside a GPU proof:
//! docs/BENCHMARKS.md): at 10 ms the collector took 0.4–0.7 % of a GPU proof's wall time (1 ×
//! SHA-256 2^20 on the H200 host), and through a GPU phase host memory does not move: every
//! sample there repeated the one before.
//!
//! What counts as moving: live bytes or RSS changed by [`QUIET_BYTES`] or more since the last
//! sample, a large block taken, or a span began or ended on a prover thread (a phase edge is
//! where a gap, and its scheduling evidence, begins or ends). Any of them brings the interval
//! back to the configured one; each still sample doubles it, up to the longest.
//!
//! The price: in a still spell the samples around a gap may lie up to [`QUIET_LONGEST`] outside
//! it (a span edge restores the short interval only once the collector has drained it), so a
//! gap's scheduling evidence is averaged over a wider window there than at 10 ms.

use std::time::{Duration, Instant};

/// The longest interval while nothing moves (the collector's idle wait, so a quiet spell costs
/// no more wake-ups than an idle session).
pub const QUIET_LONGEST: Duration = Duration::from_millis(50);

/// A change in live bytes or RSS below this is stillness: small allocations come and go in
/// every phase; a proof's vectors are megabytes to gigabytes.
pub const QUIET_BYTES: u64 = 1 << 20;

#[derive(Debug)]
pub(crate) struct Cadence {
    base: Duration,
    longest: Duration,
    every: Duration,
    /// The last sample: when, and live bytes and RSS then.
    last: Option<(Instant, u64, u64)>,
    /// Something moved since the last sample.
    stirred: bool,
}

impl Cadence {
    /// A cadence of `base` that stretches to [`QUIET_LONGEST`] (never below `base`).
    pub fn new(base: Duration) -> Cadence {
        Cadence {
            base,
            longest: base.max(QUIET_LONGEST),
            every: base,
            last: None,
            stirred: false,
        }
    }

    /// The interval now in effect.
    pub fn every(&self) -> Duration {
        self.every
    }

    /// Whether a sample is due at `now` (the first always is).
    pub fn due(&self, now: Instant) -> bool {
        self.until_due(now).is_zero()
    }

    /// Time from `now` until the next sample is due.
    pub fn until_due(&self, now: Instant) -> Duration {
        self.last.map_or(Duration::ZERO, |(t, ..)| {
            self.every.saturating_sub(now.saturating_duration_since(t))
        })
    }

    /// A span edge or a large block was taken: back to the configured interval.
    pub fn stir(&mut self) {
        self.stirred = true;
        self.every = self.base;
    }

    /// A sample was taken at `now`: sets the interval to the next one.
    pub fn sampled(&mut self, now: Instant, live: u64, rss: u64) {
        let still = self.last.is_some_and(|(_, l, r)| {
            !self.stirred && live.abs_diff(l) < QUIET_BYTES && rss.abs_diff(r) < QUIET_BYTES
        });
        self.every = if still {
            (self.every * 2).min(self.longest)
        } else {
            self.base
        };
        self.last = Some((now, live, rss));
        self.stirred = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const MB: u64 = 1 << 20;

    /// Samples every interval from `t`, memory at `live`, returning the intervals.
    fn run(c: &mut Cadence, t: &mut Instant, live: u64, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                *t += c.until_due(*t);
                assert!(c.due(*t));
                c.sampled(*t, live, 0);
                c.every().as_millis() as u64
            })
            .collect()
    }

    #[test]
    fn stillness_stretches_the_interval_to_the_longest_and_movement_resets_it() {
        let mut c = Cadence::new(10 * MS);
        let mut t = Instant::now();
        assert!(c.due(t), "the first sample is due at once");
        assert_eq!(run(&mut c, &mut t, 100 * MB, 6), [10, 20, 40, 50, 50, 50]);
        // Half a megabyte of churn is still stillness.
        assert_eq!(run(&mut c, &mut t, 100 * MB + MB / 2, 1), [50]);
        // A vector of a few megabytes arrives: back to 10 ms at once, then stretching again.
        assert_eq!(run(&mut c, &mut t, 104 * MB, 3), [10, 20, 40]);
        // ... and leaving counts as well.
        assert_eq!(run(&mut c, &mut t, 4 * MB, 1), [10]);
    }

    #[test]
    fn a_span_edge_or_a_block_resets_it_before_the_next_sample() {
        let mut c = Cadence::new(10 * MS);
        let mut t = Instant::now();
        run(&mut c, &mut t, MB, 5);
        assert_eq!(c.every(), 50 * MS);
        t += 5 * MS;
        assert_eq!(c.until_due(t), 45 * MS);
        c.stir();
        assert_eq!(c.until_due(t), 5 * MS, "due 10 ms after the last sample");
        // The stirred sample does not stretch, even with memory still.
        assert_eq!(run(&mut c, &mut t, MB, 2), [10, 20]);
    }

    #[test]
    fn an_interval_at_or_above_the_longest_never_changes() {
        let mut c = Cadence::new(200 * MS);
        let mut t = Instant::now();
        assert_eq!(run(&mut c, &mut t, MB, 3), [200, 200, 200]);
        let mut c = Cadence::new(50 * MS);
        assert_eq!(run(&mut c, &mut t, MB, 2), [50, 50]);
    }
}
