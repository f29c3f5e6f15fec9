//! Where sessions come from, through one door: a live prover ([`live`], over the connection
//! thread of [`socket`]), a recording or a log imported on the fly ([`replay`], over a
//! [`tape`]) reach the model through [`Source`]. What belongs to the link — the connection
//! state, the replay transport, the recorder, the hold of a paused live view — lives in the
//! source, not in the model or the app loop.

pub mod flow;
pub mod link;
pub mod live;
pub mod replay;
pub mod socket;
pub mod tape;

pub use socket::Target;
pub use tape::Speed;

use crate::model::Model;
use probe_protocol::Event;
use std::time::{Duration, Instant};

/// What a source is asked to do. A front end maps its keys (or requests) onto these; a
/// source ignores what it has nothing to do with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Pause or resume: a live view holds back what arrives, a replay stops its clock.
    TogglePause,
    /// Start or stop recording the stream to a file.
    ToggleRecord,
    /// A replay's next speed, in [`Speed::next`]'s order.
    NextSpeed,
    /// A replay's speed (`replay --speed`).
    Speed(Speed),
    /// A replay seeks to the previous / next proof's end.
    PrevProof,
    NextProof,
    /// A replay seeks to its last frame.
    Last,
    /// A signal the viewer got, passed on to the prover the source started (`run`), whose
    /// run then goes on until it exits.
    Signal(i32),
}

/// Whether a replay's clock runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Play {
    Playing,
    Paused,
    /// At the end of the file.
    Ended,
}

/// Where a source's transport stands, as data: the front end draws it (with its own keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A recording replayed on its clock.
    Replay {
        play: Play,
        speed: Speed,
        /// Session time reached and the file's end, ns.
        position_ns: u64,
        end_ns: u64,
        /// The next frame to apply, of how many.
        frame: usize,
        frames: usize,
    },
    /// A log imported whole: its time span, ns.
    Log { end_ns: u64 },
    /// `run` sends the prover's output to this file rather than the terminal.
    ProverOutput(String),
}

/// What the live transport thread hands to its source.
#[derive(Debug)]
pub enum SourceMsg {
    /// One frame: its raw bytes (prefix included, for recording) and its events.
    Frame { raw: Vec<u8>, events: Vec<Event> },
    /// Connection state changed.
    Link(LinkState),
    /// Frames that did not decode (counted; the stream goes on): how many, and what was
    /// wrong (with the first few of a run of them, each alone; then one message for many).
    BadFrames { count: u64, why: String },
    /// Something the user should read (e.g. a restarted prover is followed now).
    Notice(String),
}

/// Connection or replay state, set by the source; shown in the header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LinkState {
    #[default]
    Idle,
    Connecting(String),
    Live(String),
    /// Lost the prover; retrying. (what, since when — wall ms)
    Disconnected(String),
    /// A clear protocol error (e.g. version mismatch); not retried.
    Failed(String),
    Replay {
        file: String,
        position: u64,
        total: u64,
        speed: String,
        paused: bool,
    },
    Ended(String),
}

/// What a source said while it fed the model: for the user and the report.
#[derive(Debug, Default)]
pub struct Said {
    /// Messages applied (frames, link changes, …).
    pub applied: usize,
    /// A message for the footer.
    pub message: Option<String>,
    /// Warnings for the report.
    pub warnings: Vec<String>,
    /// Something the user asked for failed (a recording stopped on a full disk): a headless
    /// run then exits with a failure, the report still written.
    pub failed: Option<String>,
}

impl Said {
    /// Lines for the footer (the last one shown) and the report.
    pub fn tell(&mut self, lines: Vec<String>) {
        if let Some(last) = lines.last() {
            self.message = Some(last.clone());
        }
        self.warnings.extend(lines);
    }

    /// Something the user asked for failed: told, and the run's first failure kept.
    pub fn fail(&mut self, why: Option<String>) {
        if let Some(why) = why {
            self.failed.get_or_insert_with(|| why.clone());
            self.tell(vec![why]);
        }
    }
}

/// A paused view: events the live source holds back for the resume, and those it dropped
/// because the hold was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    pub events: u64,
    pub dropped: u64,
}

/// What the header and the footer say about the link, as the source knows it: asked for when
/// drawing, never copied into the view's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkStatus {
    pub link: LinkState,
    /// The file being recorded to.
    pub recording: Option<String>,
    /// The replay transport, for sources that have one.
    pub transport: Option<Transport>,
    /// `Some` while paused (live: what is held back).
    pub paused: Option<Held>,
    /// The prover the source started (`run`), as it stood after the last round.
    pub child: Option<ChildStatus>,
    /// Since when the prover has been lost without a goodbye (live).
    pub lost_since: Option<Instant>,
}

/// How the launched prover stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildStatus {
    /// What the viewer should exit with, once the prover has: its code, or 128 + signal.
    pub exit: Option<u8>,
    /// The prover exited and everything it printed has been read.
    pub drained: bool,
}

impl LinkStatus {
    /// The link is (or is trying to be) attached to a live prover.
    pub fn is_live(&self) -> bool {
        matches!(
            self.link,
            LinkState::Live(_) | LinkState::Connecting(_) | LinkState::Disconnected(_)
        )
    }
}

/// The one door: every way a session reaches the viewer.
pub trait Source: std::fmt::Debug {
    /// Applies to `model` what is due: what arrived (a live source, for at most `budget`),
    /// or what the replay clock has reached.
    fn pump(&mut self, model: &mut Model, budget: Duration) -> Said;
    /// Blocks up to `wait` for something, then applies it (headless live runs). A finite
    /// source runs to its end instead.
    fn wait(&mut self, model: &mut Model, wait: Duration) -> Said;
    /// A control the source answers to (pause, speed, proof jumps, record); what it says back.
    /// Controls it has nothing to do with are ignored.
    fn control(&mut self, control: Control, model: &mut Model) -> Said;
    /// The link, recording, transport and pause, as the header shows them.
    fn status(&self, model: &Model) -> LinkStatus;
    /// A file and its end (replays): headless runs read it through at full speed.
    fn is_finite(&self) -> bool;
    /// Stops: a recording is closed, pending captures written, a connection dropped; what
    /// the user should know.
    fn finish(&mut self, model: &mut Model) -> Said;
}
