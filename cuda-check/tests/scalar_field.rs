//! fr.cuh (the NTT's and the H computation's field) against blstrs' `Scalar`, on random
//! elements and the edges: every pair of a set with 0, 1, 2, r − 1, r − 2 and elements with
//! all-ones or all-zero limbs where the field allows, both operand orders.

use blstrs::Scalar;
use cuda_check::*;
use ff::{Field, PrimeField};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn elements() -> Vec<Scalar> {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5ca1a7);
    let mut v: Vec<Scalar> = (0..200).map(|_| Scalar::random(&mut rng)).collect();
    let one = Scalar::ONE;
    v.extend([
        Scalar::ZERO,
        one,
        one.double(),
        -one,
        -one.double(),
        Scalar::from(u64::MAX),
        -Scalar::from(u64::MAX),
        Scalar::ROOT_OF_UNITY,
        Scalar::DELTA,
    ]);
    v
}

#[test]
fn scalar_field_operations_match_blstrs() {
    let v = elements();
    let mut checked = 0;
    for a in &v {
        for b in &v {
            let (x, y) = (fr_words(a), fr_words(b));
            for (op, want) in [
                (FrOp::Add, *a + b),
                (FrOp::Sub, *a - b),
                (FrOp::Mul, *a * b),
            ] {
                assert_eq!(
                    fr_op(op, &x, &y),
                    fr_words(&want),
                    "{op:?} of {a:?} and {b:?}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * v.len() * v.len());
}

/// Products of the largest elements (r − 1, r − 2, …) stress the bound every chain relies on
/// (a row's total below 2^288, no carry out of the top word).
#[test]
fn products_near_the_modulus_are_reduced() {
    let top: Vec<Scalar> = (1..=64u64).map(|k| -Scalar::from(k)).collect();
    for a in &top {
        for b in &top {
            let got = fr_op(FrOp::Mul, &fr_words(a), &fr_words(b));
            assert_eq!(got, fr_words(&(*a * b)), "{a:?} · {b:?}");
        }
    }
}
