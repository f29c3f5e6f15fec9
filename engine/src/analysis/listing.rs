//! Which gaps a table or report lists one by one and which it sums on one line — decided once,
//! for the gaps panel, the reports and the Chrome trace alike.
//!
//! Listed: every flagged gap; of the outer span's gaps, those of at least 1 ms or 0.5 % of the
//! span, and any that large releases overlap (the ghost's shape, however short). The outer
//! span's tail, where a synchronous release at function exit lands, is named even when summed:
//! its length is the evidence either way. Summed: the
//! rest — and the summary never holds a gap longer than one that is listed (a 620 µs gap is not
//! folded into "smaller gaps" under a listed 17 µs one): those are listed too.

use super::gaps::SpanGaps;
use super::{Diagnosis, Gap, GapRule, Interval, Place, ProofIndex, diagnose_in, proof_gaps};
use crate::model::{Proof, Session, Span, SpanId};
use std::collections::HashSet;

/// A gap shown on a line of its own.
#[derive(Debug, Clone)]
pub struct ListedGap {
    /// The span it is a gap of.
    pub span: Span,
    pub gap: Gap,
    /// That span's length (at least 1).
    pub span_len: u64,
    pub diagnosis: Diagnosis,
    /// The phases either side of it: the last to end before it, the first to start after.
    pub before: Option<String>,
    pub after: Option<String>,
}

impl ListedGap {
    /// Where it is, in plain words: "tail gap after epilogue", "gap between synthesis and
    /// prep_msm", "head gap before synthesis".
    /// What the dashboard says of it: its diagnosis once the proof has `settled`
    /// ([`super::settled::is_settled`]), else only what is known so far.
    pub fn shown(&self, settled: bool) -> String {
        if settled {
            self.diagnosis.sentence()
        } else {
            self.diagnosis.so_far()
        }
    }

    pub fn words(&self) -> String {
        let (b, a) = (self.before.as_deref(), self.after.as_deref());
        match (self.gap.place, b, a) {
            (Place::Between, Some(b), Some(a)) => format!("gap between {b} and {a}"),
            (Place::AfterLast, Some(b), _) => format!("tail gap after {b}"),
            (Place::BeforeFirst, _, Some(a)) => format!("head gap before {a}"),
            (place, _, _) => place.words().to_owned(),
        }
    }
}

/// The gaps summed on one line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summed {
    pub count: usize,
    pub total_ns: u64,
    pub largest_ns: u64,
    /// The outer span's tail, when it is one of them.
    pub tail_ns: Option<u64>,
}

/// The most gaps of one proof listed one by one; the rest are summed. A listed gap holds its
/// diagnosis and names (about 1 KB): a proof of 100k child spans held 142 MB of them at
/// `--max-mib 32`, which bounds the model, not this. Nobody reads more lines than this about
/// one proof; the flagged and the longest come first, so those cut are the shortest.
pub const MAX_LISTED: usize = 4_096;

/// The proof's gaps, listed (flagged first, then by length; at most [`MAX_LISTED`]) and
/// summed. The outer span's total unaccounted time is the third value.
pub fn gap_listing(s: &Session, p: &Proof, rule: &GapRule) -> (Vec<ListedGap>, Summed, u64) {
    let outer = p.outer().map(|o| o.id);
    let idx = ProofIndex::new(s, p);
    let all = proof_gaps(p, rule, s.now());
    let unaccounted = all
        .iter()
        .find(|sg| Some(sg.span.id) == outer)
        .map_or(0, |sg| sg.unaccounted_ns);
    let mut top = Top::default();
    for sg in &all {
        let is_outer = Some(sg.span.id) == outer;
        let span_len = sg.span.len_at(s.now()).max(1);
        let gaps: Vec<&Gap> = sg.gaps.iter().filter(|g| is_outer || g.flagged).collect();
        let at: Vec<Interval> = gaps.iter().map(|g| g.at).collect();
        let sides = idx.neighbours_of(sg.span.id, &at);
        for (g, sides) in gaps.into_iter().zip(sides) {
            // Only what may be listed is diagnosed: the rest is summed by its length.
            if g.flagged || is_big(g, span_len) || super::diagnosis::has_releases(s, g.at) {
                top.push(listed_gap(s, &idx, sg, span_len, g, sides));
            }
        }
    }
    let (mut listed, cut) = top.finish();
    let here: HashSet<(SpanId, u64)> = listed.iter().map(|l| (l.span.id, l.gap.at.start)).collect();
    // Nothing summed may be longer than something listed (unless the list is full).
    let shortest = listed.iter().map(|l| l.gap.at.len()).min();
    let mut summed = Summed::default();
    for sg in &all {
        let is_outer = Some(sg.span.id) == outer;
        let span_len = sg.span.len_at(s.now()).max(1);
        for g in sg.gaps.iter().filter(|g| is_outer || g.flagged) {
            if here.contains(&(sg.span.id, g.at.start)) {
                continue;
            }
            if !cut && shortest.is_some_and(|m| g.at.len() > m) {
                let sides = idx.neighbours(sg.span.id, g.at);
                listed.push(listed_gap(s, &idx, sg, span_len, g, sides));
            } else {
                summed.add(g, is_outer);
            }
        }
    }
    listed.sort_by_key(order);
    (listed, summed, unaccounted)
}

