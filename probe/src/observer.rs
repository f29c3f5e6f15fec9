//! The probe's own threads (collector, server, recorder, NVML sampler): their blocks still
//! count towards live bytes (they are the process's memory) but are never reported as the
//! program's allocations or releases. Without this the collector's frame buffers showed up as
//! the prover's releases in the upstream supraseal capture (31 large frees on
//! `probe-collector` during one proof).
//!
//! A thread is marked by the first line of its closure, but std's thread start allocates on
//! the new thread before that line runs. Those early blocks are queued under the thread's id,
//! and two races would leak them: the collector draining them *before* the mark (a loaded
//! machine runs the collector between the two), or *after* the thread ended and gave its id
//! back. [`spawn`] closes the first with a count of starting threads the collector waits out
//! ([`starting`]); the id of an ended thread stays the probe's until a drain has passed
//! ([`ended`], [`free_ended`]), which closes the second.

use crate::thread::os_tid;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::thread::JoinHandle;

thread_local! {
    /// This thread is one of the probe's own.
    static OBSERVER: Cell<bool> = const { Cell::new(false) };
}

const SLOTS: usize = 16;

/// The OS thread ids of the probe's own threads, for the blocks they queued before they were
/// marked. A handful of threads per session; 0 is a free slot.
static TIDS: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];

/// Set in a slot whose thread has ended: its id is still the probe's until the collector has
/// drained the blocks it queued (Linux thread ids stay below 2^22, so the bit is free).
const ENDED: u32 = 1 << 31;

/// Probe threads spawned and not yet marked.
static STARTING: AtomicUsize = AtomicUsize::new(0);

/// Spawns one of the probe's own threads, named `name`.
pub(crate) fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<JoinHandle<T>> {
    STARTING.fetch_add(1, Ordering::AcqRel);
    let spawned = with_signals_blocked(|| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                mark();
                STARTING.fetch_sub(1, Ordering::AcqRel);
                let r = f();
                unmark();
                r
            })
    });
    if spawned.is_err() {
        STARTING.fetch_sub(1, Ordering::AcqRel);
    }
    spawned
}

/// Runs `f` with the program's asynchronous signals blocked on this thread, so that a thread
/// it starts inherits the mask and never runs the program's handlers. A process-directed
/// signal (`SIGALRM`, `SIGCHLD`, `SIGTERM`, `SIGPROF`, …) goes to any thread that does not
/// block it: landing on the collector while it was inside glibc's `malloc`, a handler that
/// allocated deadlocked on the arena lock the collector held (5 of 5 runs of a program
/// whose own thread only allocated with signals blocked; it never deadlocks on its own).
/// The synchronous signals a fault raises stay open: blocked, a fault would kill the process
/// past the program's own handler.
pub fn with_signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    // Miri has no signal masks (and no signals to deliver).
    if cfg!(miri) {
        return f();
    }
    // SAFETY: sigset_t is plain data; sigfillset/sigdelset initialise and edit it, and
    // pthread_sigmask only changes this thread's mask (restored below to what it was).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut all, sig);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        let blocked = libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old) == 0;
        let r = f();
        if blocked {
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        r
    }
}

/// One of the probe's threads as the scheduler accounts for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadCpu {
    /// Its `comm`.
    pub name: String,
    /// Time on a CPU so far, ns (exact to the scheduler's accounting).
    pub cpu_ns: u64,
    /// Times it was scheduled in so far. A probe thread sleeps between its cycles, so this
    /// counts its wake-ups, near enough (a preempted cycle counts twice): the figure that
    /// splits a thread's cost into how often it runs, set by its cadence, and what a run
    /// costs, set mostly by the host (a timed sleep's wake-up is 16–24 µs of CPU on the
    /// machines in docs/BENCHMARKS.md).
    pub runs: u64,
}

/// The scheduler's accounting of each of the probe's running threads so far:
/// `/proc/self/task/<tid>/schedstat` (on-CPU time, run-queue time, times scheduled in) and its
/// `comm`. Threads that have ended are not counted: read it while the session runs.
pub fn own_threads_cpu() -> Vec<ThreadCpu> {
    TIDS.iter()
        .map(|s| s.load(Ordering::Acquire))
        .filter(|&t| t != 0 && t & ENDED == 0)
        .filter_map(|t| {
            let task = format!("/proc/self/task/{t}");
            let stat = std::fs::read_to_string(format!("{task}/schedstat")).ok()?;
            let mut fields = stat.split_whitespace().map(|f| f.parse::<u64>().ok());
            let cpu_ns = fields.next()??;
            let runs = fields.nth(1).flatten().unwrap_or(0);
            let name = std::fs::read_to_string(format!("{task}/comm")).unwrap_or_default();
            Some(ThreadCpu {
                name: name.trim().to_owned(),
                cpu_ns,
                runs,
            })
        })
        .collect()
}

