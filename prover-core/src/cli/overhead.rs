//! `prover bench --probe-overhead`: what the probe costs a real proof, measured as a user would
//! read it. Pairs of runs prove the same batch with the probe on (configured from the
//! environment, as `serve` would) and off; consecutive pairs swap their order (ABBA: off-on,
//! on-off, off-on, …), so neither side gains from its place in the run order (warm caches,
//! thermal drift, a neighbour's load). Each pair gives one relative difference; the report is
//! their median with a bootstrap 95 % interval.
//!
//! On a noisy machine one invocation's interval understates how far its median moves between
//! invocations (docs/BENCHMARKS.md), and one device command may run only minutes; so the pair
//! lines a run prints can be read back and pooled ([`Pairs::parse`]).

use rand::Rng;
use std::time::Duration;

/// A saved output's `pair` line that does not read as one.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: not a pair line ({why}): {text:?}")]
pub struct PairLineError {
    pub line: usize,
    pub why: &'static str,
    pub text: String,
}

/// Which side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Off,
    On,
}

/// The order of pair `k`: ABBA.
pub fn order(k: usize) -> [Side; 2] {
    if k.is_multiple_of(2) {
        [Side::Off, Side::On]
    } else {
        [Side::On, Side::Off]
    }
}

/// Median (the mean of the two middle values for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// Percentile bootstrap interval (`level`, e.g. 0.95) of the median of `v`, from `resamples`
/// resamples drawn with `rng`.
pub fn bootstrap_median(v: &[f64], level: f64, resamples: usize, rng: &mut impl Rng) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut meds: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            let s: Vec<f64> = (0..v.len()).map(|_| v[rng.gen_range(0..v.len())]).collect();
            median(&s).unwrap_or(f64::NAN)
        })
        .collect();
    meds.sort_by(f64::total_cmp);
    let at = |q: f64| meds[((q * (meds.len() - 1) as f64).round() as usize).min(meds.len() - 1)];
    let tail = (1.0 - level) / 2.0;
    (at(tail), at(1.0 - tail))
}

/// The pairs measured so far, and what they say.
#[derive(Debug, Default)]
pub struct Pairs {
    pub off: Vec<Duration>,
    pub on: Vec<Duration>,
    /// Per pair: on / off − 1, from the unrounded times.
    diffs: Vec<f64>,
}

impl Pairs {
    pub fn push(&mut self, off: Duration, on: Duration) {
        self.off.push(off);
        self.on.push(on);
        self.diffs.push(on.as_secs_f64() / off.as_secs_f64() - 1.0);
    }

    /// Per pair: on / off − 1.
    pub fn differences(&self) -> Vec<f64> {
        self.diffs.clone()
    }

