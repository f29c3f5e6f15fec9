//! Reading frames from a byte stream: one reader for the socket and for recording files.
//!
//! [`FrameReader`] cuts any `Read` into whole frames (length prefix included, exactly as they
//! travelled), remembers where each started, and at the end says whether the stream stopped
//! inside a frame. A read that times out (a socket with a read timeout) is reported without
//! losing anything already buffered, so a live reader can poll a stop flag between reads.

use crate::frame::{FrameSplitter, decode_frame};
use crate::{DecodeError, FRAME_PREFIX_LEN, Frame};
use std::io::{self, Read};

/// Bytes asked of the input per read.
const CHUNK: usize = 64 << 10;

/// One whole frame as it travelled: the length prefix and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    offset: u64,
    bytes: Vec<u8>,
}

impl RawFrame {
    /// Stream offset of the frame's length prefix.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The whole frame, prefix included: what a recording stores.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The body (after the length prefix).
    pub fn body(&self) -> &[u8] {
        &self.bytes[FRAME_PREFIX_LEN..]
    }

    /// Decodes the body; the error carries this frame's offset.
    pub fn decode(&self) -> Result<Frame, ReadError> {
        decode_frame(self.body()).map_err(|e| ReadError {
            offset: self.offset,
            error: ReadErrorKind::Decode(e),
        })
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Where and how a stream was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// Stream offset of the incomplete frame's length prefix.
    pub offset: u64,
    /// Bytes the frame (prefix included) needed, when its prefix was complete.
    pub needed: Option<usize>,
    /// Bytes present from `offset` to the end of the stream.
    pub available: usize,
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.needed {
            Some(n) => write!(
                f,
                "stream cut at byte {}: the last frame needs {} bytes, {} present",
                self.offset, n, self.available
            ),
            None => write!(
                f,
                "stream cut at byte {}: {} byte(s) of an incomplete length prefix",
                self.offset, self.available
            ),
        }
    }
}

/// A frame that could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("byte {offset}: {error}")]
pub struct ReadError {
    /// Stream offset of the frame's length prefix.
    pub offset: u64,
    pub error: ReadErrorKind,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("{0}")]
    Decode(DecodeError),
    #[error("I/O error: {0}")]
    Io(String),
    /// The input's read timed out (a socket with a read timeout): nothing is lost, read again.
    #[error("no data within the read timeout")]
    TimedOut,
}

impl ReadError {
    /// True when no later frame can be read (a corrupt length prefix, an I/O error).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self.error,
            ReadErrorKind::Io(_) | ReadErrorKind::Decode(DecodeError::FrameTooLarge { .. })
        )
    }

    /// True when the frame was read but its body did not decode: skip it and go on.
    pub fn is_bad_frame(&self) -> bool {
        matches!(&self.error, ReadErrorKind::Decode(e) if !matches!(e, DecodeError::FrameTooLarge { .. }))
    }
}

/// Cuts a byte stream into frames.
#[derive(Debug)]
pub struct FrameReader<R> {
    input: R,
    splitter: FrameSplitter,
    chunk: Box<[u8]>,
    eof: bool,
    fatal: bool,
    truncation: Option<Truncation>,
}

impl<R: Read> FrameReader<R> {
    /// A reader whose offsets count from the first byte of `input`.
    pub fn new(input: R) -> Self {
        Self::starting_at(input, 0)
    }

    /// A reader whose offsets start at `offset` (e.g. after a file header).
    pub fn starting_at(input: R, offset: u64) -> Self {
        FrameReader {
            input,
            splitter: FrameSplitter::starting_at(offset),
            chunk: vec![0; CHUNK].into_boxed_slice(),
            eof: false,
            fatal: false,
            truncation: None,
        }
    }

