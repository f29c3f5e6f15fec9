//! Transfers between pageable host memory and the device at page-locked speed: a ring of
//! page-locked staging buffers, made once per device and reused by every proof; on the way up the host
//! fills one (with the fill threads) while the copy engine drains the others, on the way down
//! the copy engine fills the others while the host empties one.
//! The driver's own path for pageable memory stages through a small buffer on one thread and
//! reached 8–14 GB/s on the H200 host; registering the caller's memory in place costs ~50 ms
//! per GB before the first byte moves.

use super::GpuError;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};

/// Words (u64) per staging buffer: 64 MiB.
const STAGE_WORDS: usize = 8 << 20;
/// Buffers in the ring: copies of the others are in flight while the host fills (or empties)
/// one. Four of 16 MiB did no better than two of 64 MiB on the H200 host (whole H at 2^24:
/// 73.6 ms of wall for 58.0 ms of device time, against 69.6 for 57.1 on an earlier lease): the
/// fill threads' copy, not the pipeline's depth, sets the pace (35–43 GB/s).
const STAGE_BUFFERS: usize = 2;

struct Buffer {
    host: PinnedHostSlice<u64>,
    /// Recorded after the last copy out of this buffer; the host waits on it before refilling.
    drained: Option<CudaEvent>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // A copy may still read the buffer: wait for it before the memory is freed.
        if let Some(ev) = self.drained.take() {
            let _ = ev.synchronize();
        }
    }
}

/// Threads that fill the staging buffers, at most. Four reached only 15 GB/s on the H200 host
/// (a 2^24 MSM's bases took 110 ms to upload instead of 36); sixteen kept up with the copy
/// engine there (44 GB/s) when they were rayon's. They sleep between uploads.
const FILL_THREADS: usize = 16;

/// The staging buffers of one device and the threads that fill them, made on first use.
pub struct Stager {
    /// The device's NVML index, for the fill threads' names (as `gpu-<i>` has it).
    device: u32,
    buffers: Mutex<Vec<Buffer>>,
    fill: OnceLock<Option<rayon::ThreadPool>>,
}

impl std::fmt::Debug for Stager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stager").finish_non_exhaustive()
    }
}

impl Stager {
    pub fn new(device: u32) -> Stager {
        Stager {
            device,
            buffers: Mutex::new(Vec::new()),
            fill: OnceLock::new(),
        }
    }

    /// The fill pool, or `None` when no thread could be started (the fill then runs on the
    /// calling thread: slower, never wrong).
    fn fill_pool(&self) -> Option<&rayon::ThreadPool> {
        let device = self.device;
        self.fill
            .get_or_init(|| {
                let threads = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(FILL_THREADS);
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(move |j| format!("stage-{device}-{j}"))
                    .build()
                    .map_err(|e| {
                        crate::errln!(
                            "warning: GPU {device}: no staging threads ({e}); filling on the caller"
                        )
                    })
                    .ok()
            })
            .as_ref()
    }

    /// The ring's buffers, made on first use.
    fn buffers(
        &self,
        ctx: &Arc<CudaContext>,
    ) -> Result<std::sync::MutexGuard<'_, Vec<Buffer>>, GpuError> {
        let mut bufs = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        while bufs.len() < STAGE_BUFFERS {
            // SAFETY: the buffer is only read by copies after the host has filled it, and only
            // read by the host after a copy into it has completed.
            let host = unsafe { ctx.alloc_pinned::<u64>(STAGE_WORDS) }.map_err(GpuError::driver)?;
            bufs.push(Buffer {
                host,
                drained: None,
            });
        }
        Ok(bufs)
    }

    /// `dst.copy_from_slice(src)` on the fill threads (page-sized pieces each).
    fn copy(&self, dst: &mut [u64], src: &[u64]) {
        let fill = || {
            dst.par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s))
        };
        match self.fill_pool() {
            Some(pool) => pool.install(fill),
            None => dst.copy_from_slice(src),
        }
    }

    /// Copies `src[..dst.len()]` from the device into `dst` on `stream`, after the work queued
    /// on `stream` before it. Returns when every word has arrived.
    pub fn download(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<u64>,
        dst: &mut [u64],
    ) -> Result<(), GpuError> {
        if dst.len() > src.len() {
            return Err(GpuError::Driver(format!(
                "staged download of {} words from a buffer of {}",
                dst.len(),
                src.len()
            )));
        }
        let mut bufs = self.buffers(ctx)?;
        let chunks: Vec<&mut [u64]> = dst.chunks_mut(STAGE_WORDS).collect();
        // Queue chunk i into buffer i % N once the host has emptied that buffer of chunk i − N;
        // N copies are in flight while the host empties the oldest.
        let queue = |bufs: &mut Vec<Buffer>, i: usize, len: usize| -> Result<(), GpuError> {
            let buf = &mut bufs[i % STAGE_BUFFERS];
            let at = i * STAGE_WORDS;
            let host = buf.host.as_mut_slice().map_err(GpuError::driver)?;
            // The destination is page-locked, so this copy is asynchronous; the host reads the
            // buffer only after `drained` (here: filled) has completed.
            stream
                .memcpy_dtoh(&src.slice(at..at + len), &mut host[..len])
                .map_err(GpuError::driver)?;
            buf.drained = Some(stream.record_event(None).map_err(GpuError::driver)?);
            Ok(())
        };
        let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        for (i, &len) in lens.iter().enumerate().take(STAGE_BUFFERS) {
            queue(&mut bufs, i, len)?;
        }
        for (i, out) in chunks.into_iter().enumerate() {
            let buf = &mut bufs[i % STAGE_BUFFERS];
            if let Some(ev) = buf.drained.take() {
                ev.synchronize().map_err(GpuError::driver)?;
            }
            let host = buf.host.as_slice().map_err(GpuError::driver)?;
            let len = out.len();
            self.copy(out, &host[..len]);
            if let Some(&next) = lens.get(i + STAGE_BUFFERS) {
                queue(&mut bufs, i + STAGE_BUFFERS, next)?;
            }
        }
        Ok(())
    }

    /// Copies `src` into `dst[..src.len()]` on `stream`. Returns when the last chunk is queued;
    /// the copies complete in stream order, so later work on `stream` sees the data.
    pub fn upload(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        src: &[u64],
        dst: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        if src.len() > dst.len() {
            return Err(GpuError::Driver(format!(
                "staged upload of {} words into a buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        let mut bufs = self.buffers(ctx)?;
        for (i, chunk) in src.chunks(STAGE_WORDS).enumerate() {
            let buf = &mut bufs[i % STAGE_BUFFERS];
            if let Some(ev) = buf.drained.take() {
                ev.synchronize().map_err(GpuError::driver)?;
            }
            let host = buf.host.as_mut_slice().map_err(GpuError::driver)?;
            let staged = &mut host[..chunk.len()];
            self.copy(staged, chunk);
            let at = i * STAGE_WORDS;
            let mut view = dst.slice_mut(at..at + chunk.len());
            // The source is page-locked, so this copy is asynchronous; the buffer is not
            // touched again until `drained` has completed.
            stream
                .memcpy_htod(&*staged, &mut view)
                .map_err(GpuError::driver)?;
            buf.drained = Some(stream.record_event(None).map_err(GpuError::driver)?);
        }
        Ok(())
    }
}
