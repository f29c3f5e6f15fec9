//! Measurements of the device MSM for `prover gpu-bench --msm`, with the inputs placed as
//! sppark's benchmarks place them (pageable host memory, page-locked host memory, bases resident
//! with scalars pageable or page-locked; transfers included), and blst on the CPU beside them,
//! each GPU result checked against the CPU's.

use super::msm::{MsmBases, MsmPlan, MsmScalars};
use super::timing::TimedOp;
use super::{Device, GpuError};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;
use std::time::Instant;

/// n distinct points, cheaply: per chunk a random start stepped by a random point, then one
/// batch normalisation per chunk (random points one by one would take minutes at 2^24).
pub fn distinct_points(n: usize, seed: u64) -> Vec<G1Affine> {
    distinct::<G1Projective>(n, seed)
}

/// As [`distinct_points`], in G2 (B's G2 query).
pub fn distinct_points_g2(n: usize, seed: u64) -> Vec<G2Affine> {
    distinct::<G2Projective>(n, seed)
}

fn distinct<G>(n: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G: Curve + Group + Send + Sync,
    G::AffineRepr: Default + Clone + Send,
{
    let chunk = 1 << 14;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let step = G::random(&mut rng);
    let starts: Vec<G> = (0..n.div_ceil(chunk))
        .map(|_| G::random(&mut rng))
        .collect();
    let mut out = vec![G::AffineRepr::default(); n];
    out.par_chunks_mut(chunk)
        .zip(starts.par_iter())
        .for_each(|(dst, start)| {
            let mut p = *start;
            let proj: Vec<G> = (0..dst.len())
                .map(|_| {
                    let q = p;
                    p += step;
                    q
                })
                .collect();
            G::batch_normalize(&proj, dst);
        });
    out
}

/// n random scalars, in parallel from one seed.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let chunk = 1 << 14;
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, dst)| {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ (i as u64) << 20);
        for v in dst {
            *v = Scalar::random(&mut rng);
        }
    });
    out
}

/// Scalars at the edges of the signed-digit encoding: 0, 1, 2, r − 1, and 2^k, 2^k − 1, −2^k
/// around window and limb boundaries.
pub fn edge_scalars() -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)];
    for k in [15u64, 16, 31, 64, 128, 200, 254] {
        let p = Scalar::from(2u64).pow_vartime([k]);
        v.extend([p, p - Scalar::ONE, -p]);
    }
    v
}

