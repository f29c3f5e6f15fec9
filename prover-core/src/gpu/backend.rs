//! The GPU backend: `ntt_msm_h` computes the H polynomial on the device (uploads of a, b, c
//! overlapped with the transforms, host vectors page-locked in place so copies run at pinned
//! speed) and its MSM over the H coefficients where the NTT left them; `batch_add` and
//! `tail_msm` run the G1 MSMs of L, A and B on the device. The SRS queries stay resident on
//! the device across proofs, as a prover keeps its parameters; `b_g2_msm` stays on the CPU
//! (the prep thread), overlapping these phases, unless the batch asks for it on the device
//! (`--g2-tail device`: the same MSM passes over G2).

use super::GpuError;
use super::device::{Device, DeviceFr, NttOp};
use super::msm::{DeviceBases, MsmBases, MsmPlan, MsmScalars};
use super::sums::{ListSet, SetSums};
use super::tables;
use super::timing::{GpuTimeline, TimedOp, finish, start_if, timed as timed_op};
use crate::groth16::backend::{Abc, Backend, BackendError, Ones, OnesQueries, OnesSums};
use crate::groth16::column::{PageLock, PageLocker};
use crate::groth16::ntt::Domain;
use crate::probe::SpanHandle;
use crate::span;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Host memory, page-locked in place for as long as this guard lives when asked to be. It
/// holds the exclusive borrow of what it locked, so the memory can be neither freed, moved nor
/// resized before it is unlocked; copies reach it through [`Pinned::get`] / [`Pinned::get_mut`].
struct Pinned<'a> {
    mem: &'a mut [Scalar],
    ok: bool,
}

impl<'a> Pinned<'a> {
    /// Locks `mem` when `lock` (the copies from it then run at pinned speed); otherwise only
    /// borrows it, for a path that stages its copies.
    fn new(mem: &'a mut [Scalar], lock: bool) -> Pinned<'a> {
        let bytes = std::mem::size_of_val(mem);
        if !lock || bytes == 0 {
            return Pinned { mem, ok: false };
        }
        // SAFETY: registers memory this guard borrows exclusively for its whole length; it
        // is unregistered in Drop, before the borrow ends.
        let rc =
            unsafe { cudarc::driver::sys::cuMemHostRegister_v2(mem.as_mut_ptr().cast(), bytes, 0) };
        Pinned {
            mem,
            ok: rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS,
        }
    }

    fn get(&self) -> &[Scalar] {
        self.mem
    }

    fn get_mut(&mut self) -> &mut [Scalar] {
        self.mem
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        if self.ok {
            // SAFETY: this memory was registered by `new` and is still borrowed, so allocated.
            unsafe { cudarc::driver::sys::cuMemHostUnregister(self.mem.as_mut_ptr().cast()) };
        }
    }
}

/// Page-locks the columns a pool makes, once each, for every context (portable): a pooled
/// column's uploads then go straight from where synthesis wrote it.
struct ColumnLocker {
    ctx: Arc<cudarc::driver::CudaContext>,
}

/// A column's page lock; unlocks when dropped (the column drops it before its memory can move
/// or be freed).
struct ColumnLock {
    ctx: Arc<cudarc::driver::CudaContext>,
    ptr: usize,
}

impl PageLock for ColumnLock {}

impl PageLocker for ColumnLocker {
    fn lock(&self, mem: &mut [Scalar]) -> Option<Box<dyn PageLock>> {
        let bytes = std::mem::size_of_val(mem);
        if bytes == 0 || self.ctx.bind_to_thread().is_err() {
            return None;
        }
        let ptr = mem.as_mut_ptr();
        // SAFETY: registers memory the caller's column owns for as long as the returned lock
        // lives: `Column` (and its pool) drop the lock before that memory moves or is freed.
        let rc = unsafe {
            cudarc::driver::sys::cuMemHostRegister_v2(
                ptr.cast(),
                bytes,
                cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        (rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS).then(|| {
            Box::new(ColumnLock {
                ctx: self.ctx.clone(),
                ptr: ptr as usize,
            }) as Box<dyn PageLock>
        })
    }
}

impl Drop for ColumnLock {
    fn drop(&mut self) {
        // A column is dropped on whichever thread released it: make the context current.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: this range was registered by `ColumnLocker::lock` and, by the lock's
        // contract, is still allocated.
        unsafe { cudarc::driver::sys::cuMemHostUnregister(self.ptr as *mut std::ffi::c_void) };
    }
}

/// How a, b, c reach the device and H comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPath {
    /// Through the device's page-locked staging buffers, made once and reused by every proof.
    Staged,
    /// Page-locked in place for the call (registered and unregistered every time): the
    /// reference `gpu-bench` measures device time with.
    LockedInPlace,
}

/// Device buffers for one domain size, reused across circuits and proofs.
struct Buffers {
    log: u32,
    abc: [DeviceFr; 3],
    scratch: DeviceFr,
}

/// Identifies a base list the host keeps alive (the SRS queries): where it lies, how long it
/// is, and a fingerprint of 64 of its points, so memory freed and reused for other points
/// cannot be mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BasesKey {
    ptr: usize,
    len: usize,
    sample: u64,
}

impl BasesKey {
    /// A list of points of `point_words` u64 each, known by where it lies, its length and a
    /// sample of its words.
    fn of(words: &[u64], point_words: usize) -> BasesKey {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let n = words.len() / point_words.max(1);
        for j in 0..64usize.min(n) {
            let i = if n <= 64 { j } else { j * (n - 1) / 63 };
            words[point_words * i..point_words * (i + 1)].hash(&mut h);
        }
        BasesKey {
            ptr: words.as_ptr() as usize,
            len: n,
            sample: h.finish(),
        }
    }
}

/// Base lists kept on the device, most recently used last.
const RESIDENT_MAX: usize = 7;

pub struct GpuBackend {
    pub device: Device,
    buffers: Mutex<Option<Buffers>>,
    resident: Mutex<Vec<(BasesKey, Arc<DeviceBases>)>>,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBackend")
            .field("device", &self.device.name)
            .finish()
    }
}

