//! `prover bench --probe-overhead`'s accounted cost: what the probe spends, counted rather
//! than timed against a noisy baseline. Two parts, both CPU time:
//! - its own threads (collector, server, NVML and scheduling samplers): their scheduler
//!   accounting (`schedstat`), read just before the session ends;
//! - the hot path on the prover's threads: every span, marker and block event the collector
//!   emitted, times the cost of one, measured here on this machine ([`HotPath::calibrate`])
//!   in thread CPU time. A block is costed at its dearest (with its call stack captured), so
//!   this part is an upper bound.
//!
//! Set against the proof's CPU time (the process's, every thread) and its wall time. The ABBA
//! wall-clock figure stays beside it: it sees what accounting cannot (cache and memory
//! bandwidth shared with the prover), and accounting resolves what it cannot (1 % on a host
//! whose pairs differ by 10 %).

use crate::probe::{
    CollectorStats, Probe, ProbeConfig, SessionInfo, ThreadCpu, own_threads_cpu, report_external,
};
use anyhow::Result;
use probe_protocol::EventKind;
use std::time::Duration;

/// CPU time of a clock (`CLOCK_THREAD_CPUTIME_ID`, `CLOCK_PROCESS_CPUTIME_ID`), ns.
fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes; both clocks exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn thread_cpu_ns() -> u64 {
    cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

pub fn process_cpu_ns() -> u64 {
    cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The hot path's cost per event on this machine, CPU ns.
#[derive(Debug, Clone, Copy)]
pub struct HotPath {
    /// One span's begin and end (two events).
    pub span_pair_ns: f64,
    /// One large block's event, its call stack captured.
    pub block_ns: f64,
}

/// Events per calibration batch: well inside a thread's ring and the block queue, so none is
/// dropped (a dropped event costs less and would flatter the figure); the collector drains
/// between batches.
const BATCH: u32 = 1_000;
const BATCHES: u32 = 20;

impl HotPath {
    /// Measured in a session of its own, as the bench's sessions are configured: spans on
    /// this thread, and blocks reported at the stack threshold (the dearest path).
    pub fn calibrate() -> Result<HotPath> {
        // A loaded machine's collector may fall behind: the pauses grow, then it gives up.
        let mut last = None;
        for pause_ms in [5, 20, 80] {
            match Self::attempt(Duration::from_millis(pause_ms)) {
                Ok(h) => return Ok(h),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("calibration did not run")))
    }

    fn attempt(pause: Duration) -> Result<HotPath> {
        let config = ProbeConfig::from_env("prover", env!("CARGO_PKG_VERSION"))?;
        let bytes = config.stack_block.max(config.large_block).max(1);
        let probe = Probe::start(config, SessionInfo::default())?;
        let pause = || std::thread::sleep(pause);
        let (mut spans, mut blocks) = (0u64, 0u64);
        for _ in 0..BATCHES {
            let t = thread_cpu_ns();
            for _ in 0..BATCH {
                let _g = crate::span!("calibration");
            }
            spans += thread_cpu_ns() - t;
            pause();
            let t = thread_cpu_ns();
            for _ in 0..BATCH / 2 {
                report_external(bytes, 0, false);
                report_external(bytes, 0, true);
            }
            blocks += thread_cpu_ns() - t;
            pause();
        }
        let stats = probe.shutdown("calibration");
        if let Some(s) = stats.filter(|s| !s.lost.is_zero()) {
            let kinds: Vec<String> = s
                .lost
                .nonzero()
                .map(|(k, n)| format!("{n} {k:?}"))
                .collect();
            anyhow::bail!(
                "calibration lost events ({}): the hot path's cost would be understated",
                kinds.join(", ")
            );
        }
        let n = f64::from(BATCH * BATCHES);
        Ok(HotPath {
            span_pair_ns: spans as f64 / n,
            block_ns: blocks as f64 / n,
        })
    }
}

/// A reading of the probe's own threads and the process, taken before and after a proof.
#[derive(Debug, Clone)]
pub struct Mark {
    probe_threads: Vec<ThreadCpu>,
    process_ns: u64,
}

impl Mark {
    pub fn now() -> Mark {
        Mark {
            probe_threads: own_threads_cpu(),
            process_ns: process_cpu_ns(),
        }
    }

    /// Per thread name, the CPU time and runs since `before` (threads of one name summed),
    /// dearest first.
    fn threads_since(&self, before: &Mark) -> Vec<ThreadCpu> {
        let mut by: Vec<ThreadCpu> = Vec::new();
        for t in &self.probe_threads {
            let was = before.probe_threads.iter().find(|b| b.name == t.name);
            let cpu_ns = t.cpu_ns.saturating_sub(was.map_or(0, |b| b.cpu_ns));
            let runs = t.runs.saturating_sub(was.map_or(0, |b| b.runs));
            match by.iter_mut().find(|e| e.name == t.name) {
                Some(e) => {
                    e.cpu_ns += cpu_ns;
                    e.runs += runs;
                }
                None => by.push(ThreadCpu {
                    name: t.name.clone(),
                    cpu_ns,
                    runs,
                }),
            }
        }
        by.sort_by_key(|t| std::cmp::Reverse(t.cpu_ns));
        by
    }
}

/// What the probe cost one proof, accounted.
#[derive(Debug, Clone)]
pub struct Accounted {
    /// The probe's threads' part, by thread name, with their runs (wake-ups).
    pub by_thread: Vec<ThreadCpu>,
    pub span_events: u64,
    pub block_events: u64,
    pub hot_path_ns: f64,
    pub proof_cpu_ns: u64,
    pub wall: Duration,
}

impl Accounted {
    /// From the readings around the proof and the session's emitted counts (the session
    /// lived for this proof only).
    pub fn of(
        before: &Mark,
        after: &Mark,
        stats: &CollectorStats,
        hot: HotPath,
        wall: Duration,
    ) -> Accounted {
        let e = &stats.emitted;
        let span_events = e[EventKind::SpanBegin]
            + e[EventKind::SpanEnd]
            + e[EventKind::Marker]
            + e[EventKind::GpuSpan];
        let block_events = e[EventKind::Alloc] + e[EventKind::Release];
        let hot_path_ns =
            span_events as f64 / 2.0 * hot.span_pair_ns + block_events as f64 * hot.block_ns;
        Accounted {
            by_thread: after.threads_since(before),
            span_events,
            block_events,
            hot_path_ns,
            proof_cpu_ns: after.process_ns.saturating_sub(before.process_ns),
            wall,
        }
    }

    /// The probe's threads' CPU time during the proof, every thread.
    pub fn probe_threads_ns(&self) -> u64 {
        self.by_thread.iter().map(|t| t.cpu_ns).sum()
    }

    pub fn total_ns(&self) -> f64 {
        self.probe_threads_ns() as f64 + self.hot_path_ns
    }

    /// Share of the proof's CPU time (every thread of the process), %.
    pub fn of_cpu_pct(&self) -> f64 {
        self.total_ns() / self.proof_cpu_ns.max(1) as f64 * 100.0
    }

    /// Share of the proof's wall time, %.
    pub fn of_wall_pct(&self) -> f64 {
        self.total_ns() / (self.wall.as_nanos().max(1) as f64) * 100.0
    }

    /// One line: the parts, then the shares. Each thread as `name ms/runs`: how often it ran
    /// and what a run cost, the cadence's part and the host's.
    pub fn line(&self) -> String {
        let threads: Vec<String> = self
            .by_thread
            .iter()
            .map(|t| format!("{} {:.2}/{}", t.name, t.cpu_ns as f64 / 1e6, t.runs))
            .collect();
        format!(
            "accounted: probe threads {:.2} ms ({}; ms/runs) + {} span/marker and {} block events on the hot path {:.2} ms = {:.2} ms: {:.3} % of the proof's CPU time ({:.3} s), {:.3} % of its wall ({:.3} s)",
            self.probe_threads_ns() as f64 / 1e6,
            threads.join(", "),
            self.span_events,
            self.block_events,
            self.hot_path_ns / 1e6,
            self.total_ns() / 1e6,
            self.of_cpu_pct(),
            self.proof_cpu_ns as f64 / 1e9,
            self.of_wall_pct(),
            self.wall.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(spans: u64, blocks: u64) -> CollectorStats {
        let mut s = CollectorStats::default();
        s.emitted[EventKind::SpanBegin] = spans / 2;
        s.emitted[EventKind::SpanEnd] = spans / 2;
        s.emitted[EventKind::Release] = blocks;
        s
    }

    #[test]
    fn the_parts_add_up_and_the_shares_are_of_cpu_and_of_wall() {
        let thread = |name: &str, cpu_ns, runs| ThreadCpu {
            name: name.into(),
            cpu_ns,
            runs,
        };
        let before = Mark {
            probe_threads: vec![thread("probe-collector", 1_000_000, 40)],
            process_ns: 10_000_000_000,
        };
        let after = Mark {
            probe_threads: vec![
                thread("probe-collector", 2_500_000, 140),
                thread("probe-nvml", 500_000, 10),
            ],
            process_ns: 12_000_000_000,
        };
        let hot = HotPath {
            span_pair_ns: 100.0,
            block_ns: 2_000.0,
        };
        let a = Accounted::of(
            &before,
            &after,
            &stats(2_000, 500),
            hot,
            Duration::from_secs(1),
        );
        // 2 ms of threads + 1,000 pairs × 100 ns + 500 blocks × 2 µs = 3.1 ms.
        assert_eq!(a.probe_threads_ns(), 2_000_000);
        assert!((a.total_ns() - 3_100_000.0).abs() < 1e-6, "{a:?}");
        assert!((a.of_cpu_pct() - 0.155).abs() < 1e-9, "{}", a.of_cpu_pct());
        assert!((a.of_wall_pct() - 0.31).abs() < 1e-9, "{}", a.of_wall_pct());
        assert!(a.line().contains("0.310 % of its wall"), "{}", a.line());
        assert!(
            a.line()
                .contains("(probe-collector 1.50/100, probe-nvml 0.50/10; ms/runs)"),
            "{}",
            a.line()
        );
    }
}
