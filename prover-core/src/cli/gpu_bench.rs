//! `prover gpu-bench`: device times of the NTT kernels, transfer rates and the whole H
//! computation, on the first GPU (numbers for docs/BENCHMARKS.md).

use crate::gpu::{GpuBackend, NttOp, backend_bench as bench};
use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct GpuBenchArgs {
    /// log2 sizes of the transforms to time.
    #[arg(long, value_delimiter = ',', default_values_t = vec![20u32, 22, 24, 26])]
    pub sizes: Vec<u32>,
    /// Timed repetitions per figure (after warm-up); medians are reported.
    #[arg(long, default_value_t = 12)]
    pub reps: usize,
    /// Size of the transfer and whole-H measurements.
    #[arg(long, default_value_t = 24)]
    pub h_log: u32,
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
}

pub fn run(args: GpuBenchArgs) -> Result<()> {
    crate::gpu::preflight()
        .map_err(anyhow::Error::msg)
        .context("no usable GPU")?;
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(crate::groth16::params::default_cache_dir);
    let gpu = GpuBackend::new(0, &cache)?;
    println!("{}", gpu.describe());
    println!(
        "\nNTT device time (CUDA events, median of {} after 2 warm-ups), data on the device:",
        args.reps
    );
    println!(
        "{:>6} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "size", "forward", "inverse", "coset", "inv. coset", "fwd+bitrev"
    );
    for &log in &args.sizes {
        let f = bench::ntt(&gpu, log, NttOp::Forward, false, args.reps)?;
        let i = bench::ntt(&gpu, log, NttOp::Inverse, false, args.reps)?;
        let c = bench::ntt(&gpu, log, NttOp::Coset, false, args.reps)?;
        let ic = bench::ntt(&gpu, log, NttOp::InverseCoset, false, args.reps)?;
        let fb = bench::ntt(&gpu, log, NttOp::Forward, true, args.reps)?;
        println!(
            "{:>6} {f:>9.3} ms {i:>9.3} ms {c:>9.3} ms {ic:>9.3} ms {fb:>11.3} ms",
            format!("2^{log}")
        );
    }
    let [pu, pd, gu, gd, reg] = bench::transfers(&gpu, args.h_log, args.reps.min(6))?;
    let mb = (32u64 << args.h_log) as f64 / 1e6;
    println!(
        "\ntransfers of 2^{} elements ({mb:.0} MB), CUDA events:",
        args.h_log
    );
    println!(
        "  page-locked in place (cuMemHostRegister, {reg:.1} ms): up {pu:.1} GB/s, down {pd:.1} GB/s"
    );
    println!("  pageable:                                   up {gu:.1} GB/s, down {gd:.1} GB/s");
    let (wall, ops) = bench::h(&gpu, args.h_log, 3)?;
    println!(
        "\nwhole H computation, one circuit of 2^{} (a, b, c up, H down, page-locking included): {wall:.1} ms wall (median of 3)",
        args.h_log
    );
    let t0 = ops.iter().map(|o| o.start_ns).min().unwrap_or(0);
    for o in &ops {
        println!(
            "  {:<20} stream {}  +{:>8.3} ms  {:>8.3} ms",
            o.name,
            o.stream,
            (o.start_ns - t0) as f64 / 1e6,
            o.ms()
        );
    }
    let up_ms: f64 = ops
        .iter()
        .filter(|o| o.name.starts_with("upload"))
        .map(|o| o.ms())
        .sum();
    println!(
        "  uploads: {:.1} GB/s while overlapped with the transforms",
        3.0 * mb / 1e3 / (up_ms * 1e-3)
    );
    Ok(())
}
