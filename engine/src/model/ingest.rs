//! Applying events to the model. Idempotent where a reconnection to the same prover replays
//! history: spans are keyed by id, and time series skip what was already seen.
//!
//! Memory is bounded by `Retention` whatever the input (a hostile recording included): every
//! event adds an estimate of what it costs to keep (what [`super::retention`] evicts against),
//! and strings from the wire are cut to a few KiB. A session's names and threads take at most
//! an eighth of the budget; definitions past that are refused (counted).

use super::early::Orphan;
use super::ids::{NameId, ProofId, SpanId, StackId, ThreadId};
use super::proof::{Proof, SpanTree, cost};
use super::records::{DeviceSpan, DropReport, Goodbye, Mark, Span, ThreadInfo};
use super::{Model, Origin, Session};
use probe_protocol::markers::{self, Meaning};
use probe_protocol::{Event, Hello, ProofBegin, ProofEnd};

/// Longest string kept from the wire, per kind of string.
const MAX_NAME: usize = 1024;
const MAX_TEXT: usize = 4096;
/// Most arguments of a command line kept (each cut to [`MAX_NAME`]).
pub const MAX_ARGS: usize = 256;
/// Most GPUs of a `Hello` kept.
const MAX_GPUS: usize = 64;
/// Frames of a call stack kept: what a diagnosis reads.
const MAX_FRAMES: usize = 64;

/// What keeping an item costs, roughly (see [`cost`] for the items of a proof).
pub(super) const SAMPLE_BYTES: usize = 160;
pub(super) const BLOCK_BYTES: usize = 96;
const DEF_BYTES: usize = 64;
const THREAD_BYTES: usize = 32;
/// A session with no events yet: its maps and series. At 4,096 the "sessions of one proof"
/// shape (tests/shapes.rs: 5–40 MiB of small sessions) peaked at 47–50 MiB at `--max-mib 32`,
/// over its bound of 48 — about 8 KiB a session really held against 5.6 KiB estimated (with
/// its Hello's strings); at 6,144 it peaks at 38 MiB.
pub(super) const SESSION_BYTES: usize = 6144;
/// Dropped-event entries kept per session (their totals are kept whatever happens).
const MAX_DROPPED_ENTRIES: usize = 10_000;

/// `s` cut to at most `max` bytes (on a character boundary), ending in `…` when cut.
pub fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut at = max;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
        s.push('…');
    }
    s
}

/// A `Hello` with its strings and lists cut to size; and what it costs.
fn bounded_hello(mut h: Hello) -> (Hello, usize) {
    h.prover_name = cut(h.prover_name, MAX_NAME);
    h.prover_version = cut(h.prover_version, MAX_NAME);
    h.hostname = cut(h.hostname, MAX_NAME);
    h.clock = cut(h.clock, MAX_NAME);
    h.backend = cut(h.backend, MAX_NAME);
    h.backend_reason = cut(h.backend_reason, MAX_TEXT);
    h.gpu_unavailable_reason = h.gpu_unavailable_reason.map(|r| cut(r, MAX_TEXT));
    h.gpu_driver_version = h.gpu_driver_version.map(|r| cut(r, MAX_NAME));
    h.gpus.truncate(MAX_GPUS);
    for g in &mut h.gpus {
        g.name = cut(std::mem::take(&mut g.name), MAX_NAME);
        g.uuid = cut(std::mem::take(&mut g.uuid), MAX_NAME);
        g.pci_bus_id = cut(std::mem::take(&mut g.pci_bus_id), MAX_NAME);
    }
    h.command_line.truncate(MAX_ARGS);
    for a in &mut h.command_line {
        *a = cut(std::mem::take(a), MAX_NAME);
    }
    let strings: usize = h.command_line.iter().map(String::len).sum::<usize>()
        + h.gpus.len() * 256
        + h.backend_reason.len()
        + 1024;
    // Each string's allocation, its `String` and the vector that holds it: half as much again.
    (h, SESSION_BYTES + strings * 3 / 2)
}

