//! The recorded spans of a proof nest as specified and every phase appears; releases of the
//! proving vectors land where the dealloc mode says — asserted from the event stream.
// The probe's own test client: one copy for both crates.
#[path = "../../probe/tests/common/mod.rs"]
mod common;

use common::*;
use probe_protocol::*;
use prover_core::groth16::backend::{CpuBackend, G2Tail};
use prover_core::groth16::circuits::CircuitKind;
use prover_core::groth16::column::ColumnPool;
use prover_core::groth16::dealloc::{self, DeallocMode};
use prover_core::groth16::params::{self, SrsMode};
use prover_core::groth16::pipeline::{BatchOutput, BatchRequest, VerifyMode, prove_batch};
use prover_core::probe::{CountingAllocator, Probe, ProbeConfig, SessionInfo, SocketChoice};
use rand::SeedableRng;
use std::collections::HashMap;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const PHASES: [&str; 7] = [
    "synthesis",
    "prep_msm",
    "ntt_msm_h",
    "batch_add",
    "tail_msm",
    "b_g2_msm",
    "epilogue",
];

struct Recorded {
    events: Vec<Event>,
    names: HashMap<u32, String>,
    threads: HashMap<u32, String>,
    spans: HashMap<u64, (SpanBegin, Option<u64>)>,
}

impl Recorded {
    fn name(&self, span: u64) -> &str {
        &self.names[&self.spans[&span].0.name]
    }
}

/// Proves one batch of 2 × squaring 2^10 with the probe recording, large-block threshold
/// lowered to 16 KiB so the small proving vectors count as large.
fn record(mode: DeallocMode) -> Recorded {
    record_batches(mode, None, 1).0
}