    /// Stream offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.splitter.offset()
    }

    /// Where the stream was cut, once reading has reached its end.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    /// Whether the end of the input has been reached.
    pub fn at_end(&self) -> bool {
        self.eof && self.splitter.pending() == 0
    }

    pub fn get_ref(&self) -> &R {
        &self.input
    }

    /// The next whole frame, `Ok(None)` at the end of the input. After a fatal error every
    /// call returns `Ok(None)`.
    pub fn next_raw(&mut self) -> Result<Option<RawFrame>, ReadError> {
        if self.fatal {
            return Ok(None);
        }
        loop {
            let offset = self.splitter.offset();
            match self.splitter.next_body() {
                Ok(Some(body)) => {
                    let mut bytes = Vec::with_capacity(FRAME_PREFIX_LEN + body.len());
                    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
                    bytes.extend_from_slice(body);
                    return Ok(Some(RawFrame { offset, bytes }));
                }
                Ok(None) => {}
                Err(e) => {
                    self.fatal = true;
                    return Err(ReadError {
                        offset,
                        error: ReadErrorKind::Decode(e),
                    });
                }
            }
            if self.eof {
                let available = self.splitter.pending();
                if available > 0 {
                    self.truncation = Some(Truncation {
                        offset,
                        needed: self.splitter.next_len().map(|n| n + FRAME_PREFIX_LEN),
                        available,
                    });
                }
                return Ok(None);
            }
            match self.input.read(&mut self.chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.splitter.extend(&self.chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ReadError {
                        offset,
                        error: ReadErrorKind::TimedOut,
                    });
                }
                Err(e) => {
                    self.fatal = true;
                    return Err(ReadError {
                        offset,
                        error: ReadErrorKind::Io(e.to_string()),
                    });
                }
            }
        }
    }

    /// The next decoded frame, `Ok(None)` at the end. A frame that fails to decode is returned
    /// as an error carrying its offset; the following call continues after it.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ReadError> {
        match self.next_raw()? {
            None => Ok(None),
            Some(raw) => raw.decode().map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, encode_frame};

    fn frames(n: u64) -> Vec<u8> {
        (0..n)
            .flat_map(|i| encode_frame(i, &[Event::Heartbeat { ts: i }]).unwrap())
            .collect()
    }

    /// Hands out its bytes a few at a time, with a timeout between every read.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        time_out: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.time_out = !self.time_out;
            if self.time_out {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(3).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn timeouts_lose_nothing_and_frames_keep_their_bytes() {
        let data = frames(5);
        let mut r = FrameReader::new(Trickle {
            data: data.clone(),
            at: 0,
            time_out: false,
        });
        let (mut got, mut timeouts) = (Vec::new(), 0);
        loop {
            match r.next_raw() {
                Ok(Some(f)) => got.push(f),
                Ok(None) => break,
                Err(e) => {
                    assert_eq!(e.error, ReadErrorKind::TimedOut);
                    assert!(!e.is_fatal());
                    timeouts += 1;
                }
            }
        }
        assert!(timeouts > 5);
        assert_eq!(got.len(), 5);
        assert_eq!(
            got.iter()
                .flat_map(|f| f.bytes().to_vec())
                .collect::<Vec<_>>(),
            data
        );
        assert_eq!(got[1].offset(), got[0].bytes().len() as u64);
        assert_eq!(
            got[4].decode().unwrap().events,
            vec![Event::Heartbeat { ts: 4 }]
        );
        assert!(r.truncation().is_none());
    }

    #[test]
    fn a_cut_stream_says_where() {
        let mut data = frames(2);
        let whole = data.len();
        data.truncate(whole - 3);
        let mut r = FrameReader::starting_at(&data[..], 100);
        assert!(r.next_raw().unwrap().is_some());
        assert!(r.next_raw().unwrap().is_none());
        let t = r.truncation().unwrap();
        assert_eq!(t.available, whole / 2 - 3);
        assert_eq!(t.needed, Some(whole / 2));
        assert_eq!(t.offset, 100 + whole as u64 / 2);
    }
}
