//! Placed calls → events, as a probe would send them: names and threads defined once and
//! referred to by id, one proof per call with its outer span, phases, causes, notes and the GPU
//! phases declared. Standalone (`import`), ids start at 1; joined to a recorded or live session
//! (`replay --log`, `run`), they start high enough to stay clear of the probe's, and the caller's
//! lane can be the session's own thread (the one the preload saw free the call's vectors).

use super::place::{Lane, Placed};
use probe_protocol::markers::{self, DiagnosisKind};
use probe_protocol::{Event, Marker, ProofBegin, ProofEnd, SpanBegin, SpanEnd, Verification};
use std::collections::{BTreeMap, HashMap};

/// Where an emitter's ids start.
#[derive(Debug, Clone, Copy)]
struct Bases {
    name: u32,
    thread: u32,
    span: u64,
}

/// Ids of a session joined to a probe's: names and threads from 2^30, spans from 2^62.
const JOINED: Bases = Bases {
    name: 1 << 30,
    thread: 1 << 30,
    span: 1 << 62,
};
const STANDALONE: Bases = Bases {
    name: 1,
    thread: 1,
    span: 1,
};

/// Marker name of what a prover printed during a call without a timer in it.
pub const LOG_NOTE: &str = "log";

/// A timed event, sortable: at one instant ends come before begins, inner ends first.
pub type Timed = (u64, u8, i64, Event);

/// Interns names and threads and numbers spans and proofs, across calls.
#[derive(Debug)]
pub struct Emitter {
    bases: Bases,
    names: BTreeMap<String, u32>,
    threads: BTreeMap<Lane, u32>,
    /// Lanes that are a thread the session already defined.
    lane_threads: HashMap<Lane, u32>,
    next_span: u64,
    next_proof: u64,
    /// Definitions not handed out yet.
    defs: Vec<Event>,
}

impl Emitter {
    /// Ids from 1: a session of its own.
    pub fn standalone() -> Emitter {
        Emitter::with(STANDALONE)
    }

    /// Ids clear of a probe's: events joined to its session.
    pub fn joined() -> Emitter {
        Emitter::with(JOINED)
    }

    fn with(bases: Bases) -> Emitter {
        Emitter {
            bases,
            names: BTreeMap::new(),
            threads: BTreeMap::new(),
            lane_threads: HashMap::new(),
            next_span: bases.span,
            next_proof: 1,
            defs: Vec::new(),
        }
    }

    /// Spans of `lane` go on the session's thread `thread` (not defined again).
    pub fn map_lane(&mut self, lane: Lane, thread: u32) {
        self.lane_threads.insert(lane, thread);
    }

