//! Subscriber queues. The collector encodes each batch once and hands the same bytes to every
//! subscriber. Each queue is bounded in bytes: when a subscriber is slow, its frames are
//! dropped and the dropped events counted per kind; the counts reach it as a `Dropped` event
//! as soon as its queue has room again (or with the goodbye). The collector never waits on a
//! subscriber, so a stalled viewer slows neither the prover nor the other viewers.

use probe_protocol::{Dropped, Event, EventKind, FrameBuilder};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Per-kind event counts, indexed by wire tag.
pub type KindCounts = [u64; 64];

/// A frame encoded once, shared by the flight recorder and every subscriber.
#[derive(Debug)]
pub struct EncodedFrame {
    /// The whole frame, length prefix included.
    pub bytes: Vec<u8>,
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
}

impl EncodedFrame {
    /// Encodes `events` as one frame. Events that cannot be encoded are skipped and counted
    /// as dropped in `carried` (they cannot be sent, so they are lost and must say so).
    pub fn encode(builder: &mut FrameBuilder, events: &[Event], essential: bool) -> EncodedFrame {
        let base = events.iter().find_map(Event::ts).unwrap_or(0);
        builder.reset(base);
        let mut counts = [0u64; 64];
        let mut carried = [0u64; 64];
        let (mut first, mut last) = (u64::MAX, 0u64);
        let mut n = 0;
        for ev in events {
            if builder.push(ev).is_err() {
                carried[ev.kind().tag() as usize % 64] += 1;
                continue;
            }
            n += 1;
            if let Event::Dropped(d) = ev {
                for (k, c) in &d.counts {
                    carried[k.tag() as usize % 64] += c;
                }
            } else {
                counts[ev.kind().tag() as usize % 64] += 1;
            }
            if let Some(ts) = ev.ts() {
                first = first.min(ts);
                last = last.max(ts);
            }
        }
        let bytes = builder.finish().map(<[u8]>::to_vec).unwrap_or_default();
        EncodedFrame {
            bytes,
            counts,
            carried,
            events: n,
            first_ts: if first == u64::MAX { 0 } else { first },
            last_ts: last,
            essential,
        }
    }
}

