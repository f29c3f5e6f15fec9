//! A prover whose proofs hold two stretches no phase covers, to show what scheduling evidence
//! tells apart: a CPU-bound stretch (running code no span covers — or, beside a CPU hog on the
//! same core, waiting for a CPU) and a stretch blocked on a lock another thread holds inside
//! its `hold_lock` span. The proving thread is pinned to one CPU (`--cpu K`, default the first
//! this process may use); `contended_prover hog SECS K` spins on CPU K for SECS seconds.
//!
//! ```sh
//! cargo run -p proofscope-probe --example contended_prover -- hog 30 0 &
//! cargo run -p proofscope-probe --example contended_prover -- --proofs 3 --cpu 0 &
//! proofscope attach --headless --proofs 2
//! ```

use proofscope_probe::{
    Probe, ProbeConfig, ProofInfo, ProofScope, SessionInfo, Verification, span,
};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data (all-zero is the empty set); CPU_SET writes inside it
    // for cpu < CPU_SETSIZE, checked first; sched_setaffinity reads `size_of` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::other("cpu index out of range"));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first CPU this process may run on.
fn first_cpu() -> usize {
    // SAFETY: as in `pin`; sched_getaffinity fills the set, CPU_ISSET reads inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            for c in 0..libc::CPU_SETSIZE as usize {
                if libc::CPU_ISSET(c, &set) {
                    return c;
                }
            }
        }
    }
    0
}

fn spin(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 1u64;
    while t.elapsed() < d {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, what: &str| -> Result<u64, String> {
        args.get(i)
            .ok_or(format!("{what} missing"))?
            .parse()
            .map_err(|e| format!("{what}: {e}"))
    };
    if args.first().is_some_and(|a| a == "hog") {
        let secs = num(1, "hog SECS")?;
        let cpu = args
            .get(2)
            .map_or(Ok(first_cpu() as u64), |_| num(2, "hog CPU"))?;
        pin(cpu as usize)?;
        spin(Duration::from_secs(secs));
        return Ok(());
    }
    let (mut proofs, mut cpu) = (3u64, first_cpu() as u64);
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--proofs" => proofs = num(i + 1, "--proofs")?,
            "--cpu" => cpu = num(i + 1, "--cpu")?,
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--proofs N, --cpu K, hog SECS K)"
                )
                .into());
            }
        }
        i += 2;
    }
    let probe = Probe::start(
        ProbeConfig::from_env("contended-prover", env!("CARGO_PKG_VERSION"))?,
        SessionInfo {
            backend: "cpu".into(),
            ..Default::default()
        },
    )?;
    // Only the proving thread: the probe's collector keeps the other CPUs.
    pin(cpu as usize)?;
    let lock = Arc::new(Mutex::new(0u64));
    for n in 0..proofs {
        let proof = ProofScope::begin(ProofInfo {
            circuit: "contended".into(),
            constraints: 1,
            circuits: 1,
            backend: "cpu".into(),
            synthetic_srs: false,
        });
        {
            let _s = span!("setup");
            spin(Duration::from_millis(20));
        }
        // CPU-bound, no span: running — or runnable, waiting for the CPU a hog holds.
        std::hint::black_box(spin(Duration::from_millis(300)));
        {
            let _s = span!("compute");
            spin(Duration::from_millis(20));
        }
        // Blocked, no span: another thread, outside the proof, holds the lock inside its
        // `hold_lock` span (inside the proof, its span would account for the wait).
        let (locked_tx, locked_rx) = mpsc::channel();
        let holder = {
            let lock = lock.clone();
            std::thread::Builder::new()
                .name("holder".into())
                .spawn(move || {
                    let mut guard = lock.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = locked_tx.send(());
                    {
                        let _s = span!("hold_lock");
                        std::thread::sleep(Duration::from_millis(300));
                        *guard += 1;
                    }
                    drop(guard);
                })?
        };
        let _ = locked_rx.recv();
        *lock.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        let _ = holder.join();
        {
            let _s = span!("finish");
            spin(Duration::from_millis(20));
        }
        proof.end(true, Verification::NotChecked, None);
        println!("proof {} done", n + 1);
    }
    probe.shutdown("done");
    Ok(())
}
