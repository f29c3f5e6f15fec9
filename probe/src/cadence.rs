//! When the collector takes the next allocator sample (and, with it, the scheduler counters):
//! at the configured interval while memory does something new, at up to [`RAMP_LONGEST`] while
//! it keeps to a straight line, and at up to [`QUIET_LONGEST`] while it stands still. Each
//! sample costs the collector a wake-up, and a wake-up is most of its cost (~24 µs of CPU on an
//! idle H200 host before any work, ~55 µs a cycle inside a GPU proof: docs/BENCHMARKS.md): at
//! 10 ms the collector took 0.4–0.7 % of a GPU proof's wall time (1 × SHA-256 2^20 on the H200
//! host). Through a GPU phase host memory stands still, and through synthesis it mostly climbs
//! at a steady rate: in both, a sample at 10 ms told what the two before it already said.
//!
//! What counts as new: live bytes or RSS moved by [`QUIET_BYTES`] or more since the last sample
//! and off the line through the last two samples by as much, a large block taken, or a span
//! began or ended on a prover thread (a phase edge is where a gap, and its scheduling evidence,
//! begins or ends). Any of them brings the interval back to the configured one; each other
//! sample doubles it, up to [`RAMP_LONGEST`] while memory moves along the line and up to
//! [`QUIET_LONGEST`] while it stands still.
//!
//! Replayed on the allocator samples of the real sessions in `recordings/` (10 ms apart;
//! `python3 tools/cadence-replay.py`, docs/BENCHMARKS.md), this takes 12–32 % fewer samples
//! than stillness alone in the nine GPU sessions with a peak of a gibibyte or more (4 × 2^20
//! to 4 × 2^25), 4 % fewer in the small one, and none more in any of the sixteen; the
//! timeline drawn through them moves off the full one by at most 0.7 MiB more at the 99th
//! percentile in nine of the ten GPU sessions (6.2 MiB more in the tenth, of a 26.5 GiB peak).
//!
//! The price: in a still spell the samples around a gap may lie up to [`QUIET_LONGEST`] outside
//! it, on a ramp up to [`RAMP_LONGEST`] (a span edge restores the short interval only once the
//! collector has drained it), so a gap's scheduling evidence is averaged over a wider window
//! there than at 10 ms.

use std::time::{Duration, Instant};

/// The longest interval while nothing moves (the collector's idle wait, so a quiet spell costs
/// no more wake-ups than an idle session).
pub const QUIET_LONGEST: Duration = Duration::from_millis(50);

/// The longest interval while memory moves along a line. Longer intervals on a ramp let a
/// change of course go unseen for longer: replayed with 30 ms, the timeline's 99th-percentile
/// error in three ghost sessions grew from 0.6–6.6 MiB to 3.8–13.4; uncapped, to 11.8–123.
pub const RAMP_LONGEST: Duration = Duration::from_millis(20);

/// A change in live bytes or RSS below this is stillness: small allocations come and go in
/// every phase; a proof's vectors are megabytes to gigabytes.
pub const QUIET_BYTES: u64 = 1 << 20;

/// One allocator sample, as the cadence remembers it.
#[derive(Debug, Clone, Copy)]
struct Point {
    at: Instant,
    live: u64,
    rss: u64,
}

impl Point {
    /// Its live bytes and RSS, as a point a line passes through.
    fn values(&self) -> (f64, f64) {
        (self.live as f64, self.rss as f64)
    }

    /// Whether both its values lie within [`QUIET_BYTES`] of `expected`.
    fn near(&self, (live, rss): (f64, f64)) -> bool {
        let close =
            |value: u64, expected: f64| (value as f64 - expected).abs() < QUIET_BYTES as f64;
        close(self.live, live) && close(self.rss, rss)
    }

    /// Where the line from `self` through `next` is at `at` (`next` itself when they coincide).
    fn extend(&self, next: &Point, at: Instant) -> (f64, f64) {
        let run = next.at.saturating_duration_since(self.at).as_secs_f64();
        let ahead = at.saturating_duration_since(next.at).as_secs_f64();
        let k = if run > 0.0 { ahead / run } else { 0.0 };
        let on = |a: u64, b: u64| b as f64 + (b as f64 - a as f64) * k;
        (on(self.live, next.live), on(self.rss, next.rss))
    }
}

#[derive(Debug)]
pub(crate) struct Cadence {
    base: Duration,
    ramp_longest: Duration,
    longest: Duration,
    every: Duration,
    /// The last two samples, the latest second.
    before: Option<Point>,
    last: Option<Point>,
    /// Something moved since the last sample.
    stirred: bool,
}

