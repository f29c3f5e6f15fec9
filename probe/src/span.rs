//! Spans and markers: the hot path. A span edge is a tick read and a push into the ring the
//! thread owns; with the probe off it is one relaxed load of the state word.

use crate::names::{self, CallSite};
use crate::ring::{RawEvent, RawKind};
use crate::session::{self, SlowEvent};
use crate::state::{self, StateWord};
use crate::thread::{self, Ctx, current_ctx, os_tid, set_ctx, with_hot};
use probe_protocol::Event;
use std::marker::PhantomData;

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
    pub(crate) const INACTIVE: SpanGuard = SpanGuard {
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
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        let ctx = current_ctx();
        Self::begin::<false>(st, site.id(), ctx.span, ctx.proof, ctx)
    }

    /// Opens a span under an explicit parent (e.g. a handle from another thread).
    #[inline]
    pub fn enter_under(site: &CallSite, parent: SpanHandle) -> SpanGuard {
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        Self::begin::<true>(st, site.id(), parent.span, parent.proof, current_ctx())
    }

    /// Opens a span named by an interned id (the C API's sites) under this thread's span.
    pub(crate) fn enter_id(id: u32) -> SpanGuard {
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        let ctx = current_ctx();
        Self::begin::<false>(st, id, ctx.span, ctx.proof, ctx)
    }

    /// Opens a span named by an interned id under an explicit parent.
    pub(crate) fn enter_id_under(id: u32, parent: SpanHandle) -> SpanGuard {
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        Self::begin::<true>(st, id, parent.span, parent.proof, current_ctx())
    }

    /// The guard as plain words (span, previous span, previous proof), without ending it: for
    /// callers that cannot hold a guard (the C API). [`SpanGuard::from_raw`] takes it back.
    pub(crate) fn into_raw(self) -> (u64, u64, u64) {
        let raw = (self.span, self.prev_span, self.prev_proof);
        std::mem::forget(self);
        raw
    }

    /// A guard from [`SpanGuard::into_raw`]'s words; dropping it ends the span.
    pub(crate) fn from_raw(span: u64, prev_span: u64, prev_proof: u64) -> SpanGuard {
        SpanGuard {
            prev_span,
            span,
            prev_proof,
            _not_send: PhantomData,
        }
    }

    /// Opens a span with a name interned at run time (slow: a lookup under a lock).
    pub fn enter_dynamic(name: &str) -> SpanGuard {
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        let ctx = current_ctx();
        Self::begin::<false>(st, names::intern(name), ctx.span, ctx.proof, ctx)
    }

    /// Opens a span with a run-time name under an explicit parent.
    pub fn enter_dynamic_under(name: &str, parent: SpanHandle) -> SpanGuard {
        let st = state::load();
        if !st.enabled() {
            return SpanGuard::INACTIVE;
        }
        Self::begin::<true>(
            st,
            names::intern(name),
            parent.span,
            parent.proof,
            current_ctx(),
        )
    }

    /// Opens a span under `parent` in `proof`; `prev` is the context to restore at the end.
    /// `st` is a recording word (the callers checked). `NEW_PROOF`: the proof may differ from the thread's current one (else it is the same,
    /// and is not rewritten).
    #[inline(always)]
    pub(crate) fn begin<const NEW_PROOF: bool>(
        st: StateWord,
        name: u32,
        parent: u64,
        proof: u64,
        prev: Ctx,
    ) -> SpanGuard {
        let meta = RawEvent::meta(RawKind::SpanBegin, proof, name);
        let fast = with_hot(|hot| {
            let span = thread::begin_fast(hot, st, parent, meta)?;
            hot.set_span(span);
            if NEW_PROOF {
                hot.set_proof(proof);
            }
            Some(span)
        });
        match fast {
            Some(Some(span)) => SpanGuard::active(span, prev),
            _ => Self::begin_slow(st, parent, proof, meta, prev),
        }
    }

    /// A begin edge that missed the fast path: joins the session, or the ring's bounds were
    /// reached, or the session's ticks do not come from the TSC.
    #[cold]
    #[inline(never)]
    fn begin_slow(st: StateWord, parent: u64, proof: u64, meta: u64, prev: Ctx) -> SpanGuard {
        let span = thread::emit(st, 0, parent, meta, true);
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
        let prev = Ctx {
            span: self.prev_span,
            proof: self.prev_proof,
        };
        let span = self.span;
        with_hot(|hot| {
            if !thread::end_fast(hot, span) {
                thread::end_slow(span);
            }
            hot.set_ctx(prev);
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
    if state::enabled() {
        marker_id(site.id());
    }
}

/// Records an instant named by an interned id inside the current span.
pub(crate) fn marker_id(id: u32) {
    let st = state::load();
    if !st.enabled() {
        return;
    }
    let meta = RawEvent::meta(RawKind::Marker, 0, id);
    thread::emit(st, current_ctx().span, 0, meta, false);
}

/// Records an instant with a text (slow path: the text is copied).
pub fn marker_with_text(name: &str, text: impl Into<String>) {
    let st = state::load();
    if !st.enabled() {
        return;
    }
    let t = st.ticks();
    let Some(session) = session::current() else {
        return;
    };
    let ctx = current_ctx();
    // The thread's ring registers its ThreadDef; make sure it exists.
    thread::ensure_joined();
    session.slow.push(SlowEvent::Ticks(
        t,
        Event::Marker(Box::new(probe_protocol::Marker {
            ts: 0,
            name: names::intern(name),
            thread: os_tid(),
            span: (ctx.span != 0).then_some(ctx.span),
            text: Some(text.into()),
        })),
    ));
}
