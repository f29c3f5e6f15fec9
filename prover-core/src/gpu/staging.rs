//! Transfers between pageable host memory and the device at page-locked speed: a ring of
//! page-locked staging buffers, made once per device and reused by every proof; on the way up the host
//! fills one (with the fill threads) while the copy engine drains the others, on the way down
//! the copy engine fills the others while the host empties one.
//! The driver's own path for pageable memory stages through a small buffer on one thread and
//! reached 8–14 GB/s on the H200 host; registering the caller's memory in place costs ~50 ms
//! per GB before the first byte moves.

use super::GpuError;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};

/// Words (u64) per staging buffer: 64 MiB.
const STAGE_WORDS: usize = 8 << 20;
/// Buffers in the ring: copies of the others are in flight while the host fills (or empties)
/// one. Four of 16 MiB did no better than two of 64 MiB on the H200 host (whole H at 2^24:
/// 73.6 ms of wall for 58.0 ms of device time, against 69.6 for 57.1 on an earlier lease): the
/// fill threads' copy, not the pipeline's depth, sets the pace (35–43 GB/s).
const STAGE_BUFFERS: usize = 2;

/// What goes up through the staging buffers: plain words of 4 or 8 bytes (bases and scalars
/// as u64 limbs, batch addition's index lists as u32), so a buffer of u64s holds a whole number
/// of them, aligned. Sealed: only the two widths below.
pub trait Word: DeviceRepr + Copy + Send + Sync + sealed::Sealed {}
impl Word for u32 {}
impl Word for u64 {}
mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A staging buffer's u64s seen as `T`s.
fn as_words<T: Word>(host: &mut [u64]) -> &mut [T] {
    let len = std::mem::size_of_val(host) / std::mem::size_of::<T>();
    // SAFETY: `T` is u32 or u64 (sealed): alignment ≤ u64's, size divides 8, every bit
    // pattern valid; the slice covers exactly the bytes of `host`, borrowed mutably for as long.
    unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr().cast::<T>(), len) }
}

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

    /// `dst.copy_from_slice(src)` on the fill threads (512 KiB pieces each).
    fn copy<T: Word>(&self, dst: &mut [T], src: &[T]) {
        self.fill_pieces(dst, src, |d, s| {
            d.copy_from_slice(s);
            None::<()>
        });
    }

    /// [`Stager::copy`] of index words, returning the largest (`None` when empty).
    fn copy_max(&self, dst: &mut [u32], src: &[u32]) -> Option<u32> {
        self.fill_pieces(dst, src, copy_and_max)
    }

    /// `fill(dst piece, src piece)` over 512 KiB pieces on the fill threads (on the whole slices,
    /// on the caller, without them), and the largest of what the pieces returned.
    fn fill_pieces<T: Word, R: Ord + Send>(
        &self,
        dst: &mut [T],
        src: &[T],
        fill: impl Fn(&mut [T], &[T]) -> Option<R> + Sync + Send,
    ) -> Option<R> {
        let piece = (512 << 10) / std::mem::size_of::<T>();
        let on_pieces = || {
            dst.par_chunks_mut(piece)
                .zip(src.par_chunks(piece))
                .filter_map(|(d, s)| fill(d, s))
                .max()
        };
        match self.fill_pool() {
            Some(pool) => pool.install(on_pieces),
            None => fill(dst, src),
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
    pub fn upload<T: Word>(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        src: &[T],
        dst: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        self.upload_parts(ctx, stream, &[src], dst)
    }

    /// Copies `parts`, end to end, into the start of `dst` on `stream`, as [`Stager::upload`]
    /// does one slice: the parts share the staging buffers, so many short ones still move in
    /// buffer-sized copies while the host fills the next.
    pub fn upload_parts<T: Word>(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        parts: &[&[T]],
        dst: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        self.stage_parts(ctx, stream, parts, dst, |d, s| {
            self.copy(d, s);
            Ok(())
        })
    }

    /// [`Stager::upload_parts`] for index lists into bases of `len` points: the fill threads
    /// check every index as they copy it, and the first past the bases is an error before its
    /// buffer is queued (nothing has read the device copy then). A separate scan of the lists
    /// on the host read every index a second time: 480 MB a batch at 2^24 × 4.
    pub fn upload_indices(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        lists: &[&[u32]],
        dst: &mut CudaSlice<u32>,
        len: usize,
    ) -> Result<(), GpuError> {
        self.stage_parts(ctx, stream, lists, dst, |d, s| match self.copy_max(d, s) {
            Some(most) if most as usize >= len => Err(GpuError::Driver(format!(
                "batch addition index {most} past {len} bases"
            ))),
            _ => Ok(()),
        })
    }

    /// The staged copy of `parts`, each piece filled by `fill(staged, piece)`.
    fn stage_parts<T: Word>(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        parts: &[&[T]],
        dst: &mut CudaSlice<T>,
        fill: impl Fn(&mut [T], &[T]) -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total > dst.len() {
            return Err(GpuError::Driver(format!(
                "staged upload of {total} words into a buffer of {}",
                dst.len()
            )));
        }
        let per_buffer = STAGE_WORDS * 8 / std::mem::size_of::<T>();
        let mut bufs = self.buffers(ctx)?;
        let mut rest = Pieces::new(parts);
        for (i, at) in (0..total).step_by(per_buffer).enumerate() {
            let len = per_buffer.min(total - at);
            let buf = &mut bufs[i % STAGE_BUFFERS];
            if let Some(ev) = buf.drained.take() {
                ev.synchronize().map_err(GpuError::driver)?;
            }
            let host = buf.host.as_mut_slice().map_err(GpuError::driver)?;
            let staged = &mut as_words::<T>(host)[..len];
            let mut filled = 0;
            while filled < len {
                let piece = rest.take(len - filled);
                if piece.is_empty() {
                    // Cannot happen: the parts hold `total` words. Never spin on it.
                    return Err(GpuError::Driver(
                        "staged upload: the parts ended early".into(),
                    ));
                }
                fill(&mut staged[filled..filled + piece.len()], piece)?;
                filled += piece.len();
            }
            let mut view = dst.slice_mut(at..at + len);
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

/// `dst.copy_from_slice(src)`, returning the largest word copied (`None` when empty): one pass
/// over the words, which the compiler vectorises.
fn copy_and_max(dst: &mut [u32], src: &[u32]) -> Option<u32> {
    let most = dst.iter_mut().zip(src).fold(0u32, |m, (d, &s)| {
        *d = s;
        m.max(s)
    });
    (!src.is_empty()).then_some(most)
}

/// What is left of a list of slices, handed out front to back in pieces of at most a length.
struct Pieces<'a, T> {
    parts: std::slice::Iter<'a, &'a [T]>,
    current: &'a [T],
}

impl<'a, T> Pieces<'a, T> {
    fn new(parts: &'a [&'a [T]]) -> Self {
        Pieces {
            parts: parts.iter(),
            current: &[],
        }
    }

    /// The next at most `most` items (fewer at a part's end; empty once all are taken).
    fn take(&mut self, most: usize) -> &'a [T] {
        while self.current.is_empty() {
            match self.parts.next() {
                Some(p) => self.current = p,
                None => return &[],
            }
        }
        let (head, tail) = self.current.split_at(most.min(self.current.len()));
        self.current = tail;
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_parts_in_order_within_the_bound() {
        let a = [1u32, 2, 3];
        let b: [u32; 0] = [];
        let c = [4u32, 5, 6, 7, 8];
        let parts: [&[u32]; 3] = [&a, &b, &c];
        let mut rest = Pieces::new(&parts);
        let mut seen = Vec::new();
        loop {
            let p = rest.take(2);
            if p.is_empty() {
                break;
            }
            assert!(p.len() <= 2);
            seen.extend_from_slice(p);
        }
        assert_eq!(seen, [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn a_buffer_of_u64s_holds_twice_as_many_u32s() {
        let mut host = [0u64; 4];
        let words = as_words::<u32>(&mut host);
        assert_eq!(words.len(), 8);
        words[1] = 7;
        assert_eq!(host[0].to_ne_bytes()[4..], 7u32.to_ne_bytes());
    }

    #[test]
    fn the_checked_copy_copies_every_word_and_finds_the_largest() {
        let src: Vec<u32> = (0..1000u32).map(|i| (i * 7919) % 1009).collect();
        let mut dst = vec![0u32; src.len()];
        assert_eq!(copy_and_max(&mut dst, &src), src.iter().copied().max());
        assert_eq!(dst, src);
        assert_eq!(copy_and_max(&mut [], &[]), None);
        assert_eq!(copy_and_max(&mut [9], &[0]), Some(0));
    }
}
