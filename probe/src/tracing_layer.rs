//! A `tracing` layer: the spans of a program instrumented with `tracing` (and no probe macros)
//! become probe spans, so a Rust prover that already says where its time goes in `tracing`
//! terms is watched without a line changed.
//!
//! The mapping follows what each side guarantees. A `tracing` span is created once and may be
//! entered many times, on any thread; a probe span is one begin/end pair on one thread. So
//! every *entry* of a `tracing` span is one probe span (an `#[instrument]`ed future polled ten
//! times is ten probe spans under one name, which is what ran). The probe span's parent is the
//! open entry of the `tracing` parent, wherever it runs: that is how a span created on a rayon
//! worker with `parent: &batch` nests under the batch on the main thread. A span whose name or
//! target the layer was told about is a proof: its first entry opens the proof scope (the outer
//! span, the wrapper timer) and closing the span ends the proof.

use crate::names;
use crate::proof::{ProofInfo, ProofScope};
use crate::span::{SpanGuard, SpanHandle, marker_with_text};
use crate::state;
use crate::thread::{Ctx, current_ctx};
use probe_protocol::Verification;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Which `tracing` spans are proofs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ProofMatch {
    Name(String),
    Target(String),
}

impl ProofMatch {
    fn matches(&self, meta: &Metadata<'_>) -> bool {
        match self {
            ProofMatch::Name(n) => meta.name() == n,
            ProofMatch::Target(t) => in_target(meta.target(), t),
        }
    }
}

