//! One session: one prover process's stream (a connection, a recording or an imported log).
//! Its facts are private to the model: ingestion writes them, everyone else asks.

use super::early::Early;
use super::ids::{NameId, ProofId, SpanId, StackId, ThreadId};
use super::proof::{Proof, SpanTree};
use super::records::{Block, DropReport, Goodbye, ThreadInfo};
use super::series::TimeSeries;
use probe_protocol::{
    AllocSample, GpuSample, Hello, HistoryGap, OutputStream, OutputWrite, StackSample,
    ThreadKernel, ThreadSched, Welcome,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// Where a session's stream was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// A prover's probe (live, or recorded).
    #[default]
    Probe,
    /// A log imported (`import`, `replay LOG`): no process, no host, no telemetry; its times
    /// the log's own.
    Log,
}

impl Origin {
    /// What a session's `Hello` says it came from: the importer marks the sessions it makes
    /// (pid 0, its own clock), and this is the one place that reads the mark.
    pub fn of(h: &Hello) -> Origin {
        if h.pid == 0 && h.clock == crate::import::IMPORTED_CLOCK {
            Origin::Log
        } else {
            Origin::Probe
        }
    }
}

#[derive(Debug, Default)]
pub struct Session {
    pub(super) hello: Option<Hello>,
    /// Set with the Hello.
    pub(super) origin: Origin,
    /// Interned names by id. A map, not a dense vector: ids come from the stream, and a corrupt
    /// one must not make the viewer allocate gigabytes.
    pub(super) names: HashMap<NameId, String>,
    pub(super) threads: HashMap<ThreadId, ThreadInfo>,
    /// The thread ids that carry each name: threads of one name active at once are shown apart.
    pub(super) thread_names: HashMap<String, Vec<ThreadId>>,
    pub(super) proofs: BTreeMap<ProofId, Proof>,
    /// Every span seen, and the proof it belongs to (`None`: to no proof).
    pub(super) span_proof: HashMap<SpanId, Option<ProofId>>,
    /// Spans outside any proof (parameter generation, …), most recent kept.
    pub(super) loose: SpanTree,
    /// GPU spans and markers whose span has not begun yet (see `early.rs`).
    pub(super) early: Early,
    pub(super) alloc: TimeSeries<AllocSample>,
    pub(super) releases: TimeSeries<Block>,
    pub(super) allocs: TimeSeries<Block>,
    pub(super) gpu: BTreeMap<u32, TimeSeries<GpuSample>>,
    /// Call stacks of large blocks by id, frames innermost first (protocol 1.3).
    pub(super) stacks: HashMap<StackId, Vec<String>>,
    /// Scheduler counters per thread, sampled while it is inside a span (protocol 1.2).
    pub(super) sched: BTreeMap<ThreadId, TimeSeries<ThreadSched>>,
    /// Kernel counters per thread, sampled with its scheduler counters (protocol 1.7).
    pub(super) kernel: BTreeMap<ThreadId, TimeSeries<ThreadKernel>>,
    /// Stack samples per thread (protocol 1.7).
    pub(super) stack_samples: BTreeMap<ThreadId, TimeSeries<StackSample>>,
    /// Writes to stdout and stderr, stamped where they happened (protocol 1.5).
    pub(super) outputs: BTreeMap<OutputStream, TimeSeries<OutputWrite>>,
    /// When this process held a CUDA context on each device (protocol 1.6).
    pub(super) gpu_contexts: super::GpuContexts,
    pub(super) drops: Vec<DropReport>,
    pub(super) dropped_total: u64,
    pub(super) history_gap: Option<HistoryGap>,
    pub(super) goodbye: Option<Goodbye>,
    /// Latest `status` marker text (e.g. parameter generation progress).
    pub(super) status: Option<String>,
    /// Latest timestamp seen.
    pub(super) now: u64,
    pub(super) events: u64,
    pub(super) proofs_done: u64,
    /// Proofs completed after `LiveStart` (not replayed from the prover's history).
    pub(super) proofs_done_live: u64,
    /// `LiveStart` has been seen: what follows is live.
    pub(super) live: bool,
    /// Session time of the first and latest ProofEnd, for proofs/min.
    pub(super) first_end: Option<u64>,
    pub(super) last_end: Option<u64>,
    /// While replaying history after a reconnection: time-series events up to here are known.
    pub(super) seen_until: Option<u64>,
    /// What this session costs to keep, roughly (bytes).
    pub(super) bytes: usize,
    /// Bytes of its names and threads, and definitions refused past their budget.
    pub(super) def_bytes: usize,
    pub(super) defs_refused: u64,
    /// Proof ids below this were evicted (retention takes the lowest id first): their later
    /// events are dropped and counted, not made into the proof again — that re-made an
    /// in-progress proof once per eviction (24 "evicted proofs" for a file of 1) and kept a
    /// deep chain of its spans past the budget.
    pub(super) evicted_below: u64,
    /// Events dropped because their proof had been evicted.
    pub(super) evicted_late: u64,
    /// Proofs of this session retention evicted.
    pub(super) evicted_proofs: u64,
}