impl Model {
    /// Applies one event to the current session (a `Hello` may open a new one).
    pub fn ingest(&mut self, ev: Event) {
        self.events += 1;
        if let Event::Hello(h) = ev {
            self.hello(*h);
            self.enforce_retention();
            return;
        }
        if self.sessions.is_empty() {
            self.sessions.push(Session::default());
            self.approx_bytes += SESSION_BYTES;
        }
        let budget = self.retention.max_bytes / 8;
        let grew = match self.sessions.last_mut() {
            Some(s) => {
                let (before, late) = (s.proofs.len(), s.evicted_late);
                let grew = s.apply(ev, budget);
                // Proofs are only ever added here (retention removes them).
                self.proofs_held += s.proofs.len().saturating_sub(before);
                self.evicted_events += s.evicted_late - late;
                grew
            }
            None => 0,
        };
        self.approx_bytes += grew;
        self.enforce_retention();
    }

    /// Many events at once (a decoded frame).
    pub fn ingest_all(&mut self, events: impl IntoIterator<Item = Event>) {
        for e in events {
            self.ingest(e);
        }
    }

    fn hello(&mut self, h: Hello) {
        let (h, cost) = bounded_hello(h);
        // The same prover again (a reconnection) — never for sessions of no process (pid 0:
        // an imported log's sessions, one per daemon run).
        let same = self.sessions.last_mut().and_then(|s| {
            let old = s.hello.as_ref()?;
            (h.pid != 0
                && old.pid == h.pid
                && old.session_start_unix_ns == h.session_start_unix_ns
                && old.hostname == h.hostname)
                .then_some(s)
        });
        match same {
            // Reconnected to the same prover: its history will repeat what we have.
            Some(s) => {
                s.seen_until = Some(s.now);
                s.goodbye = None;
            }
            None => {
                self.sessions.push(Session {
                    origin: Origin::of(&h),
                    hello: Some(h),
                    bytes: cost,
                    ..Session::default()
                });
                self.approx_bytes += cost;
            }
        }
    }
}

impl Session {
    /// Applies one event; returns the bytes it added. `def_budget` bounds the bytes of names,
    /// threads and stacks.
    pub(super) fn apply(&mut self, ev: Event, def_budget: usize) -> usize {
        self.events += 1;
        if let Some(ts) = ev.ts() {
            self.now = self.now.max(ts);
        }
        self.note_activity(&ev);
        let grew = match ev {
            Event::Hello(_) | Event::Subscribe(_) | Event::Heartbeat { .. } => 0,
            Event::NameDef { id, name } => self.define_name(NameId(id), name, def_budget),
            Event::StackDef { id, frames } => self.define_stack(StackId(id), frames, def_budget),
            Event::ThreadDef { id, name, os_tid } => {
                self.define_thread(ThreadId(id), name, os_tid, def_budget)
            }
            Event::ProofBegin(p) => self.proof_begins(*p),
            Event::ProofEnd(p) => self.proof_ends(*p),
            Event::SpanBegin(b) => self.span_begins(
                Span {
                    id: SpanId(b.span),
                    parent: b.parent.map(SpanId),
                    name: NameId(b.name),
                    thread: ThreadId(b.thread),
                    start: b.ts,
                    end: None,
                },
                b.proof.map(ProofId),
            ),
            Event::SpanEnd(e) => self.span_ends(SpanId(e.span), e.ts),
            Event::Marker(m) => self.mark(Mark::from(*m)),
            Event::AllocSample(s) => self.sample(s.ts, |x| x.alloc.push(s), SAMPLE_BYTES),
            Event::Alloc(b) => self.sample(b.ts, |x| x.allocs.push(b.into()), BLOCK_BYTES),
            Event::Release(b) => self.sample(b.ts, |x| x.releases.push(b.into()), BLOCK_BYTES),
            Event::GpuSample(g) => self.sample(
                g.ts,
                |x| x.gpu.entry(g.device).or_default().push(*g),
                SAMPLE_BYTES,
            ),
            e @ (Event::ThreadSched(_)
            | Event::ThreadKernel(_)
            | Event::StackSample(_)
            | Event::OutputWrite(_)) => self.thread_sample(e),
            Event::GpuProcess(p) => {
                self.gpu_contexts.apply(&p);
                0
            }
            Event::GpuSpan(g) => self.gpu_span(DeviceSpan::from(g)),
            Event::Dropped(d) => self.dropped(DropReport {
                ts: d.ts,
                counts: d.counts.into_iter().collect(),
            }),
            Event::HistoryGap(h) => {
                self.history_gap = Some(h);
                0
            }
            Event::LiveStart { .. } => {
                self.seen_until = None;
                self.live = true;
                0
            }
            Event::Goodbye { ts, reason } => {
                self.goodbye = Some(Goodbye {
                    ts,
                    reason: cut(reason, MAX_TEXT),
                });
                0
            }
        };
        self.bytes += grew;
        grew
    }

