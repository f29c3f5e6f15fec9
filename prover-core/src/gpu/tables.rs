//! Host-built tables the kernels read: roots of unity and coset powers, in Montgomery form.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Entries of the low table of a two-level power table (`x^e = lo[e & 4095] · hi[e >> 12]`).
pub const LO: usize = 4096;
/// Stages per NTT pass (the kernels' `K_MAX`): the local twiddle table has 2^K_MAX entries.
pub const K_MAX: u32 = 9;

/// x^0 … x^(n−1).
pub fn powers(x: Scalar, n: usize) -> Vec<Scalar> {
    let chunk = 4096;
    let mut out = vec![Scalar::ONE; n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(ci, dst)| {
        let mut p = x.pow_vartime([(ci * chunk) as u64]);
        for v in dst {
            *v = p;
            p *= x;
        }
    });
    out
}

/// (lo, hi) with lo[t] = x^t and hi[u] = scale · x^(4096u), covering exponents below `limit`.
pub fn two_level(x: Scalar, limit: usize, scale: Scalar) -> (Vec<Scalar>, Vec<Scalar>) {
    let lo = powers(x, LO);
    let hi_n = limit.div_ceil(LO).max(1);
    let step = x.pow_vartime([LO as u64]);
    let mut hi = powers(step, hi_n);
    hi.par_iter_mut().for_each(|v| *v *= scale);
    (lo, hi)
}

/// The primitive 2^log-th root of unity (bellperson's convention).
pub fn root(log: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log..Scalar::S {
        w = w.square();
    }
    w
}

/// L[h + t] = w_{2h}^t for h = 1, 2, …, 2^(K_MAX−1) (inverse roots when `inverse`).
pub fn local(inverse: bool) -> Vec<Scalar> {
    let mut l = vec![Scalar::ONE; 1 << K_MAX];
    let mut h = 1usize;
    while h < (1 << K_MAX) {
        let mut w = root(h.trailing_zeros() + 1);
        if inverse {
            w = w.invert().unwrap_or(Scalar::ONE);
        }
        let mut p = Scalar::ONE;
        for t in 0..h {
            l[h + t] = p;
            p *= w;
        }
        h *= 2;
    }
    l
}

/// Raw Montgomery limbs of scalars, as the device holds them.
pub fn limbs(v: &[Scalar]) -> &[u64] {
    // SAFETY: blstrs' Scalar is `#[repr(transparent)]` over blst_fr, which is `#[repr(C)]`
    // `{ l: [u64; 4] }`: a slice of n scalars is 4n u64s with the same alignment.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u64>(), v.len() * 4) }
}

pub fn limbs_mut(v: &mut [Scalar]) -> &mut [u64] {
    // SAFETY: as in `limbs`; every bit pattern the device writes back came from our kernels,
    // which only produce fully reduced field elements (valid Scalars).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u64>(), v.len() * 4) }
}

/// The words of affine G1 points as they lie in memory: 12 u64 (x then y, Montgomery limbs)
/// each, all zero for the identity — what the MSM kernels read.
pub fn g1_limbs(v: &[blstrs::G1Affine]) -> &[u64] {
    // SAFETY: G1Affine is `#[repr(transparent)]` over blst_p1_affine, `#[repr(C)]` `{ x, y }`
    // of blst_fp `{ l: [u64; 6] }`: n points are 12n u64s with the same alignment.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u64>(), v.len() * 12) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_level_tables_give_every_power() {
        let x = Scalar::from(5u64);
        let scale = Scalar::from(3u64);
        let (lo, hi) = two_level(x, 3 * LO + 17, scale);
        for e in [0usize, 1, 4095, 4096, 4097, 3 * LO + 16] {
            assert_eq!(
                lo[e & (LO - 1)] * hi[e >> 12],
                scale * x.pow_vartime([e as u64])
            );
        }
    }

    #[test]
    fn local_table_holds_the_small_roots() {
        let l = local(false);
        assert_eq!(l[1], Scalar::ONE);
        assert_eq!(l[2 + 1], root(2));
        assert_eq!(l[256 + 1].pow_vartime([512u64]), Scalar::ONE);
        let li = local(true);
        assert_eq!(l[256 + 7] * li[256 + 7], Scalar::ONE);
    }
}
