//! What the collector's cycles cost with many threads alive, in its own CPU time: the part of
//! the probe's accounted cost (`prover bench --probe-overhead`) that grows with the prover's
//! threads rather than its events. Each of T threads allocates (a slot of its own in the
//! allocator's counters), opens a span (a ring of its own) and then either ends it or stays
//! inside it (a thread inside a span is sampled for scheduling evidence every cycle); then the
//! collector's CPU time is read over a quiet stretch. Prints µs of collector CPU per second
//! for each T.
//!
//! `cargo run --release -p proofscope-probe --example collector_cost -- [SECONDS]`

use proofscope_probe::{CountingAllocator, Probe, ProbeConfig, SessionInfo, own_threads_cpu, span};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

/// The collector's CPU time so far, ns.
fn collector_ns() -> u64 {
    own_threads_cpu()
        .into_iter()
        .filter(|t| t.name == "probe-collector")
        .map(|t| t.cpu_ns)
        .sum()
}

/// One session with `threads` threads alive (inside a span or not): collector CPU µs a second.
fn measure(threads: usize, in_span: bool, secs: f64) -> f64 {
    let config = ProbeConfig::from_env("collector_cost", "0")
        .expect("config")
        .socket(proofscope_probe::SocketChoice::None);
    let probe = Probe::start(config, SessionInfo::default()).expect("probe");
    let ready = Arc::new(Barrier::new(threads + 1));
    let done = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let (ready, done) = (ready.clone(), done.clone());
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || {
                    let v = std::hint::black_box(vec![1u8; 4096]);
                    let outer = span!("work");
                    if !in_span {
                        drop(outer);
                        ready.wait();
                        done.wait();
                    } else {
                        ready.wait();
                        done.wait();
                        drop(outer);
                    }
                    drop(v);
                })
                .expect("spawn")
        })
        .collect();
    ready.wait();
    // Let the session settle (threads adopted, first samples taken).
    std::thread::sleep(Duration::from_millis(300));
    let (t0, c0) = (Instant::now(), collector_ns());
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (dt, dc) = (t0.elapsed().as_secs_f64(), collector_ns() - c0);
    done.wait();
    for w in workers {
        let _ = w.join();
    }
    probe.shutdown("done");
    dc as f64 / 1e3 / dt
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    // A quiet stretch: the sampling cadence stretches to its longest (`cadence.rs`), so the
    // cost a cycle is µs/s over the cycles a second at that interval.
    println!("collector CPU, µs a second (a quiet stretch):");
    println!("{:>8} {:>8} {:>12}", "threads", "in span", "µs/s");
    // Alternated, twice: the machine's noise shows as the spread between the two rounds.
    for round in 0..2 {
        for &t in &[1usize, 16, 64, 256] {
            for in_span in [false, true] {
                let (t, in_span) = if round == 0 {
                    (t, in_span)
                } else {
                    (t, !in_span)
                };
                let us = measure(t, in_span, secs);
                println!(
                    "{t:>8} {:>8} {us:>12.0}",
                    if in_span { "yes" } else { "no" }
                );
            }
        }
    }
}
