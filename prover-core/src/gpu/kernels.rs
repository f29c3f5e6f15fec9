//! The typed registry of our CUDA kernels: sources embedded from `cuda/`, compiled by NVRTC
//! for this GPU's architecture when the backend starts — one module per translation unit, each
//! at its own ptxas optimisation level — and cached on disk as CUBIN keyed by a hash of the
//! sources, the options, the architecture and the NVRTC version: a warm start loads the cache
//! and compiles nothing.

use super::GpuError;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Every file of `cuda/` the module is built from, by the name `#include` uses.
const FILES: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../../../cuda/common.cuh")),
    ("carry.cuh", include_str!("../../../cuda/carry.cuh")),
    ("mont.cuh", include_str!("../../../cuda/mont.cuh")),
    ("fr.cuh", include_str!("../../../cuda/fr.cuh")),
    ("fp.cuh", include_str!("../../../cuda/fp.cuh")),
    ("fp2.cuh", include_str!("../../../cuda/fp2.cuh")),
    ("curve.cuh", include_str!("../../../cuda/curve.cuh")),
    ("g1.cuh", include_str!("../../../cuda/g1.cuh")),
    ("g2.cuh", include_str!("../../../cuda/g2.cuh")),
    ("msm.cuh", include_str!("../../../cuda/msm.cuh")),
    ("ntt.cu", include_str!("../../../cuda/ntt.cu")),
    ("msm.cu", include_str!("../../../cuda/msm.cu")),
];

/// A translation unit, built as a module of its own.
pub struct Unit {
    pub file: &'static str,
    /// ptxas's `-O` level. For the MSM, -O3 interleaved the 12-limb Fp product's carry
    /// chains past the predicate registers and kept carries in general registers (two LOP3s
    /// and a P2R a carry) while the field's sums were 64-bit C; with every sum a carry chain
    /// too, `msm_accumulate_affine_wide` is 7,456 SASS instructions at -O3 (168 registers,
    /// 24 B spilled) and 7,320 at -O1 (122, none) — 13,776 before either change (NVRTC 12.9
    /// and 13.0, sm_90, `tools/nvrtc-check.py`) — and on the H200 the MSM at -O1 was 2–3 %
    /// faster than at -O3 (`tools/gpu-ptxas.sh`, docs/BENCHMARKS.md). The NTT's kernels are
    /// the same size at either level.
    pub ptxas_level: u8,
}

/// The translation units, each its own module. `tools/nvrtc-check.py` reads this list (its
/// `file` and `ptxas_level` fields, as written here) to compile the same modules offline.
pub const UNITS: &[Unit] = &[
    Unit {
        file: "ntt.cu",
        ptxas_level: 3,
    },
    Unit {
        file: "msm.cu",
        ptxas_level: 1,
    },
];

/// Overrides every unit's ptxas level (0–3), to time one level against another on a GPU
/// host; unset in production.
pub const PTXAS_LEVEL_ENV: &str = "PROOFSCOPE_PTXAS_LEVEL";

