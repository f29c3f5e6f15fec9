//! Time-ordered samples with range queries. Events arrive nearly in order (threads drained in
//! turn), so inserts are appends or short moves from the back.

/// Anything with a session timestamp.
pub trait Timed {
    fn ts(&self) -> u64;
}

impl Timed for probe_protocol::AllocSample {
    fn ts(&self) -> u64 {
        self.ts
    }
}
impl Timed for probe_protocol::BlockEvent {
    fn ts(&self) -> u64 {
        self.ts
    }
}
impl Timed for probe_protocol::GpuSample {
    fn ts(&self) -> u64 {
        self.ts
    }
}

#[derive(Debug, Clone)]
pub struct TimeSeries<T> {
    items: Vec<T>,
}

impl<T> Default for TimeSeries<T> {
    fn default() -> Self {
        TimeSeries { items: Vec::new() }
    }
}

impl<T: Timed> TimeSeries<T> {
    pub fn push(&mut self, v: T) {
        let ts = v.ts();
        let at = self.items.len() - self.items.iter().rev().take_while(|x| x.ts() > ts).count();
        self.items.insert(at, v);
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
