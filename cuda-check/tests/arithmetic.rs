//! fp.cuh and g1.cuh against blst, on random and edge-case inputs.

use blst::{blst_fp, blst_fp_add, blst_fp_from_uint64, blst_fp_mul, blst_fp_sqr, blst_fp_sub};
use blstrs::{G1Affine, G1Projective, Scalar};
use cuda_check::*;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Random reduced elements (top word below p's), and the edges: 0, 1, p − 1 in Montgomery form.
fn elements(rng: &mut ChaCha20Rng) -> Vec<Fp> {
    let mut v: Vec<Fp> = (0..300)
        .map(|_| {
            let mut w: Fp = rng.r#gen();
            w[11] %= 0x1a0111ea;
            w
        })
        .collect();
    v.push([0; 12]);
    v.push(fp_op(FpOp::One, &[0; 12], &[0; 12]));
    let mut p_minus_1: Fp = [
        0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0, 0xf38512bf,
        0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea,
    ];
    p_minus_1[0] -= 1;
    v.push(p_minus_1);
    v
}

type Blst2 = unsafe extern "C" fn(*mut blst_fp, *const blst_fp, *const blst_fp);

fn blst2(f: Blst2, a: &Fp, b: &Fp) -> Fp {
    let mut out = blst_fp::default();
    // SAFETY: blst's field functions read two field elements and write one.
    unsafe { f(&mut out, &fp_limbs(a), &fp_limbs(b)) };
    fp_words(&out)
}

#[test]
fn field_operations_match_blst() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let xs = elements(&mut rng);
    let mut one = blst_fp::default();
    // SAFETY: reads six u64 and writes one field element (1 in Montgomery form).
    unsafe { blst_fp_from_uint64(&mut one, [1u64, 0, 0, 0, 0, 0].as_ptr()) };
    assert_eq!(fp_op(FpOp::One, &[0; 12], &[0; 12]), fp_words(&one));
    for (i, a) in xs.iter().enumerate() {
        let b = &xs[(i * 7 + 3) % xs.len()];
        assert_eq!(fp_op(FpOp::Add, a, b), blst2(blst_fp_add, a, b), "add {i}");
        assert_eq!(fp_op(FpOp::Sub, a, b), blst2(blst_fp_sub, a, b), "sub {i}");
        assert_eq!(fp_op(FpOp::Mul, a, b), blst2(blst_fp_mul, a, b), "mul {i}");
        assert_eq!(
            fp_op(FpOp::Neg, a, b),
            blst2(blst_fp_sub, &[0; 12], a),
            "neg {i}"
        );
        let mut sq = blst_fp::default();
        // SAFETY: reads one field element and writes one.
        unsafe { blst_fp_sqr(&mut sq, &fp_limbs(a)) };
        assert_eq!(fp_op(FpOp::Sqr, a, b), fp_words(&sq), "sqr {i}");
    }
}

fn points(rng: &mut ChaCha20Rng, n: usize) -> Vec<G1Affine> {
    (0..n)
        .map(|_| G1Projective::random(&mut *rng).to_affine())
        .collect()
}

/// An XYZZ accumulator with ZZ ≠ 1: the sum of a few affine points.
fn accumulated(ps: &[G1Affine]) -> (Xyzz, G1Projective) {
    let mut acc = from_affine(&affine_words(&ps[0]));
    let mut want = G1Projective::from(ps[0]);
    for p in &ps[1..] {
        acc = add_affine(&acc, &affine_words(p));
        want += p;
    }
    (acc, want)
}

#[test]
fn curve_operations_match_blst() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let id = [0u32; 48];
    assert_eq!(xyzz_point(&id), G1Projective::identity());
    assert_eq!(
        xyzz_point(&from_affine(&affine_words(&G1Affine::identity()))),
        G1Projective::identity()
    );
    for round in 0..20 {
        let ps = points(&mut rng, 6);
        let (a, a_pt) = accumulated(&ps[..3]);
        let (b, b_pt) = accumulated(&ps[3..]);
        let q = &ps[0];
        let qw = affine_words(q);
        assert_eq!(xyzz_point(&a), a_pt, "round {round}: chain");
        assert_eq!(xyzz_point(&add_affine(&a, &qw)), a_pt + q, "madd");
        assert_eq!(xyzz_point(&add(&a, &b)), a_pt + b_pt, "add");
        assert_eq!(xyzz_point(&dbl(&a)), a_pt.double(), "dbl");
        // The excluded cases of the formulas.
        assert_eq!(
            xyzz_point(&add_affine(&id, &qw)),
            G1Projective::from(q),
            "0 + q"
        );
        let single = from_affine(&qw);
        assert_eq!(
            xyzz_point(&add_affine(&single, &qw)),
            q.to_curve().double(),
            "q + q"
        );
        let neg_q = affine_words(&(-q));
        assert_eq!(
            xyzz_point(&add_affine(&single, &neg_q)),
            G1Projective::identity()
        );
        assert_eq!(xyzz_point(&add(&a, &a)), a_pt.double(), "p + p");
        // −a: the same chain over the negated points.
        let negs: Vec<G1Affine> = ps[..3].iter().map(|p| -p).collect();
        let neg_a = accumulated(&negs).0;
        assert_eq!(
            xyzz_point(&add(&a, &neg_a)),
            G1Projective::identity(),
            "p − p"
        );
        assert_eq!(xyzz_point(&add(&id, &a)), a_pt, "0 + p");
        assert_eq!(xyzz_point(&add(&a, &id)), a_pt, "p + 0");
        assert_eq!(xyzz_point(&dbl(&id)), G1Projective::identity(), "2·0");
        let k: u32 = rng.gen_range(0..1 << 16);
        assert_eq!(
            xyzz_point(&mul_small(&a, k, 16)),
            a_pt * Scalar::from(k as u64),
            "{k}·p"
        );
    }
}
