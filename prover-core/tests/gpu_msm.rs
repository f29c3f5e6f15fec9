//! The device MSM against blst's multi-exponentiation. Runs only where PROOFSCOPE_GPU_TESTS=1
//! (an NVIDIA GPU with driver and NVRTC); the same algorithm runs everywhere through the
//! host build of the kernel headers (crate `cuda-check`).
mod support;
use blstrs::G1Projective;
use group::Group;
use prover_core::gpu::msm_bench::{distinct_points, edge_cases, random_scalars};
use prover_core::gpu::{Accumulate, MsmBases, MsmPlan, MsmScalars};
use prover_core::groth16::msm::g1_msm;
use support::{first_gpu, max_log};

#[test]
fn gpu_msm_equals_blst_at_every_size() {
    let Some(gpu) = first_gpu() else { return };
    let d = &gpu.device;
    for log in (10..=max_log(20)).step_by(2) {
        let n = 1usize << log;
        let bases = distinct_points(n, log as u64);
        let scalars = random_scalars(n, 77 + log as u64);
        let want = g1_msm(&bases, &scalars);
        let got = d.g1_msm(&bases, &scalars).unwrap();
        eprintln!("2^{log}: equal {}", got == want);
        assert_eq!(got, want, "2^{log}, host inputs");
        // The other accumulation shape (launch bounds), at every size.
        let wide = MsmPlan::for_len(n).accumulating(Accumulate::Wide);
        let (p, _) = d
            .g1_msm_with(
                MsmBases::Host(&bases),
                MsmScalars::Host(&scalars),
                n,
                wide,
                false,
            )
            .unwrap();
        assert_eq!(p, want, "2^{log}, {wide}");
        if log <= 16 {
            // A length that is not a power of two, and the other input placements.
            let m = n - 3;
            assert_eq!(
                d.g1_msm(&bases[..m], &scalars[..m]).unwrap(),
                g1_msm(&bases[..m], &scalars[..m]),
                "2^{log} − 3"
            );
            let resident = d.upload_bases(&bases).unwrap();
            assert_eq!(d.g1_msm_resident(&resident, &scalars).unwrap(), want);
            let ds = d.upload_scalars(&scalars).unwrap();
            for plan in [MsmPlan::with_c(log.min(16), 4), MsmPlan::with_c(7, 128)] {
                let (p, _) = d
                    .g1_msm_with(
                        MsmBases::Device(&resident),
                        MsmScalars::Device(&ds),
                        n,
                        plan,
                        true,
                    )
                    .unwrap();
                assert_eq!(p, want, "2^{log}, {plan:?}");
            }
            // Page-locked host inputs, copied directly; the count comes from the shorter.
            let pb = d.pinned_copy(prover_core::gpu::g1_limbs(&bases)).unwrap();
            let ps = d
                .pinned_copy(prover_core::gpu::limbs(&scalars[..m]))
                .unwrap();
            let plan = MsmPlan::for_len(n);
            let want = g1_msm(&bases[..m], &scalars[..m]);
            for (what, b) in [
                ("page-locked", MsmBases::Pinned(&pb)),
                ("resident + page-locked", MsmBases::Device(&resident)),
            ] {
                let (p, _) = d
                    .g1_msm_with(b, MsmScalars::Pinned(&ps), n, plan, false)
                    .unwrap();
                assert_eq!(p, want, "2^{log}, {what}");
            }
        }
    }
}

#[test]
fn gpu_msm_handles_the_edge_cases() {
    let Some(gpu) = first_gpu() else { return };
    let d = &gpu.device;
    let n = 1 << 12;
    let bases = distinct_points(n, 3);
    let random = random_scalars(n, 4);
    for (what, b, s) in edge_cases(&bases, &random) {
        let want = g1_msm(&b, &s);
        for plan in [
            MsmPlan::for_len(n),
            MsmPlan::with_c(4, 2),
            MsmPlan::for_len(n).accumulating(Accumulate::Wide),
            MsmPlan::with_c(4, 2).accumulating(Accumulate::Wide),
        ] {
            let (got, _) = d
                .g1_msm_with(MsmBases::Host(&b), MsmScalars::Host(&s), n, plan, false)
                .unwrap();
            assert_eq!(got, want, "{what}, {plan:?}");
        }
        eprintln!("{what}: equal");
    }
    assert_eq!(d.g1_msm(&[], &[]).unwrap(), G1Projective::identity());
}

