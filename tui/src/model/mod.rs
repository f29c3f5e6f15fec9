//! Sessions → proofs → span trees across threads and GPU streams; memory and GPU series;
//! releases; drops. Retention is bounded by proofs and bytes; evictions are counted.

mod early;
mod ingest;
mod series;

pub use series::TimeSeries;

use probe_protocol::{
    AllocSample, BlockEvent, EventKind, GpuSample, GpuSpan, Hello, HistoryGap, Marker, ProofBegin,
    ProofEnd,
};
use std::collections::{BTreeMap, HashMap};

/// How much the model keeps.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Most proofs kept (oldest evicted first).
    pub max_proofs: usize,
    /// Approximate bytes of retained events before the oldest proofs are evicted.
    pub max_bytes: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_proofs: 1000,
            max_bytes: 512 << 20,
        }
    }
}

/// A span as the viewer keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub id: u64,
    pub parent: Option<u64>,
    pub name: u32,
    pub thread: u32,
    pub start: u64,
    /// `None` while open.
    pub end: Option<u64>,
}

impl Span {
    pub fn end_or(&self, now: u64) -> u64 {
        self.end.unwrap_or(now.max(self.start))
    }
}

/// One proof (one batch).
#[derive(Debug, Clone, Default)]
pub struct Proof {
    pub id: u64,
    pub begin: Option<ProofBegin>,
    pub end: Option<ProofEnd>,
    pub spans: Vec<Span>,
    /// Span id → index in `spans`.
    pub index: HashMap<u64, usize>,
    pub gpu_spans: Vec<GpuSpan>,
    pub markers: Vec<Marker>,
}

impl Proof {
    /// The outer span (the wrapper timer), once known.
    pub fn outer(&self) -> Option<&Span> {
        let id = self.begin.as_ref()?.span;
        self.span(id)
    }

    pub fn span(&self, id: u64) -> Option<&Span> {
        self.index.get(&id).map(|&i| &self.spans[i])
    }

    /// Whether the proof has ended (ProofEnd seen).
    pub fn done(&self) -> bool {
        self.end.is_some()
    }

    /// The proof's time range: its outer span, else the extent of its spans.
    pub fn range(&self, now: u64) -> Option<(u64, u64)> {
        if let Some(o) = self.outer() {
            return Some((o.start, o.end_or(now)));
        }
        let s = self.spans.iter().map(|s| s.start).min()?;
        let e = self.spans.iter().map(|s| s.end_or(now)).max()?;
        Some((s, e))
    }

    /// Direct children of a span (any thread).
    pub fn children(&self, id: u64) -> impl Iterator<Item = &Span> {
        self.spans.iter().filter(move |s| s.parent == Some(id))
    }

    /// What keeping this proof costs, as the model counted it when its events arrived.
    pub fn approx_bytes(&self) -> usize {
        self.spans.len() * ingest::SPAN_BYTES
            + self.gpu_spans.len() * 96
            + self.markers.len() * 128
            + self
                .markers
                .iter()
                .filter_map(|m| m.text.as_ref())
                .map(String::len)
                .sum::<usize>()
            + 384
    }
}

/// One session: one prover process's stream (a connection or a recording).
#[derive(Debug, Default)]
pub struct Session {
    pub hello: Option<Hello>,
    /// Interned names by id. A map, not a dense vector: ids come from the stream, and a corrupt
    /// one must not make the viewer allocate gigabytes.
    pub names: HashMap<u32, String>,
    pub threads: HashMap<u32, (String, u64)>,
    /// The thread ids that carry each name, and each thread's first and last event time:
    /// threads of one name active at once are shown apart.
    pub(crate) thread_names: HashMap<String, Vec<u32>>,
    pub(crate) thread_life: HashMap<u32, (u64, u64)>,
    pub proofs: BTreeMap<u64, Proof>,
    /// Span id → proof id (0 = no proof).
    pub span_proof: HashMap<u64, u64>,
    /// Spans outside any proof (parameter generation, …), most recent kept.
    pub loose: Proof,
    /// GPU spans and markers whose span has not begun yet (see `early.rs`).
    pub(crate) early: early::Early,
    pub alloc: TimeSeries<AllocSample>,
    pub releases: TimeSeries<BlockEvent>,
    pub allocs: TimeSeries<BlockEvent>,
    pub gpu: BTreeMap<u32, TimeSeries<GpuSample>>,
    /// Call stacks of large blocks by id, frames innermost first (protocol 1.3).
    pub stacks: HashMap<u32, Vec<String>>,
    /// Scheduler counters per thread, sampled while it is inside a span (protocol 1.2).
    pub sched: BTreeMap<u32, TimeSeries<probe_protocol::ThreadSched>>,
    /// (ts, per-kind counts) of every `Dropped`.
    pub dropped: Vec<(u64, Vec<(EventKind, u64)>)>,
    pub dropped_total: u64,
    pub history_gap: Option<HistoryGap>,
    pub goodbye: Option<(u64, String)>,
    /// Latest `status` marker text (e.g. parameter generation progress).
    pub status: Option<String>,
    /// Latest timestamp seen.
    pub now: u64,
    pub events: u64,
    pub proofs_done: u64,
    /// Proofs completed after `LiveStart` (not replayed from the prover's history): what a
    /// headless `--proofs N` counts.
    pub proofs_done_live: u64,
    /// `LiveStart` has been seen: what follows is live.
    pub live: bool,
    /// Session time of the first and latest ProofEnd, for proofs/min.
    pub first_end: Option<u64>,
    pub last_end: Option<u64>,
    /// While replaying history after a reconnection: time-series events up to here are known.
    pub(crate) seen_until: Option<u64>,
    /// What this session costs to keep, roughly (bytes).
    pub(crate) bytes: usize,
    /// Bytes of its names and threads, and definitions refused past their budget.
    pub(crate) def_bytes: usize,
    pub defs_refused: u64,
}

