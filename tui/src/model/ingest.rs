//! Applying events to the model. Idempotent where a reconnection to the same prover replays
//! history: spans are keyed by id, and time series skip what was already seen.
//!
//! Memory is bounded by `Retention` whatever the input (a hostile recording included): every
//! event adds an estimate of what it costs to keep, strings from the wire are cut to a few KiB,
//! and when the model is over its budget it evicts, oldest first: whole proofs, then samples
//! and spans outside proofs, then sessions that have nothing else left. A session's names and
//! threads take at most an eighth of the budget; definitions past that are refused (counted).

use super::early::Orphan;
use super::{Model, Proof, Session, Span};
use probe_protocol::{Event, GpuSpan, Hello};

/// Longest string kept from the wire, per kind of string.
const MAX_NAME: usize = 1024;
const MAX_TEXT: usize = 4096;

/// What keeping one item costs, roughly (the struct, its place in a map or vector and the
/// vector's spare capacity).
pub(crate) const SPAN_BYTES: usize = std::mem::size_of::<Span>() + 96;
const SAMPLE_BYTES: usize = 160;
const BLOCK_BYTES: usize = 96;
const MARKER_BYTES: usize = 128;
const DEF_BYTES: usize = 64;
const SESSION_BYTES: usize = 4096;
/// Dropped-event entries kept per session (their totals are kept whatever happens).
const MAX_DROPPED_ENTRIES: usize = 10_000;

/// `s` cut to at most `max` bytes (on a character boundary).
fn cut(mut s: String, max: usize) -> String {
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
    h.gpus.truncate(64);
    for g in &mut h.gpus {
        g.name = cut(std::mem::take(&mut g.name), MAX_NAME);
        g.uuid = cut(std::mem::take(&mut g.uuid), MAX_NAME);
        g.pci_bus_id = cut(std::mem::take(&mut g.pci_bus_id), MAX_NAME);
    }
    h.command_line.truncate(256);
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
            Some(s) => s.apply(ev, budget),
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
        let same = self.sessions.last_mut().and_then(|s| {
            let old = s.hello.as_ref()?;
            (old.pid == h.pid
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
                    hello: Some(h),
                    bytes: cost,
                    ..Session::default()
                });
                self.approx_bytes += cost;
            }
        }
    }

    fn over(&self) -> bool {
        let proofs: usize = self.sessions.iter().map(|s| s.proofs.len()).sum();
        proofs > self.retention.max_proofs || self.approx_bytes > self.retention.max_bytes
    }

    fn enforce_retention(&mut self) {
        while self.over() {
            if !(self.evict_oldest_proof() || self.trim_outside_proofs() || self.drop_old_session())
            {
                break;
            }
        }
    }

    fn release(&mut self, si: usize, bytes: usize) {
        self.approx_bytes = self.approx_bytes.saturating_sub(bytes);
        let s = &mut self.sessions[si];
        s.bytes = s.bytes.saturating_sub(bytes);
    }

    /// Evicts the oldest proof of the oldest session that has one (and the samples older than
    /// what is left of that session). False when no proof is left.
    fn evict_oldest_proof(&mut self) -> bool {
        let Some(si) = self.sessions.iter().position(|s| !s.proofs.is_empty()) else {
            return false;
        };
        let s = &mut self.sessions[si];
        let Some((&pid, _)) = s.proofs.iter().next() else {
            return false;
        };
        let Some(p) = s.proofs.remove(&pid) else {
            return false;
        };
        for sp in &p.spans {
            s.span_proof.remove(&sp.id);
        }
        let mut freed = p.approx_bytes();
        self.evicted_proofs += 1;
        let mut events = (p.spans.len() * 2 + p.gpu_spans.len() + p.markers.len()) as u64;
        // Series older than the oldest proof left go too.
        if let Some(start) = s
            .proofs
            .values()
            .next()
            .and_then(|p| p.spans.iter().map(|x| x.start).min())
        {
            let n = s.alloc.trim_before(start)
                + s.releases.trim_before(start)
                + s.allocs.trim_before(start)
                + s.gpu
                    .values_mut()
                    .map(|g| g.trim_before(start))
                    .sum::<usize>()
                + s.sched
                    .values_mut()
                    .map(|t| t.trim_before(start))
                    .sum::<usize>();
            events += n as u64;
            freed += n * SAMPLE_BYTES;
        }
        self.evicted_events += events;
        self.release(si, freed);
        true
    }

    /// With no proof left to evict: halves the oldest session's largest store outside proofs
    /// (a time series, or the spans and markers that belong to no proof). False when there is
    /// nothing outside proofs.
    fn trim_outside_proofs(&mut self) -> bool {
        for si in 0..self.sessions.len() {
            let s = &mut self.sessions[si];
            let series = [
                s.alloc.len(),
                s.releases.len(),
                s.allocs.len(),
                s.gpu.values().map(|g| g.len()).max().unwrap_or(0),
                s.loose.spans.len() + s.loose.markers.len() + s.loose.gpu_spans.len(),
                s.dropped.len(),
                s.sched.values().map(|t| t.len()).max().unwrap_or(0),
            ];
            let Some((which, &n)) = series.iter().enumerate().max_by_key(|(_, n)| **n) else {
                continue;
            };
            if n == 0 {
                continue;
            }
            let (removed, each) = match which {
                0 => (s.alloc.trim_half(), SAMPLE_BYTES),
                1 => (s.releases.trim_half(), BLOCK_BYTES),
                2 => (s.allocs.trim_half(), BLOCK_BYTES),
                3 => {
                    let g = s.gpu.values_mut().max_by_key(|g| g.len());
                    (g.map_or(0, |g| g.trim_half()), SAMPLE_BYTES)
                }
                4 => (s.trim_loose(), SPAN_BYTES),
                6 => {
                    let t = s.sched.values_mut().max_by_key(|t| t.len());
                    (t.map_or(0, |t| t.trim_half()), SAMPLE_BYTES)
                }
                _ => {
                    let n = s.dropped.len().div_ceil(2);
                    s.dropped.drain(..n);
                    (n, BLOCK_BYTES)
                }
            };
            self.evicted_events += removed as u64;
            self.release(si, removed * each);
            return true;
        }
        false
    }

    /// Removes the oldest session when it is not the current one. False when only the current
    /// session is left.
    fn drop_old_session(&mut self) -> bool {
        if self.sessions.len() < 2 {
            return false;
        }
        let s = self.sessions.remove(0);
        self.approx_bytes = self.approx_bytes.saturating_sub(s.bytes);
        self.evicted_events += s.events;
        self.evicted_sessions += 1;
        true
    }
}

