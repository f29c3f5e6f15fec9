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
