//! Batch addition on the device: for each list of indices, Σ bases[i] — the "ones" of the L, A
//! and B queries (G1) and of B's G2 query. All lists of one query go up at once, one bucket
//! each, through the MSM's accumulation kernels (`cuda/msm.cu`: runs of K points a thread,
//! repeated until one sum per bucket), and leave as one Jacobian point per list; a batch of
//! circuits costs one upload and a few launches per query, not one MSM per circuit.

use super::GpuError;
use super::device::Device;
use super::group::{Accumulate, MsmGroup};
use super::launch::BUCKET_BLOCKS_PER_SM;
use super::layout::g2_limbs;
use super::levels::{Partials, levels};
use super::msm::DeviceBases;
use super::timing::{GpuTimeline, timed};
use blstrs::{G1Projective, G2Affine, G2Projective};
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use std::sync::Arc;

/// Points (then partial sums) one thread adds in an accumulation pass.
const K: u32 = 32;

/// One set of index lists and the device bases summed over it: B's G1 and G2 queries share
/// their lists (one upload for both), L and A each sum theirs in G1.
#[derive(Debug, Clone, Copy)]
pub struct ListSet<'a> {
    pub lists: &'a [&'a [u32]],
    pub g1: Option<&'a DeviceBases>,
    pub g2: Option<&'a DeviceBases>,
}

/// A [`ListSet`]'s sums, one a list in each group: the identity for every list where nothing
/// was summed (every list empty, or the set names no bases in that group).
#[derive(Debug, Default)]
pub struct SetSums {
    pub g1: Vec<G1Projective>,
    pub g2: Vec<G2Projective>,
}

/// One group's sums queued on the compute stream (Jacobian points, one a list), read back
/// after the last set.
type Queued = CudaSlice<u64>;

