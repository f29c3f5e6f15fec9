//! When this process held a CUDA context on each device, from the probe's `GpuProcess` events
//! (NVML's process list, protocol 1.6): how a prover that times nothing on its GPU — an
//! unmodified one under the preload — is known to be on it, and over which window. Kept as
//! intervals, bounded: past [`MAX_INTERVALS`] a device's oldest two are merged (the window
//! they cover stays covered).

use probe_protocol::GpuProcess;
use std::collections::BTreeMap;

/// Intervals kept per device.
pub const MAX_INTERVALS: usize = 1024;

/// One stretch of a held context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub start: u64,
    /// `None`: still held at the latest event.
    pub end: Option<u64>,
    /// The most device memory the driver counted for the process meanwhile.
    pub max_used_bytes: Option<u64>,
}

#[derive(Debug, Default, Clone)]
pub struct GpuContexts {
    by_device: BTreeMap<u32, Vec<Held>>,
}

impl GpuContexts {
    /// Applies one event (events of one device arrive in order: the collector sends them).
    pub fn apply(&mut self, p: &GpuProcess) {
        let held = self.by_device.entry(p.device).or_default();
        let open = held.last_mut().filter(|h| h.end.is_none());
        match (open, p.context) {
            (Some(h), true) => h.max_used_bytes = h.max_used_bytes.max(p.used_bytes),
            (Some(h), false) => h.end = Some(p.ts.max(h.start)),
            (None, true) => held.push(Held {
                start: p.ts,
                end: None,
                max_used_bytes: p.used_bytes,
            }),
            (None, false) => {}
        }
        if held.len() > MAX_INTERVALS {
            let second = held.remove(1);
            let first = &mut held[0];
            first.end = second.end;
            first.max_used_bytes = first.max_used_bytes.max(second.max_used_bytes);
        }
    }

    /// The devices on which the process held a context during any part of `[from, to]`, with
    /// the most memory counted for it then.
    pub fn during(&self, from: u64, to: u64) -> Vec<(u32, Option<u64>)> {
        self.by_device
            .iter()
            .filter_map(|(&d, held)| {
                let mut hit = held
                    .iter()
                    .filter(|h| h.start <= to && h.end.is_none_or(|e| e >= from))
                    .peekable();
                hit.peek()?;
                Some((d, hit.filter_map(|h| h.max_used_bytes).max()))
            })
            .collect()
    }

    /// Whether the process ever held a context.
    pub fn any(&self) -> bool {
        self.by_device.values().any(|h| !h.is_empty())
    }

    /// Devices it held a context on, in order.
    pub fn devices(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_device
            .iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, device: u32, context: bool, used: Option<u64>) -> GpuProcess {
        GpuProcess {
            ts,
            device,
            context,
            used_bytes: used,
        }
    }

    #[test]
    fn held_windows_answer_overlap_queries() {
        let mut c = GpuContexts::default();
        assert!(!c.any());
        c.apply(&ev(100, 0, true, Some(10)));
        c.apply(&ev(150, 0, true, Some(30)));
        c.apply(&ev(200, 0, false, None));
        c.apply(&ev(300, 1, true, None));
        assert_eq!(c.during(0, 99), vec![]);
        assert_eq!(c.during(120, 130), vec![(0, Some(30))]);
        assert_eq!(c.during(201, 299), vec![]);
        // Device 1 is still held: any later window meets it.
        assert_eq!(c.during(1_000, 2_000), vec![(1, None)]);
        assert_eq!(c.devices().collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn intervals_stay_bounded_and_the_window_covered() {
        let mut c = GpuContexts::default();
        for i in 0..(MAX_INTERVALS as u64 + 10) {
            c.apply(&ev(i * 10, 0, true, Some(i)));
            c.apply(&ev(i * 10 + 5, 0, false, None));
        }
        assert_eq!(c.by_device[&0].len(), MAX_INTERVALS);
        assert_eq!(c.by_device[&0][0].start, 0);
        // What the merges covered is still covered.
        assert_eq!(c.during(7, 8).len(), 1);
    }
}
