//! Sessions → proofs → span trees across threads and GPU streams; memory and GPU series;
//! releases; drops. The model owns its facts: fields are private, ids are typed, and the
//! analysis, views, reports and export ask through queries. Retention is bounded by proofs
//! and bytes; evictions are counted.

mod contexts;
mod early;
#[cfg(test)]
pub mod fixture;
mod ids;
mod ingest;
mod proof;
mod records;
mod retention;
mod series;
mod session;
mod sessions;
mod worker;

pub use contexts::{GpuContexts, Held};
pub use ids::{NameId, ProofId, SpanId, StackId, ThreadId};
pub use ingest::{MAX_ARGS, cut};
pub use proof::{Proof, SpanTree};
pub use records::{Block, DeviceSpan, DropReport, Goodbye, Mark, Span, ThreadInfo};
pub use series::{TimeSeries, Timed};
pub use session::{Origin, Session};
pub use worker::worker_name;

/// How much the model keeps.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Most proofs kept (oldest evicted first).
    pub max_proofs: usize,
    /// Approximate bytes of retained events before the oldest proofs are evicted.
    pub max_bytes: usize,
}

/// Identifies a proof across sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProofKey {
    pub session: usize,
    pub proof: ProofId,
}

/// Everything the viewer knows.
#[derive(Debug, Default)]
pub struct Model {
    sessions: sessions::Sessions,
    /// Proofs held in all sessions (retention's test runs after every event: a sum over the
    /// sessions there was quadratic in their number).
    proofs_held: usize,
    /// Leading sessions, before the current one, known to hold no proof / nothing outside
    /// proofs: only the current session gains events, so an older one that ran out stays so.
    proofless: usize,
    bare: usize,
    retention: Retention,
    evicted_proofs: u64,
    evicted_events: u64,
    /// Whole sessions evicted (older provers' streams, once nothing else was left to evict).
    evicted_sessions: u64,
    /// Events ingested in total.
    events: u64,
    /// Frames that failed to decode.
    bad_frames: u64,
    approx_bytes: usize,
}

impl Model {
    pub fn new(retention: Retention) -> Model {
        Model {
            retention,
            ..Model::default()
        }
    }

    /// A fresh model with the same retention, keeping the count of frames that did not
    /// decode (a replay going back starts over from the file's first frame).
    pub fn restart(&mut self) {
        let bad = self.bad_frames;
        *self = Model::new(self.retention);
        self.bad_frames = bad;
    }

    pub fn retention(&self) -> Retention {
        self.retention
    }

    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    pub fn current(&self) -> Option<&Session> {
        self.sessions.last()
    }

    pub fn session(&self, i: usize) -> Option<&Session> {
        self.sessions.get(i)
    }

    pub fn proof(&self, key: ProofKey) -> Option<&Proof> {
        self.sessions.get(key.session)?.proof(key.proof)
    }

    /// All retained proofs, oldest first.
    pub fn proof_keys(&self) -> Vec<ProofKey> {
        self.sessions
            .iter()
            .enumerate()
            .flat_map(|(si, s)| {
                s.proofs().map(move |p| ProofKey {
                    session: si,
                    proof: p.id(),
                })
            })
            .collect()
    }

    /// The latest proof that has ended, else the latest proof.
    pub fn latest_proof(&self) -> Option<ProofKey> {
        let keys = self.proof_keys();
        keys.iter()
            .rev()
            .find(|k| self.proof(**k).is_some_and(Proof::done))
            .or(keys.last())
            .copied()
    }

    /// Proofs completed, in every session.
    pub fn proofs_done(&self) -> u64 {
        self.sessions.iter().map(Session::proofs_done).sum()
    }

    /// Proofs completed after attaching (not replayed from a prover's history).
    pub fn proofs_done_live(&self) -> u64 {
        self.sessions.iter().map(Session::proofs_done_live).sum()
    }

    pub fn dropped_total(&self) -> u64 {
        self.sessions.iter().map(Session::dropped_total).sum()
    }

    pub fn approx_bytes(&self) -> usize {
        self.approx_bytes
    }

    pub fn evicted_proofs(&self) -> u64 {
        self.evicted_proofs
    }

    pub fn evicted_events(&self) -> u64 {
        self.evicted_events
    }

    pub fn evicted_sessions(&self) -> u64 {
        self.evicted_sessions
    }

    /// Events ingested in total.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Frames that failed to decode.
    pub fn bad_frames(&self) -> u64 {
        self.bad_frames
    }

    /// Counts frames a source could not decode.
    pub fn count_bad_frames(&mut self, n: u64) {
        self.bad_frames += n;
    }
}