/// Builds a `Dropped` event from per-kind counts (kinds with a zero count are left out).
pub fn dropped_event(ts: u64, counts: &KindCounts) -> Option<Event> {
    let list: Vec<(EventKind, u64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .filter_map(|(tag, n)| EventKind::from_tag(tag as u8).map(|k| (k, *n)))
        .collect();
    (!list.is_empty()).then_some(Event::Dropped(Dropped { ts, counts: list }))
}

#[derive(Debug)]
struct Entry {
    frame: Arc<EncodedFrame>,
    /// Counted against the live-bytes bound (history frames are not: they already exist).
    counted: bool,
}

#[derive(Debug)]
struct State {
    queue: VecDeque<Entry>,
    live_bytes: usize,
    limit: usize,
    pending: KindCounts,
    closed: bool,
    dropped_total: u64,
    last_ts: u64,
}

/// One subscriber's bounded queue of frames.
#[derive(Debug)]
pub struct SubQueue {
    state: Mutex<State>,
    cond: Condvar,
    notify: tokio::sync::Notify,
    pub label: String,
}

impl SubQueue {
    pub fn new(label: String, limit: usize) -> Arc<SubQueue> {
        Arc::new(SubQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                live_bytes: 0,
                limit,
                pending: [0; 64],
                closed: false,
                dropped_total: 0,
                last_ts: 0,
            }),
            cond: Condvar::new(),
            notify: tokio::sync::Notify::new(),
            label,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) {
        self.cond.notify_all();
        self.notify.notify_one();
    }

    /// Queues a frame the flight recorder already holds, outside the live bound.
    pub fn push_history(&self, frame: Arc<EncodedFrame>) {
        let mut s = self.lock();
        if s.closed {
            return;
        }
        s.last_ts = s.last_ts.max(frame.last_ts);
        s.queue.push_back(Entry {
            frame,
            counted: false,
        });
        drop(s);
        self.wake();
    }

    /// Queues a live frame, or drops it (counting its events) when the queue is over its bound.
    pub fn push(&self, frame: Arc<EncodedFrame>) {
        let mut s = self.lock();
        if s.closed {
            return;
        }
        s.last_ts = s.last_ts.max(frame.last_ts);
        let len = frame.bytes.len();
        if frame.essential {
            Self::flush_pending(&mut s, true);
        } else if s.live_bytes + len > s.limit {
            for tag in 0..64 {
                let lost = frame.counts[tag] + frame.carried[tag];
                s.pending[tag] += lost;
                s.dropped_total += frame.counts[tag];
            }
            return;
        } else {
            Self::flush_pending(&mut s, false);
        }
        s.live_bytes += len;
        s.queue.push_back(Entry {
            frame,
            counted: true,
        });
        drop(s);
        self.wake();
    }

    /// Sends a frame only if nothing is queued (heartbeats: transport, not events).
    pub fn push_if_idle(&self, frame: Arc<EncodedFrame>) {
        let mut s = self.lock();
        if s.closed || !s.queue.is_empty() {
            return;
        }
        s.queue.push_back(Entry {
            frame,
            counted: false,
        });
        drop(s);
        self.wake();
    }

    /// Collector: reports pending drops if the queue has room now.
    pub fn tick(&self) {
        let mut s = self.lock();
        if !s.closed && s.pending.iter().any(|&n| n > 0) && Self::flush_pending(&mut s, false) {
            drop(s);
            self.wake();
        }
    }

    /// Queues a `Dropped` frame for the pending counts; with `force`, even over the bound.
    fn flush_pending(s: &mut State, force: bool) -> bool {
        let Some(ev) = dropped_event(s.last_ts, &s.pending) else {
            return false;
        };
        let mut b = FrameBuilder::new(s.last_ts);
        let frame = EncodedFrame::encode(&mut b, std::slice::from_ref(&ev), true);
        if !force && s.live_bytes + frame.bytes.len() > s.limit {
            return false;
        }
        s.pending = [0; 64];
        s.live_bytes += frame.bytes.len();
        s.queue.push_back(Entry {
            frame: Arc::new(frame),
            counted: true,
        });
        true
    }

    /// No more frames will be accepted; consumers drain what is queued, then see the end.
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake();
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Events dropped for this subscriber so far.
    pub fn dropped_total(&self) -> u64 {
        self.lock().dropped_total
    }

    fn take(s: &mut State) -> Option<Arc<EncodedFrame>> {
        let e = s.queue.pop_front()?;
        if e.counted {
            s.live_bytes -= e.frame.bytes.len();
        }
        Some(e.frame)
    }

    /// Blocking pop for writer threads. `Ok(None)` on timeout, `Err(())` once closed and empty.
    #[allow(clippy::result_unit_err)]
    pub fn pop_blocking(&self, timeout: Duration) -> Result<Option<Arc<EncodedFrame>>, ()> {
        let mut s = self.lock();
        if let Some(f) = Self::take(&mut s) {
            return Ok(Some(f));
        }
        if s.closed {
            return Err(());
        }
        let (mut s, _) = self
            .cond
            .wait_timeout(s, timeout)
            .unwrap_or_else(|p| p.into_inner());
        match Self::take(&mut s) {
            Some(f) => Ok(Some(f)),
            None if s.closed => Err(()),
            None => Ok(None),
        }
    }

    /// Async pop for socket writers: `None` once closed and drained.
    pub async fn pop(&self) -> Option<Arc<EncodedFrame>> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.lock();
                if let Some(f) = Self::take(&mut s) {
                    return Some(f);
                }
                if s.closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

/// The flight recorder: recent data frames, bounded in bytes. Definitions are kept apart by
/// the collector (they are few and needed to decode anything), so eviction never makes the
/// history undecodable.
#[derive(Debug)]
pub struct History {
    frames: VecDeque<Arc<EncodedFrame>>,
    bytes: usize,
    budget: usize,
    pub evicted_events: u64,
    pub evicted_from: Option<u64>,
    pub evicted_until: u64,
}

impl History {
    pub fn new(budget: usize) -> History {
        History {
            frames: VecDeque::new(),
            bytes: 0,
            budget,
            evicted_events: 0,
            evicted_from: None,
            evicted_until: 0,
        }
    }

    pub fn push(&mut self, frame: Arc<EncodedFrame>) {
        self.bytes += frame.bytes.len();
        self.frames.push_back(frame);
        while self.bytes > self.budget {
            let Some(old) = self.frames.pop_front() else {
                break;
            };
            self.bytes -= old.bytes.len();
            self.evicted_events += old.events;
            self.evicted_from.get_or_insert(old.first_ts);
            self.evicted_until = self.evicted_until.max(old.last_ts);
        }
    }

    pub fn frames(&self) -> impl Iterator<Item = &Arc<EncodedFrame>> {
        self.frames.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_protocol::{SpanEnd, decode_frame};

    /// Frames of equal size for any `ts` below 2^20 (the base is always a uint32).
    fn frame(n: u64, ts: u64) -> Arc<EncodedFrame> {
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

    fn events_and_drops(q: &SubQueue) -> (u64, u64) {
        let (mut got, mut dropped) = (0, 0);
        while let Ok(Some(f)) = q.pop_blocking(Duration::ZERO) {
            for ev in decode_frame(&f.bytes[4..]).unwrap().events {
                match ev {
                    Event::Dropped(d) => dropped += d.total(),
                    _ => got += 1,
                }
            }
        }
        (got, dropped)
    }

    #[test]
    fn a_full_queue_drops_counts_and_reports_when_room_returns() {
        let one = frame(100, 0);
        let q = SubQueue::new("t".into(), one.bytes.len() * 3);
        for i in 0..10 {
            q.push(frame(100, i * 1000));
        }
        assert_eq!(q.dropped_total(), 700);
        let (got, dropped) = events_and_drops(&q);
        assert_eq!(
            (got, dropped),
            (300, 0),
            "drops are reported once there is room"
        );
        q.tick();
        let (got, dropped) = events_and_drops(&q);
        assert_eq!((got, dropped), (0, 700));
    }

    #[test]
    fn losses_inside_a_dropped_frame_are_passed_on() {
        let d = dropped_event(5, &{
            let mut c = [0; 64];
            c[EventKind::SpanBegin.tag() as usize] = 42;
            c
        })
        .unwrap();
        let carrier = Arc::new(EncodedFrame::encode(&mut FrameBuilder::new(0), &[d], false));
        let q = SubQueue::new("t".into(), 0);
        q.push(carrier);
        q.close();
        let mut s = q.lock();
        assert_eq!(s.pending[EventKind::SpanBegin.tag() as usize], 42);
        assert!(SubQueue::flush_pending(&mut s, true));
    }

    #[test]
    fn history_evicts_oldest_and_remembers_what() {
        let f = frame(10, 0);
        let mut h = History::new(f.bytes.len() * 2);
        h.push(frame(10, 0));
        h.push(frame(10, 100));
        h.push(frame(10, 200));
        assert_eq!(h.frames().count(), 2);
        assert_eq!(h.evicted_events, 10);
        assert_eq!((h.evicted_from, h.evicted_until), (Some(100_000), 100_009));
    }
}