impl Session {
    pub fn name(&self, id: u32) -> &str {
        self.names.get(&id).map(String::as_str).unwrap_or("?")
    }

    /// A thread as reports and views name it: its name, with `#id` appended when another
    /// thread of the same name was active at the same time (threads are told apart by id; a
    /// name reused by one thread after another, a per-proof `prep_msm`, needs no suffix).
    pub fn thread_name(&self, id: u32) -> std::borrow::Cow<'_, str> {
        let Some((name, _)) = self.threads.get(&id) else {
            return "?".into();
        };
        let overlaps = |a: (u64, u64), b: (u64, u64)| a.0 <= b.1 && b.0 <= a.1;
        let clash = self.thread_life.get(&id).is_some_and(|&mine| {
            self.thread_names.get(name).is_some_and(|ids| {
                ids.iter().any(|&o| {
                    o != id && self.thread_life.get(&o).is_some_and(|&l| overlaps(mine, l))
                })
            })
        });
        if clash {
            format!("{name}#{id}").into()
        } else {
            name.as_str().into()
        }
    }

    /// Completed proofs per minute over the session so far.
    pub fn proofs_per_min(&self) -> Option<f64> {
        let (a, b) = (self.first_end?, self.last_end?);
        if self.proofs_done < 2 || b <= a {
            return None;
        }
        Some((self.proofs_done - 1) as f64 / ((b - a) as f64 / 60e9))
    }

    pub fn gpu_names(&self) -> Vec<String> {
        self.hello
            .as_ref()
            .map(|h| h.gpus.iter().map(|g| g.name.clone()).collect())
            .unwrap_or_default()
    }
}

/// Identifies a proof across sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProofKey {
    pub session: usize,
    pub proof: u64,
}

/// Everything the viewer knows.
#[derive(Debug, Default)]
pub struct Model {
    pub sessions: Vec<Session>,
    pub retention: Retention,
    pub evicted_proofs: u64,
    pub evicted_events: u64,
    /// Whole sessions evicted (older provers' streams, once nothing else was left to evict).
    pub evicted_sessions: u64,
    /// Events ingested in total.
    pub events: u64,
    /// Frames that failed to decode.
    pub bad_frames: u64,
    approx_bytes: usize,
}

impl Model {
    pub fn new(retention: Retention) -> Model {
        Model {
            retention,
            ..Model::default()
        }
    }

    pub fn current(&self) -> Option<&Session> {
        self.sessions.last()
    }

    pub fn session(&self, i: usize) -> Option<&Session> {
        self.sessions.get(i)
    }

    pub fn proof(&self, key: ProofKey) -> Option<&Proof> {
        self.sessions.get(key.session)?.proofs.get(&key.proof)
    }

    /// All retained proofs, oldest first.
    pub fn proof_keys(&self) -> Vec<ProofKey> {
        self.sessions
            .iter()
            .enumerate()
            .flat_map(|(si, s)| {
                s.proofs.keys().map(move |&p| ProofKey {
                    session: si,
                    proof: p,
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

    pub fn dropped_total(&self) -> u64 {
        self.sessions.iter().map(|s| s.dropped_total).sum()
    }

    pub fn approx_bytes(&self) -> usize {
        self.approx_bytes
    }
}
