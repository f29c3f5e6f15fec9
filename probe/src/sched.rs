//! Scheduling evidence: for each thread inside a span, its scheduler counters at the allocator
//! sampler's cadence, so a gap on it can be told apart — running code no span covers, runnable
//! but waiting for a CPU, or blocked/sleeping. Nothing on the span edges: the collector counts
//! open spans per thread from the records it drains anyway, and reads
//! `/proc/self/task/<tid>/schedstat` (kept open, one `pread` a sample) only for threads whose
//! count is above zero. `schedstat` gives on-CPU and run-queue time and the times scheduled in;
//! `status`'s voluntary/involuntary switch counts would cost a second read for what the two
//! times already say.

use probe_protocol::{Event, ThreadSched};
use std::collections::HashMap;
use std::fs::File;

#[derive(Debug, Default)]
struct Tracked {
    /// Spans open on the thread, from the records drained so far.
    depth: u32,
    /// Its `schedstat`, once opened; `None` when it could not be (thread gone, no procfs).
    file: Option<Option<File>>,
    os_tid: u32,
}

/// Counts open spans per thread and samples the threads inside one.
#[derive(Debug, Default)]
pub(crate) struct SchedSampler {
    threads: HashMap<u32, Tracked>,
}

impl SchedSampler {
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

    /// The thread exited: forget it (and close its file).
    pub fn forget(&mut self, thread: u32) {
        self.threads.remove(&thread);
    }

    /// One sample of every thread inside a span, as events at `now`.
    pub fn sample(&mut self, now: u64, out: &mut Vec<Event>) {
        for (&thread, t) in &mut self.threads {
            if t.depth == 0 {
                continue;
            }
            let os_tid = t.os_tid;
            let file = t.file.get_or_insert_with(|| {
                File::open(format!("/proc/self/task/{os_tid}/schedstat")).ok()
            });
            let Some(f) = file.as_ref() else { continue };
            if let Some((cpu_ns, runq_ns, timeslices)) = read(f) {
                out.push(Event::ThreadSched(ThreadSched {
                    ts: now,
                    thread,
                    cpu_ns,
                    runq_ns,
                    timeslices,
                }));
            }
        }
    }
}

/// `<on-cpu ns> <run-queue ns> <timeslices>`.
fn read(f: &File) -> Option<(u64, u64, u64)> {
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
        s.sample(100, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        let Event::ThreadSched(t) = out[0] else {
            panic!("{out:?}")
        };
        assert_eq!((t.ts, t.thread), (100, 7));
        // A thread that has been scheduled at least once (its times may still read 0).
        assert!(t.timeslices > 0, "{t:?}");
    }
}
