//! `prover prove`: one batch, a phase table, and optionally the artefacts for another verifier.

use super::common::{ProbeArgs, ProverArgs, select_backend};
use crate::groth16::backend::G2Tail;
use crate::groth16::pipeline::{Ballast, BatchOutput, BatchRequest, prove_batch};
use crate::probe::SocketChoice;
use anyhow::{Context, Result};
use clap::Args;
use ff::PrimeField;
use rand::SeedableRng;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ProveArgs {
    #[command(flatten)]
    pub prover: ProverArgs,
    /// Write the verifying key, the proofs and the public inputs here (bellperson's formats).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub probe: ProbeArgs,
}

/// The phase table, as printed.
pub fn phase_table(out: &BatchOutput) -> String {
    let total = out.total.as_secs_f64();
    let mut s = String::new();
    s.push_str(&format!(
        "{:<14} {:>10} {:>8}\n",
        "phase", "seconds", "of prove"
    ));
    let devices = match out.device_threads.as_slice() {
        [one] => format!("  ({one} thread)"),
        many => format!("  (threads {}: the slowest)", many.join(", ")),
    };
    for (name, d) in &out.phases {
        let note = match (*name, out.g2_tail) {
            ("prep_msm", _) | ("b_g2_msm", G2Tail::Prep) => "  (prep thread, beside ntt_msm_h)",
            ("ntt_msm_h" | "batch_add" | "tail_msm", _) | ("b_g2_msm", G2Tail::Device) => {
                devices.as_str()
            }
            _ => "",
        };
        s.push_str(&format!(
            "{:<14} {:>10.3} {:>7.1}%{note}\n",
            name,
            d.as_secs_f64(),
            d.as_secs_f64() / total * 100.0
        ));
    }
    s.push_str(&format!(
        "{:<14} {:>10.3} {:>7.1}%  (outer span)\n",
        "prove", total, 100.0
    ));
    s
}

fn write_out(dir: &Path, ps: &crate::groth16::params::ParamSet, out: &BatchOutput) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let vk = dir.join("vk.bin");
    ps.params
        .vk
        .write(std::fs::File::create(&vk).with_context(|| format!("writing {}", vk.display()))?)?;
    for (i, (p, inputs)) in out.proofs.iter().zip(&out.public_inputs).enumerate() {
        let pf = dir.join(format!("proof-{i}.bin"));
        p.write(std::fs::File::create(&pf).with_context(|| format!("writing {}", pf.display()))?)?;
        let inf = dir.join(format!("inputs-{i}.bin"));
        let mut f =
            std::fs::File::create(&inf).with_context(|| format!("writing {}", inf.display()))?;
        for x in inputs {
            f.write_all(x.to_repr().as_ref())?;
        }
    }
    Ok(())
}

pub fn run(args: ProveArgs) -> Result<()> {
    let size = args.prover.size()?;
    let (backend, reason) = select_backend(args.prover.backend)?;
    let probe = args
        .probe
        .start(SocketChoice::None, backend.name(), &reason)?;
    let ps = args.prover.load_params()?;
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let circuits = (0..args.prover.circuits)
        .map(|_| size.random(&mut rng))
        .collect();
    let columns = args.prover.column_pool(backend.as_ref());
    let out = prove_batch(BatchRequest {
        params: &ps,
        backend: backend.as_ref(),
        circuits,
        dealloc: args.prover.dealloc(),
        columns: columns.as_ref(),
        verify: args.prover.verify(),
        g2_tail: args.prover.g2_tail(backend.as_ref()),
        stages: None,
        ballast: Ballast::written(args.prover.ballast_bytes()),
    })?;
    crate::groth16::dealloc::flush();
    crate::outln!(
        "{} × {} 2^{} ({} constraints each), backend {} ({reason}), {} SRS",
        args.prover.circuits,
        size.kind.name(),
        size.log,
        ps.shape.constraints,
        backend.name(),
        if ps.synthetic() { "SYNTHETIC" } else { "real" }
    );
    crate::out!("{}", phase_table(&out));
    crate::outln!(
        "verification: {} ({:.1} ms)",
        out.verification.as_str(),
        out.verify_time.as_secs_f64() * 1e3
    );
    crate::outln!(
        "released {:.1} MB of proving vectors ({:?}){}",
        out.released_bytes as f64 / 1e6,
        args.prover.dealloc(),
        match &columns {
            Some(pool) => format!(
                "; a, b, c kept for the next proof ({:.1} MB)",
                pool.kept().1 as f64 / 1e6
            ),
            None => String::new(),
        }
    );
    if let Some(dir) = &args.out {
        write_out(dir, &ps, &out)?;
        crate::outln!(
            "wrote vk.bin, proof-<i>.bin and inputs-<i>.bin (32-byte little-endian field elements) to {}",
            dir.display()
        );
    }
    probe.shutdown("prove done");
    Ok(())
}
