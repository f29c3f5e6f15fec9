//! Points as the kernels lay them out in device memory, and their conversion to blstrs' types:
//! one place for every module that reads a point back or hands one over (sppark keeps its
//! point layouts in their own headers the same way).

use blst::{blst_fp, blst_fp2, blst_p1, blst_p2};
use blstrs::{G1Projective, G2Affine, G2Projective};

/// Words of one Jacobian point as the kernels write it (blst's `blst_p1`: x, y, z limbs).
pub const JAC_LIMBS: usize = 18;

/// Words of one G2 Jacobian point as the kernels write it (blst's `blst_p2`).
pub const JAC2_LIMBS: usize = 36;

/// A Jacobian point in the kernels' layout as a blstrs point.
pub fn jac_to_g1(l: &[u64; JAC_LIMBS]) -> G1Projective {
    let fp = |i: usize| blst_fp {
        l: [l[i], l[i + 1], l[i + 2], l[i + 3], l[i + 4], l[i + 5]],
    };
    let raw = blst_p1 {
        x: fp(0),
        y: fp(6),
        z: fp(12),
    };
    // SAFETY: G1Projective is `#[repr(transparent)]` over blst_p1; the kernels write points of
    // the curve (or Z = 0, blst's identity) in Montgomery form, fully reduced.
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(raw) }
}

/// A G2 Jacobian point in the kernels' layout as a blstrs point.
pub fn jac_to_g2(l: &[u64; JAC2_LIMBS]) -> G2Projective {
    let fp = |i: usize| blst_fp {
        l: [l[i], l[i + 1], l[i + 2], l[i + 3], l[i + 4], l[i + 5]],
    };
    let fp2 = |i: usize| blst_fp2 {
        fp: [fp(i), fp(i + 6)],
    };
    let raw = blst_p2 {
        x: fp2(0),
        y: fp2(12),
        z: fp2(24),
    };
    // SAFETY: G2Projective is `#[repr(transparent)]` over blst_p2; the kernels write points of
    // the curve (or Z = 0, blst's identity) in Montgomery form, fully reduced.
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(raw) }
}

/// The u64 words of G2 affine points as they lie in memory (24 a point).
pub fn g2_limbs(v: &[G2Affine]) -> &[u64] {
    // SAFETY: G2Affine is `#[repr(transparent)]` over blst_p2_affine, `#[repr(C)]` `{ x, y }`
    // of blst_fp2 `{ fp: [blst_fp; 2] }`, each `{ l: [u64; 6] }`: n points are 24n u64s with
    // the same alignment.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u64>(), v.len() * 24) }
}
