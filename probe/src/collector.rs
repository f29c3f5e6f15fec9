//! The collector thread: drains the thread rings, the allocator's large-block queue and the
//! slow-path queue; converts ticks to session time; encodes each batch once; keeps the flight
//! recorder; fans frames out to subscribers; welcomes new subscribers with `Hello`, the
//! definitions, the history and `LiveStart`, so nothing is missed and nothing is sent twice.

use super::alloc;
use super::config::HEARTBEAT;
use super::fanout::{EncodedFrame, History, KindCounts, SubQueue, dropped_event};
use super::names;
use super::ring::{RAW_KINDS, RawEvent, RawKind, Ring};
use super::session::{Shared, SlowEvent};
use super::system;
use probe_protocol::{
    AllocSample, BlockEvent, Event, EventKind, FrameBuilder, HistoryGap, Marker, SpanBegin, SpanEnd,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Target body size of a data frame.
const FRAME_TARGET: usize = 64 << 10;
/// Events per frame at most, whatever their size.
const FRAME_EVENTS: usize = 8192;

pub(crate) struct Collector {
    shared: Arc<Shared>,
    builder: FrameBuilder,
    /// OS thread id → (wire id, name).
    threads: HashMap<u32, (u32, String)>,
    next_thread: u32,
    names_sent: u32,
    /// Every definition of the session, sent to each new subscriber.
    defs: Vec<Event>,
    history: History,
    subs: Vec<Arc<SubQueue>>,
    rings: Vec<Arc<Ring>>,
    ring_drops_seen: HashMap<usize, [u64; RAW_KINDS]>,
    alloc_drops_seen: (u64, u64),
    slow_drops_seen: [u64; 64],
    raw: Vec<(u32, RawEvent)>,
    slow: Vec<SlowEvent>,
    /// `None` until the first sample (taken in the first cycle, as a baseline).
    last_alloc_sample: Option<Instant>,
    last_send: Instant,
    last_refit: Instant,
    stats: CollectorStats,
}

/// What a session produced, per kind (indexed by wire tag).
#[derive(Debug, Clone)]
pub struct CollectorStats {
    /// Events the collector put into frames for every subscriber (definitions and data; not
    /// the per-subscriber welcome frames, not `Dropped`).
    pub emitted: KindCounts,
    /// Events lost before reaching the collector (full thread rings or queues).
    pub lost: KindCounts,
}

fn set_ts(ev: &mut Event, ns: u64) {
    match ev {
        Event::ProofBegin(p) => p.ts = ns,
        Event::ProofEnd(p) => p.ts = ns,
        Event::Marker(m) => m.ts = ns,
        Event::SpanBegin(s) => s.ts = ns,
        Event::SpanEnd(s) => s.ts = ns,
        Event::AllocSample(s) => s.ts = ns,
        Event::Alloc(b) | Event::Release(b) => b.ts = ns,
        Event::GpuSample(g) => g.ts = ns,
        Event::Dropped(d) => d.ts = ns,
        Event::Heartbeat { ts } | Event::LiveStart { ts } | Event::Goodbye { ts, .. } => *ts = ns,
        Event::HistoryGap(h) => h.ts = ns,
        Event::GpuSpan(_)
        | Event::Hello(_)
        | Event::NameDef { .. }
        | Event::ThreadDef { .. }
        | Event::Subscribe(_) => {}
    }
}

impl Collector {
    pub fn new(shared: Arc<Shared>) -> Collector {
        let budget = shared.config.history_bytes;
        let now = Instant::now();
        Collector {
            shared,
            builder: FrameBuilder::new(0),
            threads: HashMap::new(),
            next_thread: 1,
            names_sent: 0,
            defs: Vec::new(),
            history: History::new(budget),
            subs: Vec::new(),
            rings: Vec::new(),
            ring_drops_seen: HashMap::new(),
            alloc_drops_seen: alloc::dropped(),
            slow_drops_seen: [0; 64],
            raw: Vec::new(),
            slow: Vec::new(),
            last_alloc_sample: None,
            last_send: now,
            last_refit: now,
            stats: CollectorStats {
                emitted: [0; 64],
                lost: [0; 64],
            },
        }
    }

    /// Runs until the session stops, then sends the goodbye and closes every queue.
    pub fn run(mut self) -> CollectorStats {
        let interval = self.shared.config.flush_interval;
        loop {
            let stopping = self.shared.stop.load(Ordering::Acquire);
            self.cycle();
            if stopping {
                break;
            }
            std::thread::park_timeout(interval);
        }
        self.finish();
        self.stats
    }

    fn now(&self) -> u64 {
        self.shared.clock.now_ns()
    }

    /// The wire id of an OS thread, defining it on first sight.
    fn thread_id(&mut self, os_tid: u32, name: Option<&str>, new_defs: &mut Vec<Event>) -> u32 {
        if let Some((id, known)) = self.threads.get(&os_tid) {
            // A reused tid under another name is a new thread.
            if name.is_none_or(|n| n == known) {
                return *id;
            }
        }
        let name = name
            .map(str::to_owned)
            .or_else(|| system::thread_name(os_tid))
            .unwrap_or_else(|| format!("thread-{os_tid}"));
        let id = self.next_thread;
        self.next_thread += 1;
        self.threads.insert(os_tid, (id, name.clone()));
        new_defs.push(Event::ThreadDef {
            id,
            name,
            os_tid: os_tid as u64,
        });
        id
    }

    fn cycle(&mut self) {
        self.welcome_new_subscribers();
        let mut defs = Vec::new();
        let mut data: Vec<Event> = Vec::new();
        let clock_now = self.now();
        let conv = self.shared.clock.converter();

        // 1. Thread rings (refresh the list; keep closed rings until drained).
        self.rings
            .clone_from(&self.shared.rings.lock().unwrap_or_else(|p| p.into_inner()));
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        // Rings are looked up by thread once per cycle, not per event.
        let mut ring_threads = Vec::with_capacity(self.rings.len());
        let mut ring_drops: [u64; RAW_KINDS] = [0; RAW_KINDS];
        let mut finished = Vec::new();
        for (i, ring) in self.rings.iter().enumerate() {
            let closed = ring.is_closed();
            ring_threads.push((ring.os_tid, ring.thread_name.clone()));
            let idx = i as u32;
            ring.drain(|e| raw.push((idx, *e)));
            let seen = self
                .ring_drops_seen
                .entry(Arc::as_ptr(ring) as usize)
                .or_insert([0; RAW_KINDS]);
            let now = ring.dropped();
            for k in 0..RAW_KINDS {
                ring_drops[k] += now[k] - seen[k];
            }
            *seen = now;
            if closed && ring.is_empty() {
                finished.push(Arc::as_ptr(ring) as usize);
            }
        }
        let wire_threads: Vec<u32> = ring_threads
            .iter()
            .map(|(tid, name)| self.thread_id(*tid, Some(name), &mut defs))
            .collect();

        // 2. Slow path (drained after the rings: anything a ring event depends on — a
        //    ProofBegin, a name — was queued before it and is therefore visible now).
        let mut slow = std::mem::take(&mut self.slow);
        {
            let mut q = self.shared.slow.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::swap(&mut *q, &mut slow);
        }
        for s in slow.drain(..) {
            let mut ev = match s {
                SlowEvent::Ticks(t, mut ev) => {
                    set_ts(&mut ev, conv.to_ns(t));
                    ev
                }
                SlowEvent::Session(ev) => ev,
            };
            if let Event::Marker(m) = &mut ev {
                m.thread = self.thread_id(m.thread, None, &mut defs);
            }
            data.push(ev);
        }
        self.slow = slow;

        // 3. Ring events.
        data.reserve(raw.len());
        for (idx, e) in &raw {
            let thread = wire_threads[*idx as usize];
            let ts = conv.to_ns(e.ticks);
            data.push(match e.kind() {
                RawKind::SpanBegin => Event::SpanBegin(SpanBegin {
                    ts,
                    span: e.span,
                    parent: (e.parent != 0).then_some(e.parent),
                    proof: (e.proof() != 0).then_some(e.proof() as u64),
                    name: e.name(),
                    thread,
                }),
                RawKind::SpanEnd => Event::SpanEnd(SpanEnd { ts, span: e.span }),
                RawKind::Marker => Event::Marker(Box::new(Marker {
                    ts,
                    name: e.name(),
                    thread,
                    span: (e.span != 0).then_some(e.span),
                    text: None,
                })),
            });
        }
        self.raw = raw;

        // 4. Large blocks.
        let mut blocks = Vec::new();
        alloc::drain(|b| blocks.push(b));
        for b in blocks {
            let thread = self.thread_id(b.os_tid, None, &mut defs);
            let ts = conv.to_ns(b.ticks);
            let end = conv.to_ns(b.ticks + b.inside_ticks);
            let be = BlockEvent {
                ts,
                bytes: b.bytes,
                inside_ns: end.saturating_sub(ts),
                thread,
                span: (b.span != 0).then_some(b.span),
            };
            data.push(if b.release {
                Event::Release(be)
            } else {
                Event::Alloc(be)
            });
        }

        // 5. Allocator sample.
        if self
            .last_alloc_sample
            .is_none_or(|t| t.elapsed() >= self.shared.config.alloc_sample)
        {
            self.last_alloc_sample = Some(Instant::now());
            let t = alloc::totals();
            let live = t.live_bytes();
            data.push(Event::AllocSample(AllocSample {
                ts: clock_now,
                live_bytes: live,
                peak_bytes: alloc::peak_bytes(live),
                allocs: t.allocs,
                frees: t.frees,
                alloc_bytes: t.alloc_bytes,
                free_bytes: t.free_bytes,
                rss_bytes: system::rss_bytes(),
            }));
        }

        // 6. Losses before the collector (full rings, full queues).
        let mut lost: KindCounts = [0; 64];
        lost[EventKind::SpanBegin.tag() as usize] += ring_drops[RawKind::SpanBegin as usize];
        lost[EventKind::SpanEnd.tag() as usize] += ring_drops[RawKind::SpanEnd as usize];
        lost[EventKind::Marker.tag() as usize] += ring_drops[RawKind::Marker as usize];
        let (da, dr) = alloc::dropped();
        lost[EventKind::Alloc.tag() as usize] += da - self.alloc_drops_seen.0;
        lost[EventKind::Release.tag() as usize] += dr - self.alloc_drops_seen.1;
        self.alloc_drops_seen = (da, dr);
        for (k, seen) in self.slow_drops_seen.iter_mut().enumerate() {
            let now = self.shared.slow_dropped[k].load(Ordering::Relaxed);
            lost[k] += now - *seen;
            *seen = now;
        }
        for (k, n) in lost.iter().enumerate() {
            self.stats.lost[k] += n;
        }
        if let Some(d) = dropped_event(clock_now, &lost) {
            data.push(d);
        }

        // 7. Names used by anything above (registered before use, so visible now).
        let n = names::count();
        if n > self.names_sent {
            for (id, name) in names::range(self.names_sent + 1, n) {
                defs.push(Event::NameDef { id, name });
            }
            self.names_sent = n;
        }

        // 8. Send: definitions first (never dropped), then data frames.
        if !defs.is_empty() {
            let f = Arc::new(EncodedFrame::encode(&mut self.builder, &defs, true));
            self.defs.extend(defs);
            self.send(f, false);
        }
        let mut start = 0;
        while start < data.len() {
            // Cut frames near the target size; estimate from a per-event budget.
            let end = (start + FRAME_EVENTS).min(data.len());
            let f = EncodedFrame::encode(&mut self.builder, &data[start..end], false);
            let f = if f.bytes.len() > FRAME_TARGET * 4 && end - start > 1 {
                // Unusually large events: split in halves.
                let mid = start + (end - start) / 2;
                let a = Arc::new(EncodedFrame::encode(
                    &mut self.builder,
                    &data[start..mid],
                    false,
                ));
                self.send(a, true);
                start = mid;
                continue;
            } else {
                Arc::new(f)
            };
            self.send(f, true);
            start = end;
        }
        for sub in &self.subs {
            sub.tick();
        }

        // 9. Heartbeat when idle; housekeeping.
        if self.last_send.elapsed() >= HEARTBEAT {
            let hb = Event::Heartbeat { ts: self.now() };
            let f = Arc::new(EncodedFrame::encode(&mut self.builder, &[hb], false));
            for sub in &self.subs {
                sub.push_if_idle(f.clone());
            }
            self.last_send = Instant::now();
        }
        if self.last_refit.elapsed() >= Duration::from_secs(1) {
            self.shared.clock.refit();
            self.last_refit = Instant::now();
        }
        if !finished.is_empty() {
            self.shared
                .rings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|r| !finished.contains(&(Arc::as_ptr(r) as usize)));
            for p in finished {
                self.ring_drops_seen.remove(&p);
            }
        }
        self.subs.retain(|s| !s.is_closed());
    }

    fn send(&mut self, f: Arc<EncodedFrame>, to_history: bool) {
        for (k, n) in f.counts.iter().enumerate() {
            self.stats.emitted[k] += n;
        }
        for sub in &self.subs {
            sub.push(f.clone());
        }
        if to_history {
            self.history.push(f);
        }
        self.last_send = Instant::now();
    }

    fn welcome_new_subscribers(&mut self) {
        let new: Vec<_> = std::mem::take(
            &mut *self
                .shared
                .new_subscribers
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (sub, with_history) in new {
            let mut first = vec![Event::Hello(Box::new(self.shared.hello.clone()))];
            first.extend(self.defs.iter().cloned());
            sub.push(Arc::new(EncodedFrame::encode(
                &mut self.builder,
                &first,
                true,
            )));
            let now = self.now();
            if with_history {
                if self.history.evicted_events > 0 {
                    let gap = Event::HistoryGap(HistoryGap {
                        ts: now,
                        evicted_events: self.history.evicted_events,
                        evicted_from: self.history.evicted_from.unwrap_or(0),
                        evicted_until: self.history.evicted_until,
                    });
                    sub.push(Arc::new(EncodedFrame::encode(
                        &mut self.builder,
                        &[gap],
                        true,
                    )));
                }
                for f in self.history.frames() {
                    sub.push_history(f.clone());
                }
            }
            let live = Event::LiveStart { ts: now };
            sub.push(Arc::new(EncodedFrame::encode(
                &mut self.builder,
                &[live],
                true,
            )));
            self.subs.push(sub);
        }
    }

    fn finish(&mut self) {
        // Anyone who arrived during the last cycle still gets a proper session.
        self.welcome_new_subscribers();
        let reason = self
            .shared
            .goodbye
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| "shutdown".into());
        let bye = Event::Goodbye {
            ts: self.now(),
            reason,
        };
        let f = Arc::new(EncodedFrame::encode(&mut self.builder, &[bye], true));
        for sub in &self.subs {
            sub.push(f.clone());
            sub.close();
        }
    }
}
