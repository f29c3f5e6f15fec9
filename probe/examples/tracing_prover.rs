//! A prover instrumented with `tracing` only: no probe macro anywhere in its work, just
//! `#[instrument]` and `info_span!`, as the Rust zkVM provers write them. Installing
//! [`ProofscopeLayer`] and starting a [`Probe`] is all it takes for `proofscope` to show its
//! proofs and phases, including the circuits synthesized on worker threads.
//!
//! ```sh
//! cargo run --release -p proofscope-probe --example tracing_prover -- --proofs 5 &
//! proofscope attach --headless --proofs 3
//! ```

use proofscope_probe::{CountingAllocator, Probe, ProbeConfig, ProofscopeLayer, SessionInfo};
use std::hint::black_box;
use tracing::{Span, info_span, instrument};
use tracing_subscriber::layer::SubscriberExt;

// Counts every allocation and times the large ones, so the report can explain releases.
#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const CIRCUITS: usize = 4;
const WITNESS_BYTES: usize = 64 << 20;

/// One circuit's witness: pages touched by the kernel, like a real synthesis.
#[instrument(parent = batch, skip(batch))]
fn synthesize_circuit(batch: &Span, circuit: usize) -> Vec<u8> {
    vec![circuit as u8 + 1; WITNESS_BYTES]
}

#[instrument(skip_all)]
fn commit(witnesses: &[Vec<u8>]) -> u64 {
    witnesses
        .iter()
        .flat_map(|w| w.iter().step_by(4096))
        .fold(0u64, |h, &x| h.wrapping_mul(31).wrapping_add(x as u64))
}

#[instrument(skip_all)]
fn open(witnesses: &[Vec<u8>], commitment: u64) -> u64 {
    black_box(witnesses[0][WITNESS_BYTES / 2] as u64 ^ commitment)
}

fn prove_batch(n: u64) {
    // The layer makes spans named `prove` proofs; its fields fill the proof's header.
    let proof = info_span!(
        "prove",
        circuit = "toy-tracing",
        constraints = (WITNESS_BYTES / 32) as u64,
        circuits = CIRCUITS as u64,
        backend = "cpu"
    );
    let _p = proof.enter();
    let witnesses: Vec<Vec<u8>> = info_span!("synthesis").in_scope(|| {
        let phase = Span::current();
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..CIRCUITS)
                .map(|c| {
                    let phase = &phase;
                    std::thread::Builder::new()
                        .name(format!("synth-{c}"))
                        .spawn_scoped(s, move || synthesize_circuit(phase, c))
                        .expect("spawning a synthesis thread")
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a synthesis thread panicked"))
                .collect()
        })
    });
    let c = commit(&witnesses);
    black_box(open(&witnesses, c ^ n));
    // The witnesses are freed here, inside the proof: the tail the viewer diagnoses.
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut proofs = 5u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--proofs", Some(v)) => proofs = v.parse().map_err(|e| format!("--proofs: {e}"))?,
            _ => return Err(format!("usage: tracing_prover [--proofs N], not {flag:?}").into()),
        }
    }
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(ProofscopeLayer::new()),
    )?;
    let probe = Probe::start(
        ProbeConfig::from_env("tracing-prover", env!("CARGO_PKG_VERSION"))?,
        SessionInfo {
            backend: "cpu".into(),
            ..Default::default()
        },
    )?;
    for n in 0..proofs {
        prove_batch(n);
        println!("proof {} done", n + 1);
    }
    probe.shutdown("done");
    Ok(())
}
