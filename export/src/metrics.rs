//! The metric families `proofscope export` serves, registered once; every watcher updates
//! them through clones (prometheus-client's metrics are shared handles).
//!
//! Labels are bounded: every series is the exporter's `host` (a registry-wide label) and a
//! `worker` (identity.rs: stable across restarts, never a pid); circuit and phase names are
//! capped (cap.rs); backend, GPU, place and diagnosis kind come from closed sets — never a
//! proof id, a pid or a timestamp (the pid is in `proofscope_prover_info` only).

use super::cap::CappedLabels;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Metric, Registry, Unit};
use proofscope_engine::analysis::DiagnosisKind;
use proofscope_engine::report::{ProofReleases, ProofReport, ReleaseGroup};
use std::sync::atomic::AtomicU64;

/// Which prover a series belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ProverLabels {
    pub worker: String,
}

/// `proofscope_prover_state`: one series a state, 1 for the worker's state now.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StateLabels {
    pub worker: String,
    pub state: String,
}

/// A worker's stream, as liveness alerts need it told: `running` while it flows; `stopped`
/// after the prover said goodbye (a planned stop, an exit the probe saw); `lost` when it went
/// without one (killed, crashed, unreachable). A clean stop raised ProverUnreachable like a
/// crash: 100 alerts for 100 planned stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Stopped,
    Lost,
}

impl Liveness {
    pub const ALL: [Liveness; 3] = [Liveness::Running, Liveness::Stopped, Liveness::Lost];

    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Running => "running",
            Liveness::Stopped => "stopped",
            Liveness::Lost => "lost",
        }
    }
}

/// `proofscope_prover_info`: what a worker is now (its pid changes on every restart).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ProverInfoLabels {
    pub worker: String,
    pub prover: String,
    pub version: String,
    pub pid: String,
}