impl Session {
    /// Keeps an event for a span not begun yet; the ones that waited too long join no proof.
    fn hold_early(&mut self, span: u64, o: Orphan) {
        for gave_up in self.early.hold(span, o) {
            self.place(0, gave_up);
        }
    }

    /// Files a waiting event under proof `pid` (0: none).
    fn place(&mut self, pid: u64, o: Orphan) {
        match o {
            Orphan::Gpu(g) => {
                self.push_gpu_span(pid, g);
            }
            Orphan::Marker(m) => self.proof_mut(pid).markers.push(m),
        }
    }

    /// Adds a GPU span to proof `pid` unless it is already there: a replayed history repeats
    /// recent GPU spans, so the newest few are compared. Returns whether it was added.
    fn push_gpu_span(&mut self, pid: u64, g: GpuSpan) -> bool {
        let pr = self.proof_mut(pid);
        if pr.gpu_spans.iter().rev().take(64).any(|x| *x == g) {
            return false;
        }
        pr.gpu_spans.push(g);
        true
    }

    fn proof_mut(&mut self, id: u64) -> &mut Proof {
        if id == 0 {
            return &mut self.loose;
        }
        self.proofs.entry(id).or_insert_with(|| Proof {
            id,
            ..Proof::default()
        })
    }

    fn fresh(&self, ts: u64) -> bool {
        self.seen_until.is_none_or(|t| ts > t)
    }

