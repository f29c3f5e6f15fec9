//! Where synthesis writes a, b and c: a [`Column`] of scalars, either a heap vector of its own
//! (freed with the proof's other vectors, which is what shows the ghost) or one lent by a
//! [`ColumnPool`] and given back when the proof is done with it, so the next proof writes into
//! the same memory. A GPU backend page-locks a pooled column once, when it is made: its uploads
//! then go straight from where synthesis wrote it, with neither a staging copy nor a
//! registration per proof (registering in place costs ~50 ms per GB on the H200 host).
//!
//! A locked range must be unlocked before its memory is freed or moved (a later allocation at
//! the same address would otherwise be taken for it, and copied from stale pages). `Column`
//! keeps that true by construction: it never hands out its vector, only slices, and a push or
//! padding beyond the capacity first gives up the lease (unlocking) and then grows as a plain
//! vector would.

use blstrs::Scalar;
use ff::Field;
use std::sync::{Arc, Mutex};

/// A page lock on a column's memory, held while the column keeps that memory; dropping it
/// unlocks.
pub trait PageLock: Send + Sync {}

/// Locks memory for fast device copies (a GPU backend); `None` when it could not (the copies
/// then stage, as for any heap vector). One way it cannot: glibc places blocks under its mmap
/// threshold side by side, two small columns can share a page, and a driver locks a page once;
/// columns from 2^20 constraints up (32 MiB, past the threshold's ceiling) are mappings of their
/// own.
pub trait PageLocker: Send + Sync {
    fn lock(&self, mem: &mut [Scalar]) -> Option<Box<dyn PageLock>>;
}

/// A pooled column's tie to its pool, and the lock on its memory if it has one.
struct Lease {
    pool: Arc<Shared>,
    lock: Option<Box<dyn PageLock>>,
}

/// One circuit's a, b or c.
pub struct Column {
    v: Vec<Scalar>,
    lease: Option<Lease>,
}

impl Column {
    /// An empty heap column with room for `n` scalars.
    pub fn with_capacity(n: usize) -> Column {
        Column {
            v: Vec::with_capacity(n),
            lease: None,
        }
    }

    /// An empty column with room for `n` scalars: lent by `pool` when there is one.
    pub fn new_in(pool: Option<&ColumnPool>, n: usize) -> Column {
        match pool {
            Some(p) => p.take(n),
            None => Column::with_capacity(n),
        }
    }

    /// Appends `x`, growing as a vector does; a pooled column that is full leaves its pool
    /// first (see the module's note on locks).
    pub fn push(&mut self, x: Scalar) {
        if self.v.len() == self.v.capacity() {
            self.leave_pool();
        }
        self.v.push(x);
    }

    /// Pads with zeros to `n` scalars (the evaluation domain), as `Vec::resize` would.
    pub fn pad_to(&mut self, n: usize) {
        if n > self.v.capacity() {
            self.leave_pool();
        }
        self.v.resize(n, Scalar::ZERO);
    }

    /// Whether its memory is page-locked (copies from it need no staging).
    pub fn is_page_locked(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.lock.is_some())
    }

    /// Whether it goes back to a pool when dropped (so releasing it frees nothing).
    pub fn is_pooled(&self) -> bool {
        self.lease.is_some()
    }

    /// Bytes of heap it holds (its capacity).
    pub fn capacity_bytes(&self) -> u64 {
        (self.v.capacity() * std::mem::size_of::<Scalar>()) as u64
    }

    /// Unlocks (before the vector can move) and forgets the pool.
    fn leave_pool(&mut self) {
        if let Some(lease) = self.lease.take() {
            drop(lease.lock);
        }
    }
}

impl Drop for Column {
    fn drop(&mut self) {
        if let Some(Lease { pool, lock }) = self.lease.take() {
            let v = std::mem::take(&mut self.v);
            pool.give_back(v, lock);
        }
    }
}

impl From<Vec<Scalar>> for Column {
    /// A heap column holding `v`.
    fn from(v: Vec<Scalar>) -> Column {
        Column { v, lease: None }
    }
}

impl Default for Column {
    fn default() -> Column {
        Column::with_capacity(0)
    }
}

impl std::ops::Deref for Column {
    type Target = [Scalar];
    fn deref(&self) -> &[Scalar] {
        &self.v
    }
}

impl std::ops::DerefMut for Column {
    fn deref_mut(&mut self) -> &mut [Scalar] {
        &mut self.v
    }
}

