#![allow(dead_code)]
//! Test support for prover-core: where parameters and kernels are cached (shared by every test
//! binary), and what the GPU tests read from the environment: whether to run at all (they need an NVIDIA
//! GPU with driver and NVRTC), where to cache parameters and kernels, the largest size.

pub fn gpu_tests() -> bool {
    std::env::var("PROOFSCOPE_GPU_TESTS").is_ok_and(|v| v == "1")
}

/// Whether GPU tests run here; says SKIPPED when they do not.
pub fn enabled_or_skip() -> bool {
    let on = gpu_tests();
    if !on {
        eprintln!("SKIPPED: set PROOFSCOPE_GPU_TESTS=1 on a GPU host");
    }
    on
}

/// The first GPU, or None (SKIPPED said) where GPU tests do not run.
pub fn first_gpu() -> Option<prover_core::gpu::GpuBackend> {
    enabled_or_skip().then(|| prover_core::gpu::GpuBackend::new(0, &cache()).unwrap())
}

pub fn cache() -> std::path::PathBuf {
    std::env::var_os("PROOFSCOPE_CACHE")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache")
        })
}

/// `PROOFSCOPE_GPU_MAX_LOG`, else `default`.
pub fn max_log(default: u32) -> u32 {
    std::env::var("PROOFSCOPE_GPU_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Makes glibc map every block of 16 KiB and more on its own pages, as it always does for
/// columns from 2^20 constraints up (32 MiB, past its threshold's ceiling). Two small columns
/// side by side on the heap can share a page, and the driver refuses to page-lock a page
/// twice: such a column's uploads stage, which is correct but not the path a test of page-
/// locked columns means to take.
pub fn columns_on_pages_of_their_own() {
    // SAFETY: mallopt only sets an allocator parameter; any value is accepted or refused.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 16 << 10) };
}
