//! Subscriber queues. The collector encodes each batch once and hands the same frame to every
//! subscriber. Each queue is bounded by the memory its frames hold: when a subscriber is slow,
//! its frames are dropped and the dropped events counted per kind; the counts reach it as a
//! `Dropped` event as soon as its queue has room again (or with the goodbye). The collector
//! never waits on a subscriber, so a stalled viewer slows neither the prover nor the others.

use crate::encoded::{EncodedFrame, dropped_event};
use probe_protocol::{FrameBuilder, KindCounts};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

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
                pending: KindCounts::ZERO,
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
        let len = frame.held_bytes();
        if frame.essential {
            Self::flush_pending(&mut s, true);
        } else if s.live_bytes + len > s.limit {
            s.pending += &frame.counts;
            s.pending += &frame.carried;
            s.dropped_total += frame.counts.total();
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
        if !s.closed && !s.pending.is_zero() && Self::flush_pending(&mut s, false) {
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
        if !force && s.live_bytes + frame.held_bytes() > s.limit {
            return false;
        }
        s.pending = KindCounts::ZERO;
        s.live_bytes += frame.held_bytes();
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
            s.live_bytes -= e.frame.held_bytes();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoded::tests_support::frame;
    use probe_protocol::{Event, EventKind, decode_frame};

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
        let q = SubQueue::new("t".into(), one.held_bytes() * 3);
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
        let d = dropped_event(5, &[(EventKind::SpanBegin, 42)].into_iter().collect()).unwrap();
        let carrier = Arc::new(EncodedFrame::encode(&mut FrameBuilder::new(0), &[d], false));
        let q = SubQueue::new("t".into(), 0);
        q.push(carrier);
        q.close();
        let mut s = q.lock();
        assert_eq!(s.pending[EventKind::SpanBegin], 42);
        assert!(SubQueue::flush_pending(&mut s, true));
    }
}