/// As [`record`], `batches` batches one after the other, a, b, c written into `columns` when
/// given; each batch's output too.
fn record_batches(
    mode: DeallocMode,
    columns: Option<&ColumnPool>,
    batches: usize,
) -> (Recorded, Vec<BatchOutput>) {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("p.sock");
    let size = CircuitKind::Squaring.size_for(10).unwrap();
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache");
    let ps = params::obtain(size, SrsMode::Real, &cache).unwrap();
    let p = Probe::start(
        ProbeConfig::new("test", "0")
            .socket(SocketChoice::At(sock.clone()))
            .gpu_sample(None)
            .large_block(16 << 10),
        SessionInfo::default(),
    )
    .unwrap();
    let mut client = Client::connect(&sock, true);
    let mut events = client.read_until(|e| matches!(e, Event::LiveStart { .. }));
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let mut outs = Vec::new();
    for _ in 0..batches {
        let circuits = (0..2).map(|_| size.random(&mut rng)).collect();
        let out = prove_batch(BatchRequest {
            params: &ps,
            backend: &CpuBackend,
            circuits,
            dealloc: mode,
            columns,
            verify: VerifyMode::Every,
            g2_tail: G2Tail::Prep,
            stages: None,
            ballast: Default::default(),
        })
        .unwrap();
        assert_eq!(out.verification, Verification::Valid);
        dealloc::flush();
        outs.push(out);
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    p.shutdown("done");
    events.extend(client.read_until_goodbye(None));
    let names = names(&events);
    let threads = threads(&events);
    let mut spans = HashMap::new();
    for e in &events {
        match e {
            Event::SpanBegin(b) => {
                spans.insert(b.span, (*b, None));
            }
            Event::SpanEnd(s) => {
                if let Some(x) = spans.get_mut(&s.span) {
                    x.1 = Some(s.ts);
                }
            }
            _ => {}
        }
    }
    let r = Recorded {
        events,
        names,
        threads,
        spans,
    };
    (r, outs)
}

fn outer(r: &Recorded) -> (u64, u64, u64) {
    let pb = r
        .events
        .iter()
        .find_map(|e| {
            if let Event::ProofBegin(p) = e {
                Some(p.clone())
            } else {
                None
            }
        })
        .unwrap();
    let (b, end) = r.spans[&pb.span];
    (pb.span, b.ts, end.unwrap())
}

#[test]
fn spans_nest_as_specified_and_every_phase_appears() {
    let r = record(DeallocMode::Async);
    let (outer_id, t0, t1) = outer(&r);
    assert_eq!(r.name(outer_id), "prove");
    let pe = r
        .events
        .iter()
        .find_map(|e| {
            if let Event::ProofEnd(p) = e {
                Some(p.clone())
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(pe.verification, Verification::Valid);
    for phase in PHASES {
        let (id, (b, end)) = r
            .spans
            .iter()
            .find(|(_, (b, _))| r.names[&b.name] == phase)
            .unwrap_or_else(|| panic!("phase {phase} missing"));
        assert_eq!(
            b.parent,
            Some(outer_id),
            "{phase} is a child of the outer span"
        );
        let end = end.unwrap_or_else(|| panic!("{phase} never ended"));
        assert!(b.ts >= t0 && end <= t1, "{phase} inside the outer span");
        assert_eq!(b.proof, Some(pe.proof));
        let _ = id;
    }
    // Thread structure: prep on its own thread, device phases on the compute thread, synthesis
    // and epilogue on the caller.
    let thread_of = |phase: &str| {
        let b = r
            .spans
            .values()
            .find(|(b, _)| r.names[&b.name] == phase)
            .unwrap()
            .0;
        r.threads[&b.thread].clone()
    };
    assert_eq!(thread_of("prep_msm"), "prep_msm");
    assert_eq!(thread_of("b_g2_msm"), "prep_msm");
    assert_eq!(thread_of("ntt_msm_h"), "compute-0");
    assert_eq!(thread_of("tail_msm"), "compute-0");
    assert_eq!(thread_of("synthesis"), thread_of("epilogue"));
    // Sub-spans: per-circuit synthesis (on rayon workers) under synthesis; each NTT and the H
    // MSM under ntt_msm_h.
    let children = |phase: &str| -> Vec<String> {
        let pid = *r
            .spans
            .iter()
            .find(|(_, (b, _))| r.names[&b.name] == phase)
            .unwrap()
            .0;
        r.spans
            .values()
            .filter(|(b, _)| b.parent == Some(pid))
            .map(|(b, _)| r.names[&b.name].clone())
            .collect()
    };
    let syn = children("synthesis");
    assert_eq!(syn.iter().filter(|n| *n == "synthesize_circuit").count(), 2);
    let h = children("ntt_msm_h");
    assert_eq!(h.iter().filter(|n| *n == "intt").count(), 6, "{h:?}");
    assert_eq!(h.iter().filter(|n| *n == "coset_ntt").count(), 6);
    assert_eq!(h.iter().filter(|n| *n == "icoset_ntt").count(), 2);
    assert_eq!(h.iter().filter(|n| *n == "h_msm").count(), 2);
    // Verification runs after the outer span, in the same proof.
    let v = r
        .spans
        .values()
        .find(|(b, _)| r.names[&b.name] == "verify")
        .unwrap()
        .0;
    assert_eq!((v.parent, v.proof), (None, Some(pe.proof)));
    assert!(v.ts >= t1);
}

/// Releases inside the outer span and outside every phase span.
#[test]
fn sync_mode_releases_inside_the_outer_span_after_the_phases() {
    let r = record(DeallocMode::Sync);
    let (outer_id, t0, t1) = outer(&r);
    let phase_spans: Vec<(u64, u64)> = r
        .spans
        .values()
        .filter(|(b, _)| b.parent == Some(outer_id))
        .map(|(b, e)| (b.ts, e.unwrap()))
        .collect();
    let last_phase_end = phase_spans.iter().map(|(_, e)| *e).max().unwrap();
    let releases: Vec<BlockEvent> = r
        .events
        .iter()
        .filter_map(|e| {
            if let Event::Release(b) = e {
                Some(*b)
            } else {
                None
            }
        })
        .filter(|b| b.ts >= t0 && b.ts <= t1)
        .collect();
    // Temporaries freed inside a phase are attributed to that phase (or a sub-span); what the
    // outer span itself frees, outside every phase, is the proving vectors.
    let outer_frees: Vec<&BlockEvent> = releases
        .iter()
        .filter(|b| b.span == Some(outer_id))
        .collect();
    assert!(
        outer_frees.iter().filter(|b| b.bytes >= 32 * 1024).count() >= 6,
        "a, b, c of two circuits at least: {outer_frees:?}"
    );
    let caller = r.spans[&outer_id].0.thread;
    for b in &outer_frees {
        assert!(
            b.ts >= last_phase_end,
            "release at {} before the last phase ended at {last_phase_end}",
            b.ts
        );
        assert!(
            b.ts + b.inside_ns <= t1,
            "the free completes inside the outer span"
        );
        assert_eq!(b.thread, caller, "on the proving thread");
        assert!(
            phase_spans.iter().all(|(s, e)| b.ts < *s || b.ts >= *e),
            "outside every phase span"
        );
    }
    // On the proving thread, every free inside the proof has an enclosing span we know.
    for b in releases.iter().filter(|b| b.thread == caller) {
        let sid = b
            .span
            .expect("frees on the proving thread have an enclosing span");
        assert!(r.spans.contains_key(&sid));
    }
}

#[test]
fn async_mode_releases_on_the_dealloc_thread_after_the_outer_span() {
    let r = record(DeallocMode::Async);
    let (_, _, t1) = outer(&r);
    let dealloc_tid = r
        .threads
        .iter()
        .find(|(_, n)| *n == "dealloc")
        .map(|(id, _)| *id)
        .expect("dealloc thread defined");
    let on_dealloc: Vec<BlockEvent> = r
        .events
        .iter()
        .filter_map(|e| {
            if let Event::Release(b) = e {
                Some(*b)
            } else {
                None
            }
        })
        .filter(|b| b.thread == dealloc_tid)
        .collect();
    assert!(
        on_dealloc.iter().filter(|b| b.bytes >= 32 * 1024).count() >= 6,
        "{on_dealloc:?}"
    );
    for b in &on_dealloc {
        assert!(
            b.ts >= t1,
            "dealloc-thread release at {} inside the outer span (ends {t1})",
            b.ts
        );
        assert_eq!(b.span, None);
    }
}

/// Allocations of `bytes` made inside each proof's `synthesis` span, proof by proof.
fn synthesis_allocs(r: &Recorded, bytes: u64) -> Vec<usize> {
    let mut synth: Vec<(u64, u64)> = r
        .spans
        .values()
        .filter(|(b, _)| r.names[&b.name] == "synthesis")
        .map(|(b, e)| (b.ts, e.unwrap()))
        .collect();
    synth.sort_unstable();
    synth
        .iter()
        .map(|&(s, e)| {
            r.events
                .iter()
                .filter(|ev| {
                    matches!(ev, Event::Alloc(b) if b.ts >= s && b.ts <= e && b.bytes == bytes)
                })
                .count()
        })
        .collect()
}

/// `--dealloc reuse`: from the second proof on, synthesis writes a, b, c into the columns the
/// first gave back — no column is allocated again, and six fewer are released — while without
/// a pool every proof allocates its six.
#[test]
fn reuse_mode_writes_the_next_proof_into_the_columns_the_last_gave_back() {
    // Squaring 2^10: each column is the 1024-element domain, 32 KiB.
    const COLUMN: u64 = 32 * 1024;
    let pool = ColumnPool::new(None);
    let (reused, outs) = record_batches(DeallocMode::Async, Some(&pool), 2);
    let (fresh, fresh_outs) = record_batches(DeallocMode::Async, None, 2);
    let (a, b) = (
        synthesis_allocs(&reused, COLUMN),
        synthesis_allocs(&fresh, COLUMN),
    );
    eprintln!("32 KiB allocations in synthesis, proof by proof: {a:?} pooled, {b:?} fresh");
    // Other blocks of the same size may come and go (the assignment's vectors are near it):
    // the columns are the difference.
    assert_eq!((a.len(), b.len()), (2, 2), "{a:?} {b:?}");
    assert!(
        b[0] >= 6 && b[1] >= 6,
        "2 circuits × a, b, c each proof without a pool: {b:?}"
    );
    assert!(
        a[0] >= 6 && a[1] + 6 <= b[1],
        "the pool's columns made once: {a:?} with the pool, {b:?} without"
    );
    for (o, f) in outs.iter().zip(&fresh_outs) {
        assert_eq!(f.released_bytes - o.released_bytes, 6 * COLUMN);
    }
    assert_eq!(pool.kept().0, 6, "the columns wait for the next proof");
}
