//! What scheduling evidence costs: the collector thread's CPU time while THREADS threads sit
//! inside a span (each sampled every allocator cycle, 10 ms), with `ThreadSched` sampling on
//! and off, alternated (off, on, on, off, …) over ROUNDS rounds of SECS seconds. Prints the
//! collector's CPU share of one core per round and the median difference per thread sampled.
//! With COMPARE=kernel, both sides sample `ThreadSched` and the kernel counters
//! (`ThreadKernel`: `stat` and `syscall` read per thread) are what is off and on.
//!
//! `cargo bench -p proofscope-probe --bench sched` (THREADS, ROUNDS, SECS, COMPARE from the
//! environment).

use proofscope_probe::{Probe, ProbeConfig, SessionInfo, SocketChoice, span};
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Time on a CPU of this process's thread named `name`, in nanoseconds (`schedstat`: the
/// 10 ms ticks of `stat`'s utime and stime were the whole difference, 0.2 % a tick).
fn thread_cpu_ns(name: &str) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let s = std::fs::read_to_string(dir.join("schedstat")).ok()?;
        return s.split_whitespace().next()?.parse().ok();
    }
    None
}

/// The collector's CPU share of one core over `secs` with `threads` threads inside a span;
/// `on` turns on what is compared (the scheduler samples, or with `kernel` the kernel
/// counters beside them).
fn round(on: bool, kernel: bool, threads: u64, secs: u64) -> f64 {
    let mut config = ProbeConfig::new("sched-bench", "0").socket(SocketChoice::None);
    config.sched_sample = on || kernel;
    config.kernel_sample = on && kernel;
    config.gpu_sample = None;
    let probe = Probe::start(config, SessionInfo::default()).expect("probe");
    let stop = Instant::now() + Duration::from_secs(secs) + Duration::from_millis(200);
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("inside-{i}"))
                .spawn(move || {
                    let _s = span!("waiting");
                    while Instant::now() < stop {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })
                .expect("thread")
        })
        .collect();
    // Let the collector adopt every ring before measuring.
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    let a = thread_cpu_ns("probe-collector").expect("collector thread");
    std::thread::sleep(Duration::from_secs(secs));
    let b = thread_cpu_ns("probe-collector").expect("collector thread");
    let wall = t0.elapsed().as_secs_f64();
    for w in workers {
        let _ = w.join();
    }
    probe.shutdown("done");
    (b - a) as f64 / 1e9 / wall
}

fn main() {
    let (threads, rounds, secs) = (env("THREADS", 16), env("ROUNDS", 6), env("SECS", 5));
    let kernel = std::env::var("COMPARE").is_ok_and(|c| c == "kernel");
    let what = if kernel { "kernel counters" } else { "sched" };
    let mut diffs = Vec::new();
    println!(
        "collector CPU share of one core, {threads} threads inside a span, {secs} s a round, {what} off and on"
    );
    for r in 0..rounds {
        // ABBA: off-on, then on-off.
        let order = if r % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut got = [0.0; 2];
        for on in order {
            got[usize::from(on)] = round(on, kernel, threads, secs);
        }
        println!(
            "round {r}: {what} off {:.3} %, on {:.3} %",
            got[0] * 100.0,
            got[1] * 100.0
        );
        diffs.push(got[1] - got[0]);
    }
    diffs.sort_by(f64::total_cmp);
    let median = diffs[diffs.len() / 2];
    println!(
        "median difference: {:+.3} % of a core ({:+.1} µs per thread sample at 100 samples/s; range {:+.3} … {:+.3} %)",
        median * 100.0,
        median / threads as f64 / 100.0 * 1e6,
        diffs[0] * 100.0,
        diffs[diffs.len() - 1] * 100.0
    );
}
