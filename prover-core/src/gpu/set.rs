//! Every visible GPU as one backend. The pipeline asks for the units and runs one thread per
//! GPU over its run of the batch's circuits (C2's split); called directly, each phase splits
//! its circuits the same way, a named thread per GPU.

use super::GpuBackend;
use crate::groth16::backend::{Abc, Backend, BackendError};
use crate::groth16::column::PageLocker;
use crate::groth16::ntt::Domain;
use crate::groth16::pipeline::split_ranges;
use crate::probe::SpanHandle;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

#[derive(Debug)]
pub struct GpuSet {
    gpus: Vec<GpuBackend>,
}

impl GpuSet {
    /// `gpus` must not be empty.
    pub fn new(gpus: Vec<GpuBackend>) -> Option<GpuSet> {
        (!gpus.is_empty()).then_some(GpuSet { gpus })
    }

    pub fn describe(&self) -> String {
        let each: Vec<String> = self.gpus.iter().map(GpuBackend::describe).collect();
        format!("{} GPUs: {}", self.gpus.len(), each.join("; "))
    }

    /// Runs `f` on GPU i with `parts[i]` (at most one part per GPU), each in a thread of
    /// that GPU's name, and concatenates the results in order.
    fn each<I: Send, T: Send>(
        &self,
        parts: Vec<I>,
        f: impl Fn(&GpuBackend, I) -> Result<Vec<T>, BackendError> + Sync,
    ) -> Result<Vec<T>, BackendError> {
        let parent = SpanHandle::current();
        std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(parts.len());
            for (gpu, part) in self.gpus.iter().zip(parts) {
                let f = &f;
                let h = std::thread::Builder::new()
                    .name(gpu.thread_name())
                    .spawn_scoped(s, move || {
                        let _a = parent.adopt();
                        f(gpu, part)
                    })
                    .map_err(|e| BackendError::Gpu(format!("cannot start a GPU thread: {e}")))?;
                handles.push(h);
            }
            let mut out = Vec::new();
            for h in handles {
                let part = h
                    .join()
                    .map_err(|_| BackendError::Gpu("a GPU thread panicked".into()))??;
                out.extend(part);
            }
            Ok(out)
        })
    }

    /// A per-circuit list cut into one run per GPU.
    fn runs<'v, T>(&self, v: &'v [T]) -> Vec<&'v [T]> {
        split_ranges(v.len(), self.gpus.len())
            .into_iter()
            .map(|r| &v[r])
            .collect()
    }
}

impl Backend for GpuSet {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn thread_name(&self) -> String {
        self.gpus[0].thread_name()
    }

    fn unit_count(&self) -> usize {
        self.gpus.len()
    }

    fn unit(&self, i: usize) -> Option<&dyn Backend> {
        self.gpus.get(i).map(|g| g as &dyn Backend)
    }

    fn ntt_msm_h(
        &self,
        domain: &Domain,
        abc: &mut [Abc],
        h_bases: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError> {
        // Each GPU takes its own circuits' vectors: disjoint slices.
        let mut parts = Vec::with_capacity(self.gpus.len());
        let mut rest = abc;
        for r in split_ranges(rest.len(), self.gpus.len()) {
            let (mine, tail) = rest.split_at_mut(r.len());
            parts.push(mine);
            rest = tail;
        }
        self.each(parts, |gpu, mine| gpu.ntt_msm_h(domain, mine, h_bases))
    }

    fn batch_add(
        &self,
        bases: &[G1Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let parts = self.runs(ones);
        self.each(parts, |gpu, mine| gpu.batch_add(bases, mine))
    }

    fn make_resident(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), BackendError> {
        // Every GPU needs every list: one copy each, side by side.
        self.each(vec![(); self.gpus.len()], |gpu, ()| {
            gpu.make_resident(g1, g2).map(|()| Vec::<()>::new())
        })?;
        Ok(())
    }

    fn page_locker(&self) -> Option<std::sync::Arc<dyn PageLocker>> {
        // Locked portable: pinned for every GPU's context.
        self.gpus.first().and_then(|g| g.page_locker())
    }

    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        let parts = self.runs(ones);
        self.each(parts, |gpu, mine| gpu.batch_add_g2(bases, mine))
    }

    fn tail_msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let parts = self.runs(scalars);
        self.each(parts, |gpu, mine| gpu.tail_msm(bases, mine))
    }

    fn tail_msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        let parts = self.runs(scalars);
        self.each(parts, |gpu, mine| gpu.tail_msm_g2(bases, mine))
    }
}
