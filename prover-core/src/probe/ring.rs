//! The per-thread event buffer: a bounded single-producer single-consumer ring.
//!
//! The owning thread pushes (no lock, no allocation, no syscall: a slot write and a release
//! store); the collector drains. When the ring is full the event is dropped and counted per
//! kind — the prover never waits for its observers.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// What a hot-path record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RawKind {
    SpanBegin = 0,
    SpanEnd = 1,
    Marker = 2,
}

pub const RAW_KINDS: usize = 3;

/// One hot-path record: 32 bytes (two per cache line), copied by value.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct RawEvent {
    pub ticks: u64,
    /// SpanBegin/SpanEnd: the span id; Marker: the enclosing span (0 = none).
    pub span: u64,
    /// SpanBegin: the parent span (0 = none).
    pub parent: u64,
    /// SpanBegin: the proof (0 = none; proof ids fit 32 bits: one per batch).
    pub proof: u32,
    /// Interned name id (names fit 24 bits by construction: one per call site or kernel).
    pub name: u16,
    pub kind: RawKind,
    pub name_hi: u8,
}

impl RawEvent {
    #[inline(always)]
    pub fn new(
        kind: RawKind,
        ticks: u64,
        span: u64,
        parent: u64,
        proof: u64,
        name: u32,
    ) -> RawEvent {
        RawEvent {
            ticks,
            span,
            parent,
            proof: proof as u32,
            name: name as u16,
            kind,
            name_hi: (name >> 16) as u8,
        }
    }

    pub fn name(&self) -> u32 {
        self.name as u32 | (self.name_hi as u32) << 16
    }
}

const _: () = assert!(std::mem::size_of::<RawEvent>() == 32);

/// Pads a value to its own cache line so producer and consumer indices do not false-share.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded<T>(T);

pub struct Ring {
    slots: Box<[UnsafeCell<MaybeUninit<RawEvent>>]>,
    mask: usize,
    /// Next slot the consumer reads.
    head: Padded<AtomicUsize>,
    /// Next slot the producer writes.
    tail: Padded<AtomicUsize>,
    dropped: [AtomicU64; RAW_KINDS],
    /// Set when the owning thread exits; the collector frees the ring once drained.
    closed: AtomicBool,
    pub os_tid: u32,
    pub thread_name: String,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.slots.len())
            .field("os_tid", &self.os_tid)
            .field("thread_name", &self.thread_name)
            .finish()
    }
}

