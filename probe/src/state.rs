//! The one word the hot path reads: whether a session records, whether its ticks come from the
//! TSC, and which session it is. A span edge costs one relaxed load of it when the probe is off.

use crate::clock::{self, TickSource, Ticks};
use std::sync::atomic::{AtomicU64, Ordering};

static STATE: AtomicU64 = AtomicU64::new(0);

/// A reading of the state word: bit 0 = recording, bit 1 = ticks come from the TSC,
/// bits 2.. = the generation of the running session (0: none has run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateWord(u64);

const ENABLED_BIT: u64 = 1;
const TSC_BIT: u64 = 2;

impl StateWord {
    /// Never the word of a session: a thread that joined none holds this.
    pub const NONE: StateWord = StateWord(0);

    /// The word of session `generation`, not yet recording.
    pub fn of(generation: u64, source: TickSource) -> StateWord {
        let tsc = match source {
            TickSource::Tsc => TSC_BIT,
            TickSource::Monotonic => 0,
        };
        StateWord(generation << 2 | tsc)
    }

    #[inline(always)]
    pub fn enabled(self) -> bool {
        self.0 & ENABLED_BIT != 0
    }

    /// This word with the recording bit set: what a thread that joined while recording holds.
    #[inline(always)]
    pub fn recording(self) -> StateWord {
        StateWord(self.0 | ENABLED_BIT)
    }

    pub fn generation(self) -> u64 {
        self.0 >> 2
    }

    pub fn tick_source(self) -> TickSource {
        if self.0 & TSC_BIT != 0 {
            TickSource::Tsc
        } else {
            TickSource::Monotonic
        }
    }

    /// Reads a tick from this session's source.
    #[inline(always)]
    pub fn ticks(self) -> Ticks {
        clock::read(self.tick_source())
    }
}

/// The current word: one relaxed load.
#[inline(always)]
pub(crate) fn load() -> StateWord {
    StateWord(STATE.load(Ordering::Relaxed))
}

/// Makes `word` current (a session starts).
pub(crate) fn install(word: StateWord) {
    STATE.store(word.0, Ordering::Release);
}

pub(crate) fn set_enabled(on: bool) {
    if on {
        STATE.fetch_or(ENABLED_BIT, Ordering::Release);
    } else {
        STATE.fetch_and(!ENABLED_BIT, Ordering::Release);
    }
}

/// Whether a session is running and recording.
#[inline]
pub fn enabled() -> bool {
    load().enabled()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_generation_source_and_recording_apart() {
        let w = StateWord::of(5, TickSource::Tsc);
        assert_eq!(
            (w.generation(), w.tick_source(), w.enabled()),
            (5, TickSource::Tsc, false)
        );
        let r = w.recording();
        assert!(r.enabled());
        assert_eq!(r.generation(), 5);
        assert_ne!(r, w);
        assert_eq!(
            StateWord::of(5, TickSource::Monotonic).tick_source(),
            TickSource::Monotonic
        );
        assert_ne!(
            StateWord::NONE,
            StateWord::of(1, TickSource::Monotonic).recording()
        );
    }
}
