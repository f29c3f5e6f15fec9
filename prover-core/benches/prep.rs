//! `prep_msm` on a batch of SHA-256 assignments: the split read in place (what the pipeline
//! runs) against copying each circuit's L, A and B scalars into fresh vectors first (what it
//! did before). `PREP_LOG` / `PREP_K` set the size (default 2^18, 8 circuits), `PREP_CIRCUIT`
//! the circuit (`sha256` by default; `mixed` is supraseal's benchmark witness: 45 % zeros,
//! 45 % ones, 10 % field elements).
use blstrs::{G1Affine, G2Affine, Scalar};
use criterion::{Criterion, criterion_group, criterion_main};
use group::prime::PrimeCurveAffine;
use prover_core::groth16::assignment::ProvingAssignment;
use prover_core::groth16::circuits::CircuitKind;
use prover_core::groth16::prep::{self, Densities, split_query};
use rand::SeedableRng;
use rayon::prelude::*;

fn env(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let (log, k) = (env("PREP_LOG", 18), env("PREP_K", 8) as usize);
    let kind = match std::env::var("PREP_CIRCUIT").as_deref() {
        Ok("mixed") => CircuitKind::Mixed,
        _ => CircuitKind::Sha256,
    };
    let size = kind.size_for(log).expect("a size of that circuit");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let circuits: Vec<_> = (0..k).map(|_| size.random(&mut rng).0).collect();
    let batch: Vec<ProvingAssignment> = circuits
        .into_par_iter()
        .map(|c| ProvingAssignment::synthesize(c).expect("synthesis"))
        .collect();
    let dens = Densities {
        a_aux: batch[0].a_aux_density.clone(),
        b_input: batch[0].b_input_density.clone(),
        b_aux: batch[0].b_aux_density.clone(),
    };
    let aux: Vec<&[Scalar]> = batch.iter().map(|p| &p.aux_assignment[..]).collect();
    let ins: Vec<&[Scalar]> = batch.iter().map(|p| &p.input_assignment[..]).collect();
    // Only lengths matter to the split; the tails' bases are copied, whatever they are.
    let n = aux[0].len();
    let g1 = vec![G1Affine::generator(); n];
    let g2 = vec![G2Affine::generator(); n];

    let mut g = c.benchmark_group(format!("prep_msm {} 2^{log} x {k}", kind.name()));
    g.sample_size(10);
    g.bench_function("in place (QueryView)", |b| {
        b.iter(|| prep::prepare(&g1, &g1, &g1, &g2, &dens, &ins, &aux))
    });
    g.bench_function("copies first", |b| {
        b.iter(|| {
            let l = split_query(&g1, aux.iter().map(|s| s.to_vec()).collect());
            let a = split_query(&g1, aux.iter().map(|s| dens.a_aux.select(s)).collect());
            let bq = split_query(&g1, aux.iter().map(|s| dens.b_aux.select(s)).collect());
            (l, a, bq)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