/// `target` is `module` or a module below it; `prover::proofs` is not in `prover::proof`.
fn in_target(target: &str, module: &str) -> bool {
    target
        .strip_prefix(module)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// The layer. `tracing_subscriber::registry().with(ProofscopeLayer::new())`, then start a
/// [`crate::Probe`] as usual; without a running probe every callback returns at its first load.
///
/// A proof span's fields fill its `ProofBegin`: `circuit` and `backend` (text), `constraints`
/// and `circuits` (integers). Recording `ok = false` or `error = "…"` on it (at creation or with
/// `Span::record`) makes its `ProofEnd` a failure.
#[derive(Debug, Clone)]
pub struct ProofscopeLayer {
    proofs: Vec<ProofMatch>,
    events: bool,
}

impl Default for ProofscopeLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ProofscopeLayer {
    /// Spans named `prove` are proofs (the name of the native [`ProofScope`]'s outer span);
    /// events are not recorded.
    pub fn new() -> Self {
        ProofscopeLayer {
            proofs: vec![ProofMatch::Name("prove".to_owned())],
            events: false,
        }
    }

    /// Spans named `name` are proofs too.
    pub fn proof_span_named(mut self, name: impl Into<String>) -> Self {
        self.proofs.push(ProofMatch::Name(name.into()));
        self
    }

    /// Spans whose target is `target` or a module below it (`target::…`) are proofs too.
    pub fn proof_spans_in_target(mut self, target: impl Into<String>) -> Self {
        self.proofs.push(ProofMatch::Target(target.into()));
        self
    }

    /// No span is a proof unless named by a later call (the default `prove` is forgotten).
    pub fn without_default_proofs(mut self) -> Self {
        self.proofs.clear();
        self
    }

    /// Also record `tracing` events as markers, named by their call site and carrying their
    /// message. Off by default: each one copies its text (the probe's slow path), which a
    /// chatty `debug!` in a loop would pay per line.
    pub fn with_events(mut self, on: bool) -> Self {
        self.events = on;
        self
    }

    fn is_proof(&self, meta: &Metadata<'_>) -> bool {
        self.proofs.iter().any(|m| m.matches(meta))
    }
}

/// What the layer keeps on each `tracing` span (in the registry's extensions).
#[derive(Debug)]
struct SpanData {
    /// The interned name.
    name: u32,
    /// The latest open entry, as the parent of children opened anywhere.
    open: Option<SpanHandle>,
    proof: Option<ProofState>,
}

#[derive(Debug, Default)]
struct ProofState {
    /// 0 until the span is first entered (and while the probe is off).
    id: u64,
    info: ProofInfo,
    failed: bool,
    error: Option<String>,
}

/// One open entry on this thread: the `tracing` id and the probe span's raw guard.
#[derive(Debug, Clone, Copy)]
struct Entry {
    tracing: u64,
    span: u64,
    prev: Ctx,
}

thread_local! {
    /// This thread's open entries, innermost last. Grows to the deepest nesting once.
    static ENTRIES: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    /// Interned name per call site (its `&'static Metadata`), so a new span takes no lock.
    static NAMES: RefCell<HashMap<usize, u32>> = RefCell::new(HashMap::new());
}

fn name_id(meta: &'static Metadata<'static>) -> u32 {
    let key = meta as *const Metadata<'static> as usize;
    NAMES
        .try_with(|cache| {
            *cache
                .borrow_mut()
                .entry(key)
                .or_insert_with(|| names::intern(meta.name()))
        })
        .unwrap_or_else(|_| names::intern(meta.name()))
}

impl<S> Layer<S> for ProofscopeLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !state::enabled() {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let meta = attrs.metadata();
        let proof = self.is_proof(meta).then(|| {
            let mut p = ProofState::default();
            attrs.record(&mut ProofFields(&mut p));
            p
        });
        span.extensions_mut().insert(SpanData {
            name: name_id(meta),
            open: None,
            proof,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut ext = span.extensions_mut();
        if let Some(p) = ext.get_mut::<SpanData>().and_then(|d| d.proof.as_mut()) {
            values.record(&mut ProofFields(p));
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let st = state::load();
        if !st.enabled() {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = span.parent().and_then(|p| {
            p.extensions()
                .get::<SpanData>()
                .and_then(|d| d.open)
                .filter(|h| h.span != 0)
        });
        let mut ext = span.extensions_mut();
        // A span created while the probe was off has no data: it stays unrecorded.
        let Some(data) = ext.get_mut::<SpanData>() else {
            return;
        };
        let prev = current_ctx();
        let (span_id, proof) = match data.proof.as_mut() {
            Some(p) if p.id == 0 => {
                let scope = ProofScope::begin_id(data.name, std::mem::take(&mut p.info));
                let (proof, outer) = scope.into_raw();
                p.id = proof;
                (outer.map_or(0, |(s, _, _)| s), proof)
            }
            Some(p) => {
                let under = SpanHandle {
                    span: parent.map_or(prev.span, |h| h.span),
                    proof: p.id,
                };
                (
                    SpanGuard::enter_id_under(data.name, under).into_raw().0,
                    p.id,
                )
            }
            None => match parent {
                Some(h) => (
                    SpanGuard::enter_id_under(data.name, h).into_raw().0,
                    h.proof,
                ),
                None => (SpanGuard::enter_id(data.name).into_raw().0, prev.proof),
            },
        };
        if span_id == 0 {
            return;
        }
        data.open = Some(SpanHandle {
            span: span_id,
            proof,
        });
        drop(ext);
        let entry = Entry {
            tracing: id.into_u64(),
            span: span_id,
            prev,
        };
        if ENTRIES.try_with(|e| e.borrow_mut().push(entry)).is_err() {
            // The thread is being torn down: end the span rather than lose its edge.
            end_entry(entry, true);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let key = id.into_u64();
        let Ok(Some((entry, innermost))) = ENTRIES.try_with(|e| {
            let mut e = e.borrow_mut();
            let at = e.iter().rposition(|x| x.tracing == key)?;
            let innermost = at + 1 == e.len();
            Some((e.remove(at), innermost))
        }) else {
            return;
        };
        end_entry(entry, innermost);
        if let Some(span) = ctx.span(id)
            && let Some(data) = span.extensions_mut().get_mut::<SpanData>()
            && data.open.is_some_and(|h| h.span == entry.span)
        {
            data.open = None;
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut p) = span
            .extensions_mut()
            .get_mut::<SpanData>()
            .and_then(|d| d.proof.take())
        else {
            return;
        };
        if p.id != 0 {
            let ok = !p.failed && p.error.is_none();
            ProofScope::from_raw(p.id, None).end(ok, Verification::NotChecked, p.error.take());
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !self.events || !state::enabled() {
            return;
        }
        let mut text = String::new();
        event.record(&mut Message(&mut text));
        marker_with_text(event.metadata().name(), text);
    }
}

/// Ends one entry's probe span. The innermost entry restores the context it found; one ended
/// out of order (async code that exits an outer span first) leaves the inner one current.
fn end_entry(entry: Entry, innermost: bool) {
    let restore = if innermost { entry.prev } else { current_ctx() };
    drop(SpanGuard::from_raw(entry.span, restore.span, restore.proof));
}

/// Fills a proof's `ProofBegin` and outcome from the span's fields.
struct ProofFields<'a>(&'a mut ProofState);

impl Visit for ProofFields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "circuit" => self.0.info.circuit = value.to_owned(),
            "backend" => self.0.info.backend = value.to_owned(),
            "error" => self.0.error = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "constraints" => self.0.info.constraints = value,
            "circuits" => self.0.info.circuits = u32::try_from(value).unwrap_or(u32::MAX),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(v) = u64::try_from(value) {
            self.record_u64(field, v);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match field.name() {
            "ok" => self.0.failed = !value,
            "synthetic_srs" => self.0.info.synthetic_srs = value,
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `circuit = %name` and `error = ?e` arrive here.
        if matches!(field.name(), "circuit" | "backend" | "error") {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

/// An event's `message` field, then its other fields as `name=value`.
struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write;
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        let _ = if field.name() == "message" {
            write!(self.0, "{value:?}")
        } else {
            write!(self.0, "{}={value:?}", field.name())
        };
    }
}

#[cfg(test)]
mod tests {
    use super::in_target;

    #[test]
    fn target_match_is_per_module_not_per_prefix() {
        for (target, want) in [
            ("prover::proof", true),
            ("prover::proof::batch", true),
            ("prover::proofs", false),
            ("prover", false),
            ("", false),
        ] {
            assert_eq!(in_target(target, "prover::proof"), want, "{target}");
        }
    }
}
