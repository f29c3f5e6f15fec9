//! `prover bench`: the same circuits and parameters proved by this pipeline and by bellperson's
//! `create_random_proof_batch`, alternating, in one run; or the probe on against off.

use super::common::{ProverArgs, select_backend};
use crate::groth16::pipeline::{BatchRequest, prove_batch};
use crate::probe::{Probe, ProbeConfig, SessionInfo, SocketChoice};
use anyhow::{Result, bail};
use clap::Args;
use rand::SeedableRng;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Rounds; each proves the batch once per contender. Medians are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Compare this pipeline with the probe recording against the probe off, instead of
    /// comparing with bellperson.
    #[arg(long)]
    pub probe_overhead: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn run(args: BenchArgs) -> Result<()> {
    let size = args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    let ps = args.prover.load_params()?;
    if ps.synthetic() && !args.probe_overhead {
        bail!("bellperson cannot prove against a synthetic SRS; use --srs real");
    }
    let k = args.prover.circuits as usize;
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    println!(
        "bench: {k} × {} 2^{} ({} constraints), backend {} ({reason}), {} cores, {} runs",
        size.kind.name(),
        size.log,
        ps.shape.constraints,
        backend.name(),
        rayon::current_num_threads(),
        args.runs
    );
    let ours = |circuits, rng: &mut rand_chacha::ChaCha20Rng| -> Result<Duration> {
        let _ = rng;
        let t = Instant::now();
        let out = prove_batch(BatchRequest {
            params: &ps,
            backend: backend.as_ref(),
            circuits,
            dealloc: args.prover.dealloc(),
            verify: crate::groth16::pipeline::VerifyMode::Off,
        })?;
        let el = t.elapsed();
        crate::groth16::dealloc::flush();
        if !ps.synthetic() {
            let v = crate::groth16::pipeline::verify(
                &ps,
                &out.proofs,
                &out.public_inputs,
                crate::groth16::pipeline::VerifyMode::Every,
                0,
            );
            if v != crate::probe::Verification::Valid {
                bail!("this pipeline produced a proof that does not verify");
            }
        }
        Ok(el)
    };

    if args.probe_overhead {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for _ in 0..args.runs {
            for enabled in [false, true] {
                let probe = if enabled {
                    Probe::start(
                        ProbeConfig::new("prover", env!("CARGO_PKG_VERSION"))
                            .socket(SocketChoice::None)
                            .gpu_sample(None),
                        SessionInfo::default(),
                    )?
                } else {
                    Probe::disabled()
                };
                let circuits = (0..k).map(|_| size.random(&mut rng)).collect();
                let t = ours(circuits, &mut rng)?;
                probe.shutdown("bench");
                if enabled { on.push(t) } else { off.push(t) }
            }
        }
        let (a, b) = (median(off), median(on));
        println!("probe off: {:.3} s (median)", a.as_secs_f64());
        println!("probe on:  {:.3} s (median)", b.as_secs_f64());
        println!(
            "overhead:  {:+.2} %",
            (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0
        );
        return Ok(());
    }

    let (mut t_ours, mut t_bp) = (Vec::new(), Vec::new());
    for round in 0..args.runs {
        let batch: Vec<_> = (0..k).map(|_| size.random(&mut rng)).collect();
        let theirs: Vec<_> = batch.iter().map(|(c, _)| c.clone()).collect();
        let inputs: Vec<_> = batch.iter().map(|(_, i)| i.clone()).collect();
        let a = ours(batch, &mut rng)?;
        let t = Instant::now();
        let proofs = bellperson::groth16::create_random_proof_batch(theirs, &ps.params, &mut rng)
            .map_err(|e| anyhow::anyhow!("bellperson: {e}"))?;
        let b = t.elapsed();
        let refs: Vec<_> = proofs.iter().collect();
        let ok = ps.pvk.as_ref().is_some_and(|pvk| {
            bellperson::groth16::verify_proofs_batch(pvk, &mut rng, &refs, &inputs).unwrap_or(false)
        });
        if !ok {
            bail!("bellperson's proofs did not verify");
        }
        println!(
            "round {}: this pipeline {:.3} s, bellperson {:.3} s",
            round + 1,
            a.as_secs_f64(),
            b.as_secs_f64()
        );
        t_ours.push(a);
        t_bp.push(b);
    }
    let (a, b) = (median(t_ours), median(t_bp));
    println!("this pipeline: {:.3} s (median)", a.as_secs_f64());
    println!("bellperson:    {:.3} s (median)", b.as_secs_f64());
    println!(
        "ratio:         {:.2} (this / bellperson)",
        a.as_secs_f64() / b.as_secs_f64()
    );
    Ok(())
}
