//! The `prover` command line: `serve`, `prove`, `params`, `bench`.

mod accounted;
mod bench;
mod callgrind;
mod common;
mod gpu_bench;
mod kernels;
mod overhead;
mod prove;
mod serve;
mod signals;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

pub use common::{BackendChoice, DeallocArg, ParamsArgs, ProbeArgs, ProverArgs, select_backend};

/// A Groth16 prover over BLS12-381, shaped like Filecoin's C2, carrying the proofscope probe.
#[derive(Debug, Parser)]
#[command(name = "prover", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Prove batches in a loop with the probe socket on, until N proofs or a signal.
    Serve(serve::ServeArgs),
    /// Prove one batch and print a phase table.
    Prove(prove::ProveArgs),
    /// Generate (and cache) the parameters for a circuit and size.
    Params(common::ParamsArgs),
    /// Prove the same batch with this pipeline and with bellperson, and compare.
    Bench(bench::BenchArgs),
    /// Time the GPU kernels, transfers and the H computation (needs an NVIDIA GPU).
    GpuBench(gpu_bench::GpuBenchArgs),
    /// Compile the GPU kernels into the kernel cache, on a machine without a GPU.
    Kernels(kernels::KernelsArgs),
}

/// A mistake in how the prover was called, found after parsing: exit status 2, like clap's.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Runs the CLI with these arguments (the first is the program name).
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    // Every thread has a name, rayon's too (viewers show thread names).
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("rayon-{i}"))
        .build_global();
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Serve(a) => serve::run(a),
        Command::Prove(a) => prove::run(a),
        Command::Params(a) => common::pregenerate(a),
        Command::Bench(a) => bench::run(a),
        Command::GpuBench(a) => gpu_bench::run(a),
        Command::Kernels(a) => kernels::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Usage>() => {
            crate::errln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            crate::errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
