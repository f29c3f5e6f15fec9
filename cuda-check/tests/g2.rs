//! fp2.cuh and curve.cuh's formulas over it (G2) against blst, on random and edge-case inputs:
//! the arithmetic of the device's G2 batch addition.

use blst::{blst_fp2, blst_fp2_add, blst_fp2_mul, blst_fp2_sqr, blst_fp2_sub};
use blstrs::{G2Affine, G2Projective};
use cuda_check::*;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Random reduced elements of Fp2 (each half's top word below p's), and the edges: 0, 1,
/// u, and p − 1 in either half.
fn elements(rng: &mut ChaCha20Rng) -> Vec<Fp2> {
    let mut v: Vec<Fp2> = (0..300)
        .map(|_| {
            let mut w: Fp2 = rng.r#gen();
            w[11] %= 0x1a0111ea;
            w[23] %= 0x1a0111ea;
            w
        })
        .collect();
    let one = fp_op(FpOp::One, &[0; 12], &[0; 12]);
    let mut p_minus_1: Fp = [
        0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0, 0xf38512bf,
        0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea,
    ];
    p_minus_1[0] -= 1;
    let pair = |a: &Fp, b: &Fp| -> Fp2 {
        let mut w = [0u32; 24];
        w[..12].copy_from_slice(a);
        w[12..].copy_from_slice(b);
        w
    };
    v.push([0; 24]);
    v.push(pair(&one, &[0; 12]));
    v.push(pair(&[0; 12], &one));
    v.push(pair(&p_minus_1, &p_minus_1));
    v.push(pair(&[0; 12], &p_minus_1));
    v
}

fn fp2_limbs(w: &Fp2) -> blst_fp2 {
    let mut l = [0u64; 12];
    for (i, x) in l.iter_mut().enumerate() {
        *x = w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32;
    }
    // SAFETY: blst_fp2 is `#[repr(C)]` of two blst_fp, each six u64: 12 u64.
    unsafe { std::mem::transmute::<[u64; 12], blst_fp2>(l) }
}

fn fp2_words(f: &blst_fp2) -> Fp2 {
    // SAFETY: as above, the other way.
    let l: [u64; 12] = unsafe { std::mem::transmute::<blst_fp2, [u64; 12]>(*f) };
    let mut w = [0u32; 24];
    for (i, x) in l.iter().enumerate() {
        w[2 * i] = *x as u32;
        w[2 * i + 1] = (*x >> 32) as u32;
    }
    w
}

type Blst2 = unsafe extern "C" fn(*mut blst_fp2, *const blst_fp2, *const blst_fp2);

fn blst2(f: Blst2, a: &Fp2, b: &Fp2) -> Fp2 {
    let mut out = blst_fp2::default();
    // SAFETY: blst's Fp2 functions read two elements and write one.
    unsafe { f(&mut out, &fp2_limbs(a), &fp2_limbs(b)) };
    fp2_words(&out)
}

#[test]
fn fp2_operations_match_blst() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let xs = elements(&mut rng);
    for (i, a) in xs.iter().enumerate() {
        let b = &xs[(i * 7 + 3) % xs.len()];
        assert_eq!(
            fp2_op(FpOp::Add, a, b),
            blst2(blst_fp2_add, a, b),
            "add {i}"
        );
        assert_eq!(
            fp2_op(FpOp::Sub, a, b),
            blst2(blst_fp2_sub, a, b),
            "sub {i}"
        );
        assert_eq!(
            fp2_op(FpOp::Mul, a, b),
            blst2(blst_fp2_mul, a, b),
            "mul {i}"
        );
        assert_eq!(
            fp2_op(FpOp::Neg, a, b),
            blst2(blst_fp2_sub, &[0; 24], a),
            "neg {i}"
        );
        let mut sq = blst_fp2::default();
        // SAFETY: reads one element and writes one.
        unsafe { blst_fp2_sqr(&mut sq, &fp2_limbs(a)) };
        assert_eq!(fp2_op(FpOp::Sqr, a, b), fp2_words(&sq), "sqr {i}");
    }
}