impl Device {
    /// For each list, the sum of the G1 `bases` at its indices.
    pub fn g1_list_sums(
        &self,
        bases: &DeviceBases,
        lists: &[&[u32]],
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Vec<G1Projective>, GpuError> {
        let set = ListSet {
            lists,
            g1: Some(bases),
            g2: None,
        };
        Ok(self.list_set_sums(&[set], tl)?.remove(0).g1)
    }

    /// For each list, the sum of the G2 `bases` (uploaded by [`Device::upload_bases_g2`]) at
    /// its indices.
    pub fn g2_list_sums(
        &self,
        bases: &DeviceBases,
        lists: &[&[u32]],
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Vec<G2Projective>, GpuError> {
        let set = ListSet {
            lists,
            g1: None,
            g2: Some(bases),
        };
        Ok(self.list_set_sums(&[set], tl)?.remove(0).g2)
    }

    /// Uploads G2 bases (pageable or not) on the upload stream, to keep on the device.
    pub fn upload_bases_g2(&self, bases: &[G2Affine]) -> Result<DeviceBases, GpuError> {
        Ok(DeviceBases {
            len: bases.len(),
            words: self.upload_staged(&self.upload, g2_limbs(bases))?,
        })
    }

    /// Every set's sums, in order. Each set's lists go up once, on the upload stream, while the
    /// compute stream sums the set before them; the host waits once, at the end. One query at a
    /// time, with the lists on the compute stream, the uploads (26.6 ms at 2^24 × 4 of
    /// supraseal's witness on the H200 host, 2026-12-05) stood between the sums.
    pub fn list_set_sums(
        &self,
        sets: &[ListSet<'_>],
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Vec<SetSums>, GpuError> {
        let mut queued = Vec::with_capacity(sets.len());
        for set in sets {
            queued.push(self.queue_set(set, tl)?);
        }
        let s = &self.compute;
        let read = |q: Option<Queued>| -> Result<Vec<u64>, GpuError> {
            q.map_or(Ok(Vec::new()), |q| {
                s.clone_dtoh(&q).map_err(GpuError::driver)
            })
        };
        let mut words = Vec::with_capacity(sets.len());
        for (g1, g2) in queued {
            words.push((read(g1)?, read(g2)?));
        }
        s.synchronize().map_err(GpuError::driver)?;
        Ok(sets
            .iter()
            .zip(words)
            .map(|(set, (w1, w2))| SetSums {
                g1: points(set.lists.len(), &w1),
                g2: points(set.lists.len(), &w2),
            })
            .collect())
    }

    /// Uploads one set's lists (checked against its bases) and queues its sums in each group.
    fn queue_set(
        &self,
        set: &ListSet<'_>,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<(Option<Queued>, Option<Queued>), GpuError> {
        let len = [set.g1, set.g2]
            .iter()
            .flatten()
            .map(|b| b.len)
            .min()
            .unwrap_or(0);
        let total: usize = set.lists.iter().map(|l| l.len()).sum();
        if total == 0 || (set.g1.is_none() && set.g2.is_none()) {
            return Ok((None, None));
        }
        if total > (u32::MAX >> 1) as usize {
            return Err(GpuError::Driver(format!(
                "batch addition of {total} points: offsets are 31-bit"
            )));
        }
        let up = &self.upload;
        let (entries, off) = timed(tl, "upload_ones", 1, up, || {
            self.upload_lists(up, set.lists, len)
        })?;
        // The compute stream waits for these lists only; the next set's go up meanwhile.
        let ev = up.record_event(None).map_err(GpuError::driver)?;
        self.compute.wait(&ev).map_err(GpuError::driver)?;
        let g2 = set
            .g2
            .map(|b| self.queue_sums::<G2Projective>(b, set.lists, &entries, &off, tl))
            .transpose()?;
        let g1 = set
            .g1
            .map(|b| self.queue_sums::<G1Projective>(b, set.lists, &entries, &off, tl))
            .transpose()?;
        // `entries` and `off` are freed as this returns, their sums still queued: the context
        // runs two streams with event tracking, so cudarc orders each free after the compute
        // stream's reads (`CudaSlice`'s drop waits on its last read event).
        Ok((g1, g2))
    }

    /// Queues the lists' sums in group `P` on the compute stream, one a list, without waiting.
    fn queue_sums<P: MsmGroup>(
        &self,
        bases: &DeviceBases,
        lists: &[&[u32]],
        entries: &CudaSlice<u32>,
        off: &CudaSlice<u32>,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Queued, GpuError> {
        let m = lists.len() as u32;
        let total: usize = lists.iter().map(|l| l.len()).sum();
        let most = lists.iter().map(|l| l.len()).max().unwrap_or(0);
        let s = &self.compute;
        // The shape batch addition was measured with (2026-12-04, and at ptxas -O1 on
        // 2026-12-05), which is also the MSM's default since.
        let kernels = P::kernels(&self.kernels, Accumulate::Narrow);
        // Upper bounds of what each pass produces: ⌈count/K⌉ summed ≤ total/K + lists.
        let bound = total.div_ceil(K as usize) + lists.len();
        let mut off_cur = s
            .alloc_zeros::<u32>(lists.len() + 2)
            .map_err(GpuError::driver)?;
        // SAFETY: the pass writes items [0, off_cur[m]) before anything reads them.
        let mut items =
            unsafe { s.alloc::<u64>(bound * P::XYZZ_WORDS) }.map_err(GpuError::driver)?;
        timed(tl, P::SUMS_PASSES[0], 0, s, || {
            self.scan(s, off, &mut off_cur, m, K, true)?;
            // SAFETY: reads entries within off's ranges and bases by index < len (checked
            // as they went up); writes items below off_cur[m] ≤ bound.
            unsafe {
                s.launch_builder(kernels.accumulate_affine)
                    .arg(&bases.words)
                    .arg(entries)
                    .arg(off)
                    .arg(&off_cur)
                    .arg(&m)
                    .arg(&K)
                    .arg(&mut items)
                    .launch(self.grid.items(
                        bound as u64,
                        kernels.affine_threads,
                        BUCKET_BLOCKS_PER_SM,
                    ))
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
            K,
            levels(most, K),
            P::SUMS_PASSES[1],
            tl,
        )?;
        // SAFETY: the kernel writes every list's point.
        let mut out =
            unsafe { s.alloc::<u64>(lists.len() * P::JAC_WORDS) }.map_err(GpuError::driver)?;
        // SAFETY: each bucket now holds at most one item at off_cur[b]; writes m points.
        unsafe {
            s.launch_builder(kernels.sums_to_jac)
                .arg(&items)
                .arg(&off_cur)
                .arg(&m)
                .arg(&mut out)
                .launch(
                    self.grid
                        .items(lists.len() as u64, 64, BUCKET_BLOCKS_PER_SM),
                )
        }
        .map_err(GpuError::driver)?;
        Ok(out)
    }
}

/// A group's points read back (`m` of them), or `m` identities where the set queued none.
fn points<P: MsmGroup>(m: usize, words: &[u64]) -> Vec<P> {
    if words.is_empty() {
        return vec![P::identity(); m];
    }
    words.chunks_exact(P::JAC_WORDS).map(P::from_jac).collect()
}

impl Device {
    /// The lists, end to end, checked against bases of `len` points as they go up, and their
    /// offsets (lists + 2 words: the scan's layout, total then a word it writes). The lists go
    /// up through the staging buffers: from pageable memory one list at a time they took
    /// 21–25 ms of the 88–91 ms batch addition of supraseal's witness at 4 × 2^22 on the H200
    /// host (2026-12-05).
    fn upload_lists(
        &self,
        s: &Arc<CudaStream>,
        lists: &[&[u32]],
        len: usize,
    ) -> Result<(CudaSlice<u32>, CudaSlice<u32>), GpuError> {
        let total: usize = lists.iter().map(|l| l.len()).sum();
        // SAFETY: every word is written by the staged copy below before a kernel reads it.
        let mut entries = unsafe { s.alloc::<u32>(total) }.map_err(GpuError::driver)?;
        self.stager
            .upload_indices(&self.ctx, s, lists, &mut entries, len)?;
        let mut off = Vec::with_capacity(lists.len() + 2);
        let mut at = 0u32;
        for l in lists {
            off.push(at);
            at += l.len() as u32;
        }
        off.push(at);
        off.push(at);
        let off = s.clone_htod(&off).map_err(GpuError::driver)?;
        Ok((entries, off))
    }
}