impl Session {
    /// Proofs of this session that retention evicted.
    pub fn evicted_proofs(&self) -> u64 {
        self.evicted_proofs
    }

    /// Every proof id below this that retention saw is evicted (0: none was).
    pub fn evicted_below(&self) -> u64 {
        self.evicted_below
    }

    /// Which process's session this is, (pid, session start): a reconnection to it is the
    /// same key, a restart a new one. (0, 0) before its Hello.
    pub fn key(&self) -> (u32, u64) {
        self.hello
            .as_ref()
            .map_or((0, 0), |h| (h.pid, h.session_start_unix_ns))
    }

    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Whether the session was made from a log (see [`Origin::Log`]).
    pub fn from_log(&self) -> bool {
        self.origin == Origin::Log
    }

    /// The prover as the session names it.
    pub fn prover_name(&self) -> &str {
        self.hello.as_ref().map_or("", |h| h.prover_name.as_str())
    }

    pub fn name(&self, id: NameId) -> &str {
        self.names.get(&id).map(String::as_str).unwrap_or("?")
    }

    /// A thread as reports and views name it: its name, with `#id` appended when another
    /// thread of the same name was active at the same time (threads are told apart by id; a
    /// name reused by one thread after another, a per-proof `prep_msm`, needs no suffix).
    pub fn thread_name(&self, id: ThreadId) -> Cow<'_, str> {
        let Some(t) = self.threads.get(&id) else {
            return "?".into();
        };
        let overlaps = |a: (u64, u64), b: (u64, u64)| a.0 <= b.1 && b.0 <= a.1;
        let clash = t.life.is_some_and(|mine| {
            self.thread_names.get(&t.name).is_some_and(|ids| {
                ids.iter().any(|&o| {
                    o != id
                        && self
                            .threads
                            .get(&o)
                            .and_then(|x| x.life)
                            .is_some_and(|l| overlaps(mine, l))
                })
            })
        });
        if clash {
            format!("{}#{}", t.name, id).into()
        } else {
            t.name.as_str().into()
        }
    }

    /// The thread the stream defined for OS thread `os_tid` (the main thread's is the pid).
    pub fn thread_by_os_tid(&self, os_tid: u64) -> Option<ThreadId> {
        self.threads
            .iter()
            .filter(|(_, t)| t.os_tid == os_tid)
            .map(|(id, _)| *id)
            .min()
    }

    /// The threads the stream defined.
    pub fn thread_ids(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.threads.keys().copied()
    }

    /// Proofs, oldest first.
    pub fn proofs(&self) -> impl DoubleEndedIterator<Item = &Proof> + '_ {
        self.proofs.values()
    }

    /// Proofs with an id above `id`, in id order.
    pub fn proofs_after(&self, id: ProofId) -> impl Iterator<Item = &Proof> + '_ {
        use std::ops::Bound::{Excluded, Unbounded};
        self.proofs.range((Excluded(id), Unbounded)).map(|(_, p)| p)
    }

    pub fn proof(&self, id: ProofId) -> Option<&Proof> {
        self.proofs.get(&id)
    }

    pub fn proof_count(&self) -> usize {
        self.proofs.len()
    }

    /// The proof span `id` belongs to; `None` when it belongs to none or is unknown.
    pub fn proof_of(&self, id: SpanId) -> Option<ProofId> {
        self.span_proof.get(&id).copied().flatten()
    }

    /// Whether span `id` was seen (in a proof or outside every proof).
    pub fn knows_span(&self, id: SpanId) -> bool {
        self.span_proof.contains_key(&id)
    }

    /// Spans, device work and marks outside every proof.
    pub fn loose(&self) -> &SpanTree {
        &self.loose
    }

    /// Every proof's tree (with its id) and the loose one (`None`).
    pub fn trees(&self) -> impl Iterator<Item = (Option<ProofId>, &SpanTree)> + '_ {
        self.proofs
            .values()
            .map(|p| (Some(p.id()), p.tree()))
            .chain(std::iter::once((None, &self.loose)))
    }

    pub fn alloc_samples(&self) -> &TimeSeries<AllocSample> {
        &self.alloc
    }

    pub fn releases(&self) -> &TimeSeries<Block> {
        &self.releases
    }

    pub fn allocs(&self) -> &TimeSeries<Block> {
        &self.allocs
    }

    /// NVML samples per device.
    pub fn gpu_samples(&self) -> &BTreeMap<u32, TimeSeries<GpuSample>> {
        &self.gpu
    }

    /// When the process held a CUDA context on each device (NVML's process list).
    pub fn gpu_contexts(&self) -> &super::GpuContexts {
        &self.gpu_contexts
    }

    /// Scheduler samples of thread `id`.
    pub fn sched(&self, id: ThreadId) -> Option<&TimeSeries<ThreadSched>> {
        self.sched.get(&id)
    }

    /// Kernel counters of thread `id`: page faults, user and kernel time, the system call
    /// it was blocked in.
    pub fn kernel(&self, id: ThreadId) -> Option<&TimeSeries<ThreadKernel>> {
        self.kernel.get(&id)
    }

    /// The kernel's samples of thread `id`'s user-space call stack.
    pub fn stack_samples(&self, id: ThreadId) -> Option<&TimeSeries<StackSample>> {
        self.stack_samples.get(&id)
    }

    /// The write that carried byte `offset` of the program's `stream` (its own count of the
    /// bytes it wrote there), if the probe reported it and it is still kept.
    pub fn output_write_at(&self, stream: OutputStream, offset: u64) -> Option<&OutputWrite> {
        let writes = self.outputs.get(&stream)?.all();
        // Offsets grow with time; two threads' writes may be reported a little out of order,
        // so the neighbours of the first write ending past `offset` are looked at too.
        let i = writes.partition_point(|w| w.offset + w.bytes <= offset);
        writes[i.saturating_sub(2)..(i + 3).min(writes.len())]
            .iter()
            .find(|w| w.offset <= offset && offset < w.offset + w.bytes)
    }

    /// The program's writes to stdout and stderr stamped in `[from, to)`, stream by stream.
    pub fn writes_between(&self, from: u64, to: u64) -> impl Iterator<Item = &OutputWrite> {
        self.outputs.values().flat_map(move |t| t.range(from, to))
    }

    /// Whether the probe stamps this session's writes to stdout and stderr.
    pub fn stamps_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// A call stack's frames, innermost first.
    pub fn stack(&self, id: StackId) -> Option<&[String]> {
        self.stacks.get(&id).map(Vec::as_slice)
    }

    pub fn drops(&self) -> &[DropReport] {
        &self.drops
    }

    /// Events reported dropped in all.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    pub fn history_gap(&self) -> Option<&HistoryGap> {
        self.history_gap.as_ref()
    }

    pub fn goodbye(&self) -> Option<&Goodbye> {
        self.goodbye.as_ref()
    }

    /// The prover's latest status line.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Latest timestamp seen.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Events applied to it.
    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn proofs_done(&self) -> u64 {
        self.proofs_done
    }

    /// Proofs completed after `LiveStart`: what a headless `--proofs N` counts.
    pub fn proofs_done_live(&self) -> u64 {
        self.proofs_done_live
    }

    /// Definitions refused past the session's budget for them.
    pub fn defs_refused(&self) -> u64 {
        self.defs_refused
    }

    pub fn gpu_names(&self) -> Vec<String> {
        self.hello
            .as_ref()
            .map(|h| h.gpus.iter().map(|g| g.name.clone()).collect())
            .unwrap_or_default()
    }

    /// What a reader joining the session now needs first (a recording started midway): the
    /// session's `Hello` and every definition kept.
    pub fn welcome(&self) -> Welcome {
        let mut names: Vec<(u32, String)> =
            self.names.iter().map(|(id, n)| (id.0, n.clone())).collect();
        names.sort();
        let mut threads: Vec<(u32, String, u64)> = self
            .threads
            .iter()
            .map(|(id, t)| (id.0, t.name.clone(), t.os_tid))
            .collect();
        threads.sort();
        let mut stacks: Vec<(u32, Vec<String>)> = self
            .stacks
            .iter()
            .map(|(id, f)| (id.0, f.clone()))
            .collect();
        stacks.sort();
        Welcome {
            hello: self.hello.clone(),
            names,
            threads,
            stacks,
        }
    }
}
