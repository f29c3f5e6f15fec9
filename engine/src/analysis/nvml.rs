//! Where an NVML utilisation reading belongs on the time axis. NVML reports "the percent of
//! time over the past sample period during which a kernel ran" (a driver-chosen period of
//! 1/6 s to 1 s), so a reading read at `ts` speaks for time before `ts`, not for `ts`. Drawn
//! or averaged at its read time, a short proof's own kernels show in the next proof's
//! synthesis (h200-multi-gpu, proof 2: "busy 10 %" with the hump during synthesis).
//!
//! The window used, from the probe's sample period p: `[ts − 3p, ts − p/2]`. Measured on
//! `recordings/h200-multi-gpu.psrec` (p = 100 ms, 44 readings per GPU against 128 GPU spans):
//! the correlation of a reading with the GPU spans' busy share over a window is 0.14 and 0.64
//! (gpu0, gpu1) for the 100 ms before the read, 0.74 and 0.83 for this one, and falls off
//! beyond 300 ms. One rule for every view, the report and the diagnosis.

use super::Interval;
use crate::model::Session;

/// The probe's GPU sample period when the session does not say (its default).
const DEFAULT_PERIOD_NS: u64 = 100_000_000;

/// The session's GPU sample period.
pub fn period(session: &Session) -> u64 {
    session
        .hello()
        .map_or(DEFAULT_PERIOD_NS, |h| h.gpu_sample_interval_ns)
        .max(1)
}

/// The time a reading read at `ts` speaks for.
pub fn window(ts: u64, period: u64) -> Interval {
    Interval::new(
        ts.saturating_sub(period.saturating_mul(3)),
        ts.saturating_sub(period / 2),
    )
}

/// The readings of `device` whose windows overlap `range`: (window, utilisation %).
pub fn readings(session: &Session, device: u32, range: Interval) -> Vec<(Interval, u8)> {
    let Some(series) = session.gpu_samples().get(&device) else {
        return Vec::new();
    };
    let p = period(session);
    let (from, to) = (range.start + p / 2, range.end.saturating_add(3 * p) + 1);
    series
        .range(from, to)
        .iter()
        .filter_map(|s| Some((window(s.ts, p), s.util_pct?)))
        .filter(|(w, _)| w.overlap(&range) > 0)
        .collect()
}

/// NVML's utilisation over `range`: the readings' mean, each weighted by how much of its
/// window lies in the range; `None` without a reading there.
pub fn mean_util(session: &Session, device: u32, range: Interval) -> Option<f64> {
    weighted(&readings(session, device, range), range)
}

/// [`mean_util`] over every device with readings in `range` (each device's mean, averaged).
pub fn mean_util_any(session: &Session, range: Interval) -> Option<f64> {
    let per: Vec<f64> = session
        .gpu_samples()
        .keys()
        .filter_map(|d| mean_util(session, *d, range))
        .collect();
    (!per.is_empty()).then(|| per.iter().sum::<f64>() / per.len() as f64)
}

fn weighted(readings: &[(Interval, u8)], range: Interval) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (w, u) in readings {
        let ov = w.overlap(&range) as f64;
        sum += ov * f64::from(*u);
        weight += ov;
    }
    (weight > 0.0).then(|| sum / weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_reading_speaks_for_the_time_before_it() {
        let w = window(1000 * MS, 100 * MS);
        assert_eq!((w.start, w.end), (700 * MS, 950 * MS));
        // A busy reading at 1.0 s and an idle one at 1.3 s: the time 0.75–0.9 s was busy.
        let r = vec![
            (window(1000 * MS, 100 * MS), 90),
            (window(1300 * MS, 100 * MS), 0),
        ];
        let early = Interval::new(750 * MS, 900 * MS);
        let late = Interval::new(1200 * MS, 1250 * MS);
        assert!(weighted(&r, early).unwrap() > 60.0);
        assert_eq!(weighted(&r, late), Some(0.0));
        assert_eq!(weighted(&r, Interval::new(2000 * MS, 2100 * MS)), None);
    }
}
