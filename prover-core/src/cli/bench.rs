//! `prover bench`: the same circuits and parameters proved by this pipeline and by bellperson's
//! `create_random_proof_batch`, alternating, in one run; or the probe on against off
//! (`overhead.rs`).

use super::common::{ProverArgs, select_backend};
use super::overhead::{Pairs, Side, order};
use crate::groth16::pipeline::{BatchRequest, prove_batch};
use crate::probe::{Probe, ProbeConfig, SessionInfo};
use anyhow::{Context, Result, bail};
use clap::Args;
use rand::SeedableRng;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Rounds; each proves the batch once per contender. Medians are reported. With
    /// --probe-overhead: pairs of runs (at least 15 for a claim), in ABBA order.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Compare this pipeline with the probe on (configured by the PROOFSCOPE_* variables) against
    /// the probe off, instead of comparing with bellperson: pairs in ABBA order, the median of
    /// the pairs' differences with a bootstrap 95 % interval.
    #[arg(long)]
    pub probe_overhead: bool,
    /// Prove nothing: pool the pairs in saved outputs of earlier --probe-overhead runs (of the
    /// same build, batch and machine) and report them as one run (bootstrap seed 7, so the same
    /// files give the same interval).
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "runs")]
    pub pool: Vec<PathBuf>,
}

/// `--pool`: the pairs of several saved runs, reported together.
fn pool(files: &[PathBuf]) -> Result<()> {
    let mut pairs = Pairs::default();
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let n = pairs
            .parse(&text)
            .with_context(|| format!("in {}", f.display()))?;
        if n == 0 {
            bail!(
                "{}: no pair lines (is it the output of `prover bench --probe-overhead`?)",
                f.display()
            );
        }
        crate::outln!("{}: {n} pairs", f.display());
    }
    crate::out!(
        "{}",
        pairs.report(&mut rand_chacha::ChaCha20Rng::seed_from_u64(7))
    );
    Ok(())
}

fn median(v: Vec<Duration>) -> Duration {
    let s: Vec<f64> = v.iter().map(Duration::as_secs_f64).collect();
    Duration::from_secs_f64(super::overhead::median(&s).unwrap_or(0.0))
}

pub fn run(args: BenchArgs) -> Result<()> {
    if !args.pool.is_empty() {
        return pool(&args.pool);
    }
    let size = args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    let ps = args.prover.load_params()?;
    if ps.synthetic() && !args.probe_overhead {
        bail!("bellperson cannot prove against a synthetic SRS; use --srs real");
    }
    let k_circuits = args.prover.circuits as usize;
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    crate::outln!(
        "bench: {k_circuits} × {} 2^{} ({} constraints), backend {} ({reason}), {} cores, {} runs",
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
            stages: None,
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
        // One unmeasured run per side first: allocator, page cache and (GPU) modules warm.
        let mut pairs = Pairs::default();
        for k in 0..=args.runs as usize {
            let circuits: Vec<_> = (0..k_circuits).map(|_| size.random(&mut rng)).collect();
            let mut t = [Duration::ZERO; 2];
            for side in order(k) {
                let probe = match side {
                    Side::On => Probe::start(
                        ProbeConfig::from_env("prover", env!("CARGO_PKG_VERSION"))?,
                        SessionInfo::default(),
                    )?,
                    Side::Off => Probe::disabled(),
                };
                let el = ours(circuits.clone(), &mut rng)?;
                probe.shutdown("bench");
                t[(side == Side::On) as usize] = el;
            }
            if k == 0 {
                crate::outln!(
                    "warm-up: off {:.3} s, on {:.3} s (not counted)",
                    t[0].as_secs_f64(),
                    t[1].as_secs_f64()
                );
                continue;
            }
            crate::outln!(
                "pair {k:>3} ({}): off {:.3} s, on {:.3} s, {:+.2} %",
                if order(k)[0] == Side::Off {
                    "off, on"
                } else {
                    "on, off"
                },
                t[0].as_secs_f64(),
                t[1].as_secs_f64(),
                (t[1].as_secs_f64() / t[0].as_secs_f64() - 1.0) * 100.0
            );
            pairs.push(t[0], t[1]);
        }
        crate::out!("{}", pairs.report(&mut rng));
        return Ok(());
    }

    let (mut t_ours, mut t_bp) = (Vec::new(), Vec::new());
    for round in 0..args.runs {
        let batch: Vec<_> = (0..k_circuits).map(|_| size.random(&mut rng)).collect();
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
        crate::outln!(
            "round {}: this pipeline {:.3} s, bellperson {:.3} s",
            round + 1,
            a.as_secs_f64(),
            b.as_secs_f64()
        );
        t_ours.push(a);
        t_bp.push(b);
    }
    let (a, b) = (median(t_ours), median(t_bp));
    crate::outln!("this pipeline: {:.3} s (median)", a.as_secs_f64());
    crate::outln!("bellperson:    {:.3} s (median)", b.as_secs_f64());
    crate::outln!(
        "ratio:         {:.2} (this / bellperson)",
        a.as_secs_f64() / b.as_secs_f64()
    );
    Ok(())
}
