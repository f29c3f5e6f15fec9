//! The passes every Pippenger reduction shares (the MSM's buckets and batch addition's lists):
//! the offsets scan, and the XYZZ passes that add runs of k partial sums a thread until one
//! sum is left a bucket — written once for both.

use super::GpuError;
use super::device::Device;
use super::group::MsmGroup;
use super::launch::BUCKET_BLOCKS_PER_SM;
use super::timing::{GpuTimeline, timed};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Passes over partial sums after the first accumulation, for buckets (or batch addition's
/// lists) of at most `most` entries summed by runs of `k`: each pass divides by k.
pub(super) fn levels(most: usize, k: u32) -> u32 {
    let mut cap = most.div_ceil(k as usize);
    let mut l = 0;
    while cap > 1 {
        cap = cap.div_ceil(k as usize);
        l += 1;
    }
    l
}

/// A reduction's partial sums: XYZZ items, their per-bucket offsets (buckets + 2 words: the
/// scan's layout), and an upper bound of how many there are.
#[derive(Debug)]
pub(super) struct Partials {
    pub items: CudaSlice<u64>,
    pub off: CudaSlice<u32>,
    pub bound: usize,
}

impl Device {
    /// The offsets scan: bucket counts (or a pass's offsets, each count divided by `div`)
    /// to exclusive offsets, total and largest.
    pub(super) fn scan(
        &self,
        s: &Arc<CudaStream>,
        input: &CudaSlice<u32>,
        out: &mut CudaSlice<u32>,
        m: u32,
        div: u32,
        from_offsets: bool,
    ) -> Result<(), GpuError> {
        let from = from_offsets as u32;
        // SAFETY: `input` holds m (counts) or m + 1 (offsets) words, `out` m + 2; one block
        // of 1024 threads as the kernel requires.
        unsafe {
            s.launch_builder(&self.kernels.msm_scan)
                .arg(input)
                .arg(out)
                .arg(&m)
                .arg(&div)
                .arg(&from)
                .launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                })
        }
        .map_err(GpuError::driver)?;
        Ok(())
    }

    /// The XYZZ passes after the first accumulation: `passes` times, runs of `k` partial sums
    /// a thread over `m` buckets, each pass timed as `name`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reduce_levels<P: MsmGroup>(
        &self,
        s: &Arc<CudaStream>,
        accumulate_xyzz: &CudaFunction,
        mut p: Partials,
        m: u32,
        k: u32,
        passes: u32,
        name: &'static str,
        tl: &mut Option<GpuTimeline>,
    ) -> Result<Partials, GpuError> {
        let buckets = m as usize;
        for _ in 0..passes {
            // ⌈count/k⌉ summed over the buckets ≤ total/k + buckets.
            let bound = p.bound.div_ceil(k as usize) + buckets;
            let mut off = s
                .alloc_zeros::<u32>(buckets + 2)
                .map_err(GpuError::driver)?;
            // SAFETY: written below off[m] ≤ bound before being read.
            let mut items =
                unsafe { s.alloc::<u64>(bound * P::XYZZ_WORDS) }.map_err(GpuError::driver)?;
            timed(tl, name, 0, s, || {
                self.scan(s, &p.off, &mut off, m, k, true)?;
                // SAFETY: reads items within p.off's ranges; writes below off[m].
                unsafe {
                    s.launch_builder(accumulate_xyzz)
                        .arg(&p.items)
                        .arg(&p.off)
                        .arg(&off)
                        .arg(&m)
                        .arg(&k)
                        .arg(&mut items)
                        .launch(self.grid.items(
                            bound as u64,
                            P::ACCUMULATE_THREADS,
                            BUCKET_BLOCKS_PER_SM,
                        ))
                }
                .map_err(GpuError::driver)
            })?;
            p = Partials { items, off, bound };
        }
        Ok(p)
    }
}
