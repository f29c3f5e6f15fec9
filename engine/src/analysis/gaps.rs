//! The unaccounted gap of a span: its length minus the union of its children's intervals
//! (children on any thread or GPU stream), located before the first child, between children, or
//! after the last; flagged when at least max(5 % of the span, 50 ms) (configurable).

use crate::model::{Proof, Span, SpanId};

/// A half-open interval [start, end) of session nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval {
    pub start: u64,
    pub end: u64,
}

impl Interval {
    pub fn new(start: u64, end: u64) -> Interval {
        Interval {
            start,
            end: end.max(start),
        }
    }

    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    pub fn overlap(&self, other: &Interval) -> u64 {
        self.end
            .min(other.end)
            .saturating_sub(self.start.max(other.start))
    }
}

/// Where a gap lies relative to the children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    BeforeFirst,
    Between,
    AfterLast,
    /// The span has no children at all.
    Whole,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::BeforeFirst => "before the first child",
            Place::Between => "between children",
            Place::AfterLast => "after the last child",
            Place::Whole => "no children",
        }
    }

    /// The gap in plain words: "tail gap", "gap between phases".
    pub fn words(self) -> &'static str {
        match self {
            Place::BeforeFirst => "head gap",
            Place::Between => "gap between phases",
            Place::AfterLast => "tail gap",
            Place::Whole => "whole span unaccounted",
        }
    }
}

/// One unaccounted interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub at: Interval,
    pub place: Place,
    pub flagged: bool,
}

/// When a gap (or an idle GPU) is worth flagging.
#[derive(Debug, Clone, Copy)]
pub struct GapRule {
    pub min_fraction: f64,
    pub min_ns: u64,
    /// A GPU idle for more than this fraction of a proof is a finding.
    pub gpu_idle_fraction: f64,
}

impl Default for GapRule {
    fn default() -> Self {
        GapRule {
            min_fraction: 0.05,
            min_ns: 50_000_000,
            gpu_idle_fraction: 0.5,
        }
    }
}

impl GapRule {
    pub fn threshold(&self, span_len: u64) -> u64 {
        ((span_len as f64 * self.min_fraction) as u64).max(self.min_ns)
    }
}

/// Gaps of `parent` given its children's intervals (any order, may overlap, may stick out of
/// the parent: they are clipped to it).
pub fn unaccounted(parent: Interval, children: &[Interval], rule: &GapRule) -> Vec<Gap> {
    let mut kids: Vec<Interval> = children
        .iter()
        .map(|c| Interval::new(c.start.max(parent.start), c.end.min(parent.end)))
        .filter(|c| c.start < c.end)
        .collect();
    let threshold = rule.threshold(parent.len());
    let gap = |at: Interval, place| Gap {
        at,
        place,
        flagged: at.len() >= threshold && !at.is_empty(),
    };
    if kids.is_empty() {
        return if parent.is_empty() {
            Vec::new()
        } else {
            vec![gap(parent, Place::Whole)]
        };
    }
    kids.sort();
    let mut out = Vec::new();
    let mut cursor = parent.start;
    let mut first = true;
    for k in kids {
        if k.start > cursor {
            let place = if first {
                Place::BeforeFirst
            } else {
                Place::Between
            };
            out.push(gap(Interval::new(cursor, k.start), place));
        }
        first = false;
        cursor = cursor.max(k.end);
    }
    if cursor < parent.end {
        out.push(gap(Interval::new(cursor, parent.end), Place::AfterLast));
    }
    out
}

/// The gaps of one span of a proof.
#[derive(Debug, Clone)]
pub struct SpanGaps {
    pub span: Span,
    pub gaps: Vec<Gap>,
    /// Sum of all gap lengths.
    pub unaccounted_ns: u64,
}

