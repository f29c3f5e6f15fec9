//! The C++ recordings in `recordings/` (examples/cpp-c2 linked against the probe, 3 proofs
//! of 4 circuits with 4 × 32 MiB vectors each): what their reports must say.
mod common;

use proofscope::report;

fn built(name: &str) -> report::Report {
    let app = common::replayed(name);
    report::build(
        &app.model,
        &app.view.rule,
        &app.source,
        app.warnings.clone(),
    )
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
        let d = &flagged[0].diagnosis.sentence;
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
