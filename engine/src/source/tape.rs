//! The replay transport over a tape: a recording file whose frames are read as the replay clock
//! reaches them (1×, 2×, 10× or as fast as possible), never all held in memory, so a replay
//! costs what the model keeps (bounded by `--max-mib`) whatever the file's size — or an
//! imported log's frames in memory. One pass at opening checks the tape (bad frames,
//! truncation, another protocol version) and notes where each proof ends, so the transport can
//! jump between proofs in both directions (back: re-ingest from the start).

use anyhow::{Context, Result, bail};
use probe_protocol::{DecodeError, Event, ReadErrorKind, RecordingReader};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A frame of the recording with the session time it starts at (for pacing).
#[derive(Debug, Clone)]
pub struct ReplayFrame {
    pub ts: Option<u64>,
    pub events: Vec<Event>,
}

/// Replay speeds, in the order the speed key cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    X1,
    X2,
    X10,
    Max,
}

impl Speed {
    /// Every speed, in the order the speed key cycles through them.
    pub const ALL: [Speed; 4] = [Speed::X1, Speed::X2, Speed::X10, Speed::Max];

    /// The name the command line takes (`--speed 10`).
    pub fn name(self) -> &'static str {
        match self {
            Speed::X1 => "1",
            Speed::X2 => "2",
            Speed::X10 => "10",
            Speed::Max => "max",
        }
    }

    pub fn factor(self) -> Option<f64> {
        match self {
            Speed::X1 => Some(1.0),
            Speed::X2 => Some(2.0),
            Speed::X10 => Some(10.0),
            Speed::Max => None,
        }
    }

    /// The speed the speed key goes to from this one.
    pub fn next(self) -> Speed {
        let at = Speed::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Speed::ALL[(at + 1) % Speed::ALL.len()]
    }

    /// How the transport shows it.
    pub fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1×",
            Speed::X2 => "2×",
            Speed::X10 => "10×",
            Speed::Max => "max",
        }
    }
}

impl std::fmt::Display for Speed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the opening pass learnt about the tape.
#[derive(Debug, Default)]
struct Survey {
    frames: usize,
    end_ts: u64,
    /// Frame numbers holding a `ProofEnd` (in tape order), as many as the budget allows.
    proof_ends: Vec<usize>,
    /// Proof ends not noted (the budget was reached): jumping still works up to the last noted.
    proof_ends_dropped: u64,
    bad_frames: u64,
    /// Bounded: a file of zeros is millions of bad frames.
    warnings: crate::warnings::Warnings,
}

/// A frame a tape could not give.
#[derive(Debug)]
pub enum TapeError {
    /// The tape cannot be replayed at all (another protocol version).
    Refused(String),
    /// This frame is bad; `fatal`: nothing after it can be read either.
    Bad { message: String, fatal: bool },
}

/// Frames to replay, in order, from the start again on demand: a recording file read as the
/// replay goes, or an imported log's frames held in memory.
pub trait Tape: std::fmt::Debug {
    /// The next frame's events; `None` at the end.
    fn next_frame(&mut self) -> Option<Result<Vec<Event>, TapeError>>;
    /// Back to the first frame.
    fn rewind(&mut self) -> Result<()>;
    /// What the tape can say about itself once read to its end (a cut-off file).
    fn end_note(&self) -> Option<String> {
        None
    }
}

/// A recording file.
#[derive(Debug)]
pub struct FileTape {
    path: PathBuf,
    reader: RecordingReader<BufReader<File>>,
}

impl FileTape {
    pub fn open(path: &Path) -> Result<FileTape> {
        Ok(FileTape {
            path: path.to_owned(),
            reader: open_reader(path)?,
        })
    }
}

impl Tape for FileTape {
    fn next_frame(&mut self) -> Option<Result<Vec<Event>, TapeError>> {
        match self.reader.next_frame() {
            Ok(Some(f)) => Some(Ok(f.events)),
            Ok(None) => None,
            Err(e) => {
                if let ReadErrorKind::Decode(d @ DecodeError::IncompatibleVersion { .. }) = &e.error
                {
                    return Some(Err(TapeError::Refused(format!(
                        "{}: frame at {e}: {d}",
                        self.path.display()
                    ))));
                }
                Some(Err(TapeError::Bad {
                    message: format!("recording {e}"),
                    fatal: e.is_fatal(),
                }))
            }
        }
    }

    fn rewind(&mut self) -> Result<()> {
        self.reader = open_reader(&self.path)?;
        Ok(())
    }

    fn end_note(&self) -> Option<String> {
        self.reader.truncation().map(ToString::to_string)
    }
}