/// `proofscope_gpu_info`: the model of a GPU a worker uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct GpuInfoLabels {
    pub worker: String,
    pub gpu: String,
    pub gpu_uuid: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ProofLabels {
    pub worker: String,
    pub circuit: String,
    pub backend: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabels {
    pub worker: String,
    pub circuit: String,
    pub backend: String,
    /// `valid`, `invalid`, `not_checked`, `unverifiable`, or `failed` (the prover said the
    /// proof failed).
    pub result: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PhaseLabels {
    pub worker: String,
    pub circuit: String,
    pub backend: String,
    pub phase: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct GapLabels {
    pub worker: String,
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PlaceLabels {
    pub worker: String,
    /// `in_outer_outside_phases`, `in_phases`, `other_threads`, `after_proof`.
    pub place: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct GpuLabels {
    pub worker: String,
    /// NVML's index, as dcgm-exporter's `gpu` label.
    pub gpu: String,
    /// As dcgm-exporter's `UUID` label (`GPU-…`), for joins.
    pub gpu_uuid: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KindLabels {
    pub worker: String,
    pub kind: String,
}

/// `proofscope_captures_total`: what became of the black box's captures (capture/).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CaptureLabels {
    pub worker: String,
    /// `written`, `too_large` (the window exceeded the directory's byte bound), `failed`.
    pub result: String,
}

/// The exemplar on a captured proof's duration: the capture's file name in the capture
/// directory (OpenMetrics only; well under the 128 characters an exemplar's labels may take
/// for a worker name of up to 80).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CaptureExemplar {
    pub capture: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    /// The git revision it was built from (export/build.rs).
    revision: String,
    /// The compiler's version.
    rustc: String,
}

type FGauge = Gauge<f64, AtomicU64>;
type FCounter = Counter<f64, AtomicU64>;
type Hist<L> = Family<L, Histogram, fn() -> Histogram>;

/// Buckets for whole proofs and their phases: 10 ms to 10 min, about ×2 apart, so that a
/// 0.1 s toy proof and a 10-minute C2 batch both land in resolved buckets.
const DURATION_BUCKETS: [f64; 17] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 240.0, 420.0,
    600.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

fn duration_histogram_with_exemplars() -> HistogramWithExemplars<CaptureExemplar> {
    HistogramWithExemplars::new(DURATION_BUCKETS.into_iter())
}

/// Every family, cloneable into the watchers.
#[derive(Debug, Clone)]
pub struct Metrics {
    pub proofs: Family<ResultLabels, Counter>,
    /// With the capture of an anomalous proof as its bucket's exemplar.
    pub proof_duration: Family<
        ProofLabels,
        HistogramWithExemplars<CaptureExemplar>,
        fn() -> HistogramWithExemplars<CaptureExemplar>,
    >,
    pub captures: Family<CaptureLabels, Counter>,
    pub phase_duration: Hist<PhaseLabels>,
    pub unaccounted: Hist<ProofLabels>,
    pub gaps_flagged: Family<GapLabels, Counter>,
    pub releases: Family<PlaceLabels, Counter>,
    pub release_bytes: Family<PlaceLabels, Counter>,
    pub release_seconds: Family<PlaceLabels, FCounter>,
    pub gpu_utilization: Family<GpuLabels, FGauge>,
    pub gpu_memory_used: Family<GpuLabels, Gauge>,
    pub gpu_power: Family<GpuLabels, FGauge>,
    pub gpu_energy: Family<GpuLabels, FCounter>,
    pub heap_live: Family<ProverLabels, Gauge>,
    pub rss: Family<ProverLabels, Gauge>,
    pub dropped: Family<KindLabels, Counter>,
    pub up: Family<ProverLabels, Gauge>,
    pub prover_info: Family<ProverInfoLabels, Gauge>,
    pub gpu_info: Family<GpuInfoLabels, Gauge>,
    pub labels_capped: Family<CappedLabels, Counter>,
    pub reconnects: Family<ProverLabels, Counter>,
    pub state: Family<StateLabels, Gauge>,
    pub restarts: Family<ProverLabels, Counter>,
    pub provers: Gauge,
    pub scrape_duration: FGauge,
    pub scrapes: Counter,
    pub proofs_missed: Counter,
    pub name_clashes: Counter,
    pub workers_evicted: Counter,
}

/// The unit a family's name ends with (OpenMetrics writes it as a suffix).
#[derive(Debug, Clone, Copy)]
enum Suffix {
    None,
    Seconds,
    Bytes,
    Joules,
    Watts,
    /// Prometheus's convention is the singular `_ratio`; `Unit::Ratios` writes `_ratios`.
    Ratio,
}

impl Suffix {
    fn unit(self) -> Option<Unit> {
        Some(match self {
            Suffix::None => return None,
            Suffix::Seconds => Unit::Seconds,
            Suffix::Bytes => Unit::Bytes,
            Suffix::Joules => Unit::Joules,
            Suffix::Watts => Unit::Other("watts".into()),
            Suffix::Ratio => Unit::Other("ratio".into()),
        })
    }
}

/// Registers one family as `proofscope_<name>[_<unit>]`.
fn add(r: &mut Registry, name: &str, suffix: Suffix, help: &str, metric: impl Metric) {
    match suffix.unit() {
        Some(unit) => r.register_with_unit(name, help, unit, metric),
        None => r.register(name, help, metric),
    }
}

/// The table of families: `field => name, unit suffix, help;` — each registered from the
/// [`Metrics`] field of that name.
macro_rules! families {
    ($r:expr, $m:expr, { $($field:ident => $name:literal, $suffix:ident, $help:literal;)* }) => {
        $( add($r, $name, Suffix::$suffix, $help, $m.$field.clone()); )*
    };
}

impl Metrics {
    /// Sets `worker`'s state series: `now` at 1, the others at 0.
    pub fn set_state(&self, worker: &str, now: Liveness) {
        for st in Liveness::ALL {
            let l = StateLabels {
                worker: worker.to_owned(),
                state: st.as_str().to_owned(),
            };
            self.state.get_or_create(&l).set(i64::from(st == now));
        }
    }

    /// Removes `worker`'s state series.
    pub fn remove_state(&self, worker: &str) {
        for st in Liveness::ALL {
            self.state.remove(&StateLabels {
                worker: worker.to_owned(),
                state: st.as_str().to_owned(),
            });
        }
    }

    fn new() -> Metrics {
        Metrics {
            proofs: Family::default(),
            proof_duration: Family::new_with_constructor(duration_histogram_with_exemplars),
            captures: Family::default(),
            phase_duration: Family::new_with_constructor(duration_histogram),
            unaccounted: Family::new_with_constructor(duration_histogram),
            gaps_flagged: Family::default(),
            releases: Family::default(),
            release_bytes: Family::default(),
            release_seconds: Family::default(),
            gpu_utilization: Family::default(),
            gpu_memory_used: Family::default(),
            gpu_power: Family::default(),
            gpu_energy: Family::default(),
            heap_live: Family::default(),
            rss: Family::default(),
            dropped: Family::default(),
            up: Family::default(),
            prover_info: Family::default(),
            gpu_info: Family::default(),
            labels_capped: Family::default(),
            reconnects: Family::default(),
            state: Family::default(),
            restarts: Family::default(),
            provers: Gauge::default(),
            scrape_duration: FGauge::default(),
            scrapes: Counter::default(),
            proofs_missed: Counter::default(),
            name_clashes: Counter::default(),
            workers_evicted: Counter::default(),
        }
    }

    /// Registers every family under the `proofscope_` prefix.
    pub fn register(registry: &mut Registry) -> Metrics {
        let m = Metrics::new();
        let r = registry.sub_registry_with_prefix("proofscope");
        families!(r, m, {
            proofs => "proofs", None, "Proofs completed, by verification result";
            proof_duration => "proof_duration", Seconds, "Duration of each proof's outer span (the wrapper timer)";
            captures => "captures", None, "Black-box captures of anomalous proofs (export --capture-dir), by what became of them";
            phase_duration => "phase_duration", Seconds, "Duration of each phase (a child span of the outer span) of completed proofs";
            unaccounted => "proof_unaccounted", Seconds, "Time of each proof's outer span that no phase covers";
            gaps_flagged => "gaps_flagged", None, "Unaccounted gaps over the gap rule, by the leading finding of their diagnosis";
            releases => "releases", None, "Large releases (blocks at or above the large-block threshold) around proofs, by place";
            release_bytes => "release", Bytes, "Bytes of large releases around proofs, by place";
            release_seconds => "release_inside_free", Seconds, "Time spent inside free by large releases around proofs, by place";
            gpu_utilization => "gpu_utilization", Ratio, "Share of time a kernel ran on the GPU (NVML, latest sample)";
            gpu_memory_used => "gpu_memory_used", Bytes, "GPU memory used (NVML, latest sample)";
            gpu_power => "gpu_power", Watts, "GPU power draw (NVML, latest sample)";
            gpu_energy => "gpu_energy", Joules, "GPU energy used while the prover was watched (NVML counter differences)";
            heap_live => "heap_live", Bytes, "Heap bytes live in the prover (its counting allocator or the preload library)";
            rss => "rss", Bytes, "Resident set size of the prover";
            dropped => "dropped_events", None, "Events the prover's probe dropped (full buffers or a slow exporter), by kind";
            up => "prover_up", None, "1 while the exporter receives the worker's stream; 0 once it is gone or unreachable (kept for --forget-after)";
            prover_info => "prover_info", None, "The prover a worker runs now: its name, version and pid (1 while it is known)";
            gpu_info => "gpu_info", None, "A GPU a worker uses: its model (1 while the worker is up)";
            labels_capped => "exporter_labels_capped", None, "Label values exported as `other` because the label had its maximum of distinct values (--max-label-values)";
            reconnects => "prover_reconnects", None, "Times the stream of a prover was lost and found again";
            state => "prover_state", None, "1 for the worker's state now: running (its stream flows), stopped (its prover said goodbye) or lost (gone without one)";
            restarts => "worker_restarts", None, "Times a new process took the worker's name (another pid): restarts, planned or not";
            provers => "exporter_provers", None, "Provers the exporter watches now";
            scrape_duration => "exporter_scrape_duration", Seconds, "How long the previous scrape took to encode";
            scrapes => "exporter_scrapes", None, "Scrapes served";
            proofs_missed => "exporter_proofs_missed", None, "Proofs that left a prover's model before they could be counted (should stay 0)";
            workers_evicted => "exporter_workers_evicted", None, "Stopped workers whose series were removed before --forget-after, to keep at most --max-workers";
            name_clashes => "exporter_worker_name_clashes", None, "Provers that asked for a worker name a live prover held, and were named `<name>~N` (set PROOFSCOPE_INSTANCE to tell them apart)";
        });
        r.register(
            "exporter_build",
            "The exporter's version",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                revision: env!("PROOFSCOPE_REVISION").to_owned(),
                rustc: env!("PROOFSCOPE_RUSTC").to_owned(),
            }),
        );
        m
    }
}

/// Every `result` label value, in the order [`result_label`] gives them.
pub const RESULTS: [&str; 5] = ["valid", "invalid", "unverifiable", "not_checked", "failed"];

/// The label value of a proof's outcome.
pub fn result_label(p: &ProofReport, failed: bool) -> &'static str {
    if failed {
        return RESULTS[4];
    }
    match p.verification.as_str() {
        "valid" => RESULTS[0],
        "INVALID" => RESULTS[1],
        "unverifiable (synthetic SRS)" => RESULTS[2],
        _ => RESULTS[3],
    }
}

/// The `place` label values, in the order of [`places`].
pub const PLACES: [&str; 4] = [
    "in_outer_outside_phases",
    "in_phases",
    "other_threads",
    "after_proof",
];

/// The places of [`ProofReleases`] with their label values.
pub fn places(r: &ProofReleases) -> [(&'static str, &ReleaseGroup); 4] {
    [
        (PLACES[0], &r.in_outer_outside_phases),
        (PLACES[1], &r.in_phases),
        (PLACES[2], &r.elsewhere_during),
        (PLACES[3], &r.after_outer),
    ]
}

/// Every label value a diagnosis kind can take (pre-created, so rate() works from zero).
pub fn gap_kinds() -> [DiagnosisKind; DiagnosisKind::ALL.len()] {
    DiagnosisKind::ALL
}
