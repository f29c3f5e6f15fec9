//! The `proofscope` command line (see docs/CLI.md; `--help` is snapshot-tested).

use crate::report::Format;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// A live profiler for GPU Groth16 provers.
#[derive(Debug, Parser)]
#[command(name = "proofscope", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub opts: Opts,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct Opts {
    /// Write a report and exit instead of showing the dashboard.
    #[arg(long, global = true)]
    pub headless: bool,
    /// Report format with --headless.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report here instead of standard output.
    #[arg(long, short = 'o', global = true, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Record the live session to this file (the socket stream, replayable).
    #[arg(long, global = true, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Headless, live: stop after this many completed proofs.
    #[arg(long, global = true, value_name = "N")]
    pub proofs: Option<u64>,
    /// Headless, live: stop after this many seconds.
    #[arg(long, global = true, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Headless: exit with status 3 when any gap exceeds PCT percent of its span.
    #[arg(long, global = true, value_name = "PCT")]
    pub fail_on_gap: Option<f64>,
    /// A gap is flagged at this fraction of its span …
    #[arg(long, global = true, value_name = "FRACTION", default_value_t = 0.05)]
    pub gap_fraction: f64,
    /// … and at least this many milliseconds.
    #[arg(long, global = true, value_name = "MS", default_value_t = 50.0)]
    pub gap_min_ms: f64,
    /// Keep at most this many proofs in memory.
    #[arg(long, global = true, value_name = "N", default_value_t = 1000)]
    pub max_proofs: usize,
    /// Keep roughly at most this many MiB of events in memory.
    #[arg(long, global = true, value_name = "MIB", default_value_t = 512)]
    pub max_mib: usize,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the built-in prover on a small SHA-256 batch and watch it live. Prover flags
    /// (e.g. --dealloc sync, --circuit, --log-size) are passed to it.
    #[cfg(feature = "demo")]
    Demo(crate::demo::DemoArgs),
    /// Attach to a running prover (found automatically when exactly one is running).
    Attach {
        /// The prover's socket.
        socket: Option<PathBuf>,
    },
    /// List running provers.
    List,
    /// Replay a recording with the same views (or report on it with --headless).
    Replay { file: PathBuf },
}
