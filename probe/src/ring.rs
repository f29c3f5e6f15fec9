//! The per-thread event buffer: a bounded single-producer single-consumer ring.
//!
//! [`channel`] makes a ring and returns its two ends. The [`Producer`] is the only writer: it
//! is neither `Copy` nor `Clone`, and it holds a strong reference to the ring, so a push needs
//! no promise from its caller. The [`Consumer`] is the only reader: [`Consumer::drain`] takes
//! `&mut self`. A push is a slot write and a release store (no lock, no allocation, no
//! syscall); when the ring is full the event is dropped and counted per kind — the prover
//! never waits for its observers. Under `--cfg proofscope_loom` the atomics and the slots are
//! loom's, and `tests` below holds the model.

use std::mem::{ManuallyDrop, MaybeUninit};
use sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Ordering, SlotCell};

#[cfg(not(proofscope_loom))]
mod sync {
    pub use std::sync::Arc;
    pub use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// A slot: plain memory.
    #[derive(Debug)]
    pub struct SlotCell<T>(std::cell::UnsafeCell<T>);

    impl<T> SlotCell<T> {
        pub fn new(v: T) -> Self {
            SlotCell(std::cell::UnsafeCell::new(v))
        }

        /// # Safety
        /// No other access to this slot may overlap the call.
        #[inline(always)]
        pub unsafe fn write_with(&self, f: impl FnOnce(*mut T)) {
            f(self.0.get())
        }

        /// # Safety
        /// No write to this slot may overlap the call.
        #[inline(always)]
        pub unsafe fn read_with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(proofscope_loom)]
mod sync {
    pub use loom::sync::Arc;
    pub use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// A slot whose accesses loom checks for overlap.
    #[derive(Debug)]
    pub struct SlotCell<T>(loom::cell::UnsafeCell<T>);

    impl<T> SlotCell<T> {
        pub fn new(v: T) -> Self {
            SlotCell(loom::cell::UnsafeCell::new(v))
        }

        /// # Safety
        /// No other access to this slot may overlap the call (loom checks).
        pub unsafe fn write_with(&self, f: impl FnOnce(*mut T)) {
            self.0.with_mut(f)
        }

        /// # Safety
        /// No write to this slot may overlap the call (loom checks).
        pub unsafe fn read_with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            self.0.with(f)
        }
    }
}

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
    /// ([`crate::names::MAX_NAMES`]); it is not masked, to keep an instruction off the hot path.
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

type Slot = SlotCell<MaybeUninit<RawEvent>>;

/// The ring both ends share. Only reachable through a [`Producer`] and a [`Consumer`].
struct Ring {
    slots: Box<[Slot]>,
    mask: usize,
    /// Next slot the consumer reads.
    head: Padded<AtomicUsize>,
    /// Next slot the producer writes.
    tail: Padded<AtomicUsize>,
    dropped: [AtomicU64; RAW_KINDS],
    /// Set when the producer detaches (its thread exits): the consumer retires the ring once
    /// it has drained it.
    closed: AtomicBool,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.slots.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: a slot is written only by the ring's one `Producer` (not `Clone`, not `Send`) at
// indices in [tail, head + capacity) — not yet published — and read only by the one
// `Consumer` (its drain takes `&mut self`) at indices in [head, tail) it acquired from
// `tail`. The release/acquire pairs on `tail` and `head` order those accesses, so no slot is
// read and written at once; the loom model in `tests` checks exactly this.
unsafe impl Sync for Ring {}
// SAFETY: see `Sync`; `RawEvent` is plain data.
unsafe impl Send for Ring {}

/// Makes a ring of `capacity` events (rounded up to a power of two, at least 16) and returns
/// its only producer and its only consumer.
pub fn channel(capacity: usize) -> (Producer, Consumer) {
    let cap = capacity.max(16).next_power_of_two();
    let ring = Arc::new(Ring {
        slots: (0..cap)
            .map(|_| SlotCell::new(MaybeUninit::uninit()))
            .collect(),
        mask: cap - 1,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        dropped: std::array::from_fn(|_| AtomicU64::new(0)),
        closed: AtomicBool::new(false),
    });
    let consumer = Consumer { ring: ring.clone() };
    (Producer::attach(ring), consumer)
}

/// The reading end of a ring, owned by the collector.
pub struct Consumer {
    ring: Arc<Ring>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.ring.slots.len())
            .field("waiting", &self.len())
            .finish()
    }
}

