//! Counts per event kind: how many events of each kind a frame holds, or how many were dropped.
//! Keyed by [`EventKind`], so a count can only be filed under a kind that exists.

use crate::kind::EventKind;
use std::ops::{AddAssign, Index, IndexMut};

/// One count per [`EventKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindCounts([u64; EventKind::COUNT]);

impl KindCounts {
    pub const ZERO: KindCounts = KindCounts([0; EventKind::COUNT]);

    /// The sum over every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    /// Kinds with a non-zero count, in tag order.
    pub fn nonzero(&self) -> impl Iterator<Item = (EventKind, u64)> + '_ {
        EventKind::ALL
            .iter()
            .map(|&k| (k, self[k]))
            .filter(|&(_, n)| n > 0)
    }

    /// `self - earlier`, kind by kind (saturating: counters only grow).
    pub fn since(&self, earlier: &KindCounts) -> KindCounts {
        KindCounts(std::array::from_fn(|i| {
            self.0[i].saturating_sub(earlier.0[i])
        }))
    }
}

impl Index<EventKind> for KindCounts {
    type Output = u64;
    fn index(&self, k: EventKind) -> &u64 {
        &self.0[k.index()]
    }
}

impl IndexMut<EventKind> for KindCounts {
    fn index_mut(&mut self, k: EventKind) -> &mut u64 {
        &mut self.0[k.index()]
    }
}

impl AddAssign<&KindCounts> for KindCounts {
    fn add_assign(&mut self, other: &KindCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

impl FromIterator<(EventKind, u64)> for KindCounts {
    fn from_iter<I: IntoIterator<Item = (EventKind, u64)>>(iter: I) -> KindCounts {
        let mut c = KindCounts::ZERO;
        for (k, n) in iter {
            c[k] += n;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_slot() {
        for (i, k) in EventKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
        }
        let mut c = KindCounts::ZERO;
        c[EventKind::Subscribe] += 2;
        c[EventKind::Hello] += 1;
        assert_eq!(
            c.nonzero().collect::<Vec<_>>(),
            vec![(EventKind::Hello, 1), (EventKind::Subscribe, 2)]
        );
        assert_eq!(c.total(), 3);
        let later: KindCounts = [(EventKind::Hello, 4), (EventKind::Subscribe, 2)]
            .into_iter()
            .collect();
        assert_eq!(
            later.since(&c).nonzero().collect::<Vec<_>>(),
            vec![(EventKind::Hello, 3)]
        );
    }
}
