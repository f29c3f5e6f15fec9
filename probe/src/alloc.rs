//! A counting global allocator wrapping the system allocator.
//!
//! Counting is always on and costs a few plain stores: each thread owns a counter slot (single
//! writer, so no atomic read-modify-write); threads beyond the slot table share an overflow
//! slot with atomic adds. Blocks at or above the large-block threshold are timed and reported
//! as `Alloc`/`Release` events through a lock-free queue — never allocating inside the
//! allocator. `alloc_zeroed` and `realloc` are forwarded as such, so calloc'd pages stay
//! untouched and reallocations can use mremap.

use crate::clock::ticks;
use crate::observer;
use crate::slot_tls;
use crate::thread::{current_ctx, os_tid};
use crossbeam_queue::ArrayQueue;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::config::DEFAULT_LARGE_BLOCK;
const SLOTS: usize = 512;
/// Large-block events queued between collector cycles before dropping.
pub const LARGE_QUEUE_CAPACITY: usize = 65_536;

#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    allocs: AtomicU64,
    frees: AtomicU64,
    alloc_bytes: AtomicU64,
    free_bytes: AtomicU64,
}

impl Slot {
    // Used only to initialise the statics below, each copy a distinct slot.
    #[allow(clippy::declare_interior_mutable_const)]
    const ZERO: Slot = Slot {
        allocs: AtomicU64::new(0),
        frees: AtomicU64::new(0),
        alloc_bytes: AtomicU64::new(0),
        free_bytes: AtomicU64::new(0),
    };
}

static TABLE: [Slot; SLOTS] = [Slot::ZERO; SLOTS];
static OVERFLOW: Slot = Slot::ZERO;
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static THRESHOLD: AtomicU64 = AtomicU64::new(DEFAULT_LARGE_BLOCK);
static EVENTS_ON: AtomicBool = AtomicBool::new(false);
static QUEUE: OnceLock<ArrayQueue<RawBlock>> = OnceLock::new();
/// Blocks at or above this many bytes carry their call stack (`u64::MAX`: none).
static STACK_THRESHOLD: AtomicU64 = AtomicU64::new(u64::MAX);
/// Stacks captured in the hook, for the collector; matched to their block by `seq`.
static STACKS: OnceLock<ArrayQueue<RawStack>> = OnceLock::new();
static STACK_SEQ: AtomicU64 = AtomicU64::new(1);
static DROPPED_STACKS: AtomicU64 = AtomicU64::new(0);
static DROPPED_ALLOC: AtomicU64 = AtomicU64::new(0);
static DROPPED_RELEASE: AtomicU64 = AtomicU64::new(0);

// This thread's slot index + 1 (0: not assigned yet, usize::MAX: the overflow slot) lives
// in `slot_tls`.

/// A large allocation or release, as queued by the allocator.
#[derive(Debug, Clone, Copy)]
pub struct RawBlock {
    /// When the call started and how long it took: raw ticks, or session ns when
    /// `session_ns` (blocks reported from outside, through the C API or the preload library).
    pub ticks: u64,
    pub inside_ticks: u64,
    pub session_ns: bool,
    pub bytes: u64,
    pub os_tid: u32,
    pub span: u64,
    pub release: bool,
    /// `RawStack::seq` of its call stack; 0: none.
    pub stack_seq: u64,
}

/// Return addresses kept per stack (innermost first).
pub const STACK_DEPTH: usize = 32;
/// Stacks waiting for the collector: a stack is kept only for blocks at or above the stack
/// threshold, which are few.
pub(crate) const STACK_QUEUE_CAPACITY: usize = 4096;

/// A call stack captured in the allocator hook: raw return addresses, symbolised later.
#[derive(Debug, Clone, Copy)]
pub struct RawStack {
    pub seq: u64,
    pub depth: u8,
    pub ips: [usize; STACK_DEPTH],
}

/// Totals over all threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocTotals {
    pub allocs: u64,
    pub frees: u64,
    pub alloc_bytes: u64,
    pub free_bytes: u64,
}

impl AllocTotals {
    pub fn live_bytes(&self) -> u64 {
        self.alloc_bytes.saturating_sub(self.free_bytes)
    }
}

/// Which slot this thread writes, and whether it owns it.
#[inline(always)]
fn my_slot() -> (&'static Slot, bool) {
    let idx = slot_tls::get();
    if idx != 0 && idx != usize::MAX {
        return (&TABLE[idx - 1], true);
    }
    if idx == usize::MAX {
        return (&OVERFLOW, false);
    }
    let n = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if n < SLOTS {
        slot_tls::set(n + 1);
        (&TABLE[n], true)
    } else {
        slot_tls::set(usize::MAX);
        (&OVERFLOW, false)
    }
}

#[inline(always)]
fn bump(c: &AtomicU64, v: u64, owned: bool) {
    if owned {
        // Single writer: a plain load and store, no locked instruction.
        c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
    } else {
        c.fetch_add(v, Ordering::Relaxed);
    }
}

