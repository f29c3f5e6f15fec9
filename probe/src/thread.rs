//! Each thread's part of the probe: its ring producer, its current span context, and joining
//! the running session. Everything a span edge touches lives in one `const` thread-local
//! without a destructor ([`Hot`]), reached through one accessor, [`with_hot`]; the allocator
//! reads the span context from it too, even while the thread is being torn down.

use crate::clock::tsc_ticks;
use crate::ring::{self, Producer, Pushed, RawEvent, RawKind};
use crate::session::{self, ThreadRing};
use crate::state::{self, StateWord};
use std::cell::{Cell, RefCell, UnsafeCell};

/// The innermost open span of a thread and the proof it belongs to (0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ctx {
    pub span: u64,
    pub proof: u64,
}

/// The hot per-thread state. Shared references only: the context is in `Cell`s (the allocator
/// may read it while a span edge runs), and the producer is reached through
/// [`Hot::with_producer`] alone.
pub(crate) struct Hot {
    /// The session's state word (recording bit set) when this thread joined;
    /// [`StateWord::NONE`] = never. A begin edge takes the fast path when this equals the
    /// current word and the producer has room: "recording, this session's ring" in one
    /// compare. Where the session's ticks do not come from the TSC the producer is slow-only,
    /// so no edge asks about the clock.
    joined: Cell<StateWord>,
    /// The innermost open span of this thread and its proof. Here rather than in a
    /// thread-local of their own: one base register reaches everything the hot path touches.
    span: Cell<u64>,
    proof: Cell<u64>,
    /// The thread is exiting: never join a session again.
    dead: Cell<bool>,
    producer: UnsafeCell<Producer>,
}

// The thread-local holding `Hot` must have no destructor: a destructor would add a state
// check to every access, and the allocator must reach `Hot` during thread teardown.
const _: () = assert!(!std::mem::needs_drop::<Hot>());

impl Hot {
    // Only the thread-local's initialiser: each thread gets its own copy.
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Hot = Hot {
        joined: Cell::new(StateWord::NONE),
        span: Cell::new(0),
        proof: Cell::new(0),
        dead: Cell::new(false),
        producer: UnsafeCell::new(Producer::DETACHED),
    };

    #[inline(always)]
    pub fn ctx(&self) -> Ctx {
        Ctx {
            span: self.span.get(),
            proof: self.proof.get(),
        }
    }

    #[inline(always)]
    pub fn set_ctx(&self, ctx: Ctx) {
        self.span.set(ctx.span);
        self.proof.set(ctx.proof);
    }

    #[inline(always)]
    pub fn set_span(&self, span: u64) {
        self.span.set(span);
    }

    #[inline(always)]
    pub fn set_proof(&self, proof: u64) {
        self.proof.set(proof);
    }

    #[inline(always)]
    pub fn joined(&self) -> StateWord {
        self.joined.get()
    }

    /// Runs `f` on this thread's producer. Every `f` given here is a ring operation (a push,
    /// an attach, a detach), which calls nothing that could come back here.
    #[inline(always)]
    pub fn with_producer<R>(&self, f: impl FnOnce(&mut Producer) -> R) -> R {
        // SAFETY: `Hot` lives in a thread-local, so only this thread reaches it; the only
        // `&mut` to the producer is made here, and `f` (a ring operation, see above) does not
        // re-enter `with_producer`, so no two references to the producer overlap. A detach
        // may free the ring, and the allocator then reads the span `Cell`s only.
        f(unsafe { &mut *self.producer.get() })
    }
}

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
    static HOT: Hot = const { Hot::EMPTY };
    /// Its destructor detaches this thread's producer (closing its ring) at thread exit.
    static KEEP: RefCell<Option<Keep>> = const { RefCell::new(None) };
}

/// The one way to this thread's [`Hot`]. `None` never happens for a `const` thread-local
/// without a destructor; the `Option` only keeps that out of the callers' reasoning.
#[inline(always)]
pub(crate) fn with_hot<R>(f: impl FnOnce(&Hot) -> R) -> Option<R> {
    HOT.try_with(f).ok()
}

/// This thread's current span context (used by the allocator; never panics).
#[inline]
pub fn current_ctx() -> Ctx {
    with_hot(Hot::ctx).unwrap_or_default()
}

/// Makes `ctx` this thread's context.
#[inline(always)]
pub(crate) fn set_ctx(ctx: Ctx) {
    with_hot(|h| h.set_ctx(ctx));
}

/// The kernel's id of this thread, cached after the first call.
#[inline]
pub fn os_tid() -> u32 {
    TID.try_with(|c| {
        let t = c.get();
        if t != 0 {
            return t;
        }
        // SAFETY: gettid has no preconditions and cannot fail.
        let t = unsafe { libc::gettid() } as u32;
        c.set(t);
        t
    })
    .unwrap_or(0)
}

