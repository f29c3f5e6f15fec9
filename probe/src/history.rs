//! The flight recorder: recent data frames, bounded in bytes. Definitions are kept apart by
//! the collector (they are few and needed to decode anything), so eviction never makes the
//! history undecodable.

use crate::encoded::EncodedFrame;
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Debug)]
pub struct History {
    frames: VecDeque<Arc<EncodedFrame>>,
    /// Memory the frames hold ([`EncodedFrame::held_bytes`]).
    held: usize,
    budget: usize,
    pub evicted_events: u64,
    pub evicted_from: Option<u64>,
    pub evicted_until: u64,
}

impl History {
    pub fn new(budget: usize) -> History {
        History {
            frames: VecDeque::new(),
            held: 0,
            budget,
            evicted_events: 0,
            evicted_from: None,
            evicted_until: 0,
        }
    }

    pub fn push(&mut self, frame: Arc<EncodedFrame>) {
        self.held += frame.held_bytes();
        self.frames.push_back(frame);
        while self.held > self.budget {
            let Some(old) = self.frames.pop_front() else {
                break;
            };
            self.held -= old.held_bytes();
            self.evicted_events += old.events;
            self.evicted_from.get_or_insert(old.first_ts);
            self.evicted_until = self.evicted_until.max(old.last_ts);
        }
    }

    pub fn frames(&self) -> impl Iterator<Item = &Arc<EncodedFrame>> {
        self.frames.iter()
    }

    /// The data-stream position of the oldest event kept (`None` when no frame is): frames
    /// are kept in the order they were sent.
    pub fn oldest_pos(&self) -> Option<u64> {
        self.frames.front().map(|f| f.first_pos)
    }

    /// Memory held by the frames kept.
    #[cfg(test)]
    pub fn held_bytes(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoded::tests_support::frame;

    #[test]
    fn history_evicts_oldest_and_remembers_what() {
        let f = frame(10, 0);
        let mut h = History::new(f.held_bytes() * 2);
        h.push(frame(10, 0));
        h.push(frame(10, 100));
        h.push(frame(10, 200));
        assert_eq!(h.frames().count(), 2);
        assert_eq!(h.evicted_events, 10);
        assert_eq!((h.evicted_from, h.evicted_until), (Some(100_000), 100_009));
        assert!(h.held_bytes() <= f.held_bytes() * 2);
    }
}
