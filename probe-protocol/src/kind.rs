//! The one table of event kinds. Every fact about a kind — its wire tag, its name in reports,
//! whether a stream may drop it, how many array elements it needs at least, and how it moves
//! the frame's time and span cursors — is a column of [`event_kinds!`]'s invocation below;
//! [`EventKind`], [`EventKind::ALL`], [`EventKind::COUNT`], the dense index and the lookups
//! are derived from it. The codec dispatches on [`EventKind`] with exhaustive matches, so a new
//! kind is one row here plus its encode and decode arms, which the compiler asks for.

use serde::{Deserialize, Serialize};

/// How an event's timestamp travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// No timestamp (definitions, the client's subscription).
    None,
    /// A delta from the frame's time cursor, which it moves.
    Delta,
    /// Absolute, leaving the cursor alone: kinds added by a minor version (an older reader
    /// that skips them keeps its cursor right).
    Absolute,
}

/// How an event's span id travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanField {
    /// No span id.
    None,
    /// A span id, delta-coded from the frame's span cursor, which it moves.
    Delta,
    /// An optional span id: when present, delta-coded and moving the cursor.
    OptionalDelta,
}

/// Whether a stream may drop an event of a kind when a queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Definitions and session bookkeeping: never dropped (a reader needs them to decode or
    /// to account for what was dropped).
    Never,
    /// Data: dropped and counted when a queue is full.
    Counted,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    /// Lower-case name used in reports and JSON.
    pub name: &'static str,
    /// Array elements the event needs at least, its tag included (trailing fields added by
    /// later minor versions are optional).
    pub min_fields: usize,
    pub loss: Loss,
    pub clock: Clock,
    pub span: SpanField,
    /// The minor version of protocol 1 that added it.
    pub since_minor: u16,
}

