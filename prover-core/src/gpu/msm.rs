//! Multi-scalar multiplication on the device, in G1 and in G2: the Pippenger passes of
//! `cuda/msm.cu` queued on one stream with no host round trip, then the few per-block window
//! sums combined on the host with blst. Bases may be uploaded per call (overlapped with the scalar sort) or kept
//! resident across calls, as a prover keeps its SRS; scalars may come from the host or already
//! live on the device (the H MSM takes the NTT output in place).

use super::GpuError;
use super::device::{Device, DeviceFr};
use super::group::{Accumulate, MsmGroup};
use super::launch::BUCKET_BLOCKS_PER_SM;
use super::levels::Partials;
use super::tables;
use super::timing::{GpuTimeline, TimedOp, finish, start_if, timed};
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg};
use group::Group;
use std::sync::Arc;

/// How one MSM is cut up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmPlan {
    /// Window width in bits: 2^(c−1) buckets per window (signed digits).
    pub c: u32,
    /// Entries (then partial sums) one thread adds in an accumulation pass.
    pub k: u32,
    /// Blocks per window in the final reduction.
    pub groups: u32,
    /// The affine accumulation's launch shape (G1).
    pub accumulate: Accumulate,
}

impl MsmPlan {
    /// The default for n points of G1: windows of about log2(n) − 4 bits (the bucket
    /// reduction, 2^c per window, stays small beside the n additions per window), at most 16.
    pub fn for_len(n: usize) -> MsmPlan {
        MsmPlan::for_len_in::<G1Projective>(n)
    }

    /// The default for n points of group `P`.
    pub fn for_len_in<P: MsmGroup>(n: usize) -> MsmPlan {
        let log = usize::BITS - n.max(1).leading_zeros();
        MsmPlan::with_c_in::<P>((log as i32 - 4).clamp(4, 16) as u32, 64)
    }

    /// Windows of c bits, runs of k, for G1.
    pub fn with_c(c: u32, k: u32) -> MsmPlan {
        MsmPlan::with_c_in::<G1Projective>(c, k)
    }

    pub fn with_c_in<P: MsmGroup>(c: u32, k: u32) -> MsmPlan {
        let c = c.clamp(2, 20);
        let buckets = 1u32 << (c - 1);
        // Runs of about 32 buckets per reduction thread.
        let groups = buckets.div_ceil(P::REDUCE_THREADS * 32).max(1);
        MsmPlan {
            c,
            k: k.max(2),
            groups,
            accumulate: Accumulate::default(),
        }
    }

    /// The same plan with the affine accumulation launched at `shape`.
    pub fn accumulating(self, shape: Accumulate) -> MsmPlan {
        MsmPlan {
            accumulate: shape,
            ..self
        }
    }

    pub fn windows(&self) -> u32 {
        256u32.div_ceil(self.c)
    }

    pub fn buckets(&self) -> u32 {
        1 << (self.c - 1)
    }

    /// Bucket slots of all windows (magnitude 0 included, never filled).
    pub fn slots(&self) -> u32 {
        self.windows() * (self.buckets() + 1)
    }

    /// Passes over partial sums after the first, for buckets of at most `most` entries (n
    /// for an MSM of n points): each pass divides what a bucket holds by k.
    pub fn levels(&self, most: usize) -> u32 {
        super::levels::levels(most, self.k)
    }
}

/// As `prover gpu-bench` prints a plan.
impl std::fmt::Display for MsmPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "c = {}, k = {}, {} windows, {} accumulation",
            self.c,
            self.k,
            self.windows(),
            self.accumulate
        )
    }
}

/// Σ over windows of 2^(c·w) · (Σ of the window's `groups` parts), Horner from the top window.
/// `parts` holds windows × groups Jacobian points, window-major.
pub fn combine_windows<P: MsmGroup>(parts: &[u64], c: u32, groups: u32) -> P {
    let per_window = groups as usize * P::JAC_WORDS;
    let mut acc = P::identity();
    for w in parts.chunks_exact(per_window).rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        for p in w.chunks_exact(P::JAC_WORDS) {
            acc += P::from_jac(p);
        }
    }
    acc
}

