//! Scheduling evidence: for each thread inside a span, its scheduler counters at the allocator
//! sampler's cadence, so a gap on it can be told apart — running code no span covers, runnable
//! but waiting for a CPU, or blocked/sleeping. Nothing on the span edges: the collector counts
//! open spans per thread from the records it drains anyway, and reads
//! `/proc/self/task/<tid>/schedstat` (kept open, one `pread` a sample) only for threads whose
//! count is above zero. `schedstat` gives on-CPU and run-queue time and the times scheduled in;
//! `status`'s voluntary/involuntary switch counts would cost a second read for what the two
//! times already say.
//!
//! A program with no spans (an unmodified prover under the preload) has its proofs drawn from
//! its log, and their gaps lie on the threads that print the log's timers: a thread that
//! writes to stdout or stderr is *watched* — sampled whether inside a span or not, until it
//! exits — at most [`MAX_WATCHED`] of them, so a program that logs from every worker of a
//! pool costs a bounded number of reads a sample.
//!
//! The same threads' kernel-side counters — page faults, user and kernel time, the system call
//! they are blocked in — are read with each sample ([`crate::kernel`]), unless turned off.

use crate::kernel::{KernelTrack, SyscallNames};
use crate::stack_sampler::StackSampler;
use probe_protocol::{Event, ThreadSched};
use std::collections::HashMap;
use std::fs::File;

#[derive(Debug, Default)]
struct Tracked {
    /// Spans open on the thread, from the records drained so far.
    depth: u32,
    /// It writes the program's log: sampled outside spans too.
    watched: bool,
    /// Its `schedstat`, once opened; `None` when it could not be (thread gone, no procfs).
    file: Option<Option<File>>,
    /// Its kernel counters' files, likewise.
    kernel: Option<Option<KernelTrack>>,
    os_tid: u32,
}

/// Counts open spans per thread and samples the threads inside one.
pub(crate) struct SchedSampler {
    threads: HashMap<u32, Tracked>,
    watched: usize,
    /// Kernel counters too ([`crate::kernel`]).
    kernel: bool,
    names: SyscallNames,
    /// Their stacks, sampled by the kernel ([`crate::stack_sampler`]).
    pub stacks: StackSampler,
}

impl Default for SchedSampler {
    fn default() -> Self {
        SchedSampler::new(false, 0)
    }
}

/// The most log-writing threads sampled outside spans (one `pread` each a sample).
const MAX_WATCHED: usize = 32;

impl SchedSampler {
    /// A sampler that reads the kernel counters too when `kernel`, and has the kernel sample
    /// the threads' stacks `stack_hz` times a second of their CPU time.
    pub fn new(kernel: bool, stack_hz: u32) -> SchedSampler {
        SchedSampler {
            threads: HashMap::new(),
            watched: 0,
            kernel,
            names: SyscallNames::default(),
            stacks: StackSampler::new(stack_hz),
        }
    }

    /// A thread with a ring: wire id and OS tid.
    pub fn register(&mut self, thread: u32, os_tid: u32) {
        self.threads.entry(thread).or_default().os_tid = os_tid;
    }

    /// A span began or ended on wire thread `thread` (registered; others are ignored).
    pub fn span_edge(&mut self, thread: u32, begin: bool) {
        let Some(t) = self.threads.get_mut(&thread) else {
            return;
        };
        if begin {
            t.depth += 1;
        } else {
            t.depth = t.depth.saturating_sub(1);
        }
    }

    /// Wire thread `thread` (OS tid `os_tid`) wrote to stdout or stderr: watch it, while
    /// fewer than [`MAX_WATCHED`] are.
    pub fn watch(&mut self, thread: u32, os_tid: u32) {
        let t = self.threads.entry(thread).or_insert_with(|| Tracked {
            os_tid,
            ..Tracked::default()
        });
        if !t.watched && self.watched < MAX_WATCHED {
            t.watched = true;
            self.watched += 1;
        }
    }

