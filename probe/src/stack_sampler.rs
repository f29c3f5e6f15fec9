//! Where a thread's CPU time goes when no span says: user-space call stacks sampled by the
//! kernel every 1/`hz` seconds of the thread's own CPU time (`perf_event_open`, a task-clock
//! event on each thread the scheduler sampler follows — inside a span, or writing the log).
//! A gap whose thread ran code nobody instrumented is then named by that code: "on a CPU in
//! `ghost_cpu_loop` (28 of 29 samples)".
//!
//! The event counts kernel time too where the kernel allows it (`perf_event_paranoid` ≤ 1, or
//! `CAP_PERFMON`): a thread pinning or first touching memory is then sampled inside the call,
//! with the user-space part of its stack (the kernel's frames are never taken) — the `mlock`
//! and the function that called it. Else user space only (`exclude_kernel`, which
//! `perf_event_paranoid` 2 allows without privileges), and a thread in the kernel is sampled
//! only as it runs user code; the kernel evidence ([`crate::kernel`]) says the rest. Call chains
//! are the kernel's walk of frame pointers: the innermost frame is exact, the callers are as
//! good as the program's frame pointers (`-fno-omit-frame-pointer`; without them they may be
//! missing or wrong).
//!
//! Each thread's samples go to a ring the kernel writes and the collector reads each cycle:
//! nothing on the program's threads. Where the kernel refuses (`perf_event_paranoid` 3, a
//! container's seccomp profile) the session says so once and runs without stacks. The event's
//! fd is the probe's own: moved out of the program's range, as every fd of the probe's
//! (a daemon that closes every fd passes over it).

use perf_event_open_sys as sys;
use std::collections::HashMap;

/// Threads sampled at once (each holds an fd and a ring of [`RING_PAGES`] + 1 pages).
pub const MAX_THREADS: usize = 64;
/// Data pages of each ring (a power of two): at 99 Hz and ~300 bytes a sample, a second of
/// samples in 8 pages, far more than a collector cycle's.
const RING_PAGES: usize = 8;
/// Frames kept of a call chain.
const MAX_FRAMES: usize = 32;

/// One sample: when (CLOCK_MONOTONIC), and the user-space call chain, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawSample {
    pub mono_ns: u64,
    pub ips: Vec<usize>,
}

/// One thread's event.
struct Event {
    fd: std::os::fd::OwnedFd,
    /// The mapping: a metadata page, then [`RING_PAGES`] data pages.
    base: *mut u8,
    len: usize,
    enabled: bool,
}

// SAFETY: the mapping is owned by this value and touched only by the thread that owns it.
unsafe impl Send for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping this value made and still owns.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The events of the threads sampled, by wire id.
pub(crate) struct StackSampler {
    hz: u32,
    /// Whether the kernel let an event count kernel time (tried first, once).
    kernel_too: Option<bool>,
    events: HashMap<u32, Event>,
    /// The kernel refused: no sampling from then on.
    refused: bool,
    /// Why, until the session has said it.
    unsaid: Option<String>,
    /// Samples the kernel dropped (its ring was full).
    pub lost: u64,
}

impl StackSampler {
    /// A sampler at `hz` samples a second of each thread's CPU time (0: off).
    pub fn new(hz: u32) -> StackSampler {
        StackSampler {
            hz,
            kernel_too: None,
            events: HashMap::new(),
            refused: false,
            unsaid: None,
            lost: 0,
        }
    }

    /// Samples wire thread `thread` (OS tid `os_tid`) while `on`; opens its event on first
    /// need. A refusal stops all sampling and is kept for [`StackSampler::refusal`].
    pub fn follow(&mut self, thread: u32, os_tid: u32, on: bool) {
        if self.hz == 0 || self.refused {
            return;
        }
        if !self.events.contains_key(&thread) {
            if !on || self.events.len() >= MAX_THREADS {
                return;
            }
            match self.open(os_tid) {
                Ok(e) => {
                    self.events.insert(thread, e);
                }
                // A thread that exited is no refusal.
                Err(why) if why.raw_os_error() == Some(libc::ESRCH) => return,
                Err(why) => {
                    self.refused = true;
                    self.unsaid = Some(format!(
                        "stack sampling off: perf_event_open refused ({why}; /proc/sys/kernel/perf_event_paranoid {})",
                        paranoid()
                    ));
                    self.events.clear();
                    return;
                }
            }
        }
        if let Some(e) = self.events.get_mut(&thread)
            && e.enabled != on
        {
            let req = if on {
                sys::ioctls::ENABLE
            } else {
                sys::ioctls::DISABLE
            };
            use std::os::fd::AsRawFd;
            // SAFETY: an ioctl of this event's own fd.
            unsafe { req(e.fd.as_raw_fd(), 0) };
            e.enabled = on;
        }
    }

