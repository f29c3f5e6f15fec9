//! Which gaps a table or report lists one by one and which it sums on one line — decided once,
//! for the gaps panel, the reports and the Chrome trace alike.
//!
//! Listed: every flagged gap; of the outer span's gaps, those of at least 1 ms or 0.5 % of the
//! span, and any that large releases overlap (the ghost's shape, however short). The outer
//! span's tail, where a synchronous release at function exit lands, is named even when summed:
//! its length is the evidence either way. Summed: the
//! rest — and the summary never holds a gap longer than one that is listed (a 620 µs gap is not
//! folded into "smaller gaps" under a listed 17 µs one): those are listed too.

use super::{Diagnosis, Gap, GapRule, Interval, Place, ProofIndex, diagnose_in, proof_gaps};
use crate::model::{Proof, Session, Span};

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

/// The proof's gaps, listed (flagged first, then by length) and summed. The outer span's total unaccounted
/// time is the third value.
pub fn gap_listing(s: &Session, p: &Proof, rule: &GapRule) -> (Vec<ListedGap>, Summed, u64) {
    let outer = p.outer().map(|o| o.id);
    let idx = ProofIndex::new(s, p);
    let mut listed = Vec::new();
    let mut rest = Vec::new();
    let mut unaccounted = 0;
    for sg in proof_gaps(p, rule, s.now()) {
        let is_outer = Some(sg.span.id) == outer;
        if is_outer {
            unaccounted = sg.unaccounted_ns;
        }
        let span_len = sg.span.len_at(s.now()).max(1);
        let gaps: Vec<&Gap> = sg.gaps.iter().filter(|g| is_outer || g.flagged).collect();
        let at: Vec<Interval> = gaps.iter().map(|g| g.at).collect();
        let sides = idx.neighbours_of(sg.span.id, &at);
        let name = |c: &Span| s.name(c.name).to_owned();
        for (g, (before, after)) in gaps.into_iter().zip(sides) {
            let diagnosis = diagnose_in(s, &idx, &sg.span, g.at);
            let (before, after) = (before.map(name), after.map(name));
            let big = g.at.len() >= 1_000_000 || g.at.len() as f64 >= span_len as f64 * 0.005;
            let item = ListedGap {
                span: sg.span,
                gap: *g,
                span_len,
                diagnosis,
                before,
                after,
            };
            if g.flagged || big || item.diagnosis.releases.count > 0 {
                listed.push(item);
            } else {
                rest.push(item);
            }
        }
    }
    // Nothing summed may be longer than something listed.
    if let Some(shortest) = listed.iter().map(|l| l.gap.at.len()).min() {
        let (longer, shorter): (Vec<_>, Vec<_>) =
            rest.into_iter().partition(|r| r.gap.at.len() > shortest);
        listed.extend(longer);
        rest = shorter;
    }
    // Flagged first, then the longest: what matters most is read first.
    listed.sort_by_key(|l| {
        (
            !l.gap.flagged,
            std::cmp::Reverse(l.gap.at.len()),
            l.gap.at.start,
        )
    });
    let summed = Summed {
        count: rest.len(),
        total_ns: rest.iter().map(|r| r.gap.at.len()).sum(),
        largest_ns: rest.iter().map(|r| r.gap.at.len()).max().unwrap_or(0),
        tail_ns: rest
            .iter()
            .find(|r| Some(r.span.id) == outer && r.gap.place == Place::AfterLast)
            .map(|r| r.gap.at.len()),
    };
    (listed, summed, unaccounted)
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
}
