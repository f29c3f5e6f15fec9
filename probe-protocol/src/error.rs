use thiserror::Error;

/// Why bytes could not be decoded. Offsets count from the start of the frame body (the byte
/// after the length prefix) unless the variant says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("unexpected end of data at byte {offset}: needed {needed} more byte(s) for {what}")]
    UnexpectedEnd {
        offset: usize,
        needed: usize,
        what: &'static str,
    },
    #[error("at byte {offset}: expected {expected}, found MessagePack marker 0x{marker:02x}")]
    WrongType {
        offset: usize,
        expected: &'static str,
        marker: u8,
    },
    #[error("at byte {offset}: {what} value {value} is out of range")]
    OutOfRange {
        offset: usize,
        what: &'static str,
        value: i128,
    },
    #[error("at byte {offset}: string is not valid UTF-8")]
    InvalidUtf8 { offset: usize },
    #[error("at byte {offset}: nesting deeper than {limit} levels")]
    TooDeep { offset: usize, limit: usize },
    #[error(
        "incompatible protocol version: this build speaks {ours_major}.{ours_minor}, the peer sent {theirs_major}.{theirs_minor}; use a proofscope and prover built from the same major version"
    )]
    IncompatibleVersion {
        ours_major: u16,
        ours_minor: u16,
        theirs_major: u64,
        theirs_minor: u64,
    },
    #[error(
        "frame length {len} exceeds the maximum of {max} bytes (corrupt stream or not a proofscope peer)"
    )]
    FrameTooLarge { len: usize, max: usize },
    #[error(
        "at byte {offset}: event {index} (tag {tag}) has {found} field(s) after its tag, needs at least {needed}"
    )]
    /// `found` and `needed` count the elements after the tag, as docs/PROTOCOL.md lists them
    /// (in a frame header: the header's elements).
    MissingFields {
        offset: usize,
        index: usize,
        tag: u64,
        found: usize,
        needed: usize,
    },
    #[error("at byte {offset}: event {index} (tag {tag}): {message}")]
    BadPayload {
        offset: usize,
        index: usize,
        tag: u64,
        message: String,
    },
    #[error("frame body has {trailing} trailing byte(s) after its last event at byte {offset}")]
    TrailingBytes { offset: usize, trailing: usize },
    #[error("not a proofscope recording: the file does not start with the magic bytes")]
    BadMagic,
    #[error("empty recording (the writer stopped before its header)")]
    EmptyRecording,
    #[error(
        "recording format version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedRecordingVersion { found: u16, supported: u16 },
    #[error(
        "recording header flags 0x{flags:04x}: this reader knows no flags (format version 1 defines none)"
    )]
    UnknownRecordingFlags { flags: u16 },
}

/// Why an event or frame could not be encoded.
#[derive(Debug, Error)]
pub enum EncodeError {
    #[error("frame body of {len} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge { len: usize, max: usize },
    #[error("{what} value {ts} exceeds the largest encodable value (2^63 - 1)")]
    TimestampOverflow { what: &'static str, ts: u64 },
    #[error("could not serialise {what}: {message}")]
    Serialize { what: &'static str, message: String },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
