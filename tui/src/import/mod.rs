//! `proofscope import`: the logs provers already write (curio cuzk's `CUZK_TIMING`/`CUZK_NTT_H`
//! and `TIMELINE` lines, bellperson's `prover time:`) become a recording, so every view, report
//! and `diff` works on them. Each call (partition) is a proof; where the log gives only
//! durations, placement follows the pipeline's order ([`place`]) and the session's clock says
//! so. Unknown lines are counted and skipped; a known line that does not read is reported with
//! its line number and skipped, never fatal.

mod calls;
mod lines;
mod place;

use anyhow::{Context, Result, bail};
use probe_protocol::{
    Event, Hello, Marker, ProofBegin, ProofEnd, RECORDING_MAGIC, RecordingWriter, SpanBegin,
    SpanEnd, Verification,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

pub use place::Lane;

use probe_protocol::markers;

/// What an import read and made.
#[derive(Debug, Default)]
pub struct Imported {
    /// The session, ready to be framed: definitions first, then by time.
    pub events: Vec<Event>,
    pub lines: usize,
    pub known: usize,
    pub unknown: usize,
    /// `file:line: why: text`.
    pub malformed: Vec<String>,
    pub proofs: usize,
    /// Proofs placed after the previous one because the log gave no start time.
    pub unanchored: usize,
    /// Everything a reader of the report should know, malformed lines included.
    pub warnings: Vec<String>,
}

/// Whether `path` is to be read as a recording rather than imported as a log: its first bytes
/// are the recording magic or a beginning of it (an empty or cut file is a broken recording,
/// and the recording reader says how), or it starts with a byte no text log starts with.
pub fn is_recording(path: &Path) -> Result<bool> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    Ok(head[..got] == RECORDING_MAGIC[..got] || head[0] == RECORDING_MAGIC[0])
}

/// Reads the logs, in order, as one log.
pub fn import(paths: &[PathBuf]) -> Result<Imported> {
    let mut calls = calls::Calls::default();
    let mut out = Imported::default();
    for path in paths {
        let name = path.display().to_string();
        let f = std::fs::File::open(path).with_context(|| format!("opening {name}"))?;
        let mut r = BufReader::new(f);
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)
                .with_context(|| format!("reading {name}"))?
                == 0
            {
                break;
            }
            n += 1;
            // Logs mix encodings and binary noise: a line is read as far as it is text.
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            let at = calls::At {
                file: name.clone(),
                line: n,
            };
            match lines::parse(line) {
                None => out.unknown += 1,
                Some(Err(why)) => {
                    let shown: String = line.chars().take(160).collect();
                    out.malformed.push(format!("{at}: {why}: `{shown}`"));
                }
                Some(Ok(l)) => {
                    out.known += 1;
                    calls.push(l, at, lines::wall_clock(line));
                }
            }
        }
        out.lines += n;
    }
    if out.known == 0 {
        bail!(
            "{}: neither a recording nor a log with lines in a known format (CUZK_TIMING:, CUZK_NTT_H:, TIMELINE,…, `prover time:`; docs/CLI.md){}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if out.malformed.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} malformed: {}",
                    out.malformed.len(),
                    out.malformed.join("; ")
                )
            }
        );
    }
    let calls = calls.finish();
    let first_wall_ns = calls.wall_origin_ns();
    let placed = place::place(&calls, first_wall_ns);
    out.proofs = placed.len();
    out.unanchored = placed.iter().filter(|p| !p.anchored).count();
    out.warnings = calls.warnings.clone();
    for m in &out.malformed {
        out.warnings.push(format!("malformed log line {m}"));
    }
    out.warnings.push(format!(
        "imported from {} log line{} ({} known, {} unknown skipped, {} malformed): phase lengths are the log's own timers (ms); their placement inside each call is reconstructed from the pipeline's order{}",
        out.lines,
        if out.lines == 1 { "" } else { "s" },
        out.known,
        out.unknown,
        out.malformed.len(),
        if out.unanchored > 0 {
            format!(
                ", and {} of {} proofs have no start time in the log (placed one after another)",
                out.unanchored, out.proofs
            )
        } else {
            String::new()
        }
    ));
    out.events = events(paths, &placed, first_wall_ns, &out.warnings);
    Ok(out)
}

/// Interns names and threads as the probe does.
#[derive(Default)]
struct Ids {
    names: BTreeMap<String, u32>,
    threads: BTreeMap<Lane, u32>,
    defs: Vec<Event>,
}

impl Ids {
    fn name(&mut self, n: &str) -> u32 {
        if let Some(&id) = self.names.get(n) {
            return id;
        }
        let id = self.names.len() as u32 + 1;
        self.names.insert(n.to_owned(), id);
        self.defs.push(Event::NameDef {
            id,
            name: n.to_owned(),
        });
        id
    }

    fn thread(&mut self, lane: Lane) -> u32 {
        if let Some(&id) = self.threads.get(&lane) {
            return id;
        }
        let id = self.threads.len() as u32 + 1;
        self.threads.insert(lane, id);
        self.defs.push(Event::ThreadDef {
            id,
            name: lane.name(),
            os_tid: 0,
        });
        id
    }
}

