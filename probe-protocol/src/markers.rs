//! The marker names that mean something to a viewer (docs/PROTOCOL.md, "Marker"), defined
//! once for every client and reader: the prover that sends them, the importer that writes them
//! from a log, the viewer that reads them. Any other marker with a text inside a proof is a
//! note about that proof.

use serde::Serialize;

/// The text is the prover's current status line (e.g. parameter generation's progress).
pub const STATUS: &str = "status";
/// Outside every span: the text is a warning for the report's reader.
pub const WARNING: &str = "warning";
/// `cause:<kind>` on the thread of a span, inside one of its gaps: states the gap's cause;
/// the text is the sentence.
pub const CAUSE_PREFIX: &str = "cause:";
/// A note `prover serve` sends with each batch: how it was admitted beside another.
pub const MEMORY_CHECK: &str = "memory_check";
/// On a span (`span` set): the prover declares it a GPU phase — its gaps get the GPU's
/// evidence even when no GPU span under it was reported (a log's `ntt_msm_h`, a prover that
/// times its kernels itself).
pub const GPU_PHASE: &str = "gpu_phase";

/// What a gap's diagnosis leads with, as a closed set: what `cause:<kind>` markers name, what
/// fleet metrics count gaps by (the sentence is for people, this is for alert rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    /// Large frees on the gap's own thread took at least half of it.
    SynchronousRelease,
    /// Large frees overlapped the gap, but not mostly on its thread.
    Releases,
    /// A GPU phase's gap with the GPU mostly idle.
    GpuIdle,
    /// A GPU phase's gap with the GPU busy: device work no span covers.
    GpuBusy,
    /// Events were dropped around the gap: spans may be missing.
    DroppedEvents,
    /// The thread was waiting on a run queue: more runnable threads than CPUs.
    WaitingForCpu,
    /// The thread ran on a CPU through the gap, mostly in the kernel serving page faults:
    /// memory touched for the first time or pinned (protocol 1.7's kernel counters).
    PageFaults,
    /// The thread ran on a CPU through the gap, mostly in the kernel with few page faults: a
    /// system call no span covers (a `munmap`, `madvise` or `mlock` of a large range).
    InKernel,
    /// The thread ran on a CPU through the gap: code no span covers.
    RunningUninstrumented,
    /// The thread was off-CPU and not runnable: a lock, I/O, a sleep or another thread.
    Blocked,
    /// Nothing on the gap's thread; other threads of the proof worked meanwhile.
    WaitingOnOtherThreads,
    /// No evidence at all.
    #[default]
    NoEvidence,
}

/// A name that is no [`DiagnosisKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a diagnosis kind (expected one of {list})", list = DiagnosisKind::names())]
pub struct UnknownDiagnosisKind(pub String);

impl DiagnosisKind {
    /// Every kind, in the order of precedence a diagnosis applies.
    pub const ALL: [DiagnosisKind; 12] = [
        DiagnosisKind::SynchronousRelease,
        DiagnosisKind::Releases,
        DiagnosisKind::GpuIdle,
        DiagnosisKind::GpuBusy,
        DiagnosisKind::WaitingForCpu,
        DiagnosisKind::PageFaults,
        DiagnosisKind::InKernel,
        DiagnosisKind::RunningUninstrumented,
        DiagnosisKind::Blocked,
        DiagnosisKind::DroppedEvents,
        DiagnosisKind::WaitingOnOtherThreads,
        DiagnosisKind::NoEvidence,
    ];

    /// The label value: snake_case, as in the JSON report.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosisKind::SynchronousRelease => "synchronous_release",
            DiagnosisKind::Releases => "releases",
            DiagnosisKind::GpuIdle => "gpu_idle",
            DiagnosisKind::GpuBusy => "gpu_busy",
            DiagnosisKind::DroppedEvents => "dropped_events",
            DiagnosisKind::WaitingForCpu => "waiting_for_cpu",
            DiagnosisKind::PageFaults => "page_faults",
            DiagnosisKind::InKernel => "in_kernel",
            DiagnosisKind::RunningUninstrumented => "running_uninstrumented",
            DiagnosisKind::Blocked => "blocked",
            DiagnosisKind::WaitingOnOtherThreads => "waiting_on_other_threads",
            DiagnosisKind::NoEvidence => "no_evidence",
        }
    }

    /// The kind named by [`DiagnosisKind::as_str`]; an unknown name is an error, never a
    /// default.
    pub fn parse(name: &str) -> Result<DiagnosisKind, UnknownDiagnosisKind> {
        DiagnosisKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| UnknownDiagnosisKind(name.to_owned()))
    }

    fn names() -> String {
        DiagnosisKind::ALL.map(DiagnosisKind::as_str).join(", ")
    }

    /// The marker name that states this cause: `cause:<kind>`.
    pub fn cause_marker(self) -> String {
        format!("{CAUSE_PREFIX}{}", self.as_str())
    }
}

/// What a marker's name means to a viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    Status,
    Warning,
    /// `cause:<kind>`; an unknown kind is said, not guessed.
    Cause(Result<DiagnosisKind, UnknownDiagnosisKind>),
    GpuPhase,
    /// Anything else (`memory_check` among them): a note, when it has a text.
    Note,
}

/// The meaning of marker name `name`.
pub fn meaning(name: &str) -> Meaning {
    if let Some(kind) = name.strip_prefix(CAUSE_PREFIX) {
        return Meaning::Cause(DiagnosisKind::parse(kind));
    }
    match name {
        STATUS => Meaning::Status,
        WARNING => Meaning::Warning,
        GPU_PHASE => Meaning::GpuPhase,
        _ => Meaning::Note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_and_an_unknown_one_is_an_error() {
        for k in DiagnosisKind::ALL {
            assert_eq!(DiagnosisKind::parse(k.as_str()), Ok(k));
            assert_eq!(meaning(&k.cause_marker()), Meaning::Cause(Ok(k)));
        }
        let e = DiagnosisKind::parse("synchronous_releases").unwrap_err();
        assert!(
            e.to_string().contains("synchronous_release, releases"),
            "{e}"
        );
        assert!(matches!(meaning("cause:nope"), Meaning::Cause(Err(_))));
        assert_eq!(meaning(MEMORY_CHECK), Meaning::Note);
        assert_eq!(meaning(STATUS), Meaning::Status);
    }
}
