//! What a call stack costs per large block: alloc + free of a block with stacks on
//! (`stack_block` = the block's size) and off, alternated (off, on, on, off, …) in ROUNDS rounds
//! of N pairs; untouched blocks (mmap/munmap only: the capture's cost stands out) and touched
//! ones (what a prover frees: the capture against the free's own cost).
//!
//! `cargo bench -p proofscope-probe --bench stacks`

use proofscope_probe::{CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use std::time::Instant;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

/// Nanoseconds per alloc+free pair of `bytes` (touched: every page written once).
fn pairs(stacks: bool, bytes: usize, n: usize, touch: bool) -> f64 {
    let mut config = ProbeConfig::new("stacks-bench", "0").socket(SocketChoice::None);
    config.gpu_sample = None;
    config.sched_sample = false;
    config.stack_block = if stacks { bytes as u64 } else { u64::MAX };
    let probe = Probe::start(config, SessionInfo::default()).expect("probe");
    let t0 = Instant::now();
    for i in 0..n {
        let mut v: Vec<u8> = Vec::with_capacity(bytes);
        if touch {
            // SAFETY: capacity is `bytes`; every byte is written before the length covers it.
            unsafe {
                std::ptr::write_bytes(v.as_mut_ptr(), i as u8, bytes);
                v.set_len(bytes);
            }
        }
        std::hint::black_box(&v);
    }
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    probe.shutdown("done");
    ns
}

fn main() {
    let rounds = 6;
    for (label, bytes, n, touch) in [
        ("16 MiB untouched", 16usize << 20, 2000, false),
        ("16 MiB touched", 16 << 20, 100, true),
        ("256 MiB touched", 256 << 20, 8, true),
    ] {
        let mut d = Vec::new();
        let (mut offs, mut ons) = (Vec::new(), Vec::new());
        for r in 0..rounds {
            let order = if r % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            let mut got = [0.0; 2];
            for s in order {
                got[usize::from(s)] = pairs(s, bytes, n, touch);
            }
            offs.push(got[0]);
            ons.push(got[1]);
            d.push(got[1] - got[0]);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (off, on, diff) = (med(&mut offs), med(&mut ons), med(&mut d.clone()));
        d.sort_by(f64::total_cmp);
        println!(
            "{label}: alloc+free {:.1} µs off, {:.1} µs on; two stacks add {:+.1} µs (median of {rounds} rounds, range {:+.1} … {:+.1}), {:+.2} % of the pair",
            off / 1e3,
            on / 1e3,
            diff / 1e3,
            d[0] / 1e3,
            d[d.len() - 1] / 1e3,
            diff / off * 100.0
        );
    }
}