impl Consumer {
    /// Whether the producer has detached (no event will follow those still waiting).
    pub fn is_closed(&self) -> bool {
        self.ring.closed.load(Ordering::Acquire)
    }

    /// Events dropped so far because the ring was full, per [`RawKind`].
    pub fn dropped(&self) -> [u64; RAW_KINDS] {
        std::array::from_fn(|i| self.ring.dropped[i].load(Ordering::Relaxed))
    }

    /// Events waiting to be drained.
    pub fn len(&self) -> usize {
        self.ring
            .tail
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(self.ring.head.0.load(Ordering::Relaxed))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands every published event to `f`, then frees their slots; returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(&RawEvent)) -> usize {
        let ring = &*self.ring;
        let head = ring.head.0.load(Ordering::Relaxed);
        let tail = ring.tail.0.load(Ordering::Acquire);
        let n = tail.wrapping_sub(head);
        for i in 0..n {
            let slot = &ring.slots[head.wrapping_add(i) & ring.mask];
            // SAFETY: indices in [head, tail) were fully written by the producer before its
            // release store of `tail`, which our acquire load observed; the producer does not
            // touch them again until we publish the new `head` below, and `&mut self` makes
            // this the only read in progress.
            unsafe { slot.read_with(|p| f((*p).assume_init_ref())) };
        }
        ring.head.0.store(tail, Ordering::Release);
        n
    }
}

/// Record numbers: every slot a producer fills has a number unique in the process, so the
/// number of a `SpanBegin` is its span id and the hot path needs no counter of its own.
/// Producers take them in blocks from here; a block lasts `SEQ_BLOCK` pushes. (A plain std
/// atomic even under loom: a process-wide counter, not part of the ring protocol.)
static NEXT_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
/// (Smaller under Miri, so its tests cross blocks in a reasonable time.)
pub const SEQ_BLOCK: usize = if cfg!(miri) { 64 } else { 4096 };

/// The writing end of a ring: kept in the owning thread's `const` thread-local, so the hot
/// path reaches it without lazy-initialisation checks. It owns a strong reference to its ring
/// (released by [`Producer::detach`]), so the ring outlives every push; it is neither `Copy`
/// nor `Clone`, so a ring has one producer. It has no destructor (the thread-local that holds
/// it must not get one): a producer dropped without `detach` leaks its ring, never frees it
/// early.
///
/// Everything a push may have to handle besides the write — the ring full as last seen, the
/// ring half full (wake the collector), the block of record numbers used up, no ring at all —
/// is folded into one precomputed position, `check_at`: the common push is one compare, four
/// stores and the tail's publication. A detached producer has `tail == check_at`, so every
/// push goes to the slow path that tells it so.
#[derive(Debug)]
pub struct Producer {
    ring: Option<ManuallyDrop<Arc<Ring>>>,
    /// The ring's `tail`, published after every push (cached: one load less per push).
    tail_at: *const AtomicUsize,
    /// The ring's slots and mask, cached so a push does not re-read them through `ring`.
    slots: *const Slot,
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

// SAFETY: the raw pointers point into the ring this producer holds a strong reference to (the
// ring is `Sync`), and moving the producer keeps it the ring's only one: the ring's protocol
// does not care which thread pushes, only that one does at a time, which `&mut self` ensures.
unsafe impl Send for Producer {}

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
        ring: None,
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

