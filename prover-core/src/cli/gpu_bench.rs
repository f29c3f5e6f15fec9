//! `prover gpu-bench`: device times of the NTT kernels, transfer rates and the whole H
//! computation, on the first GPU (numbers for docs/BENCHMARKS.md).

use crate::gpu::{Accumulate, GpuBackend, NttOp, backend_bench as bench};
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
    /// Where the compiled kernels are cached [default: the parameter cache].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// log2 sizes of the G1 MSMs to time against blst on the CPU (`--msm` alone: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = vec![20u32, 22, 24])]
    pub msm: Vec<u32>,
    /// CPU runs per MSM size (the best is reported).
    #[arg(long, default_value_t = 2)]
    pub cpu_reps: usize,
    /// Also time window widths, pass sizes and accumulation shapes at the largest MSM size.
    #[arg(long)]
    pub msm_tune: bool,
    /// The G1 MSMs' affine accumulation shapes (launch bounds) to time: several are run in
    /// one rotating order with the placements, so they compare like for like.
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1.., default_values_t = vec![Accumulate::default()])]
    pub msm_accumulate: Vec<Accumulate>,
    /// Only the MSM figures (skip the NTT, transfer and H sections).
    #[arg(long)]
    pub msm_only: bool,
    /// log2 sizes of the G2 MSMs (B's G2 tail) to time against blst on the CPU [default: none]
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub g2_msm: Vec<u32>,
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
    crate::outln!("{}", gpu.describe());
    if !args.msm_only {
        ntt_sections(&gpu, &args)?;
    }
    msm_section(&gpu, &args)?;
    g2_msm_section(&gpu, &args)
}

/// B's G2 tail on the device (`--g2-tail device`) and on the CPU (`prep`), one size a line.
fn g2_msm_section(gpu: &GpuBackend, args: &GpuBenchArgs) -> Result<()> {
    use crate::gpu::msm_bench;
    if args.g2_msm.is_empty() {
        return Ok(());
    }
    let threads = rayon::current_num_threads();
    crate::outln!(
        "\nG2 MSM, wall ms: bases resident, scalars pageable (median of {} after a warm-up; the scalars' upload included); blst on {threads} CPU threads (best of {}):",
        args.reps.min(5),
        args.cpu_reps
    );
    crate::outln!(
        "{:>6} {:>11} {:>11} {:>8}  plan",
        "size",
        "device",
        "cpu (blst)",
        "gpu=cpu"
    );
    let mut last = None;
    for &log in &args.g2_msm {
        let f = msm_bench::g2_msm(&gpu.device, log, args.reps.min(5), args.cpu_reps)
            .with_context(|| format!("G2 MSM of 2^{log} points"))?;
        crate::outln!(
            "{:>6} {:>8.1} ms {:>8.1} ms {:>8}  {}",
            format!("2^{log}"),
            f.gpu_ms,
            f.cpu_ms,
            if f.equal { "yes" } else { "NO" },
            f.plan
        );
        last = Some(f);
    }
    if let Some(f) = last {
        crate::outln!("device operations of the last run at 2^{}:", f.log);
        print_ops(&f.ops);
    }
    Ok(())
}

fn msm_section(gpu: &GpuBackend, args: &GpuBenchArgs) -> Result<()> {
    use crate::gpu::{MsmPlan, msm_bench};
    if args.msm.is_empty() {
        return Ok(());
    }
    let threads = rayon::current_num_threads();
    crate::outln!(
        "\nG1 MSM, wall ms (median of {} after a warm-up round, placements and plans in one rotating order; transfers included): inputs pageable, inputs page-locked, bases resident with scalars pageable, bases resident with scalars page-locked (sppark's four columns); blst on {threads} CPU threads (best of {}):",
        args.reps.min(5),
        args.cpu_reps
    );
    crate::outln!(
        "{:>6} {:>11} {:>11} {:>11} {:>15} {:>11} {:>8}  plan",
        "size",
        "pageable",
        "pinned",
        "resident",
        "res.+pinned",
        "cpu (blst)",
        "gpu=cpu"
    );
    let mut last = None;
    for &log in &args.msm {
        let plans: Vec<MsmPlan> = args
            .msm_accumulate
            .iter()
            .map(|&shape| MsmPlan::for_len(1 << log).accumulating(shape))
            .collect();
        let figures = msm_bench::msm(&gpu.device, log, args.reps.min(5), args.cpu_reps, &plans)
            .with_context(|| format!("MSM of 2^{log} points"))?;
        for f in figures {
            crate::outln!(
                "{:>6} {:>8.1} ms {:>8.1} ms {:>8.1} ms {:>12.1} ms {:>8.1} ms {:>8}  {}",
                format!("2^{log}"),
                f.gpu_host_ms,
                f.gpu_pinned_ms,
                f.gpu_resident_ms,
                f.gpu_resident_pinned_ms,
                f.cpu_ms,
                if f.equal { "yes" } else { "NO" },
                f.plan
            );
            last = Some(f);
        }
    }
    if let Some(f) = last {
        crate::outln!(
            "device operations of the last host-input run at 2^{} ({}):",
            f.log,
            f.plan
        );
        print_ops(&f.ops);
    }
    if let (true, Some(&log)) = (args.msm_tune, args.msm.iter().max()) {
        let mut plans = Vec::new();
        // Around c = 16 (version 3's tune at 2^24: c = 15 294 ms, 16 255, 17 277;
        // BENCHMARKS.md); runs up to 512 entries come near sppark's thread per bucket (512
        // entries a bucket on average at 2^24), which needs no XYZZ passes.
        for c in 14..=17 {
            for k in [64, 128, 256, 512] {
                for shape in <Accumulate as clap::ValueEnum>::value_variants() {
                    plans.push(MsmPlan::with_c(c, k).accumulating(*shape));
                }
            }
        }
        crate::outln!("\nMSM plans at 2^{log}, resident inputs, device ms (best of 3):");
        for (p, ms) in msm_bench::tune(&gpu.device, log, &plans)? {
            crate::outln!(
                "  c = {:>2}, k = {:>3}, {:>6}: {ms:>8.2} ms",
                p.c,
                p.k,
                p.accumulate
            );
        }
    }
    Ok(())
}

