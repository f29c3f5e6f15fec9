//! A prover's log read live (`proofscope run`): each line stamped with the wall clock when it
//! arrived, grouped into calls as `import` groups them, and each call, once settled, placed on
//! the session's clock and turned into events joined to the session the allocator probe
//! reports — the same parsers and placement as `import`, one call at a time.

use super::calls::{At, Call, Calls};
use super::emit::{self, Emitter};
use super::place::{self, Lane};
use super::{LineCounts, file_line};
use probe_protocol::Event;
use std::time::SystemTime;

/// Calls kept after they were handed out: the latest ones, where late lines (a detached
/// free's `async_dealloc_ms`, a wrapper timer) look for the call they belong to. Older ones
/// are forgotten — a `run` of a month kept every call of it.
const KEEP_HANDED: usize = 64;

/// The log of one child (its stdout and stderr together, as it interleaves them).
#[derive(Debug)]
pub struct LogFeed {
    calls: Calls,
    counts: LineCounts,
    emitter: Emitter,
    /// The session's time 0 on the wall clock (Unix ns), once its `Hello` says.
    origin_ns: Option<u64>,
    /// Settled calls waiting for the origin.
    waiting: Vec<Call>,
    /// Lines per stream so far, for `stream:line` in messages.
    per_stream: [usize; 2],
    /// Where the last placed call ended (calls the log gives no time for go after it).
    cursor: u64,
    /// Warnings already handed out.
    warned: usize,
    proofs: usize,
}

/// Which of the child's streams a line came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

impl Default for LogFeed {
    fn default() -> Self {
        LogFeed::new()
    }
}

impl LogFeed {
    pub fn new() -> LogFeed {
        LogFeed {
            calls: Calls::default(),
            counts: LineCounts::default(),
            emitter: Emitter::joined(),
            origin_ns: None,
            waiting: Vec::new(),
            per_stream: [0; 2],
            cursor: 0,
            warned: 0,
            proofs: 0,
        }
    }

    /// One line (without its newline, at most `MAX_LINE` bytes), as it arrived.
    pub fn line(&mut self, raw: &[u8], stream: Stream, arrival: SystemTime) {
        let n = &mut self.per_stream[stream as usize];
        *n += 1;
        let at = At {
            file: stream.name().into(),
            line: *n,
        };
        self.counts.lines += 1;
        file_line(&mut self.calls, &mut self.counts, raw, at, Some(arrival));
    }

    /// The session's time 0 (from its `Hello`) and, when known, the thread that calls the
    /// prover (the process's main thread as the probe defined it).
    pub fn set_origin(&mut self, origin_ns: u64, caller: Option<u32>) {
        self.origin_ns = Some(origin_ns);
        if let Some(t) = caller {
            self.set_caller(t);
        }
    }

    /// The log's calls from now on belong to another session (`run` follows a process the
    /// prover started): its own time 0, names and threads defined afresh; the caller's
    /// thread unknown until that session defines it.
    pub fn rebase(&mut self, origin_ns: u64) {
        self.origin_ns = Some(origin_ns);
        self.emitter = Emitter::joined();
        self.cursor = 0;
    }

    /// The session's thread that calls the prover: the callers' spans go on it from now on.
    pub fn set_caller(&mut self, thread: u32) {
        self.emitter.map_lane(Lane::Caller, thread);
    }

    /// Calls settled and waiting to be placed (for their caller's thread, or the origin).
    pub fn settled(&mut self) -> usize {
        self.waiting.extend(self.calls.take_ready(false));
        self.calls.forget_handed(KEEP_HANDED);
        self.waiting.len()
    }

    pub fn has_origin(&self) -> bool {
        self.origin_ns.is_some()
    }

    pub fn counts(&self) -> &LineCounts {
        &self.counts
    }

    /// Proofs made from the log so far.
    pub fn proofs(&self) -> usize {
        self.proofs
    }

    /// The events of the calls settled since the last call (all of them once `finished`: the
    /// child exited), with the definitions they need first. Nothing until the origin is known.
    pub fn take(&mut self, finished: bool) -> Vec<Event> {
        if finished {
            self.calls.finish();
        }
        self.waiting.extend(self.calls.take_ready(finished));
        self.calls.forget_handed(KEEP_HANDED);
        let Some(origin) = self.origin_ns else {
            return Vec::new();
        };
        let mut timed = Vec::new();
        for c in std::mem::take(&mut self.waiting) {
            let p = place::place_one(&self.calls, &c, self.cursor, Some(origin));
            self.cursor = p.spans.iter().map(|s| s.end).max().unwrap_or(self.cursor);
            timed.extend(self.emitter.proof(&p));
            self.proofs += 1;
        }
        let mut warnings = self.calls.warnings[self.warned..].to_vec();
        self.warned = self.calls.warnings.len();
        if finished {
            warnings.extend(self.counts.warnings());
        }
        let ts = timed.iter().map(|t| t.0).min().unwrap_or(0);
        let stated: Vec<Event> = warnings
            .iter()
            .map(|w| self.emitter.warning(ts, w))
            .collect();
        let mut out = self.emitter.take_defs();
        out.extend(stated);
        out.append(&mut emit::in_order(timed));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// A fork-format call, its lines arriving over 2 s after the session began: one proof,
    /// its outer span ending when `prover time` arrived.
    #[test]
    fn a_call_becomes_a_proof_when_it_settles_on_the_arrival_clock() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut f = LogFeed::new();
        let lines = [
            (100, "CUZK_TIMING: split_vectors_ms=0 setup_to_split_ms=50"),
            (150, "CUZK_TIMING: pre_lock_cpu_ms=50 mutex_wait_ms=0"),
            (400, "CUZK_TIMING: prep_msm_ms=300"),
            (900, "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=700"),
            (
                1000,
                "CUZK_TIMING: gpu_tid=0 tail_msm_ms=100 gpu_total_ms=800",
            ),
            (1001, "CUZK_TIMING: mutex_held_ms=850 total_start_fn_ms=900"),
            (1500, "CUZK_TIMING: b_g2_msm_ms=1000 num_circuits=4"),
            (
                2000,
                "[2026-12-02T15:00:25.943Z INFO  bellperson] prover time: 1.9s",
            ),
        ];
        for (ms, l) in lines {
            f.line(l.as_bytes(), Stream::Stderr, t0 + Duration::from_millis(ms));
        }
        assert!(f.take(false).is_empty(), "no origin yet");
        f.set_origin(
            t0.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64,
            Some(7),
        );
        assert!(
            f.take(false).is_empty(),
            "the detached free may still follow"
        );
        f.line(
            b"CUZK_TIMING: async_dealloc_ms=5",
            Stream::Stderr,
            t0 + Duration::from_millis(2100),
        );
        let evs = f.take(false);
        let end = evs.iter().find_map(|e| match e {
            Event::ProofEnd(p) => Some(p.ts),
            _ => None,
        });
        assert_eq!(
            end,
            Some(2_000_000_000),
            "the wrapper ends when its line arrived"
        );
        let on_caller = evs
            .iter()
            .any(|e| matches!(e, Event::SpanBegin(s) if s.thread == 7));
        assert!(on_caller, "the caller's lane is the session's thread");
        assert_eq!(f.proofs(), 1);
        assert!(f.take(true).is_empty());
    }
}