#[inline(always)]
fn count_alloc(bytes: usize) {
    let (s, owned) = my_slot();
    bump(&s.allocs, 1, owned);
    bump(&s.alloc_bytes, bytes as u64, owned);
}

#[inline(always)]
fn count_free(bytes: usize) {
    let (s, owned) = my_slot();
    bump(&s.frees, 1, owned);
    bump(&s.free_bytes, bytes as u64, owned);
}

/// Sums every slot. Relaxed reads: a consistent-enough snapshot for sampling.
pub fn totals() -> AllocTotals {
    let used = NEXT_SLOT.load(Ordering::Relaxed).min(SLOTS);
    let mut t = AllocTotals::default();
    for s in TABLE[..used].iter().chain(std::iter::once(&OVERFLOW)) {
        t.allocs += s.allocs.load(Ordering::Relaxed);
        t.frees += s.frees.load(Ordering::Relaxed);
        t.alloc_bytes += s.alloc_bytes.load(Ordering::Relaxed);
        t.free_bytes += s.free_bytes.load(Ordering::Relaxed);
    }
    t
}

/// This thread's own counters (exact when the thread owns its slot).
pub fn thread_totals() -> AllocTotals {
    let (s, _) = my_slot();
    AllocTotals {
        allocs: s.allocs.load(Ordering::Relaxed),
        frees: s.frees.load(Ordering::Relaxed),
        alloc_bytes: s.alloc_bytes.load(Ordering::Relaxed),
        free_bytes: s.free_bytes.load(Ordering::Relaxed),
    }
}

/// Highest live bytes seen (updated at every large block and every sample).
pub fn peak_bytes(live_now: u64) -> u64 {
    PEAK.fetch_max(live_now, Ordering::Relaxed).max(live_now)
}

/// Large-block events dropped because the queue was full: (allocs, releases).
pub fn dropped() -> (u64, u64) {
    (
        DROPPED_ALLOC.load(Ordering::Relaxed),
        DROPPED_RELEASE.load(Ordering::Relaxed),
    )
}

/// Turns large-block events on (threshold in bytes) for a session, with call stacks for
/// blocks at or above `stack_threshold` (`u64::MAX`: none).
pub(crate) fn enable_events(threshold: u64, stack_threshold: u64) {
    let _ = QUEUE.get_or_init(|| ArrayQueue::new(LARGE_QUEUE_CAPACITY));
    let _ = STACKS.get_or_init(|| ArrayQueue::new(STACK_QUEUE_CAPACITY));
    THRESHOLD.store(threshold.max(1), Ordering::Relaxed);
    STACK_THRESHOLD.store(stack_threshold.max(1), Ordering::Relaxed);
    EVENTS_ON.store(true, Ordering::Release);
}

pub(crate) fn disable_events() {
    EVENTS_ON.store(false, Ordering::Release);
}

/// Takes every queued large-block event, but none of the probe's own threads; takes nothing
/// while one of them is starting (its first blocks would pass as the program's) unless
/// `last`: the session's last drain takes them whatever (left, they would be lost unseen).
pub(crate) fn drain(last: bool, mut f: impl FnMut(RawBlock)) {
    if observer::starting() && !last {
        return;
    }
    let ended = observer::ended();
    if let Some(q) = QUEUE.get() {
        while let Some(b) = q.pop() {
            if !observer::is_observer(b.os_tid) {
                f(b);
            }
        }
    }
    observer::free_ended(ended);
}

/// Takes every captured stack (before the blocks: a block's stack is queued before it).
pub(crate) fn drain_stacks(mut f: impl FnMut(RawStack)) {
    if let Some(q) = STACKS.get() {
        while let Some(s) = q.pop() {
            f(s);
        }
    }
}

/// Stacks not kept (their queue was full): their blocks carry none.
pub fn dropped_stacks() -> u64 {
    DROPPED_STACKS.load(Ordering::Relaxed)
}

/// The calling thread's stack when `bytes` reaches the stack threshold: its `seq`, else 0.
/// Walks the frames with the unwinder's unsynchronised trace into a fixed array: no
/// allocation, no lock of our own (the unwinder takes the loader's recursive lock).
#[inline]
fn capture_stack(bytes: u64) -> u64 {
    // Miri cannot run the system unwinder.
    if cfg!(miri) || bytes < STACK_THRESHOLD.load(Ordering::Relaxed) {
        return 0;
    }
    capture_stack_cold()
}