    /// The pairs in a saved output of `--probe-overhead` (the `pair N (…): off X s, on Y s,
    /// D %` lines; every other line is skipped). The difference is taken from the printed
    /// percentage, which was computed from the unrounded times: at 0.17 s a run, the
    /// millisecond rounding of the printed times alone would move a pair by up to 0.6 %.
    /// Nothing is added when any pair line is bad.
    pub fn parse(&mut self, text: &str) -> Result<usize, PairLineError> {
        let mut got = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if !l.starts_with("pair ") {
                continue;
            }
            let bad = |why| PairLineError {
                line: i + 1,
                why,
                text: l.to_owned(),
            };
            let (_, rest) = l
                .split_once("): off ")
                .ok_or_else(|| bad("no \"): off\""))?;
            let (off, rest) = rest
                .split_once(" s, on ")
                .ok_or_else(|| bad("no \"s, on\""))?;
            let (on, rest) = rest.split_once(" s, ").ok_or_else(|| bad("no on time"))?;
            let pct = rest
                .strip_suffix(" %")
                .ok_or_else(|| bad("no percentage"))?;
            let secs = |t: &str, why| {
                t.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| bad(why))
            };
            let (off, on) = (secs(off, "off time")?, secs(on, "on time")?);
            let d: f64 = pct
                .trim()
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| bad("percentage"))?;
            got.push((off, on, d / 100.0));
        }
        for &(off, on, d) in &got {
            self.off.push(Duration::from_secs_f64(off));
            self.on.push(Duration::from_secs_f64(on));
            self.diffs.push(d);
        }
        Ok(got.len())
    }

    /// The summary lines: medians of each side, the median difference and its interval.
    pub fn report(&self, rng: &mut impl Rng) -> String {
        let secs = |v: &[Duration]| v.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
        let d = self.differences();
        let (lo, hi) = bootstrap_median(&d, 0.95, 10_000, rng);
        let pct = |x: f64| format!("{:+.2} %", x * 100.0);
        format!(
            "pairs:      {} (ABBA order)\n\
             probe off:  {:.3} s (median)\n\
             probe on:   {:.3} s (median)\n\
             overhead:   {} median of the pairs' differences, 95 % bootstrap interval [{}, {}]\n",
            d.len(),
            median(&secs(&self.off)).unwrap_or(f64::NAN),
            median(&secs(&self.on)).unwrap_or(f64::NAN),
            pct(median(&d).unwrap_or(f64::NAN)),
            pct(lo),
            pct(hi),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn abba_alternates_and_medians_are_medians() {
        assert_eq!(order(0), [Side::Off, Side::On]);
        assert_eq!(order(1), [Side::On, Side::Off]);
        assert_eq!(order(2), order(0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn the_interval_holds_the_median_and_narrows_with_agreement() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let noisy: Vec<f64> = (0..15).map(|i| (i as f64 - 7.0) / 100.0).collect();
        let (lo, hi) = bootstrap_median(&noisy, 0.95, 2000, &mut rng);
        assert!(lo <= 0.0 && 0.0 <= hi, "[{lo}, {hi}]");
        assert!(hi - lo > 0.02);
        let tight = vec![0.01; 15];
        assert_eq!(bootstrap_median(&tight, 0.95, 2000, &mut rng), (0.01, 0.01));
    }

    #[test]
    fn saved_pair_lines_pool_with_their_printed_differences() {
        let text = "bench: 1 × sha256 2^15\n\
                    warm-up: off 0.208 s, on 0.197 s (not counted)\n\
                    pair   1 (off, on): off 0.173 s, on 0.175 s, +1.27 %\n\
                    pair   2 (on, off): off 0.180 s, on 0.171 s, -5.01 %\n\
                    pairs:      2 (ABBA order)\n";
        let mut p = Pairs::default();
        assert_eq!(p.parse(text).unwrap(), 2);
        assert_eq!(
            p.parse("pair   3 (off, on): off 0.2 s, on 0.2 s, +0.00 %")
                .unwrap(),
            1
        );
        let d = p.differences();
        assert_eq!(d.len(), 3);
        assert!((d[0] - 0.0127).abs() < 1e-12 && (d[1] + 0.0501).abs() < 1e-12);
        assert_eq!(p.off[1], Duration::from_millis(180));
        let err = p
            .parse("pair 4 (off, on): off 0.2 s, on 0.2 s, +1.00 %\npair 5 (on, off): off 0.2 s, on 0.2 s, +1.0")
            .unwrap_err();
        assert_eq!((err.line, err.why), (2, "no percentage"));
        let err = p
            .parse("pair 5 (off, on): off -1 s, on 0.2 s, +1.00 %")
            .unwrap_err();
        assert_eq!(err.why, "off time");
        assert_eq!(
            p.differences().len(),
            3,
            "a text with a bad line adds nothing"
        );
    }

    #[test]
    fn differences_are_on_over_off() {
        let mut p = Pairs::default();
        p.push(Duration::from_millis(100), Duration::from_millis(101));
        p.push(Duration::from_millis(200), Duration::from_millis(198));
        let d = p.differences();
        assert!((d[0] - 0.01).abs() < 1e-9 && (d[1] + 0.01).abs() < 1e-9);
    }
}
