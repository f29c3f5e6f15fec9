//! `proofscope demo`: the built-in prover (this very binary, run as `proofscope prover serve …`)
//! as a [`ChildProver`]. Only with the `demo` feature, which links the prover.

use crate::child::ChildProver;
use anyhow::{Context, Result};
use clap::Args;
use prover_core::cli::ProverArgs;
use std::ffi::OsString;

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Pause between batches, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub pause_ms: u64,
}

/// Starts the built-in prover. `proofs`: stop it after that many (headless runs).
pub fn start(d: &DemoArgs, proofs: Option<u64>) -> Result<ChildProver> {
    d.prover.size().context("demo prover size")?;
    let exe = std::env::current_exe().context("locating the proofscope binary")?;
    let mut args: Vec<OsString> = vec!["prover".into(), "serve".into()];
    args.extend(d.prover.to_args().into_iter().map(OsString::from));
    if d.pause_ms > 0 {
        args.extend(["--pause-ms".into(), d.pause_ms.to_string().into()]);
    }
    if let Some(n) = proofs {
        args.extend(["--proofs".into(), n.to_string().into()]);
    }
    ChildProver::start(&exe, &args)
}
