//! `prover serve`: prove batches in a loop with the probe on, until N proofs or a signal.

use super::common::{ProbeArgs, ProverArgs, select_backend};
use super::signals;
use crate::groth16::pipeline::{BatchRequest, prove_batch};
use crate::probe::SocketChoice;
use anyhow::Result;
use clap::Args;
use rand::SeedableRng;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Stop after this many proofs (batches); 0 runs until SIGINT/SIGTERM.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub proofs: u64,
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Pause between batches, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub pause_ms: u64,
}

pub fn run(args: ServeArgs) -> Result<()> {
    signals::install();
    let size = args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    crate::errln!("backend: {} ({reason})", backend.name());
    let probe = args
        .probe
        .start(SocketChoice::Default, backend.name(), &reason)?;
    if let Some(p) = probe.socket_path() {
        crate::errln!(
            "probe: viewers attach with `proofscope attach {}`",
            p.display()
        );
    }
    let ps = args.prover.load_params()?;
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let mut done = 0u64;
    let mut failures = 0u64;
    let reason = loop {
        if let Some(sig) = signals::requested() {
            break format!("{sig} after {done} proofs");
        }
        if args.proofs > 0 && done >= args.proofs {
            break format!("done: {done} proofs");
        }
        let circuits = (0..args.prover.circuits)
            .map(|_| size.random(&mut rng))
            .collect();
        match prove_batch(BatchRequest {
            params: &ps,
            backend: backend.as_ref(),
            circuits,
            dealloc: args.prover.dealloc(),
            verify: args.prover.verify(),
        }) {
            Ok(out) => {
                done += 1;
                crate::errln!(
                    "proof {}: {} × {} 2^{} in {:.3} s, {}",
                    out.proof_id,
                    args.prover.circuits,
                    size.kind.name(),
                    size.log,
                    out.total.as_secs_f64(),
                    out.verification.as_str()
                );
            }
            Err(e) => {
                failures += 1;
                crate::errln!("proof failed: {e}");
                if failures >= 3 && done == 0 {
                    break format!("giving up: {e}");
                }
            }
        }
        if args.pause_ms > 0 {
            signals::pause(std::time::Duration::from_millis(args.pause_ms));
        }
    };
    // Everything handed to the dealloc thread is freed before the session ends.
    crate::groth16::dealloc::flush();
    crate::errln!("stopping: {reason}");
    probe.shutdown(&reason);
    Ok(())
}
