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

/// Statistics of every direct child of the outer span (the phases) and of the outer span
/// itself (`prove`), over completed proofs of every session, in pipeline order.
pub fn phase_stats(model: &Model) -> Vec<PhaseStats> {
    let mut by_name: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in &model.sessions {
        for p in s.proofs.values().filter(|p| p.done()) {
            let Some(outer) = p.outer() else { continue };
            if let Some(e) = outer.end {
                by_name
                    .entry(s.name(outer.name).to_owned())
                    .or_default()
                    .push(e - outer.start);
            }
            for c in p.children(outer.id) {
                if let Some(e) = c.end {
                    by_name
                        .entry(s.name(c.name).to_owned())
                        .or_default()
                        .push(e - c.start);
                }
            }
        }
    }
    let mut out: Vec<PhaseStats> = by_name
        .into_iter()
        .map(|(name, mut v)| {
            v.sort_unstable();
            PhaseStats {
                count: v.len(),
                p50_ns: percentile(&v, 50.0),
                p95_ns: percentile(&v, 95.0),
                max_ns: *v.last().unwrap_or(&0),
                mean_ns: v.iter().sum::<u64>() / v.len().max(1) as u64,
                name,
            }
        })
        .collect();
    out.sort_by_key(|s| {
        let outer_first = s.name != "prove";
        (outer_first, super::phase_order(&s.name))
    });
    out
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
