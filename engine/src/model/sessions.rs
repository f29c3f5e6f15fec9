//! The sessions a model holds, oldest first, as a slice. Retention removes them from the
//! front, one at a time: `Vec::remove(0)` moved every session left each time, and a crafted
//! recording of 120k sessions replayed for more than 12 minutes. The front is taken out in
//! place (the slot keeps an empty session) and the dead slots are compacted once they are
//! half the vector, so a removal costs O(1) amortised.

use super::Session;
use std::ops::{Deref, DerefMut};

#[derive(Debug, Default)]
pub(super) struct Sessions {
    all: Vec<Session>,
    /// Leading slots already removed.
    gone: usize,
}

impl Sessions {
    pub fn push(&mut self, s: Session) {
        self.all.push(s);
    }

    /// Takes out the oldest session.
    pub fn pop_front(&mut self) -> Option<Session> {
        let slot = self.all.get_mut(self.gone)?;
        let s = std::mem::take(slot);
        self.gone += 1;
        if self.gone * 2 >= self.all.len() {
            self.all.drain(..self.gone);
            self.gone = 0;
        }
        Some(s)
    }
}

impl Deref for Sessions {
    type Target = [Session];

    fn deref(&self) -> &[Session] {
        &self.all[self.gone..]
    }
}

impl DerefMut for Sessions {
    fn deref_mut(&mut self) -> &mut [Session] {
        &mut self.all[self.gone..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_goes_in_order_and_the_rest_stays() {
        let mut s = Sessions::default();
        for i in 0..10u64 {
            s.push(Session {
                events: i,
                ..Session::default()
            });
        }
        for want in 0..7u64 {
            assert_eq!(s.pop_front().map(|x| x.events), Some(want));
            assert_eq!(s.first().map(|x| x.events), Some(want + 1));
            assert_eq!(s.len(), 9 - want as usize);
        }
        s.push(Session {
            events: 10,
            ..Session::default()
        });
        let left: Vec<u64> = s.iter().map(|x| x.events).collect();
        assert_eq!(left, [7, 8, 9, 10]);
        assert!(s.all.len() <= 8, "compacted: {}", s.all.len());
    }
}