    /// Definitions made since the last call, to send before the events that use them.
    pub fn take_defs(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.defs)
    }

    pub fn name(&mut self, n: &str) -> u32 {
        if let Some(&id) = self.names.get(n) {
            return id;
        }
        let id = self.bases.name + self.names.len() as u32;
        self.names.insert(n.to_owned(), id);
        self.defs.push(Event::NameDef {
            id,
            name: n.to_owned(),
        });
        id
    }

    pub fn thread(&mut self, lane: Lane) -> u32 {
        if let Some(&id) = self.lane_threads.get(&lane) {
            return id;
        }
        if let Some(&id) = self.threads.get(&lane) {
            return id;
        }
        let id = self.bases.thread + self.threads.len() as u32;
        self.threads.insert(lane, id);
        self.defs.push(Event::ThreadDef {
            id,
            name: lane.name(),
            os_tid: 0,
        });
        id
    }

    /// A `warning` marker outside every span, for the report's reader.
    pub fn warning(&mut self, ts: u64, text: &str) -> Event {
        Event::Marker(Box::new(Marker {
            ts,
            name: self.name(markers::WARNING),
            thread: self.thread(Lane::Caller),
            span: None,
            text: Some(text.to_owned()),
        }))
    }

    /// The timed events of one placed call (a proof of its own).
    pub fn proof(&mut self, p: &Placed) -> Vec<Timed> {
        let proof = self.next_proof;
        self.next_proof += 1;
        let base = self.next_span;
        self.next_span += p.spans.len() as u64;
        let outer = &p.spans[0];
        let mut timed = vec![(
            outer.start,
            2,
            0,
            Event::ProofBegin(Box::new(ProofBegin {
                ts: outer.start,
                proof,
                span: base,
                circuit: format!("{} [log {}]", p.label, p.lines),
                constraints: 0,
                circuits: p.circuits,
                backend: if p.gpu { "gpu" } else { "unknown" }.into(),
                synthetic_srs: false,
            })),
        )];
        self.spans(p, proof, base, &mut timed);
        self.marks(p, base, &mut timed);
        timed.push((
            outer.end,
            1,
            0,
            Event::ProofEnd(Box::new(ProofEnd {
                ts: outer.end,
                proof,
                ok: true,
                verification: Verification::NotChecked,
                error: None,
            })),
        ));
        timed
    }

    fn spans(&mut self, p: &Placed, proof: u64, base: u64, timed: &mut Vec<Timed>) {
        let depth = |mut j: usize| {
            let mut d = 0i64;
            while let Some(up) = p.spans[j].parent {
                d += 1;
                j = up;
            }
            d
        };
        for (j, s) in p.spans.iter().enumerate() {
            let name = self.name(&s.name);
            let thread = self.thread(s.lane);
            let span = base + j as u64;
            timed.push((
                s.start,
                3,
                depth(j),
                Event::SpanBegin(SpanBegin {
                    ts: s.start,
                    span,
                    parent: s.parent.map(|k| base + k as u64),
                    proof: Some(proof),
                    name,
                    thread,
                }),
            ));
            timed.push((
                s.end,
                0,
                -depth(j),
                Event::SpanEnd(SpanEnd { ts: s.end, span }),
            ));
        }
    }

    /// Causes (on the caller, inside the gap), GPU-phase declarations, and notes at the end.
    fn marks(&mut self, p: &Placed, base: u64, timed: &mut Vec<Timed>) {
        let caller = self.thread(Lane::Caller);
        let outer = &p.spans[0];
        for (at, kind, text) in &p.causes {
            let m = self.marker(
                *at,
                &kind_name(*kind),
                caller,
                Some(base),
                Some(text.clone()),
            );
            timed.push((*at, 4, 0, m));
        }
        for &i in &p.gpu_phases {
            let s = &p.spans[i];
            let thread = self.thread(s.lane);
            let m = self.marker(
                s.start,
                markers::GPU_PHASE,
                thread,
                Some(base + i as u64),
                None,
            );
            timed.push((s.start, 4, 0, m));
        }
        for note in &p.notes {
            let m = self.marker(outer.end, LOG_NOTE, caller, Some(base), Some(note.clone()));
            timed.push((outer.end, 4, 0, m));
        }
    }

    fn marker(
        &mut self,
        ts: u64,
        name: &str,
        thread: u32,
        span: Option<u64>,
        text: Option<String>,
    ) -> Event {
        Event::Marker(Box::new(Marker {
            ts,
            name: self.name(name),
            thread,
            span,
            text,
        }))
    }
}

/// Sorts timed events by the key a stream carries them in.
fn sort_timed(timed: &mut [Timed]) {
    timed.sort_by_key(|(ts, order, depth, _)| (*ts, *order, *depth));
}

/// The timed events of `placed`, each proof's already in order: [`in_order`] then merges runs
/// rather than sorting a shuffle, and gives the same order (the sort is stable).
pub fn proofs<'a>(e: &mut Emitter, placed: impl IntoIterator<Item = &'a Placed>) -> Vec<Timed> {
    let mut timed = Vec::new();
    for p in placed {
        let mut t = e.proof(p);
        sort_timed(&mut t);
        timed.append(&mut t);
    }
    timed
}

fn kind_name(k: DiagnosisKind) -> String {
    k.cause_marker()
}

/// Sorts timed events as a stream carries them and drops the sort keys. The keys are sorted
/// apart from the events, each with its position (which keeps equal keys in their order, as
/// the stable sort did): moving whole events through the sort was a fifth of importing 100k
/// partitions.
pub fn in_order(timed: Vec<Timed>) -> Vec<Event> {
    let mut keys: Vec<(u64, u8, i64, usize)> = timed
        .iter()
        .enumerate()
        .map(|(i, t)| (t.0, t.1, t.2, i))
        .collect();
    keys.sort_unstable();
    let mut events: Vec<Option<Event>> = timed.into_iter().map(|t| Some(t.3)).collect();
    keys.into_iter()
        .filter_map(|k| events[k.3].take())
        .collect()
}
