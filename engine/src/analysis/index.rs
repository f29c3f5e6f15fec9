//! A proof's spans and marks sorted once, for the questions each gap's diagnosis asks: which
//! spans overlap it, which children end before it and start after it, which marks lie inside
//! it, where a thread's spans begin and end, which spans ended near it. Asked by scanning every
//! span for every gap, a proof of N child spans took N² (issue 47: 5k/10k/20k/40k/100k spans
//! replayed in 0.28/1.24/2.6/17.3/79 s); built here in O(N log N), each answer costs
//! O(log N + its size).

use super::gaps::Interval;
use crate::model::{Mark, Proof, Session, Span, SpanId, ThreadId};
use std::collections::{HashMap, HashSet};

/// The most spans one overlap question returns: a crafted proof whose spans all cover every
/// gap would make each answer as long as the proof; "other work" lists the three largest
/// overlaps among what is returned.
pub const MAX_SCAN: usize = 65_536;

/// One parent's children, by end and by start.
#[derive(Debug, Default)]
struct Children<'a> {
    by_end: Vec<&'a Span>,
    by_start: Vec<&'a Span>,
}

/// The proof's spans and marks, sorted for the diagnoses of its gaps.
#[derive(Debug)]
pub struct ProofIndex<'a> {
    now: u64,
    by_start: Vec<&'a Span>,
    /// The latest end under each node of a binary tree over `by_start` (leaves at
    /// `leaves..2 * leaves`): which spans that began before a gap's end still reach into it
    /// is found by descending only into nodes that reach past the gap's start — O(log N) a
    /// span found, where scanning back from the gap went through every span since the
    /// earliest long one (a span across the whole proof made every question a full scan).
    reach: Vec<u64>,
    leaves: usize,
    by_end: Vec<&'a Span>,
    children: HashMap<SpanId, Children<'a>>,
    marks: Vec<&'a Mark>,
    /// Per thread, where its spans begin and end, sorted.
    edges: HashMap<ThreadId, Vec<u64>>,
    gpu_phases: HashSet<SpanId>,
}

