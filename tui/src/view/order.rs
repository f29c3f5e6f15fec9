//! Which proofs the list shows and in what order: the sort (`s`) and the filter (`/`). The
//! list, the selection keys and the mouse all go through [`listed`], so that ↑ moves to the
//! row drawn above.

use proofscope_engine::analysis::{GapRule, gap_listing, proof_gaps};
use proofscope_engine::model::{Model, Proof, ProofKey, Session};

/// The proof list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProofOrder {
    /// As they started (the newest at the bottom).
    #[default]
    Time,
    /// The longest at the top.
    Duration,
    /// The largest unaccounted share of the outer span at the top.
    Unaccounted,
    /// Proofs with a flagged gap first (longest first among them), then the rest in time.
    FlaggedFirst,
}

impl ProofOrder {
    pub fn next(self) -> ProofOrder {
        match self {
            ProofOrder::Time => ProofOrder::Duration,
            ProofOrder::Duration => ProofOrder::Unaccounted,
            ProofOrder::Unaccounted => ProofOrder::FlaggedFirst,
            ProofOrder::FlaggedFirst => ProofOrder::Time,
        }
    }

    /// As the list's title says it.
    pub fn label(self) -> &'static str {
        match self {
            ProofOrder::Time => "by time",
            ProofOrder::Duration => "slowest first",
            ProofOrder::Unaccounted => "most unaccounted first",
            ProofOrder::FlaggedFirst => "flagged first",
        }
    }
}

/// The outer span's length, its unaccounted share and whether a gap of it is flagged.
fn measure(s: &Session, p: &Proof, rule: &GapRule) -> (u64, f64, bool) {
    let now = s.now();
    let len = p.outer().map_or(0, |o| o.len_at(now));
    let outer = p.outer().map(|o| o.id);
    let og = proof_gaps(p, rule, now)
        .into_iter()
        .find(|g| Some(g.span.id) == outer);
    let share = og
        .as_ref()
        .map_or(0.0, |g| g.unaccounted_ns as f64 / len.max(1) as f64);
    let flagged = og.is_some_and(|g| g.gaps.iter().any(|g| g.flagged));
    (len, share, flagged)
}

/// Whether `needle` (lower case) names a phase of the proof, a thread it ran on, or words of
/// the diagnosis of one of its listed gaps.
pub fn matches(s: &Session, p: &Proof, needle: &str, rule: &GapRule) -> bool {
    let has = |t: &str| t.to_lowercase().contains(needle);
    p.spans()
        .iter()
        .any(|sp| has(s.name(sp.name)) || has(&s.thread_name(sp.thread)))
        || gap_listing(s, p, rule)
            .0
            .iter()
            .any(|l| has(&l.diagnosis.sentence()))
}

/// The proofs the list shows, in its order.
pub fn listed(model: &Model, order: ProofOrder, filter: &str, rule: &GapRule) -> Vec<ProofKey> {
    let needle = filter.trim().to_lowercase();
    let mut keyed: Vec<(ProofKey, (u64, f64, bool))> = model
        .proof_keys()
        .into_iter()
        .filter_map(|k| {
            let s = model.session(k.session)?;
            let p = model.proof(k)?;
            if !needle.is_empty() && !matches(s, p, &needle, rule) {
                return None;
            }
            let m = match order {
                ProofOrder::Time => (0, 0.0, false),
                _ => measure(s, p, rule),
            };
            Some((k, m))
        })
        .collect();
    match order {
        ProofOrder::Time => {}
        ProofOrder::Duration => keyed.sort_by_key(|k| std::cmp::Reverse(k.1.0)),
        ProofOrder::Unaccounted => keyed.sort_by(|a, b| b.1.1.total_cmp(&a.1.1)),
        ProofOrder::FlaggedFirst => keyed.sort_by(|a, b| {
            b.1.2.cmp(&a.1.2).then_with(|| match a.1.2 {
                true => b.1.0.cmp(&a.1.0),
                false => std::cmp::Ordering::Equal,
            })
        }),
    }
    keyed.into_iter().map(|(k, _)| k).collect()
}
