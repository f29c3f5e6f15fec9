//! The process-wide state of the running probe session, shared by the hot path, the
//! collector and the server. At most one session runs at a time; a new session gets a new
//! generation so thread-local buffers from an older one are replaced, never reused.

use super::clock::{Clock, Ticks};
use super::config::ProbeConfig;
use super::fanout::SubQueue;
use super::ring::Ring;
use probe_protocol::{Event, Hello};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The one word the hot path reads (a single relaxed load per span edge): bit 0 = recording,
/// bit 1 = ticks come from the TSC, bits 2.. = generation of the running session.
pub(crate) static STATE: AtomicU64 = AtomicU64::new(0);
pub(crate) const ENABLED_BIT: u64 = 1;
pub(crate) const TSC_BIT: u64 = 2;

#[inline(always)]
pub(crate) fn state() -> u64 {
    STATE.load(Ordering::Relaxed)
}

#[inline(always)]
pub(crate) fn generation_of(state: u64) -> u64 {
    state >> 2
}

pub(crate) fn set_enabled(on: bool) {
    if on {
        STATE.fetch_or(ENABLED_BIT, Ordering::Release);
    } else {
        STATE.fetch_and(!ENABLED_BIT, Ordering::Release);
    }
}
static CURRENT: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

/// Most events the slow path (proof scopes, text markers, GPU spans, NVML) may queue between
/// collector cycles before dropping.
const SLOW_QUEUE_MAX: usize = 262_144;

/// An event from a slow path, timed in ticks or already in session ns.
#[derive(Debug)]
pub(crate) enum SlowEvent {
    /// Timestamp fields are filled from `ticks` by the collector.
    Ticks(Ticks, Event),
    /// Already on the session clock.
    Session(Event),
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub generation: u64,
    pub config: ProbeConfig,
    pub clock: Clock,
    pub hello: Hello,
    pub rings: Mutex<Vec<Arc<Ring>>>,
    pub slow: Mutex<Vec<SlowEvent>>,
    pub slow_dropped: [AtomicU64; 64],
    pub next_proof: AtomicU64,
    /// The collector thread, unparked when a ring is half full or a subscriber arrives.
    pub collector: OnceLock<std::thread::Thread>,
    pub new_subscribers: Mutex<Vec<(Arc<SubQueue>, bool)>>,
    pub stop: AtomicBool,
    pub goodbye: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(generation: u64, config: ProbeConfig, clock: Clock, hello: Hello) -> Shared {
        Shared {
            generation,
            config,
            clock,
            hello,
            rings: Mutex::new(Vec::new()),
            slow: Mutex::new(Vec::new()),
            slow_dropped: [const { AtomicU64::new(0) }; 64],
            next_proof: AtomicU64::new(1),
            collector: OnceLock::new(),
            new_subscribers: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            goodbye: Mutex::new(None),
        }
    }

    pub fn wake_collector(&self) {
        if let Some(t) = self.collector.get() {
            t.unpark();
        }
    }

    /// Queues a slow-path event; counts it as dropped when the queue is full.
    pub fn push_slow(&self, ev: SlowEvent) {
        let kind = match &ev {
            SlowEvent::Ticks(_, e) | SlowEvent::Session(e) => e.kind().tag() as usize,
        };
        let mut q = self.slow.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= SLOW_QUEUE_MAX {
            drop(q);
            self.slow_dropped[kind % 64].fetch_add(1, Ordering::Relaxed);
            return;
        }
        q.push(ev);
    }
}

/// The running session, if any.
pub(crate) fn current() -> Option<Arc<Shared>> {
    CURRENT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Installs a session; fails if one is running.
pub(crate) fn install(shared: Arc<Shared>) -> Result<(), Arc<Shared>> {
    let mut g = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_some() {
        return Err(shared);
    }
    let tsc = if shared.clock.description() == "monotonic-tsc" {
        TSC_BIT
    } else {
        0
    };
    STATE.store(shared.generation << 2 | tsc, Ordering::Release);
    *g = Some(shared);
    Ok(())
}

pub(crate) fn uninstall(generation: u64) {
    let mut g = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if g.as_ref().is_some_and(|s| s.generation == generation) {
        *g = None;
    }
}

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Ordering::Relaxed)
}