/// An MSM case: what it stresses, the bases (G1 or G2 affine points), the scalars.
pub type MsmCase<A = G1Affine> = (&'static str, Vec<A>, Vec<Scalar>);

/// The edge cases every MSM implementation here is checked on (the device's and the host
/// reference of its algorithm), built over `bases` and `random` scalars of the same length
/// (at least 8): zero, one and r − 1 everywhere, the edge scalars, identity points, one point
/// repeated, a point with its negation (buckets that cancel). `A::default()` is the identity
/// (blstrs' affine points).
pub fn edge_cases<A>(bases: &[A], random: &[Scalar]) -> Vec<MsmCase<A>>
where
    A: Copy + Default + std::ops::Neg<Output = A>,
{
    let n = bases.len();
    let edges = edge_scalars();
    vec![
        ("all zero", bases.to_vec(), vec![Scalar::ZERO; n]),
        ("all one", bases.to_vec(), vec![Scalar::ONE; n]),
        ("all r − 1", bases.to_vec(), vec![-Scalar::ONE; n]),
        (
            "edge scalars",
            bases.to_vec(),
            (0..n).map(|i| edges[i % edges.len()]).collect(),
        ),
        (
            "identity points",
            (0..n)
                .map(|i| if i % 3 == 0 { A::default() } else { bases[i] })
                .collect(),
            random.to_vec(),
        ),
        ("one repeated point", vec![bases[7]; n], random.to_vec()),
        (
            "repeated point and scalar",
            vec![bases[2]; n],
            vec![Scalar::from(3u64); n],
        ),
        (
            "a point and its negation",
            (0..n)
                .map(|i| if i % 2 == 0 { bases[1] } else { -bases[1] })
                .collect(),
            vec![Scalar::from(12345u64); n],
        ),
    ]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `f`'s result and its best wall time (ms) over `reps` runs (at least one).
fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> (T, f64) {
    let mut timed = || {
        let t0 = Instant::now();
        let out = f();
        (out, t0.elapsed().as_secs_f64() * 1e3)
    };
    let (mut out, mut best) = timed();
    for _ in 1..reps {
        let (o, ms) = timed();
        (out, best) = (o, best.min(ms));
    }
    (out, best)
}

/// One size, side by side.
#[derive(Debug, Clone)]
pub struct MsmFigures {
    pub log: u32,
    pub plan: MsmPlan,
    /// Wall ms, host inputs (pageable), transfers included: median of `reps`.
    pub gpu_host_ms: f64,
    /// Wall ms, both inputs in page-locked host memory, transfers included.
    pub gpu_pinned_ms: f64,
    /// Wall ms, bases resident on the device, scalars from pageable host memory.
    pub gpu_resident_ms: f64,
    /// Wall ms, bases resident on the device, scalars from page-locked host memory.
    pub gpu_resident_pinned_ms: f64,
    /// Wall ms of blst's multi-threaded Pippenger (best of the CPU runs).
    pub cpu_ms: f64,
    pub equal: bool,
    /// Device operations of the last host-input run.
    pub ops: Vec<TimedOp>,
}

/// Where an MSM's inputs are, as sppark's benchmarks place them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Pageable,
    Pinned,
    Resident,
    ResidentPinned,
}

/// Every plan at one size, each in sppark's four placements; the plans and placements run in
/// one rotating order (after an unmeasured round), so no combination always runs first or
/// after the same one, and two plans compare like for like. One figure per plan, in order.
pub fn msm(
    d: &Device,
    log: u32,
    reps: usize,
    cpu_reps: usize,
    plans: &[MsmPlan],
) -> Result<Vec<MsmFigures>, GpuError> {
    use Placement::*;
    let n = 1usize << log;
    let bases = distinct_points(n, log as u64);
    let scalars = random_scalars(n, 1000 + log as u64);
    let default_plan = [MsmPlan::for_len(n)];
    let plans = if plans.is_empty() {
        &default_plan[..]
    } else {
        plans
    };
    // Copied outside any timing: a prover would keep its inputs page-locked.
    let pinned_bases = d.pinned_copy(super::tables::g1_limbs(&bases))?;
    let pinned_scalars = d.pinned_copy(super::tables::limbs(&scalars))?;
    let resident = d.upload_bases(&bases)?;
    d.upload.synchronize().map_err(GpuError::driver)?;
    let run = |at: Placement, plan: MsmPlan, timed: bool| {
        let b = match at {
            Pageable => MsmBases::Host(&bases),
            Pinned => MsmBases::Pinned(&pinned_bases),
            Resident | ResidentPinned => MsmBases::Device(&resident),
        };
        let s = match at {
            Pageable | Resident => MsmScalars::Host(&scalars),
            Pinned | ResidentPinned => MsmScalars::Pinned(&pinned_scalars),
        };
        d.g1_msm_with(b, s, n, plan, timed)
    };
    let places = [Pageable, Pinned, Resident, ResidentPinned];
    // (plan, placement) by index.
    let combos: Vec<(usize, usize)> = (0..plans.len())
        .flat_map(|p| (0..places.len()).map(move |i| (p, i)))
        .collect();
    let mut walls: Vec<[Vec<f64>; 4]> = vec![Default::default(); plans.len()];
    let mut points = vec![[G1Projective::identity(); 4]; plans.len()];
    let mut ops = vec![Vec::new(); plans.len()];
    for rep in 0..=reps {
        for k in 0..combos.len() {
            let (p, i) = combos[(k + rep) % combos.len()];
            let at = places[i];
            let last = rep == reps && at == Pageable;
            let t0 = Instant::now();
            let (point, o) = run(at, plans[p], last)?;
            if rep > 0 {
                walls[p][i].push(t0.elapsed().as_secs_f64() * 1e3);
            }
            points[p][i] = point;
            if last {
                ops[p] = o;
            }
        }
    }
    let (cpu, cpu_ms) = best_of(cpu_reps, || crate::groth16::msm::g1_msm(&bases, &scalars));
    Ok(plans
        .iter()
        .zip(walls)
        .zip(points.into_iter().zip(ops))
        .map(|((&plan, walls), (points, ops))| {
            let [host, pinned, res, res_pinned] = walls.map(median);
            MsmFigures {
                log,
                plan,
                gpu_host_ms: host,
                gpu_pinned_ms: pinned,
                gpu_resident_ms: res,
                gpu_resident_pinned_ms: res_pinned,
                cpu_ms,
                equal: points.iter().all(|&p| p == cpu) && cpu != G1Projective::identity(),
                ops,
            }
        })
        .collect())
}

/// Device time (ms) of one resident-bases MSM at 2^log per plan, for choosing the defaults.
pub fn tune(d: &Device, log: u32, plans: &[MsmPlan]) -> Result<Vec<(MsmPlan, f64)>, GpuError> {
    let n = 1usize << log;
    let bases = distinct_points(n, 7);
    let scalars = random_scalars(n, 8);
    let resident = d.upload_bases(&bases)?;
    let d_scalars = d.upload_scalars(&scalars)?;
    let mut out = Vec::new();
    let mut want = None;
    for &plan in plans {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let (p, ops) = d.g1_msm_with(
                MsmBases::Device(&resident),
                MsmScalars::Device(&d_scalars),
                n,
                plan,
                true,
            )?;
            if *want.get_or_insert(p) != p {
                return Err(GpuError::Driver(format!(
                    "plan {plan:?} gave a different sum"
                )));
            }
            let start = ops.iter().map(|o| o.start_ns).min().unwrap_or(0);
            let end = ops.iter().map(|o| o.end_ns).max().unwrap_or(0);
            best = best.min((end - start) as f64 / 1e6);
        }
        out.push((plan, best));
    }
    Ok(out)
}

