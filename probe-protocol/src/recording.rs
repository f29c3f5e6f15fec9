//! Recording files: a 12-byte header, then exactly the frames the socket carries.
//!
//! ```text
//! header := magic "\x89PSREC\r\n" (8 bytes) | format version u16 LE | flags u16 LE (0)
//! ```
//! Blocks are not compressed: measured on real sessions, the stream is already compact (see
//! docs/BENCHMARKS.md), so the file stays byte-identical to the socket stream.

use crate::stream::{FrameReader, RawFrame, ReadError, Truncation};
use crate::{DecodeError, Frame};
use std::io::{self, Read, Write};

/// First 8 bytes of every recording. The high first byte catches 7-bit transfers; CR LF catches
/// line-ending conversion.
pub const RECORDING_MAGIC: [u8; 8] = *b"\x89PSREC\r\n";
/// Recording format version written by this build.
pub const RECORDING_VERSION: u16 = 1;
const HEADER_LEN: usize = 12;

/// Writes a recording: the header, then frames as they come.
#[derive(Debug)]
pub struct RecordingWriter<W: Write> {
    out: W,
    bytes: u64,
    frames: u64,
}

impl<W: Write> RecordingWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&RECORDING_MAGIC);
        header[8..10].copy_from_slice(&RECORDING_VERSION.to_le_bytes());
        out.write_all(&header)?;
        Ok(RecordingWriter {
            out,
            bytes: HEADER_LEN as u64,
            frames: 0,
        })
    }

    /// Appends one whole frame (prefix included), exactly as it travels on the socket.
    pub fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        self.out.write_all(frame)?;
        self.bytes += frame.len() as u64;
        self.frames += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// The writer underneath (to cut a file back to its last whole frame after a failed
    /// write: [`RecordingWriter::bytes_written`] counts only frames written whole).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// Reads a recording frame by frame: the header, then a [`FrameReader`] over the rest, so a
/// file is read exactly like the socket. Every complete frame of a truncated file is returned;
/// [`RecordingReader::truncation`] then says where the file was cut. A frame whose body does
/// not decode is reported as an error and reading continues with the next frame.
#[derive(Debug)]
pub struct RecordingReader<R: Read> {
    frames: FrameReader<R>,
    version: u16,
}

impl<R: Read> RecordingReader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<Self, RecordingOpenError> {
        let mut header = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            match input.read(&mut header[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(RecordingOpenError::Io(e)),
            }
        }
        if got == 0 {
            return Err(RecordingOpenError::Decode(DecodeError::EmptyRecording));
        }
        if got < 8 || header[..8] != RECORDING_MAGIC {
            return Err(RecordingOpenError::Decode(DecodeError::BadMagic));
        }
        if got < HEADER_LEN {
            return Err(RecordingOpenError::Decode(DecodeError::UnexpectedEnd {
                offset: got,
                needed: HEADER_LEN - got,
                what: "recording header",
            }));
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if version != RECORDING_VERSION {
            return Err(RecordingOpenError::Decode(
                DecodeError::UnsupportedRecordingVersion {
                    found: version,
                    supported: RECORDING_VERSION,
                },
            ));
        }
        let flags = u16::from_le_bytes([header[10], header[11]]);
        if flags != 0 {
            return Err(RecordingOpenError::Decode(
                DecodeError::UnknownRecordingFlags { flags },
            ));
        }
        Ok(RecordingReader {
            // Offsets then count from the start of the file.
            frames: FrameReader::starting_at(input, HEADER_LEN as u64),
            version,
        })
    }

    pub fn version(&self) -> u16 {
        self.version
    }

    /// Where the file was cut, once reading has reached the end.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.frames.truncation()
    }

    /// File offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }

    /// The next whole frame as it was recorded, `Ok(None)` at the end.
    pub fn next_raw(&mut self) -> Result<Option<RawFrame>, ReadError> {
        self.frames.next_raw()
    }

    /// The next decoded frame, `Ok(None)` at the end. A frame that fails to decode is returned
    /// as an error carrying its file offset; the following call continues after it.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ReadError> {
        self.frames.next_frame()
    }
}

/// Why a recording could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RecordingOpenError {
    #[error("could not read the recording: {0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Decode(DecodeError),
}

/// A whole recording read into memory.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// Every frame that decoded, in file order.
    pub frames: Vec<Frame>,
    /// Frames that could not be read, with their offsets.
    pub errors: Vec<ReadError>,
    /// Where the file was cut, if it was.
    pub truncation: Option<Truncation>,
}

/// Reads a whole recording: every decodable frame, the errors met on the way, and the
/// truncation if the file was cut.
pub fn read_all<R: Read>(input: R) -> Result<Recording, RecordingOpenError> {
    let mut reader = RecordingReader::new(input)?;
    let mut rec = Recording::default();
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => rec.frames.push(f),
            Ok(None) => break,
            Err(e) => {
                let fatal = e.is_fatal();
                rec.errors.push(e);
                if fatal {
                    break;
                }
            }
        }
    }
    rec.truncation = reader.truncation().cloned();
    Ok(rec)
}
