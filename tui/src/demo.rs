//! `proofscope demo`: the built-in prover (this very binary, run as `proofscope prover serve …`)
//! as a [`ChildProver`]. Only with the `demo` feature, which links the prover.

use crate::child::ChildProver;
use anyhow::{Context, Result};
use clap::Args;
use prover_core::cli::{DeallocArg, ProverArgs};
use std::ffi::OsString;

/// The most the demo holds beside its circuits: freeing 2 GiB of written pages takes
/// about 90 ms on a 2-vCPU VM (what C2's ~40 GB take on a server is seconds), well above the
/// 50 ms floor of the gap rule, and a laptop keeps its memory.
const MAX_BALLAST_MIB: u64 = 2048;
/// Below this the release is too quick to be told from noise; a machine that cannot spare
/// it gets none, and the demo says why.
const MIN_BALLAST_MIB: u64 = 256;

#[derive(Debug, Args)]
#[command(next_help_heading = "Prover")]
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
    args.extend(
        demo_prover(&d.prover)
            .to_args()
            .into_iter()
            .map(OsString::from),
    );
    if d.pause_ms > 0 {
        args.extend(["--pause-ms".into(), d.pause_ms.to_string().into()]);
    }
    if let Some(n) = proofs {
        args.extend(["--proofs".into(), n.to_string().into()]);
    }
    ChildProver::start(&exe, &args)
}

/// The demo's prover: what the user asked for, and where they did not say, the release C2
/// has — the vectors freed on the proving thread (sync), as large as this machine can spare.
fn demo_prover(asked: &ProverArgs) -> ProverArgs {
    let mut p = asked.clone();
    p.dealloc.get_or_insert(DeallocArg::Sync);
    p.ballast_mib
        .get_or_insert_with(|| ballast_for(available_mib().unwrap_or(0)));
    p
}

/// An eighth of the available memory, at most [`MAX_BALLAST_MIB`]; none below
/// [`MIN_BALLAST_MIB`].
fn ballast_for(available_mib: u64) -> u64 {
    let b = (available_mib / 8).min(MAX_BALLAST_MIB);
    if b < MIN_BALLAST_MIB { 0 } else { b }
}

/// `MemAvailable` from /proc/meminfo, in MiB (Linux; elsewhere none is known).
fn available_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ballast_is_an_eighth_of_what_is_free_within_bounds() {
        assert_eq!(ballast_for(64 * 1024), MAX_BALLAST_MIB);
        assert_eq!(ballast_for(8 * 1024), 1024);
        assert_eq!(ballast_for(1024), 0);
        assert_eq!(ballast_for(0), 0);
    }

    #[test]
    fn what_the_user_said_wins() {
        use clap::Parser;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            p: ProverArgs,
        }
        let t = T::parse_from(["t", "--dealloc", "async", "--ballast-mib", "0"]);
        let d = demo_prover(&t.p);
        assert_eq!(d.dealloc, Some(DeallocArg::Async));
        assert_eq!(d.ballast_mib, Some(0));
        let t = T::parse_from(["t"]);
        assert_eq!(demo_prover(&t.p).dealloc, Some(DeallocArg::Sync));
    }
}