// SAFETY: slots are written only by the single producer (the owning thread, through
// `Producer`, which is !Send) at indices in [head, head+cap) not yet published, and read only
// by the single consumer (the collector, through `drain`, serialised by `&mut self` on the
// collector's side) at indices it acquired from `tail`. The release/acquire pair on
// `tail`/`head` orders slot accesses, so no slot is read and written at once.
unsafe impl Sync for Ring {}
// SAFETY: see `Sync`; `RawEvent` is plain data.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring of `capacity` events (rounded up to a power of two).
    pub fn new(capacity: usize, os_tid: u32, thread_name: String) -> Ring {
        let cap = capacity.max(16).next_power_of_two();
        let slots = (0..cap)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Ring {
            slots,
            mask: cap - 1,
            head: Padded(AtomicUsize::new(0)),
            tail: Padded(AtomicUsize::new(0)),
            dropped: [const { AtomicU64::new(0) }; RAW_KINDS],
            closed: AtomicBool::new(false),
            os_tid,
            thread_name,
        }
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Events dropped so far because the ring was full, per [`RawKind`].
    pub fn dropped(&self) -> [u64; RAW_KINDS] {
        std::array::from_fn(|i| self.dropped[i].load(Ordering::Relaxed))
    }

    /// Events waiting to be drained.
    pub fn len(&self) -> usize {
        self.tail
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(self.head.0.load(Ordering::Acquire))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Consumer side: hands every published event to `f`, then frees their slots. Must only be
    /// called by one consumer at a time (the collector owns the drain).
    pub fn drain(&self, mut f: impl FnMut(&RawEvent)) -> usize {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        let n = tail.wrapping_sub(head);
        for i in 0..n {
            let slot = &self.slots[head.wrapping_add(i) & self.mask];
            // SAFETY: indices in [head, tail) were fully written by the producer before its
            // release store of `tail`, which our acquire load observed; the producer does not
            // touch them again until we publish the new `head` below.
            let ev = unsafe { (*slot.get()).assume_init_ref() };
            f(ev);
        }
        self.head.0.store(tail, Ordering::Release);
        n
    }
}

/// Producer side of a ring: a cursor kept in the owning thread's `const` thread-local, so the
/// hot path reaches it without lazy-initialisation checks. It does not own the ring: the
/// thread's keep-alive guard holds the `Arc` and detaches this cursor before dropping it.
#[derive(Debug, Clone, Copy)]
pub struct Producer {
    ring: *const Ring,
    /// The ring's `tail`, published after every push (kept here to skip a load of `ring`).
    tail_at: *const AtomicUsize,
    /// The ring's slots and mask, cached so a push does not re-read them through `ring`.
    slots: *const UnsafeCell<MaybeUninit<RawEvent>>,
    mask: usize,
    tail: usize,
    cached_head: usize,
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Ok,
    /// Stored, and the ring just reached half full: wake the collector.
    HalfFull,
    /// The ring was full: dropped and counted.
    Dropped,
    /// No ring attached.
    Detached,
}

impl Producer {
    pub const DETACHED: Producer = Producer {
        ring: std::ptr::null(),
        tail_at: std::ptr::null(),
        slots: std::ptr::null(),
        mask: 0,
        tail: 0,
        cached_head: 0,
    };

    /// Attaches to `ring`. The caller keeps `ring` alive until [`Producer::detach`].
    pub fn attach(ring: &std::sync::Arc<Ring>) -> Producer {
        Producer {
            ring: std::sync::Arc::as_ptr(ring),
            tail_at: &ring.tail.0,
            slots: ring.slots.as_ptr(),
            mask: ring.mask,
            tail: ring.tail.0.load(Ordering::Relaxed),
            cached_head: ring.head.0.load(Ordering::Acquire),
        }
    }

    pub fn detach(&mut self) {
        *self = Producer::DETACHED;
    }

    pub fn is_attached_to(&self, ring: *const Ring) -> bool {
        !self.ring.is_null() && std::ptr::eq(self.ring, ring)
    }

    /// Hot path: no lock, no allocation, no syscall.
    ///
    /// # Safety
    /// The attached ring must be alive, and this producer must be the ring's only producer.
    #[inline(always)]
    pub unsafe fn push(&mut self, ev: RawEvent) -> Pushed {
        if self.ring.is_null() {
            return Pushed::Detached;
        }
        let cap = self.mask + 1;
        if self.tail.wrapping_sub(self.cached_head) >= cap {
            // SAFETY: the caller guarantees the ring outlives the attachment.
            let ring = unsafe { &*self.ring };
            self.cached_head = ring.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.cached_head) >= cap {
                ring.dropped[ev.kind as usize].fetch_add(1, Ordering::Relaxed);
                return Pushed::Dropped;
            }
        }
        // SAFETY: `tail & mask` < capacity = the length of the slot array `slots` points to,
        // which lives as long as the ring. The slot is outside [head, tail) as seen by the
        // consumer (we checked there is room), so the consumer does not read it until we
        // publish `tail` below; we are the only producer (guaranteed by the caller).
        unsafe { (*(*self.slots.add(self.tail & self.mask)).get()).write(ev) };
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: `tail_at` points into the ring, alive as long as the attachment.
        unsafe { (*self.tail_at).store(self.tail, Ordering::Release) };
        if self.tail.wrapping_sub(self.cached_head) == cap / 2 {
            // Refresh: only signal when the ring really is half full.
            // SAFETY: as above.
            let ring = unsafe { &*self.ring };
            self.cached_head = ring.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.cached_head) >= cap / 2 {
                return Pushed::HalfFull;
            }
        }
        Pushed::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ev(i: u64) -> RawEvent {
        RawEvent::new(RawKind::SpanBegin, i, i, 0, 0, 0)
    }

    #[test]
    fn full_ring_drops_and_counts_then_recovers() {
        let ring = Arc::new(Ring::new(16, 1, "t".into()));
        let mut p = Producer::attach(&ring);
        let mut results = Vec::new();
        for i in 0..20 {
            // SAFETY: `ring` is alive and `p` is its only producer.
            results.push(unsafe { p.push(ev(i)) });
        }
        assert_eq!(results.iter().filter(|r| **r == Pushed::Dropped).count(), 4);
        assert!(results.contains(&Pushed::HalfFull));
        assert_eq!(ring.dropped()[0], 4);
        let mut got = Vec::new();
        ring.drain(|e| got.push(e.ticks));
        assert_eq!(got, (0..16).collect::<Vec<_>>());
        // SAFETY: as above.
        assert_eq!(unsafe { p.push(ev(99)) }, Pushed::Ok);
        got.clear();
        ring.drain(|e| got.push(e.ticks));
        assert_eq!(got, vec![99]);
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing_they_do_not_count() {
        let ring = Arc::new(Ring::new(1024, 1, "t".into()));
        let r2 = ring.clone();
        let n = 200_000u64;
        let producer = std::thread::Builder::new()
            .name("ring-test-producer".into())
            .spawn(move || {
                let mut p = Producer::attach(&r2);
                for i in 0..n {
                    // SAFETY: `r2` is alive for the loop and `p` is its only producer.
                    unsafe { p.push(ev(i)) };
                }
            })
            .unwrap();
        let mut seen = 0u64;
        let mut last = None;
        while !producer.is_finished() || !ring.is_empty() {
            ring.drain(|e| {
                if let Some(l) = last {
                    assert!(e.ticks > l, "order");
                }
                last = Some(e.ticks);
                seen += 1;
            });
        }
        producer.join().unwrap();
        ring.drain(|_| seen += 1);
        assert_eq!(seen + ring.dropped()[0], n);
    }
}
