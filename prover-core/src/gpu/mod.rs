//! The GPU backend. Detection checks the driver, NVRTC and a device before anything touches
//! cudarc (which panics when a library is missing), so a machine without a GPU gets a reason,
//! not a crash: `--backend auto` then proves on the CPU and says why; `--backend gpu` fails
//! with that reason.

mod backend;
mod device;
mod group;
mod kernels;
mod launch;
mod layout;
mod levels;
mod msm;
pub mod msm_bench;
mod set;
mod staging;
mod sums;
mod tables;
mod timing;

pub use backend::GpuBackend;
pub use backend::bench as backend_bench;
pub use device::{Device, DeviceFr, NttOp};
pub use group::{Accumulate, MsmGroup};
pub use kernels::{nvrtc_version, precompile as precompile_kernels, source as kernel_source};
pub use launch::Grid;
pub use layout::{JAC_LIMBS, JAC2_LIMBS, g2_limbs, jac_to_g1, jac_to_g2};
pub use msm::{DeviceBases, MsmBases, MsmPlan, MsmScalars, combine_windows};
pub use set::GpuSet;
pub use tables::{g1_limbs, limbs};
pub use timing::{GpuTimeline, TimedOp};

use crate::groth16::backend::Backend;

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("{0}")]
    Unavailable(String),
    #[error("CUDA driver: {0}")]
    Driver(String),
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    #[error("size 2^{0} is outside what the GPU kernels support (2^1 to 2^27)")]
    Size(u32),
    #[error("kernel cache {path}")]
    Cache {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl GpuError {
    pub(crate) fn driver(e: impl std::fmt::Display) -> GpuError {
        GpuError::Driver(e.to_string())
    }
}

impl From<GpuError> for crate::groth16::backend::BackendError {
    fn from(e: GpuError) -> Self {
        crate::groth16::backend::BackendError::Gpu(e.to_string())
    }
}

/// Whether a shared library can be loaded, without keeping it.
pub fn library_present(name: &str) -> Result<(), String> {
    let c = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: dlopen with a valid NUL-terminated name; RTLD_LAZY | RTLD_LOCAL adds nothing to
    // the global namespace, and the handle is closed at once.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            return Err(format!(
                "{name} not found (no NVIDIA driver on this machine)"
            ));
        }
        libc::dlclose(h);
    }
    Ok(())
}

/// Checks everything cudarc would panic over, in order; `Ok` means cudarc may be used.
pub fn preflight() -> Result<(), String> {
    library_present("libcuda.so.1")?;
    // SAFETY: only tries to load the library through cudarc's own candidate names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc) not found: the GPU kernels cannot be compiled".into());
    }
    // SAFETY: as above, for the driver library under cudarc's names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library could not be loaded by cudarc".into());
    }
    let n = cudarc::driver::CudaContext::device_count().map_err(|e| format!("CUDA driver: {e}"))?;
    if n < 1 {
        return Err("the CUDA driver reports no GPU".into());
    }
    Ok(())
}

/// A usable GPU backend over every visible GPU (`CUDA_VISIBLE_DEVICES` chooses) and a
/// description of the devices, or why there is none.
pub fn detect() -> Result<(Box<dyn Backend>, String), String> {
    preflight()?;
    let n = cudarc::driver::CudaContext::device_count().map_err(|e| format!("CUDA driver: {e}"))?;
    let cache = crate::groth16::params::default_cache_dir();
    // A GPU that cannot start (out of memory, another process's exclusive mode) is left
    // out and named; the others still prove.
    let mut gpus = Vec::new();
    let mut skipped = Vec::new();
    for i in 0..n.max(0) as usize {
        match GpuBackend::new(i, &cache) {
            Ok(g) => gpus.push(g),
            Err(e) => skipped.push(format!("GPU {i}: {e}")),
        }
    }
    let unusable = if skipped.is_empty() {
        String::new()
    } else {
        format!(" (left out: {})", skipped.join("; "))
    };
    if gpus.len() == 1 {
        let b = gpus.remove(0);
        let what = b.describe() + &unusable;
        return Ok((Box::new(b), what));
    }
    let Some(set) = GpuSet::new(gpus) else {
        return Err(if skipped.is_empty() {
            "the CUDA driver reports no GPU".into()
        } else {
            skipped.join("; ")
        });
    };
    let what = set.describe() + &unusable;
    Ok((Box::new(set), what))
}