impl GpuBackend {
    pub fn new(index: usize, cache_dir: &Path) -> Result<GpuBackend, GpuError> {
        Ok(GpuBackend {
            device: Device::open(index, cache_dir)?,
            buffers: Mutex::new(None),
            resident: Mutex::new(Vec::new()),
        })
    }

    pub fn describe(&self) -> String {
        let k = &self.device.kernels;
        format!(
            "GPU backend on {} ({}, kernels {} in {:.0} ms)",
            self.device.name,
            k.arch,
            if k.compiled {
                "compiled"
            } else {
                "loaded from cache"
            },
            k.load_ms
        )
    }

    /// The device copy of a base list the host keeps (uploaded on first use).
    pub fn resident(&self, bases: &[G1Affine]) -> Result<Arc<DeviceBases>, GpuError> {
        self.resident_words(BasesKey::of(tables::g1_limbs(bases), 12), || {
            self.device.upload_bases(bases)
        })
    }

    /// The device copy of a G2 base list the host keeps (B's G2 query), as [`Self::resident`].
    pub fn resident_g2(&self, bases: &[G2Affine]) -> Result<Arc<DeviceBases>, GpuError> {
        self.resident_words(BasesKey::of(super::g2_limbs(bases), 24), || {
            self.device.upload_bases_g2(bases)
        })
    }

    /// The device copy of a query's bases, or `None` when every list is empty (nothing to
    /// sum: the bases need not go up, and the sums are the identity).
    fn resident_unless_empty(
        &self,
        lists: &[Vec<u32>],
        resident: impl FnOnce() -> Result<Arc<DeviceBases>, GpuError>,
    ) -> Result<Option<Arc<DeviceBases>>, GpuError> {
        if lists.iter().all(Vec::is_empty) {
            return Ok(None);
        }
        resident().map(Some)
    }