    /// Drops the older half of the spans, markers and GPU spans that belong to no proof;
    /// returns how many went.
    fn trim_loose(&mut self) -> usize {
        let l = &mut self.loose;
        let n = l.spans.len().div_ceil(2);
        for sp in l.spans.drain(..n) {
            self.span_proof.remove(&sp.id);
        }
        l.index = l.spans.iter().enumerate().map(|(i, s)| (s.id, i)).collect();
        let m = l.markers.len().div_ceil(2);
        l.markers.drain(..m);
        let g = l.gpu_spans.len().div_ceil(2);
        l.gpu_spans.drain(..g);
        n + m + g
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

    /// Applies one event; returns the bytes it added. `def_budget` bounds the bytes of names
    /// and threads.
    pub(crate) fn apply(&mut self, ev: Event, def_budget: usize) -> usize {
        let grew = self.apply_inner(ev, def_budget);
        self.bytes += grew;
        grew
    }

    fn apply_inner(&mut self, ev: Event, def_budget: usize) -> usize {
        self.events += 1;
        if let Some(ts) = ev.ts() {
            self.now = self.now.max(ts);
        }
        let active = match &ev {
            Event::SpanBegin(b) => Some((b.thread, b.ts)),
            Event::Marker(m) => Some((m.thread, m.ts)),
            Event::Alloc(b) | Event::Release(b) => Some((b.thread, b.ts)),
            _ => None,
        };
        if let Some((t, ts)) = active
            && self.threads.contains_key(&t)
        {
            let life = self.thread_life.entry(t).or_insert((ts, ts));
            life.0 = life.0.min(ts);
            life.1 = life.1.max(ts);
        }
        match ev {
            Event::Hello(_) | Event::Subscribe(_) | Event::Heartbeat { .. } => 0,
            Event::NameDef { id, name } => {
                let name = cut(name, MAX_NAME);
                // A redefinition replaces the name (the later definition wins).
                if let Some(old) = self.names.get_mut(&id) {
                    *old = name;
                    return 0;
                }
                let Some(cost) = self.room_for_def(name.len(), def_budget) else {
                    return 0;
                };
                self.names.insert(id, name);
                cost
            }
            Event::StackDef { id, frames } => {
                // Frames beyond what a diagnosis reads are not kept.
                let frames: Vec<String> = frames
                    .into_iter()
                    .take(64)
                    .map(|f| cut(f, MAX_NAME))
                    .collect();
                // A redefinition replaces the stack (the later definition wins).
                if let Some(old) = self.stacks.get_mut(&id) {
                    *old = frames;
                    return 0;
                }
                let len = frames.iter().map(String::len).sum();
                let Some(cost) = self.room_for_def(len, def_budget) else {
                    return 0;
                };
                self.stacks.insert(id, frames);
                cost
            }
            Event::ThreadDef { id, name, os_tid } => {
                let name = cut(name, MAX_NAME);
                if let Some(old) = self.threads.get_mut(&id) {
                    if old.0 != name {
                        if let Some(ids) = self.thread_names.get_mut(&old.0) {
                            ids.retain(|&i| i != id);
                        }
                        self.thread_names.entry(name.clone()).or_default().push(id);
                    }
                    *old = (name, os_tid);
                    return 0;
                }
                let Some(cost) = self.room_for_def(name.len(), def_budget) else {
                    return 0;
                };
                self.thread_names.entry(name.clone()).or_default().push(id);
                self.threads.insert(id, (name, os_tid));
                cost + 32
            }
            Event::ProofBegin(mut p) => {
                p.circuit = cut(std::mem::take(&mut p.circuit), MAX_NAME);
                p.backend = cut(std::mem::take(&mut p.backend), MAX_NAME);
                let cost = 256 + p.circuit.len() + p.backend.len();
                let pr = self.proof_mut(p.proof);
                if pr.begin.is_none() {
                    pr.begin = Some(*p);
                }
                cost
            }
            Event::ProofEnd(mut p) => {
                p.error = p.error.map(|e| cut(e, MAX_TEXT));
                let cost = 128 + p.error.as_ref().map_or(0, String::len);
                let ts = p.ts;
                let pr = self.proof_mut(p.proof);
                if pr.end.is_none() {
                    pr.end = Some(*p);
                    self.proofs_done += 1;
                    if self.live {
                        self.proofs_done_live += 1;
                    }
                    self.first_end.get_or_insert(ts);
                    self.last_end = Some(ts);
                }
                cost
            }
            Event::SpanBegin(b) => {
                if self.span_proof.contains_key(&b.span) {
                    return 0; // replayed history
                }
                let pid = b.proof.unwrap_or(0);
                self.span_proof.insert(b.span, pid);
                let pr = self.proof_mut(pid);
                pr.index.insert(b.span, pr.spans.len());
                pr.spans.push(Span {
                    id: b.span,
                    parent: b.parent,
                    name: b.name,
                    thread: b.thread,
                    start: b.ts,
                    end: None,
                });
                if !self.early.is_empty() {
                    for o in self.early.take(b.span) {
                        self.place(pid, o);
                    }
                }
                SPAN_BYTES
            }
            Event::SpanEnd(e) => {
                let Some(&pid) = self.span_proof.get(&e.span) else {
                    return 0; // its begin was dropped or evicted
                };
                let pr = self.proof_mut(pid);
                if let Some(&i) = pr.index.get(&e.span) {
                    pr.spans[i].end = Some(e.ts);
                }
                0
            }
            Event::Marker(mut m) => {
                if !self.fresh(m.ts) {
                    return 0;
                }
                m.text = m.text.map(|t| cut(t, MAX_TEXT));
                if self.name(m.name) == "status" {
                    self.status = m.text.clone();
                    return 0;
                }
                let cost = MARKER_BYTES + m.text.as_ref().map_or(0, String::len);
                match m.span.map(|s| (s, self.span_proof.get(&s).copied())) {
                    Some((span, None)) => self.hold_early(span, Orphan::Marker(*m)),
                    known => self
                        .proof_mut(known.and_then(|k| k.1).unwrap_or(0))
                        .markers
                        .push(*m),
                }
                cost
            }
            Event::AllocSample(s) => {
                if self.fresh(s.ts) && self.alloc.push(s) {
                    return SAMPLE_BYTES;
                }
                0
            }
            Event::Alloc(b) => {
                if self.fresh(b.ts) && self.allocs.push(b) {
                    return BLOCK_BYTES;
                }
                0
            }
            Event::Release(b) => {
                if self.fresh(b.ts) && self.releases.push(b) {
                    return BLOCK_BYTES;
                }
                0
            }
            Event::GpuSample(g) => {
                if self.fresh(g.ts) && self.gpu.entry(g.device).or_default().push(*g) {
                    return SAMPLE_BYTES;
                }
                0
            }
            Event::ThreadSched(t) => {
                if self.fresh(t.ts) && self.sched.entry(t.thread).or_default().push(t) {
                    return SAMPLE_BYTES;
                }
                0
            }
            Event::GpuSpan(g) => {
                let pid = match g.span.map(|s| (s, self.span_proof.get(&s).copied())) {
                    Some((span, None)) => {
                        self.hold_early(span, Orphan::Gpu(g));
                        return BLOCK_BYTES;
                    }
                    known => known.and_then(|k| k.1).unwrap_or(0),
                };
                if self.push_gpu_span(pid, g) {
                    BLOCK_BYTES
                } else {
                    0
                }
            }
            Event::Dropped(d) => {
                if !self.fresh(d.ts) {
                    return 0;
                }
                self.dropped_total += d.total();
                let cost = BLOCK_BYTES + d.counts.len() * 16;
                self.dropped.push((d.ts, d.counts));
                if self.dropped.len() > MAX_DROPPED_ENTRIES {
                    self.dropped.drain(..MAX_DROPPED_ENTRIES / 2);
                }
                cost
            }
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
                self.goodbye = Some((ts, cut(reason, MAX_TEXT)));
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Retention;

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
        assert_eq!(s.name(u32::MAX), "far");
        assert_eq!(s.name(2), "near");
        assert!(m.approx_bytes() < 1 << 20);
    }
}
