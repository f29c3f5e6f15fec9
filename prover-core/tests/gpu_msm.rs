//! The device MSM against blst's multi-exponentiation. Runs only where PROOFSCOPE_GPU_TESTS=1
//! (an NVIDIA GPU with driver and NVRTC); the same algorithm runs everywhere through the
//! host build of the kernel headers (crate `cuda-check`).
mod support;
use blstrs::G1Projective;
use group::Group;
use prover_core::gpu::msm_bench::{distinct_points, edge_cases, random_scalars};
use prover_core::gpu::{MsmBases, MsmPlan, MsmScalars};
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
        for plan in [MsmPlan::for_len(n), MsmPlan::with_c(4, 2)] {
            let (got, _) = d
                .g1_msm_with(MsmBases::Host(&b), MsmScalars::Host(&s), n, plan, false)
                .unwrap();
            assert_eq!(got, want, "{what}, {plan:?}");
        }
        eprintln!("{what}: equal");
    }
    assert_eq!(d.g1_msm(&[], &[]).unwrap(), G1Projective::identity());
}
