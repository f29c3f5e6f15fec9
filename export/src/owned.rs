//! Every label set a worker's series were created with, so that they can be removed once the
//! worker is gone for good (series of dead workers would otherwise pile up over days), and
//! handed to the same worker when it comes back (a restart continues its series).

use super::metrics::{
    CaptureLabels, GapLabels, GpuInfoLabels, GpuLabels, KindLabels, Metrics, PhaseLabels,
    PlaceLabels, ProofLabels, ProverInfoLabels, ProverLabels, ResultLabels,
};
use std::collections::HashSet;
use std::hash::Hash;

/// A label set of one worker's series.
pub trait OfWorker: Clone + Eq + Hash {
    fn worker(&self) -> &str;
}

macro_rules! of_worker {
    ($($t:ty),*) => {
        $(impl OfWorker for $t {
            fn worker(&self) -> &str {
                &self.worker
            }
        })*
    };
}

of_worker!(
    ProverLabels,
    ProverInfoLabels,
    ResultLabels,
    ProofLabels,
    PhaseLabels,
    GapLabels,
    PlaceLabels,
    GpuLabels,
    GpuInfoLabels,
    KindLabels,
    CaptureLabels
);

#[derive(Debug, Default, Clone)]
pub struct Owned {
    pub prover: HashSet<ProverLabels>,
    pub info: HashSet<ProverInfoLabels>,
    pub results: HashSet<ResultLabels>,
    pub proofs: HashSet<ProofLabels>,
    pub phases: HashSet<PhaseLabels>,
    pub gaps: HashSet<GapLabels>,
    pub places: HashSet<PlaceLabels>,
    pub gpus: HashSet<GpuLabels>,
    pub gpu_info: HashSet<GpuInfoLabels>,
    pub kinds: HashSet<KindLabels>,
    pub captures: HashSet<CaptureLabels>,
}

fn of<L: OfWorker>(set: &HashSet<L>, worker: &str) -> HashSet<L> {
    set.iter()
        .filter(|l| l.worker() == worker)
        .cloned()
        .collect()
}

impl Owned {
    /// The label sets of `worker` alone.
    pub fn of_worker(&self, worker: &str) -> Owned {
        Owned {
            prover: of(&self.prover, worker),
            info: of(&self.info, worker),
            results: of(&self.results, worker),
            proofs: of(&self.proofs, worker),
            phases: of(&self.phases, worker),
            gaps: of(&self.gaps, worker),
            places: of(&self.places, worker),
            gpus: of(&self.gpus, worker),
            gpu_info: of(&self.gpu_info, worker),
            kinds: of(&self.kinds, worker),
            captures: of(&self.captures, worker),
        }
    }

    /// Adds `other`'s label sets.
    pub fn merge(&mut self, other: Owned) {
        self.prover.extend(other.prover);
        self.info.extend(other.info);
        self.results.extend(other.results);
        self.proofs.extend(other.proofs);
        self.phases.extend(other.phases);
        self.gaps.extend(other.gaps);
        self.places.extend(other.places);
        self.gpus.extend(other.gpus);
        self.gpu_info.extend(other.gpu_info);
        self.kinds.extend(other.kinds);
        self.captures.extend(other.captures);
    }

    /// Removes the gauges, which would otherwise stay frozen at a gone worker's last sample;
    /// its counters stay (at their totals) until [`Owned::forget`].
    pub fn remove_gauges(&self, m: &Metrics) {
        for l in &self.prover {
            m.heap_live.remove(l);
            m.rss.remove(l);
        }
        for l in &self.gpus {
            m.gpu_utilization.remove(l);
            m.gpu_memory_used.remove(l);
            m.gpu_power.remove(l);
        }
        for l in &self.gpu_info {
            m.gpu_info.remove(l);
        }
    }

    /// Removes every series.
    pub fn forget(&self, m: &Metrics) {
        self.remove_gauges(m);
        for l in &self.prover {
            m.up.remove(l);
            m.reconnects.remove(l);
            m.restarts.remove(l);
            m.remove_state(&l.worker);
        }
        for l in &self.info {
            m.prover_info.remove(l);
        }
        for l in &self.results {
            m.proofs.remove(l);
        }
        for l in &self.proofs {
            m.proof_duration.remove(l);
            m.unaccounted.remove(l);
        }
        for l in &self.phases {
            m.phase_duration.remove(l);
        }
        for l in &self.gaps {
            m.gaps_flagged.remove(l);
        }
        for l in &self.places {
            m.releases.remove(l);
            m.release_bytes.remove(l);
            m.release_seconds.remove(l);
        }
        for l in &self.gpus {
            m.gpu_energy.remove(l);
        }
        for l in &self.kinds {
            m.dropped.remove(l);
        }
        for l in &self.captures {
            m.captures.remove(l);
        }
    }
}
