//! Proof scopes: one proof (one batch) from `ProofBegin` to `ProofEnd`, with its outer span —
//! the wrapper timer whose unaccounted time the viewer explains.

use crate::names::CallSite;
use crate::session::{self, SlowEvent};
use crate::span::{SpanGuard, SpanHandle};
use crate::state;
use crate::thread::current_ctx;
use probe_protocol::{Event, ProofBegin, ProofEnd, Verification};

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
    const OFF: ProofScope = ProofScope {
        proof: 0,
        guard: None,
    };

    pub fn begin(info: ProofInfo) -> ProofScope {
        Self::begin_named(&PROVE_SITE, info)
    }

    /// A proof whose outer span is named by `site` instead of `prove`.
    pub fn begin_named(site: &CallSite, info: ProofInfo) -> ProofScope {
        if !state::enabled() {
            return Self::OFF;
        }
        Self::begin_id(site.id(), info)
    }

    /// A proof whose outer span is named by an interned id (the `tracing` layer's call sites).
    pub(crate) fn begin_id(name: u32, info: ProofInfo) -> ProofScope {
        let st = state::load();
        if !st.enabled() {
            return Self::OFF;
        }
        let Some(session) = session::current() else {
            return Self::OFF;
        };
        let proof = session.next_proof();
        let t = st.ticks();
        let ctx = current_ctx();
        let guard = SpanGuard::begin::<true>(st, name, ctx.span, proof, ctx);
        session.slow.push(SlowEvent::Ticks(
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

    /// The proof id and its outer span as plain words (see [`SpanGuard::into_raw`]), for
    /// callers that cannot hold the scope (the C API).
    pub(crate) fn into_raw(mut self) -> (u64, Option<(u64, u64, u64)>) {
        (self.proof, self.guard.take().map(SpanGuard::into_raw))
    }

    /// A scope from [`ProofScope::into_raw`]'s words.
    pub(crate) fn from_raw(proof: u64, outer: Option<(u64, u64, u64)>) -> ProofScope {
        ProofScope {
            proof,
            guard: outer.map(|(s, ps, pp)| SpanGuard::from_raw(s, ps, pp)),
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
        let Some(session) = session::current() else {
            return;
        };
        session.slow.push(SlowEvent::Ticks(
            session.word.ticks(),
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