    /// A sample of one thread's (or one stream's) series: its scheduler or kernel counters,
    /// a stack sample, a write to stdout or stderr.
    fn thread_sample(&mut self, ev: Event) -> usize {
        match ev {
            Event::ThreadSched(t) => self.sample(
                t.ts,
                |x| x.sched.entry(ThreadId(t.thread)).or_default().push(t),
                SAMPLE_BYTES,
            ),
            Event::ThreadKernel(k) => self.sample(
                k.ts,
                |x| x.kernel.entry(ThreadId(k.thread)).or_default().push(k),
                SAMPLE_BYTES,
            ),
            Event::StackSample(k) => self.sample(
                k.ts,
                |x| {
                    x.stack_samples
                        .entry(ThreadId(k.thread))
                        .or_default()
                        .push(k)
                },
                SAMPLE_BYTES,
            ),
            Event::OutputWrite(w) => self.sample(
                w.ts,
                |x| x.outputs.entry(w.stream).or_default().push(w),
                SAMPLE_BYTES,
            ),
            _ => 0,
        }
    }

    /// A defined thread's first and last event times: threads of one name alive at once are
    /// told apart by id.
    fn note_activity(&mut self, ev: &Event) {
        let (thread, ts) = match ev {
            Event::SpanBegin(b) => (b.thread, b.ts),
            Event::Marker(m) => (m.thread, m.ts),
            Event::Alloc(b) | Event::Release(b) => (b.thread, b.ts),
            _ => return,
        };
        if let Some(t) = self.threads.get_mut(&ThreadId(thread)) {
            let life = t.life.get_or_insert((ts, ts));
            life.0 = life.0.min(ts);
            life.1 = life.1.max(ts);
        }
    }

    /// A definition is kept while the session's definitions take less than `budget`.
    fn room_for_def(&mut self, len: usize, budget: usize) -> Option<usize> {
        let cost = DEF_BYTES + len;
        if self.def_bytes + cost > budget {
            self.defs_refused += 1;
            return None;
        }
        self.def_bytes += cost;
        Some(cost)
    }

    fn define_name(&mut self, id: NameId, name: String, budget: usize) -> usize {
        let name = cut(name, MAX_NAME);
        // A redefinition replaces the name (the later definition wins).
        if let Some(old) = self.names.get_mut(&id) {
            *old = name;
            return 0;
        }
        let Some(cost) = self.room_for_def(name.len(), budget) else {
            return 0;
        };
        self.names.insert(id, name);
        cost
    }

    fn define_stack(&mut self, id: StackId, frames: Vec<String>, budget: usize) -> usize {
        let frames: Vec<String> = frames
            .into_iter()
            // The end of the stack, not a frame: older probes sent it (PROTOCOL.md §4).
            .filter(|f| f != "0x0")
            .take(MAX_FRAMES)
            .map(|f| cut(f, MAX_NAME))
            .collect();
        // A redefinition replaces the stack (the later definition wins).
        if let Some(old) = self.stacks.get_mut(&id) {
            *old = frames;
            return 0;
        }
        let len = frames.iter().map(String::len).sum();
        let Some(cost) = self.room_for_def(len, budget) else {
            return 0;
        };
        self.stacks.insert(id, frames);
        cost
    }