/// Frames held in memory (an imported log: nothing is written to disk).
#[derive(Debug)]
pub struct MemoryTape {
    frames: Vec<Vec<Event>>,
    at: usize,
}

impl MemoryTape {
    /// `events` framed `per_frame` at a time, as a probe's collector would batch them.
    pub fn new(events: Vec<Event>, per_frame: usize) -> MemoryTape {
        let mut frames = Vec::new();
        let mut it = events.into_iter().peekable();
        while it.peek().is_some() {
            frames.push(it.by_ref().take(per_frame.max(1)).collect());
        }
        MemoryTape { frames, at: 0 }
    }
}

impl Tape for MemoryTape {
    fn next_frame(&mut self) -> Option<Result<Vec<Event>, TapeError>> {
        let f = self.frames.get(self.at)?.clone();
        self.at += 1;
        Some(Ok(f))
    }

    fn rewind(&mut self) -> Result<()> {
        self.at = 0;
        Ok(())
    }
}

/// A recording with a log's events joined in (`replay REC --log LOG`): the file's frames as
/// they are; after the one that holds the session's `Hello`, the log's definitions, then its
/// events in frames placed between the file's by time.
#[derive(Debug)]
pub struct JoinedTape {
    file: FileTape,
    /// The log's events: definitions (no time) first, then by time.
    extra: Vec<Event>,
    at: usize,
    hello_seen: bool,
    /// A frame of the file read ahead, not handed out yet.
    ahead: Option<Result<Vec<Event>, TapeError>>,
}

/// Log events put in one frame of a joined tape.
const JOINED_PER_FRAME: usize = 256;

impl JoinedTape {
    pub fn new(file: FileTape, extra: Vec<Event>) -> JoinedTape {
        JoinedTape {
            file,
            extra,
            at: 0,
            hello_seen: false,
            ahead: None,
        }
    }

    /// The log's events due before time `until` (definitions at once), at most a frame's worth.
    fn extra_before(&mut self, until: Option<u64>) -> Option<Vec<Event>> {
        let mut out = Vec::new();
        while let Some(e) = self.extra.get(self.at) {
            let due = match (e.ts(), until) {
                (None, _) | (_, None) => true,
                (Some(t), Some(u)) => t <= u,
            };
            if !due || out.len() >= JOINED_PER_FRAME {
                break;
            }
            out.push(e.clone());
            self.at += 1;
        }
        (!out.is_empty()).then_some(out)
    }
}

impl Tape for JoinedTape {
    fn next_frame(&mut self) -> Option<Result<Vec<Event>, TapeError>> {
        if !self.hello_seen {
            let f = self.file.next_frame()?;
            if let Ok(evs) = &f {
                self.hello_seen = evs.iter().any(|e| matches!(e, Event::Hello(_)));
            }
            return Some(f);
        }
        if self.ahead.is_none() {
            self.ahead = self.file.next_frame();
        }
        let until = match &self.ahead {
            Some(Ok(evs)) => evs.iter().find_map(Event::ts),
            Some(Err(_)) => Some(0),
            None => None,
        };
        if let Some(f) = self.extra_before(until) {
            return Some(Ok(f));
        }
        self.ahead.take()
    }

    fn rewind(&mut self) -> Result<()> {
        self.file.rewind()?;
        self.at = 0;
        self.hello_seen = false;
        self.ahead = None;
        Ok(())
    }

    fn end_note(&self) -> Option<String> {
        self.file.end_note()
    }
}

fn open_reader(path: &Path) -> Result<RecordingReader<BufReader<File>>> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    RecordingReader::new(BufReader::with_capacity(1 << 20, f))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Reads the whole tape once, keeping nothing of the events: what a replay needs to know up
/// front; then rewinds it. `max_marks` bounds the proof-end index.
fn survey(tape: &mut dyn Tape, max_marks: usize) -> Result<Survey> {
    let mut s = Survey::default();
    while let Some(frame) = tape.next_frame() {
        // A signal (a headless run) stops the opening pass too: the run then reports
        // nothing read, interrupted.
        if s.frames.is_multiple_of(256) && crate::signals::caught().is_some() {
            break;
        }
        match frame {
            Ok(events) => {
                if let Some(ts) = events.iter().filter_map(Event::ts).max() {
                    s.end_ts = s.end_ts.max(ts);
                }
                if events.iter().any(|e| matches!(e, Event::ProofEnd(_))) {
                    if s.proof_ends.len() < max_marks {
                        s.proof_ends.push(s.frames);
                    } else {
                        s.proof_ends_dropped += 1;
                    }
                }
                s.frames += 1;
            }
            Err(TapeError::Refused(why)) => bail!(why),
            Err(TapeError::Bad { message, fatal }) => {
                s.bad_frames += 1;
                s.warnings.push(message);
                if fatal {
                    break;
                }
            }
        }
    }
    s.warnings.extend(tape.end_note());
    if s.proof_ends_dropped > 0 {
        s.warnings.push(format!(
            "{} proof ends past the replay's index budget: `[` `]` stop at the last indexed proof",
            s.proof_ends_dropped
        ));
    }
    tape.rewind()?;
    Ok(s)
}

