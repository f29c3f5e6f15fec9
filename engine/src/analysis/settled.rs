//! When a proof's figures are final. Its end and its outer span's edges travel apart
//! (ProofEnd at once, span edges through the thread's ring), and the releases just after it
//! (a dealloc thread's) belong to it though they come after its end: a proof is settled once
//! both edges are in and the next proof has begun, its session has ended, or [`SETTLE_NS`]
//! of session time has passed since it ended. The exporter counts settled proofs; the black
//! box (capture/) judges them.

use crate::model::{Proof, ProofId, Session};

/// Session time after a proof's end after which it is settled even if no proof follows.
pub const SETTLE_NS: u64 = 2_000_000_000;

/// A settled proof, with the start of the first proof that began after it ended (the bound
/// of its detached frees; proofs that overlap it began before it ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub id: ProofId,
    pub next_start: Option<u64>,
}

/// The proofs of a session settled after the first `counted`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Ids skipped after `counted`: evicted (or lost) before they settled.
    pub missed: u64,
    /// Every proof up to this id is settled, given up (unfinished when the session ended) or
    /// missed.
    pub upto: u64,
    pub ready: Vec<Ready>,
}

/// Whether proof `p`'s figures are final now: it ended (both edges of its outer span in), and
/// the next proof began after it, its session ended, or [`SETTLE_NS`] passed since. Until
/// then a gap's evidence may still grow — the releases of a long free arrive when the free
/// returns — and the dashboard says what is known so far, not a verdict.
pub fn is_settled(s: &Session, p: &Proof) -> bool {
    let Some(end) = p.outer().and_then(|o| o.end).filter(|_| p.done()) else {
        return false;
    };
    s.goodbye().is_some()
        || s.now().saturating_sub(end) >= SETTLE_NS
        || s.proofs().filter_map(|q| q.outer()).any(|o| o.start > end)
}

/// The proofs of `s` after id `counted` that are settled now, in order; `ended`: the stream
/// ended, so every completed proof is settled (and an unfinished one never will be).
pub fn settled(s: &Session, counted: u64, ended: bool) -> Settled {
    let ended = ended || s.goodbye().is_some();
    let starts: Vec<(u64, u64)> = s
        .proofs()
        .filter_map(|p| Some((p.id().get(), p.outer()?.start)))
        .collect();
    let mut out = Settled {
        upto: counted,
        ..Settled::default()
    };
    // Before the first count, every proof retention evicted was missed (ids seen before are
    // not the exporter's: a viewer attached late never had them).
    if counted == 0 && s.evicted_proofs() > 0 {
        out.missed = s.evicted_proofs();
        out.upto = s.evicted_below().saturating_sub(1);
    }
    // Proof ids count up from 1: ids skipped after the first counted one were evicted.
    if counted > 0
        && let Some(first) = s
            .proofs_after(ProofId(counted))
            .next()
            .map(|p| p.id().get())
        && first > counted + 1
    {
        out.missed = first - counted - 1;
        out.upto = first - 1;
    }
    for p in s.proofs_after(ProofId(counted)) {
        let id = p.id().get();
        let outer = p.outer().filter(|o| o.end.is_some());
        let (true, Some(outer)) = (p.done(), outer) else {
            if ended {
                out.upto = id; // never finished: nothing to count
                continue;
            }
            break;
        };
        let end = outer.end.unwrap_or(s.now());
        let next_start = starts
            .iter()
            .filter(|(i, st)| *i != id && *st > end)
            .map(|(_, st)| *st)
            .min();
        if next_start.is_none() && !ended && s.now().saturating_sub(end) < SETTLE_NS {
            break;
        }
        out.ready.push(Ready {
            id: p.id(),
            next_start,
        });
        out.upto = id;
    }
    out
}
