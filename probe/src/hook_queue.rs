//! A queue the program's threads fill from inside a hook (a write to stdout, a large free) and
//! the collector drains: allocated once when the session starts, then a push is a lock-free
//! store that never allocates; a full queue drops the item and counts it. While no session runs
//! the hooks leave it alone.

use crossbeam_queue::ArrayQueue;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(crate) struct HookQueue<T> {
    queue: OnceLock<ArrayQueue<T>>,
    capacity: usize,
    on: AtomicBool,
    dropped: AtomicU64,
}

impl<T> HookQueue<T> {
    pub const fn new(capacity: usize) -> HookQueue<T> {
        HookQueue {
            queue: OnceLock::new(),
            capacity,
            on: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        }
    }

    /// A session started: the queue is made (once) and the hooks fill it.
    pub fn enable(&self) {
        let _ = self.queue.get_or_init(|| ArrayQueue::new(self.capacity));
        self.on.store(true, Ordering::Release);
    }

    pub fn disable(&self) {
        self.on.store(false, Ordering::Release);
    }

    /// Whether the hooks are to fill it (a session runs).
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// Queues `item`; a full queue (or none yet) drops it, counted.
    pub fn push(&self, item: T) {
        if self.queue.get().is_none_or(|q| q.push(item).is_err()) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes every queued item.
    pub fn drain(&self, mut f: impl FnMut(T)) {
        if let Some(q) = self.queue.get() {
            while let Some(item) = q.pop() {
                f(item);
            }
        }
    }

    /// Items dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