/// A tape and the replay position.
#[derive(Debug)]
pub struct Replay {
    pub file: String,
    tape: Box<dyn Tape>,
    /// The next frame read from the tape but not handed out yet (it was not due).
    ahead: Option<ReplayFrame>,
    survey: Survey,
    /// Problems met while reading (bad frames, truncation), for the report.
    pub warnings: Vec<String>,
    /// Frames handed out so far.
    pub next: usize,
    /// Session time of the last frame handed out.
    position: u64,
    pub speed: Speed,
    pub paused: bool,
    /// Session time at the replay clock's anchor, and the wall instant of the anchor.
    anchor: Option<(u64, Instant)>,
}

impl Replay {
    /// Opens a recording; `index_budget` bytes bound the proof index (16 bytes a proof).
    pub fn open(path: &Path, index_budget: usize) -> Result<Replay> {
        Replay::of(
            path.display().to_string(),
            Box::new(FileTape::open(path)?),
            index_budget,
        )
    }

    /// Replays `tape`, named `file` in the header.
    pub fn of(file: String, mut tape: Box<dyn Tape>, index_budget: usize) -> Result<Replay> {
        let survey = survey(tape.as_mut(), (index_budget / 16).max(64))?;
        Ok(Replay {
            file,
            tape,
            ahead: None,
            warnings: survey.warnings.to_vec(),
            survey,
            next: 0,
            position: 0,
            speed: Speed::X1,
            paused: false,
            anchor: None,
        })
    }

    /// Frames on the tape that decode.
    pub fn frame_count(&self) -> usize {
        self.survey.frames
    }

    /// Frames that did not decode (also in `warnings`).
    pub fn bad_frames(&self) -> u64 {
        self.survey.bad_frames
    }

    pub fn done(&self) -> bool {
        self.next >= self.survey.frames
    }

    /// Session time of the last frame handed out.
    pub fn position(&self) -> u64 {
        self.position
    }

    pub fn end(&self) -> u64 {
        self.survey.end_ts
    }

    pub fn set_speed(&mut self, s: Speed) {
        self.speed = s;
        self.anchor = None;
    }

    pub fn set_paused(&mut self, p: bool) {
        self.paused = p;
        self.anchor = None;
    }

    /// The next decodable frame (bad frames were counted by the survey).
    fn read_frame(&mut self) -> Option<ReplayFrame> {
        if let Some(f) = self.ahead.take() {
            return Some(f);
        }
        loop {
            match self.tape.next_frame()? {
                Ok(events) => {
                    return Some(ReplayFrame {
                        ts: events.iter().find_map(Event::ts),
                        events,
                    });
                }
                Err(TapeError::Refused(_) | TapeError::Bad { fatal: true, .. }) => return None,
                Err(TapeError::Bad { .. }) => {}
            }
        }
    }

    /// Hands the frame to `f` and moves past it.
    fn hand_out(&mut self, frame: ReplayFrame, f: &mut impl FnMut(Vec<Event>)) {
        if let Some(ts) = frame.ts {
            self.position = self.position.max(ts);
        }
        self.next += 1;
        f(frame.events);
    }

    /// Hands every frame due by the replay clock to `f`; returns how many. At full speed
    /// everything is due: `slice` bounds how long one call reads (a headless replay checks
    /// for a signal between slices), `None` reads to the end.
    pub fn due(&mut self, slice: Option<Duration>, mut f: impl FnMut(Vec<Event>)) -> usize {
        if self.paused || self.done() {
            return 0;
        }
        let from = self.next;
        let Some(factor) = self.speed.factor() else {
            let t = Instant::now();
            loop {
                let Some(frame) = self.read_frame() else {
                    self.next = self.next.max(self.survey.frames);
                    break;
                };
                self.hand_out(frame, &mut f);
                if (self.next - from).is_multiple_of(64) && slice.is_some_and(|s| t.elapsed() >= s)
                {
                    break;
                }
            }
            return self.next - from;
        };
        let now = Instant::now();
        let (t0, w0) = *self.anchor.get_or_insert((self.position, now));
        let virtual_now = t0 + (now.duration_since(w0).as_nanos() as f64 * factor) as u64;
        while let Some(frame) = self.read_frame() {
            if frame.ts.is_some_and(|ts| ts > virtual_now) {
                self.ahead = Some(frame);
                break;
            }
            self.hand_out(frame, &mut f);
        }
        if self.ahead.is_none() {
            self.next = self.next.max(self.survey.frames);
        }
        self.next - from
    }

