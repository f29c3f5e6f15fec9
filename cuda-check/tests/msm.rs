//! The MSM algorithm of cuda/msm.cu (run sequentially through its own headers) against blst's
//! multi-exponentiation, and the signed digits against the scalars they encode.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuda_check::*;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use prover_core::gpu::msm_bench::{edge_cases, edge_scalars};
use prover_core::groth16::msm::{g1_msm, g2_msm};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn value_of_digits(d: &[u32], c: u32) -> Scalar {
    let base = Scalar::from(2u64).pow_vartime([c as u64]);
    let mut acc = Scalar::ZERO;
    for &code in d.iter().rev() {
        let mag = Scalar::from((code & 0x7fff_ffff) as u64);
        acc = acc * base + if code & 0x8000_0000 != 0 { -mag } else { mag };
    }
    acc
}

#[test]
fn signed_digits_encode_the_scalar() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let mut scalars = edge_scalars();
    scalars.extend((0..200).map(|_| Scalar::random(&mut rng)));
    for c in 2..=20u32 {
        for s in &scalars {
            let d = digits(&canonical_words(s), c);
            assert!(d.len() as u32 * c >= 256);
            for &code in &d {
                assert!(
                    code & 0x7fff_ffff <= 1 << (c - 1),
                    "c = {c}: magnitude {code:#x}"
                );
            }
            assert_eq!(value_of_digits(&d, c), *s, "c = {c}, s = {s:?}");
        }
    }
}

/// The host run of the kernels' algorithm, combined the way the device's results are.
fn reference(bases: &[G1Affine], scalars: &[Scalar], c: u32, k: u32, run: u32) -> G1Projective {
    let windows = msm_reference(bases, scalars, c, k, run);
    let limbs: Vec<u64> = windows.iter().flat_map(jac_limbs).collect();
    prover_core::gpu::combine_windows(&limbs, c, 1)
}

/// A few random points and their small multiples: cheap to make, all distinct.
fn random_points<G>(rng: &mut ChaCha20Rng, n: usize) -> Vec<G::AffineRepr>
where
    G: Curve + Group,
    G::AffineRepr: Default + Copy,
{
    let seeds: Vec<G> = (0..8).map(|_| G::random(&mut *rng)).collect();
    let mut out = Vec::with_capacity(n);
    let mut acc = seeds.clone();
    for i in 0..n {
        let j = i % seeds.len();
        out.push(acc[j]);
        acc[j] += seeds[(j + 1) % seeds.len()];
    }
    let mut affine = vec![G::AffineRepr::default(); n];
    G::batch_normalize(&out, &mut affine);
    affine
}

#[test]
fn reference_msm_matches_blst_on_random_inputs() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for (n, c, k, run) in [
        (1usize, 4u32, 64u32, 8u32),
        (17, 4, 2, 1),
        (300, 6, 4, 3),
        (1000, 8, 64, 32),
        (1 << 12, 10, 64, 32),
        (1 << 12, 16, 64, 32),
    ] {
        let bases = random_points::<G1Projective>(&mut rng, n);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(
            reference(&bases, &scalars, c, k, run),
            g1_msm(&bases, &scalars),
            "n = {n}, c = {c}, k = {k}, run = {run}"
        );
    }
}

#[test]
fn reference_msm_matches_blst_on_edge_cases() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let n = 400;
    let bases = random_points::<G1Projective>(&mut rng, n);
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    for (what, b, s) in edge_cases(&bases, &random) {
        let want = g1_msm(&b, &s);
        for (c, k, run) in [(4u32, 2u32, 1u32), (8, 4, 16), (13, 64, 32)] {
            assert_eq!(
                reference(&b, &s, c, k, run),
                want,
                "{what}: c = {c}, k = {k}"
            );
        }
    }
    // The empty MSM.
    assert_eq!(reference(&[], &[], 8, 64, 32), G1Projective::identity());
    // The cases are not all trivial.
    assert_ne!(g1_msm(&bases, &random), G1Projective::identity());
}

/// The host run of the kernels' algorithm in G2, combined the way the device's results are.
fn reference_g2(bases: &[G2Affine], scalars: &[Scalar], c: u32, k: u32, run: u32) -> G2Projective {
    let windows = msm_reference_g2(bases, scalars, c, k, run);
    let limbs: Vec<u64> = windows.iter().flat_map(jac2_limbs).collect();
    prover_core::gpu::combine_windows(&limbs, c, 1)
}

/// The G2 tail MSM of B (`b_g2_msm`) as the device would run it: the same digits, sort and
/// runs as G1, over `g2.cuh`'s formulas, checked against blst's G2 Pippenger.
#[test]
fn reference_g2_msm_matches_blst_on_random_inputs() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for (n, c, k, run) in [
        (1usize, 4u32, 64u32, 8u32),
        (17, 4, 2, 1),
        (300, 6, 4, 3),
        (1 << 11, 10, 64, 32),
    ] {
        let bases = random_points::<G2Projective>(&mut rng, n);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(
            reference_g2(&bases, &scalars, c, k, run),
            g2_msm(&bases, &scalars),
            "n = {n}, c = {c}, k = {k}, run = {run}"
        );
    }
}

#[test]
fn reference_g2_msm_matches_blst_on_edge_cases() {
    assert!(bool::from(G2Affine::default().is_identity()));
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let n = 200;
    let bases = random_points::<G2Projective>(&mut rng, n);
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    for (what, b, s) in edge_cases(&bases, &random) {
        let want = g2_msm(&b, &s);
        for (c, k, run) in [(4u32, 2u32, 1u32), (9, 64, 32)] {
            assert_eq!(
                reference_g2(&b, &s, c, k, run),
                want,
                "{what}: c = {c}, k = {k}"
            );
        }
    }
    assert_eq!(reference_g2(&[], &[], 8, 64, 32), G2Projective::identity());
    assert_ne!(g2_msm(&bases, &random), G2Projective::identity());
}