    /// Batch addition of sets of lists, timed and reported as one operation of the calling
    /// span.
    fn list_sets(&self, sets: &[HostSet<'_>]) -> Result<Vec<SetSums>, BackendError> {
        let parent = SpanHandle::current();
        let views: Vec<Vec<&[u32]>> = sets
            .iter()
            .map(|(lists, ..)| lists.iter().map(Vec::as_slice).collect())
            .collect();
        let sets: Vec<ListSet<'_>> = sets
            .iter()
            .zip(&views)
            .map(|(&(_, g1, g2), lists)| ListSet { lists, g1, g2 })
            .collect();
        let mut tl = self.timeline(super::timing::wanted())?;
        let out = self.device.list_set_sums(&sets, &mut tl)?;
        report(self.device.nvml_index, &finish(tl)?, parent);
        Ok(out)
    }

    fn resident_words(
        &self,
        key: BasesKey,
        upload: impl FnOnce() -> Result<DeviceBases, GpuError>,
    ) -> Result<Arc<DeviceBases>, GpuError> {
        let mut r = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = r.iter().position(|(k, _)| *k == key) {
            let hit = r.remove(i);
            let d = hit.1.clone();
            r.push(hit);
            return Ok(d);
        }
        if r.len() >= RESIDENT_MAX {
            r.remove(0);
        }
        // The first proof pays this (hundreds of MB per query): a span of its own, so the
        // profile names it instead of leaving a gap at the start of the phase.
        let _s = span!("upload_bases");
        let d = Arc::new(upload()?);
        r.push((key, d.clone()));
        Ok(d)
    }

    /// The device copy if the list (its key) is resident already.
    fn resident_if_known(&self, key: BasesKey) -> Option<Arc<DeviceBases>> {
        let r = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        r.iter().find(|(k, _)| *k == key).map(|(_, d)| d.clone())
    }

    /// Each circuit's tail MSM in group `P` on the device (`msm` given the bases, the
    /// circuit's scalars and their count). A full query is resident already (batch addition
    /// made it so); a split's tail is a copy made for this batch: uploaded once and shared by
    /// the batch's circuits.
    fn tails<P: group::Group>(
        &self,
        key: BasesKey,
        bases_len: usize,
        upload: impl FnOnce() -> Result<DeviceBases, GpuError>,
        scalars: &[Vec<Scalar>],
        msm: impl Fn(&DeviceBases, &[Scalar], usize, &mut Option<GpuTimeline>) -> Result<P, GpuError>,
    ) -> Result<Vec<P>, BackendError> {
        if bases_len == 0 || scalars.is_empty() {
            return Ok(vec![P::identity(); scalars.len()]);
        }
        let parent = SpanHandle::current();
        let d = match self.resident_if_known(key) {
            Some(d) => d,
            None => Arc::new(upload()?),
        };
        let mut tl = self.timeline(super::timing::wanted())?;
        let mut out = Vec::with_capacity(scalars.len());
        for s in scalars {
            out.push(msm(&d, s, s.len().min(d.len), &mut tl)?);
        }
        report(self.device.nvml_index, &finish(tl)?, parent);
        Ok(out)
    }

    fn buffers(&self, log: u32) -> Result<std::sync::MutexGuard<'_, Option<Buffers>>, GpuError> {
        let mut g = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        if g.as_ref().is_none_or(|b| b.log != log) {
            *g = None; // free the old size first
            let n = 1usize << log;
            let d = &self.device;
            *g = Some(Buffers {
                log,
                abc: [d.alloc(n)?, d.alloc(n)?, d.alloc(n)?],
                scratch: d.alloc(n)?,
            });
        }
        Ok(g)
    }

    /// One natural-order transform of `data` (length a power of two) on the device.
    pub fn ntt(&self, op: NttOp, data: &mut [Scalar]) -> Result<(), GpuError> {
        let log = data.len().trailing_zeros();
        let d = &self.device;
        let t = d.size_tables(log)?;
        let s = &d.compute;
        let mut a = d.upload_scalars(data)?;
        let mut out = d.alloc(data.len())?;
        d.transform(s, &mut a, &t, op)?;
        d.bitrev_copy(s, &a, &mut out, log)?;
        d.download_scalars(&out, data)
    }

