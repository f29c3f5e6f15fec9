//! Synthesis of one SHA-256 circuit into a `ProvingAssignment`, with vectors grown as the
//! circuit asks, with capacities taken from the circuit's shape, and into reused columns.
//! `SYNTH_LOG` sets the size (default 2^18).
use criterion::{Criterion, criterion_group, criterion_main};
use prover_core::groth16::assignment::{ProvingAssignment, Shape};
use prover_core::groth16::circuits::CircuitKind;
use prover_core::groth16::column::ColumnPool;
use rand::SeedableRng;

fn bench(c: &mut Criterion) {
    let log = std::env::var("SYNTH_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(18);
    let size = CircuitKind::Sha256.size_for(log).expect("a SHA-256 size");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let circuit = size.random(&mut rng).0;
    let shape = Shape::of(size.blank()).expect("shape");
    let mut g = c.benchmark_group(format!("synthesis sha256 2^{log}"));
    g.sample_size(10);
    g.bench_function("grown", |b| {
        b.iter(|| ProvingAssignment::synthesize(circuit.clone()).expect("synthesis"))
    });
    g.bench_function("sized from the shape", |b| {
        b.iter(|| {
            ProvingAssignment::synthesize_sized(circuit.clone(), &shape, 1 << log, None)
                .expect("synthesis")
        })
    });
    // As `--dealloc reuse` has it: written into the columns the last synthesis gave back
    // (their pages already resident), against fresh vectors whose pages fault in as they are
    // written.
    let pool = ColumnPool::new(None);
    g.bench_function("sized, into reused columns", |b| {
        b.iter(|| {
            ProvingAssignment::synthesize_sized(circuit.clone(), &shape, 1 << log, Some(&pool))
                .expect("synthesis")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
