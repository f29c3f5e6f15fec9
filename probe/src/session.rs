//! The running session as the hot path, the collector, the samplers and the server see it. It
//! is made of small parts with one job each: the rings new threads register, the slow-path
//! queue, the subscribers waiting to be welcomed, and the controls (stop, goodbye, waking the
//! collector). At most one session runs at a time; a new session gets a new generation, so
//! thread buffers from an older one are replaced, never reused.

use crate::clock::{Clock, Ticks};
use crate::config::ProbeConfig;
use crate::ring::Consumer;
use crate::state::{self, StateWord};
use crate::subscriber::SubQueue;
use probe_protocol::{Event, EventKind, Hello, KindCounts};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Most events the slow path (proof scopes, text markers, GPU spans, NVML) may queue between
/// collector cycles before dropping.
pub const SLOW_QUEUE_MAX: usize = 262_144;

/// An event from a slow path, timed in ticks or already in session ns.
#[derive(Debug)]
pub(crate) enum SlowEvent {
    /// Timestamp fields are filled from the ticks by the collector.
    Ticks(Ticks, Event),
    /// Already on the session clock.
    Session(Event),
}

impl SlowEvent {
    fn kind(&self) -> EventKind {
        match self {
            SlowEvent::Ticks(_, e) | SlowEvent::Session(e) => e.kind(),
        }
    }
}

/// Per-kind counters many threads bump.
#[derive(Debug)]
pub(crate) struct KindCounters([AtomicU64; EventKind::COUNT]);

impl KindCounters {
    pub fn new() -> KindCounters {
        KindCounters(std::array::from_fn(|_| AtomicU64::new(0)))
    }

    pub fn add(&self, kind: EventKind, n: u64) {
        self.0[kind.index()].fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> KindCounts {
        EventKind::ALL
            .iter()
            .map(|&k| (k, self.0[k.index()].load(Ordering::Relaxed)))
            .collect()
    }
}

/// Events from paths that may take a lock (proof scopes, text markers, GPU spans, samplers),
/// bounded: past [`SLOW_QUEUE_MAX`] they are dropped and counted.
#[derive(Debug)]
pub(crate) struct SlowQueue {
    events: Mutex<Vec<SlowEvent>>,
    dropped: KindCounters,
}

impl SlowQueue {
    fn new() -> SlowQueue {
        SlowQueue {
            events: Mutex::new(Vec::new()),
            dropped: KindCounters::new(),
        }
    }

    pub fn push(&self, ev: SlowEvent) {
        let mut q = lock(&self.events);
        if q.len() >= SLOW_QUEUE_MAX {
            drop(q);
            self.dropped.add(ev.kind(), 1);
            return;
        }
        q.push(ev);
    }

    /// Moves every queued event into `into` (which must be empty), keeping both buffers.
    pub fn take_into(&self, into: &mut Vec<SlowEvent>) {
        std::mem::swap(&mut *lock(&self.events), into);
    }

    /// Drops so far, per kind.
    pub fn dropped(&self) -> KindCounts {
        self.dropped.snapshot()
    }
}

/// A thread's ring as the collector receives it.
#[derive(Debug)]
pub(crate) struct ThreadRing {
    pub consumer: Consumer,
    pub os_tid: u32,
    pub thread_name: String,
}

/// Rings of threads that joined since the collector last looked.
#[derive(Debug, Default)]
pub(crate) struct RingRegistry {
    new: Mutex<Vec<ThreadRing>>,
}

impl RingRegistry {
    pub fn register(&self, ring: ThreadRing) {
        lock(&self.new).push(ring);
    }

    pub fn take_new(&self) -> Vec<ThreadRing> {
        std::mem::take(&mut *lock(&self.new))
    }
}

/// A subscriber waiting for the collector's welcome.
#[derive(Debug)]
pub(crate) struct Arrival {
    pub queue: Arc<SubQueue>,
    /// Send the flight recorder's history first.
    pub history: bool,
}

/// Subscribers that arrived since the collector last looked.
#[derive(Debug, Default)]
pub(crate) struct Arrivals {
    waiting: Mutex<Vec<Arrival>>,
}

impl Arrivals {
    pub fn arrive(&self, a: Arrival) {
        lock(&self.waiting).push(a);
    }

