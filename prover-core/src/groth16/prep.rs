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

/// A scalar's class for the split, from its Montgomery limbs (no constant-time compare: the
/// witness is the prover's own, and `is_zero` and `==` through `subtle` cost most of the scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Zero,
    One,
    Other,
}

fn classify(s: &Scalar, one: &blst::blst_fr) -> Class {
    let l = blst::blst_fr::from(*s).l;
    if l == [0; 4] {
        Class::Zero
    } else if l == one.l {
        Class::One
    } else {
        Class::Other
    }
}

/// The variables of a query per block of the split's one pass (see [`split_view`]).
const BLOCK: usize = 4096;

/// What one block of variables gives the split: its significant positions, and per circuit
/// the scalars there and the positions whose scalar is one elsewhere.
struct BlockSplit {
    tail: Vec<u32>,
    tail_scalars: Vec<Vec<Scalar>>,
    ones: Vec<Vec<u32>>,
}

/// One query's scalars for every circuit of the batch, read where they lie: element j of
/// circuit c is `circuits[c][pos[j]]` (or `circuits[c][j]` without `pos`). Nothing is copied
/// until the split knows what it needs: copying 48 circuits' assignments into fresh vectors
/// (page faults on every page, then a free) cost most of `prep_msm` at 2^22.
#[derive(Debug, Clone, Copy)]
pub struct QueryView<'a> {
    pub circuits: &'a [&'a [Scalar]],
    /// Positions of the query's variables in each circuit's assignment (a density's set bits).
    pub pos: Option<&'a [u32]>,
}

impl QueryView<'_> {
    fn len(&self) -> usize {
        match self.pos {
            Some(p) => p.len(),
            None => self.circuits.first().map_or(0, |c| c.len()),
        }
    }

    fn get(&self, c: usize, j: usize) -> &Scalar {
        match self.pos {
            Some(p) => &self.circuits[c][p[j] as usize],
            None => &self.circuits[c][j],
        }
    }

    /// Circuit c's scalars for the query, as one vector.
    fn gather(&self, c: usize, idx: impl Iterator<Item = usize>) -> Vec<Scalar> {
        idx.map(|j| *self.get(c, j)).collect()
    }
}

/// Indices of a density's set bits, shared by every circuit of the batch.
pub fn positions(d: &Density) -> Vec<u32> {
    (0..d.len() as u32).filter(|&i| d.get(i as usize)).collect()
}

/// Splits one query given every circuit's scalars for it.
pub fn split_query(full_bases: &[G1Affine], scalars: Vec<Vec<Scalar>>) -> QuerySplit {
    let refs: Vec<&[Scalar]> = scalars.iter().map(Vec::as_slice).collect();
    split_view(
        full_bases,
        QueryView {
            circuits: &refs,
            pos: None,
        },
    )
}

/// Splits one query read in place (see [`QueryView`]), in one pass over the scalars: by
/// blocks of variables, in parallel, each block's scalars of every circuit read once (each
/// circuit's run in order: 48 interleaved streams would defeat the prefetchers) and
/// classified; the block's tail, tail scalars and ones are taken from what it read, while it is
/// in cache. Three passes before (the significance scan, the gather of the tail, a scan for
/// the ones) read every scalar twice and the tail's three times: 4 mixed circuits of 2^20 took
/// 340–346 ms on the build VM, 202–205 ms now; 8 SHA-256 circuits of 2^18, 67–74 ms against
/// 37–39 (docs/BENCHMARKS.md).
pub fn split_view(full_bases: &[G1Affine], view: QueryView<'_>) -> QuerySplit {
    let len = view.len();
    let k = view.circuits.len();
    let one = blst::blst_fr::from(Scalar::ONE);
    let blocks: Vec<BlockSplit> = (0..len.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| split_block(&view, b * BLOCK..((b + 1) * BLOCK).min(len), &one))
        .collect();
    let count: usize = blocks.iter().map(|b| b.tail.len()).sum();
    if count * 2 > len {
        return QuerySplit {
            tail_scalars: (0..k)
                .into_par_iter()
                .map(|c| view.gather(c, 0..len))
                .collect(),
            len,
            ..QuerySplit::default()
        };
    }
    let tail_index: Vec<u32> = blocks.iter().flat_map(|b| b.tail.iter().copied()).collect();
    let tail_bases: Vec<G1Affine> = tail_index
        .par_iter()
        .map(|&i| full_bases[i as usize])
        .collect();
    let (tail_scalars, ones) = (0..k)
        .into_par_iter()
        .map(|c| {
            let s: Vec<Scalar> = blocks
                .iter()
                .flat_map(|b| b.tail_scalars[c].iter().copied())
                .collect();
            let o: Vec<u32> = blocks
                .iter()
                .flat_map(|b| b.ones[c].iter().copied())
                .collect();
            (s, o)
        })
        .unzip();
    QuerySplit {
        tail_index: Some(tail_index),
        tail_bases,
        tail_scalars,
        ones,
        len,
    }
}

