//! One GPU: its context, a compute stream and an upload stream, the loaded kernels, and the
//! per-size tables; the NTT and H-computation building blocks launched on it.

use super::GpuError;
use super::kernels::{self, Kernels};
use super::launch::Grid;
use super::staging::Stager;
use super::tables::{self, K_MAX};
use blstrs::Scalar;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Which transform to run, natural order in (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NttOp {
    Forward,
    Inverse,
    Coset,
    InverseCoset,
}

/// A device vector of field elements (4 u64 limbs each, Montgomery form).
pub type DeviceFr = CudaSlice<u64>;

/// A two-level power table on the device, and for twiddles possibly the whole table.
#[derive(Debug)]
pub struct PowTable {
    pub lo: DeviceFr,
    pub hi: DeviceFr,
    /// Every power x^e (e < limit), so `ntt_pass` reads a twiddle instead of computing it with
    /// one product. Only for twiddles of transforms of more than one pass up to
    /// `FULL_TWIDDLES_MAX_LOG`, and only when the memory was there.
    pub full: Option<DeviceFr>,
}

/// Largest domain with whole twiddle tables: two of 16 bytes per element (2 GiB at 2^26).
pub const FULL_TWIDDLES_MAX_LOG: u32 = 26;

/// Everything size-specific: twiddles and coset factors for a domain of 2^log.
#[derive(Debug)]
pub struct SizeTables {
    pub log: u32,
    pub tw_fwd: PowTable,
    pub tw_inv: PowTable,
    /// g^e / n (after an unscaled inverse transform, into coset form).
    pub coset_over_n: PowTable,
    /// g^-e / n (back from the coset).
    pub uncoset_over_n: PowTable,
    /// g^e (a plain coset shift).
    pub coset: PowTable,
    /// 1 / n (a plain inverse transform).
    pub over_n: PowTable,
    /// 1 / Z on the coset.
    pub z_inv: DeviceFr,
}

#[derive(Debug)]
pub struct Device {
    /// CUDA ordinal (after `CUDA_VISIBLE_DEVICES`).
    pub index: usize,
    /// The same GPU's NVML index, which GPU spans carry so that they and the NVML samples name
    /// one device (see `nvml_index`).
    pub nvml_index: u32,
    pub name: String,
    pub ctx: Arc<CudaContext>,
    pub compute: Arc<CudaStream>,
    pub upload: Arc<CudaStream>,
    pub kernels: Kernels,
    local_fwd: DeviceFr,
    local_inv: DeviceFr,
    sizes: Mutex<HashMap<u32, Arc<SizeTables>>>,
    /// Page-locked buffers for uploads from pageable memory.
    pub stager: Stager,
    /// Its SM count, which sizes every grid-stride launch.
    pub grid: Grid,
}

/// One launch of `ntt_pass`: stages s0 .. s0 + k, DIF or DIT, forward or inverse roots.
#[derive(Debug, Clone, Copy)]
struct Pass {
    s0: u32,
    k: u32,
    dif: bool,
    inverse: bool,
}

impl Device {
    pub fn open(index: usize, cache_dir: &Path) -> Result<Device, GpuError> {
        let ctx = CudaContext::new(index).map_err(GpuError::driver)?;
        let name = ctx.name().unwrap_or_else(|_| format!("GPU {index}"));
        let compute = ctx.new_stream().map_err(GpuError::driver)?;
        let upload = ctx.new_stream().map_err(GpuError::driver)?;
        let kernels = kernels::load(&ctx, cache_dir)?;
        let local_fwd = compute
            .clone_htod(tables::limbs(&tables::local(false)))
            .map_err(GpuError::driver)?;
        let local_inv = compute
            .clone_htod(tables::limbs(&tables::local(true)))
            .map_err(GpuError::driver)?;
        let nvml_index = nvml_index(&ctx, index);
        let grid = Grid::of(&ctx);
        Ok(Device {
            index,
            nvml_index,
            name,
            ctx,
            compute,
            upload,
            kernels,
            local_fwd,
            local_inv,
            sizes: Mutex::new(HashMap::new()),
            stager: Stager::new(nvml_index),
            grid,
        })
    }

    pub fn upload_scalars(&self, v: &[Scalar]) -> Result<DeviceFr, GpuError> {
        self.compute
            .clone_htod(tables::limbs(v))
            .map_err(GpuError::driver)
    }

    pub fn download_scalars(&self, d: &DeviceFr, out: &mut [Scalar]) -> Result<(), GpuError> {
        self.compute
            .memcpy_dtoh(d, tables::limbs_mut(out))
            .map_err(GpuError::driver)?;
        self.compute.synchronize().map_err(GpuError::driver)
    }

    pub fn alloc(&self, n: usize) -> Result<DeviceFr, GpuError> {
        // SAFETY: the buffer is written before it is read by every caller (uploads, kernels).
        unsafe { self.compute.alloc::<u64>(n * 4) }.map_err(GpuError::driver)
    }

    fn pow_table(&self, x: Scalar, limit: usize, scale: Scalar) -> Result<PowTable, GpuError> {
        let (lo, hi) = tables::two_level(x, limit, scale);
        Ok(PowTable {
            lo: self.upload_scalars(&lo)?,
            hi: self.upload_scalars(&hi)?,
            full: None,
        })
    }

    /// The twiddles w^e (e < n/2) of a 2^log domain: two-level always, whole as well where a
    /// transform has more than one pass and the device has the room (a failed allocation
    /// leaves the two-level form, which every pass can use).
    fn twiddle_table(&self, w: Scalar, log: u32) -> Result<PowTable, GpuError> {
        let half = 1usize << (log - 1);
        let mut t = self.pow_table(w, half, Scalar::ONE)?;
        if log > K_MAX
            && log <= FULL_TWIDDLES_MAX_LOG
            && let Ok(mut full) = self.alloc(half)
        {
            let count = half as u64;
            // SAFETY: writes `half` elements of `full`, which holds that many; reads the
            // two-level table, which covers exponents below `half`.
            unsafe {
                self.compute
                    .launch_builder(&self.kernels.pow_fill)
                    .arg(&mut full)
                    .arg(&count)
                    .arg(&t.lo)
                    .arg(&t.hi)
                    .launch(self.grid.elements(count))
            }
            .map_err(GpuError::driver)?;
            t.full = Some(full);
        }
        Ok(t)
    }

    /// Tables for a domain of 2^log, built once per size.
    pub fn size_tables(&self, log: u32) -> Result<Arc<SizeTables>, GpuError> {
        if !(1..=27).contains(&log) {
            return Err(GpuError::Size(log));
        }
        if let Some(t) = self
            .sizes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&log)
        {
            return Ok(t.clone());
        }
        let n = 1usize << log;
        let w = tables::root(log);
        let w_inv = w.invert().unwrap_or(Scalar::ONE);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap_or(Scalar::ONE);
        let n_inv = Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE);
        let z = g.pow_vartime([n as u64]) - Scalar::ONE;
        let t = Arc::new(SizeTables {
            log,
            tw_fwd: self.twiddle_table(w, log)?,
            tw_inv: self.twiddle_table(w_inv, log)?,
            coset_over_n: self.pow_table(g, n, n_inv)?,
            uncoset_over_n: self.pow_table(g_inv, n, n_inv)?,
            coset: self.pow_table(g, n, Scalar::ONE)?,
            over_n: self.pow_table(Scalar::ONE, n, n_inv)?,
            z_inv: self.upload_scalars(&[z.invert().unwrap_or(Scalar::ZERO)])?,
        });
        self.sizes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(log, t.clone());
        Ok(t)
    }

    fn pass(
        &self,
        stream: &CudaStream,
        a: &mut DeviceFr,
        t: &SizeTables,
        p: Pass,
    ) -> Result<(), GpuError> {
        let Pass {
            s0,
            k,
            dif,
            inverse,
        } = p;
        let blocks = 1u64 << (t.log - k);
        let cfg = LaunchConfig {
            grid_dim: (
                blocks.min(1 << 30) as u32,
                blocks.div_ceil(1 << 30) as u32,
                1,
            ),
            block_dim: (Self::pass_threads(k), 1, 1),
            // Data and twiddles limb-major (2 × 32 bytes × 2^k) and the stage bases.
            shared_mem_bytes: (64u32 << k) + 32 * K_MAX,
        };
        let (local, tw) = if inverse {
            (&self.local_inv, &t.tw_inv)
        } else {
            (&self.local_fwd, &t.tw_fwd)
        };
        let (log, dif) = (t.log, dif as u32);
        let kernel = if Self::pass_radix4(k) {
            &self.kernels.ntt_pass4
        } else {
            &self.kernels.ntt_pass
        };
        let no_table: u64 = 0; // a null device pointer: build the twiddles from two levels
        let mut launch = stream.launch_builder(kernel);
        launch
            .arg(a)
            .arg(&log)
            .arg(&s0)
            .arg(&k)
            .arg(&dif)
            .arg(local)
            .arg(&tw.lo)
            .arg(&tw.hi);
        match &tw.full {
            Some(full) => launch.arg(full),
            None => launch.arg(&no_table),
        };
        // SAFETY: `ntt_pass` reads and writes 2^log elements of `a` (which holds at least
        // that many) and reads the tables, sized for this log by `size_tables` (the whole
        // twiddle table, when there is one, holds every exponent below 2^(log−1)).
        unsafe { launch.launch(cfg) }.map_err(GpuError::driver)?;
        Ok(())
    }

    /// Whether a pass of k stages runs its stages two at a time (radix-4 units, one thread
    /// each) or one at a time (one thread per butterfly). Measured on the H200: radix-4 made
    /// 8- and 9-stage passes faster (2^24: 4.87 → 4.66 ms, 2^26: 22.6 → 20.4 ms) and 6- and
    /// 7-stage ones slower (2^20, 7 + 7 + 6: 0.29 → 0.36 ms; more threads per block with
    /// half of them idle in the radix-4 stages was slower still, 0.48 ms).
    pub fn pass_radix4(k: u32) -> bool {
        k >= 8
    }

    /// Threads per block of a pass of k stages.
    pub fn pass_threads(k: u32) -> u32 {
        let per_thread = if Self::pass_radix4(k) { 2 } else { 1 };
        (1u32 << k.saturating_sub(per_thread)).clamp(1, 256)
    }

    /// Stage counts of the passes of a 2^log transform: as few passes as K_MAX allows, with
    /// the stages spread evenly (2^24 = 8 + 8 + 8, not 9 + 9 + 6: a short pass has too few
    /// threads per block to keep the SMs busy).
    pub fn pass_sizes(log: u32) -> Vec<u32> {
        let passes = log.div_ceil(K_MAX).max(1);
        (0..passes)
            .map(|i| log / passes + u32::from(i < log % passes))
            .filter(|&k| k > 0)
            .collect()
    }

    /// Decimation in frequency: natural order in, bit-reversed order out (unscaled).
    pub fn dif(
        &self,
        stream: &CudaStream,
        a: &mut DeviceFr,
        t: &SizeTables,
        inverse: bool,
    ) -> Result<(), GpuError> {
        let mut top = t.log;
        for k in Self::pass_sizes(t.log) {
            self.pass(
                stream,
                a,
                t,
                Pass {
                    s0: top - k,
                    k,
                    dif: true,
                    inverse,
                },
            )?;
            top -= k;
        }
        Ok(())
    }

    /// Decimation in time: bit-reversed order in, natural order out (unscaled).
    pub fn dit(
        &self,
        stream: &CudaStream,
        a: &mut DeviceFr,
        t: &SizeTables,
        inverse: bool,
    ) -> Result<(), GpuError> {
        let mut s0 = 0;
        for k in Self::pass_sizes(t.log) {
            self.pass(
                stream,
                a,
                t,
                Pass {
                    s0,
                    k,
                    dif: false,
                    inverse,
                },
            )?;
            s0 += k;
        }
        Ok(())
    }

    /// One transform of `a` (natural order in, bit-reversed order out).
    pub fn transform(
        &self,
        s: &CudaStream,
        a: &mut DeviceFr,
        t: &SizeTables,
        op: NttOp,
    ) -> Result<(), GpuError> {
        match op {
            NttOp::Forward => self.dif(s, a, t, false),
            NttOp::Inverse => {
                self.dif(s, a, t, true)?;
                self.scale(s, a, t.log, &t.over_n, false)
            }
            NttOp::Coset => {
                self.scale(s, a, t.log, &t.coset, false)?;
                self.dif(s, a, t, false)
            }
            NttOp::InverseCoset => {
                self.dif(s, a, t, true)?;
                self.scale(s, a, t.log, &t.uncoset_over_n, true)
            }
        }
    }

    /// a[i] *= P(i) (or P(bitrev(i))).
    pub fn scale(
        &self,
        stream: &CudaStream,
        a: &mut DeviceFr,
        log: u32,
        p: &PowTable,
        bitrev: bool,
    ) -> Result<(), GpuError> {
        let br = bitrev as u32;
        // SAFETY: reads and writes 2^log elements of `a`; the table covers exponents < 2^log.
        unsafe {
            stream
                .launch_builder(&self.kernels.scale_powers)
                .arg(a)
                .arg(&log)
                .arg(&br)
                .arg(&p.lo)
                .arg(&p.hi)
                .launch(self.grid.elements(1 << log))
        }
        .map_err(GpuError::driver)?;
        Ok(())
    }

    /// a = (a·b − c) / Z.
    pub fn mul_sub_scale(
        &self,
        stream: &CudaStream,
        a: &mut DeviceFr,
        b: &DeviceFr,
        c: &DeviceFr,
        t: &SizeTables,
    ) -> Result<(), GpuError> {
        let n = 1u64 << t.log;
        // SAFETY: a, b, c each hold at least n elements; z_inv holds one.
        unsafe {
            stream
                .launch_builder(&self.kernels.mul_sub_scale)
                .arg(a)
                .arg(b)
                .arg(c)
                .arg(&t.z_inv)
                .arg(&n)
                .launch(self.grid.elements(n))
        }
        .map_err(GpuError::driver)?;
        Ok(())
    }

    /// out[bitrev(i)] = in[i].
    pub fn bitrev_copy(
        &self,
        stream: &CudaStream,
        src: &DeviceFr,
        dst: &mut DeviceFr,
        log: u32,
    ) -> Result<(), GpuError> {
        // SAFETY: both buffers hold at least 2^log elements and do not overlap.
        unsafe {
            stream
                .launch_builder(&self.kernels.bitrev_copy)
                .arg(src)
                .arg(dst)
                .arg(&log)
                .launch(self.grid.elements(1 << log))
        }
        .map_err(GpuError::driver)?;
        Ok(())
    }
}

