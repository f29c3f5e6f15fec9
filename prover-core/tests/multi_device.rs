//! A batch is split across every device a backend drives, one named thread per device, and
//! the proofs still verify. A CPU backend stands in for two GPUs (CI has none); it records
//! which circuits each unit was given and on which thread.
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use prover_core::groth16::backend::{Abc, Backend, BackendError, CpuBackend, G2Tail};
use prover_core::groth16::circuits::CircuitKind;
use prover_core::groth16::dealloc::DeallocMode;
use prover_core::groth16::ntt::Domain;
use prover_core::groth16::params::{self, SrsMode};
use prover_core::groth16::pipeline::{BatchRequest, VerifyMode, prove_batch, split_ranges};
use prover_core::probe::Verification;
use rand::SeedableRng;
use std::sync::Mutex;

/// One stand-in device: the CPU backend, a thread name of its own, and a log of
/// (phase, thread, circuits).
#[derive(Debug)]
struct Unit {
    index: usize,
    log: Mutex<Vec<(&'static str, String, usize)>>,
}

impl Unit {
    fn note(&self, phase: &'static str, circuits: usize) {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.log.lock().unwrap().push((phase, thread, circuits));
    }
}

impl Backend for Unit {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn thread_name(&self) -> String {
        format!("fake-gpu-{}", self.index)
    }
    fn ntt_msm_h(
        &self,
        domain: &Domain,
        abc: &mut [Abc],
        h_bases: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.note("ntt_msm_h", abc.len());
        CpuBackend.ntt_msm_h(domain, abc, h_bases)
    }
    fn batch_add(
        &self,
        bases: &[G1Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.note("batch_add", ones.len());
        CpuBackend.batch_add(bases, ones)
    }
    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        ones: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        self.note("batch_add_g2", ones.len());
        CpuBackend.batch_add_g2(bases, ones)
    }
    fn tail_msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.note("tail_msm", scalars.len());
        CpuBackend.tail_msm(bases, scalars)
    }
    fn tail_msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Vec<Scalar>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        self.note("tail_msm_g2", scalars.len());
        CpuBackend.tail_msm_g2(bases, scalars)
    }
}

#[derive(Debug)]
struct TwoDevices([Unit; 2]);

impl Backend for TwoDevices {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn unit_count(&self) -> usize {
        2
    }
    fn unit(&self, i: usize) -> Option<&dyn Backend> {
        self.0.get(i).map(|u| u as &dyn Backend)
    }
    // Called only through the units; the whole-batch calls would bypass the split.
    fn ntt_msm_h(
        &self,
        _: &Domain,
        _: &mut [Abc],
        _: &[G1Affine],
    ) -> Result<Vec<G1Projective>, BackendError> {
        Err(BackendError::Gpu("the pipeline must use the units".into()))
    }
    fn batch_add(&self, _: &[G1Affine], _: &[Vec<u32>]) -> Result<Vec<G1Projective>, BackendError> {
        Err(BackendError::Gpu("the pipeline must use the units".into()))
    }
    fn batch_add_g2(
        &self,
        _: &[G2Affine],
        _: &[Vec<u32>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        Err(BackendError::Gpu("the pipeline must use the units".into()))
    }
    fn tail_msm(
        &self,
        _: &[G1Affine],
        _: &[Vec<Scalar>],
    ) -> Result<Vec<G1Projective>, BackendError> {
        Err(BackendError::Gpu("the pipeline must use the units".into()))
    }
    fn tail_msm_g2(
        &self,
        _: &[G2Affine],
        _: &[Vec<Scalar>],
    ) -> Result<Vec<G2Projective>, BackendError> {
        Err(BackendError::Gpu("the pipeline must use the units".into()))
    }
}

#[test]
fn split_ranges_are_contiguous_even_and_never_empty() {
    assert_eq!(split_ranges(3, 2), vec![0..2, 2..3]);
    assert_eq!(split_ranges(4, 2), vec![0..2, 2..4]);
    assert_eq!(split_ranges(1, 2), vec![0..1]);
    assert_eq!(split_ranges(5, 1), vec![0..5]);
    assert_eq!(split_ranges(7, 3), vec![0..3, 3..5, 5..7]);
    assert_eq!(split_ranges(2, 0), vec![0..2]);
}

/// Each device's circuits, proved with B's G2 tail where `g2_tail` puts it; the log of every
/// unit checked (phases, threads, circuits).
fn split_batch(ps: &params::ParamSet, g2_tail: G2Tail, seed: u64) -> TwoDevices {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuits = (0..3).map(|_| ps.size.random(&mut rng)).collect();
    let units = TwoDevices([0, 1].map(|index| Unit {
        index,
        log: Mutex::new(Vec::new()),
    }));
    let out = prove_batch(BatchRequest {
        params: ps,
        backend: &units,
        circuits,
        dealloc: DeallocMode::Sync,
        columns: None,
        verify: VerifyMode::Every,
        g2_tail,
        stages: None,
        ballast: Default::default(),
    })
    .unwrap();
    assert_eq!(out.proofs.len(), 3);
    assert_eq!(out.verification, Verification::Valid, "{g2_tail:?}");
    assert_eq!(out.g2_tail, g2_tail);
    for (u, want) in units.0.iter().zip([2, 1]) {
        let log = u.log.lock().unwrap();
        let phases: Vec<&str> = log.iter().map(|(p, _, _)| *p).collect();
        assert_eq!(phases[0], "ntt_msm_h", "unit {}: {log:?}", u.index);
        assert!(phases.contains(&"batch_add") && phases.contains(&"tail_msm"));
        assert_eq!(
            phases.last() == Some(&"tail_msm_g2"),
            g2_tail == G2Tail::Device,
            "unit {}: {log:?}",
            u.index
        );
        for (phase, thread, n) in log.iter() {
            assert_eq!(thread, &format!("fake-gpu-{}", u.index), "{phase}");
            // A query with no ones (a dense witness) has no lists to batch-add.
            let none = phase.starts_with("batch_add") && *n == 0;
            assert!(*n == want || none, "unit {} {phase}: {n}", u.index);
        }
    }
    units
}

#[test]
fn a_batch_is_split_across_two_devices_and_verifies() {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache");
    // SHA-256 is mostly 0/1 witnesses, so its queries are split and batch_add has work.
    let size = CircuitKind::Sha256.size_for(15).unwrap();
    let ps = params::obtain(size, SrsMode::Real, &cache).unwrap();
    split_batch(&ps, G2Tail::Prep, 11);
}

/// `--g2-tail device`: each device thread sums its own circuits' G2 tails after tail_msm, and
/// the tails land with the right circuits (a tail given to the wrong proof fails its check):
/// split queries (SHA-256: an empty tail; mixed: a tenth of the query, its bases a copy) and
/// a dense one (squaring: no ones, the whole query is the tail).
#[test]
fn the_g2_tail_on_the_device_threads_lands_with_its_circuits() {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache");
    for (kind, log) in [
        (CircuitKind::Sha256, 15),
        (CircuitKind::Mixed, 12),
        (CircuitKind::Squaring, 12),
    ] {
        let size = kind.size_for(log).unwrap();
        let ps = params::obtain(size, SrsMode::Real, &cache).unwrap();
        split_batch(&ps, G2Tail::Device, 12);
    }
}