/// One block's part of the split: which of its variables are significant in any circuit,
/// each circuit's scalars there, and each circuit's ones among the rest.
fn split_block(
    view: &QueryView<'_>,
    range: std::ops::Range<usize>,
    one: &blst::blst_fr,
) -> BlockSplit {
    let k = view.circuits.len();
    let n = range.len();
    let mut class = vec![Class::Zero; k * n];
    let mut sig = vec![false; n];
    let mut ones_seen = vec![0usize; k];
    for c in 0..k {
        let row = &mut class[c * n..(c + 1) * n];
        let mut mark = |(cl, s): (&mut Class, &mut bool), scalar: &Scalar| {
            *cl = classify(scalar, one);
            *s |= *cl == Class::Other;
            ones_seen[c] += usize::from(*cl == Class::One);
        };
        // The position lookup decided once a run, not once a scalar.
        let scalars = view.circuits[c];
        match view.pos {
            Some(p) => {
                for (x, &i) in row.iter_mut().zip(sig.iter_mut()).zip(&p[range.clone()]) {
                    mark(x, &scalars[i as usize]);
                }
            }
            None => {
                for (x, s) in row
                    .iter_mut()
                    .zip(sig.iter_mut())
                    .zip(&scalars[range.clone()])
                {
                    mark(x, s);
                }
            }
        }
    }
    let mut tail = Vec::with_capacity(sig.iter().filter(|&&s| s).count());
    tail.extend((0..n).filter(|&j| sig[j]).map(|j| (range.start + j) as u32));
    let tail_scalars = (0..k)
        .map(|c| tail.iter().map(|&i| *view.get(c, i as usize)).collect())
        .collect();
    let ones = (0..k)
        .map(|c| {
            let row = &class[c * n..(c + 1) * n];
            let mut o = Vec::with_capacity(ones_seen[c]);
            o.extend(
                (0..n)
                    .filter(|&j| !sig[j] && row[j] == Class::One)
                    .map(|j| (range.start + j) as u32),
            );
            o
        })
        .collect();
    BlockSplit {
        tail,
        tail_scalars,
        ones,
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
    let (a_pos, b_pos) = (positions(&dens.a_aux), positions(&dens.b_aux));
    let (circuits, pos) = (aux, None);
    let l = split_view(l_bases, QueryView { circuits, pos });
    let pos = Some(&a_pos[..]);
    let a = split_view(a_aux_bases, QueryView { circuits, pos });
    let pos = Some(&b_pos[..]);
    let b = split_view(b_aux_bases, QueryView { circuits, pos });
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

    /// A batch of mixed circuits splits as supraseal's benchmark witness does: a tail of
    /// ~10 % of each query (its field-valued positions are the circuit's, so OR-ing four
    /// circuits does not grow it) and ~45 % of each circuit's scalars for batch addition.
    #[test]
    fn mixed_circuits_leave_a_tenth_to_the_tail() {
        use crate::groth16::assignment::ProvingAssignment;
        use crate::groth16::circuits::CircuitKind;
        use group::prime::PrimeCurveAffine;
        let size = CircuitKind::Mixed.size_for(12).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let pas: Vec<ProvingAssignment> = (0..4)
            .map(|_| ProvingAssignment::synthesize(size.random(&mut rng).0).unwrap())
            .collect();
        let dens = Densities {
            a_aux: pas[0].a_aux_density.clone(),
            b_input: pas[0].b_input_density.clone(),
            b_aux: pas[0].b_aux_density.clone(),
        };
        let aux: Vec<&[Scalar]> = pas.iter().map(|p| &p.aux_assignment[..]).collect();
        let inputs: Vec<&[Scalar]> = pas.iter().map(|p| &p.input_assignment[..]).collect();
        let n = aux[0].len();
        let g1 = vec![G1Affine::identity(); n];
        let g2 = vec![G2Affine::identity(); n];
        let prepared = prepare(&g1, &g1, &g1, &g2, &dens, &inputs, &aux);
        for (name, q) in [("L", &prepared.l), ("A", &prepared.a), ("B", &prepared.b)] {
            assert!(q.is_split(), "{name}");
            let tail = q.tail_bases.len() as f64 / q.len as f64;
            assert!((0.07..0.13).contains(&tail), "{name}: tail {tail}");
            for (c, ones) in q.ones.iter().enumerate() {
                let share = ones.len() as f64 / q.len as f64;
                assert!(
                    (0.40..0.50).contains(&share),
                    "{name} circuit {c}: ones {share}"
                );
            }
        }
        assert_eq!(prepared.b_g2_tail_bases.len(), prepared.b.tail_bases.len());
    }

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