fn print_ops(ops: &[crate::gpu::TimedOp]) {
    let t0 = ops.iter().map(|o| o.start_ns).min().unwrap_or(0);
    for o in ops {
        crate::outln!(
            "  {:<20} stream {}  +{:>8.3} ms  {:>8.3} ms",
            o.name,
            o.stream,
            (o.start_ns - t0) as f64 / 1e6,
            o.ms()
        );
    }
}

fn ntt_sections(gpu: &GpuBackend, args: &GpuBenchArgs) -> Result<()> {
    crate::outln!(
        "\nNTT device time (CUDA events, median of {} after 2 warm-ups), data on the device:",
        args.reps
    );
    crate::outln!(
        "{:>6} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "size",
        "forward",
        "inverse",
        "coset",
        "inv. coset",
        "fwd+bitrev"
    );
    for &log in &args.sizes {
        let f = bench::ntt(gpu, log, NttOp::Forward, false, args.reps)?;
        let i = bench::ntt(gpu, log, NttOp::Inverse, false, args.reps)?;
        let c = bench::ntt(gpu, log, NttOp::Coset, false, args.reps)?;
        let ic = bench::ntt(gpu, log, NttOp::InverseCoset, false, args.reps)?;
        let fb = bench::ntt(gpu, log, NttOp::Forward, true, args.reps)?;
        crate::outln!(
            "{:>6} {f:>9.3} ms {i:>9.3} ms {c:>9.3} ms {ic:>9.3} ms {fb:>11.3} ms",
            format!("2^{log}")
        );
    }
    transfer_section(gpu, args)?;
    h_section(gpu, args)
}

/// Host ↔ device bandwidth of 2^h_log elements, page-locked and pageable.
fn transfer_section(gpu: &GpuBackend, args: &GpuBenchArgs) -> Result<()> {
    let [pu, pd, gu, gd, reg] = bench::transfers(gpu, args.h_log, args.reps.min(6))?;
    let mb = (32u64 << args.h_log) as f64 / 1e6;
    crate::outln!(
        "\ntransfers of 2^{} elements ({mb:.0} MB), CUDA events:",
        args.h_log
    );
    crate::outln!(
        "  page-locked in place (cuMemHostRegister, {reg:.1} ms): up {pu:.1} GB/s, down {pd:.1} GB/s"
    );
    crate::outln!(
        "  pageable:                                   up {gu:.1} GB/s, down {gd:.1} GB/s"
    );
    Ok(())
}

/// The whole H computation of one circuit, three ways of holding its vectors.
fn h_section(gpu: &GpuBackend, args: &GpuBenchArgs) -> Result<()> {
    let mb = (32u64 << args.h_log) as f64 / 1e6;
    let reps = args.reps.clamp(3, 8);
    let [staged, locked, pooled] = bench::h(gpu, args.h_log, reps)?;
    let device = locked.device_ms();
    crate::outln!(
        "\nwhole H computation, one circuit of 2^{} (a, b, c up, H down; {reps} rounds, the three in rotating order):",
        args.h_log
    );
    crate::outln!(
        "  fresh vectors page-locked in place every call: {:.1} ms wall (median), device time {device:.1} ms",
        locked.wall()
    );
    crate::outln!(
        "  fresh vectors through the reused staging buffers: {:.1} ms wall (median), device span {:.1} ms",
        staged.wall(),
        staged.device_ms()
    );
    crate::outln!(
        "  pooled columns (--dealloc reuse), {}: {:.1} ms wall (median), device span {:.1} ms",
        if pooled.page_locked {
            "page-locked once when made"
        } else {
            "NOT page-locked (registration failed: staged)"
        },
        pooled.wall(),
        pooled.device_ms()
    );
    crate::outln!(
        "  wall / device time at pinned speed: {:.2} pooled, {:.2} locked in place, {:.2} staged",
        pooled.wall() / device,
        locked.wall() / device,
        staged.wall() / device
    );
    crate::outln!("device operations, last pooled run:");
    print_ops(&pooled.ops);
    crate::outln!("device operations, last locked-in-place run:");
    print_ops(&locked.ops);
    crate::outln!("device operations, last staged run:");
    print_ops(&staged.ops);
    let up_ms: f64 = staged
        .ops
        .iter()
        .filter(|o| o.name.starts_with("upload"))
        .map(|o| o.ms())
        .sum();
    crate::outln!(
        "  staged uploads: {:.1} GB/s while overlapped with the transforms",
        3.0 * mb / 1e3 / (up_ms * 1e-3)
    );
    Ok(())
}
