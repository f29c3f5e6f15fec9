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
//!
//! With it the thread takes its own page faults and user and kernel time
//! (`getrusage(RUSAGE_THREAD)`: one system call, no file), sent as `ThreadKernel`: the
//! collector's readings of them stop while the program holds its address space (pinning 1 GiB
//! with `mlock` stalled the collector for the whole 0.3 s call), and a reading by the thread
//! as it writes its next log line still brackets the gap.

use crate::hook_queue::HookQueue;
use crate::observer::as_own_thread;
use crate::thread::os_tid;
use std::cell::Cell;
use std::fs::File;
use std::os::fd::FromRawFd;

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
    /// Its own usage, read with them (`None` where `getrusage` failed).
    pub usage: Option<Usage>,
}

/// A thread's page faults and CPU time split, from `getrusage(RUSAGE_THREAD)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Usage {
    pub minor_faults: u64,
    pub major_faults: u64,
    pub user_ns: u64,
    pub system_ns: u64,
}

static READINGS: HookQueue<RawSched> = HookQueue::new(QUEUE_CAPACITY);

thread_local! {
    /// When this thread last took a reading (0: never).
    static LAST: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn enable() {
    READINGS.enable();
}

pub(crate) fn disable() {
    READINGS.disable();
}

/// The calling thread was just seen running (a large free returned, a write to stdout or
/// stderr): reads its scheduler counters unless it did less than [`MIN_SPACING_NS`] ago.
/// Never blocks or allocates; skipped while no session runs or on the probe's own threads.
pub(crate) fn stamp() {
    if !READINGS.is_on() || crate::observer::on_own_thread() {
        return;
    }
    stamp_into(&READINGS, crate::clock::monotonic_ns());
}

/// [`stamp`] into `q`.
fn stamp_into(q: &HookQueue<RawSched>, now_mono_ns: u64) {
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
        return;
    }
    let Some((cpu_ns, runq_ns, timeslices)) = as_own_thread(read_own) else {
        return;
    };
    let usage = own_usage();
    q.push(RawSched {
        mono_ns: crate::clock::monotonic_ns(),
        os_tid: os_tid(),
        cpu_ns,
        runq_ns,
        timeslices,
        usage,
    });
}

/// This thread's usage (a system call; no allocation).
fn own_usage() -> Option<Usage> {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `rusage` for the call to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } != 0 {
        return None;
    }
    let ns = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec).unwrap_or(0) * 1_000
    };
    Some(Usage {
        minor_faults: u64::try_from(u.ru_minflt).unwrap_or(0),
        major_faults: u64::try_from(u.ru_majflt).unwrap_or(0),
        user_ns: ns(u.ru_utime),
        system_ns: ns(u.ru_stime),
    })
}

/// This thread's `<on-cpu ns> <run-queue ns> <timeslices>`, without allocating.
fn read_own() -> Option<(u64, u64, u64)> {
    // A static path: `File::open` would allocate its C string on the program's thread.
    const PATH: &std::ffi::CStr = c"/proc/thread-self/schedstat";
    // SAFETY: a NUL-terminated path and flags.
    let fd = unsafe { libc::open(PATH.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened here and nothing else owns it; the File closes it.
    let f = unsafe { File::from_raw_fd(fd) };
    crate::sched::read(&f)
}

/// Takes every queued reading.
pub(crate) fn drain(f: impl FnMut(RawSched)) {
    READINGS.drain(f);
}

/// Readings dropped because the queue was full.
pub(crate) fn dropped() -> u64 {
    READINGS.dropped()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings are spaced on each thread, and each is this thread's own counters.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc/thread-self/schedstat")]
    fn a_thread_reads_its_own_counters_at_most_once_per_spacing() {
        let q = HookQueue::new(4);
        q.enable();
        let t0 = crate::clock::monotonic_ns();
        std::thread::scope(|s| {
            s.spawn(|| {
                for dt in [0, MIN_SPACING_NS / 2, MIN_SPACING_NS] {
                    stamp_into(&q, t0 + dt);
                }
            });
        });
        let mut mine: Vec<RawSched> = Vec::new();
        q.drain(|r| mine.push(r));
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert!(mine[0].timeslices > 0, "{mine:?}");
        // The usage, read right after the scheduler counters, splits the same CPU time (the
        // kernel keeps user + system equal to it; microseconds here).
        for r in &mine {
            let u = r.usage.unwrap();
            let cpu = u.user_ns + u.system_ns;
            assert!(
                cpu + 1_000 >= r.cpu_ns && cpu <= r.cpu_ns + 1_000_000,
                "{r:?}"
            );
        }
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