/// Gaps of the proof's outer span and of every span that has children (leaves are their own
/// work, not unaccounted time). `now` closes spans still open.
pub fn proof_gaps(proof: &Proof, rule: &GapRule, now: u64) -> Vec<SpanGaps> {
    let outer = proof.outer().map(|o| o.id);
    let mut children: std::collections::HashMap<SpanId, Vec<Interval>> = Default::default();
    for s in proof.spans() {
        if let Some(p) = s.parent {
            children
                .entry(p)
                .or_default()
                .push(Interval::new(s.start, s.end_or(now)));
        }
    }
    for g in proof.gpu_spans() {
        if let Some(p) = g.span {
            children
                .entry(p)
                .or_default()
                .push(Interval::new(g.start, g.end));
        }
    }
    let mut out: Vec<SpanGaps> = proof
        .spans()
        .iter()
        .filter(|s| Some(s.id) == outer || children.contains_key(&s.id))
        .map(|s| {
            let kids = children.get(&s.id).map(Vec::as_slice).unwrap_or(&[]);
            let gaps = unaccounted(Interval::new(s.start, s.end_or(now)), kids, rule);
            let unaccounted_ns = gaps.iter().map(|g| g.at.len()).sum();
            SpanGaps {
                span: *s,
                gaps,
                unaccounted_ns,
            }
        })
        .collect();
    // Outer span first, then by start.
    out.sort_by_key(|g| (Some(g.span.id) != outer, g.span.start, g.span.id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn iv(a: u64, b: u64) -> Interval {
        Interval::new(a * MS, b * MS)
    }

    #[test]
    fn overlapping_children_on_several_threads_form_one_union() {
        // Parent 0..1000 ms; children from three threads overlap in 100..400 and 500..900.
        let kids = [
            iv(100, 300),
            iv(200, 400),
            iv(150, 250),
            iv(500, 900),
            iv(600, 700),
        ];
        let g = unaccounted(iv(0, 1000), &kids, &GapRule::default());
        assert_eq!(
            g.iter().map(|g| (g.at, g.place)).collect::<Vec<_>>(),
            vec![
                (iv(0, 100), Place::BeforeFirst),
                (iv(400, 500), Place::Between),
                (iv(900, 1000), Place::AfterLast)
            ]
        );
        // 5 % of 1000 ms = 50 ms: all three flagged (100 ms each).
        assert!(g.iter().all(|g| g.flagged));
    }

    #[test]
    fn children_outside_the_parent_are_clipped() {
        let kids = [iv(0, 50), iv(90, 200), iv(950, 2000), iv(3000, 4000)];
        let g = unaccounted(iv(100, 1000), &kids, &GapRule::default());
        assert_eq!(
            g.iter().map(|g| g.at).collect::<Vec<_>>(),
            vec![iv(200, 950)]
        );
        assert_eq!(g[0].place, Place::Between);
    }

    #[test]
    fn empty_parents() {
        let rule = GapRule::default();
        let g = unaccounted(iv(0, 1000), &[], &rule);
        assert_eq!(
            (g[0].at, g[0].place, g[0].flagged),
            (iv(0, 1000), Place::Whole, true)
        );
        assert!(
            unaccounted(iv(5, 5), &[], &rule).is_empty(),
            "zero-length span: nothing"
        );
        // Children covering everything: no gap.
        assert!(unaccounted(iv(0, 100), &[iv(0, 60), iv(40, 100)], &rule).is_empty());
    }

    #[test]
    fn flagging_threshold_is_max_of_fraction_and_floor() {
        let rule = GapRule::default();
        // 10 s span: threshold 500 ms; a 400 ms gap is not flagged, 600 ms is.
        let g = unaccounted(iv(0, 10_000), &[iv(400, 9_400)], &rule);
        assert_eq!(g.len(), 2);
        assert!(!g[0].flagged && g[1].flagged);
        // 200 ms span: 5 % is 10 ms, so the 50 ms floor applies: 40 ms gap not flagged.
        let g = unaccounted(iv(0, 200), &[iv(40, 200)], &rule);
        assert!(!g[0].flagged);
        let strict = GapRule {
            min_fraction: 0.01,
            min_ns: MS,
            ..GapRule::default()
        };
        assert!(unaccounted(iv(0, 200), &[iv(40, 200)], &strict)[0].flagged);
    }

    /// docs/PROTOCOL.md §10: a leaf span has no gaps (its time is its own work); the outer
    /// span and every span with a child — a span on any thread, or a GPU span launched in it —
    /// have them.
    #[test]
    fn gaps_are_of_the_outer_span_and_of_spans_with_children_never_of_leaves() {
        use crate::model::ProofId;
        use crate::model::fixture::{Fixture, session};
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let gpu = f.thread(2, "gpu-0");
        let outer = f.proof(1, "gpu", "prove", main, 0, 1000 * MS);
        f.span(Some(1), Some(outer), "leaf", main, 0, 400 * MS);
        let launcher = f.span(Some(1), Some(outer), "ntt_msm_h", gpu, 400 * MS, 900 * MS);
        f.gpu_span(launcher, 0, "msm", 500 * MS, 600 * MS);
        let m = f.model();
        let p = session(&m).proof(ProofId(1)).unwrap();
        let got = proof_gaps(p, &GapRule::default(), 1000 * MS);
        let names: Vec<u64> = got.iter().map(|g| g.span.id.get()).collect();
        assert_eq!(names, vec![outer.get(), launcher.get()], "{got:?}");
        // The launcher: head 100 ms, tail 300 ms around its GPU span.
        assert_eq!(got[1].unaccounted_ns, 400 * MS);
        // The outer span: the tail after its last child, 100 ms.
        assert_eq!(got[0].unaccounted_ns, 100 * MS);
        assert_eq!(got[0].gaps[0].place, Place::AfterLast);
    }
}
