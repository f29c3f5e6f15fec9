//! The distribution behind the criterion figure for span begin+end with the probe on: 3,000
//! timed batches of spans (the ring drained between them, untimed), each batch's cost per
//! span, then its minimum, quantiles and mean. On a shared VM the criterion mean moves with
//! the neighbours; the minimum and the low quantiles show what the hot path itself costs.
//!
//! `cargo run --release -p prover-core --example span_batches` (`SPANS=` per batch, default
//! 2048: a quarter of the default ring, so the collector is never woken from the hot path;
//! 4096 wakes it once per batch).
use proofscope_probe::span;
use proofscope_probe::{self, CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BATCHES: usize = 3000;

fn main() -> anyhow::Result<()> {
    let spans: u32 = match std::env::var("SPANS") {
        Ok(v) => v
            .parse()
            .map_err(|e| anyhow::anyhow!("SPANS={v:?}: not a count of spans ({e})"))?,
        Err(_) => 2048,
    };
    anyhow::ensure!(spans > 0, "SPANS must be at least 1");
    let p = Probe::start(
        ProbeConfig::new("span-batches", "0")
            .socket(SocketChoice::None)
            .gpu_sample(None),
        SessionInfo::default(),
    )?;
    let mut per_span = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..spans {
            let s = span!("bench");
            black_box(&s);
        }
        per_span.push(t.elapsed().as_secs_f64() * 1e9 / f64::from(spans));
        proofscope_probe::wait_drained(Duration::from_secs(10));
    }
    p.shutdown("span-batches done");
    let mean = per_span.iter().sum::<f64>() / per_span.len() as f64;
    per_span.sort_by(f64::total_cmp);
    let q = |f: f64| per_span[((per_span.len() - 1) as f64 * f).round() as usize];
    println!(
        "span begin+end, probe on, {BATCHES} batches of {spans} spans (ns per span): \
         min {:.2}  p10 {:.2}  p25 {:.2}  p50 {:.2}  p75 {:.2}  p90 {:.2}  mean {:.2}",
        q(0.0),
        q(0.1),
        q(0.25),
        q(0.5),
        q(0.75),
        q(0.9),
        mean
    );
    Ok(())
}
