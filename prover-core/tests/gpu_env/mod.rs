#![allow(dead_code)]
//! What the GPU tests read from the environment: whether to run at all (they need an NVIDIA
//! GPU with driver and NVRTC), where to cache parameters and kernels, the largest size.

pub fn gpu_tests() -> bool {
    std::env::var("PROOFSCOPE_GPU_TESTS").is_ok_and(|v| v == "1")
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
