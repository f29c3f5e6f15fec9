//! Each log line of a launched prover, placed by the write that carried it (protocol
//! `OutputWrite`: the prover's clock, where the write happened) rather than by its arrival at
//! the relay. On a loaded machine the relay runs late: stamped on arrival, a call's end slid
//! past the frees the probe had timed exactly, and the same 604 MB free was explained three
//! ways in ten proofs.
//!
//! The relay tells each line's offset in its stream; the probe tells, for each write, which
//! bytes of the stream it carried. A line waits here until the write that carried its first
//! byte is known, or until the prover's session has gone a second past the line's arrival
//! without it (a write the probe did not see: glibc's flush at exit, another process sharing
//! the pipe), or the session ended, or there is none: then the line is placed by its arrival,
//! and counted. A stamp later than the line's arrival is impossible — the stream's offsets no
//! longer match the pipe's (bytes written where the probe could not see them) — and from then
//! on that stream is placed by arrival.

use super::channel::Line;
use crate::import::feed::{LogFeed, Stream};
use crate::model::Session;
use probe_protocol::OutputStream;
use std::collections::VecDeque;
use std::time::{Duration, UNIX_EPOCH};

/// How far past a line's arrival the session must have gone before its write is taken to be
/// one the probe did not see.
const WAIT_NS: u64 = 1_000_000_000;
/// A stamp may be this much later than the arrival (two clocks read on one machine).
const SLACK_NS: u64 = 50_000_000;
/// Lines held at most per stream; past this the oldest are placed by arrival.
const MAX_PENDING: usize = 100_000;

/// Where the lines' stamps came from, for the report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StampCounts {
    /// Placed by the write that carried them.
    pub by_write: u64,
    /// Placed by their arrival at the relay.
    pub by_arrival: u64,
}

/// What the lines are joined to now.
#[derive(Debug, Clone, Copy)]
pub enum Joined<'a> {
    /// The followed process's probe session (it said hello).
    Probe(&'a Session),
    /// No hello yet: lines wait.
    Waiting,
    /// No probe will answer: lines go by arrival.
    NoProbe,
}

#[derive(Debug, Default)]
pub struct Stamper {
    pending: [VecDeque<Line>; 2],
    /// The stream's offsets stopped matching the pipe's.
    misaligned: [bool; 2],
    pub counts: StampCounts,
}

fn index(stderr: bool) -> usize {
    usize::from(stderr)
}

impl Stamper {
    pub fn push(&mut self, line: Line) {
        self.pending[index(line.stderr)].push_back(line);
    }

    pub fn is_empty(&self) -> bool {
        self.pending.iter().all(VecDeque::is_empty)
    }

    /// Feeds `feed` every line whose place is known now, in order per stream: by its write in
    /// the followed process's session, else by arrival once waiting is pointless. `flush`:
    /// nothing more will come, every line goes now.
    pub fn release(&mut self, joined: Joined<'_>, flush: bool, feed: &mut LogFeed) {
        let Stamper {
            pending,
            misaligned,
            counts,
        } = self;
        for i in 0..2 {
            while let Some(line) = pending[i].front() {
                let Some(place) = place(&mut misaligned[i], counts, line, joined, flush) else {
                    break;
                };
                let line = pending[i].pop_front().expect("the front was there");
                feed_at(feed, &line, place);
            }
            while pending[i].len() > MAX_PENDING {
                let line = pending[i].pop_front().expect("over the bound");
                counts.by_arrival += 1;
                feed_at(feed, &line, line.arrival_ns);
            }
        }
    }

    /// A sentence for the report when some lines were placed by arrival.
    pub fn summary(&self) -> Option<String> {
        let c = self.counts;
        if c.by_arrival == 0 {
            return None;
        }
        let why = if c.by_write == 0 {
            "the prover's probe stamped none of its writes (no probe, or one older than protocol 1.5)"
        } else {
            "writes the probe could not see (another process on the same output, glibc's flush at exit, a raw system call)"
        };
        Some(format!(
            "{} of {} log lines were placed by their arrival at the viewer, not by the prover's own write: {why}; on a loaded machine their calls may be placed late",
            c.by_arrival,
            c.by_arrival + c.by_write
        ))
    }
}

/// Hands `line` to the feed as written at `unix_ns`.
fn feed_at(feed: &mut LogFeed, line: &Line, unix_ns: u64) {
    let stream = if line.stderr {
        Stream::Stderr
    } else {
        Stream::Stdout
    };
    feed.line(
        &line.bytes,
        stream,
        UNIX_EPOCH + Duration::from_nanos(unix_ns),
    );
}

/// Where `line` goes (Unix ns), or `None` to wait for its write.
fn place(
    misaligned: &mut bool,
    counts: &mut StampCounts,
    line: &Line,
    joined: Joined<'_>,
    flush: bool,
) -> Option<u64> {
    let by_arrival = |c: &mut StampCounts| {
        c.by_arrival += 1;
        Some(line.arrival_ns)
    };
    let session = match joined {
        Joined::Probe(s) if !*misaligned => s.hello().map(|h| (s, h)),
        Joined::Waiting if !flush && !*misaligned => return None,
        _ => None,
    };
    let Some((s, hello)) = session else {
        return by_arrival(counts);
    };
    let origin = hello.session_start_unix_ns;
    let stream = if line.stderr {
        OutputStream::Stderr
    } else {
        OutputStream::Stdout
    };
    if let Some(w) = s.output_write_at(stream, line.offset) {
        let at = origin.saturating_add(w.ts);
        if at > line.arrival_ns.saturating_add(SLACK_NS) {
            *misaligned = true;
            return by_arrival(counts);
        }
        counts.by_write += 1;
        return Some(at);
    }
    let arrived = line.arrival_ns.saturating_sub(origin);
    let gone_past = s.now() > arrived.saturating_add(WAIT_NS);
    if flush || gone_past || s.goodbye().is_some() {
        return by_arrival(counts);
    }
    None
}
