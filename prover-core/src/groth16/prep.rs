//! `prep_msm`: the C2 split. For each of the L, A and B queries, a scalar is *significant*
//! when it is neither 0 nor 1 in any circuit of the batch (the masks are OR-ed across
//! circuits, so the tail bases are shared). If at most half of the points are significant,
//! the MSM is split: zeros are skipped, ones go to batch addition, and the significant rest to
//! a smaller tail MSM whose bases are copied out of the SRS. Otherwise the full MSM runs.

use super::assignment::Density;
use blstrs::{G1Affine, G2Affine, Scalar};
use ff::Field;
use rayon::prelude::*;

/// One query after the split.
#[derive(Debug, Default)]
pub struct QuerySplit {
    /// Positions of the significant variables in the query's base list; `None`: not split.
    pub tail_index: Option<Vec<u32>>,
    /// Bases of the tail, copied out of the SRS (empty when not split: the full list is used).
    pub tail_bases: Vec<G1Affine>,
    /// Per circuit: the scalars of the tail (all scalars when not split).
    pub tail_scalars: Vec<Vec<Scalar>>,
    /// Per circuit: positions whose scalar is exactly 1 outside the tail (empty when not split).
    pub ones: Vec<Vec<u32>>,
    /// Points in the query.
    pub len: usize,
}

impl QuerySplit {
    pub fn is_split(&self) -> bool {
        self.tail_index.is_some()
    }

    /// Tail bases: the copy when split, else the full list.
    pub fn bases<'a>(&'a self, full: &'a [G1Affine]) -> &'a [G1Affine] {
        if self.is_split() {
            &self.tail_bases
        } else {
            full
        }
    }

    /// Points that go through batch addition, over all circuits.
    pub fn ones_total(&self) -> usize {
        self.ones.iter().map(Vec::len).sum()
    }
}

/// Everything prep produces for the later phases.
#[derive(Debug, Default)]
pub struct Prepared {
    pub l: QuerySplit,
    pub a: QuerySplit,
    pub b: QuerySplit,
    /// B's G2 tail bases, copied when B is split.
    pub b_g2_tail_bases: Vec<G2Affine>,
    /// Per circuit: input scalars with B density (for the B inputs MSMs).
    pub b_inputs: Vec<Vec<Scalar>>,
}

fn significant(s: &Scalar) -> bool {
    !(bool::from(s.is_zero()) || *s == Scalar::ONE)
}

/// Splits one query given every circuit's scalars for it.
pub fn split_query(full_bases: &[G1Affine], scalars: Vec<Vec<Scalar>>) -> QuerySplit {
    let len = scalars.first().map_or(0, Vec::len);
    let sig: Vec<bool> = (0..len)
        .into_par_iter()
        .map(|i| scalars.iter().any(|s| significant(&s[i])))
        .collect();
    let count = sig.iter().filter(|&&x| x).count();
    if count * 2 > len {
        return QuerySplit {
            tail_scalars: scalars,
            len,
            ..QuerySplit::default()
        };
    }
    let tail_index: Vec<u32> = (0..len as u32).filter(|&i| sig[i as usize]).collect();
    let tail_bases: Vec<G1Affine> = tail_index
        .par_iter()
        .map(|&i| full_bases[i as usize])
        .collect();
    let tail_scalars = scalars
        .par_iter()
        .map(|s| tail_index.iter().map(|&i| s[i as usize]).collect())
        .collect();
    let ones = scalars
        .par_iter()
        .map(|s| {
            (0..len as u32)
                .filter(|&i| !sig[i as usize] && s[i as usize] == Scalar::ONE)
                .collect()
        })
        .collect();
    QuerySplit {
        tail_index: Some(tail_index),
        tail_bases,
        tail_scalars,
        ones,
        len,
    }
}

/// The densities of the batch's circuits (identical for one circuit shape).
#[derive(Debug, Clone)]
pub struct Densities {
    pub a_aux: Density,
    pub b_input: Density,
    pub b_aux: Density,
}

/// Runs the split for L, A and B, and copies B's G2 tail bases.
pub fn prepare(
    l_bases: &[G1Affine],
    a_aux_bases: &[G1Affine],
    b_aux_bases: &[G1Affine],
    b_g2_aux_bases: &[G2Affine],
    dens: &Densities,
    inputs: &[&[Scalar]],
    aux: &[&[Scalar]],
) -> Prepared {
    let l = split_query(l_bases, aux.iter().map(|s| s.to_vec()).collect());
    let a = split_query(
        a_aux_bases,
        aux.iter().map(|s| dens.a_aux.select(s)).collect(),
    );
    let b = split_query(
        b_aux_bases,
        aux.iter().map(|s| dens.b_aux.select(s)).collect(),
    );
    let b_g2_tail_bases = match &b.tail_index {
        Some(idx) => idx
            .par_iter()
            .map(|&i| b_g2_aux_bases[i as usize])
            .collect(),
        None => Vec::new(),
    };
    Prepared {
        l,
        a,
        b,
        b_g2_tail_bases,
        b_inputs: inputs.iter().map(|s| dens.b_input.select(s)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::msm;
    use group::{Curve, Group};
    use rand::SeedableRng;

    /// Split or not, ones + tail = the full MSM, for every circuit.
    #[test]
    fn split_parts_add_up_to_the_full_msm() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let n = 200;
        let bases: Vec<G1Affine> = (0..n)
            .map(|_| blstrs::G1Projective::random(&mut rng).to_affine())
            .collect();
        for dense_every in [2usize, 7] {
            let scalars: Vec<Vec<Scalar>> = (0..3)
                .map(|c| {
                    (0..n)
                        .map(|i| match (i + c) % dense_every {
                            0 => Scalar::random(&mut rng),
                            1 => Scalar::ONE,
                            _ => Scalar::ZERO,
                        })
                        .collect()
                })
                .collect();
            let split = split_query(&bases, scalars.clone());
            assert_eq!(
                split.is_split(),
                dense_every == 7,
                "dense every {dense_every}"
            );
            for (c, s) in scalars.iter().enumerate() {
                let full = msm::g1_msm(&bases, s);
                let ones: Vec<G1Affine> = split
                    .ones
                    .get(c)
                    .map_or(vec![], |o| o.iter().map(|&i| bases[i as usize]).collect());
                let parts =
                    msm::g1_sum(&ones) + msm::g1_msm(split.bases(&bases), &split.tail_scalars[c]);
                assert_eq!(parts, full, "circuit {c}");
            }
        }
    }
}