    /// Thread `os_tid`'s event: counting kernel time too where the kernel allows it (tried on
    /// the first thread), else user space only from then on.
    fn open(&mut self, os_tid: u32) -> std::io::Result<Event> {
        if let Some(k) = self.kernel_too {
            return open(os_tid, self.hz, k);
        }
        let e = match open(os_tid, self.hz, true) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
                self.kernel_too = Some(false);
                return open(os_tid, self.hz, false);
            }
            r => r?,
        };
        self.kernel_too = Some(true);
        Ok(e)
    }

    /// The thread exited: its event goes.
    pub fn forget(&mut self, thread: u32) {
        self.events.remove(&thread);
    }

    /// Why sampling is off, the first time it is asked after the kernel refused.
    pub fn refusal(&mut self) -> Option<String> {
        self.unsaid.take()
    }

    /// Takes every sample the kernel wrote since the last call: (wire thread, sample).
    pub fn drain(&mut self, mut f: impl FnMut(u32, RawSample)) {
        for (&thread, e) in &mut self.events {
            self.lost += read_ring(e, |s| f(thread, s));
        }
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, as text.
fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unreadable".into())
}

/// Opens and maps thread `os_tid`'s task-clock event, sampling every 1/`hz` s of its CPU time
/// (its time in the kernel too when `kernel_too`; the kernel's frames never).
fn open(os_tid: u32, hz: u32, kernel_too: bool) -> std::io::Result<Event> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut attr = sys::bindings::perf_event_attr {
        type_: sys::bindings::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        config: u64::from(sys::bindings::PERF_COUNT_SW_TASK_CLOCK),
        sample_type: u64::from(
            sys::bindings::PERF_SAMPLE_TID
                | sys::bindings::PERF_SAMPLE_TIME
                | sys::bindings::PERF_SAMPLE_CALLCHAIN,
        ),
        clockid: libc::CLOCK_MONOTONIC,
        sample_max_stack: MAX_FRAMES as u16,
        ..Default::default()
    };
    // The task clock counts nanoseconds of the thread's CPU time.
    attr.__bindgen_anon_1.sample_period = 1_000_000_000 / u64::from(hz.max(1));
    attr.set_exclude_kernel(u64::from(!kernel_too));
    attr.set_exclude_hv(1);
    attr.set_exclude_callchain_kernel(1);
    attr.set_use_clockid(1);
    // A wake-up per sample is not needed: the collector reads the ring each cycle.
    attr.__bindgen_anon_2.wakeup_events = 0;
    // SAFETY: a valid attribute for this thread of this process, no group, close-on-exec.
    let raw = unsafe {
        sys::perf_event_open(
            &mut attr,
            os_tid as libc::pid_t,
            -1,
            -1,
            u64::from(sys::bindings::PERF_FLAG_FD_CLOEXEC) as libc::c_ulong,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` was just returned by the kernel and nothing else owns it.
    let low = unsafe { OwnedFd::from_raw_fd(raw) };
    let fd = own_fd(low)?;
    let page = page_size();
    let len = page * (1 + RING_PAGES);
    use std::os::fd::AsRawFd;
    // SAFETY: mapping the event's ring as the kernel requires: shared, read-write (the
    // collector writes `data_tail`), 1 + 2^n pages.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Event {
        fd,
        base: base.cast(),
        len,
        enabled: true,
    })
}

/// `fd`, moved to a number of the probe's own: the system call's fd is not seen by the
/// preload's fd hooks, `fcntl` is (on the probe's threads it places the copy out of the
/// program's range and keeps it the probe's).
fn own_fd(fd: std::os::fd::OwnedFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: duplicating an fd this function owns.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `dup` was just returned by the kernel and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096)
}

/// Reads the samples the kernel wrote to `e`'s ring since the last read and frees their room;
/// returns the samples the kernel reported lost.
fn read_ring(e: &mut Event, mut f: impl FnMut(RawSample)) -> u64 {
    let page = page_size();
    let meta = e.base.cast::<sys::bindings::perf_event_mmap_page>();
    let data = e.base.wrapping_add(page);
    let size = (RING_PAGES * page) as u64;
    // SAFETY: `meta` is the mapping's first page, the kernel's metadata; `data_head` is read
    // with acquire ordering (the kernel's writes of the records before it are visible), as
    // perf_event_open(2) prescribes.
    let head = unsafe {
        let p = std::ptr::addr_of!((*meta).data_head);
        std::sync::atomic::AtomicU64::from_ptr(p.cast_mut())
            .load(std::sync::atomic::Ordering::Acquire)
    };
    // SAFETY: as above; only this thread writes `data_tail`.
    let mut tail = unsafe { std::ptr::addr_of!((*meta).data_tail).read_volatile() };
    let mut lost = 0;
    let mut buf = Vec::new();
    while tail + 8 <= head {
        // A record may wrap round the ring's end: copy it out first.
        let mut hdr = [0u8; 8];
        copy_out(data, size, tail, &mut hdr);
        let kind = u32::from_ne_bytes(hdr[0..4].try_into().unwrap_or_default());
        let len = u64::from(u16::from_ne_bytes(hdr[6..8].try_into().unwrap_or_default()));
        if len < 8 || tail + len > head {
            break;
        }
        buf.resize(len as usize, 0);
        copy_out(data, size, tail, &mut buf);
        match kind {
            sys::bindings::PERF_RECORD_SAMPLE => {
                if let Some(s) = parse_sample(&buf[8..]) {
                    f(s);
                }
            }
            sys::bindings::PERF_RECORD_LOST => {
                // id, then the count lost.
                lost += read_u64(&buf[8..], 8).unwrap_or(0);
            }
            _ => {}
        }
        tail += len;
    }
    // SAFETY: tells the kernel the room up to `tail` is free (release: the reads above are
    // done before it may write there again).
    unsafe {
        let p = std::ptr::addr_of_mut!((*meta).data_tail);
        std::sync::atomic::AtomicU64::from_ptr(p).store(tail, std::sync::atomic::Ordering::Release);
    }
    lost
}

/// Copies `out.len()` bytes of the ring at `data` (of `size` bytes) from position `at`.
fn copy_out(data: *const u8, size: u64, at: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        // SAFETY: the offset is taken modulo the data area's size, inside the mapping.
        *b = unsafe { data.add(((at + i as u64) % size) as usize).read_volatile() };
    }
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A `PERF_RECORD_SAMPLE` body of `TID | TIME | CALLCHAIN`: pid, tid (u32 each), time, then
/// the chain's length and its addresses, with the kernel's context markers among them.
fn parse_sample(b: &[u8]) -> Option<RawSample> {
    let mono_ns = read_u64(b, 8)?;
    let nr = read_u64(b, 16)? as usize;
    let ips = (0..nr.min(MAX_FRAMES * 2))
        .filter_map(|i| read_u64(b, 24 + 8 * i))
        .filter(|&ip| ip < sys::bindings::PERF_CONTEXT_MAX && ip != 0)
        .take(MAX_FRAMES)
        .map(|ip| ip as usize)
        .collect::<Vec<_>>();
    (!ips.is_empty()).then_some(RawSample { mono_ns, ips })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn spin_here(until: std::time::Instant) -> u64 {
        let mut x = 1u64;
        while std::time::Instant::now() < until {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        x
    }

    /// A thread spinning in a named function is sampled there, at about the rate asked, on
    /// the monotonic clock; where the kernel refuses, the refusal is said once.
    #[test]
    #[cfg_attr(miri, ignore = "perf_event_open")]
    fn a_spinning_thread_is_sampled_in_its_function() {
        let mut s = StackSampler::new(200);
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = crate::clock::monotonic_ns();
        let worker = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || {
                tx.send(crate::thread::os_tid()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(50));
                spin_here(std::time::Instant::now() + std::time::Duration::from_millis(300))
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        s.follow(7, tid, true);
        if let Some(why) = s.refusal() {
            eprintln!("skipped: {why}");
            assert!(s.refusal().is_none(), "said once");
            return;
        }
        worker.join().unwrap();
        let mut got = Vec::new();
        s.drain(|t, r| got.push((t, r)));
        // 300 ms of CPU at 200 Hz: about 60 (a loaded machine gives the thread less CPU).
        assert!(got.len() >= 10, "{} samples", got.len());
        assert!(
            got.iter().all(|(t, r)| *t == 7 && r.mono_ns >= t0),
            "{got:?}"
        );
        let mut named = 0;
        for (_, r) in &got {
            backtrace::resolve(r.ips[0] as *mut std::ffi::c_void, |sym| {
                if sym
                    .name()
                    .is_some_and(|n| format!("{n}").contains("spin_here"))
                {
                    named += 1;
                }
            });
        }
        assert!(
            named * 10 >= got.len() * 8,
            "{named} of {} in spin_here",
            got.len()
        );
    }
}