fn points(rng: &mut ChaCha20Rng, n: usize) -> Vec<G2Affine> {
    (0..n)
        .map(|_| G2Projective::random(&mut *rng).to_affine())
        .collect()
}

/// An XYZZ accumulator with ZZ ≠ 1: the sum of a few affine points, as the device adds them.
fn accumulated(ps: &[G2Affine]) -> (Xyzz2, G2Projective) {
    let mut acc = g2_op(G2Op::FromAffine, &[0; 96], &affine2_words(&ps[0]));
    let mut want = G2Projective::from(ps[0]);
    for p in &ps[1..] {
        acc = g2_op(G2Op::AddAffine, &acc, &affine2_words(p));
        want += p;
    }
    (acc, want)
}

#[test]
fn g2_operations_match_blst() {
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    let id = [0u32; 96];
    let id_affine = affine2_words(&G2Affine::identity());
    assert_eq!(id_affine, [0; 48], "blst's affine identity is all zeros");
    assert_eq!(xyzz2_point(&id), G2Projective::identity());
    assert_eq!(
        xyzz2_point(&g2_op(G2Op::FromAffine, &id, &id_affine)),
        G2Projective::identity()
    );
    for round in 0..10 {
        let ps = points(&mut rng, 6);
        let (a, a_pt) = accumulated(&ps[..3]);
        let (b, b_pt) = accumulated(&ps[3..]);
        let q = &ps[0];
        let qw = affine2_words(q);
        assert_eq!(xyzz2_point(&a), a_pt, "round {round}: chain");
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::AddAffine, &a, &qw)),
            a_pt + q,
            "madd"
        );
        assert_eq!(xyzz2_point(&g2_op(G2Op::Add, &a, &b)), a_pt + b_pt, "add");
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::Dbl, &a, &[])),
            a_pt.double(),
            "dbl"
        );
        // The cases the formulas exclude.
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::AddAffine, &id, &qw)),
            G2Projective::from(q),
            "0 + q"
        );
        let single = g2_op(G2Op::FromAffine, &id, &qw);
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::AddAffine, &single, &qw)),
            q.to_curve().double(),
            "q + q"
        );
        let neg_q = affine2_words(&(-q));
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::AddAffine, &single, &neg_q)),
            G2Projective::identity(),
            "q − q"
        );
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::Add, &a, &a)),
            a_pt.double(),
            "p + p"
        );
        let negs: Vec<G2Affine> = ps[..3].iter().map(|p| -p).collect();
        let neg_a = accumulated(&negs).0;
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::Add, &a, &neg_a)),
            G2Projective::identity(),
            "p − p"
        );
        assert_eq!(xyzz2_point(&g2_op(G2Op::Add, &id, &a)), a_pt, "0 + p");
        assert_eq!(xyzz2_point(&g2_op(G2Op::Add, &a, &id)), a_pt, "p + 0");
        assert_eq!(
            xyzz2_point(&g2_op(G2Op::Dbl, &id, &[])),
            G2Projective::identity(),
            "2·0"
        );
    }
}

/// A long chain with repeats, as one thread's run of a batch addition: every point added to
/// an accumulator that keeps growing, duplicates and negations included.
#[test]
fn a_g2_sum_of_many_points_matches_blst() {
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let base = points(&mut rng, 40);
    let mut acc = [0u32; 96];
    let mut want = G2Projective::identity();
    for i in 0..400 {
        let mut p = base[rng.gen_range(0..base.len())];
        if i % 17 == 0 {
            p = -p;
        }
        acc = g2_op(G2Op::AddAffine, &acc, &affine2_words(&p));
        want += p;
    }
    assert_eq!(xyzz2_point(&acc), want);
}
