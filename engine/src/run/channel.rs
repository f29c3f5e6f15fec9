//! What the relay process tells the viewer, one datagram per message over a Unix datagram
//! socket pair (reliable and message-bounded on Linux). The relay sends without blocking: when
//! the viewer is slow or stopped, batches wait in the relay's bounded backlog (16 MiB), and
//! past it a batch of lines is dropped and counted, never the child's output (that went to its
//! destination already).
//!
//! A message is a kind byte and its fields, little-endian:
//! - `1 Started`: the child's pid (u32).
//! - `2 Lines`: the stream (0 stdout, 1 stderr), then lines, each: arrival time (Unix ns, u64),
//!   the stream's bytes before the line (u64), length (u32), bytes.
//! - `3 Dropped`: lines dropped so far (u64), in total.
//! - `4 Exited`: exit code (i32, -1 when killed) and signal (i32, 0 when it exited).
//! - `5 Failed`: the exit status to report (u8) and why (UTF-8): the child could not start.

/// Lines of one datagram at most this many bytes (well under a Unix socket's send buffer).
pub const BATCH_BYTES: usize = 48 << 10;

/// A line as the relay saw it arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub arrival_ns: u64,
    /// Bytes of the stream before this line: where its first byte is.
    pub offset: u64,
    pub stderr: bool,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    Started { pid: u32 },
    Lines(Vec<Line>),
    Dropped { lines: u64 },
    Exited { code: i32, signal: i32 },
    Failed { status: u8, why: String },
}

/// One stream's lines, filled until [`BATCH_BYTES`] and then sent.
#[derive(Debug)]
pub struct Batch {
    buf: Vec<u8>,
    pub lines: u64,
}

impl Batch {
    pub fn new(stderr: bool) -> Batch {
        let mut buf = Vec::with_capacity(BATCH_BYTES + 1024);
        buf.push(2);
        buf.push(u8::from(stderr));
        Batch { buf, lines: 0 }
    }

    /// Adds a line (cut to fit a batch); `false` when the batch is full and must be sent first.
    pub fn push(&mut self, arrival_ns: u64, offset: u64, line: &[u8], max_line: usize) -> bool {
        let line = &line[..line.len().min(max_line).min(BATCH_BYTES - 24)];
        if self.lines > 0 && self.buf.len() + 20 + line.len() > BATCH_BYTES {
            return false;
        }
        self.buf.extend_from_slice(&arrival_ns.to_le_bytes());
        self.buf.extend_from_slice(&offset.to_le_bytes());
        self.buf
            .extend_from_slice(&(line.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(line);
        self.lines += 1;
        true
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Empties it for the next lines.
    pub fn clear(&mut self) {
        self.buf.truncate(2);
        self.lines = 0;
    }
}

pub fn encode(m: &Msg) -> Vec<u8> {
    let mut out = Vec::new();
    match m {
        Msg::Started { pid } => {
            out.push(1);
            out.extend_from_slice(&pid.to_le_bytes());
        }
        Msg::Lines(lines) => {
            let mut b = Batch::new(lines.first().is_some_and(|l| l.stderr));
            for l in lines {
                b.push(l.arrival_ns, l.offset, &l.bytes, usize::MAX);
            }
            out = b.buf;
        }
        Msg::Dropped { lines } => {
            out.push(3);
            out.extend_from_slice(&lines.to_le_bytes());
        }
        Msg::Exited { code, signal } => {
            out.push(4);
            out.extend_from_slice(&code.to_le_bytes());
            out.extend_from_slice(&signal.to_le_bytes());
        }
        Msg::Failed { status, why } => {
            out.push(5);
            out.push(*status);
            out.extend_from_slice(why.as_bytes());
        }
    }
    out
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A message; `None` for bytes that are no message (never a panic).
pub fn decode(b: &[u8]) -> Option<Msg> {
    Some(match *b.first()? {
        1 => Msg::Started { pid: u32_at(b, 1)? },
        2 => {
            let stderr = *b.get(1)? == 1;
            let mut lines = Vec::new();
            let mut at = 2;
            while at < b.len() {
                let arrival_ns = u64_at(b, at)?;
                let offset = u64_at(b, at + 8)?;
                let len = u32_at(b, at + 16)? as usize;
                let bytes = b.get(at + 20..at + 20 + len)?.to_vec();
                lines.push(Line {
                    arrival_ns,
                    offset,
                    stderr,
                    bytes,
                });
                at += 20 + len;
            }
            Msg::Lines(lines)
        }
        3 => Msg::Dropped {
            lines: u64_at(b, 1)?,
        },
        4 => Msg::Exited {
            code: u32_at(b, 1)? as i32,
            signal: u32_at(b, 5)? as i32,
        },
        5 => Msg::Failed {
            status: *b.get(1)?,
            why: String::from_utf8_lossy(b.get(2..)?).into_owned(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_and_garbage_is_no_message() {
        let lines = Msg::Lines(vec![
            Line {
                arrival_ns: 7,
                offset: 0,
                stderr: true,
                bytes: b"CUZK_TIMING: prep_msm_ms=1".to_vec(),
            },
            Line {
                arrival_ns: 9,
                offset: 27,
                stderr: true,
                bytes: vec![0xff, 0, 1],
            },
        ]);
        for m in [
            Msg::Started { pid: 42 },
            lines,
            Msg::Dropped { lines: 3 },
            Msg::Exited {
                code: -1,
                signal: 9,
            },
            Msg::Failed {
                status: 127,
                why: "nope: not found".into(),
            },
        ] {
            assert_eq!(decode(&encode(&m)), Some(m.clone()), "{m:?}");
        }
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[2, 0, 1, 2, 3]), None);
        assert_eq!(decode(&[99]), None);
    }

    #[test]
    fn a_batch_stays_under_its_size_and_cuts_a_long_line() {
        let mut b = Batch::new(false);
        let line = vec![b'x'; 40 << 10];
        assert!(b.push(1, 0, &line, usize::MAX));
        assert!(!b.push(2, 0, &line, usize::MAX), "full");
        assert!(b.bytes().len() <= BATCH_BYTES);
        b.clear();
        assert!(b.push(3, 0, &vec![b'y'; 1 << 20], 64 << 10));
        assert!(b.bytes().len() <= BATCH_BYTES);
    }
}
