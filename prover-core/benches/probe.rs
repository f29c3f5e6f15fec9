//! Hot-path costs: span begin+end with the probe on and off, and the counting allocator's
//! overhead on a small alloc+free pair over the system allocator.
use criterion::{Criterion, criterion_group, criterion_main};
use prover_core::probe::{self, CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use prover_core::span;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

fn spans(c: &mut Criterion) {
    let mut g = c.benchmark_group("span");
    g.bench_function("begin+end, probe off", |b| {
        b.iter(|| {
            let s = span!("bench");
            black_box(&s);
        })
    });
    // Probe on, no socket, the default-sized ring; batches of 4 Ki spans (8 Ki events, half the ring) are
    // drained between batches outside the timing, so nothing drops and the figure is the hot
    // path itself.
    let p = Probe::start(
        ProbeConfig::new("bench", "0")
            .socket(SocketChoice::None)
            .gpu_sample(None)
            .ring_events(probe::ProbeConfig::new("", "").ring_events),
        SessionInfo::default(),
    )
    .unwrap();
    g.bench_function("begin+end, probe on", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(1 << 12);
                let t = Instant::now();
                for _ in 0..n {
                    let s = span!("bench");
                    black_box(&s);
                }
                total += t.elapsed();
                left -= n;
                probe::wait_drained(Duration::from_secs(10));
            }
            total
        })
    });
    g.finish();
    p.shutdown("bench done");
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