impl PartialEq for Column {
    fn eq(&self, o: &Column) -> bool {
        self.v == o.v
    }
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Column")
            .field("len", &self.v.len())
            .field("capacity", &self.v.capacity())
            .field("pooled", &self.is_pooled())
            .field("page_locked", &self.is_page_locked())
            .finish()
    }
}

/// A vector the pool keeps, with its lock.
struct Kept {
    v: Vec<Scalar>,
    lock: Option<Box<dyn PageLock>>,
}

impl Drop for Kept {
    fn drop(&mut self) {
        // Unlock before the memory goes.
        drop(self.lock.take());
    }
}

struct Shared {
    free: Mutex<Vec<Kept>>,
    locker: Option<Arc<dyn PageLocker>>,
}

impl Shared {
    fn give_back(&self, mut v: Vec<Scalar>, lock: Option<Box<dyn PageLock>>) {
        v.clear();
        let kept = Kept { v, lock };
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(kept);
    }
}

/// Columns kept across proofs. It holds what the proofs in flight gave back: as many as they
/// had out at once, at their size. A request for a larger column than any kept drops the
/// smaller ones (a prover whose circuits grew no longer needs them).
#[derive(Clone)]
pub struct ColumnPool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ColumnPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kept, bytes) = self.kept();
        f.debug_struct("ColumnPool")
            .field("kept", &kept)
            .field("bytes", &bytes)
            .field("page_locks", &self.shared.locker.is_some())
            .finish()
    }
}

impl ColumnPool {
    /// A pool whose new columns `locker` page-locks (a GPU backend's), or plain heap ones.
    pub fn new(locker: Option<Arc<dyn PageLocker>>) -> ColumnPool {
        ColumnPool {
            shared: Arc::new(Shared {
                free: Mutex::new(Vec::new()),
                locker,
            }),
        }
    }