/// Some probe thread is starting: blocks queued now may be its own and not yet known as such,
/// so the collector leaves the queue for its next cycle.
pub(crate) fn starting() -> bool {
    STARTING.load(Ordering::Acquire) > 0
}

/// Stands for a probe thread that has been spawned and has not run yet, for as long as it
/// lives: the state a loaded machine leaves a thread in for milliseconds. For tests of what
/// the collector does meanwhile; nothing else makes one.
#[doc(hidden)]
#[derive(Debug)]
pub struct StartingThread(());

impl StartingThread {
    #[doc(hidden)]
    pub fn hold() -> StartingThread {
        STARTING.fetch_add(1, Ordering::AcqRel);
        StartingThread(())
    }
}

impl Drop for StartingThread {
    fn drop(&mut self) {
        STARTING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits until no probe thread is starting, at most `most`. A thread is "starting" only until
/// it first runs, so this waits for the scheduler, nothing else.
pub(crate) fn wait_started(most: std::time::Duration) {
    let t = std::time::Instant::now();
    while starting() && t.elapsed() < most {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The calling thread is one of the probe's own (true while its thread-locals are torn down,
/// when it cannot tell).
pub(crate) fn on_observer_thread() -> bool {
    OBSERVER.try_with(Cell::get).unwrap_or(true)
}

/// The calling thread is one of the probe's own, or runs the probe's work now
/// ([`as_own_thread`]); false while its thread-locals are torn down. For the preload's fd
/// guard, which must not take a program's thread for the probe's.
#[doc(hidden)]
pub fn on_own_thread() -> bool {
    OBSERVER.try_with(Cell::get).unwrap_or(false)
}

/// Runs `f` as the probe's own work on a thread that is not one of its own (the preload's
/// start and end of its session): the fds it makes and closes are the probe's.
#[doc(hidden)]
pub fn as_own_thread<R>(f: impl FnOnce() -> R) -> R {
    let was = OBSERVER.try_with(|o| o.replace(true)).unwrap_or(false);
    let r = f();
    let _ = OBSERVER.try_with(|o| o.set(was));
    r
}

/// `os_tid` is one of the probe's own threads (running, or ended and not yet drained).
pub(crate) fn is_observer(os_tid: u32) -> bool {
    TIDS.iter()
        .any(|s| s.load(Ordering::Acquire) & !ENDED == os_tid)
}

/// The slots of threads that had ended when a drain began: every block they queued is in the
/// queue by then, so [`free_ended`] may give them back once it is drained.
pub(crate) fn ended() -> [u32; SLOTS] {
    std::array::from_fn(|i| {
        let v = TIDS[i].load(Ordering::Acquire);
        if v & ENDED != 0 { v } else { 0 }
    })
}

/// Gives back the slots [`ended`] saw (a slot reused since is left alone).
pub(crate) fn free_ended(ended: [u32; SLOTS]) {
    for (slot, v) in TIDS.iter().zip(ended) {
        if v != 0 {
            let _ = slot.compare_exchange(v, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

fn mark() {
    let _ = OBSERVER.try_with(|o| o.set(true));
    let tid = os_tid();
    for slot in &TIDS {
        if slot.load(Ordering::Relaxed) == tid
            || slot
                .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
    }
}

/// The thread ends: its id may be the kernel's to reuse for a program's thread, once the
/// collector has drained what it queued.
fn unmark() {
    let tid = os_tid();
    for slot in &TIDS {
        let _ = slot.compare_exchange(tid, tid | ENDED, Ordering::AcqRel, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's blocked signals, from `/proc/thread-self/status`.
    fn blocked_here() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .unwrap()
            .trim();
        u64::from_str_radix(hex, 16).unwrap()
    }

    fn bit(sig: i32) -> u64 {
        1 << (sig - 1)
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads /proc")]
    fn the_probes_threads_block_the_programs_signals_but_not_a_faults() {
        let caller = blocked_here();
        let mask = spawn("probe-test", blocked_here).unwrap().join().unwrap();
        for sig in [libc::SIGALRM, libc::SIGTERM, libc::SIGCHLD, libc::SIGPROF] {
            assert_ne!(mask & bit(sig), 0, "signal {sig} blocked: {mask:x}");
        }
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL] {
            assert_eq!(mask & bit(sig), 0, "signal {sig} open: {mask:x}");
        }
        assert_eq!(blocked_here(), caller, "the caller's own mask is as it was");
    }
}