    /// The H computation of one circuit on the device. Without `msm`, `abc.a` ends up holding
    /// the H coefficients, exactly what `compute_h_cpu` produces; with it, the coefficients
    /// stay on the device and the result is their MSM over those bases (the first n − 1).
    /// Returns the timed operations too.
    pub fn h_one(
        &self,
        domain: &Domain,
        abc: &mut Abc,
        timed: bool,
        msm: Option<&DeviceBases>,
    ) -> Result<(Option<G1Projective>, Vec<TimedOp>), GpuError> {
        self.h_one_via(domain, abc, timed, msm, HostPath::Staged)
    }

    /// [`GpuBackend::h_one`] with a, b, c crossing PCIe by `path`.
    fn h_one_via(
        &self,
        domain: &Domain,
        abc: &mut Abc,
        timed: bool,
        msm: Option<&DeviceBases>,
        path: HostPath,
    ) -> Result<(Option<G1Projective>, Vec<TimedOp>), GpuError> {
        let mut tl = self.timeline(timed)?;
        let p = self.h_one_on(domain, abc, &mut tl, msm, path)?;
        Ok((p, finish(tl)?))
    }

    /// A timeline for one phase's device work when `on` (the probe records).
    fn timeline(&self, on: bool) -> Result<Option<GpuTimeline>, GpuError> {
        start_if(on, &self.device.ctx, &self.device.compute)
    }

    /// [`GpuBackend::h_one`] with its device operations marked on `tl`, resolved by the
    /// caller once the phase's work is done.
    fn h_one_on(
        &self,
        domain: &Domain,
        abc: &mut Abc,
        tl: &mut Option<GpuTimeline>,
        msm: Option<&DeviceBases>,
        path: HostPath,
    ) -> Result<Option<G1Projective>, GpuError> {
        let n = domain.n;
        let log = domain.log;
        abc.pad_to(n).map_err(|_| GpuError::Size(log))?;
        let d = &self.device;
        let t = d.size_tables(log)?;
        let mut guard = self.buffers(log)?;
        let bufs = guard.as_mut().ok_or(GpuError::Size(log))?;
        let (comp, up) = (&d.compute, &d.upload);
        // Page-locking a, b, c in place for one call cost more wall time than the whole H's
        // device work at 2^24 (145–156 ms of wall for 58 ms of device time on the H200 host);
        // the reference path keeps it only to measure that device time. Pooled columns were
        // locked once, when their pool made them: they copy directly, every proof.
        let prelocked = abc.page_locked();
        let register = path == HostPath::LockedInPlace && !prelocked;
        let locked = register || prelocked;
        if register {
            // cuMemHostRegister needs the context current on this thread.
            d.ctx.bind_to_thread().map_err(GpuError::driver)?;
        }
        let mut pins = abc.columns_mut().map(|c| Pinned::new(c, register));
        let names = ["upload_a", "upload_b", "upload_c"];
        let [ba, bb, bc] = &mut bufs.abc;
        for (i, dst) in [&mut *ba, &mut *bb, &mut *bc].into_iter().enumerate() {
            let host = tables::limbs(pins[i].get());
            timed_op(tl, names[i], 1, up, || {
                if locked {
                    up.memcpy_htod(host, &mut *dst).map_err(GpuError::driver)
                } else {
                    d.stager.upload(&d.ctx, up, host, dst)
                }
            })?;
            // The compute stream waits for this upload only; the next upload overlaps.
            let ev = up.record_event(None).map_err(GpuError::driver)?;
            comp.wait(&ev).map_err(GpuError::driver)?;
            let name = ["intt_coset_ntt_a", "intt_coset_ntt_b", "intt_coset_ntt_c"][i];
            timed_op(tl, name, 0, comp, || {
                d.dif(comp, dst, &t, true)?;
                d.scale(comp, dst, log, &t.coset_over_n, true)?;
                d.dit(comp, dst, &t, false)
            })?;
        }
        timed_op(tl, "mul_sub_divide_z", 0, comp, || {
            d.mul_sub_scale(comp, ba, bb, bc, &t)
        })?;
        timed_op(tl, "icoset_ntt", 0, comp, || {
            d.dif(comp, ba, &t, true)?;
            d.scale(comp, ba, log, &t.uncoset_over_n, true)?;
            d.bitrev_copy(comp, ba, &mut bufs.scratch, log)
        })?;
        if let Some(bases) = msm {
            if locked {
                // The copies out of a, b, c must finish before the pins go.
                up.synchronize().map_err(GpuError::driver)?;
            }
            drop(pins);
            let m = (n - 1).min(bases.len);
            let p = d.g1_msm_on(
                MsmBases::Device(bases),
                MsmScalars::Device(&bufs.scratch),
                m,
                MsmPlan::for_len(m),
                tl,
            )?;
            return Ok(Some(p));
        }
        let h = tables::limbs_mut(pins[0].get_mut());
        timed_op(tl, "download_h", 0, comp, || {
            if locked {
                comp.memcpy_dtoh(&bufs.scratch, h)
                    .map_err(GpuError::driver)?;
                comp.synchronize().map_err(GpuError::driver)
            } else {
                d.stager.download(&d.ctx, comp, &bufs.scratch, h)
            }
        })?;
        drop(pins);
        Ok(None)
    }
}