impl<'a> ProofIndex<'a> {
    pub fn new(session: &'a Session, proof: &'a Proof) -> ProofIndex<'a> {
        let now = session.now();
        let end = |s: &Span| s.end_or(now);
        let mut by_start: Vec<&Span> = proof.spans().iter().collect();
        by_start.sort_by_key(|s| (s.start, s.id));
        let leaves = by_start.len().next_power_of_two();
        let mut reach = vec![0u64; 2 * leaves];
        for (i, s) in by_start.iter().enumerate() {
            reach[leaves + i] = end(s);
        }
        for i in (1..leaves).rev() {
            reach[i] = reach[2 * i].max(reach[2 * i + 1]);
        }
        let mut by_end: Vec<&Span> = proof.spans().iter().collect();
        by_end.sort_by_key(|s| (end(s), s.id));
        let mut children: HashMap<SpanId, Children> = HashMap::new();
        for s in &by_start {
            if let Some(p) = s.parent {
                children.entry(p).or_default().by_start.push(s);
            }
        }
        for s in &by_end {
            if let Some(p) = s.parent {
                children.entry(p).or_default().by_end.push(s);
            }
        }
        let mut marks: Vec<&Mark> = proof.marks().iter().collect();
        marks.sort_by_key(|m| m.ts);
        let mut edges: HashMap<ThreadId, Vec<u64>> = HashMap::new();
        for s in proof.spans() {
            edges.entry(s.thread).or_default().extend([s.start, end(s)]);
        }
        for e in edges.values_mut() {
            e.sort_unstable();
        }
        ProofIndex {
            now,
            by_start,
            reach,
            leaves,
            by_end,
            children,
            marks,
            edges,
            gpu_phases: super::structure::gpu_phases(session, proof),
        }
    }

    /// Spans that overlap `at` (at most [`MAX_SCAN`]), by start.
    pub fn overlapping(&self, at: Interval) -> Vec<&'a Span> {
        let upto = self.by_start.partition_point(|s| s.start < at.end);
        let mut out = Vec::new();
        if upto > 0 {
            self.reaching(1, 0, self.leaves, upto, at.start, &mut out);
        }
        out
    }

    /// Into `out`, the spans among `by_start[..upto]` under `node` (covering `lo..hi`) that end
    /// after `after`, in order.
    fn reaching(
        &self,
        node: usize,
        lo: usize,
        hi: usize,
        upto: usize,
        after: u64,
        out: &mut Vec<&'a Span>,
    ) {
        if lo >= upto || self.reach[node] <= after || out.len() >= MAX_SCAN {
            return;
        }
        if hi - lo == 1 {
            out.push(self.by_start[lo]);
            return;
        }
        let mid = (lo + hi) / 2;
        self.reaching(2 * node, lo, mid, upto, after, out);
        self.reaching(2 * node + 1, mid, hi, upto, after, out);
    }

    /// The children of `parent` that end last at or before `at`'s start and start first at or
    /// after its end.
    pub fn neighbours(&self, parent: SpanId, at: Interval) -> (Option<&'a Span>, Option<&'a Span>) {
        let Some(c) = self.children.get(&parent) else {
            return (None, None);
        };
        let now = self.now;
        let before = c
            .by_end
            .partition_point(|s| s.end_or(now) <= at.start)
            .checked_sub(1)
            .map(|i| c.by_end[i]);
        let after = c
            .by_start
            .get(c.by_start.partition_point(|s| s.start < at.end));
        (before, after.copied())
    }

    /// [`Self::neighbours`] of each of `gaps` (disjoint, in order, as a span's gaps are), in
    /// one pass over the children: each answer in O(1) where a search each was O(log N) of
    /// cache misses at 400k children.
    pub fn neighbours_of(
        &self,
        parent: SpanId,
        gaps: &[Interval],
    ) -> Vec<(Option<&'a Span>, Option<&'a Span>)> {
        let Some(c) = self.children.get(&parent) else {
            return vec![(None, None); gaps.len()];
        };
        let now = self.now;
        let (mut e, mut b) = (0, 0);
        let mut last_start = 0;
        gaps.iter()
            .map(|at| {
                if at.start < last_start {
                    // Out of order: start the cursors again.
                    (e, b) = (0, 0);
                }
                last_start = at.start;
                while e < c.by_end.len() && c.by_end[e].end_or(now) <= at.start {
                    e += 1;
                }
                while b < c.by_start.len() && c.by_start[b].start < at.end {
                    b += 1;
                }
                (
                    e.checked_sub(1).map(|i| c.by_end[i]),
                    c.by_start.get(b).copied(),
                )
            })
            .collect()
    }

    /// The marks at `from..=to`, in time order.
    pub fn marks_in(&self, from: u64, to: u64) -> &[&'a Mark] {
        let a = self.marks.partition_point(|m| m.ts < from);
        let b = self.marks.partition_point(|m| m.ts <= to);
        &self.marks[a..b.max(a)]
    }

    /// Where `thread`'s spans begin and end within `from..=to`, in order.
    pub fn edges(&self, thread: ThreadId, from: u64, to: u64) -> &[u64] {
        let Some(e) = self.edges.get(&thread) else {
            return &[];
        };
        let a = e.partition_point(|&t| t < from);
        let b = e.partition_point(|&t| t <= to);
        &e[a..b.max(a)]
    }

    /// Spans that ended within `from..=to`.
    pub fn ended_in(&self, from: u64, to: u64) -> impl Iterator<Item = &'a Span> + '_ {
        let now = self.now;
        let a = self.by_end.partition_point(|s| s.end_or(now) < from);
        self.by_end[a..]
            .iter()
            .copied()
            .take_while(move |s| s.end_or(now) <= to)
            .filter(|s| s.end.is_some())
    }

    /// Whether `span` is a GPU phase ([`super::structure::gpu_phases`]).
    pub fn is_gpu_phase(&self, span: &Span) -> bool {
        self.gpu_phases.contains(&span.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};

    /// Each answer is what a scan of every span gives.
    #[test]
    fn answers_match_a_scan_of_every_span() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let other = f.thread(2, "other");
        let outer = f.proof(1, "cpu", "prove", main, 0, 1000);
        let a = f.span(Some(1), Some(outer), "a", main, 100, 200);
        let b = f.span(Some(1), Some(outer), "b", main, 300, 400);
        f.span(Some(1), Some(outer), "c", other, 150, 900);
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let idx = ProofIndex::new(s, p);
        let name = |sp: Option<&Span>| sp.map(|x| s.name(x.name).to_owned());
        let (before, after) = idx.neighbours(outer, Interval::new(200, 300));
        assert_eq!(
            (name(before), name(after)),
            (Some("a".into()), Some("b".into()))
        );
        let (before, after) = idx.neighbours(outer, Interval::new(0, 100));
        assert_eq!((name(before), name(after)), (None, Some("a".into())));
        // In one pass, the same answers.
        let gaps = [
            Interval::new(0, 100),
            Interval::new(200, 300),
            Interval::new(400, 1000),
        ];
        let one_pass = idx.neighbours_of(outer, &gaps);
        for (g, got) in gaps.iter().zip(one_pass) {
            assert_eq!(got, idx.neighbours(outer, *g));
        }
        let gap = Interval::new(250, 280);
        let mut over: Vec<String> = idx
            .overlapping(gap)
            .into_iter()
            .map(|x| s.name(x.name).to_owned())
            .collect();
        over.sort();
        assert_eq!(over, ["c", "prove"]);
        let mut scan: Vec<String> = p
            .spans()
            .iter()
            .filter(|x| Interval::new(x.start, x.end_or(s.now())).overlap(&gap) > 0)
            .map(|x| s.name(x.name).to_owned())
            .collect();
        scan.sort();
        assert_eq!(over, scan);
        assert_eq!(idx.edges(ThreadId(1), 150, 350), [200, 300]);
        let ended: Vec<SpanId> = idx.ended_in(190, 410).map(|x| x.id).collect();
        assert_eq!(ended, [a, b]);
    }
}
