//! The large mappings that are address space, not memory: anonymous ones mapped `PROT_NONE`
//! (reservations). The allocator probe counts a mapping as live bytes and reports it as a
//! block; a reservation is neither. CUDA reserves hundreds of gigabytes so, for unified
//! addressing and for its memory pools (`cudaDeviceGetDefaultMemPool`: one anonymous mapping
//! of 300 GB on the H200 host, `recordings/supraseal/`), which made supraseal's live bytes read
//! 318.8 GB beside an RSS of 4.9 GB and squashed its memory chart into a flat line.
//!
//! `munmap` gives only a range, so the probe remembers reservations here to leave them out on
//! both sides: neither their mapping nor their unmapping (whole, or the parts a program trims
//! to align one) is counted, nor is what is mapped inside one (committed there with
//! `MAP_FIXED`, as pool allocators and CUDA's driver do) — it goes when the reservation does.
//! A fixed table, no allocation and no lock (the hooks' rules): a range is claimed by a
//! compare-and-swap on its slot's start. Full, it records nothing more and the caller counts
//! such a reservation as memory on both sides, as before.
//!
//! Limits: memory replaced by a `PROT_NONE` mapping over it (`MAP_FIXED`: a decommit) stays
//! counted; the unmapping of what was mapped inside a reservation (CUDA's pinned host memory
//! may live there) is not reported as a release; a hole unmapped inside a reservation stays
//! the reservation's, so memory the kernel maps there later is not counted; two threads
//! unmapping the ends of one reservation at the same instant may leave it remembered wrongly.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Ranges remembered at once. A CUDA process makes a handful of reservations.
const SLOTS: usize = 256;

/// One remembered range: `start` claims the slot (0: free), `len` is stored after it (0: not
/// yet, or being forgotten).
struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
    }
}; SLOTS];
/// Slots ever claimed: scans stop here.
static USED: AtomicUsize = AtomicUsize::new(0);

/// Remembers the reservation `[start, start + len)`. `false`: the table is full (the caller
/// then counts it as memory).
pub fn note(start: usize, len: usize) -> bool {
    if start == 0 || len == 0 {
        return false;
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .start
            .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            slot.len.store(len, Ordering::Release);
            USED.fetch_max(i + 1, Ordering::AcqRel);
            return true;
        }
    }
    false
}

/// Bytes of `[start, end)` inside `[s, e)`.
fn shared((s, e): (usize, usize), (start, end): (usize, usize)) -> usize {
    e.min(end).saturating_sub(s.max(start))
}

/// The remembered reservations now, as `(slot, start, end)`.
fn ranges() -> impl Iterator<Item = (&'static Slot, usize, usize)> {
    TABLE[..USED.load(Ordering::Acquire).min(SLOTS)]
        .iter()
        .filter_map(|slot| {
            let start = slot.start.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            (start != 0 && len != 0).then(|| (slot, start, start.saturating_add(len)))
        })
}

/// Bytes of `[start, start + len)` that lie in remembered reservations.
pub fn overlap(start: usize, len: usize) -> usize {
    let range = (start, start.saturating_add(len));
    ranges()
        .map(|(_, s, e)| shared((s, e), range))
        .sum::<usize>()
        .min(len)
}

/// `[start, start + len)` is being unmapped: the bytes of it that lie in remembered
/// reservations. A reservation unmapped at one end shrinks (a program aligning one trims its
/// ends, and the kernel then maps other things, memory, into what was trimmed); one unmapped
/// inside stays whole (a pool returning a part it had committed, which it unmaps later with
/// the rest: that later unmapping spans the hole).
pub fn unmapping(start: usize, len: usize) -> usize {
    let end = start.saturating_add(len);
    let mut inside = 0;
    for (slot, s, e) in ranges() {
        let overlap = shared((s, e), (start, end));
        if overlap == 0 {
            continue;
        }
        inside += overlap;
        match (s < start, end < e) {
            (false, false) => slot.set((0, 0)),
            (true, false) => slot.set((s, start)),
            (false, true) => slot.set((end, e)),
            (true, true) => {}
        }
    }
    inside.min(len)
}

impl Slot {
    /// Makes the slot remember `[start, end)` (`(0, 0)`: frees it). The length goes first, so
    /// a reader sees the old range, no range, or the new one; a freed slot's length stays 0,
    /// since [`note`] may claim it the moment its start is 0.
    fn set(&self, (start, end): (usize, usize)) {
        self.len.store(0, Ordering::Release);
        self.start.store(start, Ordering::Release);
        if start != 0 {
            self.len.store(end - start, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// The table is the process's: each test uses addresses of its own, and one at a time
    /// (one of them fills it).
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn a_reservation_and_what_is_mapped_inside_it_are_address_space_until_it_goes() {
        let _g = serial();
        let base = 0x7100_0000_0000;
        assert!(note(base, 1024 * MIB));
        assert_eq!(overlap(base + 64 * MIB, 16 * MIB), 16 * MIB);
        // A mapping half inside: half of it.
        assert_eq!(overlap(base + 1016 * MIB, 16 * MIB), 8 * MIB);
        // Trimming its start leaves the rest remembered, and what was trimmed is free for
        // memory.
        assert_eq!(unmapping(base, 32 * MIB), 32 * MIB);
        assert_eq!(overlap(base + 512 * MIB, MIB), MIB);
        assert_eq!(overlap(base, 32 * MIB), 0);
        // A part unmapped inside stays the reservation's: unmapping the rest later spans it.
        assert_eq!(unmapping(base + 512 * MIB, 64 * MIB), 64 * MIB);
        assert_eq!(overlap(base + 500 * MIB, 100 * MIB), 100 * MIB);
        // Unmapping the whole of what is left forgets it.
        assert_eq!(unmapping(base + 32 * MIB, 992 * MIB), 992 * MIB);
        assert_eq!(overlap(base, 1024 * MIB), 0);
    }

    #[test]
    fn memory_outside_every_range_is_memory() {
        let _g = serial();
        let base = 0x7200_0000_0000;
        assert!(note(base, 8 * MIB));
        assert_eq!(overlap(base + 8 * MIB, 8 * MIB), 0);
        assert_eq!(unmapping(base - 8 * MIB, 8 * MIB), 0);
        // Trimming its end.
        assert_eq!(unmapping(base + 6 * MIB, 4 * MIB), 2 * MIB);
        assert_eq!(overlap(base, 8 * MIB), 6 * MIB);
        // An unmapping spanning the range and memory on both sides: only the range's part.
        assert_eq!(unmapping(base - MIB, 10 * MIB), 6 * MIB);
        assert_eq!(overlap(base, 8 * MIB), 0);
    }

    #[test]
    fn a_full_table_says_so_and_a_freed_slot_is_used_again() {
        let _g = serial();
        let base = 0x7300_0000_0000;
        let mut noted = Vec::new();
        while note(base + noted.len() * 4 * MIB, MIB) {
            noted.push(base + noted.len() * 4 * MIB);
            assert!(noted.len() <= SLOTS, "more ranges than slots");
        }
        assert!(!noted.is_empty());
        let last = *noted.last().unwrap();
        assert_eq!(unmapping(last, MIB), MIB);
        assert!(
            note(0x7400_0000_0000, MIB),
            "the freed slot takes a new range"
        );
        for s in noted {
            unmapping(s, MIB);
        }
        unmapping(0x7400_0000_0000, MIB);
    }
}
