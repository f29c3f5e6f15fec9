//! Where events come from: a live prover's socket (with reconnection) or a recording file.
//! Both deliver the same frames to the same model.

pub mod live;
pub mod record;
pub mod replay;

use probe_protocol::Event;

/// What a source hands to the app.
#[derive(Debug)]
pub enum SourceMsg {
    /// One frame: its raw bytes (prefix included, for recording) and its events.
    Frame { raw: Vec<u8>, events: Vec<Event> },
    /// Connection state changed.
    Link(crate::model::LinkState),
    /// A frame that did not decode (counted; the stream goes on).
    BadFrame(String),
    /// Something the user should read (e.g. a restarted prover is followed now).
    Notice(String),
}