fn expand(name: &str, seen: &mut Vec<String>, out: &mut String) {
    if seen.iter().any(|s| s == name) {
        return;
    }
    seen.push(name.to_string());
    let Some((_, text)) = FILES.iter().find(|(n, _)| *n == name) else {
        // A missing header is a compile error NVRTC reports with the name.
        out.push_str(&format!("#include \"{name}\"\n"));
        return;
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(inc) = t
            .strip_prefix("#include \"")
            .and_then(|r| r.strip_suffix('"'))
        {
            expand(inc, seen, out);
        } else if t != "#pragma once" {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// A unit's source with every `#include "…"` of our headers inlined once (NVRTC sees one
/// file).
pub fn source(unit: &str) -> String {
    let mut out = String::new();
    expand(unit, &mut Vec::new(), &mut out);
    out
}

/// Functions of the loaded module.
#[derive(Debug, Clone)]
pub struct Kernels {
    _modules: Vec<Arc<CudaModule>>,
    pub ntt_pass: CudaFunction,
    pub ntt_pass4: CudaFunction,
    pub scale_powers: CudaFunction,
    pub pow_fill: CudaFunction,
    pub mul_sub_scale: CudaFunction,
    pub bitrev_copy: CudaFunction,
    pub msm_digits: CudaFunction,
    pub msm_scan: CudaFunction,
    pub msm_scatter: CudaFunction,
    pub msm_accumulate_affine: CudaFunction,
    pub msm_accumulate_affine_wide: CudaFunction,
    pub msm_accumulate_xyzz: CudaFunction,
    pub msm_window_reduce: CudaFunction,
    pub g1_sums_to_jac: CudaFunction,
    pub g2_accumulate_affine: CudaFunction,
    pub g2_accumulate_xyzz: CudaFunction,
    pub g2_sums_to_jac: CudaFunction,
    pub g2_window_reduce: CudaFunction,
    /// Whether this start compiled a module (false: all loaded from the cache), and how long
    /// loading took.
    pub compiled: bool,
    pub load_ms: f64,
    pub arch: String,
}

/// The version of the libnvrtc cudarc loads ("13.0"), as the cache key has it.
pub fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the caller checked that libnvrtc loads; nvrtcVersion writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("{major}.{minor}")
}

/// Compiles `src` to CUBIN with NVRTC.
fn compile(src: &str, opts: &[String]) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result, sys};
    let c_src = CString::new(src).map_err(|e| GpuError::Compile(e.to_string()))?;
    let name = CString::new("proofscope.cu").map_err(|e| GpuError::Compile(e.to_string()))?;
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

/// The ptxas level `unit` is built at: its own, unless [`PTXAS_LEVEL_ENV`] names another.
fn ptxas_level(unit: &Unit) -> Result<u8, GpuError> {
    match std::env::var(PTXAS_LEVEL_ENV) {
        Err(_) => Ok(unit.ptxas_level),
        Ok(v) => match v.trim().parse::<u8>() {
            Ok(l) if l <= 3 => Ok(l),
            _ => Err(GpuError::Compile(format!(
                "{PTXAS_LEVEL_ENV}={v:?}: expected a ptxas level 0, 1, 2 or 3"
            ))),
        },
    }
}

/// Where a unit's CUBIN for `arch` lies in the cache `dir`: named by a hash of everything the
/// CUBIN depends on (source, options, NVRTC version), so a stale one is never found.
fn cache_entry(
    dir: &Path,
    arch: &str,
    unit: &Unit,
) -> Result<(PathBuf, String, Vec<String>), GpuError> {
    let src = source(unit.file);
    let opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "-default-device".to_string(),
        format!("--ptxas-options=-O{}", ptxas_level(unit)?),
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
    let stem = unit.file.trim_end_matches(".cu");
    Ok((dir.join(format!("{stem}-{arch}-{key}.cubin")), src, opts))
}

/// A unit's CUBIN and where it lies in the cache.
struct UnitCubin {
    bytes: Vec<u8>,
    path: PathBuf,
    /// Compiled now (false: read from the cache).
    compiled: bool,
    /// Whether a CUBIN compiled now reached the cache (a backend runs without it; `prover
    /// kernels` fails).
    stored: std::io::Result<()>,
}

/// One unit's CUBIN for `arch`: from the cache, or compiled by NVRTC and cached. Needs
/// libnvrtc, not a GPU.
fn unit_cubin(dir: &Path, arch: &str, unit: &Unit) -> Result<UnitCubin, GpuError> {
    let (path, src, opts) = cache_entry(dir, arch, unit)?;
    if let Ok(bytes) = std::fs::read(&path)
        && !bytes.is_empty()
    {
        return Ok(UnitCubin {
            bytes,
            path,
            compiled: false,
            stored: Ok(()),
        });
    }
    let bytes = compile(&src, &opts)?;
    let stored = store(&path, &bytes);
    Ok(UnitCubin {
        bytes,
        path,
        compiled: true,
        stored,
    })
}

/// Writes a cache file whole or not at all (renamed into place).
fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Compiles every unit for `arch` (`sm_90`, …) into the kernel cache under `cache_dir`, as a
/// GPU backend starting there would, but on any machine with libnvrtc of the GPU host's
/// version: a fresh host then loads the kernels instead of compiling them (76 s on the H200
/// host at NVRTC 13.0, 2026-12-05). Returns each unit's cache file and whether it was
/// compiled now (false: already cached).
pub fn precompile(arch: &str, cache_dir: &Path) -> Result<Vec<(PathBuf, bool)>, GpuError> {
    let dir = cache_dir.join("kernels");
    UNITS
        .iter()
        .map(|unit| {
            let c = unit_cubin(&dir, arch, unit)?;
            c.stored.map_err(|source| GpuError::Cache {
                path: c.path.clone(),
                source,
            })?;
            Ok((c.path, c.compiled))
        })
        .collect()
}

/// Loads the kernels for `ctx`'s device, compiling the modules the cache does not have.
pub fn load(ctx: &Arc<CudaContext>, cache_dir: &Path) -> Result<Kernels, GpuError> {
    let t0 = Instant::now();
    let (major, minor) = ctx.compute_capability().map_err(GpuError::driver)?;
    let arch = format!("sm_{major}{minor}");
    let dir = cache_dir.join("kernels");
    let mut modules = Vec::with_capacity(UNITS.len());
    let mut compiled = false;
    for unit in UNITS {
        let c = unit_cubin(&dir, &arch, unit)?;
        let module = ctx
            .load_module(Ptx::from_binary(c.bytes))
            .map_err(GpuError::driver)?;
        modules.push(module);
        compiled |= c.compiled;
    }
    // A function from whichever module defines it.
    let f = |name: &str| {
        let mut last = None;
        for m in &modules {
            match m.load_function(name) {
                Ok(func) => return Ok(func),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => GpuError::driver(e),
            None => GpuError::Compile(format!("no module defines {name}")),
        })
    };
    Ok(Kernels {
        ntt_pass: f("ntt_pass")?,
        ntt_pass4: f("ntt_pass4")?,
        scale_powers: f("scale_powers")?,
        pow_fill: f("pow_fill")?,
        mul_sub_scale: f("mul_sub_scale")?,
        bitrev_copy: f("bitrev_copy")?,
        msm_digits: f("msm_digits")?,
        msm_scan: f("msm_scan")?,
        msm_scatter: f("msm_scatter")?,
        msm_accumulate_affine: f("msm_accumulate_affine")?,
        msm_accumulate_affine_wide: f("msm_accumulate_affine_wide")?,
        msm_accumulate_xyzz: f("msm_accumulate_xyzz")?,
        msm_window_reduce: f("msm_window_reduce")?,
        g1_sums_to_jac: f("g1_sums_to_jac")?,
        g2_accumulate_affine: f("g2_accumulate_affine")?,
        g2_accumulate_xyzz: f("g2_accumulate_xyzz")?,
        g2_sums_to_jac: f("g2_sums_to_jac")?,
        g2_window_reduce: f("g2_window_reduce")?,
        _modules: modules,
        compiled,
        load_ms: t0.elapsed().as_secs_f64() * 1e3,
        arch,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn headers_are_inlined_once() {
        let ntt = super::source("ntt.cu");
        let msm = super::source("msm.cu");
        assert!(ntt.contains("__global__ void ntt_pass"));
        assert!(msm.contains("msm_window_reduce("));
        assert!(msm.contains("g2_window_reduce("));
        assert!(msm.contains("msm_accumulate_affine("));
        assert!(msm.contains("msm_accumulate_affine_wide("));
        for s in [&ntt, &msm] {
            assert!(!s.contains("#include"));
            assert!(!s.contains("#pragma once"));
            // Each header once, however many files include it.
            assert_eq!(s.matches("struct fr {").count(), 1);
            assert_eq!(s.matches("typedef unsigned int u32;").count(), 1);
        }
        assert_eq!(msm.matches("struct fp {").count(), 1);
        assert_eq!(msm.matches("struct fp2 {").count(), 1);
        assert_eq!(msm.matches("struct xyzz_t {").count(), 1);
    }

    #[test]
    fn every_unit_is_a_file_of_the_registry() {
        for u in super::UNITS {
            assert!(super::FILES.iter().any(|(n, _)| *n == u.file), "{}", u.file);
            assert!(u.ptxas_level <= 3);
        }
    }
}
