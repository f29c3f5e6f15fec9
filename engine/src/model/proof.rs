//! A proof (one batch): its begin and end, and the tree of spans, device work and marks that
//! belong to it. The work that belongs to no proof (parameter generation, a server's idle
//! work) is a [`SpanTree`] of the session's own.

use super::ids::{ProofId, SpanId};
use super::records::{DeviceSpan, Mark, Span};
use probe_protocol::{ProofBegin, ProofEnd};
use std::collections::HashMap;

/// What keeping one item costs, roughly (the struct, its place in a map or vector and the
/// vector's spare capacity): what the retention budget counts.
pub(super) mod cost {
    pub const SPAN: usize = std::mem::size_of::<super::Span>() + 96;
    pub const DEVICE_SPAN: usize = 96;
    pub const MARK: usize = 128;
    pub const PROOF: usize = 384;
    pub const PROOF_BEGIN: usize = 256;
    pub const PROOF_END: usize = 128;
}

/// Spans (in arrival order, with an index by id), device work and marks.
#[derive(Debug, Clone, Default)]
pub struct SpanTree {
    spans: Vec<Span>,
    /// Span id → index in `spans`; always in step with `spans`.
    index: HashMap<SpanId, usize>,
    gpu_spans: Vec<DeviceSpan>,
    marks: Vec<Mark>,
}

impl SpanTree {
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    pub fn span(&self, id: SpanId) -> Option<&Span> {
        self.index.get(&id).map(|&i| &self.spans[i])
    }

    pub fn contains(&self, id: SpanId) -> bool {
        self.index.contains_key(&id)
    }

    /// Direct children of a span (any thread).
    pub fn children(&self, id: SpanId) -> impl Iterator<Item = &Span> {
        self.spans.iter().filter(move |s| s.parent == Some(id))
    }

    /// Device work launched from it.
    pub fn gpu_spans(&self) -> &[DeviceSpan] {
        &self.gpu_spans
    }

    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    pub(super) fn push_span(&mut self, s: Span) {
        self.index.insert(s.id, self.spans.len());
        self.spans.push(s);
    }

    pub(super) fn end_span(&mut self, id: SpanId, ts: u64) {
        if let Some(&i) = self.index.get(&id) {
            self.spans[i].end = Some(ts);
        }
    }

    /// Adds device work unless it is already there: a replayed history repeats recent GPU
    /// spans, so the newest few are compared. Returns whether it was added.
    pub(super) fn push_gpu_span(&mut self, g: DeviceSpan) -> bool {
        if self.gpu_spans.iter().rev().take(64).any(|x| *x == g) {
            return false;
        }
        self.gpu_spans.push(g);
        true
    }

    pub(super) fn push_mark(&mut self, m: Mark) {
        self.marks.push(m);
    }

    /// Drops the older half of the spans, marks and device work; returns the spans that went
    /// and how many items in all.
    pub(super) fn trim_half(&mut self) -> (Vec<Span>, usize) {
        let n = self.spans.len().div_ceil(2);
        let gone: Vec<Span> = self.spans.drain(..n).collect();
        self.index = self
            .spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id, i))
            .collect();
        let m = self.marks.len().div_ceil(2);
        self.marks.drain(..m);
        let g = self.gpu_spans.len().div_ceil(2);
        self.gpu_spans.drain(..g);
        (gone, n + m + g)
    }

    pub(super) fn items(&self) -> usize {
        self.spans.len() + self.marks.len() + self.gpu_spans.len()
    }

    /// What keeping it costs, as the model counted it when its events arrived.
    fn approx_bytes(&self) -> usize {
        self.spans.len() * cost::SPAN
            + self.gpu_spans.len() * cost::DEVICE_SPAN
            + self
                .marks
                .iter()
                .map(|m| cost::MARK + m.text.as_ref().map_or(0, String::len))
                .sum::<usize>()
    }
}

/// One proof (one batch).
#[derive(Debug, Clone)]
pub struct Proof {
    id: ProofId,
    begin: Option<ProofBegin>,
    end: Option<ProofEnd>,
    tree: SpanTree,
}

impl Proof {
    pub(super) fn new(id: ProofId) -> Proof {
        Proof {
            id,
            begin: None,
            end: None,
            tree: SpanTree::default(),
        }
    }

    pub fn id(&self) -> ProofId {
        self.id
    }

    pub fn begin(&self) -> Option<&ProofBegin> {
        self.begin.as_ref()
    }

    pub fn end(&self) -> Option<&ProofEnd> {
        self.end.as_ref()
    }

    /// Its spans, device work and marks.
    pub fn tree(&self) -> &SpanTree {
        &self.tree
    }

    pub(super) fn tree_mut(&mut self) -> &mut SpanTree {
        &mut self.tree
    }

    pub fn spans(&self) -> &[Span] {
        self.tree.spans()
    }

    pub fn span(&self, id: SpanId) -> Option<&Span> {
        self.tree.span(id)
    }

    pub fn children(&self, id: SpanId) -> impl Iterator<Item = &Span> {
        self.tree.children(id)
    }

    pub fn gpu_spans(&self) -> &[DeviceSpan] {
        self.tree.gpu_spans()
    }

    pub fn marks(&self) -> &[Mark] {
        self.tree.marks()
    }

    /// The outer span (the wrapper timer), once known.
    pub fn outer(&self) -> Option<&Span> {
        self.tree.span(SpanId(self.begin.as_ref()?.span))
    }

    /// The phases: the outer span's direct children.
    pub fn phases(&self) -> impl Iterator<Item = &Span> {
        let outer = self.outer().map(|o| o.id);
        self.tree
            .spans()
            .iter()
            .filter(move |s| outer.is_some() && s.parent == outer)
    }

    /// Whether the proof has ended (ProofEnd seen).
    pub fn done(&self) -> bool {
        self.end.is_some()
    }

    /// Whether it ended with an error.
    pub fn failed(&self) -> bool {
        self.end.as_ref().is_some_and(|e| !e.ok)
    }

    /// The proof's time range: its outer span, else the extent of its spans.
    pub fn range(&self, now: u64) -> Option<(u64, u64)> {
        if let Some(o) = self.outer() {
            return Some((o.start, o.end_or(now)));
        }
        let s = self.spans().iter().map(|s| s.start).min()?;
        let e = self.spans().iter().map(|s| s.end_or(now)).max()?;
        Some((s, e))
    }

    /// Its backend, as the proof's begin says it (`"gpu"`, `"cpu"`, …); empty when unknown.
    pub fn backend(&self) -> &str {
        self.begin.as_ref().map_or("", |b| b.backend.as_str())
    }

    /// Sets its begin (the first one wins: a replayed history repeats it).
    pub(super) fn set_begin(&mut self, b: ProofBegin) {
        if self.begin.is_none() {
            self.begin = Some(b);
        }
    }

    /// Sets its end; `true` when this is the first.
    pub(super) fn set_end(&mut self, e: ProofEnd) -> bool {
        if self.end.is_some() {
            return false;
        }
        self.end = Some(e);
        true
    }

    /// What keeping this proof costs, as the model counted it when its events arrived.
    pub fn approx_bytes(&self) -> usize {
        self.tree.approx_bytes() + cost::PROOF
    }

    /// Events it holds (span edges count twice).
    pub(super) fn events(&self) -> u64 {
        (self.tree.spans.len() * 2 + self.tree.gpu_spans.len() + self.tree.marks.len()) as u64
    }
}
