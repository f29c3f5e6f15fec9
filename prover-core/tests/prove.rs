//! Proofs from both circuits verify with bellperson; tampered proofs and wrong statements are
//! rejected.
mod support;

use bellperson::groth16::{Proof, verify_proofs_batch};
use blstrs::{Bls12, Scalar};
use ff::Field;
use group::{Curve, Group};
use prover_core::groth16::backend::{CpuBackend, G2Tail};
use prover_core::groth16::circuits::CircuitKind;
use prover_core::groth16::dealloc::DeallocMode;
use prover_core::groth16::params::{self, ParamSet, SrsMode};
use prover_core::groth16::pipeline::{BatchRequest, VerifyMode, prove_batch};
use prover_core::probe::Verification;
use rand::SeedableRng;
use support::cache;

fn prove(
    ps: &ParamSet,
    k: usize,
    seed: u64,
) -> (Vec<Proof<Bls12>>, Vec<Vec<Scalar>>, Verification) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuits = (0..k).map(|_| ps.size.random(&mut rng)).collect();
    let out = prove_batch(BatchRequest {
        params: ps,
        backend: &CpuBackend,
        circuits,
        dealloc: DeallocMode::Sync,
        columns: None,
        verify: VerifyMode::Every,
        g2_tail: G2Tail::Prep,
        stages: None,
        ballast: Default::default(),
    })
    .unwrap();
    (out.proofs, out.public_inputs, out.verification)
}

fn check(ps: &ParamSet, proofs: &[Proof<Bls12>], inputs: &[Vec<Scalar>]) -> bool {
    let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0);
    verify_proofs_batch(ps.pvk.as_ref().unwrap(), &mut rng, &refs, inputs).unwrap_or(false)
}

#[test]
fn squaring_batches_verify_at_2_10_to_2_12() {
    for log in [10, 11, 12] {
        let size = CircuitKind::Squaring.size_for(log).unwrap();
        let ps = params::obtain(size, SrsMode::Real, &cache()).unwrap();
        let (proofs, inputs, v) = prove(&ps, 2, log as u64);
        assert_eq!(v, Verification::Valid, "2^{log}");
        assert!(check(&ps, &proofs, &inputs));
        // One proof at a time, too.
        for (p, i) in proofs.iter().zip(&inputs) {
            let pvk = ps.pvk.as_ref().unwrap();
            assert!(bellperson::groth16::verify_proof(pvk, p, i).unwrap());
        }
    }
}

#[test]
fn sha256_batch_verifies_and_forgeries_are_rejected() {
    let size = CircuitKind::Sha256.size_for(15).unwrap();
    let ps = params::obtain(size, SrsMode::Real, &cache()).unwrap();
    let (proofs, inputs, v) = prove(&ps, 2, 7);
    assert_eq!(v, Verification::Valid);
    assert!(check(&ps, &proofs, &inputs));

    // A tampered proof.
    let mut bad = proofs.clone();
    bad[1].c = (bad[1].c + blstrs::G1Projective::generator()).to_affine();
    assert!(!check(&ps, &bad, &inputs), "tampered C accepted");
    let mut bad = proofs.clone();
    bad[0].a = (bad[0].a * Scalar::from(2u64)).to_affine();
    assert!(!check(&ps, &bad, &inputs), "tampered A accepted");

    // The right proof against the wrong statement.
    let mut wrong = inputs.clone();
    wrong[0][0] += Scalar::ONE;
    assert!(!check(&ps, &proofs, &wrong), "wrong public input accepted");
    let swapped = vec![inputs[1].clone(), inputs[0].clone()];
    assert!(
        !check(&ps, &proofs, &swapped),
        "swapped statements accepted"
    );
}

/// The mixed witness (supraseal's benchmark's: 45 % zeros, 45 % ones, 10 % field elements)
/// proves its statement, Σ x², across several running sums.
#[test]
fn mixed_batches_verify_and_bind_their_sum() {
    let size = CircuitKind::Mixed.size_for(12).unwrap();
    let ps = params::obtain(size, SrsMode::Real, &cache()).unwrap();
    let (proofs, inputs, v) = prove(&ps, 3, 12);
    assert_eq!(v, Verification::Valid);
    assert!(check(&ps, &proofs, &inputs));
    let mut wrong = inputs.clone();
    wrong[2][0] += Scalar::ONE;
    assert!(!check(&ps, &proofs, &wrong), "wrong sum accepted");
}

#[test]
fn synthetic_srs_proofs_are_marked_unverifiable() {
    let size = CircuitKind::Squaring.size_for(10).unwrap();
    let ps = params::obtain(size, SrsMode::Synthetic, &cache()).unwrap();
    assert!(ps.synthetic());
    let (_, _, v) = prove(&ps, 2, 3);
    assert_eq!(v, Verification::Unverifiable);
}

#[test]
fn a_corrupt_cache_file_is_regenerated() {
    let dir = tempfile::tempdir().unwrap();
    let size = CircuitKind::Squaring.size_for(8).unwrap();
    let ps = params::obtain(size, SrsMode::Real, dir.path()).unwrap();
    let file = std::fs::read_dir(dir.path().join("params"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let again = params::obtain(size, SrsMode::Real, dir.path()).unwrap();
    // A new setup: different keys, still proves and verifies.
    assert_ne!(again.params.vk.delta_g1, ps.params.vk.delta_g1);
    let (_, _, v) = prove(&again, 2, 4);
    assert_eq!(v, Verification::Valid);
    // And the regenerated file is good: loading it again gives the same keys.
    let third = params::obtain(size, SrsMode::Real, dir.path()).unwrap();
    assert_eq!(third.params.vk.delta_g1, again.params.vk.delta_g1);
}

#[test]
fn an_unwritable_cache_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let size = CircuitKind::Squaring.size_for(8).unwrap();
    let err = params::obtain(size, SrsMode::Real, &blocker).unwrap_err();
    assert!(err.to_string().contains("PROOFSCOPE_CACHE"), "{err}");
}

/// Batch after batch written into one pool's columns (`--dealloc reuse`), the proofs verify:
/// a column rewritten by the next proof carries nothing of the last.
#[test]
fn proofs_written_into_reused_columns_verify() {
    let size = CircuitKind::Sha256.size_for(15).unwrap();
    let ps = params::obtain(size, SrsMode::Real, &cache()).unwrap();
    let pool = prover_core::groth16::column::ColumnPool::new(None);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(21);
    for batch in 0..3 {
        let circuits = (0..2).map(|_| ps.size.random(&mut rng)).collect();
        let out = prove_batch(BatchRequest {
            params: &ps,
            backend: &CpuBackend,
            circuits,
            dealloc: DeallocMode::Async,
            columns: Some(&pool),
            verify: VerifyMode::Every,
            g2_tail: G2Tail::Prep,
            stages: None,
            ballast: Default::default(),
        })
        .unwrap();
        assert_eq!(out.verification, Verification::Valid, "batch {batch}");
        assert!(check(&ps, &out.proofs, &out.public_inputs), "batch {batch}");
        assert_eq!(pool.kept().0, 6, "batch {batch}: 2 circuits' a, b, c kept");
    }
}
