//! Frames: the unit of the socket stream and of recording files.
//!
//! ```text
//! frame := body_len: u32 little-endian | body
//! body  := MessagePack array [major, minor, base_ns, event...]
//! ```
//! The body array always uses the 5-byte `array32` header so the builder can patch the count.

use crate::codec::{Cursor, decode_event, encode_event};
use crate::event::Event;
use crate::msgpack::{self, Reader};
use crate::{
    DecodeError, EncodeError, FRAME_PREFIX_LEN, MAX_FRAME_LEN, PROTOCOL_MAJOR, PROTOCOL_MINOR,
};

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub major: u16,
    pub minor: u16,
    pub base_ns: u64,
    pub events: Vec<Event>,
    /// Events of kinds this build does not know, skipped.
    pub skipped_unknown: u32,
}

/// Offset of the array32 count inside the whole frame (after the 4-byte prefix and marker).
const COUNT_AT: usize = FRAME_PREFIX_LEN + 1;
/// Elements of the body array before the first event.
const HEADER_FIELDS: u32 = 3;

/// Encodes events into one frame, delta-coding timestamps and span ids as it goes.
#[derive(Debug, Clone)]
pub struct FrameBuilder {
    buf: Vec<u8>,
    events: u32,
    cur: Cursor,
}

impl FrameBuilder {
    /// Starts a frame whose timestamps are coded relative to `base_ns`.
    pub fn new(base_ns: u64) -> Self {
        let mut b = FrameBuilder {
            buf: Vec::with_capacity(4096),
            events: 0,
            cur: Cursor { t: 0, s: 0 },
        };
        b.reset(base_ns);
        b
    }

    /// Empties the builder (keeping its buffer) and starts a new frame.
    pub fn reset(&mut self, base_ns: u64) {
        let base_ns = base_ns.min(crate::codec::MAX_ABS);
        self.buf.clear();
        self.buf.extend_from_slice(&[0; FRAME_PREFIX_LEN]);
        self.buf.push(0xdd);
        self.buf.extend_from_slice(&[0; 4]);
        msgpack::write_uint(&mut self.buf, PROTOCOL_MAJOR as u64);
        msgpack::write_uint(&mut self.buf, PROTOCOL_MINOR as u64);
        msgpack::write_uint(&mut self.buf, base_ns);
        self.events = 0;
        self.cur = Cursor { t: base_ns, s: 0 };
    }

    /// Appends an event. On error the frame is left as it was before the call.
    pub fn push(&mut self, ev: &Event) -> Result<(), EncodeError> {
        let mark = self.buf.len();
        let cur = self.cur;
        match encode_event(&mut self.buf, &mut self.cur, ev) {
            Ok(()) => {
                self.events += 1;
                Ok(())
            }
            Err(e) => {
                self.buf.truncate(mark);
                self.cur = cur;
                Err(e)
            }
        }
    }

