//! What the model keeps of each event: the wire's values with typed ids, as plain records.

use super::ids::{NameId, SpanId, StackId, ThreadId};
use super::series::Timed;
use probe_protocol::KindCounts;

/// A span as the viewer keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub id: SpanId,
    /// May live on another thread.
    pub parent: Option<SpanId>,
    pub name: NameId,
    pub thread: ThreadId,
    pub start: u64,
    /// `None` while open.
    pub end: Option<u64>,
}

impl Span {
    /// Its end, or `now` while it is open.
    pub fn end_or(&self, now: u64) -> u64 {
        self.end.unwrap_or(now.max(self.start))
    }

    /// Its length, open spans up to `now`.
    pub fn len_at(&self, now: u64) -> u64 {
        self.end_or(now) - self.start
    }
}

/// A large allocation or release (at or above the large-block threshold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// When the call into the allocator started.
    pub ts: u64,
    pub bytes: u64,
    /// Time spent inside the allocator call.
    pub inside_ns: u64,
    pub thread: ThreadId,
    /// The innermost open span on that thread (or the span whose work it ran).
    pub span: Option<SpanId>,
    /// The call stack that made the call, when the probe captured it.
    pub stack: Option<StackId>,
}

impl From<probe_protocol::BlockEvent> for Block {
    fn from(b: probe_protocol::BlockEvent) -> Block {
        Block {
            ts: b.ts,
            bytes: b.bytes,
            inside_ns: b.inside_ns,
            thread: ThreadId(b.thread),
            span: b.span.map(SpanId),
            stack: b.stack.map(StackId),
        }
    }
}

impl Timed for Block {
    fn ts(&self) -> u64 {
        self.ts
    }
}

/// Device work (a kernel or a copy), on the session clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpan {
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub stream: u32,
    pub name: NameId,
    /// The span that launched it.
    pub span: Option<SpanId>,
}

impl From<probe_protocol::GpuSpan> for DeviceSpan {
    fn from(g: probe_protocol::GpuSpan) -> DeviceSpan {
        DeviceSpan {
            start: g.start,
            end: g.end,
            device: g.device,
            stream: g.stream,
            name: NameId(g.name),
            span: g.span.map(SpanId),
        }
    }
}

/// An instant with a name and maybe a text (a `Marker` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub ts: u64,
    pub name: NameId,
    pub thread: ThreadId,
    pub span: Option<SpanId>,
    pub text: Option<String>,
}

impl From<probe_protocol::Marker> for Mark {
    fn from(m: probe_protocol::Marker) -> Mark {
        Mark {
            ts: m.ts,
            name: NameId(m.name),
            thread: ThreadId(m.thread),
            span: m.span.map(SpanId),
            text: m.text,
        }
    }
}

/// Events a stream reported lost, per kind, at `ts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropReport {
    pub ts: u64,
    pub counts: KindCounts,
}

/// How a session ended, when the prover said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goodbye {
    pub ts: u64,
    pub reason: String,
}

/// A thread the stream defined, and when it was seen active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub name: String,
    pub os_tid: u64,
    /// First and last event time on it (`None` before one).
    pub life: Option<(u64, u64)>,
}