/// The G2 MSM at one size: B's G2 tail as `--g2-tail device` runs it (bases resident, scalars
/// from pageable host memory) against blst's G2 Pippenger on the CPU, where `--g2-tail prep`
/// runs it.
#[derive(Debug, Clone)]
pub struct G2MsmFigures {
    pub log: u32,
    pub plan: MsmPlan,
    /// Wall ms on the device, the scalars' upload included: median of `reps` after a warm-up.
    pub gpu_ms: f64,
    /// Wall ms of blst on the CPU (best of the CPU runs).
    pub cpu_ms: f64,
    pub equal: bool,
    /// Device operations of the last run.
    pub ops: Vec<TimedOp>,
}

pub fn g2_msm(
    d: &Device,
    log: u32,
    reps: usize,
    cpu_reps: usize,
) -> Result<G2MsmFigures, GpuError> {
    let n = 1usize << log;
    let bases = distinct_points_g2(n, 2000 + log as u64);
    let scalars = random_scalars(n, 3000 + log as u64);
    let plan = MsmPlan::for_len_in::<G2Projective>(n);
    let resident = d.upload_bases_g2(&bases)?;
    d.upload.synchronize().map_err(GpuError::driver)?;
    let mut walls = Vec::new();
    let (mut got, mut ops) = (G2Projective::identity(), Vec::new());
    let reps = reps.max(1);
    for rep in 0..=reps {
        let mut tl = super::timing::start_if(rep == reps, &d.ctx, &d.compute)?;
        let t0 = Instant::now();
        got = d.g2_msm_on(&resident, MsmScalars::Host(&scalars), n, plan, &mut tl)?;
        if rep > 0 {
            walls.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        ops = super::timing::finish(tl)?;
    }
    let (cpu, cpu_ms) = best_of(cpu_reps, || crate::groth16::msm::g2_msm(&bases, &scalars));
    Ok(G2MsmFigures {
        log,
        plan,
        gpu_ms: median(walls),
        cpu_ms,
        equal: got == cpu && cpu != G2Projective::identity(),
        ops,
    })
}
