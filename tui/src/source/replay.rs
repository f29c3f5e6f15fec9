//! Replaying a recording: every frame is decoded up front; a virtual clock releases them at
//! 1×, 2×, 10× or as fast as possible, and can jump to the previous or next proof (re-ingesting
//! from the start into a fresh model when jumping back).

use anyhow::{Context, Result};
use probe_protocol::{Event, RecordingReader};
use std::path::Path;
use std::time::Instant;

/// A frame of the recording with the session time it starts at (for pacing).
#[derive(Debug, Clone)]
pub struct ReplayFrame {
    pub ts: Option<u64>,
    pub events: Vec<Event>,
}

/// Replay speeds, in the order the speed key cycles through them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    X1,
    X2,
    X10,
    Max,
}

impl Speed {
    pub fn factor(self) -> Option<f64> {
        match self {
            Speed::X1 => Some(1.0),
            Speed::X2 => Some(2.0),
            Speed::X10 => Some(10.0),
            Speed::Max => None,
        }
    }

    pub fn next(self) -> Speed {
        match self {
            Speed::X1 => Speed::X2,
            Speed::X2 => Speed::X10,
            Speed::X10 => Speed::Max,
            Speed::Max => Speed::X1,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1×",
            Speed::X2 => "2×",
            Speed::X10 => "10×",
            Speed::Max => "max",
        }
    }
}

/// A loaded recording and the replay position.
#[derive(Debug)]
pub struct Replay {
    pub file: String,
    pub frames: Vec<ReplayFrame>,
    /// Problems met while reading (bad frames, truncation), for the report.
    pub warnings: Vec<String>,
    /// Next frame to hand out.
    pub next: usize,
    pub speed: Speed,
    pub paused: bool,
    /// Session time at the replay clock's anchor, and the wall instant of the anchor.
    anchor: Option<(u64, Instant)>,
}

impl Replay {
    pub fn open(path: &Path) -> Result<Replay> {
        let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut r = RecordingReader::new(std::io::BufReader::with_capacity(1 << 20, f))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let mut frames = Vec::new();
        let mut warnings = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(fr)) => {
                    let ts = fr.events.iter().find_map(Event::ts);
                    frames.push(ReplayFrame {
                        ts,
                        events: fr.events,
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    let fatal = e.is_fatal();
                    warnings.push(e.to_string());
                    if fatal {
                        break;
                    }
                }
            }
        }
        if let Some(t) = r.truncation() {
            warnings.push(t.to_string());
        }
        Ok(Replay {
            file: path.display().to_string(),
            frames,
            warnings,
            next: 0,
            speed: Speed::X1,
            paused: false,
            anchor: None,
        })
    }

    pub fn done(&self) -> bool {
        self.next >= self.frames.len()
    }

    /// Session time of the last frame handed out.
    pub fn position(&self) -> u64 {
        self.frames[..self.next]
            .iter()
            .rev()
            .find_map(|f| f.ts)
            .unwrap_or(0)
    }

    pub fn end(&self) -> u64 {
        self.frames.iter().rev().find_map(|f| f.ts).unwrap_or(0)
    }

    pub fn set_speed(&mut self, s: Speed) {
        self.speed = s;
        self.anchor = None;
    }

    pub fn set_paused(&mut self, p: bool) {
        self.paused = p;
        self.anchor = None;
    }

    /// Frames due now by the replay clock.
    pub fn due(&mut self) -> &[ReplayFrame] {
        let from = self.next;
        if self.paused || self.done() {
            return &[];
        }
        let Some(factor) = self.speed.factor() else {
            self.next = self.frames.len();
            return &self.frames[from..];
        };
        let now = Instant::now();
        let (t0, w0) = *self.anchor.get_or_insert((self.position(), now));
        let virtual_now = t0 + (now.duration_since(w0).as_nanos() as f64 * factor) as u64;
        while self.next < self.frames.len()
            && self.frames[self.next].ts.is_none_or(|ts| ts <= virtual_now)
        {
            self.next += 1;
        }
        &self.frames[from..self.next]
    }

    /// Index of the frame holding the `ProofBegin` after (or before) the current position.
    pub fn proof_boundary(&self, forward: bool) -> Option<usize> {
        let is_begin = |f: &ReplayFrame| f.events.iter().any(|e| matches!(e, Event::ProofBegin(_)));
        if forward {
            (self.next..self.frames.len()).find(|&i| is_begin(&self.frames[i]))
        } else {
            // The begin of the proof before the one in progress.
            let mut found = 0;
            for i in (0..self.next.saturating_sub(1)).rev() {
                if is_begin(&self.frames[i]) {
                    found += 1;
                    if found == 2 {
                        return Some(i);
                    }
                }
            }
            (found == 1).then_some(0)
        }
    }

    /// Moves the position to just after frame `index` (the caller re-ingests as needed).
    pub fn seek(&mut self, index: usize) {
        self.next = (index + 1).min(self.frames.len());
        self.anchor = None;
    }
}
