//! Multi-scalar multiplication and batch addition on the CPU through blst (its multi-threaded
//! Pippenger and its batch-affine addition), directly on the SRS's affine points.

use blst::{MultiPoint, blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;

fn as_blst_g1(points: &[G1Affine]) -> &[blst_p1_affine] {
    // SAFETY: blstrs' G1Affine is `#[repr(transparent)]` over blst_p1_affine, so the slices
    // have the same layout and length.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

fn as_blst_g2(points: &[G2Affine]) -> &[blst_p2_affine] {
    // SAFETY: blstrs' G2Affine is `#[repr(transparent)]` over blst_p2_affine.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

fn g1(p: blst_p1) -> G1Projective {
    // SAFETY: G1Projective is `#[repr(transparent)]` over blst_p1; any blst_p1 produced by
    // blst's group operations is a valid G1Projective.
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) }
}

fn g2(p: blst_p2) -> G2Projective {
    // SAFETY: as for `g1`, over blst_p2.
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) }
}

/// Canonical little-endian bytes of every scalar, as blst's Pippenger reads them.
pub fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut out = vec![0u8; scalars.len() * 32];
    use rayon::prelude::*;
    out.par_chunks_mut(32 * 1024)
        .zip(scalars.par_chunks(1024))
        .for_each(|(o, s)| {
            for (dst, x) in o.chunks_exact_mut(32).zip(s) {
                dst.copy_from_slice(&x.to_bytes_le());
            }
        });
    out
}

/// Σ scalars[i]·bases[i] over G1 (lengths must match; empty → identity).
pub fn g1_msm(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let n = bases.len().min(scalars.len());
    if n == 0 {
        return G1Projective::identity();
    }
    let bytes = scalar_bytes(&scalars[..n]);
    g1(as_blst_g1(&bases[..n]).mult(&bytes, 255))
}

/// Σ scalars[i]·bases[i] over G2.
pub fn g2_msm(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    let n = bases.len().min(scalars.len());
    if n == 0 {
        return G2Projective::identity();
    }
    let bytes = scalar_bytes(&scalars[..n]);
    g2(as_blst_g2(&bases[..n]).mult(&bytes, 255))
}

/// Σ bases[i] over G1 (batch-affine addition).
pub fn g1_sum(bases: &[G1Affine]) -> G1Projective {
    if bases.is_empty() {
        return G1Projective::identity();
    }
    g1(as_blst_g1(bases).add())
}

/// Σ bases[i] over G2.
pub fn g2_sum(bases: &[G2Affine]) -> G2Projective {
    if bases.is_empty() {
        return G2Projective::identity();
    }
    g2(as_blst_g2(bases).add())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::Curve;
    use rand::SeedableRng;

    #[test]
    fn msm_and_sum_match_naive() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        for n in [0usize, 1, 5, 40, 300] {
            let pts: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let mut sc: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            if n > 3 {
                sc[0] = Scalar::ZERO;
                sc[1] = Scalar::ONE;
                sc[2] = -Scalar::ONE;
            }
            let naive = pts
                .iter()
                .zip(&sc)
                .fold(G1Projective::identity(), |acc, (p, s)| acc + p * s);
            assert_eq!(g1_msm(&pts, &sc), naive, "n = {n}");
            let sum = pts.iter().fold(G1Projective::identity(), |acc, p| acc + p);
            assert_eq!(g1_sum(&pts), sum);
            let pts2: Vec<G2Affine> = (0..n.min(40))
                .map(|_| G2Projective::random(&mut rng).to_affine())
                .collect();
            let naive2 = pts2
                .iter()
                .zip(&sc)
                .fold(G2Projective::identity(), |acc, (p, s)| acc + p * s);
            assert_eq!(g2_msm(&pts2, &sc[..pts2.len()]), naive2);
            assert_eq!(
                g2_sum(&pts2),
                pts2.iter().fold(G2Projective::identity(), |a, p| a + p)
            );
        }
    }
}
