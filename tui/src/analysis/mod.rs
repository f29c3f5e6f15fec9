//! Plain code over the model: unaccounted gaps, their diagnoses, per-phase statistics.

pub mod diagnosis;
pub mod frames;
pub mod gaps;
pub mod gpu_use;
pub mod listing;
pub mod stats;

pub use diagnosis::{Diagnosis, DiagnosisKind, ReleaseEvidence, diagnose};
pub use gaps::{Gap, GapRule, Interval, Place, SpanGaps, proof_gaps, unaccounted};
pub use gpu_use::{BusySource, GpuUse, gpu_use};
pub use listing::{ListedGap, Summed, gap_listing};
pub use stats::{PhaseStats, phase_stats};

/// The C2 phase names, in pipeline order (used to order rows).
pub const PHASES: [&str; 7] = [
    "synthesis",
    "prep_msm",
    "ntt_msm_h",
    "batch_add",
    "tail_msm",
    "b_g2_msm",
    "epilogue",
];

/// Sort key of a phase name: pipeline order first, then alphabetical.
pub fn phase_order(name: &str) -> (usize, String) {
    (
        PHASES
            .iter()
            .position(|p| *p == name)
            .unwrap_or(PHASES.len()),
        name.to_owned(),
    )
}