impl Cadence {
    /// A cadence of `base` that stretches to [`RAMP_LONGEST`] on a line and to
    /// [`QUIET_LONGEST`] while still (never below `base`).
    pub fn new(base: Duration) -> Cadence {
        let longest = base.max(QUIET_LONGEST);
        Cadence {
            base,
            ramp_longest: base.max(RAMP_LONGEST).min(longest),
            longest,
            every: base,
            before: None,
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
        self.last.map_or(Duration::ZERO, |p| {
            self.every
                .saturating_sub(now.saturating_duration_since(p.at))
        })
    }

    /// A span edge or a large block was taken: back to the configured interval.
    pub fn stir(&mut self) {
        self.stirred = true;
        self.every = self.base;
    }

    /// A sample was taken at `now`: sets the interval to the next one.
    pub fn sampled(&mut self, now: Instant, live: u64, rss: u64) {
        let sample = Point { at: now, live, rss };
        self.every = if self.stirred {
            self.base
        } else {
            self.after(&sample)
        };
        self.before = self.last;
        self.last = Some(sample);
        self.stirred = false;
    }

    /// The interval after `sample`, nothing else having stirred: doubled while memory stands
    /// still or keeps to the line through the last two samples, the configured one when it
    /// does something new.
    fn after(&self, sample: &Point) -> Duration {
        let Some(last) = self.last else {
            return self.base;
        };
        let moving = !sample.near(last.values());
        // Still counts as well as the line: a vector arrived, and memory stays where it put it.
        let line = match &self.before {
            Some(before) => before.extend(&last, sample.at),
            None => last.values(),
        };
        if moving && !sample.near(line) {
            return self.base;
        }
        let longest = if moving {
            self.ramp_longest
        } else {
            self.longest
        };
        (self.every * 2).min(longest)
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

    /// Samples every interval from `t`, memory at `live(ms since start)`, returning the
    /// intervals.
    fn run_along(
        c: &mut Cadence,
        t: &mut Instant,
        start: Instant,
        live: impl Fn(u64) -> u64,
        n: usize,
    ) -> Vec<u64> {
        (0..n)
            .map(|_| {
                *t += c.until_due(*t);
                let ms = t.duration_since(start).as_millis() as u64;
                c.sampled(*t, live(ms), 0);
                c.every().as_millis() as u64
            })
            .collect()
    }

    #[test]
    fn a_steady_climb_stretches_to_the_ramp_longest_and_a_change_of_course_resets_it() {
        let mut c = Cadence::new(10 * MS);
        let start = Instant::now();
        let mut t = start;
        // Synthesis filling vectors: 1 MB a millisecond. The first interval after the climb
        // starts has no line yet; from then on every sample lies on it.
        let climb = |ms: u64| 100 * MB + ms * MB;
        assert_eq!(
            run_along(&mut c, &mut t, start, climb, 6),
            [10, 10, 20, 20, 20, 20]
        );
        // The climb stops at the last sample's height: off the line but still, stretching to 50.
        let top = climb(t.duration_since(start).as_millis() as u64);
        assert_eq!(run_along(&mut c, &mut t, start, |_| top, 3), [40, 50, 50]);
        // It turns down: off the line and moving, back to 10 ms; the next sample lies on the
        // line through the turn, 20.
        let now = t.duration_since(start).as_millis() as u64;
        let fall = |ms: u64| top - (ms - now) * MB;
        assert_eq!(run_along(&mut c, &mut t, start, fall, 4), [10, 20, 20, 20]);
        let top = fall(t.duration_since(start).as_millis() as u64);
        // A slope below a megabyte an interval is stillness, as before.
        let now = t.duration_since(start).as_millis() as u64;
        let creep = |ms: u64| top + (ms - now) * MB / 200;
        assert_eq!(run_along(&mut c, &mut t, start, creep, 3), [40, 50, 50]);
    }

    #[test]
    fn a_base_at_or_above_the_ramp_longest_does_not_stretch_on_a_climb() {
        let mut c = Cadence::new(25 * MS);
        let start = Instant::now();
        let mut t = start;
        let climb = |ms: u64| ms * MB;
        assert_eq!(run_along(&mut c, &mut t, start, climb, 4), [25, 25, 25, 25]);
    }

    #[test]
    fn an_interval_at_or_above_the_longest_never_changes() {
        let mut c = Cadence::new(200 * MS);
        let mut t = Instant::now();
        assert_eq!(run(&mut c, &mut t, MB, 3), [200, 200, 200]);
        let mut c = Cadence::new(50 * MS);
        assert_eq!(run(&mut c, &mut t, MB, 2), [50, 50]);
    }

    /// A recorded session's allocator samples (ns, live, RSS) and the times that stir the
    /// cadence (span edges, large blocks).
    fn recorded(name: &str) -> (Vec<(u64, u64, u64)>, Vec<u64>) {
        use probe_protocol::Event;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings")
            .join(name);
        let rec = probe_protocol::read_all(std::fs::File::open(&path).unwrap()).unwrap();
        let (mut samples, mut stirs) = (Vec::new(), Vec::new());
        for e in rec.frames.iter().flat_map(|f| &f.events) {
            match e {
                Event::AllocSample(a) => samples.push((a.ts, a.live_bytes, a.rss_bytes)),
                Event::SpanBegin(b) => stirs.push(b.ts),
                Event::SpanEnd(b) => stirs.push(b.ts),
                Event::Alloc(b) | Event::Release(b) => stirs.push(b.ts),
                _ => {}
            }
        }
        stirs.sort_unstable();
        (samples, stirs)
    }

    /// Replays the cadence on samples taken every 10 ms: at each due time it takes the latest
    /// recorded sample, stirred by what happened since the last one taken (as the collector
    /// drains it at that wake-up). The samples taken.
    fn replay(samples: &[(u64, u64, u64)], stirs: &[u64], mut c: Cadence) -> Vec<(u64, u64, u64)> {
        let t0 = Instant::now();
        let at = |ns: u64| t0 + Duration::from_nanos(ns);
        let mut taken = vec![samples[0]];
        c.sampled(at(samples[0].0), samples[0].1, samples[0].2);
        let mut due = samples[0].0;
        loop {
            due += c.until_due(at(due)).as_nanos() as u64;
            let Some(i) = samples.partition_point(|s| s.0 <= due).checked_sub(1) else {
                break;
            };
            if due > samples[samples.len() - 1].0 {
                break;
            }
            let last = taken[taken.len() - 1].0;
            let from = stirs.partition_point(|&t| t <= last);
            if stirs.get(from).is_some_and(|&t| t <= due) {
                c.stir();
            }
            let s = samples[i];
            if s.0 != last {
                taken.push(s);
            }
            c.sampled(at(due), s.1, s.2);
        }
        taken
    }

    /// The 99th percentile of how far the live-bytes line drawn through `taken` lies from
    /// every sample, bytes.
    fn p99_error(all: &[(u64, u64, u64)], taken: &[(u64, u64, u64)]) -> u64 {
        let mut errs: Vec<u64> = all
            .iter()
            .filter_map(|s| {
                let j = taken.partition_point(|t| t.0 <= s.0).checked_sub(1)?;
                let (a, b) = (taken[j], *taken.get(j + 1)?);
                let k = (s.0 - a.0) as f64 / (b.0 - a.0).max(1) as f64;
                let drawn = a.1 as f64 + (b.1 as f64 - a.1 as f64) * k;
                Some((drawn - s.1 as f64).abs() as u64)
            })
            .collect();
        errs.sort_unstable();
        errs.get(errs.len() * 99 / 100).copied().unwrap_or(0)
    }

    /// The module's claim, on real sessions (tools/cadence-replay.py mirrors the rule for the
    /// whole table): against stillness alone — this cadence with a ramp's longest interval
    /// equal to the base, so that a sample on the line brings the base back like any move — a
    /// GPU session of 4 × 2^20 takes a fifth fewer samples and its timeline stays as close,
    /// and a CPU session takes no more.
    #[test]
    #[cfg_attr(miri, ignore = "decodes whole recordings")]
    fn on_recorded_sessions_the_line_takes_fewer_samples_and_draws_the_same_timeline() {
        for (name, at_most) in [
            ("h200-multi-gpu.psrec", 0.8),
            ("cpu-sha256-sync.psrec", 1.0),
        ] {
            let (all, stirs) = recorded(name);
            let line = replay(&all, &stirs, Cadence::new(10 * MS));
            let mut still = Cadence::new(10 * MS);
            still.ramp_longest = 10 * MS;
            let still = replay(&all, &stirs, still);
            let ratio = line.len() as f64 / still.len() as f64;
            assert!(
                ratio <= at_most,
                "{name}: {} samples against {} with stillness alone",
                line.len(),
                still.len()
            );
            let (e_line, e_still) = (p99_error(&all, &line), p99_error(&all, &still));
            assert!(
                e_line <= e_still + MB,
                "{name}: p99 error {e_line} B against {e_still} B"
            );
        }
    }
}
