//! One proof = one batch of circuits, proved in C2's phases and thread structure:
//!
//! ```text
//! caller ── synthesis (rayon, one task per circuit) ────────────── epilogue ─ release
//! prep_msm thread ──────────── prep_msm ─▶ b_g2_msm
//! compute/gpu-i thread(s) ──── ntt_msm_h ─ barrier_wait ─ batch_add ─ tail_msm
//! ```
//! `batch_add` sums the ones of all four queries (L, A, B in G1 and B in G2) on the device, as
//! supraseal does, in one backend call (B's G1 and G2 queries share its lists); `b_g2_msm` is
//! B's G2 tail, by Pippenger on the CPU — or, with [`G2Tail::Device`], on each device thread
//! after `tail_msm`.
//! With several devices (GPUs), the batch's circuits are split into contiguous runs, one
//! device thread each; all wait on the same prep result.
//! Every phase is a probe span under the proof's outer span `prove` (the wrapper timer).

use super::assignment::ProvingAssignment;
use super::backend::{Abc, Backend, BackendError, G2Tail, Ones, OnesQueries, OnesSums};
use super::circuits::AnyCircuit;
use super::column::ColumnPool;
use super::dealloc::{self, DeallocMode};
use super::msm;
use super::ntt::Domain;
use super::params::ParamSet;
use super::prep::{self, Densities, Prepared};
use crate::probe::{ProofInfo, ProofScope, SpanHandle, Verification};
use crate::span;
use bellperson::groth16::{Proof, verify_proofs_batch};
use blstrs::{Bls12, G1Affine, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which proofs of a batch are verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyMode {
    Every,
    OnePerBatch,
    Off,
}

impl VerifyMode {
    pub fn parse(s: &str) -> Option<VerifyMode> {
        match s {
            "every" | "all" => Some(VerifyMode::Every),
            "one" | "one-per-batch" => Some(VerifyMode::OnePerBatch),
            "off" | "none" => Some(VerifyMode::Off),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("{0}")]
    Thread(String),
    #[error("circuits of one batch differ in shape")]
    MixedShapes,
    #[error("the verifying key has an identity delta: parameters are broken")]
    Identity,
    #[error("a batch needs at least one circuit")]
    Empty,
}

/// What a batch waits for and announces when batches overlap (`serve`; see `overlap`). Without
/// stages a batch runs alone.
pub trait Stages: Sync {
    /// The proof has begun (its outer span is current): say how it was admitted.
    fn begun(&self);
    /// Synthesis is over: the next batch may synthesise.
    fn synthesized(&self);
    /// Blocks until this batch may use the devices (inside a `wait_devices` span).
    fn take_devices(&self);
    /// This batch's device phases are over.
    fn free_devices(&self);
    /// Where synthesis runs: a pool of its own, so that a batch synthesised ahead does not
    /// queue the current batch's CPU work (prep_msm's tasks, the GPU feeders) behind its own
    /// in rayon's global pool. `None`: the global pool.
    fn synthesis_pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }
}

/// What to prove.
pub struct BatchRequest<'a> {
    pub params: &'a ParamSet,
    pub backend: &'a dyn Backend,
    /// The circuits with their witnesses, and each one's public inputs.
    pub circuits: Vec<(AnyCircuit, Vec<Scalar>)>,
    pub dealloc: DeallocMode,
    /// Where synthesis writes a, b, c: columns lent by this pool and given back at the end
    /// of the proof (the next proof writes into the same memory, page-locked once on a GPU;
    /// nothing of them is freed), or, without one, vectors of their own released with the
    /// rest as `dealloc` says.
    pub columns: Option<&'a ColumnPool>,
    pub verify: VerifyMode,
    /// Where B's G2 tail MSM runs.
    pub g2_tail: G2Tail,
    /// The batch's place among overlapping batches; `None` runs it alone.
    pub stages: Option<&'a dyn Stages>,
    /// What the batch receives beside its circuits and releases with its vectors.
    pub ballast: Ballast,
}

impl std::fmt::Debug for BatchRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchRequest")
            .field("circuits", &self.circuits.len())
            .field("dealloc", &self.dealloc)
            .field("columns", &self.columns)
            .field("verify", &self.verify)
            .field("g2_tail", &self.g2_tail)
            .field("overlapped", &self.stages.is_some())
            .finish_non_exhaustive()
    }
}

