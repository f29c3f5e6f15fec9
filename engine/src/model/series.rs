//! Time-ordered samples with range queries. Events arrive nearly in order (threads drained in
//! turn), so inserts are appends or short moves from the back.

/// Anything with a session timestamp.
pub trait Timed {
    fn ts(&self) -> u64;
}

/// The protocol's sample kinds: their `ts` is the session time.
macro_rules! timed {
    ($($t:ident),*) => {$(
        impl Timed for probe_protocol::$t {
            fn ts(&self) -> u64 {
                self.ts
            }
        }
    )*};
}

timed!(
    AllocSample,
    ThreadSched,
    ThreadKernel,
    StackSample,
    OutputWrite,
    GpuSample
);

#[derive(Debug, Clone)]
pub struct TimeSeries<T> {
    items: Vec<T>,
}

impl<T> Default for TimeSeries<T> {
    fn default() -> Self {
        TimeSeries { items: Vec::new() }
    }
}

/// How far back from the newest item an out-of-order item may be placed. Streams arrive
/// nearly in order; an item older than this many newer ones is dropped (a crafted stream in
/// reverse order would otherwise cost a move of the whole series per item).
pub const REORDER_WINDOW: usize = 4096;

impl<T: Timed> TimeSeries<T> {
    /// Inserts in time order; `false` (not inserted) when more than [`REORDER_WINDOW`] newer
    /// items are already there.
    pub fn push(&mut self, v: T) -> bool {
        let ts = v.ts();
        let later = self
            .items
            .iter()
            .rev()
            .take(REORDER_WINDOW + 1)
            .take_while(|x| x.ts() > ts)
            .count();
        if later > REORDER_WINDOW {
            return false;
        }
        self.items.insert(self.items.len() - later, v);
        true
    }

    /// Drops the older half (at least one item); returns how many.
    pub fn trim_half(&mut self) -> usize {
        let n = self.items.len().div_ceil(2);
        self.items.drain(..n);
        self.items.shrink_to_fit();
        n
    }

    /// Items with `from <= ts < to`.
    pub fn range(&self, from: u64, to: u64) -> &[T] {
        let a = self.items.partition_point(|x| x.ts() < from);
        let b = self.items.partition_point(|x| x.ts() < to);
        &self.items[a..b.max(a)]
    }

    /// The last item at or before `ts`.
    pub fn at(&self, ts: u64) -> Option<&T> {
        let i = self.items.partition_point(|x| x.ts() <= ts);
        i.checked_sub(1).map(|i| &self.items[i])
    }

    pub fn all(&self) -> &[T] {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn last(&self) -> Option<&T> {
        self.items.last()
    }

    /// Drops items before `ts`; returns how many.
    pub fn trim_before(&mut self, ts: u64) -> usize {
        let n = self.items.partition_point(|x| x.ts() < ts);
        self.items.drain(..n);
        n
    }
}