macro_rules! event_kinds {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $tag:literal, $name:literal, fields $min:literal, loss $loss:ident,
            clock $clock:ident, span $span:ident, minor $since:literal;
    )*) => {
        /// Event kinds. The discriminant is the wire tag; stable: a tag is never reused.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[repr(u8)]
        pub enum EventKind {
            $( $(#[$doc])* $kind = $tag, )*
        }

        impl EventKind {
            /// Every kind, in tag order.
            pub const ALL: [EventKind; EventKind::COUNT] = [$(EventKind::$kind),*];
            /// Number of kinds.
            pub const COUNT: usize = [$($tag),*].len();
            /// The table's rows, in the order of [`EventKind::ALL`].
            const INFO: [KindInfo; EventKind::COUNT] = [$(KindInfo {
                name: $name,
                min_fields: $min,
                loss: Loss::$loss,
                clock: Clock::$clock,
                span: SpanField::$span,
                since_minor: $since,
            }),*];
        }
    };
}

event_kinds! {
    /// Who is talking and on what machine; the first event of every session.
    Hello = 1, "hello", fields 2, loss Never, clock None, span None, minor 0;
    NameDef = 2, "name_def", fields 3, loss Never, clock None, span None, minor 0;
    ThreadDef = 3, "thread_def", fields 4, loss Never, clock None, span None, minor 0;
    ProofBegin = 4, "proof_begin", fields 3, loss Counted, clock Delta, span None, minor 0;
    ProofEnd = 5, "proof_end", fields 3, loss Counted, clock Delta, span None, minor 0;
    SpanBegin = 6, "span_begin", fields 7, loss Counted, clock Delta, span Delta, minor 0;
    SpanEnd = 7, "span_end", fields 3, loss Counted, clock Delta, span Delta, minor 0;
    Marker = 8, "marker", fields 6, loss Counted, clock Delta, span OptionalDelta, minor 0;
    AllocSample = 9, "alloc_sample", fields 9, loss Counted, clock Delta, span None, minor 0;
    Alloc = 10, "alloc", fields 6, loss Counted, clock Delta, span OptionalDelta, minor 0;
    Release = 11, "release", fields 6, loss Counted, clock Delta, span OptionalDelta, minor 0;
    GpuSample = 12, "gpu_sample", fields 14, loss Counted, clock Delta, span None, minor 0;
    GpuSpan = 13, "gpu_span", fields 7, loss Counted, clock Delta, span OptionalDelta, minor 0;
    Dropped = 14, "dropped", fields 3, loss Never, clock Delta, span None, minor 0;
    Heartbeat = 15, "heartbeat", fields 2, loss Counted, clock Delta, span None, minor 0;
    HistoryGap = 16, "history_gap", fields 5, loss Never, clock Delta, span None, minor 0;
    /// History ends here; what follows is live.
    LiveStart = 17, "live_start", fields 2, loss Never, clock Delta, span None, minor 0;
    Goodbye = 18, "goodbye", fields 3, loss Never, clock Delta, span None, minor 0;
    ThreadSched = 19, "thread_sched", fields 6, loss Counted, clock Absolute, span None, minor 2;
    StackDef = 20, "stack_def", fields 3, loss Never, clock None, span None, minor 3;
    /// A write to the program's stdout or stderr, stamped where it happened.
    OutputWrite = 21, "output_write", fields 6, loss Counted, clock Absolute, span None, minor 5;
    /// This process's CUDA context on a device, from NVML's process list.
    GpuProcess = 22, "gpu_process", fields 5, loss Counted, clock Absolute, span None, minor 6;
    /// A thread's page faults, user and kernel time, and the system call it is blocked in.
    ThreadKernel = 23, "thread_kernel", fields 9, loss Counted, clock Absolute, span None, minor 7;
    /// A thread's user-space call stack, sampled every so much of its CPU time.
    StackSample = 24, "stack_sample", fields 4, loss Counted, clock Absolute, span None, minor 7;
    /// Client → server.
    Subscribe = 32, "subscribe", fields 3, loss Never, clock None, span None, minor 0;
}

/// Tag → position in [`EventKind::ALL`] (`u8::MAX`: no such kind), built from the table.
const INDEX_OF_TAG: [u8; 256] = {
    let mut t = [u8::MAX; 256];
    let mut i = 0;
    while i < EventKind::COUNT {
        t[EventKind::ALL[i] as usize] = i as u8;
        i += 1;
    }
    t
};

impl EventKind {
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// Position in [`EventKind::ALL`]: a dense index for per-kind tables.
    pub const fn index(self) -> usize {
        INDEX_OF_TAG[self as usize] as usize
    }

    /// The kind of a wire tag; `None` for a tag this build does not know (a later minor
    /// version's kind, which readers skip whole).
    pub fn from_tag(tag: u8) -> Option<EventKind> {
        let i = INDEX_OF_TAG[tag as usize];
        (i != u8::MAX).then(|| EventKind::ALL[i as usize])
    }

    /// Its row of the table.
    pub const fn info(self) -> &'static KindInfo {
        &EventKind::INFO[self.index()]
    }

    /// Lower-case name used in reports and JSON.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Definitions and session bookkeeping that a stream must never lose.
    pub fn is_essential(self) -> bool {
        self.info().loss == Loss::Never
    }

    /// Array elements the event needs at least (its tag included).
    pub fn min_fields(self) -> usize {
        self.info().min_fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        let mut names = std::collections::HashSet::new();
        for (i, k) in EventKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
            assert_eq!(EventKind::from_tag(k.tag()), Some(*k));
            assert!(names.insert(k.name()), "{} named twice", k.name());
            assert!(k.min_fields() >= 2, "{k:?}: a tag and at least one field");
            if k.info().since_minor > 0 {
                // A kind added by a minor version must not move the cursors older readers
                // keep: they skip it.
                assert_ne!(k.info().clock, Clock::Delta, "{k:?}");
                assert_eq!(k.info().span, SpanField::None, "{k:?}");
            }
        }
        assert!(EventKind::ALL.windows(2).all(|w| w[0].tag() < w[1].tag()));
        let known = (0..=255u8).filter(|t| EventKind::from_tag(*t).is_some());
        assert_eq!(known.count(), EventKind::COUNT);
    }
}