/// NVML numbers GPUs in PCI order and ignores `CUDA_VISIBLE_DEVICES`; CUDA numbers the visible
/// ones, fastest first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`. On a multi-GPU host the two can
/// differ, so the device is matched by its PCI address. Falls back to the CUDA ordinal when
/// the driver or NVML cannot say (then they agree on every single-GPU host).
fn nvml_index(ctx: &CudaContext, ordinal: usize) -> u32 {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let attr = |a| ctx.attribute(a).ok();
    let (Some(domain), Some(bus), Some(dev)) = (
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ) else {
        return ordinal as u32;
    };
    let bus_id = format!("{domain:08X}:{bus:02X}:{dev:02X}.0");
    // One NVML handle for every device opened (initialising NVML is not free).
    static NVML: std::sync::OnceLock<Option<nvml_wrapper::Nvml>> = std::sync::OnceLock::new();
    NVML.get_or_init(|| nvml_wrapper::Nvml::init().ok())
        .as_ref()
        .and_then(|n| n.device_by_pci_bus_id(bus_id.as_str()).ok()?.index().ok())
        .unwrap_or(ordinal as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_have_one_thread_per_unit_of_work() {
        // Radix-2 passes: one thread per butterfly; radix-4 ones: one per four elements.
        assert_eq!(Device::pass_threads(1), 1);
        assert_eq!(Device::pass_threads(7), 64);
        assert_eq!(Device::pass_threads(8), 64);
        assert_eq!(Device::pass_threads(9), 128);
        assert!(!Device::pass_radix4(7) && Device::pass_radix4(8));
    }

    #[test]
    fn passes_cover_every_stage_evenly() {
        for log in 1..=27u32 {
            let p = Device::pass_sizes(log);
            assert_eq!(p.iter().sum::<u32>(), log, "2^{log}: {p:?}");
            assert!(p.iter().all(|&k| (1..=K_MAX).contains(&k)));
            assert!(
                p.iter().max().unwrap() - p.iter().min().unwrap() <= 1,
                "2^{log}: {p:?}"
            );
        }
        assert_eq!(Device::pass_sizes(24), vec![8, 8, 8]);
        assert_eq!(Device::pass_sizes(26), vec![9, 9, 8]);
    }
}
