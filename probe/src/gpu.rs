//! GPU work on the session clock. The probe has no CUDA dependency: the caller times its
//! device work with its own events and hands over the results. A device timeline starts with
//! an *anchor*: an event recorded on a stream and waited for, whose completion the host saw at
//! session time `anchor_ns`; every later event is timed as milliseconds elapsed since the
//! anchor (what `cuEventElapsedTime` / `cudaEventElapsedTime` return), and [`DeviceClock`]
//! turns those into session nanoseconds.

use crate::names;
use crate::session::{self, SlowEvent};
use crate::span::SpanHandle;
use crate::state;
use probe_protocol::Event;

/// Converts device-event times (ms since an anchor) to session nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceClock {
    anchor_ns: u64,
}

impl DeviceClock {
    /// Anchored now: call right after the anchor event completed (e.g. after waiting for it).
    /// Without a session, the anchor is CLOCK_MONOTONIC, so timings still order correctly.
    pub fn anchor_now() -> DeviceClock {
        DeviceClock {
            anchor_ns: session_or_monotonic_ns(),
        }
    }

    /// Anchored at a known session time.
    pub fn at(anchor_ns: u64) -> DeviceClock {
        DeviceClock { anchor_ns }
    }

    pub fn anchor_ns(&self) -> u64 {
        self.anchor_ns
    }

    /// Session time of an event `elapsed_ms` after the anchor (events before it clamp to it).
    pub fn to_session_ns(&self, elapsed_ms: f32) -> u64 {
        let ns = f64::from(elapsed_ms) * 1e6;
        if ns.is_finite() && ns > 0.0 {
            self.anchor_ns.saturating_add(ns as u64)
        } else {
            self.anchor_ns
        }
    }

    /// Session times of an operation between two events; the end never precedes the start.
    pub fn span_ns(&self, start_ms: f32, end_ms: f32) -> (u64, u64) {
        let start = self.to_session_ns(start_ms);
        (start, self.to_session_ns(end_ms).max(start))
    }
}

/// Session nanoseconds now, or CLOCK_MONOTONIC when no session runs.
fn session_or_monotonic_ns() -> u64 {
    match session::current() {
        Some(s) if state::enabled() => s.clock.now_ns(),
        _ => crate::clock::monotonic_ns(),
    }
}

/// Reports GPU work already converted to session time (slow path, off the GPU's hot loop).
/// `parent` is the span that launched it.
pub fn gpu_span(
    device: u32,
    stream: u32,
    name: &str,
    start_ns: u64,
    end_ns: u64,
    parent: SpanHandle,
) {
    if !state::enabled() {
        return;
    }
    if let Some(session) = session::current() {
        session.slow.push(SlowEvent::Session(Event::GpuSpan(
            probe_protocol::GpuSpan {
                start: start_ns,
                end: end_ns.max(start_ns),
                device,
                stream,
                name: names::intern(name),
                span: (parent.span != 0).then_some(parent.span),
            },
        )));
    }
}

/// Session nanoseconds now (0 when no session runs). For converting external clocks.
pub fn now_ns() -> u64 {
    session::current().map_or(0, |s| s.clock.now_ns())
}

/// Converts a CLOCK_MONOTONIC reading (ns) to session time (0 when no session runs).
pub fn monotonic_to_session_ns(mono_ns: u64) -> u64 {
    session::current().map_or(0, |s| s.clock.monotonic_to_ns(mono_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_times_land_after_the_anchor_and_never_run_backwards() {
        let c = DeviceClock::at(1_000_000);
        assert_eq!(c.to_session_ns(1.5), 2_500_000);
        assert_eq!(c.to_session_ns(-3.0), 1_000_000);
        assert_eq!(c.to_session_ns(f32::NAN), 1_000_000);
        assert_eq!(c.span_ns(2.0, 1.0), (3_000_000, 3_000_000));
        assert_eq!(c.span_ns(0.25, 0.75), (1_250_000, 1_750_000));
    }
}
