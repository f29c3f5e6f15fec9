//! Plain code over the model: unaccounted gaps, their diagnoses, per-phase statistics, where
//! releases happened, GPU use. By structure, never by phase name: a prover with other names
//! gets the same analysis.

pub mod backend;
pub mod diagnosis;
pub mod frames;
pub mod gaps;
pub mod gpu_summary;
pub mod gpu_use;
pub mod index;
pub mod kernel;
pub mod listing;
pub mod memory;
pub mod releases;
pub mod samples;
pub mod sched;
pub mod settled;
pub mod stats;
pub mod structure;
pub mod throughput;

pub use diagnosis::{Diagnosis, DiagnosisKind, ReleaseEvidence, diagnose, diagnose_in};
pub use index::ProofIndex;
pub mod nvml;
pub use gaps::{Gap, GapRule, Interval, Place, SpanGaps, proof_gaps, unaccounted};
pub use gpu_use::{BusySource, GpuUse, gpu_use};
pub use listing::{ListedGap, Summed, gap_listing};
pub use stats::{PhaseStats, phase_stats};