    fn attach(ring: Arc<Ring>) -> Producer {
        let tail = ring.tail.0.load(Ordering::Relaxed);
        let head = ring.head.0.load(Ordering::Acquire);
        let mut p = Producer {
            tail_at: &ring.tail.0,
            slots: ring.slots.as_ptr(),
            mask: ring.mask,
            ring: Some(ManuallyDrop::new(ring)),
            tail,
            check_at: tail,
            limit: tail,
            wake_at: tail,
            seq_base: 0,
            // Numbers are taken at the first push.
            seq_end: tail,
            slow_only: false,
        };
        p.saw_head(head);
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

    /// Closes the ring (the consumer retires it once drained) and lets go of it.
    pub fn detach(&mut self) {
        if let Some(ring) = self.ring.take() {
            ring.closed.store(true, Ordering::Release);
            drop(ManuallyDrop::into_inner(ring));
        }
        *self = Producer::DETACHED;
    }

    #[cfg(all(test, not(proofscope_loom)))]
    pub fn is_attached(&self) -> bool {
        self.ring.is_some()
    }

    /// Whether the next push can skip every check: no bound is reached.
    #[inline(always)]
    pub fn has_room(&self) -> bool {
        self.tail != self.check_at
    }

    /// The hot path: when no bound is reached, stores a record (its tick read by `ticks`,
    /// only then) and returns its span; else `None`, having stored nothing. With `numbered`,
    /// the record's span is its record number (a fresh span id).
    #[inline(always)]
    pub fn try_push_fast(
        &mut self,
        ticks: impl FnOnce() -> u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> Option<u64> {
        if !self.has_room() {
            return None;
        }
        let tail = self.tail;
        let span = self.span_at(tail, span, numbered);
        // SAFETY: `has_room` holds, so `tail` is short of `check_at`, hence of `limit`, and
        // a ring is attached (a detached producer never has room).
        unsafe { self.write(tail, ticks(), span, parent, meta) };
        Some(span)
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
    #[inline(always)]
    pub fn push(
        &mut self,
        ticks: u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> (u64, Pushed) {
        match self.try_push_fast(|| ticks, span, parent, meta, numbered) {
            Some(span) => (span, Pushed::Ok),
            None => self.push_slow(ticks, span, parent, meta, numbered),
        }
    }

    /// Stores a record at `tail` and publishes it.
    ///
    /// # Safety
    /// A ring is attached, and `tail` (this producer's tail) is below `limit`.
    #[inline(always)]
    unsafe fn write(&mut self, tail: usize, ticks: u64, span: u64, parent: u64, meta: u64) {
        // SAFETY: `tail & mask` < capacity = the length of the slot array `slots` points to,
        // which lives as long as the ring this producer holds. The slot is outside
        // [head, tail) as seen by the consumer (`tail` is below `limit`, the last head seen +
        // capacity), so the consumer does not read it until we publish `tail` below; we are
        // the only producer. RawEvent is `repr(C)` of four u64s, so the slot is four aligned
        // words. Written word by word: a whole-struct write went through the stack and two
        // 16-byte loads that could not be forwarded from the 8-byte stores before them
        // (+4 ns a span).
        unsafe {
            (*self.slots.add(tail & self.mask)).write_with(|p| {
                let w = p.cast::<u64>();
                w.write(ticks);
                w.add(1).write(span);
                w.add(2).write(parent);
                w.add(3).write(meta);
            });
        }
        let tail = tail.wrapping_add(1);
        self.tail = tail;
        // SAFETY: `tail_at` points into the ring this producer holds.
        unsafe { (*self.tail_at).store(tail, Ordering::Release) };
    }

    /// A bound was reached: no ring, numbers used up, the ring full or half full as last
    /// seen. Re-reads the head, then stores the record if there is room. Takes the record as
    /// words, like every push: a `RawEvent` argument to this out-of-line call went through
    /// memory, and the compiler hoisted its stores into the common path.
    #[cold]
    #[inline(never)]
    fn push_slow(
        &mut self,
        ticks: u64,
        span: u64,
        parent: u64,
        meta: u64,
        numbered: bool,
    ) -> (u64, Pushed) {
        let Some(ring) = self.ring.as_deref() else {
            return (0, Pushed::Detached);
        };
        let tail = self.tail;
        let head = ring.head.0.load(Ordering::Acquire);
        let cap = self.mask + 1;
        let used = tail.wrapping_sub(head);
        if tail == self.seq_end {
            let start = NEXT_SEQ.fetch_add(SEQ_BLOCK as u64, std::sync::atomic::Ordering::Relaxed);
            self.seq_base = start.wrapping_sub(tail as u64);
            self.seq_end = tail.wrapping_add(SEQ_BLOCK);
        }
        let span = self.span_at(tail, span, numbered);
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
        self.limit = head.wrapping_add(cap);
        // SAFETY: a ring is attached, and `used < cap`, so `tail` is below head + cap = limit.
        unsafe { self.write(tail, ticks, span, parent, meta) };
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

#[cfg(all(test, not(proofscope_loom)))]
mod tests {
    use super::*;

    fn ev(i: u64) -> RawEvent {
        RawEvent::new(RawKind::SpanBegin, i, i, 0, 0, 0)
    }

    fn push(p: &mut Producer, e: RawEvent, numbered: bool) -> (u64, Pushed) {
        p.push(e.ticks, e.span, e.parent, e.meta, numbered)
    }

    fn ticks_of(c: &mut Consumer) -> Vec<u64> {
        let mut got = Vec::new();
        c.drain(|e| got.push(e.ticks));
        got
    }

    #[test]
    fn full_ring_drops_and_counts_then_recovers() {
        let (mut p, mut c) = channel(16);
        let results: Vec<Pushed> = (0..20).map(|i| push(&mut p, ev(i), false).1).collect();
        assert_eq!(results.iter().filter(|r| **r == Pushed::Dropped).count(), 4);
        assert!(results.contains(&Pushed::HalfFull));
        assert_eq!(c.dropped()[0], 4);
        assert_eq!(ticks_of(&mut c), (0..16).collect::<Vec<_>>());
        assert_eq!(push(&mut p, ev(99), false).1, Pushed::Ok);
        assert_eq!(ticks_of(&mut c), vec![99]);
        p.detach();
    }

    #[test]
    fn a_detached_producer_says_so_and_closes_the_ring() {
        let (mut p, c) = channel(16);
        assert!(!c.is_closed());
        p.detach();
        assert!(c.is_closed());
        for i in 0..3 {
            assert_eq!(push(&mut p, ev(i), true), (0, Pushed::Detached));
        }
        let mut d = Producer::DETACHED;
        assert_eq!(push(&mut d, ev(0), false), (0, Pushed::Detached));
        assert!(!d.is_attached());
    }

    #[test]
    fn half_full_is_signalled_once_per_crossing() {
        let (mut p, mut c) = channel(16);
        let first: Vec<Pushed> = (0..12).map(|i| push(&mut p, ev(i), false).1).collect();
        assert_eq!(first[7], Pushed::HalfFull, "the 8th of 16 slots: {first:?}");
        assert_eq!(first.iter().filter(|r| **r == Pushed::HalfFull).count(), 1);
        // Drained, then filled past half again: signalled again.
        c.drain(|_| {});
        let again: Vec<Pushed> = (0..12).map(|i| push(&mut p, ev(i), false).1).collect();
        assert_eq!(
            again.iter().filter(|r| **r == Pushed::HalfFull).count(),
            1,
            "{again:?}"
        );
        assert!(!again.contains(&Pushed::Dropped));
        p.detach();
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
        let (mut p, mut c) = channel(1024);
        let n = if cfg!(miri) { 3_000 } else { 200_000u64 };
        let producer = std::thread::Builder::new()
            .name("ring-test-producer".into())
            .spawn(move || {
                for i in 0..n {
                    push(&mut p, ev(i), false);
                }
                p.detach();
            })
            .unwrap();
        let mut seen = 0u64;
        let mut last = None;
        loop {
            let closed = c.is_closed();
            c.drain(|e| {
                if let Some(l) = last {
                    assert!(e.ticks > l, "order");
                }
                last = Some(e.ticks);
                seen += 1;
            });
            if closed {
                break;
            }
        }
        producer.join().unwrap();
        assert!(c.is_empty());
        assert_eq!(seen + c.dropped()[0], n);
    }

    #[test]
    fn record_numbers_are_unique_across_drops_blocks_and_producers() {
        let (mut pa, mut ca) = channel(16);
        let (mut pb, mut cb) = channel(16);
        let mut ids = std::collections::HashSet::new();
        let mut dropped = 0;
        // Past several blocks, with both rings overflowing between drains.
        for i in 0..(3 * SEQ_BLOCK as u64) {
            for (p, c) in [(&mut pa, &mut ca), (&mut pb, &mut cb)] {
                let (id, pushed) = push(p, ev(i), true);
                assert_ne!(pushed, Pushed::Detached);
                dropped += usize::from(pushed == Pushed::Dropped);
                assert!(ids.insert(id), "number {id} given twice");
                if i % 40 == 39 {
                    c.drain(|_| {});
                }
            }
        }
        assert!(dropped > 0, "the test must cross full rings");
        // A record that is not numbered keeps its span.
        ca.drain(|_| {});
        assert_eq!(push(&mut pa, ev(77), false), (77, Pushed::Ok));
        // Stored records carry their number.
        let (id, _) = push(&mut pa, ev(5), true);
        let mut spans = Vec::new();
        ca.drain(|e| spans.push(e.span));
        assert_eq!(spans, vec![77, id]);
        pa.detach();
        pb.detach();
    }

    #[test]
    fn a_slow_only_producer_never_has_room_yet_stores_everything() {
        let (p, mut c) = channel(16);
        let mut p = p.slow_only();
        for i in 0..10 {
            assert!(!p.has_room());
            assert_ne!(push(&mut p, ev(i), false).1, Pushed::Dropped);
        }
        assert_eq!(ticks_of(&mut c), (0..10).collect::<Vec<_>>());
        p.detach();
    }

    #[test]
    fn the_fast_path_reads_no_tick_when_it_has_no_room() {
        let (p, _c) = channel(16);
        let mut p = p.slow_only();
        let read = std::cell::Cell::new(false);
        let r = p.try_push_fast(
            || {
                read.set(true);
                1
            },
            0,
            0,
            0,
            false,
        );
        assert_eq!(r, None);
        assert!(!read.get());
        p.detach();
    }
}

/// The ring under loom: every interleaving of one producer and one consumer, through the
/// wrap-around, a full ring, the half-full wake-up and the producer's exit. Run with
/// `RUSTFLAGS="--cfg proofscope_loom" cargo test -p proofscope-probe --lib --release loom`.
#[cfg(all(test, proofscope_loom))]
mod tests {
    use super::*;

    fn ev(i: u64) -> RawEvent {
        RawEvent::new(RawKind::Marker, i, 0, 0, 0, 0)
    }

    /// Pushes `n` records into a 16-slot ring while the consumer drains concurrently;
    /// everything pushed is either received, in order, or counted as dropped.
    fn model(n: u64, drains: usize) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(move || {
            let (mut p, mut c) = channel(16);
            let producer = loom::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for i in 0..n {
                    outcomes.push(p.push(i, 0, 0, ev(i).meta, false).1);
                }
                p.detach();
                outcomes
            });
            let mut got = Vec::new();
            for _ in 0..drains {
                c.drain(|e| got.push(e.ticks));
                loom::thread::yield_now();
            }
            let outcomes = producer.join().unwrap();
            assert!(c.is_closed());
            c.drain(|e| got.push(e.ticks));
            assert!(got.windows(2).all(|w| w[0] < w[1]), "order: {got:?}");
            let dropped = outcomes.iter().filter(|o| **o == Pushed::Dropped).count() as u64;
            assert_eq!(got.len() as u64 + dropped, n);
            assert_eq!(c.dropped()[RawKind::Marker as usize], dropped);
            let stored: Vec<u64> = (0..n)
                .filter(|&i| outcomes[i as usize] != Pushed::Dropped)
                .collect();
            assert_eq!(got, stored, "exactly the stored records arrive");
        });
    }

    #[test]
    fn loom_ring_half_full_wake_and_drain() {
        // 9 pushes cross the half-full mark of a 16-slot ring (wake-up) with a drain racing.
        model(9, 1);
    }

    #[test]
    fn loom_ring_full_then_wraps() {
        // 18 pushes: the ring fills (drops) unless a drain frees slots, then wraps around.
        model(18, 1);
    }
}
