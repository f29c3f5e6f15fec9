//! Writes to the program's standard output and error, stamped where they happen (protocol
//! `OutputWrite`). `proofscope run` reads a prover's log lines through a pipe and used to stamp
//! each line when it arrived: on a loaded machine the reader runs late, the calls it
//! reconstructs slide off the frees the probe timed exactly, and one 604 MB free was placed in
//! a different phase in every proof. With the time, thread and stream offset of the write that
//! carried a line, the line is placed on the prover's own clock.
//!
//! The reporter (the preload library's write and stdio hooks) runs on the program's threads:
//! a report is a clock read and a push into a preallocated lock-free queue — no allocation, no
//! lock; a full queue drops the report and counts it. The collector converts the monotonic
//! time to session time and names the thread.

use crate::hook_queue::HookQueue;
use crate::thread::os_tid;
use probe_protocol::OutputStream;

/// Writes queued between collector cycles before dropping: a prover printing a line per
/// circuit per phase writes tens a second; a flood of 16k in one cycle is dropped and counted.
pub const OUTPUT_QUEUE_CAPACITY: usize = 16_384;

/// One write, as the hook saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawWrite {
    /// CLOCK_MONOTONIC when the write returned, ns.
    pub mono_ns: u64,
    pub os_tid: u32,
    pub stream: OutputStream,
    pub offset: u64,
    pub bytes: u64,
}

static WRITES: HookQueue<RawWrite> = HookQueue::new(OUTPUT_QUEUE_CAPACITY);

pub(crate) fn enable() {
    WRITES.enable();
}

pub(crate) fn disable() {
    WRITES.disable();
}

/// Reports that `bytes` bytes of the program's `stream` (fd 1 or 2), from `offset` on, were
/// just written by the calling thread. Never blocks or allocates; dropped and counted when the
/// queue is full, ignored while no session runs or for an fd other than 1 and 2.
pub fn report_output_write(fd: u8, offset: u64, bytes: u64) {
    if !WRITES.is_on() || bytes == 0 {
        return;
    }
    let Some(stream) = OutputStream::of_fd(u64::from(fd)) else {
        return;
    };
    let w = RawWrite {
        mono_ns: crate::clock::monotonic_ns(),
        os_tid: os_tid(),
        stream,
        offset,
        bytes,
    };
    WRITES.push(w);
    crate::sched_stamp::stamp();
}

/// Takes every queued write.
pub(crate) fn drain(f: impl FnMut(RawWrite)) {
    WRITES.drain(f);
}

/// Writes dropped because the queue was full.
pub(crate) fn dropped() -> u64 {
    WRITES.dropped()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "reads the monotonic clock")]
    fn a_write_is_queued_with_its_thread_and_stream_and_a_full_queue_counts() {
        enable();
        report_output_write(2, 10, 5);
        report_output_write(7, 0, 5); // not a standard stream: ignored
        report_output_write(1, 0, 0); // nothing written: ignored
        let mut got = Vec::new();
        drain(|w| got.push(w));
        let mine: Vec<_> = got.iter().filter(|w| w.os_tid == os_tid()).collect();
        assert_eq!(mine.len(), 1, "{got:?}");
        assert_eq!(mine[0].stream, OutputStream::Stderr);
        assert_eq!((mine[0].offset, mine[0].bytes), (10, 5));
        let before = dropped();
        for i in 0..OUTPUT_QUEUE_CAPACITY as u64 + 3 {
            report_output_write(1, i, 1);
        }
        assert!(dropped() >= before + 3);
        drain(|_| {});
    }
}