/// Reports device operations as GPU spans under `parent`.
fn report(device: u32, ops: &[TimedOp], parent: SpanHandle) {
    for op in ops {
        crate::probe::gpu_span(device, op.stream, op.name, op.start_ns, op.end_ns, parent);
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn page_locker(&self) -> Option<Arc<dyn PageLocker>> {
        Some(Arc::new(ColumnLocker {
            ctx: self.device.ctx.clone(),
        }))
    }

    fn thread_name(&self) -> String {
        format!("gpu-{}", self.device.nvml_index)
    }

    fn make_resident(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), BackendError> {
        for b in g1.iter().filter(|b| !b.is_empty()) {
            self.resident(b)?;
        }
        for b in g2.iter().filter(|b| !b.is_empty()) {
            self.resident_g2(b)?;
        }
        Ok(())
    }

    fn ntt_msm_h(
        &self,
        domain: &Domain,
        abc: &mut [Abc],
        h_bases: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let parent = SpanHandle::current();
        let bases = self.resident(h_bases)?;
        let mut tl = self.timeline(super::timing::wanted())?;
        let mut out = Vec::with_capacity(abc.len());
        for v in abc.iter_mut() {
            let _s = span!("h_gpu");
            let p = self.h_one_on(domain, v, &mut tl, Some(&bases), HostPath::Staged)?;
            out.push(p.unwrap_or_else(G1Projective::identity));
        }
        report(self.device.nvml_index, &finish(tl)?, parent);
        Ok(out)
    }

    fn batch_add(
        &self,
        bases: &[G1Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let d = self.resident_unless_empty(ones, || self.resident(bases))?;
        Ok(self.list_sets(&[(ones, d.as_deref(), None)])?.remove(0).g1)
    }

    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        let d = self.resident_unless_empty(ones, || self.resident_g2(bases))?;
        Ok(self.list_sets(&[(ones, None, d.as_deref())])?.remove(0).g2)
    }

    fn batch_add_queries(&self, q: &OnesQueries<'_>) -> Result<OnesSums, BackendError> {
        let g1 = |o: &Ones<'_>| self.resident_unless_empty(o.lists, || self.resident(o.bases));
        let (l, a, b) = (g1(&q.l)?, g1(&q.a)?, g1(&q.b)?);
        let b2 = self.resident_unless_empty(q.b.lists, || self.resident_g2(q.b2))?;
        // B first: its lists go up once for both groups, and its G2 sums, the longest, cover
        // the uploads of L's and A's lists.
        let mut sets = self
            .list_sets(&[
                (q.b.lists, b.as_deref(), b2.as_deref()),
                (q.l.lists, l.as_deref(), None),
                (q.a.lists, a.as_deref(), None),
            ])?
            .into_iter();
        let mut next = || sets.next().unwrap_or_default();
        let (b, l, a) = (next(), next(), next());
        Ok(OnesSums {
            l: l.g1,
            a: a.g1,
            b: b.g1,
            b2: b.g2,
        })
    }

    fn tail_msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let key = BasesKey::of(tables::g1_limbs(bases), 12);
        let upload = || self.device.upload_bases(bases);
        self.tails(key, bases.len(), upload, scalars, |d, s, n, tl| {
            let plan = MsmPlan::for_len(n);
            (self.device).g1_msm_on(MsmBases::Device(d), MsmScalars::Host(s), n, plan, tl)
        })
    }

    fn tail_msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        let key = BasesKey::of(super::g2_limbs(bases), 24);
        let upload = || self.device.upload_bases_g2(bases);
        self.tails(key, bases.len(), upload, scalars, |d, s, n, tl| {
            let plan = MsmPlan::for_len_in::<G2Projective>(n);
            self.device.g2_msm_on(d, MsmScalars::Host(s), n, plan, tl)
        })
    }
}

