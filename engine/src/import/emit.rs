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
        let mut timed = Vec::with_capacity(event_count(p));
        self.proof_into(p, &mut timed);
        timed
    }

    /// [`Self::proof`], appended to `timed`.
    fn proof_into(&mut self, p: &Placed, timed: &mut Vec<Timed>) {
        let proof = self.next_proof;
        self.next_proof += 1;
        let base = self.next_span;
        self.next_span += p.spans.len() as u64;
        let outer = &p.spans[0];
        timed.push((
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
        ));
        self.spans(p, proof, base, timed);
        self.marks(p, base, timed);
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

/// The key a stream carries timed events in: time, then the order at one instant, then depth.
fn key(t: &Timed) -> (u64, u8, i64) {
    (t.0, t.1, t.2)
}

/// Sorts timed events by [`key`] (stably).
fn sort_timed(timed: &mut [Timed]) {
    timed.sort_by_key(key);
}

/// How many timed events [`Emitter::proof`] makes of `p`: its begin and end, each span's two
/// edges, its causes, GPU-phase declarations and notes.
fn event_count(p: &Placed) -> usize {
    2 + 2 * p.spans.len() + p.causes.len() + p.gpu_phases.len() + p.notes.len()
}

/// The timed events of `placed`, each proof's already in order: [`in_order`] then merges runs
/// rather than sorting a shuffle, and gives the same order (the sort is stable). One vector of
/// the exact size, each proof sorted where it lies: at 100k partitions, growing it (and a
/// vector per proof) faulted in hundreds of MB of fresh pages, a tenth of the import.
pub fn proofs<'a, I>(e: &mut Emitter, placed: I) -> Vec<Timed>
where
    I: IntoIterator<Item = &'a Placed>,
    I::IntoIter: Clone,
{
    let placed = placed.into_iter();
    let mut timed = Vec::with_capacity(placed.clone().map(event_count).sum());
    for p in placed {
        let from = timed.len();
        e.proof_into(p, &mut timed);
        sort_timed(&mut timed[from..]);
    }
    timed
}

fn kind_name(k: DiagnosisKind) -> String {
    k.cause_marker()
}

/// Timed events as a stream carries them, without their sort keys, in the memory they came
/// in: at 100k partitions (2.3 M events) each copy of the events is hundreds of MB of fresh
/// pages. Events already in order (proofs that follow one another) are only stripped of their
/// keys. Otherwise the keys are sorted apart from the events, each packed with its position
/// into 16 bytes (which keeps equal keys in their order, as a stable sort would; moving whole
/// events through the sort was a fifth of the import, and keys of 32 bytes an eighth of it),
/// and the events are permuted where they lie.
pub fn in_order(mut timed: Vec<Timed>) -> Vec<Event> {
    if timed.is_sorted_by_key(key) {
        return timed.into_iter().map(|t| t.3).collect();
    }
    let Some(mut keys) = packed_keys(&timed) else {
        // Beyond what a packed key holds (2^32 events, spans 2^23 deep): sorted as they are.
        sort_timed(&mut timed);
        return timed.into_iter().map(|t| t.3).collect();
    };
    keys.sort_unstable();
    permute(&mut timed, &mut keys);
    // Stripped of their keys where they lie (an adapter that collects in place: a flattening
    // one made a new vector and grew it, 6 % of importing 100k partitions).
    timed.into_iter().map(|t| t.3).collect()
}

/// Bits of a packed key's second word: the order, the depth (biased), the position.
const ORDER_SHIFT: u32 = 56;
const DEPTH_SHIFT: u32 = 32;
const DEPTH_BIAS: i64 = 1 << 23;
const POSITION: u64 = u32::MAX as u64;

/// Each event's key as (time, order · depth · position), ordered as (time, order, depth,
/// position) are; `None` where a field does not fit its bits.
fn packed_keys(timed: &[Timed]) -> Option<Vec<(u64, u64)>> {
    u32::try_from(timed.len()).ok()?;
    timed
        .iter()
        .enumerate()
        .map(|(i, &(ts, order, depth, _))| {
            let depth = u64::try_from(depth.checked_add(DEPTH_BIAS)?)
                .ok()
                .filter(|&d| d < 1 << (ORDER_SHIFT - DEPTH_SHIFT))?;
            Some((
                ts,
                (order as u64) << ORDER_SHIFT | depth << DEPTH_SHIFT | i as u64,
            ))
        })
        .collect()
}

/// Moves the item at each sorted key's position to the key's rank, by swaps, following each
/// cycle of the permutation once (the keys are used up: each is marked as its item lands).
fn permute<T>(items: &mut [T], keys: &mut [(u64, u64)]) {
    const DONE: u64 = u64::MAX;
    for i in 0..items.len() {
        let mut at = i;
        loop {
            let word = std::mem::replace(&mut keys[at].1, DONE);
            let from = (word & POSITION) as usize;
            if word == DONE || from == i || from >= items.len() {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(ts: u64, name: u32) -> Event {
        Event::Marker(Box::new(Marker {
            ts,
            name,
            thread: 1,
            span: None,
            text: None,
        }))
    }

    /// In order or shuffled, the same stream: by time, then ends before begins, then depth,
    /// then the order they came in.
    #[test]
    fn timed_events_come_out_by_their_keys_equal_keys_as_they_came() {
        let timed = |order: &[(u64, u8, i64, u32)]| -> Vec<Timed> {
            order
                .iter()
                .map(|&(ts, o, d, n)| (ts, o, d, marker(ts, n)))
                .collect()
        };
        let names = |v: Vec<Event>| -> Vec<u32> {
            v.iter()
                .map(|e| match e {
                    Event::Marker(m) => m.name,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        let sorted = [
            (1, 0, 0, 1),
            (1, 2, 0, 2),
            (1, 2, 0, 3),
            (5, 1, -1, 4),
            (5, 1, 0, 5),
        ];
        let shuffled = [
            (5, 1, 0, 5),
            (1, 2, 0, 2),
            (5, 1, -1, 4),
            (1, 0, 0, 1),
            (1, 2, 0, 3),
        ];
        for order in [&sorted, &shuffled] {
            assert_eq!(names(in_order(timed(order))), [1, 2, 3, 4, 5]);
        }
        // A depth no packed key holds: the same order, by the plain sort.
        let deep = [
            (5, 1, i64::MAX, 5),
            (1, 2, 0, 2),
            (5, 1, -1, 4),
            (1, 0, 0, 1),
            (1, 2, 0, 3),
        ];
        assert!(packed_keys(&timed(&deep)).is_none());
        assert_eq!(names(in_order(timed(&deep))), [1, 2, 3, 4, 5]);
    }

    /// Every item lands where its source says, over cycles of every length.
    #[test]
    fn a_permutation_is_applied_in_place() {
        let sources = [3u64, 0, 4, 1, 2, 5, 7, 6];
        let mut items: Vec<u64> = (0..sources.len() as u64).collect();
        let mut keys: Vec<(u64, u64)> = sources.iter().map(|&s| (0, s)).collect();
        permute(&mut items, &mut keys);
        assert_eq!(items, sources);
    }
}