struct Keep {
    collector: Option<std::thread::Thread>,
    /// Replaced by a newer session's join: the producer is handled there.
    replaced: bool,
}

impl Drop for Keep {
    fn drop(&mut self) {
        if self.replaced {
            return;
        }
        with_hot(|h| {
            h.with_producer(Producer::detach);
            h.dead.set(true);
        });
    }
}

/// What to call this thread: its Rust name, else what the kernel says.
fn thread_name() -> String {
    match std::thread::current().name() {
        Some(n) => n.to_owned(),
        None => crate::system::thread_label(os_tid()),
    }
}

/// Joins the session of state word `st` (recording bit set): a fresh ring. Once per thread per
/// session; allocates the ring — the only allocation on this path.
#[cold]
fn join(st: StateWord) -> bool {
    if with_hot(|h| h.dead.get()).unwrap_or(true) {
        return false;
    }
    let Some(session) = session::current() else {
        return false;
    };
    if session.generation != st.generation() {
        return false;
    }
    let thread_name = thread_name();
    let (producer, consumer) = ring::channel(session.config.ring_events);
    let mut producer = match st.tick_source() {
        crate::clock::TickSource::Tsc => producer,
        crate::clock::TickSource::Monotonic => producer.slow_only(),
    };
    let keep = Keep {
        collector: session.control.collector().cloned(),
        replaced: false,
    };
    let installed = KEEP
        .try_with(|k| match k.try_borrow_mut() {
            Ok(mut k) => {
                if let Some(mut old) = k.replace(keep) {
                    old.replaced = true;
                }
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !installed {
        producer.detach();
        return false;
    }
    session.rings.register(ThreadRing {
        consumer,
        os_tid: os_tid(),
        thread_name,
    });
    with_hot(|h| {
        h.with_producer(|p| {
            // An older session's ring is closed and let go before this one takes its place.
            p.detach();
            *p = producer;
        });
        h.joined.set(st.recording());
    })
    .is_some()
}

#[cold]
fn wake_collector() {
    let _ = KEEP.try_with(|k| {
        if let Ok(k) = k.try_borrow()
            && let Some(c) = k.as_ref().and_then(|k| k.collector.as_ref())
        {
            c.unpark();
        }
    });
}

/// What a push returned, as the span to report (0 when not recorded).
fn settle((span, pushed): (u64, Pushed)) -> u64 {
    match pushed {
        Pushed::Ok | Pushed::Dropped => span,
        Pushed::HalfFull => {
            wake_collector();
            span
        }
        Pushed::Detached => 0,
    }
}

/// Pushes one event from this thread under state word `st` (recording bit set), joining the
/// session first if needed and reading the tick from whichever clock the session uses: the
/// general path, for markers and for span edges that miss the fast path. With `new_span`,
/// the event's span is a fresh span id (its record number). Returns the event's span (0 when
/// not recorded).
#[inline(never)]
pub(crate) fn emit(st: StateWord, span: u64, parent: u64, meta: u64, new_span: bool) -> u64 {
    let ticks = st.ticks();
    let stale = with_hot(|h| h.joined() != st).unwrap_or(true);
    if stale && !join(st) {
        return 0;
    }
    with_hot(|h| h.with_producer(|p| p.push(ticks, span, parent, meta, new_span))).map_or(0, settle)
}

/// The packed last word of every span end (no proof, no name).
pub(crate) const END_META: u64 = RawEvent::meta(RawKind::SpanEnd, 0, 0);

/// A begin edge on the fast path: when this thread joined the session of `st` and its ring
/// has room, stores the record (reading the TSC only then) and returns the new span.
#[inline(always)]
pub(crate) fn begin_fast(hot: &Hot, st: StateWord, parent: u64, meta: u64) -> Option<u64> {
    if hot.joined() != st {
        return None;
    }
    hot.with_producer(|p| p.try_push_fast(tsc_ticks, 0, parent, meta, true))
}

/// An end edge on the fast path; false when it must take [`end_slow`]. No session check: an
/// end belongs in the ring that holds its begin (a stale ring swallows it).
#[inline(always)]
pub(crate) fn end_fast(hot: &Hot, span: u64) -> bool {
    hot.with_producer(|p| p.try_push_fast(tsc_ticks, span, 0, END_META, false))
        .is_some()
}

/// A span end that missed the fast path (ring bounds reached, or no TSC).
#[cold]
#[inline(never)]
pub(crate) fn end_slow(span: u64) {
    with_hot(|h| {
        let ticks = h.joined().ticks();
        settle(h.with_producer(|p| p.push(ticks, span, 0, END_META, false)));
    });
}

/// Makes sure this thread is known to the session (its ThreadDef), without an event.
pub(crate) fn ensure_joined() {
    let st = state::load().recording();
    if with_hot(|h| h.joined() != st).unwrap_or(false) {
        join(st);
    }
}
