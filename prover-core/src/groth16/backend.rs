//! The phases a GPU takes over in C2 — `ntt_msm_h`, `batch_add`, `tail_msm` — behind one
//! trait, so the GPU backend slots in without touching the pipeline. The CPU backend is the
//! reference every GPU kernel is tested against.

use super::column::{Column, PageLocker};
use super::msm;
use super::ntt::{self, Domain};
use crate::span;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rayon::prelude::*;

/// One circuit's A, B, C evaluations (one scalar per constraint). After `ntt_msm_h`, `a` holds
/// the H coefficients and `b`, `c` are scratch; all three stay allocated until the proof
/// releases its vectors, as in C2 (or, pooled, until they go back to their pool).
#[derive(Debug, Default)]
pub struct Abc {
    pub a: Column,
    pub b: Column,
    pub c: Column,
}

impl Abc {
    /// The three columns, in order.
    pub fn columns(&self) -> [&Column; 3] {
        [&self.a, &self.b, &self.c]
    }

    /// The three columns, in order, to write.
    pub fn columns_mut(&mut self) -> [&mut Column; 3] {
        [&mut self.a, &mut self.b, &mut self.c]
    }

    /// Pads each to the domain's `n` (the H computation's input size); an error when one is
    /// longer.
    pub fn pad_to(&mut self, n: usize) -> Result<(), BackendError> {
        for v in self.columns_mut() {
            if v.len() > n {
                return Err(BackendError::Size { got: v.len(), n });
            }
            v.pad_to(n);
        }
        Ok(())
    }

    /// Whether all three go back to a pool when dropped (releasing them frees nothing).
    pub fn pooled(&self) -> bool {
        self.columns().iter().all(|c| c.is_pooled())
    }

    /// Whether all three are page-locked: copies go straight from them.
    pub fn page_locked(&self) -> bool {
        self.columns().iter().all(|c| c.is_page_locked())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("GPU backend: {0}")]
    Gpu(String),
    #[error("input of {got} elements does not fit a domain of {n}")]
    Size { got: usize, n: usize },
}

pub trait Backend: Send + Sync + std::fmt::Debug {
    /// `cpu` or `gpu`, as reported in `Hello` and `ProofBegin`.
    fn name(&self) -> &'static str;

    /// Name of the thread that runs the device phases (`compute-0`, `gpu-0`, …).
    fn thread_name(&self) -> String {
        format!(
            "{}-0",
            if self.name() == "gpu" {
                "gpu"
            } else {
                "compute"
            }
        )
    }

    /// How many devices this backend drives. The pipeline splits a batch's circuits across
    /// them, one thread per device, as C2 does across GPUs.
    fn unit_count(&self) -> usize {
        1
    }

    /// Device `i` as a backend of its own (`None`: this backend is its only unit).
    fn unit(&self, _i: usize) -> Option<&dyn Backend> {
        None
    }

    /// Copies base lists the phases will read to the device ahead of them (called beside
    /// synthesis; a list already there costs nothing). The CPU reads them where they lie.
    fn make_resident(&self, _g1: &[&[G1Affine]], _g2: &[&[G2Affine]]) -> Result<(), BackendError> {
        Ok(())
    }

    /// Where B's G2 tail runs when `--g2-tail` does not say: on a GPU's device thread (a
    /// dense 4 × 2^22 batch on the H200: `b_g2_msm` 0.8 s there against 33–36 s on the CPU,
    /// the proof 3.3–3.5 s against 34–38 s; docs/BENCHMARKS.md), on the CPU beside the
    /// device phases otherwise (a CPU "device" thread would run it after them instead).
    fn preferred_g2_tail(&self) -> G2Tail {
        if self.name() == "gpu" {
            G2Tail::Device
        } else {
            G2Tail::Prep
        }
    }

    /// What page-locks the columns a [`ColumnPool`](super::column::ColumnPool) makes for this
    /// backend, so its uploads of a, b, c need no staging (`None`: the CPU reads them where
    /// they lie).
    fn page_locker(&self) -> Option<std::sync::Arc<dyn PageLocker>> {
        None
    }

