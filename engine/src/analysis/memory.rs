//! Memory over a stretch of a session (a phase), from the allocator's and NVML's samples.

use crate::model::Session;
use serde::Serialize;

/// Memory over one phase, from the allocator and NVML samples taken during it (every 10 ms
/// and 100 ms by default, so a phase shorter than that may have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseMemory {
    /// Heap bytes live (counting allocator) at the last sample before the phase began.
    pub live_before: Option<u64>,
    /// The most heap bytes live at any sample during the phase or the one just before it.
    pub live_max: u64,
    /// Heap bytes live at the last sample during the phase.
    pub live_end: u64,
    /// The largest resident set seen during the phase (0: unknown).
    pub rss_max: u64,
    /// The most device memory used on any GPU during the phase.
    pub gpu_used_max: Option<u64>,
}

/// What the samples say about memory in [start, end).
pub fn phase_memory(s: &Session, start: u64, end: u64) -> Option<PhaseMemory> {
    let end = end.max(start + 1);
    let during = s.alloc_samples().range(start, end);
    let last = during.last()?;
    let gpu_used_max = s
        .gpu_samples()
        .values()
        .flat_map(|g| g.range(start, end))
        .filter_map(|g| g.mem_used_bytes)
        .max();
    let live_before = s
        .alloc_samples()
        .at(start.saturating_sub(1))
        .map(|a| a.live_bytes);
    let live_max = during.iter().map(|a| a.live_bytes).max().unwrap_or(0);
    Some(PhaseMemory {
        live_before,
        live_max: live_max.max(live_before.unwrap_or(0)),
        live_end: last.live_bytes,
        rss_max: during.iter().map(|a| a.rss_bytes).max().unwrap_or(0),
        gpu_used_max,
    })
}
