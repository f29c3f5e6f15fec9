//! The C++ recordings in `recordings/`: examples/cpp-c2 linked against the probe (3 proofs
//! of 4 circuits with 4 × 32 MiB vectors each, build machine) and its CUDA variant (4 proofs of
//! 4 circuits with 2 × 256 MiB vectors each, one H200): what their reports must say.
mod common;

use proofscope_engine::report;

fn built(name: &str) -> report::Report {
    let app = common::replayed(name);
    app.report()
}

#[test]
fn cpp_c2_sync_shows_the_ghost_on_the_proving_thread() {
    let r = built("cpp-c2-sync.psrec");
    let s = &r.sessions[0];
    assert_eq!(s.prover, "cpp-c2");
    assert_eq!(s.proofs.len(), 3);
    for p in &s.proofs {
        let names: Vec<&str> = p.phases.iter().map(|ph| ph.name.as_str()).collect();
        for phase in [
            "synthesis",
            "prep_msm",
            "ntt_msm_h",
            "batch_add",
            "tail_msm",
            "epilogue",
        ] {
            assert!(
                names.contains(&phase),
                "proof {} lacks {phase}: {names:?}",
                p.id
            );
        }
        let flagged: Vec<_> = p.gaps.iter().filter(|g| g.flagged).collect();
        assert_eq!(flagged.len(), 1, "proof {}: {:?}", p.id, p.gaps);
        let d = &flagged[0].diagnosis.sentence();
        assert!(
            d.contains("604.0 MB freed in 20 large releases")
                && d.contains("on the proving thread main"),
            "{d}"
        );
    }
}

#[test]
fn cpp_c2_async_flags_nothing_and_releases_on_the_dealloc_thread() {
    let r = built("cpp-c2-async.psrec");
    let s = &r.sessions[0];
    assert_eq!(s.proofs.len(), 3);
    assert!(s.proofs.iter().all(|p| p.gaps.iter().all(|g| !g.flagged)));
    assert!(
        s.releases.by_thread.iter().any(|(t, _)| t == "dealloc"),
        "{:?}",
        s.releases.by_thread
    );
}

const CUDA_PHASES: [&str; 6] = [
    "synthesis",
    "h2d",
    "ntt_msm_h",
    "batch_add",
    "tail_msm",
    "epilogue",
];

/// Each GPU span name of the CUDA example and the host phase whose code launched it.
const CUDA_LAUNCHES: [(&str, &str); 5] = [
    ("copy_in", "h2d"),
    ("ntt_kernel", "ntt_msm_h"),
    ("batch_add_kernel", "batch_add"),
    ("tail_msm_kernel", "tail_msm"),
    ("copy_out", "epilogue"),
];

/// The phases and device work every proof of a CUDA recording must show: each kernel once, on
/// GPU 0, under the phase that launched it, running inside that phase's time.
fn assert_cuda_proof(p: &report::ProofReport) {
    let names: Vec<&str> = p.phases.iter().map(|ph| ph.name.as_str()).collect();
    assert_eq!(names, CUDA_PHASES, "proof {}", p.id);
    for (kernel, phase) in CUDA_LAUNCHES {
        let w = p
            .gpu_work
            .iter()
            .find(|w| w.name == kernel)
            .unwrap_or_else(|| panic!("proof {} lacks {kernel}: {:?}", p.id, p.gpu_work));
        assert_eq!(
            (w.device, w.launched_in.as_str(), w.count),
            (0, phase, 1),
            "proof {}",
            p.id
        );
        let ph = p.phases.iter().find(|ph| ph.name == phase).unwrap();
        // GPU times are placed on the host clock through an anchor whose error is at most
        // half its record-and-wait (6 us median, 14 us max on the H200): allow 20 us.
        const SLACK: u64 = 20_000;
        assert!(
            w.first_offset_ns + SLACK >= ph.start_offset_ns
                && w.first_offset_ns + w.busy_ns <= ph.start_offset_ns + ph.duration_ns + SLACK,
            "proof {}: {kernel} ran outside {phase}: {w:?} {ph:?}",
            p.id
        );
        assert!(w.busy_ns > 0, "{w:?}");
    }
}

#[test]
fn cpp_cuda_sync_times_its_kernels_in_their_phases_and_shows_the_ghost() {
    let r = built("cpp-cuda-sync.psrec");
    let s = &r.sessions[0];
    assert_eq!(s.prover, "cpp-c2-cuda");
    assert!(
        s.gpus.iter().any(|g| g.name.contains("H200")),
        "{:?}",
        s.gpus
    );
    assert_eq!(s.proofs.len(), 4);
    for p in &s.proofs {
        assert_cuda_proof(p);
        let flagged: Vec<_> = p.gaps.iter().filter(|g| g.flagged).collect();
        assert_eq!(flagged.len(), 1, "proof {}: {:?}", p.id, p.gaps);
        let d = &flagged[0].diagnosis.sentence();
        assert!(
            d.contains("freed in 8 large releases")
                && d.contains("on the proving thread main")
                && d.contains("synchronous release"),
            "{d}"
        );
    }
    let text = report::text(&r);
    assert!(
        text.contains("gpu0 ntt_kernel") && text.contains("launched in ntt_msm_h"),
        "{text}"
    );
}

#[test]
fn cpp_cuda_async_times_the_same_kernels_and_flags_nothing() {
    let r = built("cpp-cuda-async.psrec");
    let s = &r.sessions[0];
    assert_eq!(s.proofs.len(), 4);
    for p in &s.proofs {
        assert_cuda_proof(p);
        assert!(
            p.gaps.iter().all(|g| !g.flagged),
            "proof {}: {:?}",
            p.id,
            p.gaps
        );
    }
    assert!(
        s.releases.by_thread.iter().any(|(t, _)| t == "dealloc"),
        "{:?}",
        s.releases.by_thread
    );
}
