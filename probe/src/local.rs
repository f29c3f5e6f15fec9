//! The hot path: span guards, handles for work on other threads, markers, proof scopes.
//!
//! A span edge is a tick read and a push into a ring the thread owns. The current span and
//! proof of each thread live in its `const` hot thread-local, which has no destructor, so the
//! allocator can read them too (even while a thread is being torn down).

use super::clock::{ticks, ticks_for, tsc_ticks};
use super::names::CallSite;
use super::ring::{Producer, Pushed, RawEvent, RawKind, Ring};
use super::session::{self, ENABLED_BIT, SlowEvent, TSC_BIT, generation_of, state};
use probe_protocol::{Event, ProofBegin, ProofEnd, Verification};
use std::cell::{Cell, RefCell, UnsafeCell};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The innermost open span of a thread and the proof it belongs to (0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ctx {
    pub span: u64,
    pub proof: u64,
}

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
    /// The hot per-thread state: `const`, no destructor, so reaching it costs no lazy
    /// initialisation check.
    static HOT: UnsafeCell<Hot> = const { UnsafeCell::new(Hot::EMPTY) };
    /// Keeps this thread's ring alive; its destructor detaches `HOT` and closes the ring.
    static KEEP: RefCell<Option<Keep>> = const { RefCell::new(None) };
}

/// This thread's current span context (used by the allocator; never panics).
#[inline]
pub fn current_ctx() -> Ctx {
    // SAFETY: only this thread touches its HOT, and no reference to it is live while code
    // that could reach here (the allocator, a span guard) runs: the hot path neither
    // allocates nor calls out while it holds one.
    hot().map_or(Ctx::default(), |h| unsafe { (*h).ctx })
}