/// At least 1 ms, or 0.5 % of its span.
fn is_big(g: &Gap, span_len: u64) -> bool {
    g.at.len() >= 1_000_000 || g.at.len() as f64 >= span_len as f64 * 0.005
}

/// Flagged first, then the longest, then the earliest: what matters most is read first.
fn order(l: &ListedGap) -> (bool, std::cmp::Reverse<u64>, u64) {
    (
        !l.gap.flagged,
        std::cmp::Reverse(l.gap.at.len()),
        l.gap.at.start,
    )
}

/// A gap of `sg`, diagnosed, with its neighbours' names.
fn listed_gap(
    s: &Session,
    idx: &ProofIndex<'_>,
    sg: &SpanGaps,
    span_len: u64,
    g: &Gap,
    (before, after): (Option<&Span>, Option<&Span>),
) -> ListedGap {
    let name = |c: &Span| s.name(c.name).to_owned();
    ListedGap {
        span: sg.span,
        gap: *g,
        span_len,
        diagnosis: diagnose_in(s, idx, &sg.span, g.at),
        before: before.map(name),
        after: after.map(name),
    }
}

/// The [`MAX_LISTED`] first gaps by [`order`]; whether any had to be cut.
#[derive(Default)]
struct Top {
    items: Vec<ListedGap>,
    cut: bool,
}

impl Top {
    /// Adds `item`; past the bound, the last by [`order`] is dropped (amortised: the list is
    /// sorted and halved when it reaches twice the bound).
    fn push(&mut self, item: ListedGap) {
        self.items.push(item);
        if self.items.len() >= 2 * MAX_LISTED {
            self.items.sort_by_key(order);
            self.items.truncate(MAX_LISTED);
            self.cut = true;
        }
    }

    /// The kept gaps, and whether any had to be cut.
    fn finish(mut self) -> (Vec<ListedGap>, bool) {
        if self.items.len() > MAX_LISTED {
            self.items.sort_by_key(order);
            self.items.truncate(MAX_LISTED);
            self.cut = true;
        }
        (self.items, self.cut)
    }
}

impl Summed {
    fn add(&mut self, g: &Gap, is_outer: bool) {
        self.count += 1;
        self.total_ns += g.at.len();
        self.largest_ns = self.largest_ns.max(g.at.len());
        if is_outer && g.place == Place::AfterLast {
            self.tail_ns.get_or_insert(g.at.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};

    /// A proof whose outer span (0–100 ms) has children leaving gaps of 620 µs, 40 µs, 5 µs
    /// and 17 µs (the tail, with a large release in it): the tail is listed for its release,
    /// so the 40 µs gap may not be summed under it; only the 5 µs one is.
    #[test]
    fn nothing_summed_is_longer_than_something_listed() {
        const US: u64 = 1_000;
        let end = 100_000 * US;
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let outer = f.proof(1, "cpu", "prove", main, 0, end);
        for (a, b) in [
            (0, 50_000 * US),
            (50_620 * US, 70_000 * US),
            (70_040 * US, 80_000 * US),
            (80_005 * US, end - 17 * US),
        ] {
            f.span(Some(1), Some(outer), "phase", main, a, b);
        }
        f.release(end - 15 * US, 8 << 20, 6 * US, main, Some(outer));
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let (listed, summed, _) = gap_listing(s, p, &GapRule::default());
        let lens: Vec<u64> = listed.iter().map(|l| l.gap.at.len() / US).collect();
        assert_eq!(lens, vec![620, 40, 17]);
        assert_eq!(
            summed,
            Summed {
                count: 1,
                total_ns: 5 * US,
                largest_ns: 5 * US,
                tail_ns: None
            }
        );
    }

    /// A proof with more gaps over 1 ms than may be listed: the longest are listed, the rest
    /// summed — the shortest of them, never a longer one.
    #[test]
    fn past_the_bound_the_shortest_gaps_are_summed() {
        const MS: u64 = 1_000_000;
        let n = MAX_LISTED as u64 + 100;
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        // Child i (1 ms) follows a gap of 2 ms + i ns: every gap a little longer than the last.
        let mut at = 0;
        let mut children = Vec::new();
        for i in 0..n {
            at += 2 * MS + i;
            children.push((at, at + MS));
            at += MS;
        }
        let outer = f.proof(1, "cpu", "prove", main, 0, at);
        for (a, b) in children {
            f.span(Some(1), Some(outer), "phase", main, a, b);
        }
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let (listed, summed, _) = gap_listing(s, p, &GapRule::default());
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(summed.count, 100);
        let shortest_listed = listed.iter().map(|l| l.gap.at.len()).min().unwrap();
        assert!(
            summed.largest_ns <= shortest_listed,
            "{summed:?} vs {shortest_listed}"
        );
    }
}
