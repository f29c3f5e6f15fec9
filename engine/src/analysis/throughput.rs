//! Proofs per minute over a session's completed proofs, and how much they overlapped: one
//! definition for the report, the live header and `diff`.

use crate::model::Session;
use serde::Serialize;

/// Proofs per minute over a session's completed proofs, and how much they overlapped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    pub proofs: u64,
    /// From the first proof's end to the last one's (a single proof: its own span).
    pub window_ns: u64,
    /// Proofs completed per minute once the first has: (proofs − 1) over the window, the rate
    /// a pipeline keeps once full (the live header's figure); a single proof: one over its span.
    pub per_minute: f64,
    /// From the first proof's start to the last one's end.
    pub run_ns: u64,
    /// Proofs over `run_ns`: the rate of a run this short, pipeline fill included (a pipeline's
    /// first proof completes late, which flatters `per_minute` over few proofs).
    pub per_minute_run: f64,
    /// Proofs whose outer span overlapped another proof's.
    pub overlapping: u64,
    /// The most outer spans open at once.
    pub most_in_flight: u32,
}

/// The throughput of proofs with outer spans `[start, end)`; `None` without a proof.
pub fn throughput(spans: &[(u64, u64)]) -> Option<Throughput> {
    let first_end = spans.iter().map(|x| x.1).min()?;
    let last_end = spans.iter().map(|x| x.1).max()?;
    let first_start = spans.iter().map(|x| x.0).min()?;
    let run_ns = last_end.saturating_sub(first_start);
    let (window_ns, intervals) = if spans.len() == 1 {
        (spans[0].1.saturating_sub(spans[0].0), 1)
    } else {
        (last_end - first_end, spans.len() - 1)
    };
    let overlapping = spans
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            spans
                .iter()
                .enumerate()
                .any(|(j, b)| *i != j && a.0 < b.1 && b.0 < a.1)
        })
        .count() as u64;
    // Sweep: +1 at each start, −1 at each end (ends first at equal times).
    let mut edges: Vec<(u64, i32)> = spans.iter().flat_map(|x| [(x.0, 1), (x.1, -1)]).collect();
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        open += d;
        most = most.max(open);
    }
    Some(Throughput {
        proofs: spans.len() as u64,
        window_ns,
        per_minute: if window_ns > 0 {
            intervals as f64 * 60e9 / window_ns as f64
        } else {
            0.0
        },
        run_ns,
        per_minute_run: if run_ns > 0 {
            spans.len() as f64 * 60e9 / run_ns as f64
        } else {
            0.0
        },
        overlapping,
        most_in_flight: most.max(0) as u32,
    })
}

/// The throughput of the session's completed proofs; `None` before one completes.
pub fn session_throughput(s: &Session) -> Option<Throughput> {
    let outer: Vec<(u64, u64)> = s
        .proofs()
        .filter(|p| p.done())
        .filter_map(|p| p.outer().map(|o| (o.start, o.end_or(s.now()))))
        .collect();
    throughput(&outer)
}