/// Batch addition: every circuit's list of ones summed at once, one bucket a list — in G1
/// (L, A, B) and G2 (B's G2 query) — against blst, with the lists a batch really has: long
/// ones, an empty one, one of a single index, repeated indices, the identity among the bases.
#[test]
fn gpu_batch_addition_equals_blst_in_g1_and_g2() {
    use blstrs::G2Projective;
    use prover_core::gpu::msm_bench::distinct_points_g2;
    use prover_core::groth16::msm::{g1_sum, g2_sum};
    use rand::{Rng, SeedableRng};
    let Some(gpu) = first_gpu() else { return };
    let d = &gpu.device;
    let log = max_log(20);
    let n = 1usize << log;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let mut g1 = distinct_points(n, 9);
    let mut g2 = distinct_points_g2(n, 10);
    // blst's identity (all zeros) where an SRS has one: skipped by the kernels.
    g1[3] = blstrs::G1Affine::default();
    g2[3] = blstrs::G2Affine::default();
    let long: Vec<u32> = (0..n as u32).filter(|_| rng.gen_bool(0.45)).collect();
    let repeated: Vec<u32> = (0..5000).map(|i| [3u32, 7, 7, 11][i % 4]).collect();
    let lists: Vec<Vec<u32>> = vec![
        long.clone(),
        vec![],
        vec![42],
        repeated,
        (0..n as u32).rev().step_by(3).collect(),
    ];
    let views: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
    let d1 = d.upload_bases(&g1).unwrap();
    let d2 = d.upload_bases_g2(&g2).unwrap();
    let mut tl = None;
    let got1 = d.g1_list_sums(&d1, &views, &mut tl).unwrap();
    let got2 = d.g2_list_sums(&d2, &views, &mut tl).unwrap();
    for (i, l) in lists.iter().enumerate() {
        let p1: Vec<_> = l.iter().map(|&j| g1[j as usize]).collect();
        let p2: Vec<_> = l.iter().map(|&j| g2[j as usize]).collect();
        assert_eq!(got1[i], g1_sum(&p1), "G1 list {i} ({} indices)", l.len());
        assert_eq!(got2[i], g2_sum(&p2), "G2 list {i} ({} indices)", l.len());
    }
    assert_eq!(got2[1], G2Projective::identity());
    eprintln!(
        "2^{log}: G1 and G2 batch addition equal blst over {} lists",
        lists.len()
    );
    // An index past the bases is refused, not read.
    let past = [0, n as u32];
    let bad: Vec<&[u32]> = vec![&past];
    assert!(d.g2_list_sums(&d2, &bad, &mut tl).is_err());
    assert!(d.g1_list_sums(&d1, &bad, &mut tl).is_err());
}

