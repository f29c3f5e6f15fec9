//! The `prover` binary: see `prover --help` and docs/CLI.md.

use prover_core::probe::CountingAllocator;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

fn main() -> std::process::ExitCode {
    prover_core::cli::run(std::env::args_os())
}