/// Makes `ctx` this thread's context.
#[inline(always)]
fn set_ctx(ctx: Ctx) {
    if let Some(h) = hot() {
        // SAFETY: as in `current_ctx`.
        unsafe { (*h).ctx = ctx };
    }
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

struct Hot {
    /// The session's state word (recording bit set) when this thread joined; 0 = never. A
    /// begin edge takes the fast path when this equals the current word and the producer
    /// has room: "recording, this session's ring" in one compare. Where the session's ticks
    /// do not come from the TSC the producer is slow-only, so no edge asks about the clock.
    joined: u64,
    /// The innermost open span of this thread and its proof. Here rather than in a
    /// thread-local of its own: one base register reaches everything the hot path touches.
    ctx: Ctx,
    producer: Producer,
    /// The thread is exiting: never join a session again.
    dead: bool,
}

impl Hot {
    const EMPTY: Hot = Hot {
        joined: 0,
        ctx: Ctx { span: 0, proof: 0 },
        producer: Producer::DETACHED,
        dead: false,
    };
}

/// This thread's hot state. The `const`, destructor-free thread-local never fails to be
/// reached; the `Option` only keeps that out of the callers' safety arguments.
#[inline(always)]
fn hot() -> Option<*mut Hot> {
    HOT.try_with(UnsafeCell::get).ok()
}

struct Keep {
    ring: Arc<Ring>,
    collector: Option<std::thread::Thread>,
}

impl Drop for Keep {
    fn drop(&mut self) {
        let ptr = Arc::as_ptr(&self.ring);
        let _ = HOT.try_with(|h| {
            // SAFETY: only this thread touches its HOT, and no hot-path borrow is live while
            // a thread-local destructor runs.
            let hot = unsafe { &mut *h.get() };
            if hot.producer.is_attached_to(ptr) {
                hot.producer.detach();
                hot.dead = true;
            }
        });
        self.ring.close();
    }
}

/// Joins the session of state word `st` (recording bit set): a fresh ring. Once per thread per
/// session; allocates the ring — the only allocation on this path.
#[cold]
fn join(st: u64) -> bool {
    let generation = generation_of(st);
    let Ok(dead) = HOT.try_with(|h| {
        // SAFETY: only this thread touches its HOT; no borrow of it is live here.
        unsafe { (*h.get()).dead }
    }) else {
        return false;
    };
    if dead {
        return false;
    }
    let Some(shared) = session::current() else {
        return false;
    };
    if shared.generation != generation {
        return false;
    }
    let name = std::thread::current()
        .name()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("thread-{}", os_tid()));
    let ring = Arc::new(Ring::new(shared.config.ring_events, os_tid(), name));
    let keep = Keep {
        ring: ring.clone(),
        collector: shared.collector.get().cloned(),
    };
    // Detach from an older session's ring before its guard is replaced (and closes it).
    let _ = HOT.try_with(|h| {
        // SAFETY: as above.
        unsafe { (*h.get()).producer.detach() }
    });
    let installed = KEEP
        .try_with(|k| match k.try_borrow_mut() {
            Ok(mut k) => {
                *k = Some(keep);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !installed {
        return false;
    }
    shared
        .rings
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(ring.clone());
    HOT.try_with(|h| {
        // SAFETY: as above; `ring` is kept alive by KEEP until that guard detaches us.
        let hot = unsafe { &mut *h.get() };
        let st = st | ENABLED_BIT;
        hot.joined = st;
        let producer = Producer::attach(&ring);
        hot.producer = if st & TSC_BIT != 0 {
            producer
        } else {
            producer.slow_only()
        };
    })
    .is_ok()
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

/// Pushes one event from this thread under state word `st` (recording bit set), joining the
/// session first if needed and reading the tick from whichever clock the session uses: the
/// general path, for markers and for span edges that miss the fast path. With `new_span`,
/// the event's span is a fresh span id (its record number). Returns the event's span (0 when
/// not recorded).
#[inline(never)]
fn emit(st: u64, span: u64, parent: u64, meta: u64, new_span: bool) -> u64 {
    let ticks = ticks_for(st);
    HOT.try_with(|h| {
        // SAFETY: only this thread touches its HOT; the borrow ends before anything that
        // could reach this function again (join and wake run outside it).
        let stale = unsafe { (*h.get()).joined } != st;
        if stale && !join(st) {
            return 0;
        }
        // SAFETY: as above; no other reference to this thread's HOT exists now.
        let hot = unsafe { &mut *h.get() };
        // SAFETY: the producer is attached only while KEEP holds its ring, and this thread
        // is the ring's only producer.
        let (span, pushed) = unsafe { hot.producer.push(ticks, span, parent, meta, new_span) };
        match pushed {
            Pushed::Ok | Pushed::Dropped => span,
            Pushed::HalfFull => {
                wake_collector();
                span
            }
            Pushed::Detached => 0,
        }
    })
    .unwrap_or(0)
}

/// The packed last word of every span end (no proof, no name).
const END_META: u64 = RawEvent::meta(RawKind::SpanEnd, 0, 0);

/// A span end that missed the fast path (ring bounds reached, or no TSC). No session check:
/// an end only makes sense in the ring that holds its begin; a stale ring swallows it.
#[cold]
#[inline(never)]
fn end_slow(span: u64) {
    let _ = HOT.try_with(|h| {
        // SAFETY: only this thread touches its HOT; no other reference to it exists now.
        let hot = unsafe { &mut *h.get() };
        let ticks = ticks_for(hot.joined);
        // SAFETY: the producer is attached only while KEEP holds its ring, and this thread is
        // the ring's only producer.
        let (_, pushed) = unsafe { hot.producer.push(ticks, span, 0, END_META, false) };
        if pushed == Pushed::HalfFull {
            wake_collector();
        }
    });
}

/// Makes sure this thread is known to the session (its ThreadDef), without an event.
fn ensure_joined() {
    let st = state() | ENABLED_BIT;
    let stale = HOT
        .try_with(|h| {
            // SAFETY: only this thread touches its HOT; the read ends at once.
            unsafe { (*h.get()).joined != st }
        })
        .unwrap_or(false);
    if stale {
        join(st);
    }
}

/// An open span; closes it when dropped. Not `Send`: a span ends on the thread that opened it.
#[must_use = "a span closes when its guard is dropped"]
#[derive(Debug)]
#[repr(C)]
pub struct SpanGuard {
    /// The context to restore, split around `span` on purpose: as one `Ctx` its two words
    /// were restored by one 16-byte load of two 8-byte stores still in flight, which store
    /// forwarding cannot serve (+2 ns a span). `repr(C)` keeps them apart.
    prev_span: u64,
    span: u64,
    prev_proof: u64,
    _not_send: PhantomData<*const ()>,
}

impl SpanGuard {
    const INACTIVE: SpanGuard = SpanGuard {
        prev_span: 0,
        span: 0,
        prev_proof: 0,
        _not_send: PhantomData,
    };

    #[inline(always)]
    fn active(span: u64, prev: Ctx) -> SpanGuard {
        SpanGuard {
            prev_span: prev.span,
            span,
            prev_proof: prev.proof,
            _not_send: PhantomData,
        }
    }

    /// Opens a span named by `site` under this thread's current span. Always inlined: the
    /// slow paths (joining a session, ring bounds, no TSC) are calls of their own, and a
    /// call here cost more than its body's saving in code size.
    #[inline(always)]
    pub fn enter(site: &CallSite) -> SpanGuard {
        let st = state();
        if st & ENABLED_BIT == 0 {
            return SpanGuard::INACTIVE;
        }
        let ctx = current_ctx();
        Self::begin::<false>(st, site.id(), ctx.span, ctx.proof, ctx)
    }

    /// Opens a span under an explicit parent (e.g. a handle from another thread).
    #[inline]
    pub fn enter_under(site: &CallSite, parent: SpanHandle) -> SpanGuard {
        let st = state();
        if st & ENABLED_BIT == 0 {
            return SpanGuard::INACTIVE;
        }
        Self::begin::<true>(st, site.id(), parent.span, parent.proof, current_ctx())
    }

    /// Opens a span with a name interned at run time (slow: a lookup under a lock).
    pub fn enter_dynamic(name: &str) -> SpanGuard {
        let st = state();
        if st & ENABLED_BIT == 0 {
            return SpanGuard::INACTIVE;
        }
        let ctx = current_ctx();
        Self::begin::<false>(st, super::names::intern(name), ctx.span, ctx.proof, ctx)
    }

    /// Opens a span under `parent` in `proof`; `prev` is the context to restore at the end.
    /// `NEW_PROOF`: the proof may differ from the thread's current one (else it is the same,
    /// and is not rewritten).
    #[inline(always)]
    fn begin<const NEW_PROOF: bool>(
        st: u64,
        name: u32,
        parent: u64,
        proof: u64,
        prev: Ctx,
    ) -> SpanGuard {
        let meta = RawEvent::meta(RawKind::SpanBegin, proof, name);
        if let Some(hot) = hot() {
            // SAFETY: only this thread touches its HOT, and no other reference to it is live
            // (the slow path below is called after this borrow ends). The producer is attached
            // only while KEEP holds its ring, this thread is the ring's only producer, and
            // `has_room` was just true (never, for a slow-only producer: no TSC).
            let fast = unsafe {
                let hot = &mut *hot;
                if hot.joined == st && hot.producer.has_room() {
                    let span = hot.producer.push_fast(tsc_ticks(), 0, parent, meta, true);
                    hot.ctx.span = span;
                    if NEW_PROOF {
                        hot.ctx.proof = proof;
                    }
                    Some(span)
                } else {
                    None
                }
            };
            if let Some(span) = fast {
                return SpanGuard::active(span, prev);
            }
        }
        Self::begin_slow(st, parent, proof, meta, prev)
    }

    /// A begin edge that missed the fast path: joins the session, or the ring's bounds were
    /// reached, or the session's ticks do not come from the TSC.
    #[cold]
    #[inline(never)]
    fn begin_slow(st: u64, parent: u64, proof: u64, meta: u64, prev: Ctx) -> SpanGuard {
        let span = emit(st, 0, parent, meta, true);
        if span == 0 {
            return SpanGuard::INACTIVE;
        }
        set_ctx(Ctx { span, proof });
        SpanGuard::active(span, prev)
    }

    /// A handle naming this span as the parent of work on other threads.
    pub fn handle(&self) -> SpanHandle {
        SpanHandle {
            span: self.span,
            proof: current_ctx().proof,
        }
    }

    pub fn id(&self) -> u64 {
        self.span
    }

    pub fn is_active(&self) -> bool {
        self.span != 0
    }
}

impl Drop for SpanGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.span == 0 {
            return;
        }
        // SAFETY: only this thread touches its HOT and no other reference to it is live;
        // the producer is attached only while KEEP holds its ring, this thread is the ring's
        // only producer, and `has_room` was just true. No session check: an end belongs in
        // the ring that holds its begin (a stale ring swallows it).
        let fast = hot().is_some_and(|hot| unsafe {
            let hot = &mut *hot;
            let fast = hot.producer.has_room();
            if fast {
                hot.producer
                    .push_fast(tsc_ticks(), self.span, 0, END_META, false);
            }
            fast
        });
        if !fast {
            end_slow(self.span);
        }
        set_ctx(Ctx {
            span: self.prev_span,
            proof: self.prev_proof,
        });
    }
}

/// Names a span (and its proof) so that work on another thread can nest under it.
/// `Copy` and `Send`: pass it into rayon closures or GPU threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpanHandle {
    pub span: u64,
    pub proof: u64,
}

impl SpanHandle {
    /// This thread's current span.
    pub fn current() -> SpanHandle {
        let c = current_ctx();
        SpanHandle {
            span: c.span,
            proof: c.proof,
        }
    }

    /// Makes this span the current span of this thread until the guard drops: spans opened
    /// meanwhile become its children.
    pub fn adopt(self) -> Adopted {
        let prev = current_ctx();
        set_ctx(Ctx {
            span: self.span,
            proof: self.proof,
        });
        Adopted {
            prev,
            _not_send: PhantomData,
        }
    }
}

/// Restores the thread's previous span context when dropped.
#[must_use = "the adopted parent is forgotten when this guard drops"]
#[derive(Debug)]
pub struct Adopted {
    prev: Ctx,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Adopted {
    fn drop(&mut self) {
        set_ctx(self.prev);
    }
}

/// Records an instant named by `site` inside the current span.
#[inline]
pub fn marker(site: &CallSite) {
    let st = state();
    if st & ENABLED_BIT == 0 {
        return;
    }
    let meta = RawEvent::meta(RawKind::Marker, 0, site.id());
    emit(st, current_ctx().span, 0, meta, false);
}

/// Records an instant with a text (slow path: the text is copied).
pub fn marker_with_text(name: &str, text: impl Into<String>) {
    if !enabled() {
        return;
    }
    let t = ticks();
    let Some(shared) = session::current() else {
        return;
    };
    let ctx = current_ctx();
    // The thread's ring registers its ThreadDef; make sure it exists.
    ensure_joined();
    shared.push_slow(SlowEvent::Ticks(
        t,
        Event::Marker(Box::new(probe_protocol::Marker {
            ts: 0,
            name: super::names::intern(name),
            thread: os_tid(),
            span: (ctx.span != 0).then_some(ctx.span),
            text: Some(text.into()),
        })),
    ));
}

/// What a proof is, for `ProofBegin`.
#[derive(Debug, Clone, Default)]
pub struct ProofInfo {
    pub circuit: String,
    pub constraints: u64,
    pub circuits: u32,
    pub backend: String,
    pub synthetic_srs: bool,
}

/// One proof (one batch): opens the outer span `prove` — the wrapper timer — and emits
/// `ProofBegin`; [`ProofScope::end`] closes both.
#[derive(Debug)]
#[must_use = "call end() with the outcome"]
pub struct ProofScope {
    proof: u64,
    guard: Option<SpanGuard>,
}

static PROVE_SITE: CallSite = CallSite::new("prove");

impl ProofScope {
    pub fn begin(info: ProofInfo) -> ProofScope {
        if !enabled() {
            return ProofScope {
                proof: 0,
                guard: None,
            };
        }
        let Some(shared) = session::current() else {
            return ProofScope {
                proof: 0,
                guard: None,
            };
        };
        let proof = shared.next_proof.fetch_add(1, Ordering::Relaxed);
        let t = ticks();
        let ctx = current_ctx();
        // Recording may have stopped since the check above; the scope is recorded anyway.
        let st = state() | ENABLED_BIT;
        let guard = SpanGuard::begin::<true>(st, PROVE_SITE.id(), ctx.span, proof, ctx);
        shared.push_slow(SlowEvent::Ticks(
            t,
            Event::ProofBegin(Box::new(ProofBegin {
                ts: 0,
                proof,
                span: guard.id(),
                circuit: info.circuit,
                constraints: info.constraints,
                circuits: info.circuits,
                backend: info.backend,
                synthetic_srs: info.synthetic_srs,
            })),
        ));
        ProofScope {
            proof,
            guard: Some(guard),
        }
    }

    /// The proof id (0 when the probe is off).
    pub fn id(&self) -> u64 {
        self.proof
    }

    /// The outer span, as a parent for work on other threads.
    pub fn handle(&self) -> SpanHandle {
        SpanHandle {
            span: self.guard.as_ref().map_or(0, SpanGuard::id),
            proof: self.proof,
        }
    }

    /// Closes the outer span (the wrapper timer) but keeps the proof open, e.g. for a
    /// verification that should not count as proving time.
    pub fn close_outer(mut self) -> ProofScope {
        drop(self.guard.take());
        self
    }

    /// Closes the outer span and reports how the proof ended.
    pub fn end(mut self, ok: bool, verification: Verification, error: Option<String>) {
        drop(self.guard.take());
        if self.proof == 0 {
            return;
        }
        let t = ticks();
        if let Some(shared) = session::current() {
            shared.push_slow(SlowEvent::Ticks(
                t,
                Event::ProofEnd(Box::new(ProofEnd {
                    ts: 0,
                    proof: self.proof,
                    ok,
                    verification,
                    error,
                })),
            ));
        }
    }
}

/// Reports GPU work already converted to session time (slow path, off the GPU's hot loop).
pub fn gpu_span(
    device: u32,
    stream: u32,
    name: &str,
    start_ns: u64,
    end_ns: u64,
    parent: SpanHandle,
) {
    if !enabled() {
        return;
    }
    if let Some(shared) = session::current() {
        shared.push_slow(SlowEvent::Session(Event::GpuSpan(
            probe_protocol::GpuSpan {
                start: start_ns,
                end: end_ns,
                device,
                stream,
                name: super::names::intern(name),
                span: (parent.span != 0).then_some(parent.span),
            },
        )));
    }
}

/// Session nanoseconds now (0 when no session runs). For converting external clocks.
pub fn now_ns() -> u64 {
    session::current().map_or(0, |s| s.clock.now_ns())
}

/// Converts a CLOCK_MONOTONIC reading (ns) to session time.
pub fn monotonic_to_session_ns(mono_ns: u64) -> u64 {
    session::current().map_or(0, |s| s.clock.monotonic_to_ns(mono_ns))
}

/// Whether a session is running and recording.
#[inline]
pub fn enabled() -> bool {
    state() & ENABLED_BIT != 0
}
