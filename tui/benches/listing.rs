//! The gap listing of one proof of N child spans (issue 47: 5k/10k/20k/40k/100k spans replayed
//! in 0.28/1.24/2.6/17.3/79 s, each gap's neighbours and diagnosis rescanning every span).
//! Children on the proving thread, 1 ms each with 2 ms between them: every gap is over 1 ms,
//! so every one is listed and diagnosed — the most work a listing can have per span. Another
//! thread's span covers the whole proof (what a diagnosis looks at for "other work"), and the
//! proving thread has scheduler samples every 10 ms. Linear means ×40 spans, ×40 the time.
//! `cargo bench -p proofscope --bench listing`.
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use proofscope_engine::analysis::{GapRule, gap_listing};
use proofscope_engine::model::{Model, ProofId, Retention};
use std::hint::black_box;

#[path = "../tests/shapes.rs"]
mod shapes;

/// A model holding one proof of `n` children.
fn model(n: u64) -> Model {
    let mut m = Model::new(Retention {
        max_proofs: 10,
        max_bytes: 4 << 30,
    });
    m.ingest_all(shapes::fan_out(n));
    m
}

/// Writes the proof as a recording (`LISTING_WRITE=DIR`: `DIR/fanout-N.psrec`), for timing a
/// whole `proofscope replay` of it.
fn write_recording(dir: &str, n: u64) {
    let path = format!("{dir}/fanout-{n}.psrec");
    let file = std::fs::File::create(&path).expect("the recording");
    let mut w = probe_protocol::RecordingWriter::new(std::io::BufWriter::new(file)).unwrap();
    for chunk in shapes::fan_out(n).chunks(4096) {
        let mut b = probe_protocol::FrameBuilder::new(0);
        for e in chunk {
            b.push(e).unwrap();
        }
        w.write_frame(b.finish().unwrap()).unwrap();
    }
    w.flush().unwrap();
}

fn listing(c: &mut Criterion) {
    let mut g = c.benchmark_group("gap_listing");
    g.sample_size(10);
    let sizes: Vec<u64> = std::env::var("LISTING_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 400_000]);
    for n in sizes {
        if let Ok(dir) = std::env::var("LISTING_WRITE") {
            write_recording(&dir, n);
        }
        let m = model(n);
        let s = m.current().expect("a session");
        let p = s.proof(ProofId(1)).expect("the proof");
        let rule = GapRule::default();
        let (listed, summed, _) = gap_listing(s, p, &rule);
        eprintln!(
            "{n} spans: {} gaps listed, {} summed, {} spans in the proof",
            listed.len(),
            summed.count,
            p.spans().len()
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(gap_listing(s, p, &rule).0.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, listing);
criterion_main!(benches);