    fn define_thread(&mut self, id: ThreadId, name: String, os_tid: u64, budget: usize) -> usize {
        let name = cut(name, MAX_NAME);
        if let Some(old) = self.threads.get_mut(&id) {
            if old.name != name {
                if let Some(ids) = self.thread_names.get_mut(&old.name) {
                    ids.retain(|&i| i != id);
                }
                self.thread_names.entry(name.clone()).or_default().push(id);
            }
            old.name = name;
            old.os_tid = os_tid;
            return 0;
        }
        let Some(cost) = self.room_for_def(name.len(), budget) else {
            return 0;
        };
        self.thread_names.entry(name.clone()).or_default().push(id);
        self.threads.insert(
            id,
            ThreadInfo {
                name,
                os_tid,
                life: None,
            },
        );
        cost + THREAD_BYTES
    }

    fn proof_mut(&mut self, id: ProofId) -> &mut Proof {
        self.proofs.entry(id).or_insert_with(|| Proof::new(id))
    }

    /// The tree of proof `id`, or the loose one.
    fn tree_mut(&mut self, id: Option<ProofId>) -> &mut SpanTree {
        match id {
            Some(id) => self.proof_mut(id).tree_mut(),
            None => &mut self.loose,
        }
    }

    /// Whether proof `id` was evicted: its events are dropped (and counted).
    fn gone(&mut self, id: ProofId) -> bool {
        let gone = id.get() < self.evicted_below && !self.proofs.contains_key(&id);
        self.evicted_late += u64::from(gone);
        gone
    }

    fn proof_begins(&mut self, mut p: ProofBegin) -> usize {
        if self.gone(ProofId(p.proof)) {
            return 0;
        }
        p.circuit = cut(std::mem::take(&mut p.circuit), MAX_NAME);
        p.backend = cut(std::mem::take(&mut p.backend), MAX_NAME);
        let cost = cost::PROOF_BEGIN + p.circuit.len() + p.backend.len();
        self.proof_mut(ProofId(p.proof)).set_begin(p);
        cost
    }

    fn proof_ends(&mut self, mut p: ProofEnd) -> usize {
        p.error = p.error.map(|e| cut(e, MAX_TEXT));
        let cost = cost::PROOF_END + p.error.as_ref().map_or(0, String::len);
        if self.gone(ProofId(p.proof)) {
            return 0;
        }
        let ts = p.ts;
        if self.proof_mut(ProofId(p.proof)).set_end(p) {
            self.proofs_done += 1;
            if self.live {
                self.proofs_done_live += 1;
            }
            self.first_end.get_or_insert(ts);
            self.last_end = Some(ts);
        }
        cost
    }

    fn span_begins(&mut self, span: Span, proof: Option<ProofId>) -> usize {
        if self.span_proof.contains_key(&span.id) {
            return 0; // replayed history
        }
        if let Some(p) = proof
            && self.gone(p)
        {
            return 0;
        }
        self.span_proof.insert(span.id, proof);
        self.tree_mut(proof).push_span(span);
        if !self.early.is_empty() {
            for o in self.early.take(span.id) {
                self.place(proof, o);
            }
        }
        cost::SPAN
    }

    fn span_ends(&mut self, id: SpanId, ts: u64) -> usize {
        // Unknown when its begin was dropped or evicted.
        if let Some(&proof) = self.span_proof.get(&id) {
            self.tree_mut(proof).end_span(id, ts);
        }
        0
    }

    fn mark(&mut self, mut m: Mark) -> usize {
        if !self.fresh(m.ts) {
            return 0;
        }
        m.text = m.text.map(|t| cut(t, MAX_TEXT));
        if markers::meaning(self.name(m.name)) == Meaning::Status {
            self.status = m.text.clone();
            return 0;
        }
        let cost = cost::MARK + m.text.as_ref().map_or(0, String::len);
        match m.span {
            Some(span) if !self.span_proof.contains_key(&span) => {
                self.hold_early(span, Orphan::Mark(m));
            }
            known => {
                let proof = known.and_then(|s| self.proof_of(s));
                self.tree_mut(proof).push_mark(m);
            }
        }
        cost
    }