    pub fn take(&self) -> Vec<Arrival> {
        std::mem::take(&mut *lock(&self.waiting))
    }
}

/// Stopping the session and waking its collector.
#[derive(Debug, Default)]
pub(crate) struct Control {
    stop: AtomicBool,
    goodbye: Mutex<Option<String>>,
    /// The collector thread, unparked when a ring is half full or a subscriber arrives.
    collector: OnceLock<std::thread::Thread>,
    /// Collector cycles completed.
    cycles: AtomicU64,
}

impl Control {
    pub fn request_stop(&self, reason: &str) {
        *lock(&self.goodbye) = Some(reason.to_owned());
        self.stop.store(true, Ordering::Release);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn goodbye_reason(&self) -> String {
        lock(&self.goodbye)
            .clone()
            .unwrap_or_else(|| "shutdown".into())
    }

    pub fn set_collector(&self, t: std::thread::Thread) {
        let _ = self.collector.set(t);
    }

    pub fn collector(&self) -> Option<&std::thread::Thread> {
        self.collector.get()
    }

    pub fn wake_collector(&self) {
        if let Some(t) = self.collector.get() {
            t.unpark();
        }
    }

    pub fn cycle_done(&self) {
        self.cycles.fetch_add(1, Ordering::Release);
    }

    pub fn cycles(&self) -> u64 {
        self.cycles.load(Ordering::Acquire)
    }
}

/// The running session.
#[derive(Debug)]
pub(crate) struct Session {
    pub generation: u64,
    /// The state word of this session, recording bit clear.
    pub word: StateWord,
    pub config: ProbeConfig,
    pub clock: Clock,
    pub hello: Hello,
    pub rings: RingRegistry,
    pub slow: SlowQueue,
    pub arrivals: Arrivals,
    pub control: Control,
    next_proof: AtomicU64,
}

impl Session {
    pub fn new(config: ProbeConfig, clock: Clock, hello: Hello) -> Session {
        let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        Session {
            generation,
            word: StateWord::of(generation, clock.source()),
            config,
            clock,
            hello,
            rings: RingRegistry::default(),
            slow: SlowQueue::new(),
            arrivals: Arrivals::default(),
            control: Control::default(),
            next_proof: AtomicU64::new(1),
        }
    }

    /// A new proof id.
    pub fn next_proof(&self) -> u64 {
        self.next_proof.fetch_add(1, Ordering::Relaxed)
    }
}

static CURRENT: Mutex<Option<Arc<Session>>> = Mutex::new(None);
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// The running session, if any.
pub(crate) fn current() -> Option<Arc<Session>> {
    lock(&CURRENT).clone()
}

/// Installs a session (not yet recording); fails if one is running.
pub(crate) fn install(session: Arc<Session>) -> Result<(), Arc<Session>> {
    let mut g = lock(&CURRENT);
    if g.is_some() {
        return Err(session);
    }
    state::install(session.word);
    *g = Some(session);
    Ok(())
}

pub(crate) fn uninstall(generation: u64) {
    let mut g = lock(&CURRENT);
    if g.as_ref().is_some_and(|s| s.generation == generation) {
        *g = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "a quarter million events: minutes under Miri")]
    fn a_full_slow_queue_counts_drops_by_kind() {
        let q = SlowQueue::new();
        for _ in 0..SLOW_QUEUE_MAX + 3 {
            q.push(SlowEvent::Session(Event::Heartbeat { ts: 0 }));
        }
        assert_eq!(q.dropped()[EventKind::Heartbeat], 3);
        assert_eq!(q.dropped().total(), 3);
        let mut v = Vec::new();
        q.take_into(&mut v);
        assert_eq!(v.len(), SLOW_QUEUE_MAX);
    }
}