    pub fn event_count(&self) -> u32 {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Body bytes so far (what the length prefix will say).
    pub fn body_len(&self) -> usize {
        self.buf.len() - FRAME_PREFIX_LEN
    }

    /// Patches the header and returns the whole frame (prefix included).
    pub fn finish(&mut self) -> Result<&[u8], EncodeError> {
        let len = self.body_len();
        if len > MAX_FRAME_LEN {
            return Err(EncodeError::FrameTooLarge {
                len,
                max: MAX_FRAME_LEN,
            });
        }
        self.buf[..FRAME_PREFIX_LEN].copy_from_slice(&(len as u32).to_le_bytes());
        let count = self.events + HEADER_FIELDS;
        self.buf[COUNT_AT..COUNT_AT + 4].copy_from_slice(&count.to_be_bytes());
        Ok(&self.buf)
    }
}

/// Body bytes after which [`encode_frames`] starts a new frame: well under [`MAX_FRAME_LEN`],
/// so that no single event (at most a few KiB of names and text) takes a frame past it.
pub const FRAME_TARGET_LEN: usize = 64 << 10;

/// Encodes `events` as consecutive frames of about [`FRAME_TARGET_LEN`] bytes each (prefixes
/// included), each frame's base the first timestamp in it: how a writer that is not the
/// probe (a viewer's recorder, an importer) frames a list of events.
pub fn encode_frames(events: &[Event]) -> Result<Vec<Vec<u8>>, EncodeError> {
    let mut out = Vec::new();
    let mut rest = events;
    while !rest.is_empty() {
        let mut b = FrameBuilder::new(rest.iter().find_map(Event::ts).unwrap_or(0));
        let mut n = 0;
        while n < rest.len() && (n == 0 || b.body_len() < FRAME_TARGET_LEN) {
            b.push(&rest[n])?;
            n += 1;
        }
        out.push(b.finish()?.to_vec());
        rest = &rest[n..];
    }
    Ok(out)
}

/// Encodes `events` as one frame (prefix included).
pub fn encode_frame(base_ns: u64, events: &[Event]) -> Result<Vec<u8>, EncodeError> {
    let mut b = FrameBuilder::new(base_ns);
    for ev in events {
        b.push(ev)?;
    }
    Ok(b.finish()?.to_vec())
}

/// Decodes one frame body (the bytes after the length prefix).
pub fn decode_frame(body: &[u8]) -> Result<Frame, DecodeError> {
    let mut events = Vec::new();
    let (major, minor, base_ns, skipped_unknown) = decode_into(body, &mut events)?;
    Ok(Frame {
        major,
        minor,
        base_ns,
        events,
        skipped_unknown,
    })
}

/// Decodes a frame body, handing each event to `f` in order; returns
/// `(major, minor, base_ns, skipped_unknown)`. Nothing is handed over if the frame fails.
pub fn for_each_event(
    body: &[u8],
    f: impl FnMut(Event),
) -> Result<(u16, u16, u64, u32), DecodeError> {
    let mut events = Vec::new();
    let header = decode_into(body, &mut events)?;
    events.into_iter().for_each(f);
    Ok(header)
}

/// Appends the frame's events to `out`; on error `out` is left as it was.
pub fn decode_into(body: &[u8], out: &mut Vec<Event>) -> Result<(u16, u16, u64, u32), DecodeError> {
    let keep = out.len();
    let r = decode_events(body, out);
    if r.is_err() {
        out.truncate(keep);
    }
    r
}

fn decode_events(body: &[u8], out: &mut Vec<Event>) -> Result<(u16, u16, u64, u32), DecodeError> {
    if body.len() > MAX_FRAME_LEN {
        return Err(DecodeError::FrameTooLarge {
            len: body.len(),
            max: MAX_FRAME_LEN,
        });
    }
    let mut r = Reader::new(body);
    let n = r.read_array_len("frame body")?;
    if n < HEADER_FIELDS as usize {
        return Err(DecodeError::MissingFields {
            offset: 0,
            index: 0,
            tag: 0,
            found: n,
            needed: HEADER_FIELDS as usize,
        });
    }
    let major = r.read_u64("protocol major version")?;
    let minor = r.read_u64("protocol minor version")?;
    if major != PROTOCOL_MAJOR as u64 || minor > u16::MAX as u64 {
        return Err(DecodeError::IncompatibleVersion {
            ours_major: PROTOCOL_MAJOR,
            ours_minor: PROTOCOL_MINOR,
            theirs_major: major,
            theirs_minor: minor,
        });
    }
    let base_at = r.pos();
    let base_ns = r.read_u64("frame base timestamp")?;
    if base_ns > crate::codec::MAX_ABS {
        return Err(DecodeError::OutOfRange {
            offset: base_at,
            what: "frame base timestamp",
            value: base_ns as i128,
        });
    }
    let mut cur = Cursor { t: base_ns, s: 0 };
    let mut skipped = 0u32;
    // Every event takes at least two bytes: never reserve more than the body can hold.
    out.reserve((n - HEADER_FIELDS as usize).min(r.remaining() / 2));
    for index in 0..n - HEADER_FIELDS as usize {
        match decode_event(&mut r, &mut cur, index)? {
            Some(ev) => out.push(ev),
            None => skipped += 1,
        }
    }
    if r.remaining() > 0 {
        return Err(DecodeError::TrailingBytes {
            offset: r.pos(),
            trailing: r.remaining(),
        });
    }
    Ok((major as u16, minor as u16, base_ns, skipped))
}

/// Cuts a byte stream (a socket read loop, a file) into frame bodies.
#[derive(Debug, Default)]
pub struct FrameSplitter {
    buf: Vec<u8>,
    start: usize,
    /// Stream offset of `buf[0]`, for error messages.
    consumed: u64,
}

impl FrameSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A splitter whose reported offsets start at `offset` (e.g. after a file header).
    pub fn starting_at(offset: u64) -> Self {
        FrameSplitter {
            consumed: offset,
            ..Self::default()
        }
    }

    /// Adds bytes read from the stream.
    pub fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.consumed += self.start as u64;
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.consumed += self.start as u64;
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received but not yet returned as frames.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.consumed + self.start as u64
    }

    /// Length the next frame announces, once its prefix has arrived.
    pub fn next_len(&self) -> Option<usize> {
        let p = self.buf.get(self.start..self.start + FRAME_PREFIX_LEN)?;
        Some(u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize)
    }

    /// The next complete frame body, `Ok(None)` when more bytes are needed. A length above
    /// [`MAX_FRAME_LEN`] is an error the stream cannot recover from.
    pub fn next_body(&mut self) -> Result<Option<&[u8]>, DecodeError> {
        let Some(len) = self.next_len() else {
            return Ok(None);
        };
        if len > MAX_FRAME_LEN {
            return Err(DecodeError::FrameTooLarge {
                len,
                max: MAX_FRAME_LEN,
            });
        }
        let from = self.start + FRAME_PREFIX_LEN;
        if self.buf.len() - from < len {
            return Ok(None);
        }
        self.start = from + len;
        Ok(Some(&self.buf[from..from + len]))
    }
}
