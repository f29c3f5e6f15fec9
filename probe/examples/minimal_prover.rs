//! A small prover that depends on `proofscope-probe` alone: three phases per proof, a
//! few large vectors, a proof scope around each proof, and the vectors released either inside
//! the proof (`--dealloc sync`, the ghost) or on a thread of their own (`--dealloc async`).
//!
//! ```sh
//! cargo run --release -p proofscope-probe --example minimal_prover -- --proofs 5 &
//! proofscope attach --headless --proofs 3
//! ```
//! The probe reads `PROOFSCOPE_*` variables (e.g. `PROOFSCOPE_SOCKET=/tmp/p.sock`).

use proofscope_probe::{
    CountingAllocator, Probe, ProbeConfig, ProofInfo, ProofScope, SessionInfo, Verification, span,
};
use std::hint::black_box;

// Counts every allocation and times the large ones (the releases the viewer explains).
#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

struct Args {
    proofs: u64,
    vectors: usize,
    mib: usize,
    sync: bool,
    /// Idle time between proofs, as a server waiting for its next job.
    pause_ms: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        proofs: 5,
        vectors: 4,
        mib: 256,
        sync: true,
        pause_ms: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--proofs" => a.proofs = value()?.parse().map_err(|e| format!("--proofs: {e}"))?,
            "--vectors" => a.vectors = value()?.parse().map_err(|e| format!("--vectors: {e}"))?,
            "--mib" => a.mib = value()?.parse().map_err(|e| format!("--mib: {e}"))?,
            "--pause-ms" => {
                a.pause_ms = value()?.parse().map_err(|e| format!("--pause-ms: {e}"))?
            }
            "--dealloc" => {
                a.sync = match value()?.as_str() {
                    "sync" => true,
                    "async" => false,
                    other => return Err(format!("--dealloc sync|async, not {other:?}")),
                }
            }
            other => {
                return Err(format!(
                    "unknown flag {other:?} (--proofs, --vectors, --mib, --dealloc, --pause-ms)"
                ));
            }
        }
    }
    Ok(a)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = args()?;
    let config = ProbeConfig::from_env("minimal-prover", env!("CARGO_PKG_VERSION"))?;
    let probe = Probe::start(
        config,
        SessionInfo {
            backend: "cpu".into(),
            ..Default::default()
        },
    )?;
    let bytes = a.mib << 20;
    for n in 0..a.proofs {
        // The job arrives with its vectors, as C2 receives C1's output: they are paged in
        // before the proof begins. First-touch page faults cost 5× more in one run of a VM than
        // in the next (the host backs freed memory lazily), while returning the pages costs
        // the same every time; faulting them inside the proof made the release's share of it
        // swing between 3 % and 18 %.
        let mut vectors: Vec<Vec<u8>> = (0..a.vectors)
            .map(|v| vec![0x80 | v as u8; bytes]) // not zero: calloc would map zero pages untouched
            .collect();
        let proof = ProofScope::begin(ProofInfo {
            circuit: "toy".into(),
            constraints: (bytes / 32) as u64,
            circuits: 1,
            backend: "cpu".into(),
            synthetic_srs: false,
        });
        // Memory-bound work through libc (memset), so a debug build runs it as fast as a
        // release build and the release's share of a proof hardly depends on the build.
        {
            let _s = span!("synthesis");
            for (v, x) in vectors.iter_mut().enumerate() {
                x.fill((1 + v as u8) ^ n as u8);
            }
        }
        let commitment = {
            let _s = span!("commit");
            let page = |v: &Vec<u8>| {
                v.iter()
                    .step_by(4096)
                    .fold(0u64, |h, &x| h.wrapping_mul(31).wrapping_add(x as u64))
            };
            vectors
                .iter()
                .map(page)
                .fold(0u64, |h, x| h.rotate_left(5) ^ x)
        };
        {
            let _s = span!("open");
            black_box(vectors[0][bytes / 2] as u64 ^ commitment);
        }
        if a.sync {
            drop(vectors); // inside the proof: the time no phase accounts for
        } else {
            std::thread::Builder::new()
                .name("dealloc".into())
                .spawn(move || drop(vectors))?;
        }
        proof.end(true, Verification::NotChecked, None);
        println!("proof {} done", n + 1);
        if a.pause_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(a.pause_ms));
        }
    }
    probe.shutdown("done");
    Ok(())
}