    /// For each circuit: iNTT of a, b, c; coset NTT; a·b − c; divide by Z; inverse coset NTT
    /// (H coefficients into `a`); then the H MSM over the first n − 1 coefficients.
    fn ntt_msm_h(
        &self,
        domain: &Domain,
        abc: &mut [Abc],
        h_bases: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// For each circuit: the sum of `bases[i]` over the indices in its list.
    fn batch_add(
        &self,
        bases: &[G1Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// For each circuit: the sum of the G2 `bases[i]` over the indices in its list (B's G2
    /// query).
    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError>;

    /// The ones of one batch's queries summed for each circuit: L, A and B in G1, and B in
    /// G2 over B's lists. One call, so a backend can move each list once and overlap the
    /// queries; by default, one query after another (G2 first).
    fn batch_add_queries(&self, q: &OnesQueries<'_>) -> Result<OnesSums, BackendError> {
        Ok(OnesSums {
            b2: self.batch_add_g2(q.b2, q.b.lists)?,
            l: self.batch_add(q.l.bases, q.l.lists)?,
            a: self.batch_add(q.a.bases, q.a.lists)?,
            b: self.batch_add(q.b.bases, q.b.lists)?,
        })
    }

    /// For each circuit: Σ scalars[i]·bases[i].
    fn tail_msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// For each circuit: Σ scalars[i]·bases[i] in G2 (B's G2 tail, `b_g2_msm`, when the
    /// batch asks for it on the device thread: [`G2Tail::Device`]). Blst's Pippenger on the
    /// CPU unless the backend has its own.
    fn tail_msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        Ok(scalars.iter().map(|s| msm::g2_msm(bases, s)).collect())
    }
}

/// One query's bases and, for each circuit, the indices of its ones.
#[derive(Debug, Clone, Copy)]
pub struct Ones<'a> {
    pub bases: &'a [G1Affine],
    pub lists: &'a [Vec<u32>],
}

/// The ones of a batch's queries: B's G2 query (`b2`) shares B's lists.
#[derive(Debug, Clone, Copy)]
pub struct OnesQueries<'a> {
    pub l: Ones<'a>,
    pub a: Ones<'a>,
    pub b: Ones<'a>,
    pub b2: &'a [G2Affine],
}

/// Each query's sums, one a circuit (none where the query has no lists).
#[derive(Debug, Default)]
pub struct OnesSums {
    pub l: Vec<G1Projective>,
    pub a: Vec<G1Projective>,
    pub b: Vec<G1Projective>,
    pub b2: Vec<G2Projective>,
}

/// Where B's G2 tail MSM (`b_g2_msm`) runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum G2Tail {
    /// On the prep thread, on the CPU, beside the device phases (as supraseal's C2 does):
    /// free while the witness is mostly zeros and ones, the whole proof when it is dense
    /// (40 s of a 42 s proof for 4 × 2^22 squaring circuits on 16 cores).
    #[default]
    Prep,
    /// On each device thread after `tail_msm`, by the backend (`Backend::tail_msm_g2`): on a
    /// GPU, the MSM's kernels over G2.
    Device,
}

/// Multi-threaded CPU: our NTT (rayon) and blst's Pippenger / batch addition.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

/// The H computation on the CPU, in place: `a` ends up holding the coefficients of H.
pub fn compute_h_cpu(domain: &Domain, abc: &mut Abc) -> Result<(), BackendError> {
    abc.pad_to(domain.n)?;
    for v in abc.columns_mut() {
        let _s = span!("intt");
        domain.intt(v);
    }
    for v in abc.columns_mut() {
        let _s = span!("coset_ntt");
        domain.coset_ntt(v);
    }
    {
        let _s = span!("mul_sub");
        abc.a
            .par_iter_mut()
            .zip(abc.b.par_iter())
            .zip(abc.c.par_iter())
            .for_each(|((a, b), c)| *a = *a * b - c);
    }
    {
        let _s = span!("divide_by_z");
        ntt::scale(&mut abc.a, domain.z_inv_on_coset());
    }
    {
        let _s = span!("icoset_ntt");
        domain.icoset_ntt(&mut abc.a);
    }
    Ok(())
}

/// The H MSM over the first n − 1 coefficients (H has degree n − 2), on the CPU.
pub fn h_msm(domain: &Domain, h_bases: &[G1Affine], h: &[Scalar]) -> G1Projective {
    let _s = span!("h_msm");
    let m = (domain.n - 1).min(h_bases.len()).min(h.len());
    msm::g1_msm(&h_bases[..m], &h[..m])
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn ntt_msm_h(
        &self,
        domain: &Domain,
        abc: &mut [Abc],
        h_bases: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let mut out = Vec::with_capacity(abc.len());
        for v in abc.iter_mut() {
            compute_h_cpu(domain, v)?;
            out.push(h_msm(domain, h_bases, &v.a));
        }
        Ok(out)
    }

    fn batch_add(
        &self,
        bases: &[G1Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        Ok(ones
            .iter()
            .map(|idx| {
                let picked: Vec<G1Affine> = idx
                    .par_iter()
                    .filter_map(|&i| bases.get(i as usize).copied())
                    .collect();
                msm::g1_sum(&picked)
            })
            .collect())
    }

    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        Ok(ones
            .iter()
            .map(|idx| {
                // Millions of scattered 192-byte reads per circuit: gathered in parallel.
                let picked: Vec<G2Affine> = idx
                    .par_iter()
                    .filter_map(|&i| bases.get(i as usize).copied())
                    .collect();
                msm::g2_sum(&picked)
            })
            .collect())
    }

    fn tail_msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        Ok(scalars.iter().map(|s| msm::g1_msm(bases, s)).collect())
    }
}
