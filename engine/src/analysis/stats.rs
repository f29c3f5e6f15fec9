//! Per-phase statistics across completed proofs: count, p50, p95, max.

use crate::model::Model;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PhaseStats {
    pub name: String,
    pub count: usize,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Durations and start offsets (from the proof's start) of one span name.
#[derive(Default)]
struct Samples {
    durations: Vec<u64>,
    offsets: Vec<u64>,
    /// It was a proof's outer span.
    outer: bool,
}

/// Statistics of every outer span (the wrapper, e.g. `prove`) and of every direct child of one
/// (the phases), over completed proofs of every session: outer spans first, then phases in the
/// order they typically start (their median offset into the proof), then by name.
pub fn phase_stats(model: &Model) -> Vec<PhaseStats> {
    let mut by_name: BTreeMap<String, Samples> = BTreeMap::new();
    for s in model.sessions() {
        for p in s.proofs().filter(|p| p.done()) {
            let Some(outer) = p.outer() else { continue };
            for (sp, is_outer) in
                std::iter::once((outer, true)).chain(p.phases().map(|c| (c, false)))
            {
                let Some(e) = sp.end else { continue };
                let x = by_name.entry(s.name(sp.name).to_owned()).or_default();
                x.durations.push(e - sp.start);
                x.offsets.push(sp.start.saturating_sub(outer.start));
                x.outer |= is_outer;
            }
        }
    }
    let mut out: Vec<(bool, u64, PhaseStats)> = by_name
        .into_iter()
        .map(|(name, mut x)| {
            x.durations.sort_unstable();
            x.offsets.sort_unstable();
            let v = &x.durations;
            let stats = PhaseStats {
                count: v.len(),
                p50_ns: percentile(v, 50.0),
                p95_ns: percentile(v, 95.0),
                max_ns: *v.last().unwrap_or(&0),
                mean_ns: v.iter().sum::<u64>() / v.len().max(1) as u64,
                name,
            };
            (x.outer, percentile(&x.offsets, 50.0), stats)
        })
        .collect();
    out.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then_with(|| a.2.name.cmp(&b.2.name))
    });
    out.into_iter().map(|(_, _, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 95.0), 95);
        assert_eq!(percentile(&[7], 95.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }
}