/// Bases uploaded once and kept on the device.
#[derive(Debug)]
pub struct DeviceBases {
    pub len: usize,
    /// 12 u64 per point, blst's affine layout.
    pub words: CudaSlice<u64>,
}

/// The scalars' entries sorted by bucket, and the offsets of every bucket.
struct Sorted {
    sorted: CudaSlice<u32>,
    /// Exclusive prefix sums of the bucket counts (slots + 2 words: total, largest).
    off: CudaSlice<u32>,
    /// Scalars uploaded for this MSM, kept as long as the MSM they were sorted for.
    _scalars: Option<CudaSlice<u64>>,
}

/// Where the bases of an MSM are.
#[derive(Debug, Clone, Copy)]
pub enum MsmBases<'a> {
    /// Host memory, pageable or not: uploaded on the upload stream during the scalar sort,
    /// through the staging buffers.
    Host(&'a [G1Affine]),
    /// Page-locked host memory (12 words a point, blst's affine layout), copied directly on the
    /// upload stream during the scalar sort.
    Pinned(&'a PinnedHostSlice<u64>),
    Device(&'a DeviceBases),
}

/// Where the scalars of an MSM are (Montgomery form, blstrs' layout).
#[derive(Debug, Clone, Copy)]
pub enum MsmScalars<'a> {
    /// Host memory, pageable or not: through the staging buffers.
    Host(&'a [Scalar]),
    /// Page-locked host memory (4 words a scalar), copied directly.
    Pinned(&'a PinnedHostSlice<u64>),
    Device(&'a DeviceFr),
}

impl MsmScalars<'_> {
    /// Scalars held.
    fn len(&self) -> usize {
        match self {
            MsmScalars::Host(v) => v.len(),
            MsmScalars::Pinned(w) => w.len() / 4,
            MsmScalars::Device(d) => d.len() / 4,
        }
    }
}

impl Device {
    /// Copies host words to a new device buffer on `stream` through the staging buffers.
    pub(super) fn upload_staged(
        &self,
        s: &Arc<CudaStream>,
        words: &[u64],
    ) -> Result<CudaSlice<u64>, GpuError> {
        // SAFETY: the staged copy writes every word before any kernel reads the buffer.
        let mut dst = unsafe { s.alloc::<u64>(words.len()) }.map_err(GpuError::driver)?;
        self.stager.upload(&self.ctx, s, words, &mut dst)?;
        Ok(dst)
    }

    /// `words` copied into new page-locked host memory: MSM inputs placed as a prover that keeps
    /// them page-locked would hand them over (`MsmBases::Pinned`, `MsmScalars::Pinned`).
    pub fn pinned_copy(&self, words: &[u64]) -> Result<PinnedHostSlice<u64>, GpuError> {
        // SAFETY: every word is written below before any copy reads it.
        let mut p =
            unsafe { self.ctx.alloc_pinned::<u64>(words.len()) }.map_err(GpuError::driver)?;
        p.as_mut_slice()
            .map_err(GpuError::driver)?
            .copy_from_slice(words);
        Ok(p)
    }

    /// Copies the first `words` of page-locked memory to a new device buffer on `stream`.
    fn upload_pinned(
        &self,
        s: &Arc<CudaStream>,
        src: &PinnedHostSlice<u64>,
        words: usize,
    ) -> Result<CudaSlice<u64>, GpuError> {
        let host = src.as_slice().map_err(GpuError::driver)?;
        let host = host.get(..words).ok_or(GpuError::Size(0))?;
        // SAFETY: the copy writes every word before any kernel reads the buffer.
        let mut dst = unsafe { s.alloc::<u64>(words) }.map_err(GpuError::driver)?;
        s.memcpy_htod(host, &mut dst).map_err(GpuError::driver)?;
        Ok(dst)
    }

    /// Uploads `bases` (pageable or not) on the upload stream, to keep on the device.
    pub fn upload_bases(&self, bases: &[G1Affine]) -> Result<DeviceBases, GpuError> {
        let words = self.upload_staged(&self.upload, tables::g1_limbs(bases))?;
        Ok(DeviceBases {
            len: bases.len(),
            words,
        })
    }

    /// Σ scalars[i]·bases[i] from host memory, transfers included.
    pub fn g1_msm(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, GpuError> {
        let n = bases.len().min(scalars.len());
        let plan = MsmPlan::for_len(n);
        let r = self.g1_msm_with(
            MsmBases::Host(bases),
            MsmScalars::Host(scalars),
            n,
            plan,
            false,
        );
        Ok(r?.0)
    }

    /// Σ scalars[i]·bases[i] with the bases already on the device.
    pub fn g1_msm_resident(
        &self,
        bases: &DeviceBases,
        scalars: &[Scalar],
    ) -> Result<G1Projective, GpuError> {
        let n = bases.len.min(scalars.len());
        let plan = MsmPlan::for_len(n);
        let r = self.g1_msm_with(
            MsmBases::Device(bases),
            MsmScalars::Host(scalars),
            n,
            plan,
            false,
        );
        Ok(r?.0)
    }

    /// Σ scalars[i]·bases[i] for i < n, in any combination of host and device inputs; with
    /// `timed`, the device operations come back on the session clock. Host scalars go up
    /// first and their sort is queued before host bases upload, so the sort runs under the
    /// bases' copy.
    pub fn g1_msm_with(
        &self,
        bases: MsmBases<'_>,
        scalars: MsmScalars<'_>,
        n: usize,
        plan: MsmPlan,
        timed_ops: bool,
    ) -> Result<(G1Projective, Vec<TimedOp>), GpuError> {
        let mut tl = start_if(timed_ops, &self.ctx, &self.compute)?;
        let p = self.g1_msm_on(bases, scalars, n, plan, &mut tl)?;
        Ok((p, finish(tl)?))
    }

    /// [`Device::g1_msm_with`] with its device operations marked on `tl` (resolved by the
    /// caller, once its work is done).
    pub fn g1_msm_on(
        &self,
        bases: MsmBases<'_>,
        scalars: MsmScalars<'_>,
        n: usize,
        plan: MsmPlan,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<G1Projective, GpuError> {
        let n = n
            .min(match bases {
                MsmBases::Host(b) => b.len(),
                MsmBases::Pinned(w) => w.len() / 12,
                MsmBases::Device(b) => b.len,
            })
            .min(scalars.len());
        if n == 0 {
            return Ok(G1Projective::identity());
        }
        let s = &self.compute;
        let sorted = self.sort_scalars(s, scalars, n, &plan, tl)?;
        // Host bases go up on the upload stream while the compute stream sorts the scalars.
        let up = &self.upload;
        let after_upload = |words: CudaSlice<u64>| -> Result<CudaSlice<u64>, GpuError> {
            let ev = up.record_event(None).map_err(GpuError::driver)?;
            s.wait(&ev).map_err(GpuError::driver)?;
            Ok(words)
        };
        let staged;
        let d_bases = match bases {
            MsmBases::Device(b) => &b.words,
            MsmBases::Host(b) => {
                staged = after_upload(timed(tl, "upload_bases", 1, up, || {
                    self.upload_bases(&b[..n]).map(|d| d.words)
                })?)?;
                &staged
            }
            MsmBases::Pinned(w) => {
                staged = after_upload(timed(tl, "upload_bases", 1, up, || {
                    self.upload_pinned(up, w, 12 * n)
                })?)?;
                &staged
            }
        };
        let entries = plan.windows() as usize * n;
        let parts = self.msm_reduce::<G1Projective>(s, d_bases, &sorted, entries, n, &plan, tl)?;
        Ok(combine_windows(&parts, plan.c, plan.groups))
    }

    /// Σ scalars[i]·bases[i] in G2 for i < n, bases on the device (uploaded by
    /// [`Device::upload_bases_g2`]), scalars anywhere; `plan` from [`MsmPlan::for_len_in`] for
    /// G2 (its window reduction runs fewer threads a block). The same passes as G1's.
    pub fn g2_msm_on(
        &self,
        bases: &DeviceBases,
        scalars: MsmScalars<'_>,
        n: usize,
        plan: MsmPlan,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<G2Projective, GpuError> {
        let n = n.min(bases.len).min(scalars.len());
        if n == 0 {
            return Ok(G2Projective::identity());
        }
        let s = &self.compute;
        let sorted = self.sort_scalars(s, scalars, n, &plan, tl)?;
        let entries = plan.windows() as usize * n;
        let parts =
            self.msm_reduce::<G2Projective>(s, &bases.words, &sorted, entries, n, &plan, tl)?;
        Ok(combine_windows(&parts, plan.c, plan.groups))
    }

    /// The first n scalars on the device (host ones uploaded on `s`: pageable through the
    /// staging buffers, page-locked directly), then sorted.
    fn sort_scalars(
        &self,
        s: &Arc<CudaStream>,
        scalars: MsmScalars<'_>,
        n: usize,
        plan: &MsmPlan,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Sorted, GpuError> {
        let uploaded = match scalars {
            MsmScalars::Device(d) => return self.msm_sort(s, d, n, plan, tl),
            MsmScalars::Host(v) => timed(tl, "upload_scalars", 0, s, || {
                self.upload_staged(s, tables::limbs(&v[..n]))
            })?,
            MsmScalars::Pinned(w) => timed(tl, "upload_scalars", 0, s, || {
                self.upload_pinned(s, w, 4 * n)
            })?,
        };
        let mut sorted = self.msm_sort(s, &uploaded, n, plan, tl)?;
        sorted._scalars = Some(uploaded);
        Ok(sorted)
    }

    /// Digits, bucket counts, offsets and the counting sort of the entries.
    fn msm_sort(
        &self,
        s: &Arc<CudaStream>,
        scalars: &DeviceFr,
        n: usize,
        plan: &MsmPlan,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Sorted, GpuError> {
        let (c, windows, m) = (plan.c, plan.windows(), plan.slots());
        let entries = windows as usize * n;
        let n64 = n as u64;
        // SAFETY: every word is written by msm_digits before msm_scatter reads it.
        let mut digits = unsafe { s.alloc::<u32>(entries) }.map_err(GpuError::driver)?;
        let mut counts = s.alloc_zeros::<u32>(m as usize).map_err(GpuError::driver)?;
        timed(tl, "msm_digits", 0, s, || {
            // SAFETY: reads n scalars; writes windows × n digits and counts within m slots.
            unsafe {
                s.launch_builder(&self.kernels.msm_digits)
                    .arg(scalars)
                    .arg(&n64)
                    .arg(&c)
                    .arg(&windows)
                    .arg(&mut digits)
                    .arg(&mut counts)
                    .launch(self.grid.elements(n64))
            }
            .map_err(GpuError::driver)
        })?;
        let mut off = s
            .alloc_zeros::<u32>(m as usize + 2)
            .map_err(GpuError::driver)?;
        // SAFETY: the scatter writes each of the entries (at most windows × n) once.
        let mut sorted = unsafe { s.alloc::<u32>(entries) }.map_err(GpuError::driver)?;
        timed(tl, "msm_sort", 0, s, || {
            self.scan(s, &counts, &mut off, m, 1, false)?;
            // The scatter's running positions start at the offsets (counts' buffer reused).
            let mut cursor = counts;
            s.memcpy_dtod(&off.slice(..m as usize), &mut cursor)
                .map_err(GpuError::driver)?;
            // SAFETY: reads windows × n digits; positions come from `cursor`, within the
            // offsets, so every write lands below the total.
            unsafe {
                s.launch_builder(&self.kernels.msm_scatter)
                    .arg(&digits)
                    .arg(&n64)
                    .arg(&c)
                    .arg(&windows)
                    .arg(&mut cursor)
                    .arg(&mut sorted)
                    .launch(self.grid.elements(n64))
            }
            .map_err(GpuError::driver)
        })?;
        Ok(Sorted {
            sorted,
            off,
            _scalars: None,
        })
    }

    /// Bucket sums by passes of k and the window reduction, for at most `entries` sorted
    /// entries and at most `most` in one bucket; returns the windows × groups Jacobian points
    /// for `combine_windows`.
    #[allow(clippy::too_many_arguments)]
    fn msm_reduce<P: MsmGroup>(
        &self,
        s: &Arc<CudaStream>,
        bases: &CudaSlice<u64>,
        sorted: &Sorted,
        entries: usize,
        most: usize,
        plan: &MsmPlan,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Vec<u64>, GpuError> {
        let (k, m) = (plan.k, plan.slots());
        let mu = m as usize;
        let kernels = P::kernels(&self.kernels, plan.accumulate);
        let affine_threads = kernels.affine_threads;
        // Upper bounds of what each pass produces: ⌈count/k⌉ summed ≤ total/k + slots.
        let bound = entries.div_ceil(k as usize) + mu;
        let mut off_cur = s.alloc_zeros::<u32>(mu + 2).map_err(GpuError::driver)?;
        // SAFETY: the pass writes items [0, off_cur[m]) before anything reads them.
        let mut items =
            unsafe { s.alloc::<u64>(bound * P::XYZZ_WORDS) }.map_err(GpuError::driver)?;
        timed(tl, "msm_buckets_affine", 0, s, || {
            self.scan(s, &sorted.off, &mut off_cur, m, k, true)?;
            // SAFETY: reads entries within sorted.off's ranges, bases by index < n; writes
            // items below off_cur[m] ≤ bound.
            unsafe {
                s.launch_builder(kernels.accumulate_affine)
                    .arg(bases)
                    .arg(&sorted.sorted)
                    .arg(&sorted.off)
                    .arg(&off_cur)
                    .arg(&m)
                    .arg(&k)
                    .arg(&mut items)
                    .launch(
                        self.grid
                            .items(bound as u64, affine_threads, BUCKET_BLOCKS_PER_SM),
                    )
            }
            .map_err(GpuError::driver)
        })?;
        let first = Partials {
            items,
            off: off_cur,
            bound,
        };
        let Partials {
            items,
            off: off_cur,
            ..
        } = self.reduce_levels::<P>(
            s,
            kernels.accumulate_xyzz,
            first,
            m,
            k,
            plan.levels(most),
            "msm_buckets_xyzz",
            tl,
        )?;
        let parts_len = (plan.windows() * plan.groups) as usize * P::JAC_WORDS;
        // SAFETY: every block writes its one point.
        let mut parts = unsafe { s.alloc::<u64>(parts_len) }.map_err(GpuError::driver)?;
        let c = plan.c;
        timed(tl, "msm_windows", 0, s, || {
            // SAFETY: reads one item per non-empty bucket through off_cur (each bucket now
            // holds at most one); writes windows × groups points.
            unsafe {
                s.launch_builder(kernels.window_reduce)
                    .arg(&items)
                    .arg(&off_cur)
                    .arg(&c)
                    .arg(&mut parts)
                    .launch(LaunchConfig {
                        grid_dim: (plan.groups, plan.windows(), 1),
                        block_dim: (P::REDUCE_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    })
            }
            .map_err(GpuError::driver)
        })?;
        let host = s.clone_dtoh(&parts).map_err(GpuError::driver)?;
        s.synchronize().map_err(GpuError::driver)?;
        Ok(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_the_scalar_and_shrink_buckets_to_one() {
        for n in [1usize, 2, 1000, 1 << 16, 1 << 20, 1 << 24, 1 << 26] {
            let p = MsmPlan::for_len(n);
            assert!(p.windows() * p.c >= 256, "{p:?}");
            assert!(
                p.groups * G1Projective::REDUCE_THREADS * 32 >= p.buckets(),
                "{p:?}"
            );
            let g2 = MsmPlan::for_len_in::<G2Projective>(n);
            assert!(
                g2.groups * G2Projective::REDUCE_THREADS * 32 >= g2.buckets(),
                "{g2:?}"
            );
            // After the first pass a bucket holds ⌈n/k⌉ sums at most; `levels` more passes
            // must bring that to one.
            let mut cap = n.div_ceil(p.k as usize);
            for _ in 0..p.levels(n) {
                cap = cap.div_ceil(p.k as usize);
            }
            assert!(cap <= 1, "n = {n}: {p:?}");
        }
        assert_eq!(MsmPlan::for_len(1 << 24).accumulate, Accumulate::Narrow);
        let wide = MsmPlan::for_len(1 << 24).accumulating(Accumulate::Wide);
        assert_eq!(
            wide.to_string(),
            "c = 16, k = 64, 16 windows, wide accumulation"
        );
        assert_eq!(format!("{:>6}", Accumulate::Wide), "  wide");
        assert_eq!(MsmPlan::for_len(1 << 24).c, 16);
        assert_eq!(MsmPlan::for_len(1 << 24).levels(1 << 24), 3);
    }
}