/// All of a batch's queries in one call (B's lists shared by G1 and G2, each set's lists going
/// up while the set before sums) equal the CPU backend's one query at a time, a query with
/// every list empty included; an index past the bases in the last set is refused.
#[test]
fn gpu_batch_addition_of_all_queries_equals_the_cpu_backend() {
    use prover_core::gpu::msm_bench::distinct_points_g2;
    use prover_core::groth16::backend::{Backend, CpuBackend, Ones, OnesQueries};
    use rand::{Rng, SeedableRng};
    let Some(gpu) = first_gpu() else { return };
    let n = 1usize << max_log(16);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
    let (l, a, b) = (
        distinct_points(n, 21),
        distinct_points(n, 22),
        distinct_points(n, 23),
    );
    let b2 = distinct_points_g2(n, 24);
    let mut lists = |p: f64| -> Vec<Vec<u32>> {
        (0..3)
            .map(|_| (0..n as u32).filter(|_| rng.gen_bool(p)).collect())
            .collect()
    };
    let (l_ones, b_ones) = (lists(0.45), lists(0.3));
    let a_ones = vec![Vec::new(); 3];
    let q = OnesQueries {
        l: Ones {
            bases: &l,
            lists: &l_ones,
        },
        a: Ones {
            bases: &a,
            lists: &a_ones,
        },
        b: Ones {
            bases: &b,
            lists: &b_ones,
        },
        b2: &b2,
    };
    let got = gpu.batch_add_queries(&q).unwrap();
    let want = CpuBackend.batch_add_queries(&q).unwrap();
    assert_eq!(got.l, want.l, "L");
    assert_eq!(got.a, want.a, "A (every list empty)");
    assert_eq!(got.a, vec![G1Projective::identity(); 3]);
    assert_eq!(got.b, want.b, "B in G1");
    assert_eq!(got.b2, want.b2, "B in G2");
    let past = vec![vec![0, n as u32]];
    let bad = OnesQueries {
        a: Ones {
            bases: &a,
            lists: &past,
        },
        ..q
    };
    assert!(gpu.batch_add_queries(&bad).is_err());
    // The device is still usable after the refusal.
    assert_eq!(gpu.batch_add_queries(&q).unwrap().l, want.l);
}

/// The G2 MSM (B's G2 tail under `--g2-tail device`) against blst's G2 Pippenger: sizes up to
/// 2^18, a length that is not a power of two, other plans, and the edge cases.
#[test]
fn gpu_g2_msm_equals_blst_and_handles_the_edge_cases() {
    use blstrs::G2Projective;
    use prover_core::gpu::msm_bench::distinct_points_g2;
    use prover_core::groth16::msm::g2_msm;
    let Some(gpu) = first_gpu() else { return };
    let d = &gpu.device;
    let plan = MsmPlan::for_len_in::<G2Projective>;
    for log in (10..=max_log(18)).step_by(4) {
        let n = 1usize << log;
        let bases = distinct_points_g2(n, 20 + log as u64);
        let scalars = random_scalars(n, 30 + log as u64);
        let resident = d.upload_bases_g2(&bases).unwrap();
        let mut tl = None;
        let got = d
            .g2_msm_on(&resident, MsmScalars::Host(&scalars), n, plan(n), &mut tl)
            .unwrap();
        assert_eq!(got, g2_msm(&bases, &scalars), "G2 2^{log}");
        let m = n - 3;
        let got = d
            .g2_msm_on(
                &resident,
                MsmScalars::Host(&scalars[..m]),
                n,
                plan(m),
                &mut tl,
            )
            .unwrap();
        assert_eq!(got, g2_msm(&bases[..m], &scalars[..m]), "G2 2^{log} − 3");
        eprintln!("G2 2^{log}: equal");
    }
    let n = 1 << 10;
    let bases = distinct_points_g2(n, 5);
    let random = random_scalars(n, 6);
    for (what, b, s) in edge_cases(&bases, &random) {
        let want = g2_msm(&b, &s);
        let resident = d.upload_bases_g2(&b).unwrap();
        let mut tl = None;
        for p in [plan(n), MsmPlan::with_c_in::<G2Projective>(4, 2)] {
            let got = d
                .g2_msm_on(&resident, MsmScalars::Host(&s), n, p, &mut tl)
                .unwrap();
            assert_eq!(got, want, "G2 {what}, {p:?}");
        }
    }
    // No scalars: the identity, nothing launched.
    let resident = d.upload_bases_g2(&bases).unwrap();
    let got = d
        .g2_msm_on(&resident, MsmScalars::Host(&[]), n, plan(0), &mut None)
        .unwrap();
    assert_eq!(got, G2Projective::identity());
}
