//! What a paused live view holds back: the frames that arrive while the user looks at a frozen
//! screen, applied in order on resume. Bounded like the model (what they would cost once
//! decoded into it); past the bound the oldest held frames are dropped and counted, and the
//! header says so.

use probe_protocol::Event;
use std::collections::VecDeque;

/// A held frame's cost: its events as the model would keep them (about 40 bytes each on the
/// wire expand to ~150 in the model), plus the vector.
fn cost(events: &[Event]) -> usize {
    64 + events.len() * 160
}

#[derive(Debug, Default)]
pub struct Hold {
    frames: VecDeque<(usize, Vec<Event>)>,
    bytes: usize,
    /// Events held now, and events dropped because the hold was full.
    pub events: u64,
    pub dropped: u64,
}

impl Hold {
    /// Holds `events`; drops the oldest held frames while over `budget` bytes.
    pub fn push(&mut self, events: Vec<Event>, budget: usize) {
        let c = cost(&events);
        self.bytes += c;
        self.events += events.len() as u64;
        self.frames.push_back((c, events));
        while self.bytes > budget && self.frames.len() > 1 {
            if let Some((c, old)) = self.frames.pop_front() {
                self.bytes -= c;
                self.events -= old.len() as u64;
                self.dropped += old.len() as u64;
            }
        }
    }

    /// Every held frame, oldest first; the hold is empty afterwards (its drop count stays).
    pub fn take(&mut self) -> impl Iterator<Item = Vec<Event>> + use<> {
        self.bytes = 0;
        self.events = 0;
        std::mem::take(&mut self.frames).into_iter().map(|(_, e)| e)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: usize) -> Vec<Event> {
        (0..n).map(|i| Event::Heartbeat { ts: i as u64 }).collect()
    }

    #[test]
    fn the_hold_stays_in_its_budget_and_counts_what_it_drops() {
        let mut h = Hold::default();
        let budget = cost(&frame(100)) * 3;
        for _ in 0..10 {
            h.push(frame(100), budget);
        }
        assert_eq!(h.events, 300);
        assert_eq!(h.dropped, 700);
        assert!(h.bytes <= budget);
        assert_eq!(h.take().count(), 3);
        assert!(h.is_empty());
        assert_eq!(h.dropped, 700);
    }
}
