//! `prover kernels`: the GPU kernels compiled into the kernel cache ahead of time, where only
//! libnvrtc is needed — a fresh GPU host (a new machine, a container image) then starts its
//! backend by loading them instead of compiling for over a minute.

use anyhow::{Context, Result, bail};
use clap::Args;
use std::time::Instant;

#[derive(Debug, Args)]
#[command(
    long_about = "Compile the GPU kernels into the kernel cache, on a machine without a GPU.\n\n\
The GPU backend compiles its kernels with NVRTC when it first starts on a host (76 s on an \
H200 host) and caches them. This compiles the same modules here, where only libnvrtc is \
needed; copy the cache's kernels/ folder to the GPU host's cache (or build the image with \
it). The cache is keyed by the sources, the options and NVRTC's version: use the libnvrtc \
of the version the GPU host has (its major.minor is printed), or the host compiles again."
)]
pub struct KernelsArgs {
    /// The GPU architecture to compile for (H100 and H200: sm_90).
    #[arg(long, default_value = "sm_90", value_name = "sm_XY")]
    pub arch: String,
    /// The cache to fill [default: the parameter cache, where the GPU backend looks].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
}

pub fn run(args: KernelsArgs) -> Result<()> {
    check_arch(&args.arch)?;
    // SAFETY: only tries to load the library through cudarc's own candidate names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        bail!("NVRTC (libnvrtc) not found: the kernels cannot be compiled on this machine");
    }
    let cache = args
        .cache
        .unwrap_or_else(crate::groth16::params::default_cache_dir);
    let t0 = Instant::now();
    let done = crate::gpu::precompile_kernels(&args.arch, &cache)
        .with_context(|| format!("compiling the kernels for {}", args.arch))?;
    for (path, compiled) in &done {
        let how = if *compiled {
            "compiled"
        } else {
            "already cached"
        };
        println!("{how}: {}", path.display());
    }
    println!(
        "{} modules for {} with NVRTC {} in {:.1} s",
        done.len(),
        args.arch,
        crate::gpu::nvrtc_version(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `sm_` and a number, as NVRTC's `--gpu-architecture` takes it (a typo would otherwise fill
/// the cache with entries no GPU looks up).
fn check_arch(arch: &str) -> Result<()> {
    match arch.strip_prefix("sm_") {
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(anyhow::Error::new(super::Usage(format!(
            "--arch {arch:?}: expected sm_ and the compute capability, e.g. sm_90"
        )))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn architectures_are_checked_before_compiling() {
        assert!(super::check_arch("sm_90").is_ok());
        assert!(super::check_arch("sm_100").is_ok());
        for bad in ["90", "sm_", "sm_9a", "compute_90", ""] {
            assert!(super::check_arch(bad).is_err(), "{bad}");
        }
    }
}