/// What came out.
#[derive(Debug)]
pub struct BatchOutput {
    /// When the proof began (its outer span opened).
    pub started: Instant,
    pub proofs: Vec<Proof<Bls12>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    pub verification: Verification,
    /// Wall time of each phase (probe-independent), in pipeline order.
    pub phases: Vec<(&'static str, Duration)>,
    /// The outer span: synthesis to the release of the vectors.
    pub total: Duration,
    pub verify_time: Duration,
    pub proof_id: u64,
    /// Bytes of proving vectors released at the end of the proof.
    pub released_bytes: u64,
    /// The threads that ran the device phases, one per device used (`compute-0`, `gpu-0`, …).
    pub device_threads: Vec<String>,
    /// Where `b_g2_msm` ran.
    pub g2_tail: G2Tail,
}

/// Everything a proof allocates that lives until the end of the call (C2 frees the same set
/// in its destructors: the assignments, a/b/c, the split vectors and tail bases).
#[derive(Debug)]
struct ProvingVectors {
    abc: Vec<Abc>,
    inputs: Vec<Vec<Scalar>>,
    aux: Vec<Vec<Scalar>>,
    prepared: Arc<Prepared>,
    ballast: Ballast,
}

/// Memory a batch receives with its circuits and releases with its proving vectors, as C2
/// receives C1's output and frees it with its own vectors. A small circuit frees its vectors
/// in microseconds and the ghost cannot be seen; with this the release is a real free of real
/// resident memory that the probe times (`prover serve --ballast-mib`, set by `proofscope demo`
/// from the machine's memory). Written before the batch begins, so that the pages' first
/// touch (about ten times the cost of their release here) is not inside the proof. No proof
/// reads it.
#[derive(Debug, Default)]
pub struct Ballast(Vec<u8>);

impl Ballast {
    /// `bytes`, every page written (resident, as C2's vectors are).
    pub fn written(bytes: u64) -> Ballast {
        Ballast(vec![0x5a; usize::try_from(bytes).unwrap_or(usize::MAX)])
    }
}

impl ProvingVectors {
    /// Heap bytes held (capacities), i.e. what releasing them frees.
    fn bytes(&self) -> u64 {
        fn v<T>(x: &Vec<T>) -> u64 {
            (x.capacity() * std::mem::size_of::<T>()) as u64
        }
        let abc: u64 = self
            .abc
            .iter()
            .flat_map(Abc::columns)
            .map(|c| c.capacity_bytes())
            .sum();
        let assign: u64 = self.inputs.iter().chain(&self.aux).map(v).sum();
        let p = &self.prepared;
        let split: u64 = [&p.l, &p.a, &p.b]
            .iter()
            .map(|q| {
                v(&q.tail_bases)
                    + q.tail_index.as_ref().map_or(0, v)
                    + q.tail_scalars.iter().map(v).sum::<u64>()
                    + q.ones.iter().map(v).sum::<u64>()
            })
            .sum();
        let ballast = v(&self.ballast.0);
        abc + assign
            + split
            + v(&p.b_g2_tail_bases)
            + p.b_inputs.iter().map(v).sum::<u64>()
            + ballast
    }
}

#[derive(Debug, Default)]
struct Timer {
    phases: Vec<(&'static str, Duration)>,
}

impl Timer {
    fn time<R>(&mut self, name: &'static str, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let r = f();
        self.phases.push((name, t.elapsed()));
        r
    }
}

fn spawn<'s, T: Send + 's>(
    s: &'s std::thread::Scope<'s, '_>,
    name: String,
    f: impl FnOnce() -> T + Send + 's,
) -> Result<std::thread::ScopedJoinHandle<'s, T>, ProveError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn_scoped(s, f)
        .map_err(|e| ProveError::Thread(format!("cannot start thread {name}: {e}")))
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>, what: &str) -> Result<T, ProveError> {
    h.join()
        .map_err(|_| ProveError::Thread(format!("the {what} thread panicked")))
}

/// Results of the device threads, per circuit in batch order.
#[derive(Default)]
struct DevicePart {
    h: Vec<G1Projective>,
    /// Per circuit: batch-add and tail sums for L, A, B_G1.
    l: Vec<G1Projective>,
    a: Vec<G1Projective>,
    b: Vec<G1Projective>,
    /// Per circuit: the batch-added ones of B's G2 query (its tail is `b_g2_msm`'s).
    b2_ones: Vec<G2Projective>,
    /// Per circuit: B's G2 tail, when this thread ran `b_g2_msm` ([`G2Tail::Device`]).
    b2_tail: Vec<G2Projective>,
    abc: Vec<Abc>,
    times: Vec<(&'static str, Duration)>,
}

impl DevicePart {
    /// Appends the next device's circuits; a phase's time is the slowest device's.
    fn append(&mut self, o: DevicePart) {
        self.h.extend(o.h);
        self.l.extend(o.l);
        self.a.extend(o.a);
        self.b.extend(o.b);
        self.b2_ones.extend(o.b2_ones);
        self.b2_tail.extend(o.b2_tail);
        self.abc.extend(o.abc);
        for (name, d) in o.times {
            match self.times.iter_mut().find(|(n, _)| *n == name) {
                Some((_, t)) => *t = (*t).max(d),
                None => self.times.push((name, d)),
            }
        }
    }
}

/// Circuits `0..k` in at most `units` contiguous runs, as even as possible (C2's split of a
/// batch across GPUs); no run is empty.
pub fn split_ranges(k: usize, units: usize) -> Vec<std::ops::Range<usize>> {
    let units = units.clamp(1, k.max(1));
    let (per, extra) = (k / units, k % units);
    let mut start = 0;
    (0..units)
        .map(|u| {
            let len = per + usize::from(u < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// A run of circuits' entries of a per-circuit list; an empty list (a query that is not
/// split has no ones) stays empty for every run.
pub fn run_of<T>(v: &[T], r: std::ops::Range<usize>) -> &[T] {
    v.get(r).unwrap_or(&[])
}

/// The queries a device thread needs: the G1 ones and B's G2 query.
struct DeviceQueries<'p> {
    h: &'p [G1Affine],
    l: &'p [G1Affine],
    a: &'p [G1Affine],
    b: &'p [G1Affine],
    b2: &'p [blstrs::G2Affine],
}

/// One device's share of the batch (circuits `range`): ntt_msm_h, the barrier, batch_add and
/// tail_msm, as C2's per-GPU thread.
fn device_part(
    backend: &dyn Backend,
    domain: &Domain,
    mut abc: Vec<Abc>,
    range: std::ops::Range<usize>,
    bases: &DeviceQueries<'_>,
    rx: std::sync::mpsc::Receiver<Arc<Prepared>>,
    g2_tail: G2Tail,
) -> Result<DevicePart, ProveError> {
    let mut t = Timer::default();
    let h = t.time("ntt_msm_h", || {
        let _s = span!("ntt_msm_h");
        backend.ntt_msm_h(domain, &mut abc, bases.h)
    })?;
    let prepared = {
        let _s = span!("barrier_wait");
        rx.recv()
            .map_err(|_| ProveError::Thread("prep_msm ended without a result".into()))?
    };
    let (p, full) = (&prepared, bases);
    let sums = t.time("batch_add", || {
        let _s = span!("batch_add");
        let ones = |bases, lists| Ones {
            bases,
            lists: run_of(lists, range.clone()),
        };
        backend.batch_add_queries(&OnesQueries {
            l: ones(full.l, p.l.ones.as_slice()),
            a: ones(full.a, p.a.ones.as_slice()),
            b: ones(full.b, p.b.ones.as_slice()),
            b2: full.b2,
        })
    })?;
    let OnesSums {
        l: l1,
        a: a1,
        b: b1,
        b2: mut g2_ones,
    } = sums;
    // An unsplit B has no ones: every circuit's G2 sum is the identity.
    g2_ones.resize(range.len(), G2Projective::identity());
    let (l2, a2, b2) = t.time("tail_msm", || -> Result<_, BackendError> {
        let _s = span!("tail_msm");
        Ok((
            backend.tail_msm(p.l.bases(full.l), run_of(&p.l.tail_scalars, range.clone()))?,
            backend.tail_msm(p.a.bases(full.a), run_of(&p.a.tail_scalars, range.clone()))?,
            backend.tail_msm(p.b.bases(full.b), run_of(&p.b.tail_scalars, range.clone()))?,
        ))
    })?;
    let b2_tail = match g2_tail {
        G2Tail::Prep => Vec::new(),
        G2Tail::Device => t.time("b_g2_msm", || {
            let _s = span!("b_g2_msm");
            let tails = run_of(&p.b.tail_scalars, range.clone());
            let mut v = backend.tail_msm_g2(g2_tail_bases(p, full.b2), tails)?;
            // An empty tail (a batch without B columns) sums to the identity.
            v.resize(range.len(), G2Projective::identity());
            Ok::<_, BackendError>(v)
        })?,
    };
    let sum = |x: Vec<G1Projective>, y: Vec<G1Projective>| -> Vec<G1Projective> {
        if x.is_empty() {
            y
        } else {
            x.into_iter().zip(y).map(|(p, q)| p + q).collect()
        }
    };
    Ok(DevicePart {
        h,
        l: sum(l1, l2),
        a: sum(a1, a2),
        b: sum(b1, b2),
        b2_ones: g2_ones,
        b2_tail,
        abc,
        times: t.phases,
    })
}

/// The batch's witnesses, split as the phases use them.
struct Witness {
    abc: Vec<Abc>,
    inputs: Vec<Vec<Scalar>>,
    aux: Vec<Vec<Scalar>>,
    dens: Densities,
    domain: Domain,
    /// Public inputs, and those the B query holds.
    n_inputs: usize,
    nb_inputs: usize,
}

/// Each query's bases for the public inputs and for the auxiliary assignment.
struct Queries<'p> {
    a_in: &'p [G1Affine],
    a_aux: &'p [G1Affine],
    b_in: &'p [G1Affine],
    b_aux: &'p [G1Affine],
    b2_in: &'p [blstrs::G2Affine],
    b2_aux: &'p [blstrs::G2Affine],
}

impl<'p> Queries<'p> {
    /// The queries split after `n_inputs` public inputs (A) and the `nb_inputs` of them B holds.
    fn of(
        params: &'p bellperson::groth16::Parameters<Bls12>,
        n_inputs: usize,
        nb_inputs: usize,
    ) -> Queries<'p> {
        let (a_in, a_aux) = params.a.split_at(n_inputs.min(params.a.len()));
        let (b_in, b_aux) = params.b_g1.split_at(nb_inputs.min(params.b_g1.len()));
        let (b2_in, b2_aux) = params.b_g2.split_at(nb_inputs.min(params.b_g2.len()));
        Queries {
            a_in,
            a_aux,
            b_in,
            b_aux,
            b2_in,
            b2_aux,
        }
    }
}

/// The bases the device phases read, copied to the devices beside synthesis (on a thread of
/// its own, in an `upload_bases` span of the proof): only the first proof of a session finds
/// them missing, and it pays the copy while its circuits are synthesised rather than inside
/// `ntt_msm_h` and `batch_add` (2 GB at 2^22, 8 GB at 2^24). The queries are cut where the
/// circuit's shape says; should the witness disagree, the phases upload what they use.
fn upload_bases_beside<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    ps: &'s ParamSet,
    backend: &'s dyn Backend,
    root: SpanHandle,
) -> Result<std::thread::ScopedJoinHandle<'s, Result<(), BackendError>>, ProveError> {
    let params = &ps.params;
    let q = Queries::of(params, ps.shape.inputs, ps.shape.b_input_density.count());
    spawn(s, "upload_bases".into(), move || {
        let _a = root.adopt();
        backend.make_resident(&[&params.h, &params.l, q.a_aux, q.b_aux], &[q.b2_aux])
    })
}

/// synthesis: one rayon task per circuit (on the stages' pool when batches overlap), in a
/// `synthesis` span; the assignments split into what the phases use.
fn synthesize(
    ps: &ParamSet,
    circuits: Vec<(AnyCircuit, Vec<Scalar>)>,
    stages: Option<&dyn Stages>,
    columns: Option<&ColumnPool>,
    timer: &mut Timer,
) -> Result<Witness, ProveError> {
    let domain_len = ps.shape.constraints.next_power_of_two();
    let assignments = timer.time("synthesis", || {
        let _s = span!("synthesis");
        let parent = SpanHandle::current();
        let run = move || {
            circuits
                .into_par_iter()
                .map(|(c, _)| {
                    let _a = parent.adopt();
                    let _s = span!("synthesize_circuit");
                    ProvingAssignment::synthesize_sized(c, &ps.shape, domain_len, columns)
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ProveError::Synthesis(e.to_string()))
        };
        match stages.and_then(|st| st.synthesis_pool()) {
            Some(pool) => pool.install(run),
            None => run(),
        }
    });
    if let Some(st) = stages {
        st.synthesized();
    }
    witness(assignments?)
}

/// The assignments as the phases use them; their shapes must agree.
fn witness(assignments: Vec<ProvingAssignment>) -> Result<Witness, ProveError> {
    let first = &assignments[0];
    if assignments
        .iter()
        .any(|p| p.a.len() != first.a.len() || p.aux_assignment.len() != first.aux_assignment.len())
    {
        return Err(ProveError::MixedShapes);
    }
    let dens = Densities {
        a_aux: first.a_aux_density.clone(),
        b_input: first.b_input_density.clone(),
        b_aux: first.b_aux_density.clone(),
    };
    let domain =
        Domain::for_len(first.a.len()).map_err(|e| ProveError::Synthesis(e.to_string()))?;
    let n_inputs = first.input_assignment.len();
    let nb_inputs = dens.b_input.count();
    let k = assignments.len();
    let mut w = Witness {
        abc: Vec::with_capacity(k),
        inputs: Vec::with_capacity(k),
        aux: Vec::with_capacity(k),
        dens,
        domain,
        n_inputs,
        nb_inputs,
    };
    for p in assignments {
        w.abc.push(Abc {
            a: p.a,
            b: p.b,
            c: p.c,
        });
        w.inputs.push(p.input_assignment);
        w.aux.push(p.aux_assignment);
    }
    Ok(w)
}

/// What the device phases hand back: the prepared split, the G2 tail sums, the device sums.
type DeviceResults = (
    Arc<Prepared>,
    Vec<G2Projective>,
    DevicePart,
    Vec<(&'static str, Duration)>,
);

/// prep thread ∥ one thread per device, joined by a barrier as in C2. Each device takes a
/// contiguous run of the circuits (`ranges`) with its own a, b, c.
fn device_phases(
    params: &bellperson::groth16::Parameters<Bls12>,
    units: &[&dyn Backend],
    ranges: &[std::ops::Range<usize>],
    w: &mut Witness,
    q: &Queries<'_>,
    root: SpanHandle,
    g2_tail: G2Tail,
) -> Result<DeviceResults, ProveError> {
    std::thread::scope(|s| -> Result<_, ProveError> {
        let mut senders = Vec::with_capacity(ranges.len());
        let mut receivers = Vec::with_capacity(ranges.len());
        for _ in ranges {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<Prepared>>(1);
            senders.push(tx);
            receivers.push(rx);
        }
        let (inputs, aux, dens) = (&w.inputs, &w.aux, &w.dens);
        let (a_aux, b_aux, b2_aux) = (q.a_aux, q.b_aux, q.b2_aux);
        let prep_thread = spawn(s, "prep_msm".into(), move || {
            let _a = root.adopt();
            let mut t = Timer::default();
            let prepared = Arc::new(t.time("prep_msm", || {
                let _s = span!("prep_msm");
                let ins: Vec<&[Scalar]> = inputs.iter().map(Vec::as_slice).collect();
                let auxs: Vec<&[Scalar]> = aux.iter().map(Vec::as_slice).collect();
                prep::prepare(&params.l, a_aux, b_aux, b2_aux, dens, &ins, &auxs)
            }));
            for tx in senders {
                let _ = tx.send(prepared.clone());
            }
            let g2 = match g2_tail {
                G2Tail::Prep => t.time("b_g2_msm", || {
                    let _s = span!("b_g2_msm");
                    b_g2(&prepared, b2_aux)
                }),
                G2Tail::Device => Vec::new(),
            };
            (prepared, g2, t.phases)
        })?;
        let mut rest = std::mem::take(&mut w.abc);
        let domain = &w.domain;
        let mut threads = Vec::with_capacity(ranges.len());
        for ((range, rx), unit) in ranges.iter().cloned().zip(receivers).zip(units) {
            let tail = rest.split_off(range.len());
            let mine = std::mem::replace(&mut rest, tail);
            let bases = DeviceQueries {
                h: &params.h,
                l: &params.l,
                a: q.a_aux,
                b: q.b_aux,
                b2: q.b2_aux,
            };
            threads.push(spawn(s, unit.thread_name(), move || {
                let _a = root.adopt();
                device_part(*unit, domain, mine, range, &bases, rx, g2_tail)
            })?);
        }
        let mut parts = Vec::with_capacity(threads.len());
        for t in threads {
            parts.push(join(t, "device"));
        }
        let (prepared, mut g2, prep_times) = join(prep_thread, "prep_msm")?;
        let mut dev = DevicePart::default();
        for p in parts {
            dev.append(p??);
        }
        if g2_tail == G2Tail::Device {
            g2 = std::mem::take(&mut dev.b2_tail);
        }
        Ok((prepared, g2, dev, prep_times))
    })
}

/// epilogue: Groth16 randomisation with fresh r, s from a CSPRNG.
fn epilogue(
    vk: &bellperson::groth16::VerifyingKey<Bls12>,
    q: &Queries<'_>,
    inputs: &[Vec<Scalar>],
    prepared: &Prepared,
    g2: &[G2Projective],
    dev: &DevicePart,
) -> Result<Vec<Proof<Bls12>>, ProveError> {
    let _s = span!("epilogue");
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::Identity);
    }
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    (0..inputs.len())
        .map(|i| {
            let r = Scalar::random(&mut rng);
            let s = Scalar::random(&mut rng);
            let a_answer = msm::g1_msm(q.a_in, &inputs[i]) + dev.a[i];
            let b1_answer = msm::g1_msm(q.b_in, &prepared.b_inputs[i]) + dev.b[i];
            let b2_answer = msm::g2_msm(q.b2_in, &prepared.b_inputs[i]) + g2[i] + dev.b2_ones[i];
            let g_a = vk.delta_g1 * r + vk.alpha_g1 + a_answer;
            let g_b = vk.delta_g2 * s + vk.beta_g2 + b2_answer;
            let g_c = a_answer * s
                + b1_answer * r
                + vk.delta_g1 * (r * s)
                + vk.alpha_g1 * s
                + vk.beta_g1 * r
                + dev.h[i]
                + dev.l[i];
            Ok(Proof {
                a: g_a.to_affine(),
                b: g_b.to_affine(),
                c: g_c.to_affine(),
            })
        })
        .collect()
}

/// The backend's units (one a GPU), the circuits each takes of `k`, and their threads' names.
fn units_of(
    backend: &dyn Backend,
    k: usize,
) -> (Vec<&dyn Backend>, Vec<std::ops::Range<usize>>, Vec<String>) {
    let units: Vec<&dyn Backend> = (0..backend.unit_count().max(1))
        .map(|i| backend.unit(i).unwrap_or(backend))
        .collect();
    let ranges = split_ranges(k, units.len());
    let threads = units
        .iter()
        .take(ranges.len())
        .map(|u| u.thread_name())
        .collect();
    (units, ranges, threads)
}

/// Runs `f` while the prover's stages hold the devices (when it runs in stages).
fn holding_devices<R>(stages: Option<&dyn Stages>, f: impl FnOnce() -> R) -> R {
    if let Some(st) = stages {
        let _s = span!("wait_devices");
        st.take_devices();
    }
    let r = f();
    if let Some(st) = stages {
        st.free_devices();
    }
    r
}

/// Proves one batch.
pub fn prove_batch(req: BatchRequest<'_>) -> Result<BatchOutput, ProveError> {
    let k = req.circuits.len();
    if k == 0 {
        return Err(ProveError::Empty);
    }
    let ps = req.params;
    let params = &ps.params;
    let scope = ProofScope::begin(ProofInfo {
        circuit: ps.size.kind.name().into(),
        constraints: ps.shape.constraints as u64,
        circuits: k as u32,
        backend: req.backend.name().into(),
        synthetic_srs: ps.synthetic(),
    });
    let root = scope.handle();
    let started = Instant::now();
    let mut timer = Timer::default();
    if let Some(st) = req.stages {
        st.begun();
    }
    let public_inputs: Vec<Vec<Scalar>> = req.circuits.iter().map(|(_, i)| i.clone()).collect();
    let mut w = std::thread::scope(|s| -> Result<Witness, ProveError> {
        let upload = upload_bases_beside(s, ps, req.backend, root)?;
        let w = synthesize(ps, req.circuits, req.stages, req.columns, &mut timer);
        join(upload, "upload_bases")??;
        w
    })?;
    let q = Queries::of(params, w.n_inputs, w.nb_inputs);

    let (units, ranges, device_threads) = units_of(req.backend, k);
    let done = holding_devices(req.stages, || {
        device_phases(params, &units, &ranges, &mut w, &q, root, req.g2_tail)
    });
    let (prepared, g2, dev, prep_times) = done?;
    timer.phases.extend(prep_times);
    timer.phases.extend(dev.times.iter().copied());
    let proofs = timer.time("epilogue", || {
        epilogue(&params.vk, &q, &w.inputs, &prepared, &g2, &dev)
    })?;

    // Release the proving vectors: here, inside the outer span and in no span (sync), or on
    // the dealloc thread (async). Pooled columns go back to their pool first, for the next
    // proof to write into (nothing is freed: microseconds).
    let (pooled, abc): (Vec<Abc>, Vec<Abc>) = dev.abc.into_iter().partition(Abc::pooled);
    drop(pooled);
    let vectors = ProvingVectors {
        abc,
        inputs: w.inputs,
        aux: w.aux,
        prepared,
        ballast: req.ballast,
    };
    let released_bytes = vectors.bytes();
    let proof_id = scope.id();
    let (total, scope) = match req.dealloc {
        // The ghost: freed here, inside the wrapper timer, in no span of its own.
        DeallocMode::Sync => {
            dealloc::release(DeallocMode::Sync, vectors);
            (started.elapsed(), scope.close_outer())
        }
        // As a detached drop: the wrapper timer ends, then the dealloc thread frees.
        DeallocMode::Async => {
            let total = started.elapsed();
            let scope = scope.close_outer();
            dealloc::release(DeallocMode::Async, vectors);
            (total, scope)
        }
    };

    let vt = Instant::now();
    let verification = verify(ps, &proofs, &public_inputs, req.verify, proof_id);
    let verify_time = vt.elapsed();
    scope.end(true, verification, None);
    Ok(BatchOutput {
        started,
        proofs,
        public_inputs,
        verification,
        phases: timer.phases,
        total,
        verify_time,
        proof_id,
        released_bytes,
        device_threads,
        g2_tail: req.g2_tail,
    })
}

/// B_G2's tail by Pippenger, on the CPU (its ones are batch-added by the device threads).
fn b_g2(prepared: &Prepared, aux_bases: &[blstrs::G2Affine]) -> Vec<G2Projective> {
    let bases = g2_tail_bases(prepared, aux_bases);
    prepared
        .b
        .tail_scalars
        .iter()
        .map(|tail| msm::g2_msm(bases, tail))
        .collect()
}

/// The bases of B's G2 tail: the split's own copy, or the whole query when B is not split.
fn g2_tail_bases<'p>(
    prepared: &'p Prepared,
    aux_bases: &'p [blstrs::G2Affine],
) -> &'p [blstrs::G2Affine] {
    if prepared.b.is_split() {
        &prepared.b_g2_tail_bases
    } else {
        aux_bases
    }
}

/// Checks proofs with bellperson's verifier, under a `verify` span of the proof (after its
/// outer span: verification is not part of the wrapper timer).
pub fn verify(
    ps: &ParamSet,
    proofs: &[Proof<Bls12>],
    inputs: &[Vec<Scalar>],
    mode: VerifyMode,
    proof_id: u64,
) -> Verification {
    let Some(pvk) = &ps.pvk else {
        return Verification::Unverifiable;
    };
    let count = match mode {
        VerifyMode::Off => return Verification::NotChecked,
        VerifyMode::OnePerBatch => 1.min(proofs.len()),
        VerifyMode::Every => proofs.len(),
    };
    let _s = span!(
        "verify",
        parent = SpanHandle {
            span: 0,
            proof: proof_id
        }
    );
    let refs: Vec<&Proof<Bls12>> = proofs[..count].iter().collect();
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    match verify_proofs_batch(pvk, &mut rng, &refs, &inputs[..count]) {
        Ok(true) => Verification::Valid,
        _ => Verification::Invalid,
    }
}
