//! What a span is, read from the structure of the proof, never from its name: the analysis
//! computes the same for any prover's phase names (a rule of the house). Names only add words.

use crate::model::{Proof, Session, SpanId};
use probe_protocol::markers::{self, Meaning};
use std::collections::HashSet;

/// The spans of `proof` that are GPU phases: a span below the outer span that launched device
/// work, or has a descendant that did, or that the prover declared one (a `gpu_phase` marker
/// on it). The outer span is the wrapper around every phase, not a phase itself.
pub fn gpu_phases(session: &Session, proof: &Proof) -> HashSet<SpanId> {
    let outer = proof.outer().map(|o| o.id);
    let mut out = HashSet::new();
    let launchers = proof.gpu_spans().iter().filter_map(|g| g.span);
    let declared = proof
        .marks()
        .iter()
        .filter(|m| markers::meaning(session.name(m.name)) == Meaning::GpuPhase)
        .filter_map(|m| m.span);
    for start in launchers.chain(declared) {
        // The launcher and its ancestors up to (not including) the outer span.
        let mut at = proof.span(start);
        while let Some(s) = at {
            if Some(s.id) == outer || !out.insert(s.id) {
                break;
            }
            at = s.parent.and_then(|p| proof.span(p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Interval, diagnose};
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};
    use probe_protocol::{Event, GpuSample};

    const MS: u64 = 1_000_000;

    /// Two phases with names no C2 prover uses: `alpha` launches kernels, `beta` does not. The
    /// GPU's utilisation is evidence for alpha's gap only, and a declared `gpu_phase` counts.
    #[test]
    fn a_gpu_phase_is_known_by_its_device_work_or_its_declaration() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let outer = f.proof(1, "gpu", "wrap", main, 0, 1000 * MS);
        let alpha = f.span(Some(1), Some(outer), "alpha", main, 0, 400 * MS);
        let beta = f.span(Some(1), Some(outer), "beta", main, 400 * MS, 800 * MS);
        let gamma = f.span(Some(1), Some(outer), "gamma", main, 800 * MS, 1000 * MS);
        f.gpu_span(alpha, 0, "kernel", 0, 100 * MS);
        f.marker(
            900 * MS,
            probe_protocol::markers::GPU_PHASE,
            main,
            Some(gamma),
            "declared",
        );
        for t in (0..1000).step_by(10) {
            f.event(Event::GpuSample(Box::new(GpuSample {
                ts: t * MS,
                util_pct: Some(5),
                ..GpuSample::default()
            })));
        }
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let phases = gpu_phases(s, p);
        assert!(phases.contains(&alpha) && phases.contains(&gamma) && !phases.contains(&beta));
        assert!(!phases.contains(&outer), "the wrapper is no phase");
        let gap = |span| {
            diagnose(
                s,
                p,
                p.span(span).unwrap(),
                Interval::new(200 * MS, 300 * MS),
            )
        };
        assert_eq!(gap(alpha).gpu_util_pct, Some(5.0));
        assert_eq!(
            gap(alpha).kind,
            probe_protocol::markers::DiagnosisKind::GpuIdle
        );
        assert_eq!(gap(beta).gpu_util_pct, None);
    }
}
