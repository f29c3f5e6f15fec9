//! Replay throughput on every hostile input shape (`tests/shapes.rs`, the inputs
//! `tests/memory_bounds.rs` bounds in memory): frames decoded and ingested into a model at the
//! `--max-mib 32` budget, events per second. The bar: ≥ 1 M events/s on any shape.
//! `cargo bench -p proofscope --bench shapes`.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use probe_protocol::{FrameBuilder, decode_frame};
use proofscope_engine::model::{Model, Retention};
use std::hint::black_box;

#[path = "../tests/shapes.rs"]
mod shapes;

/// Bytes of frames per shape (the memory test crafts 20 MiB files of the same events).
const SHAPE_BYTES: usize = 8 << 20;

/// One shape's frames, as a recording holds them (length prefixes stripped), and their events.
fn frames(mut next: impl FnMut(u64) -> Vec<probe_protocol::Event>) -> (Vec<Vec<u8>>, u64) {
    let (mut out, mut bytes, mut events, mut n) = (Vec::new(), 0, 0u64, 0u64);
    while bytes < SHAPE_BYTES {
        let mut b = FrameBuilder::new(n * 1000);
        while b.body_len() < 48 << 10 {
            for e in next(n) {
                b.push(&e).unwrap();
                events += 1;
            }
            n += 1;
        }
        let f = b.finish().unwrap()[4..].to_vec();
        bytes += f.len();
        out.push(f);
    }
    (out, events)
}

fn replay(frames: &[Vec<u8>]) -> u64 {
    let mut m = Model::new(Retention {
        max_proofs: 1000,
        max_bytes: 32 << 20,
    });
    for f in frames {
        let fr = decode_frame(f).unwrap();
        m.ingest_all(fr.events);
    }
    m.events()
}

fn by_shape(c: &mut Criterion) {
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    for (name, f) in shapes::shapes() {
        let (frames, events) = frames(f);
        g.throughput(Throughput::Elements(events));
        g.bench_function(name, |b| b.iter(|| black_box(replay(&frames))));
    }
    g.finish();
}

criterion_group!(benches, by_shape);
criterion_main!(benches);
