//! The contract between a prover that carries the proofscope probe and the viewers that attach
//! to it. Every byte on the local socket and in a recording file is defined here (see
//! `docs/PROTOCOL.md` for the byte-level specification).
//!
//! A stream is a sequence of *frames*: a little-endian `u32` length, then a MessagePack array
//! `[major, minor, base_ns, event, event, ...]`. Events are short arrays led by a one-byte tag;
//! timestamps and span ids are delta-encoded inside a frame, names and threads travel as ids
//! defined once. A recording file is a header followed by exactly the frames the socket carries.
//!
//! Decoding never panics: every failure is a typed [`DecodeError`] that says what was wrong and
//! at which byte offset.

mod codec;
pub mod discovery;
mod error;
mod event;
mod frame;
mod kind;
mod kinds;
pub mod markers;
mod msgpack;
mod recording;
mod stream;
mod welcome;

pub use error::{DecodeError, EncodeError};
pub use event::*;
pub use frame::{
    FRAME_TARGET_LEN, Frame, FrameBuilder, FrameSplitter, decode_frame, decode_into, encode_frame,
    encode_frames, for_each_event,
};
pub use kind::{Clock, EventKind, KindInfo, Loss, SpanField};
pub use kinds::KindCounts;
pub use recording::{
    RECORDING_MAGIC, RECORDING_VERSION, Recording, RecordingOpenError, RecordingReader,
    RecordingWriter, read_all,
};
pub use stream::{FrameReader, RawFrame, ReadError, ReadErrorKind, Truncation};
pub use welcome::Welcome;

/// Major protocol version. A reader refuses frames of another major version.
pub const PROTOCOL_MAJOR: u16 = 1;
/// Minor protocol version. Minor versions only add event kinds or trailing fields, which older
/// readers skip.
pub const PROTOCOL_MINOR: u16 = 7;

/// Largest frame body (bytes after the length prefix) a writer may produce and a reader accepts.
/// Enforced on both sides so a corrupt length cannot make a reader allocate gigabytes.
pub const MAX_FRAME_LEN: usize = 4 << 20;

/// Bytes of the frame length prefix.
pub const FRAME_PREFIX_LEN: usize = 4;

/// Human-readable protocol version, e.g. `1.0`.
pub fn protocol_version() -> String {
    format!("{PROTOCOL_MAJOR}.{PROTOCOL_MINOR}")
}
