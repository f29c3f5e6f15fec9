//! Hot-path costs: span begin+end with the probe on and off, and the counting allocator's
//! overhead on a small alloc+free pair over the system allocator.
use criterion::{Criterion, criterion_group, criterion_main};
use proofscope_probe::span;
use proofscope_probe::{self, CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

fn spans(c: &mut Criterion) {
    let mut g = c.benchmark_group("span");
    // In a function of its own, so the loop's code layout does not depend on what criterion
    // puts around it (inlined into `iter`, the same five instructions measured 0.8–2.0 ns from
    // one build to the next, depending only on where the loop fell).
    g.bench_function("begin+end, probe off", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            disabled_spans(n);
            t.elapsed()
        })
    });
    // Probe on, no socket, the default-sized ring (16 Ki events). Spans run in timed batches;
    // between batches, outside the timing, the ring is drained, so nothing drops.
    let p = Probe::start(
        ProbeConfig::new("bench", "0")
            .socket(SocketChoice::None)
            .gpu_sample(None)
            .ring_events(proofscope_probe::ProbeConfig::new("", "").ring_events),
        SessionInfo::default(),
    )
    .unwrap();
    // Batches of 2 Ki spans (4 Ki events, a quarter of the ring): the ring never reaches half
    // full, as in a prover, where the collector's timer drains it first. This is the cost of
    // a span edge.
    g.bench_function("begin+end, probe on", |b| {
        b.iter_custom(|n| timed_spans(n, 1 << 11))
    });
    // Batches of 4 Ki spans (8 Ki events, half the ring): the last push of each batch wakes
    // the collector (a futex wake, here a cross-vCPU wake-up). This is what a thread emitting
    // faster than the collector's timer pays, spread over half a ring of events.
    g.bench_function(
        "begin+end, probe on, collector woken every half ring",
        |b| b.iter_custom(|n| timed_spans(n, 1 << 12)),
    );
    g.finish();
    p.shutdown("bench done");
}

#[inline(never)]
fn disabled_spans(n: u64) {
    for _ in 0..n {
        let s = span!("bench");
        black_box(&s);
    }
}

/// Times `iters` spans in batches of `batch`, draining the ring between batches (untimed).
fn timed_spans(iters: u64, batch: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(batch);
        let t = Instant::now();
        for _ in 0..n {
            let s = span!("bench");
            black_box(&s);
        }
        total += t.elapsed();
        left -= n;
        proofscope_probe::wait_drained(Duration::from_secs(10));
    }
    total
}

fn allocator(c: &mut Criterion) {
    let layout = Layout::from_size_align(64, 8).unwrap();
    let mut g = c.benchmark_group("alloc+free 64 B");
    g.bench_function("system", |b| {
        b.iter(|| {
            // SAFETY: layout is non-zero; the block is freed with the same layout.
            unsafe {
                let p = System.alloc(black_box(layout));
                System.dealloc(black_box(p), layout);
            }
        })
    });
    g.bench_function("counting", |b| {
        b.iter(|| {
            // SAFETY: as above, through the counting wrapper.
            unsafe {
                let p = ALLOC.alloc(black_box(layout));
                ALLOC.dealloc(black_box(p), layout);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, spans, allocator);
criterion_main!(benches);
