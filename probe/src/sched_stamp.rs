//! Scheduler counters read on the program's own thread, at the instants it is seen running: as
//! a large free returns and as it writes to stdout or stderr. The collector's samples of the
//! same counters ([`crate::sched`]) come when it gets a CPU — 20–60 ms apart on a machine
//! oversubscribed four times — and the kernel adds a wait for a CPU to `runq_ns` only when the
//! wait ends. So a wait between a C2 call's last free and its `prover time` line (10 ms of a
//! 45 ms tail, measured) ended after the collector's last sample of the program and was in none:
//! the diagnosis covered 74 % of the gap where the thread had waited for a CPU for the rest. A
//! reading taken by the thread itself right after the write counts every wait that ended
//! before it, and one after each free separates the waits inside the frees from those between.
//!
//! A reading is one `open`, `pread` and `close` of `/proc/thread-self/schedstat` (about 10 µs
//! on the build VM under load; docs/BENCHMARKS.md) — so a thread takes at most one every
//! [`MIN_SPACING_NS`] (at most 0.5 % of a thread that does nothing but write or free). The fd
//! is opened as the probe's own ([`crate::observer::as_own_thread`]): under the preload it is
//! placed out of the program's range and a program sweeping its fds passes over it. The
//! reading goes to a preallocated lock-free queue; a full queue drops it and counts it.

use crate::observer::as_own_thread;
use crate::thread::os_tid;
use crossbeam_queue::ArrayQueue;
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The least time between two readings on one thread.
pub const MIN_SPACING_NS: u64 = 2_000_000;

/// Readings queued between collector cycles before dropping.
const QUEUE_CAPACITY: usize = 4_096;

/// One reading, as the thread took it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawSched {
    /// CLOCK_MONOTONIC right after the counters were read, ns.
    pub mono_ns: u64,
    pub os_tid: u32,
    pub cpu_ns: u64,
    pub runq_ns: u64,
    pub timeslices: u64,
}

static QUEUE: OnceLock<ArrayQueue<RawSched>> = OnceLock::new();
static ON: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// When this thread last took a reading (0: never).
    static LAST: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn enable() {
    let _ = QUEUE.get_or_init(|| ArrayQueue::new(QUEUE_CAPACITY));
    ON.store(true, Ordering::Release);
}

pub(crate) fn disable() {
    ON.store(false, Ordering::Release);
}

/// The calling thread was just seen running (a large free returned, a write to stdout or
/// stderr): reads its scheduler counters unless it did less than [`MIN_SPACING_NS`] ago.
/// Never blocks or allocates; skipped while no session runs or on the probe's own threads.
pub(crate) fn stamp() {
    if !ON.load(Ordering::Acquire) || crate::observer::on_own_thread() {
        return;
    }
    if let Some(q) = QUEUE.get()
        && stamp_into(q, crate::clock::monotonic_ns()).is_err()
    {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// [`stamp`] into `q`: `Err` when `q` is full.
fn stamp_into(q: &ArrayQueue<RawSched>, now_mono_ns: u64) -> Result<(), RawSched> {
    let due = LAST
        .try_with(|l| {
            let due = now_mono_ns.saturating_sub(l.get()) >= MIN_SPACING_NS;
            if due {
                l.set(now_mono_ns);
            }
            due
        })
        .unwrap_or(false);
    if !due {
        return Ok(());
    }
    let Some((cpu_ns, runq_ns, timeslices)) = as_own_thread(read_own) else {
        return Ok(());
    };
    q.push(RawSched {
        mono_ns: crate::clock::monotonic_ns(),
        os_tid: os_tid(),
        cpu_ns,
        runq_ns,
        timeslices,
    })
}

/// This thread's `<on-cpu ns> <run-queue ns> <timeslices>`, without allocating.
fn read_own() -> Option<(u64, u64, u64)> {
    const PATH: &std::ffi::CStr = c"/proc/thread-self/schedstat";
    // SAFETY: a NUL-terminated path and flags; the fd is closed below on every path.
    let fd = unsafe { libc::open(PATH.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 96];
    // SAFETY: `buf` is writable for its whole length; `fd` is the one just opened.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    // SAFETY: closing the fd this function opened, once.
    unsafe { libc::close(fd) };
    let n = usize::try_from(n).ok()?;
    crate::sched::parse(std::str::from_utf8(&buf[..n]).ok()?)
}

/// Takes every queued reading.
pub(crate) fn drain(mut f: impl FnMut(RawSched)) {
    if let Some(q) = QUEUE.get() {
        while let Some(r) = q.pop() {
            f(r);
        }
    }
}

/// Readings dropped because the queue was full.
pub(crate) fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings are spaced on each thread, and each is this thread's own counters.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc/thread-self/schedstat")]
    fn a_thread_reads_its_own_counters_at_most_once_per_spacing() {
        let q = ArrayQueue::new(4);
        let t0 = crate::clock::monotonic_ns();
        std::thread::scope(|s| {
            s.spawn(|| {
                for dt in [0, MIN_SPACING_NS / 2, MIN_SPACING_NS] {
                    stamp_into(&q, t0 + dt).unwrap();
                }
            });
        });
        let mine: Vec<RawSched> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert!(mine[0].timeslices > 0, "{mine:?}");
        assert!(mine[1].cpu_ns >= mine[0].cpu_ns, "{mine:?}");
        assert!(mine[0].mono_ns >= t0, "{mine:?}");
        assert_eq!(mine[0].os_tid, mine[1].os_tid);
        assert_ne!(
            mine[0].os_tid,
            os_tid(),
            "the spawned thread's, not this one's"
        );
    }
}