    fn gpu_span(&mut self, g: DeviceSpan) -> usize {
        let proof = match g.span {
            Some(span) if !self.span_proof.contains_key(&span) => {
                self.hold_early(span, Orphan::Gpu(g));
                return cost::DEVICE_SPAN;
            }
            known => known.and_then(|s| self.proof_of(s)),
        };
        if self.tree_mut(proof).push_gpu_span(g) {
            cost::DEVICE_SPAN
        } else {
            0
        }
    }

    /// A time-series item at `ts`: kept unless a replayed history already brought it.
    fn sample(&mut self, ts: u64, push: impl FnOnce(&mut Session) -> bool, cost: usize) -> usize {
        if self.fresh(ts) && push(self) {
            cost
        } else {
            0
        }
    }

    fn dropped(&mut self, d: DropReport) -> usize {
        if !self.fresh(d.ts) {
            return 0;
        }
        self.dropped_total += d.counts.total();
        let cost = BLOCK_BYTES + d.counts.nonzero().count() * 16;
        self.drops.push(d);
        if self.drops.len() > MAX_DROPPED_ENTRIES {
            self.drops.drain(..MAX_DROPPED_ENTRIES / 2);
        }
        cost
    }

    /// Keeps an event for a span not begun yet; the ones that waited too long join no proof.
    fn hold_early(&mut self, span: SpanId, o: Orphan) {
        for gave_up in self.early.hold(span, o) {
            self.place(None, gave_up);
        }
    }

    /// Files a waiting event under proof `proof` (`None`: none).
    fn place(&mut self, proof: Option<ProofId>, o: Orphan) {
        match o {
            Orphan::Gpu(g) => {
                self.tree_mut(proof).push_gpu_span(g);
            }
            Orphan::Mark(m) => self.tree_mut(proof).push_mark(m),
        }
    }

    fn fresh(&self, ts: u64) -> bool {
        self.seen_until.is_none_or(|t| ts > t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Retention;

    /// An in-progress proof evicted by retention stays evicted: the rest of its events are
    /// dropped and counted (each re-made the proof, evicted again: 24 evictions of 1 proof).
    #[test]
    fn an_evicted_proof_is_evicted_once_and_its_later_events_are_counted() {
        let mut m = Model::new(Retention {
            max_proofs: 1000,
            max_bytes: 64 << 10,
        });
        m.ingest(Event::ProofBegin(Box::new(ProofBegin {
            ts: 1,
            proof: 1,
            span: 1,
            ..Default::default()
        })));
        for i in 0..20_000u64 {
            m.ingest(Event::SpanBegin(probe_protocol::SpanBegin {
                ts: i + 1,
                span: i + 1,
                parent: (i > 0).then_some(i),
                proof: Some(1),
                name: 1,
                thread: 1,
            }));
        }
        assert_eq!(m.evicted_proofs(), 1);
        assert!(m.approx_bytes() <= 64 << 10, "{}", m.approx_bytes());
        let s = m.current().unwrap();
        assert!(s.proofs.is_empty());
        assert!(s.span_proof.len() < 1000, "{}", s.span_proof.len());
        // Every span begun after the eviction is counted as evicted.
        assert!(m.evicted_events() > 19_000, "{}", m.evicted_events());
        // A later proof is kept.
        m.ingest(Event::ProofBegin(Box::new(ProofBegin {
            ts: 30_000,
            proof: 2,
            span: 50_000,
            ..Default::default()
        })));
        assert_eq!(m.current().unwrap().proofs.len(), 1);
    }

    /// Name ids come off the wire; a corrupt or hostile id must cost one map entry, not an
    /// array sized by the id.
    #[test]
    fn a_huge_name_id_costs_one_entry() {
        let mut m = Model::new(Retention::default());
        m.ingest(Event::NameDef {
            id: u32::MAX,
            name: "far".into(),
        });
        m.ingest(Event::NameDef {
            id: 2,
            name: "near".into(),
        });
        let s = m.current().expect("a session was opened");
        assert_eq!(s.names.len(), 2);
        assert_eq!(s.name(NameId(u32::MAX)), "far");
        assert_eq!(s.name(NameId(2)), "near");
        assert!(m.approx_bytes() < 1 << 20);
    }
}
