//! A span begin+end through each way a prover embeds the probe, probe on, in the same run:
//! the native `span!`, the C ABI (`proofscope_span_begin`/`_end`, called through function
//! pointers so that nothing is inlined into the caller, as from C), and the `tracing` layer —
//! with, for scale, the same `tracing` span under the bare registry (what `tracing` costs
//! before any layer sees it).
//!
//! `cargo bench -p proofscope-probe --bench embedding`
use criterion::{Criterion, criterion_group, criterion_main};
use proofscope_probe::capi::{
    proofscope_site, proofscope_span, proofscope_span_begin, proofscope_span_end,
};
use proofscope_probe::{Probe, ProbeConfig, ProofscopeLayer, SessionInfo, SocketChoice, span};
use std::hint::black_box;
use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

/// Spans per timed batch: 2 Ki spans are 4 Ki events, a quarter of the default ring, drained
/// between batches (untimed), so nothing drops and the collector is never woken mid-batch.
const BATCH: u64 = 1 << 11;

/// Times `iters` calls of `f` in batches, draining the probe between batches.
fn batched(iters: u64, mut f: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        total += t.elapsed();
        left -= n;
        proofscope_probe::wait_drained(Duration::from_secs(10));
    }
    total
}

struct Site(proofscope_site);
// SAFETY: the name points to a 'static C string literal; the id is atomic.
unsafe impl Sync for Site {}
static C_SITE: Site = Site(proofscope_site {
    name: c"bench".as_ptr(),
    id: AtomicU32::new(0),
});

fn spans(c: &mut Criterion) {
    let probe = Probe::start(
        ProbeConfig::new("bench", "0")
            .socket(SocketChoice::None)
            .gpu_sample(None),
        SessionInfo::default(),
    )
    .unwrap();
    let mut g = c.benchmark_group("span begin+end, probe on");
    g.bench_function("native span!", |b| {
        b.iter_custom(|n| {
            batched(n, || {
                let s = span!("bench");
                black_box(&s);
            })
        })
    });
    let begin: unsafe extern "C" fn(*const proofscope_site) -> proofscope_span =
        black_box(proofscope_span_begin);
    let end: extern "C" fn(proofscope_span) = black_box(proofscope_span_end);
    g.bench_function("C ABI", |b| {
        b.iter_custom(|n| {
            batched(n, || {
                // SAFETY: the site is a static with a NUL-terminated name.
                let s = unsafe { begin(&C_SITE.0) };
                end(black_box(s));
            })
        })
    });
    let layered = tracing_subscriber::registry().with(ProofscopeLayer::new());
    tracing::subscriber::with_default(layered, || {
        g.bench_function("tracing span, ProofscopeLayer", |b| {
            b.iter_custom(|n| batched(n, || tracing::info_span!("bench").in_scope(|| ())))
        });
    });
    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        g.bench_function("tracing span, registry alone (no layer)", |b| {
            b.iter_custom(|n| batched(n, || tracing::info_span!("bench").in_scope(|| ())))
        });
    });
    g.finish();
    probe.shutdown("bench done");
}

criterion_group!(benches, spans);
criterion_main!(benches);
