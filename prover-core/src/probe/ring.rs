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

/// One hot-path record: 32 bytes (two per cache line), copied by value. Four words, so a push
/// is four plain 8-byte stores (the proof, name and kind share the last one).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct RawEvent {
    pub ticks: u64,
    /// SpanBegin/SpanEnd: the span id; Marker: the enclosing span (0 = none).
    pub span: u64,
    /// SpanBegin: the parent span (0 = none).
    pub parent: u64,
    /// Bits 0–31: the proof (0 = none; proof ids fit 32 bits: one per batch); bits 32–55: the
    /// interned name id (names fit 24 bits by construction: one per call site or kernel);
    /// bits 56–63: the kind.
    meta: u64,
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
            meta: (proof & 0xffff_ffff) | (name as u64 & 0xff_ffff) << 32 | (kind as u64) << 56,
        }
    }

    pub fn proof(&self) -> u32 {
        self.meta as u32
    }

    pub fn name(&self) -> u32 {
        (self.meta >> 32) as u32 & 0xff_ffff
    }

    pub fn kind(&self) -> RawKind {
        match (self.meta >> 56) as u8 {
            0 => RawKind::SpanBegin,
            1 => RawKind::SpanEnd,
            _ => RawKind::Marker,
        }
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
///
/// The bounds a push checks are precomputed from the last head seen (`limit`: the ring is full
/// when `tail` reaches it; `wake_at`: half full), so the common push is one compare, four
/// stores, the tail's publication and one more compare. A detached producer has
/// `tail == limit`, which sends every push to the slow path that tells it so.
#[derive(Debug, Clone, Copy)]
pub struct Producer {
    ring: *const Ring,
    /// The ring's `tail`, published after every push (kept here to skip a load of `ring`).
    tail_at: *const AtomicUsize,
    /// The ring's slots and mask, cached so a push does not re-read them through `ring`.
    slots: *const UnsafeCell<MaybeUninit<RawEvent>>,
    mask: usize,
    tail: usize,
    /// Last head seen + capacity.
    limit: usize,
    /// Last head seen + capacity / 2.
    wake_at: usize,
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
        limit: 0,
        wake_at: 0,
    };

    /// Attaches to `ring`. The caller keeps `ring` alive until [`Producer::detach`].
    pub fn attach(ring: &std::sync::Arc<Ring>) -> Producer {
        let mut p = Producer {
            ring: std::sync::Arc::as_ptr(ring),
            tail_at: &ring.tail.0,
            slots: ring.slots.as_ptr(),
            mask: ring.mask,
            tail: ring.tail.0.load(Ordering::Relaxed),
            limit: 0,
            wake_at: 0,
        };
        p.saw_head(ring.head.0.load(Ordering::Acquire));
        p
    }

    fn saw_head(&mut self, head: usize) {
        let cap = self.mask + 1;
        self.limit = head.wrapping_add(cap);
        // Already at or past half full: wake at the next push that finds it so.
        let half = head.wrapping_add(cap / 2);
        self.wake_at = if self.tail.wrapping_sub(head) >= cap / 2 {
            self.tail.wrapping_add(1)
        } else {
            half
        };
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
        let tail = self.tail;
        // SAFETY: forwarded from the caller.
        if tail == self.limit && !unsafe { self.make_room(ev.kind()) } {
            return if self.ring.is_null() {
                Pushed::Detached
            } else {
                Pushed::Dropped
            };
        }
        // SAFETY: `tail & mask` < capacity = the length of the slot array `slots` points to,
        // which lives as long as the ring. The slot is outside [head, tail) as seen by the
        // consumer (`tail` is below `limit`, the last head seen + capacity), so the consumer
        // does not read it until we publish `tail` below; we are the only producer. RawEvent
        // is `repr(C)` of four u64s, so the slot is four aligned words. Written word by word:
        // a whole-struct write went through the stack and two 16-byte loads that could not be
        // forwarded from the 8-byte stores before them (+4 ns a span).
        unsafe {
            let w = (*self.slots.add(tail & self.mask)).get().cast::<u64>();
            w.write(ev.ticks);
            w.add(1).write(ev.span);
            w.add(2).write(ev.parent);
            w.add(3).write(ev.meta);
        }
        let tail = tail.wrapping_add(1);
        self.tail = tail;
        // SAFETY: `tail_at` points into the ring, alive as long as the attachment.
        unsafe { (*self.tail_at).store(tail, Ordering::Release) };
        if tail == self.wake_at {
            // SAFETY: forwarded from the caller.
            return unsafe { self.half_full() };
        }
        Pushed::Ok
    }

    /// The ring looked full: re-reads the head. False when it is full (the event is dropped
    /// and counted) or when no ring is attached.
    ///
    /// # Safety
    /// As for [`Producer::push`].
    #[cold]
    unsafe fn make_room(&mut self, kind: RawKind) -> bool {
        if self.ring.is_null() {
            return false;
        }
        // SAFETY: the caller guarantees the ring outlives the attachment.
        let ring = unsafe { &*self.ring };
        self.saw_head(ring.head.0.load(Ordering::Acquire));
        if self.tail == self.limit {
            ring.dropped[kind as usize].fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The ring may be half full: re-reads the head; `HalfFull` only if it really is.
    ///
    /// # Safety
    /// As for [`Producer::push`].
    #[cold]
    unsafe fn half_full(&mut self) -> Pushed {
        // SAFETY: the caller guarantees the ring outlives the attachment.
        let ring = unsafe { &*self.ring };
        let head = ring.head.0.load(Ordering::Acquire);
        let cap = self.mask + 1;
        let full_enough = self.tail.wrapping_sub(head) >= cap / 2;
        self.saw_head(head);
        if full_enough {
            // Once per crossing: the next wake waits for the collector to drain and refill.
            self.wake_at = head.wrapping_add(cap);
            Pushed::HalfFull
        } else {
            Pushed::Ok
        }
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
    fn a_detached_producer_says_so_and_counts_nothing() {
        let mut p = Producer::DETACHED;
        for i in 0..3 {
            // SAFETY: no ring is attached; push must not touch one.
            assert_eq!(unsafe { p.push(ev(i)) }, Pushed::Detached);
        }
    }

    #[test]
    fn half_full_is_signalled_once_per_crossing() {
        let ring = Arc::new(Ring::new(16, 1, "t".into()));
        let mut p = Producer::attach(&ring);
        let push = |p: &mut Producer, i| {
            // SAFETY: `ring` is alive and `p` is its only producer.
            unsafe { p.push(ev(i)) }
        };
        let first: Vec<Pushed> = (0..12).map(|i| push(&mut p, i)).collect();
        assert_eq!(first[7], Pushed::HalfFull, "the 8th of 16 slots: {first:?}");
        assert_eq!(first.iter().filter(|r| **r == Pushed::HalfFull).count(), 1);
        // Drained, then filled past half again: signalled again.
        ring.drain(|_| {});
        let again: Vec<Pushed> = (0..12).map(|i| push(&mut p, i)).collect();
        assert_eq!(
            again.iter().filter(|r| **r == Pushed::HalfFull).count(),
            1,
            "{again:?}"
        );
        assert!(!again.contains(&Pushed::Dropped));
    }

    #[test]
    fn records_keep_their_fields() {
        let e = RawEvent::new(RawKind::Marker, 7, 8, 9, 0xdead_beef, 0xab_cdef);
        assert_eq!((e.ticks, e.span, e.parent), (7, 8, 9));
        assert_eq!(
            (e.proof(), e.name(), e.kind()),
            (0xdead_beef, 0xab_cdef, RawKind::Marker)
        );
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
