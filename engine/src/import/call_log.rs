//! The calls of a log so far, each by its number in the log (0, 1, …), the oldest forgettable.
//! A log replayed whole kept every call, then every call placed, then every event: 1.2 M
//! `prover time` lines (23 MB) took 1.74 GB at `--max-mib 32`, where a recording of the same
//! proofs is held to the budget by evicting the oldest. Forgetting the oldest calls once they
//! are out (placed, or past what the budget keeps) bounds a replayed log and `run`'s live log
//! alike. A line for a forgotten call — a detached free's `async_dealloc_ms` that comes very
//! late — finds none and is counted, never filed on a newer call.

use std::collections::VecDeque;

/// Generic over the call (`calls::Call`), which holds one: the two files would import each
/// other otherwise.
#[derive(Debug)]
pub struct CallLog<C> {
    /// The number of the oldest call kept.
    base: usize,
    kept: VecDeque<C>,
}

impl<C> Default for CallLog<C> {
    fn default() -> Self {
        CallLog {
            base: 0,
            kept: VecDeque::new(),
        }
    }
}

impl<C: Clone> CallLog<C> {
    /// How many calls the log has had (kept or forgotten): the next one's number.
    pub fn len(&self) -> usize {
        self.base + self.kept.len()
    }

    /// How many calls are kept.
    pub fn held(&self) -> usize {
        self.kept.len()
    }

    /// The number of the oldest call kept.
    pub fn first_kept(&self) -> usize {
        self.base
    }

    pub fn push(&mut self, c: C) {
        self.kept.push_back(c);
    }

    /// Call `i`, unless it was forgotten (or is yet to come).
    pub fn get(&self, i: usize) -> Option<&C> {
        self.kept.get(i.checked_sub(self.base)?)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut C> {
        self.kept.get_mut(i.checked_sub(self.base)?)
    }

    pub fn last(&self) -> Option<&C> {
        self.kept.back()
    }

    pub fn last_mut(&mut self) -> Option<&mut C> {
        self.kept.back_mut()
    }

    /// The kept calls, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &C> {
        self.kept.iter()
    }

    /// Copies of calls `from..to` (kept ones only).
    pub fn cloned(&self, from: usize, to: usize) -> Vec<C> {
        let (a, b) = (
            from.saturating_sub(self.base).min(self.kept.len()),
            to.saturating_sub(self.base).min(self.kept.len()),
        );
        self.kept.range(a..b.max(a)).cloned().collect()
    }

    /// Forgets every call before number `i`; returns how many it forgot.
    pub fn forget_before(&mut self, i: usize) -> usize {
        let n = i.saturating_sub(self.base).min(self.kept.len());
        self.kept.drain(..n);
        self.base += n;
        n
    }
}

/// Call `i` of the test's log (the tests keep every call).
#[cfg(test)]
impl<C: Clone> std::ops::Index<usize> for CallLog<C> {
    type Output = C;
    fn index(&self, i: usize) -> &C {
        self.get(i).expect("a call kept")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::calls::Call;

    #[test]
    fn calls_keep_their_numbers_when_older_ones_are_forgotten() {
        let mut log = CallLog::<Call>::default();
        for i in 0..5 {
            log.push(Call {
                segment: i,
                ..Call::default()
            });
        }
        assert_eq!(log.forget_before(3), 3);
        assert_eq!(log.len(), 5);
        assert!(log.get(2).is_none());
        assert_eq!(log.get(3).map(|c| c.segment), Some(3));
        assert_eq!(log.cloned(0, 5).len(), 2);
        assert_eq!(log.forget_before(1), 0);
        assert_eq!(log.first_kept(), 3);
    }
}