fn events(
    paths: &[PathBuf],
    placed: &[place::Placed],
    first_wall_ns: Option<u64>,
    warnings: &[String],
) -> Vec<Event> {
    let mut ids = Ids::default();
    // The import's warnings travel in the recording, so its report names them too.
    let mut stated = Vec::new();
    for w in warnings {
        stated.push(Event::Marker(Box::new(Marker {
            ts: 0,
            name: ids.name(markers::WARNING),
            thread: ids.thread(Lane::Caller),
            span: None,
            text: Some(w.clone()),
        })));
    }
    // (ts, order, depth, event): at one instant ends come before begins, inner ends first.
    let mut timed: Vec<(u64, u8, i64, Event)> = Vec::new();
    let mut next_span = 1u64;
    let mut end_ts = 0;
    for (i, p) in placed.iter().enumerate() {
        let proof = i as u64 + 1;
        let base = next_span;
        next_span += p.spans.len() as u64;
        let depth = |mut j: usize| {
            let mut d = 0i64;
            while let Some(up) = p.spans[j].parent {
                d += 1;
                j = up;
            }
            d
        };
        let outer = &p.spans[0];
        timed.push((
            outer.start,
            2,
            0,
            Event::ProofBegin(Box::new(ProofBegin {
                ts: outer.start,
                proof,
                span: base,
                circuit: format!("{} [log {}]", p.label, p.lines),
                constraints: 0,
                circuits: p.circuits,
                backend: if p.gpu { "gpu" } else { "unknown" }.into(),
                synthetic_srs: false,
            })),
        ));
        for (j, s) in p.spans.iter().enumerate() {
            let name = ids.name(&s.name);
            let thread = ids.thread(s.lane);
            let span = base + j as u64;
            timed.push((
                s.start,
                3,
                depth(j),
                Event::SpanBegin(SpanBegin {
                    ts: s.start,
                    span,
                    parent: s.parent.map(|k| base + k as u64),
                    proof: Some(proof),
                    name,
                    thread,
                }),
            ));
            timed.push((
                s.end,
                0,
                -depth(j),
                Event::SpanEnd(SpanEnd { ts: s.end, span }),
            ));
            end_ts = end_ts.max(s.end);
        }
        for (at, kind, text) in &p.causes {
            let name = ids.name(&kind.cause_marker());
            let thread = ids.thread(Lane::Caller);
            timed.push((
                *at,
                4,
                0,
                Event::Marker(Box::new(Marker {
                    ts: *at,
                    name,
                    thread,
                    span: Some(base),
                    text: Some(text.clone()),
                })),
            ));
        }
        timed.push((
            outer.end,
            1,
            0,
            Event::ProofEnd(Box::new(ProofEnd {
                ts: outer.end,
                proof,
                ok: true,
                verification: Verification::NotChecked,
                error: None,
            })),
        ));
    }
    timed.sort_by_key(|(ts, order, depth, _)| (*ts, *order, *depth));
    let gpu = placed.iter().any(|p| p.gpu);
    let hello = Hello {
        protocol_major: probe_protocol::PROTOCOL_MAJOR,
        protocol_minor: probe_protocol::PROTOCOL_MINOR,
        prover_name: "imported log".into(),
        prover_version: String::new(),
        hostname: String::new(),
        session_start_unix_ns: first_wall_ns.unwrap_or(0),
        clock: "reconstructed from log timers (ms)".into(),
        backend: if gpu { "gpu" } else { "unknown" }.into(),
        backend_reason: "imported from a log".into(),
        gpu_unavailable_reason: Some("imported from a log: no GPU telemetry".into()),
        command_line: std::iter::once("proofscope import".to_owned())
            .chain(paths.iter().map(|p| p.display().to_string()))
            .collect(),
        ..Hello::default()
    };
    let mut out = vec![Event::Hello(Box::new(hello)), Event::LiveStart { ts: 0 }];
    out.append(&mut ids.defs);
    out.append(&mut stated);
    out.extend(timed.into_iter().map(|t| t.3));
    out.push(Event::Goodbye {
        ts: end_ts,
        reason: "end of the imported log".into(),
    });
    out
}

/// Events an imported session puts in one frame, as a probe's collector batches them.
pub const EVENTS_PER_FRAME: usize = 256;

/// Writes the session as a recording: frames of at most [`EVENTS_PER_FRAME`] events.
pub fn write_recording(events: &[Event], out: impl Write) -> Result<()> {
    let mut w = RecordingWriter::new(out).context("writing the recording header")?;
    for chunk in events.chunks(EVENTS_PER_FRAME) {
        let base = chunk.iter().filter_map(Event::ts).min().unwrap_or(0);
        let frame = probe_protocol::encode_frame(base, chunk).context("encoding a frame")?;
        w.write_frame(&frame).context("writing a frame")?;
    }
    w.flush().context("flushing the recording")?;
    Ok(())
}