#[cold]
#[inline(never)]
fn capture_stack_cold() -> u64 {
    let Some(q) = STACKS.get() else { return 0 };
    let mut s = RawStack {
        seq: STACK_SEQ.fetch_add(1, Ordering::Relaxed),
        depth: 0,
        ips: [0; STACK_DEPTH],
    };
    let mut n = 0;
    // The frames of the capture itself end at `report` (or `report_external_large`), never
    // inlined: recording starts with the frame that called the allocator. Looking up a
    // frame's function start costs about what unwinding it does, for the first few only.
    let ours = [
        report as *const () as usize,
        report_external_large as *const () as usize,
    ];
    let mut inside = true;
    let mut skipped = 0;
    // SAFETY: `trace_unsynchronized` requires that no other trace runs concurrently in a way
    // that breaks the unwinder: the system unwinder (`_Unwind_Backtrace`) is thread-safe; the
    // closure only writes into the local array and never panics (bounded index).
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if inside {
                skipped += 1;
                // Not found within 8 frames (an unexpected unwinder): record from there on.
                inside = !ours.contains(&(frame.symbol_address() as usize)) && skipped < 8;
                return true;
            }
            // Address 0 is the end of the stack, not a frame (PROTOCOL.md §4, StackDef).
            let ip = frame.ip() as usize;
            if ip == 0 {
                return false;
            }
            s.ips[n] = ip;
            n += 1;
            n < STACK_DEPTH
        });
    }
    s.depth = n as u8;
    if n == 0 || q.push(s).is_err() {
        DROPPED_STACKS.fetch_add(1, Ordering::Relaxed);
        return 0;
    }
    s.seq
}

/// Whether this size produces an event: one relaxed load when events are off.
#[inline(always)]
fn is_large(size: usize) -> bool {
    EVENTS_ON.load(Ordering::Relaxed) && size as u64 >= THRESHOLD.load(Ordering::Relaxed)
}

// Never inlined: the stack capture finds where its own frames end by this function's address.
#[cold]
#[inline(never)]
fn report(t0: u64, t1: u64, bytes: usize, release: bool) {
    enqueue(RawBlock {
        ticks: t0,
        inside_ticks: t1.saturating_sub(t0),
        session_ns: false,
        bytes: bytes as u64,
        os_tid: os_tid(),
        span: current_ctx().span,
        release,
        stack_seq: capture_stack(bytes as u64),
    });
    crate::sched_stamp::stamp();
}

/// Queues a large block for the collector (and notes the peak); a full queue drops it and
/// counts the drop. Never allocates; a block of the probe's own threads is not queued.
fn enqueue(ev: RawBlock) {
    let live = totals().live_bytes();
    PEAK.fetch_max(live, Ordering::Relaxed);
    if observer::on_observer_thread() {
        return;
    }
    if QUEUE.get().is_none_or(|q| q.push(ev).is_err()) {
        let c = if ev.release {
            &DROPPED_RELEASE
        } else {
            &DROPPED_ALLOC
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The counting allocator. Install it in a binary with
/// `#[global_allocator] static A: CountingAllocator = CountingAllocator;`.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s; the bookkeeping around it never allocates (static
// counters, a pre-allocated queue) and never unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            let t0 = ticks();
            // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                count_alloc(layout.size());
                report(t0, ticks(), layout.size(), false);
            }
            return p;
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count_alloc(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let t0 = if is_large(layout.size()) { ticks() } else { 0 };
        // SAFETY: forwarded unchanged: the system allocator gets fresh zero pages (calloc)
        // without this wrapper touching them.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count_alloc(layout.size());
            if t0 != 0 {
                report(t0, ticks(), layout.size(), false);
            }
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size()) {
            let t0 = ticks();
            // SAFETY: forwarded unchanged; `ptr` came from this allocator with `layout`.
            unsafe { System.dealloc(ptr, layout) };
            count_free(layout.size());
            report(t0, ticks(), layout.size(), true);
            return;
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        count_free(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let large_old = is_large(layout.size());
        let large_new = is_large(new_size);
        let t0 = if large_old || large_new { ticks() } else { 0 };
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count_free(layout.size());
            count_alloc(new_size);
            if t0 != 0 {
                let t1 = ticks();
                // The time inside goes to the event that caused the call; a release of the
                // old block is reported with it when both sizes are large.
                if large_old {
                    report(t0, if large_new { t0 } else { t1 }, layout.size(), true);
                }
                if large_new {
                    report(t0, t1, new_size, false);
                }
            }
        }
        p
    }
}

/// Counts a block allocated or released outside this allocator (a C or C++ allocator reporting
/// through the C API, or the preload library) that just returned after `inside_ns`, and
/// reports it when it is large. Never allocates.
///
/// Inlined into the caller, the large-block report kept out of line: the preload library calls
/// this on every malloc and free, and as one function its frame set-up alone was a fifth of a
/// small pair's added cost (perf, `cargo bench -p proofscope-preload --bench hooks`).
#[inline]
pub fn report_external(bytes: u64, inside_ns: u64, release: bool) {
    if release {
        count_free(bytes as usize);
    } else {
        count_alloc(bytes as usize);
    }
    if EVENTS_ON.load(Ordering::Relaxed) && bytes >= THRESHOLD.load(Ordering::Relaxed) {
        report_external_large(bytes, inside_ns, release);
    }
}

#[cold]
#[inline(never)]
fn report_external_large(bytes: u64, inside_ns: u64, release: bool) {
    let end = crate::gpu::now_ns();
    enqueue(RawBlock {
        ticks: end.saturating_sub(inside_ns),
        inside_ticks: inside_ns,
        session_ns: true,
        bytes,
        os_tid: os_tid(),
        span: current_ctx().span,
        release,
        stack_seq: capture_stack(bytes),
    });
    crate::sched_stamp::stamp();
}
