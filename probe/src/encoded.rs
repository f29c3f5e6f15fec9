//! Frames encoded once by the collector and shared (one `Arc`) by the flight recorder and every
//! subscriber, with what a subscriber needs to account for them if it must drop them.

use probe_protocol::{Dropped, Event, FrameBuilder, KindCounts};

/// A frame encoded once, shared by the flight recorder and every subscriber.
#[derive(Debug)]
pub struct EncodedFrame {
    /// The whole frame, length prefix included.
    pub bytes: Box<[u8]>,
    /// Events in the frame per kind (a `Dropped` event is not counted here: see `carried`).
    pub counts: KindCounts,
    /// Losses reported by `Dropped` events inside this frame; if the frame itself is dropped
    /// they are passed on, so no loss goes unreported.
    pub carried: KindCounts,
    pub events: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    /// Definitions and session bookkeeping: never dropped (bounded by construction).
    pub essential: bool,
    /// Data frames: the position of its first event in the session's data stream (how many
    /// events went out in data frames before it); 0 otherwise. A cycle's batch can span
    /// several frames, so the cycle alone cannot say which of its events eviction took.
    pub first_pos: u64,
}

/// An [`EncodedFrame`] being built: the events pushed so far and their accounting.
struct Pending {
    counts: KindCounts,
    carried: KindCounts,
    events: u64,
    first: u64,
    last: u64,
}

impl Pending {
    fn start(builder: &mut FrameBuilder, base: u64) -> Pending {
        builder.reset(base);
        Pending {
            counts: KindCounts::ZERO,
            carried: KindCounts::ZERO,
            events: 0,
            first: u64::MAX,
            last: 0,
        }
    }

    /// Adds `ev`; one that cannot be encoded is counted as lost in `carried` (it cannot be
    /// sent, so it is lost and must say so).
    fn push(&mut self, builder: &mut FrameBuilder, ev: &Event) {
        if builder.push(ev).is_err() {
            self.carried[ev.kind()] += 1;
            return;
        }
        self.events += 1;
        if let Event::Dropped(d) = ev {
            for &(k, c) in &d.counts {
                self.carried[k] += c;
            }
        } else {
            self.counts[ev.kind()] += 1;
        }
        if let Some(ts) = ev.ts() {
            self.first = self.first.min(ts);
            self.last = self.last.max(ts);
        }
    }

    fn finish(self, builder: &mut FrameBuilder, essential: bool) -> EncodedFrame {
        let bytes = builder.finish().map(Box::<[u8]>::from).unwrap_or_default();
        EncodedFrame {
            bytes,
            counts: self.counts,
            carried: self.carried,
            events: self.events,
            first_ts: if self.first == u64::MAX {
                0
            } else {
                self.first
            },
            last_ts: self.last,
            essential,
            first_pos: 0,
        }
    }
}

impl EncodedFrame {
    /// Encodes `events` as one frame (callers keep it small: a few events).
    pub fn encode(builder: &mut FrameBuilder, events: &[Event], essential: bool) -> EncodedFrame {
        let mut p = Pending::start(builder, events.iter().find_map(Event::ts).unwrap_or(0));
        for ev in events {
            p.push(builder, ev);
        }
        p.finish(builder, essential)
    }

    /// Memory this frame holds while queued or kept: its bytes and its own bookkeeping (and
    /// the `Arc` around it). What byte budgets count.
    pub fn held_bytes(&self) -> usize {
        self.bytes.len() + std::mem::size_of::<EncodedFrame>() + 2 * std::mem::size_of::<usize>()
    }
}

/// Target body size of a frame the collector cuts from a batch.
pub const FRAME_TARGET: usize = 64 << 10;
/// Events per frame at most, whatever their size.
pub const FRAME_EVENTS: usize = 8192;

/// Encodes `events` as as many frames as it takes to keep each near [`FRAME_TARGET`] bytes:
/// one pass, a frame is cut once its body passes the target (so no frame nears
/// [`probe_protocol::MAX_FRAME_LEN`] unless one event alone does). Each frame's `first_pos`
/// is the index in `events` of its first event (one that cannot be encoded still counts).
pub fn encode_all(
    builder: &mut FrameBuilder,
    events: &[Event],
    essential: bool,
) -> Vec<EncodedFrame> {
    let mut out = Vec::new();
    let mut rest = events;
    let mut taken = 0;
    while !rest.is_empty() {
        let mut p = Pending::start(builder, rest.iter().find_map(Event::ts).unwrap_or(0));
        let mut n = 0;
        while n < rest.len() && n < FRAME_EVENTS && builder.body_len() < FRAME_TARGET {
            p.push(builder, &rest[n]);
            n += 1;
        }
        let mut f = p.finish(builder, essential);
        f.first_pos = taken;
        out.push(f);
        taken += n as u64;
        rest = &rest[n..];
    }
    out
}

/// A `Dropped` event for per-kind counts (`None` when nothing was lost).
pub fn dropped_event(ts: u64, counts: &KindCounts) -> Option<Event> {
    let list: Vec<_> = counts.nonzero().collect();
    (!list.is_empty()).then_some(Event::Dropped(Dropped { ts, counts: list }))
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use probe_protocol::SpanEnd;
    use std::sync::Arc;

    /// A frame of `n` span ends, of equal size for any `ts` below 2^20 (the base is always a
    /// uint32).
    pub fn frame(n: u64, ts: u64) -> Arc<EncodedFrame> {
        let ts = ts + 100_000;
        let evs: Vec<Event> = (0..n)
            .map(|i| {
                Event::SpanEnd(SpanEnd {
                    ts: ts + i,
                    span: i + 1,
                })
            })
            .collect();
        Arc::new(EncodedFrame::encode(&mut FrameBuilder::new(0), &evs, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_protocol::{EventKind, decode_frame};

    #[test]
    fn a_large_batch_is_cut_into_frames_near_the_target_losing_nothing() {
        // Long names: few events, many frames (Miri runs this too).
        let evs: Vec<Event> = (0..400u64)
            .map(|i| Event::NameDef {
                id: i as u32 + 1,
                name: format!("{i}-{}", "n".repeat(1000)),
            })
            .collect();
        let frames = encode_all(&mut FrameBuilder::new(0), &evs, true);
        assert!(frames.len() > 5, "{}", frames.len());
        let mut n = 0;
        for f in &frames {
            assert!(f.bytes.len() < FRAME_TARGET + 1024, "{}", f.bytes.len());
            let d = decode_frame(&f.bytes[4..]).unwrap();
            n += d.events.len();
            assert_eq!(f.counts[EventKind::NameDef], d.events.len() as u64);
        }
        assert_eq!(n, evs.len());
    }
}
