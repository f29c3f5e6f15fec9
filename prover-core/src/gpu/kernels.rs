//! The typed registry of our CUDA kernels: sources embedded from `cuda/`, compiled by NVRTC
//! for this GPU's architecture when the backend starts, and cached on disk as CUBIN keyed by a
//! hash of the sources, the options, the architecture and the NVRTC version — a warm start
//! loads the cache and compiles nothing.

use super::GpuError;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const FR_CUH: &str = include_str!("../../../cuda/fr.cuh");
const NTT_CU: &str = include_str!("../../../cuda/ntt.cu");

/// The module's source with `#include "…"` of our headers inlined (NVRTC sees one file).
pub fn source() -> String {
    let mut out = String::new();
    for line in NTT_CU.lines() {
        if line.trim() == "#include \"fr.cuh\"" {
            out.extend(
                FR_CUH
                    .lines()
                    .filter(|l| l.trim() != "#pragma once")
                    .map(|l| format!("{l}\n")),
            );
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Functions of the loaded module.
#[derive(Debug, Clone)]
pub struct Kernels {
    _module: Arc<CudaModule>,
    pub ntt_pass: CudaFunction,
    pub scale_powers: CudaFunction,
    pub mul_sub_scale: CudaFunction,
    pub bitrev_copy: CudaFunction,
    /// Whether this start compiled (false: loaded from the cache), and how long it took.
    pub compiled: bool,
    pub load_ms: f64,
    pub arch: String,
}

fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the caller checked that libnvrtc loads; nvrtcVersion writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("{major}.{minor}")
}

/// Compiles `src` to CUBIN with NVRTC.
fn compile(src: &str, opts: &[String]) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result, sys};
    let c_src = CString::new(src).map_err(|e| GpuError::Compile(e.to_string()))?;
    let name = CString::new("proofscope_ntt.cu").map_err(|e| GpuError::Compile(e.to_string()))?;
    let prog = result::create_program(&c_src, Some(&name))
        .map_err(|e| GpuError::Compile(e.to_string()))?;
    // SAFETY: `prog` is a live program; the options are valid strings; the program is
    // destroyed on every path below.
    let compiled = unsafe { result::compile_program(prog, opts) };
    let log = || {
        // SAFETY: `prog` is live.
        unsafe { result::get_program_log(prog) }
            .map(|v| v.iter().map(|&c| c as u8 as char).collect::<String>())
            .unwrap_or_default()
    };
    if let Err(e) = compiled {
        let msg = format!("{e}: {}", log());
        // SAFETY: `prog` is live and not used after.
        let _ = unsafe { result::destroy_program(prog) };
        return Err(GpuError::Compile(msg));
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled; the size is written to `size`.
    let rc = unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) };
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has room for the `size` bytes NVRTC reported.
    let rc2 = unsafe { sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) };
    // SAFETY: `prog` is live and not used after.
    let _ = unsafe { result::destroy_program(prog) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS || rc2 != sys::nvrtcResult::NVRTC_SUCCESS || size == 0
    {
        return Err(GpuError::Compile(format!(
            "no CUBIN from NVRTC ({rc:?}, {rc2:?})"
        )));
    }
    Ok(cubin)
}

/// Loads the kernels for `ctx`'s device, compiling them unless the cache has them.
pub fn load(ctx: &Arc<CudaContext>, cache_dir: &Path) -> Result<Kernels, GpuError> {
    let t0 = Instant::now();
    let (major, minor) = ctx.compute_capability().map_err(GpuError::driver)?;
    let arch = format!("sm_{major}{minor}");
    let src = source();
    let opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "-default-device".to_string(),
    ];
    let mut h = Sha256::new();
    h.update(src.as_bytes());
    for o in &opts {
        h.update(o.as_bytes());
    }
    h.update(nvrtc_version().as_bytes());
    let key: String = h
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = cache_dir.join("kernels");
    let path = dir.join(format!("ntt-{arch}-{key}.cubin"));
    let (cubin, compiled) = match std::fs::read(&path) {
        Ok(b) if !b.is_empty() => (b, false),
        _ => {
            let b = compile(&src, &opts)?;
            let _ = std::fs::create_dir_all(&dir);
            let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
            if std::fs::write(&tmp, &b).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
            (b, true)
        }
    };
    let module = ctx
        .load_module(Ptx::from_binary(cubin))
        .map_err(GpuError::driver)?;
    let f = |name: &str| module.load_function(name).map_err(GpuError::driver);
    Ok(Kernels {
        ntt_pass: f("ntt_pass")?,
        scale_powers: f("scale_powers")?,
        mul_sub_scale: f("mul_sub_scale")?,
        bitrev_copy: f("bitrev_copy")?,
        _module: module,
        compiled,
        load_ms: t0.elapsed().as_secs_f64() * 1e3,
        arch,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn headers_are_inlined_once() {
        let s = super::source();
        assert!(s.contains("__global__ void ntt_pass"));
        assert!(s.contains("fr_mul"));
        assert!(!s.contains("#include \"fr.cuh\""));
        assert!(!s.contains("#pragma once"));
    }
}