    /// The frame a proof jump goes to: the end of the next proof not yet shown (forward), or of
    /// the proof before the last one shown (back). `None` when there is none that way.
    pub fn proof_target(&self, forward: bool) -> Option<usize> {
        let ends = &self.survey.proof_ends;
        if forward {
            ends.iter().copied().find(|&e| e >= self.next)
        } else {
            // Ends already shown are < next; the last of them is the proof on screen.
            let shown = ends.partition_point(|&e| e < self.next);
            shown.checked_sub(2).map(|i| ends[i])
        }
    }

    /// Moves so that frame `index` is the last handed out, handing the frames in between to
    /// `f`. Going back starts over from the file's beginning: `f` is then called with `None`
    /// first (the caller starts a fresh model).
    pub fn seek(&mut self, index: usize, mut f: impl FnMut(Option<Vec<Event>>)) -> Result<()> {
        let target = (index + 1).min(self.survey.frames);
        if target < self.next {
            self.tape.rewind()?;
            self.ahead = None;
            self.next = 0;
            self.position = 0;
            f(None);
        }
        while self.next < target {
            let Some(frame) = self.read_frame() else {
                break;
            };
            self.hand_out(frame, &mut |evs| f(Some(evs)));
        }
        self.anchor = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_protocol::{ProofEnd, RecordingWriter, encode_frame};

    /// A recording of `n` proofs, each ending in a frame of its own between heartbeats.
    fn recording(dir: &Path, n: u64) -> PathBuf {
        let path = dir.join("r.psrec");
        let mut w = RecordingWriter::new(File::create(&path).unwrap()).unwrap();
        for p in 1..=n {
            w.write_frame(&encode_frame(0, &[Event::Heartbeat { ts: p * 100 }]).unwrap())
                .unwrap();
            let end = Event::ProofEnd(Box::new(ProofEnd {
                ts: p * 100 + 50,
                proof: p,
                ..Default::default()
            }));
            w.write_frame(&encode_frame(0, &[end]).unwrap()).unwrap();
        }
        path
    }

    fn ended(evs: &[Event]) -> Vec<u64> {
        evs.iter()
            .filter_map(|e| match e {
                Event::ProofEnd(p) => Some(p.proof),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_proof_is_reachable_both_ways_even_after_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Replay::open(&recording(dir.path(), 4), 1 << 20).unwrap();
        let mut shown: Vec<u64> = Vec::new();
        let walk = |r: &mut Replay, forward: bool, shown: &mut Vec<u64>| -> bool {
            let Some(t) = r.proof_target(forward) else {
                return false;
            };
            r.seek(t, |evs| match evs {
                None => shown.clear(),
                Some(e) => shown.extend(ended(&e)),
            })
            .unwrap();
            true
        };
        for want in 1..=4 {
            assert!(walk(&mut r, true, &mut shown));
            assert_eq!(shown.last(), Some(&want), "forward to proof {want}");
        }
        assert!(
            !walk(&mut r, true, &mut shown),
            "nothing after the last proof"
        );
        for want in (1..=3).rev() {
            assert!(walk(&mut r, false, &mut shown));
            assert_eq!(shown.last(), Some(&want), "back to proof {want}");
        }
        assert!(!walk(&mut r, false, &mut shown), "nothing before the first");
        // Played to the end, then back again.
        r.set_speed(Speed::Max);
        r.due(None, |e| shown.extend(ended(&e)));
        assert!(r.done());
        assert!(walk(&mut r, false, &mut shown));
        assert_eq!(shown.last(), Some(&3));
    }

    #[test]
    fn another_major_version_stops_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.psrec");
        let mut w = RecordingWriter::new(File::create(&path).unwrap()).unwrap();
        // A frame of protocol 2.0 holding a heartbeat: [2, 0, 0, [15, 0]].
        let body = [0xdd, 0, 0, 0, 4, 0x02, 0x00, 0x00, 0x92, 0x0f, 0x00];
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&body);
        w.write_frame(&f).unwrap();
        drop(w);
        let err = Replay::open(&path, 1 << 20).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "this build speaks {}, the peer sent 2.0",
                probe_protocol::protocol_version()
            )),
            "{err}"
        );
    }
}