    /// The thread exited: forget it (and close its file).
    pub fn forget(&mut self, thread: u32) {
        self.stacks.forget(thread);
        if self.threads.remove(&thread).is_some_and(|t| t.watched) {
            self.watched -= 1;
        }
    }

    /// One sample of every thread inside a span or watched, as events, each stamped by `now`
    /// right after it was read: a cycle can block between threads (a program pinning memory
    /// holds its address space, and the collector's own page faults wait behind it — 720 ms
    /// once under `mlock` of 1 GiB), and a reading stamped when the cycle began was placed
    /// before the gap it saw. A watched thread whose counters cannot be read has exited (a
    /// thread without a ring has no exit record): it is forgotten.
    pub fn sample(&mut self, now: impl Fn() -> u64, out: &mut Vec<Event>) {
        let mut gone = Vec::new();
        for (&thread, t) in &mut self.threads {
            let followed = t.depth > 0 || t.watched;
            self.stacks.follow(thread, t.os_tid, followed);
            if !followed {
                continue;
            }
            let os_tid = t.os_tid;
            let file = t.file.get_or_insert_with(|| {
                File::open(format!("/proc/self/task/{os_tid}/schedstat")).ok()
            });
            match file.as_ref().and_then(read) {
                Some((cpu_ns, runq_ns, timeslices)) => out.push(Event::ThreadSched(ThreadSched {
                    ts: now(),
                    thread,
                    cpu_ns,
                    runq_ns,
                    timeslices,
                })),
                None if t.watched && t.depth == 0 => {
                    gone.push(thread);
                    continue;
                }
                None => {}
            }
            if self.kernel {
                let track = t.kernel.get_or_insert_with(|| KernelTrack::open(os_tid));
                if let Some(k) = track
                    && !k.sample(&now, thread, &mut self.names, out)
                {
                    t.kernel = Some(None);
                }
            }
        }
        for thread in gone {
            self.forget(thread);
        }
    }
}

/// `<on-cpu ns> <run-queue ns> <timeslices>` (one `pread`: the file stays usable).
pub(crate) fn read(f: &File) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = f.read_at(&mut buf, 0).ok()?;
    parse(std::str::from_utf8(&buf[..n]).ok()?)
}

fn parse(s: &str) -> Option<(u64, u64, u64)> {
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_reads() {
        assert_eq!(parse("123 45 6\n"), Some((123, 45, 6)));
        assert_eq!(parse("123 45"), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads /proc/self/task/<tid>/schedstat")]
    fn only_threads_inside_a_span_are_sampled() {
        let me = crate::thread::os_tid();
        let mut s = SchedSampler::default();
        let mut out = Vec::new();
        s.register(7, me);
        s.register(8, me);
        s.span_edge(7, true);
        s.span_edge(8, true);
        s.span_edge(8, false);
        s.span_edge(9, true);
        s.sample(|| 100, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        let Event::ThreadSched(t) = out[0] else {
            panic!("{out:?}")
        };
        assert_eq!((t.ts, t.thread), (100, 7));
        // A thread that has been scheduled at least once (its times may still read 0).
        assert!(t.timeslices > 0, "{t:?}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads /proc/self/task/<tid>/schedstat")]
    fn log_writers_are_sampled_outside_spans_until_they_exit() {
        let me = crate::thread::os_tid();
        let mut s = SchedSampler::default();
        let mut out = Vec::new();
        s.watch(3, me);
        s.watch(3, me);
        // A tid no thread of this process has: its counters cannot be read.
        s.watch(4, u32::MAX - 1);
        s.sample(|| 100, &mut out);
        let sampled: Vec<u32> = out
            .iter()
            .filter_map(|e| match e {
                Event::ThreadSched(t) => Some(t.thread),
                _ => None,
            })
            .collect();
        assert_eq!(sampled, [3]);
        assert_eq!(s.watched, 1, "the unreadable one is forgotten");
        for t in 10..10 + 2 * MAX_WATCHED as u32 {
            s.watch(t, me);
        }
        assert_eq!(s.watched, MAX_WATCHED);
    }
}
