//! A prover's recent frames, raw as they came off the socket, within a byte budget: what a
//! capture is cut from. Raw bytes cost what the stream costs (no decoded copy is kept), and
//! a capture holds exactly the frames the prover sent.

use probe_protocol::Event;
use std::borrow::Cow;
use std::collections::VecDeque;

/// One frame and the span of session time its events carry.
#[derive(Debug)]
struct Kept {
    raw: Vec<u8>,
    /// (first, last) timestamp of its events; `None` for a frame of definitions only (the
    /// welcome, which a capture re-states from the model).
    span: Option<(u64, u64)>,
}

#[derive(Debug)]
pub struct FrameRing {
    frames: VecDeque<Kept>,
    bytes: usize,
    max_bytes: usize,
    /// The oldest session time still held (frames older were let go).
    let_go_until: Option<u64>,
}

impl FrameRing {
    pub fn new(max_bytes: usize) -> FrameRing {
        FrameRing {
            frames: VecDeque::new(),
            bytes: 0,
            max_bytes,
            let_go_until: None,
        }
    }

    /// Keeps a frame (its events decoded from `raw`), letting the oldest go past the budget.
    /// A `Hello` starts a connection's stream afresh: the prover re-sends its history after
    /// it, so what was held would be doubled. A frame that carries the Hello is kept without
    /// it and the definitions beside it (a capture re-states them first; a second Hello would
    /// read as a second session).
    pub fn push(&mut self, raw: &[u8], events: &[Event]) {
        if events.iter().any(|e| matches!(e, Event::Hello(_))) {
            self.clear();
            let rest: Vec<Event> = events
                .iter()
                .filter(|e| e.ts().is_some())
                .cloned()
                .collect();
            let base = rest.iter().find_map(Event::ts).unwrap_or(0);
            if let Ok(frame) = probe_protocol::encode_frame(base, &rest)
                && !rest.is_empty()
            {
                self.keep(&frame, &rest);
            }
            return;
        }
        self.keep(raw, events);
    }

    fn keep(&mut self, raw: &[u8], events: &[Event]) {
        let span = events
            .iter()
            .filter_map(Event::ts)
            .fold(None, |acc, t| match acc {
                None => Some((t, t)),
                Some((a, b)) => Some((a.min(t), b.max(t))),
            });
        self.bytes += raw.len();
        self.frames.push_back(Kept {
            raw: raw.to_vec(),
            span,
        });
        while self.bytes > self.max_bytes {
            let Some(old) = self.frames.pop_front() else {
                break;
            };
            self.bytes -= old.raw.len();
            if let Some((_, b)) = old.span {
                self.let_go_until = Some(self.let_go_until.map_or(b, |l| l.max(b)));
            }
        }
    }

    pub fn clear(&mut self) {
        self.frames.clear();
        self.bytes = 0;
        self.let_go_until = None;
    }

    /// The frames with an event in `[from, to]`, in order, and whether frames of that window
    /// had already been let go (the capture then starts late). A frame inside the window is
    /// as the prover sent it; one across its edge is cut to the events inside (a batch of
    /// events would otherwise bring the first events of the proof after the window).
    pub fn window(&self, from: u64, to: u64) -> (Vec<Cow<'_, [u8]>>, bool) {
        let frames = self
            .frames
            .iter()
            .filter_map(|k| {
                let (a, b) = k.span?;
                if b < from || a > to {
                    None
                } else if a >= from && b <= to {
                    Some(Cow::Borrowed(k.raw.as_slice()))
                } else {
                    cut(&k.raw, from, to).map(Cow::Owned)
                }
            })
            .collect();
        (frames, self.let_go_until.is_some_and(|l| l >= from))
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The frame `raw` (prefix included) with only its events in `[from, to]`; `raw` as it is
/// when it does not decode (the reader will say so), `None` when nothing is left.
fn cut(raw: &[u8], from: u64, to: u64) -> Option<Vec<u8>> {
    let Some(Ok(frame)) = raw.get(4..).map(probe_protocol::decode_frame) else {
        return Some(raw.to_vec());
    };
    let inside: Vec<Event> = frame
        .events
        .into_iter()
        .filter(|e| e.ts().is_none_or(|t| (from..=to).contains(&t)))
        .collect();
    if inside.is_empty() {
        return None;
    }
    let base = inside.iter().find_map(Event::ts).unwrap_or(frame.base_ns);
    probe_protocol::encode_frame(base, &inside).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(ts: u64) -> Event {
        Event::Heartbeat { ts }
    }

    #[test]
    fn the_window_holds_the_frames_that_touch_it_within_the_budget() {
        let mut r = FrameRing::new(30);
        r.push(
            &[1; 10],
            &[Event::NameDef {
                id: 1,
                name: "x".into(),
            }],
        );
        r.push(&[2; 10], &[beat(100), beat(200)]);
        r.push(&[3; 10], &[beat(300)]);
        assert_eq!(r.window(150, 300).0, vec![&[2u8; 10][..], &[3; 10][..]]);
        assert_eq!(r.window(150, 300).0.len(), 2);
        assert!(!r.window(0, 1000).1);
        // A fourth frame lets the definitions go, a fifth the frame of 100–200.
        r.push(&[4; 10], &[beat(400)]);
        r.push(&[5; 10], &[beat(500)]);
        assert_eq!(r.bytes(), 30);
        let (frames, late) = r.window(150, 450);
        assert_eq!(frames, vec![&[3u8; 10][..], &[4; 10][..]]);
        assert!(late, "the window began before what is held");
        assert!(!r.window(250, 450).1);
    }

    #[test]
    fn a_frame_across_the_edge_is_cut_to_the_window() {
        let mut r = FrameRing::new(1 << 20);
        let evs = [beat(100), beat(200), beat(300)];
        let raw = probe_protocol::encode_frame(100, &evs).unwrap();
        r.push(&raw, &evs);
        let (frames, _) = r.window(150, 250);
        let got = probe_protocol::decode_frame(&frames[0][4..])
            .unwrap()
            .events;
        assert_eq!(got, vec![beat(200)]);
        let (whole, _) = r.window(0, 1000);
        assert_eq!(&*whole[0], &raw[..], "a frame inside is kept as sent");
    }

    #[test]
    fn a_hello_starts_the_stream_afresh() {
        let mut r = FrameRing::new(1 << 20);
        r.push(&[2; 10], &[beat(100)]);
        r.push(&[1; 10], &[Event::Hello(Box::default())]);
        r.push(&[2; 10], &[beat(100)]);
        assert_eq!(
            r.window(0, 200).0.len(),
            1,
            "the replayed history is held once"
        );
    }
}
