//! GPU spans and markers that arrive before the begin of the span they name.
//!
//! The probe sends slow-path events (GPU spans resolved off the launching thread, markers with
//! text) ahead of the ring records drained in the same cycle, and a span's begin can sit in
//! its thread's ring for a cycle while the GPU span launched inside it is already reported.
//! So "the span is unknown" usually means "not yet": such events wait here, keyed by span,
//! and join that span's proof when its begin arrives. The wait is bounded: past
//! [`Early::MAX`] held events the oldest give up and count as belonging to no proof.

use super::ids::SpanId;
use super::records::{DeviceSpan, Mark};
use std::collections::{HashMap, VecDeque};

/// An event waiting for its span.
#[derive(Debug, Clone)]
pub enum Orphan {
    Gpu(DeviceSpan),
    Mark(Mark),
}

#[derive(Debug, Default)]
pub struct Early {
    by_span: HashMap<SpanId, Vec<Orphan>>,
    /// Span ids in the order their first event arrived (ids already taken are skipped).
    order: VecDeque<SpanId>,
    held: usize,
}

impl Early {
    /// Most events held at once.
    pub const MAX: usize = 1024;

    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Holds `o` for `span`; returns the events that waited longest when that makes too many.
    pub fn hold(&mut self, span: SpanId, o: Orphan) -> Vec<Orphan> {
        let waiting = self.by_span.entry(span).or_default();
        if waiting.is_empty() {
            self.order.push_back(span);
        }
        waiting.push(o);
        self.held += 1;
        let mut gave_up = Vec::new();
        while self.held > Self::MAX {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(v) = self.by_span.remove(&oldest) {
                self.held -= v.len();
                gave_up.extend(v);
            }
        }
        gave_up
    }

    /// The events that waited for `span`, now that it began.
    pub fn take(&mut self, span: SpanId) -> Vec<Orphan> {
        let v = self.by_span.remove(&span).unwrap_or_default();
        self.held -= v.len();
        if self.by_span.is_empty() {
            self.order.clear();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(span: u64, start: u64) -> Orphan {
        Orphan::Gpu(DeviceSpan {
            start,
            end: start + 1,
            device: 0,
            stream: 0,
            name: crate::model::NameId(1),
            span: Some(SpanId(span)),
        })
    }

    #[test]
    fn events_wait_for_their_span_and_the_oldest_give_up_first() {
        let mut e = Early::default();
        assert!(e.hold(SpanId(7), gpu(7, 1)).is_empty());
        assert!(e.hold(SpanId(8), gpu(8, 2)).is_empty());
        assert_eq!(e.take(SpanId(7)).len(), 1);
        assert!(e.take(SpanId(7)).is_empty());
        for i in 0..Early::MAX as u64 - 1 {
            assert!(e.hold(SpanId(100 + i), gpu(100 + i, i)).is_empty());
        }
        // One more than MAX: span 8's event, the oldest, gives up.
        let gave_up = e.hold(SpanId(5000), gpu(5000, 0));
        assert!(matches!(gave_up.as_slice(), [Orphan::Gpu(g)] if g.span == Some(SpanId(8))));
        assert!(e.take(SpanId(8)).is_empty());
        assert_eq!(e.take(SpanId(100)).len(), 1);
    }
}