    /// An empty column with room for `n` scalars: the smallest kept one that fits, else a new
    /// one (page-locked when the pool has a locker and it succeeds).
    pub fn take(&self, n: usize) -> Column {
        let found = {
            let mut free = self.shared.free.lock().unwrap_or_else(|p| p.into_inner());
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, k)| k.v.capacity() >= n)
                .min_by_key(|(_, k)| k.v.capacity())
                .map(|(i, _)| i);
            match best {
                Some(i) => Some(free.swap_remove(i)),
                None => {
                    // Dropped outside the lock below: freeing (and unlocking) takes time.
                    let small: Vec<Kept> = std::mem::take(&mut *free);
                    drop(free);
                    drop(small);
                    None
                }
            }
        };
        let (v, lock) = match found {
            Some(mut k) => (std::mem::take(&mut k.v), k.lock.take()),
            None => self.make(n),
        };
        Column {
            v,
            lease: Some(Lease {
                pool: self.shared.clone(),
                lock,
            }),
        }
    }

    /// A new vector of capacity `n`, locked when the pool locks (over its whole length: it
    /// is zeroed first, as a lock needs initialised memory to lend; the driver makes every
    /// page resident as it locks). Unlocked, its pages fault in as synthesis writes them, as
    /// a fresh vector's would.
    fn make(&self, n: usize) -> (Vec<Scalar>, Option<Box<dyn PageLock>>) {
        let Some(locker) = &self.shared.locker else {
            return (Vec::with_capacity(n), None);
        };
        let mut v = vec![Scalar::ZERO; n];
        let lock = locker.lock(&mut v);
        v.clear();
        (v, lock)
    }

    /// Kept columns that are page-locked.
    pub fn page_locked(&self) -> usize {
        let free = self.shared.free.lock().unwrap_or_else(|p| p.into_inner());
        free.iter().filter(|k| k.lock.is_some()).count()
    }

    /// Columns kept now, and their bytes.
    pub fn kept(&self) -> (usize, u64) {
        let free = self.shared.free.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = free
            .iter()
            .map(|k| (k.v.capacity() * std::mem::size_of::<Scalar>()) as u64)
            .sum();
        (free.len(), bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts locks and unlocks, and remembers which ranges are locked now.
    #[derive(Default)]
    struct Ledger {
        locked: Mutex<Vec<(usize, usize)>>,
        unlocks: AtomicUsize,
    }

    struct FakeLock {
        range: (usize, usize),
        ledger: Arc<Ledger>,
    }

    impl PageLock for FakeLock {}

    impl Drop for FakeLock {
        fn drop(&mut self) {
            let mut l = self.ledger.locked.lock().unwrap();
            l.retain(|r| *r != self.range);
            self.ledger.unlocks.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct FakeLocker(Arc<Ledger>);

    impl PageLocker for FakeLocker {
        fn lock(&self, mem: &mut [Scalar]) -> Option<Box<dyn PageLock>> {
            let range = (mem.as_ptr() as usize, mem.len());
            self.0.locked.lock().unwrap().push(range);
            Some(Box::new(FakeLock {
                range,
                ledger: self.0.clone(),
            }))
        }
    }

    fn locking_pool() -> (ColumnPool, Arc<Ledger>) {
        let ledger = Arc::new(Ledger::default());
        (
            ColumnPool::new(Some(Arc::new(FakeLocker(ledger.clone())))),
            ledger,
        )
    }

    /// The range a column's memory lies in, if the ledger has it locked.
    fn locked_here(ledger: &Ledger, c: &Column) -> bool {
        let p = c.as_ptr() as usize;
        ledger
            .locked
            .lock()
            .unwrap()
            .iter()
            .any(|&(s, n)| s == p && n == c.v.capacity())
    }

    #[test]
    fn a_column_given_back_is_the_next_ones_memory() {
        let pool = ColumnPool::new(None);
        let mut c = pool.take(1000);
        assert!(c.is_pooled() && !c.is_page_locked());
        for i in 0..1000u64 {
            c.push(Scalar::from(i));
        }
        let p = c.as_ptr();
        drop(c);
        assert_eq!(pool.kept(), (1, 32_000));
        let again = pool.take(600);
        assert_eq!(again.as_ptr(), p, "the kept vector is reused");
        assert!(again.is_empty(), "handed out empty");
        assert_eq!(pool.kept().0, 0);
    }

    #[test]
    fn new_columns_are_locked_once_and_stay_locked_while_kept() {
        let (pool, ledger) = locking_pool();
        let cols: Vec<Column> = (0..3).map(|_| pool.take(4096)).collect();
        assert!(
            cols.iter()
                .all(|c| c.is_page_locked() && locked_here(&ledger, c))
        );
        drop(cols);
        assert_eq!(ledger.locked.lock().unwrap().len(), 3, "kept locked");
        for _ in 0..5 {
            let cols: Vec<Column> = (0..3).map(|_| pool.take(4096)).collect();
            assert!(cols.iter().all(|c| locked_here(&ledger, c)));
        }
        assert_eq!(
            ledger.unlocks.load(Ordering::SeqCst),
            0,
            "no lock per proof"
        );
        drop(pool);
        assert_eq!(
            ledger.unlocks.load(Ordering::SeqCst),
            3,
            "unlocked when the pool goes"
        );
        assert!(ledger.locked.lock().unwrap().is_empty());
    }

    #[test]
    fn growing_past_the_capacity_unlocks_before_the_memory_moves() {
        let (pool, ledger) = locking_pool();
        let mut c = pool.take(8);
        for i in 0..8u64 {
            c.push(Scalar::from(i));
        }
        assert!(c.is_page_locked());
        c.push(Scalar::from(8u64));
        assert!(!c.is_pooled() && !c.is_page_locked());
        assert!(ledger.locked.lock().unwrap().is_empty(), "unlocked");
        assert_eq!(c.len(), 9);
        assert_eq!(c[8], Scalar::from(8u64));
        drop(c);
        assert_eq!(
            pool.kept().0,
            0,
            "a column that left the pool is freed, not kept"
        );

        let mut d = pool.take(8);
        d.pad_to(8);
        assert!(
            d.is_page_locked(),
            "padding within the capacity keeps the lease"
        );
        d.pad_to(9);
        assert!(!d.is_pooled());
        assert!(d.iter().all(|x| *x == Scalar::ZERO));
    }

    #[test]
    fn a_larger_request_drops_the_smaller_kept_columns() {
        let (pool, ledger) = locking_pool();
        drop((pool.take(16), pool.take(16)));
        assert_eq!(pool.kept().0, 2);
        let big = pool.take(64);
        assert_eq!(pool.kept().0, 0);
        assert_eq!(ledger.unlocks.load(Ordering::SeqCst), 2);
        assert!(locked_here(&ledger, &big));
        drop(big);
        // A smaller request takes the larger kept column rather than making one.
        let small = pool.take(16);
        assert_eq!(small.v.capacity(), 64);
    }

    #[test]
    fn heap_columns_grow_and_compare_by_content() {
        let mut a = Column::with_capacity(1);
        let mut b = Column::default();
        for i in 0..10u64 {
            a.push(Scalar::from(i));
            b.push(Scalar::from(i));
        }
        assert_eq!(a, b);
        assert!(!a.is_pooled());
        assert_eq!(a.capacity_bytes() % 32, 0);
    }
}