/// A set of host lists and the device bases summed over it in G1 and in G2 (a [`ListSet`]
/// before its lists are viewed as slices).
type HostSet<'a> = (
    &'a [Vec<u32>],
    Option<&'a DeviceBases>,
    Option<&'a DeviceBases>,
);

/// Measurements for `prover gpu-bench`.
pub mod bench {
    use super::*;
    use crate::groth16::column::{Column, ColumnPool};
    use std::time::Instant;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v[v.len() / 2]
    }

    /// Device time (ms, CUDA events) of one transform of 2^log elements already on the device:
    /// median of `reps` after two warm-up runs. `natural_out` adds the bit-reversal copy.
    pub fn ntt(
        gpu: &GpuBackend,
        log: u32,
        op: NttOp,
        natural_out: bool,
        reps: usize,
    ) -> Result<f64, GpuError> {
        let d = &gpu.device;
        let t = d.size_tables(log)?;
        let n = 1usize << log;
        let data: Vec<Scalar> = (0..n).map(|i| Scalar::from(i as u64 * 7 + 1)).collect();
        let mut a = d.upload_scalars(&data)?;
        let mut out = d.alloc(n)?;
        let s = &d.compute;
        let mut times = Vec::new();
        for rep in 0..reps + 2 {
            let tl = GpuTimeline::start(&d.ctx, s)?;
            let m = tl.mark(s)?;
            d.transform(s, &mut a, &t, op)?;
            if natural_out {
                d.bitrev_copy(s, &a, &mut out, log)?;
            }
            let mut tl = tl;
            tl.done("op", 0, s, m)?;
            s.synchronize().map_err(GpuError::driver)?;
            let ops = tl.resolve()?;
            if rep >= 2 {
                times.push(ops[0].ms());
            }
        }
        Ok(median(times))
    }

    /// Host→device and device→host rates of `bytes` from page-locked and from pageable memory,
    /// and the time to page-lock: (pinned up GB/s, pinned down GB/s, pageable up GB/s,
    /// pageable down GB/s, register ms).
    pub fn transfers(gpu: &GpuBackend, log: u32, reps: usize) -> Result<[f64; 5], GpuError> {
        let d = &gpu.device;
        let n = 1usize << log;
        let mut host: Vec<Scalar> = (0..n).map(|i| Scalar::from(i as u64)).collect();
        let mut dev = d.alloc(n)?;
        let bytes = (n * 32) as f64;
        let s = &d.compute;
        let mut time = |host: &mut [Scalar], up: bool| -> Result<f64, GpuError> {
            let mut v = Vec::new();
            for rep in 0..reps + 1 {
                let mut tl = GpuTimeline::start(&d.ctx, s)?;
                let m = tl.mark(s)?;
                if up {
                    s.memcpy_htod(tables::limbs(host), &mut dev)
                        .map_err(GpuError::driver)?;
                } else {
                    s.memcpy_dtoh(&dev, tables::limbs_mut(host))
                        .map_err(GpuError::driver)?;
                }
                tl.done("copy", 0, s, m)?;
                s.synchronize().map_err(GpuError::driver)?;
                if rep > 0 {
                    v.push(bytes / (tl.resolve()?[0].ms() * 1e-3) / 1e9);
                }
            }
            Ok(median(v))
        };
        let page_up = time(&mut host, true)?;
        let page_down = time(&mut host, false)?;
        d.ctx.bind_to_thread().map_err(GpuError::driver)?;
        let t0 = Instant::now();
        let mut pin = Pinned::new(&mut host, true);
        let reg_ms = t0.elapsed().as_secs_f64() * 1e3;
        let pin_up = time(pin.get_mut(), true)?;
        let pin_down = time(pin.get_mut(), false)?;
        drop(pin);
        Ok([pin_up, pin_down, page_up, page_down, reg_ms])
    }

    /// The whole H computation of one circuit, one way across PCIe: wall time and the device
    /// operations of its last run.
    #[derive(Debug, Default)]
    pub struct HRun {
        pub wall_ms: Vec<f64>,
        pub ops: Vec<TimedOp>,
        /// Whether a, b, c were page-locked when the last run began.
        pub page_locked: bool,
    }

    impl HRun {
        pub fn wall(&self) -> f64 {
            median(self.wall_ms.clone())
        }

        /// From the first device operation's start to the last one's end.
        pub fn device_ms(&self) -> f64 {
            let start = self.ops.iter().map(|o| o.start_ns).min().unwrap_or(0);
            let end = self.ops.iter().map(|o| o.end_ns).max().unwrap_or(0);
            end.saturating_sub(start) as f64 / 1e6
        }
    }

    /// How `h` gives a, b, c to the H computation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum HInput {
        /// Fresh heap vectors each run, through the staging buffers (as a proof without a
        /// pool has them).
        Staged,
        /// Fresh heap vectors each run, page-locked in place for the call: the reference whose
        /// device time is what the copies cost at pinned speed.
        LockedInPlace,
        /// Columns of a pool (`prover --dealloc reuse`), page-locked once when made, rewritten
        /// each run as synthesis would.
        Pooled,
    }

    pub const H_INPUTS: [HInput; 3] = [HInput::Staged, HInput::LockedInPlace, HInput::Pooled];

    /// The whole H computation of one circuit of 2^log constraints (a, b, c up, H down), each
    /// way of [`H_INPUTS`] in turn, the order rotated every round, after one unmeasured
    /// round (which also makes the pool's columns). Filling the inputs is outside the timing.
    pub fn h(gpu: &GpuBackend, log: u32, reps: usize) -> Result<[HRun; 3], GpuError> {
        let d = Domain::new(log).map_err(|_| GpuError::Size(log))?;
        let pool = ColumnPool::new(gpu.page_locker());
        let fill = |c: &mut Column| {
            for i in 0..d.n {
                c.push(Scalar::from(i as u64 + 3));
            }
        };
        let mk = |pooled: bool| -> Abc {
            let column = || Column::new_in(pooled.then_some(&pool), d.n);
            let mut abc = Abc {
                a: column(),
                b: column(),
                c: column(),
            };
            abc.columns_mut().into_iter().for_each(fill);
            abc
        };
        let mut runs: [HRun; 3] = Default::default();
        for rep in 0..reps + 1 {
            for k in 0..H_INPUTS.len() {
                let i = (k + rep) % H_INPUTS.len();
                let input = H_INPUTS[i];
                let mut abc = mk(input == HInput::Pooled);
                let path = match input {
                    HInput::LockedInPlace => HostPath::LockedInPlace,
                    HInput::Staged | HInput::Pooled => HostPath::Staged,
                };
                let page_locked = abc.page_locked();
                let t0 = Instant::now();
                let (_, ops) = gpu.h_one_via(&d, &mut abc, true, None, path)?;
                let wall = t0.elapsed().as_secs_f64() * 1e3;
                if rep > 0 {
                    runs[i].wall_ms.push(wall);
                    runs[i].ops = ops;
                    runs[i].page_locked = page_locked;
                }
            }
        }
        Ok(runs)
    }
}
