//! Applying events to the model. Idempotent where a reconnection to the same prover replays
//! history: spans are keyed by id, and time series skip what was already seen.

use super::{Model, Proof, Session, Span};
use probe_protocol::{Event, Hello};

impl Model {
    /// Applies one event to the current session (a `Hello` may open a new one).
    pub fn ingest(&mut self, ev: Event) {
        self.events += 1;
        if let Event::Hello(h) = ev {
            self.hello(*h);
            return;
        }
        if self.sessions.is_empty() {
            self.sessions.push(Session::default());
        }
        let grew = match self.sessions.last_mut() {
            Some(s) => s.apply(ev),
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
                    ..Session::default()
                });
            }
        }
    }

    fn enforce_retention(&mut self) {
        let total: usize = self.sessions.iter().map(|s| s.proofs.len()).sum();
        if total <= self.retention.max_proofs && self.approx_bytes <= self.retention.max_bytes {
            return;
        }
        // Evict the oldest proof of the oldest session that has one.
        let Some(si) = self.sessions.iter().position(|s| !s.proofs.is_empty()) else {
            return;
        };
        let s = &mut self.sessions[si];
        let Some((&pid, _)) = s.proofs.iter().next() else {
            return;
        };
        if let Some(p) = s.proofs.remove(&pid) {
            for sp in &p.spans {
                s.span_proof.remove(&sp.id);
            }
            self.approx_bytes = self.approx_bytes.saturating_sub(p.approx_bytes());
            self.evicted_proofs += 1;
            self.evicted_events += (p.spans.len() * 2 + p.gpu_spans.len() + p.markers.len()) as u64;
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
                        .sum::<usize>();
                self.evicted_events += n as u64;
                self.approx_bytes = self.approx_bytes.saturating_sub(n * 64);
            }
        }
    }
}

/// Bytes an event adds to the model, roughly.
const SPAN_BYTES: usize = std::mem::size_of::<Span>() + 48;
const SAMPLE_BYTES: usize = 64;

impl Session {
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

    /// Applies one event; returns the bytes it added.
    pub(crate) fn apply(&mut self, ev: Event) -> usize {
        self.events += 1;
        if let Some(ts) = ev.ts() {
            self.now = self.now.max(ts);
        }
        match ev {
            Event::Hello(_) | Event::Subscribe(_) | Event::Heartbeat { .. } => 0,
            Event::NameDef { id, name } => {
                self.names.insert(id, name);
                0
            }
            Event::ThreadDef { id, name, os_tid } => {
                self.threads.insert(id, (name, os_tid));
                0
            }
            Event::ProofBegin(p) => {
                let pr = self.proof_mut(p.proof);
                if pr.begin.is_none() {
                    pr.begin = Some(*p);
                }
                0
            }
            Event::ProofEnd(p) => {
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
                0
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
                if pid == 0 && self.loose.spans.len() > 100_000 {
                    // Keep loose spans bounded: drop the oldest half.
                    let keep = self.loose.spans.split_off(50_000);
                    for s in &self.loose.spans {
                        self.span_proof.remove(&s.id);
                    }
                    self.loose.spans = keep;
                    self.loose.index = self
                        .loose
                        .spans
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (s.id, i))
                        .collect();
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
            Event::Marker(m) => {
                if !self.fresh(m.ts) {
                    return 0;
                }
                if self.name(m.name) == "status" {
                    self.status = m.text.clone();
                    return 0;
                }
                let pid = m
                    .span
                    .and_then(|s| self.span_proof.get(&s).copied())
                    .unwrap_or(0);
                self.proof_mut(pid).markers.push(*m);
                SAMPLE_BYTES
            }
            Event::AllocSample(s) => {
                if self.fresh(s.ts) {
                    self.alloc.push(s);
                }
                SAMPLE_BYTES
            }
            Event::Alloc(b) => {
                if self.fresh(b.ts) {
                    self.allocs.push(b);
                }
                SAMPLE_BYTES
            }
            Event::Release(b) => {
                if self.fresh(b.ts) {
                    self.releases.push(b);
                }
                SAMPLE_BYTES
            }
            Event::GpuSample(g) => {
                if self.fresh(g.ts) {
                    self.gpu.entry(g.device).or_default().push(*g);
                }
                SAMPLE_BYTES
            }
            Event::GpuSpan(g) => {
                let pid = g
                    .span
                    .and_then(|s| self.span_proof.get(&s).copied())
                    .unwrap_or(0);
                let pr = self.proof_mut(pid);
                if !pr.gpu_spans.contains(&g) {
                    pr.gpu_spans.push(g);
                }
                SAMPLE_BYTES
            }
            Event::Dropped(d) => {
                if self.fresh(d.ts) {
                    self.dropped_total += d.total();
                    self.dropped.push((d.ts, d.counts));
                }
                0
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
                self.goodbye = Some((ts, reason));
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
