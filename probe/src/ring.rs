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

impl RawKind {
    /// The kind packed in a record's last word.
    pub fn of_meta(meta: u64) -> RawKind {
        match (meta >> 56) as u8 {
            0 => RawKind::SpanBegin,
            1 => RawKind::SpanEnd,
            _ => RawKind::Marker,
        }
    }
}

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
    #[cfg(test)]
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
            meta: RawEvent::meta(kind, proof, name),
        }
    }

    /// The packed last word. `name` must fit 24 bits, as every interned id does
    /// ([`super::names::MAX_NAMES`]); it is not masked, to keep an instruction off the hot path.
    #[inline(always)]
    pub const fn meta(kind: RawKind, proof: u64, name: u32) -> u64 {
        debug_assert!(name < 1 << 24, "name id does not fit 24 bits");
        (proof & 0xffff_ffff) | (name as u64) << 32 | (kind as u64) << 56
    }

    pub fn proof(&self) -> u32 {
        self.meta as u32
    }

    pub fn name(&self) -> u32 {
        (self.meta >> 32) as u32 & 0xff_ffff
    }

    pub fn kind(&self) -> RawKind {
        RawKind::of_meta(self.meta)
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

/// Record numbers: every slot a producer fills has a number unique in the process, so the
/// number of a `SpanBegin` is its span id and the hot path needs no counter of its own.
/// Producers take them in blocks from here; a block lasts `SEQ_BLOCK` pushes.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);
pub const SEQ_BLOCK: usize = 4096;

/// Producer side of a ring: a cursor kept in the owning thread's `const` thread-local, so the
/// hot path reaches it without lazy-initialisation checks. It does not own the ring: the
/// thread's keep-alive guard holds the `Arc` and detaches this cursor before dropping it.
///
/// Everything a push may have to handle besides the write — the ring full as last seen, the
/// ring half full (wake the collector), the block of record numbers used up, no ring at all —
/// is folded into one precomputed position, `check_at`: the common push is one compare, four
/// stores and the tail's publication. A detached producer has `tail == check_at`, so every
/// push goes to the slow path that tells it so.
#[derive(Debug, Clone, Copy)]
pub struct Producer {
    ring: *const Ring,
    /// The ring's `tail`, published after every push (kept here to skip a load of `ring`).
    tail_at: *const AtomicUsize,
    /// The ring's slots and mask, cached so a push does not re-read them through `ring`.
    slots: *const UnsafeCell<MaybeUninit<RawEvent>>,
    mask: usize,
    tail: usize,
    /// The tail at which the next push takes the slow path: the nearest of `limit`, `wake_at`
    /// and `seq_end`.
    check_at: usize,
    /// Last head seen + capacity: the ring is full when `tail` reaches it.
    limit: usize,
    /// The push at this tail leaves the ring half full (as last seen): it re-reads the head.
    wake_at: usize,
    /// The record at `tail` has number `seq_base + tail`.
    seq_base: u64,
    /// The tail at which the block of numbers is used up.
    seq_end: usize,
    /// Every push takes the slow path (`check_at` stays at `tail`): for sessions whose ticks
    /// do not come from the TSC, so the fast path never has to ask.
    slow_only: bool,
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
        check_at: 0,
        limit: 0,
        wake_at: 0,
        seq_base: 0,
        seq_end: 0,
        slow_only: false,
    };

    /// Attaches to `ring`. The caller keeps `ring` alive until [`Producer::detach`].
    pub fn attach(ring: &std::sync::Arc<Ring>) -> Producer {
        let tail = ring.tail.0.load(Ordering::Relaxed);
        let mut p = Producer {
            ring: std::sync::Arc::as_ptr(ring),
            tail_at: &ring.tail.0,
            slots: ring.slots.as_ptr(),
            mask: ring.mask,
            tail,
            check_at: tail,
            limit: tail,
            wake_at: tail,
            seq_base: 0,
            // Numbers are taken at the first push.
            seq_end: tail,
            slow_only: false,
        };
        p.saw_head(ring.head.0.load(Ordering::Acquire));
        p
    }

    /// This producer, with every push sent to the slow path: [`Producer::has_room`] is never
    /// true.
    pub fn slow_only(mut self) -> Producer {
        self.slow_only = true;
        self.aim();
        self
    }

    /// Bounds from a fresh look at the consumer's head.
    fn saw_head(&mut self, head: usize) {
        let cap = self.mask + 1;
        self.limit = head.wrapping_add(cap);
        let used = self.tail.wrapping_sub(head);
        // The push that makes `cap / 2` records waiting; at or past that already, the next one.
        self.wake_at = if used >= cap / 2 {
            self.tail
        } else {
            head.wrapping_add(cap / 2 - 1)
        };
        self.aim();
    }

    /// `check_at` = the nearest bound ahead of `tail` (each is at or ahead of it).
    fn aim(&mut self) {
        if self.slow_only {
            self.check_at = self.tail;
            return;
        }
        let ahead = |x: usize| x.wrapping_sub(self.tail);
        self.check_at = [self.limit, self.wake_at, self.seq_end]
            .into_iter()
            .min_by_key(|&x| ahead(x))
            .unwrap_or(self.tail);
    }

    pub fn detach(&mut self) {
        *self = Producer::DETACHED;
    }

    pub fn is_attached_to(&self, ring: *const Ring) -> bool {
        !self.ring.is_null() && std::ptr::eq(self.ring, ring)
    }

    /// Whether the next push can skip every check: no bound is reached.
    #[inline(always)]
    pub fn has_room(&self) -> bool {
        self.tail != self.check_at
    }

    /// The hot path, after [`Producer::has_room`]: four stores and the tail's publication. With
    /// `numbered`, the record's span is its record number (a fresh span id). Returns the
    /// record's span.
    ///
    /// # Safety
    /// The attached ring must be alive, this producer must be the ring's only producer, and
    /// `has_room` must have been true with no push since.
    #[inline(always)]
    pub unsafe fn push_fast(
        &mut self,
        ticks: u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> u64 {
        let tail = self.tail;
        let span = self.span_at(tail, span, numbered);
        // SAFETY: forwarded from the caller; `tail` is short of `check_at`, hence of `limit`.
        unsafe { self.write(tail, ticks, span, parent, meta) };
        span
    }

    /// The span of the record stored at `tail`: its record number when `numbered`.
    #[inline(always)]
    fn span_at(&self, tail: usize, span: u64, numbered: bool) -> u64 {
        if numbered {
            self.seq_base.wrapping_add(tail as u64)
        } else {
            span
        }
    }

    /// Any push: the hot path when no bound is reached, else the slow path. Returns the
    /// record's span and what happened; a dropped numbered record still consumes its number,
    /// so span ids stay unique.
    ///
    /// # Safety
    /// The attached ring must be alive, and this producer must be the ring's only producer.
    #[inline(always)]
    pub unsafe fn push(
        &mut self,
        ticks: u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> (u64, Pushed) {
        if self.has_room() {
            // SAFETY: forwarded from the caller; `has_room` was just true.
            (
                unsafe { self.push_fast(ticks, span, parent, meta, numbered) },
                Pushed::Ok,
            )
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { self.push_slow(ticks, span, parent, meta, numbered) }
        }
    }

    /// Stores a record at `tail` and publishes it.
    ///
    /// # Safety
    /// As for [`Producer::push`], and `tail` (this producer's tail) is below `limit`.
    #[inline(always)]
    unsafe fn write(&mut self, tail: usize, ticks: u64, span: u64, parent: u64, meta: u64) {
        // SAFETY: `tail & mask` < capacity = the length of the slot array `slots` points to,
        // which lives as long as the ring. The slot is outside [head, tail) as seen by the
        // consumer (`tail` is below `limit`, the last head seen + capacity), so the consumer
        // does not read it until we publish `tail` below; we are the only producer. RawEvent
        // is `repr(C)` of four u64s, so the slot is four aligned words. Written word by word:
        // a whole-struct write went through the stack and two 16-byte loads that could not be
        // forwarded from the 8-byte stores before them (+4 ns a span).
        unsafe {
            let w = (*self.slots.add(tail & self.mask)).get().cast::<u64>();
            w.write(ticks);
            w.add(1).write(span);
            w.add(2).write(parent);
            w.add(3).write(meta);
        }
        let tail = tail.wrapping_add(1);
        self.tail = tail;
        // SAFETY: `tail_at` points into the ring, alive as long as the attachment.
        unsafe { (*self.tail_at).store(tail, Ordering::Release) };
    }

    /// A bound was reached: no ring, numbers used up, the ring full or half full as last
    /// seen. Re-reads the head, then stores the record if there is room. Takes the record as
    /// words, like every push: a `RawEvent` argument to this out-of-line call went through
    /// memory, and the compiler hoisted its stores into the common path.
    ///
    /// # Safety
    /// As for [`Producer::push`].
    #[cold]
    #[inline(never)]
    unsafe fn push_slow(
        &mut self,
        ticks: u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> (u64, Pushed) {
        if self.ring.is_null() {
            return (0, Pushed::Detached);
        }
        // SAFETY: the caller guarantees the ring outlives the attachment.
        let ring = unsafe { &*self.ring };
        let tail = self.tail;
        if tail == self.seq_end {
            let start = NEXT_SEQ.fetch_add(SEQ_BLOCK as u64, Ordering::Relaxed);
            self.seq_base = start.wrapping_sub(tail as u64);
            self.seq_end = tail.wrapping_add(SEQ_BLOCK);
        }
        let span = self.span_at(tail, span, numbered);
        let head = ring.head.0.load(Ordering::Acquire);
        let cap = self.mask + 1;
        let used = tail.wrapping_sub(head);
        if used >= cap {
            ring.dropped[RawKind::of_meta(meta) as usize].fetch_add(1, Ordering::Relaxed);
            if numbered {
                // The number is spent: the next record must not reuse it.
                self.seq_base = self.seq_base.wrapping_add(1);
                self.seq_end = self.seq_end.wrapping_sub(1);
            }
            self.saw_head(head);
            return (span, Pushed::Dropped);
        }
        let due = tail == self.wake_at;
        // SAFETY: forwarded from the caller; `used < cap`, so `tail` is below head + cap.
        unsafe {
            self.limit = head.wrapping_add(cap);
            self.write(tail, ticks, span, parent, meta);
        }
        if due && used + 1 >= cap / 2 {
            // Once per crossing: the next wake waits until the ring is seen full again, or
            // drained and refilled past half.
            self.wake_at = self.limit;
            self.aim();
            return (span, Pushed::HalfFull);
        }
        self.saw_head(head);
        (span, Pushed::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ev(i: u64) -> RawEvent {
        RawEvent::new(RawKind::SpanBegin, i, i, 0, 0, 0)
    }

    /// # Safety
    /// As for [`Producer::push`].
    unsafe fn push(p: &mut Producer, e: RawEvent, numbered: bool) -> (u64, Pushed) {
        // SAFETY: forwarded.
        unsafe { p.push(e.ticks, e.span, e.parent, e.meta, numbered) }
    }

    #[test]
    fn full_ring_drops_and_counts_then_recovers() {
        let ring = Arc::new(Ring::new(16, 1, "t".into()));
        let mut p = Producer::attach(&ring);
        let mut results = Vec::new();
        for i in 0..20 {
            // SAFETY: `ring` is alive and `p` is its only producer.
            results.push(unsafe { push(&mut p, ev(i), false) }.1);
        }
        assert_eq!(results.iter().filter(|r| **r == Pushed::Dropped).count(), 4);
        assert!(results.contains(&Pushed::HalfFull));
        assert_eq!(ring.dropped()[0], 4);
        let mut got = Vec::new();
        ring.drain(|e| got.push(e.ticks));
        assert_eq!(got, (0..16).collect::<Vec<_>>());
        // SAFETY: as above.
        assert_eq!(unsafe { push(&mut p, ev(99), false) }.1, Pushed::Ok);
        got.clear();
        ring.drain(|e| got.push(e.ticks));
        assert_eq!(got, vec![99]);
    }

    #[test]
    fn a_detached_producer_says_so_and_counts_nothing() {
        let mut p = Producer::DETACHED;
        for i in 0..3 {
            // SAFETY: no ring is attached; push must not touch one.
            assert_eq!(unsafe { push(&mut p, ev(i), true) }, (0, Pushed::Detached));
        }
    }

    #[test]
    fn half_full_is_signalled_once_per_crossing() {
        let ring = Arc::new(Ring::new(16, 1, "t".into()));
        let mut p = Producer::attach(&ring);
        let push = |p: &mut Producer, i| {
            // SAFETY: `ring` is alive and `p` is its only producer.
            unsafe { push(p, ev(i), false) }.1
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
                    unsafe { push(&mut p, ev(i), false) };
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

    #[test]
    fn record_numbers_are_unique_across_drops_blocks_and_producers() {
        let a = Arc::new(Ring::new(16, 1, "a".into()));
        let b = Arc::new(Ring::new(16, 2, "b".into()));
        let (mut pa, mut pb) = (Producer::attach(&a), Producer::attach(&b));
        let mut ids = std::collections::HashSet::new();
        let mut dropped = 0;
        // Past several blocks, with both rings overflowing between drains.
        for i in 0..(3 * SEQ_BLOCK as u64) {
            for (p, r) in [(&mut pa, &a), (&mut pb, &b)] {
                // SAFETY: the rings are alive and each producer is its ring's only producer.
                let (id, pushed) = unsafe { push(p, ev(i), true) };
                assert_ne!(pushed, Pushed::Detached);
                dropped += usize::from(pushed == Pushed::Dropped);
                assert!(ids.insert(id), "number {id} given twice");
                if i % 40 == 39 {
                    r.drain(|_| {});
                }
            }
        }
        assert!(dropped > 0, "the test must cross full rings");
        // A record that is not numbered keeps its span.
        a.drain(|_| {});
        // SAFETY: as above.
        assert_eq!(unsafe { push(&mut pa, ev(77), false) }, (77, Pushed::Ok));
        // Stored records carry their number.
        // SAFETY: as above.
        let (id, _) = unsafe { push(&mut pa, ev(5), true) };
        let mut spans = Vec::new();
        a.drain(|e| spans.push(e.span));
        assert_eq!(spans, vec![77, id]);
    }

    #[test]
    fn a_slow_only_producer_never_has_room_yet_stores_everything() {
        let ring = Arc::new(Ring::new(16, 1, "t".into()));
        let mut p = Producer::attach(&ring).slow_only();
        for i in 0..10 {
            assert!(!p.has_room());
            // SAFETY: `ring` is alive and `p` is its only producer.
            assert_ne!(unsafe { push(&mut p, ev(i), false) }.1, Pushed::Dropped);
        }
        let mut got = Vec::new();
        ring.drain(|e| got.push(e.ticks));
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }
}
