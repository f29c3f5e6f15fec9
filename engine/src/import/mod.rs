//! The logs provers already write (supraseal's `CUZK_TIMING`/`CUZK_NTT_H`, curio cuzk's
//! `TIMELINE` and `tracing` lines, bellperson's wrapper timers) become sessions, so every view,
//! report and `diff` works on them: `proofscope import` writes a recording, `replay LOG` reads
//! one directly, `replay REC --log LOG` joins a log to the recording made beside it, and `run`
//! reads a child's lines live ([`feed`]). Each call (partition) is a proof; where the log gives
//! only durations, placement follows the pipeline's order ([`place`]) and the session's clock
//! says so. Unknown lines are counted and skipped; a known line that does not read is named
//! once per format with its count, never fatal.

mod call_log;
mod calls;
mod emit;
pub mod feed;
pub mod lines;
mod place;
mod runs;

use anyhow::{Context, Result, bail};
use probe_protocol::{Event, Hello, RECORDING_MAGIC, RecordingWriter};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

pub use emit::LOG_NOTE;
pub use lines::{MAX_TIMER_MS, strip_ansi};
pub use place::Lane;

/// Why an imported session has no GPU or allocator samples: the views say it in these words.
pub const NO_TELEMETRY: &str = "a log carries no telemetry";

/// The `clock` of an imported session's `Hello`: its times are the log's own timers (ms),
/// placed by the pipeline's order (docs/PROTOCOL.md).
pub const IMPORTED_CLOCK: &str = "reconstructed from log timers (ms)";
/// Longest line read for its content (longer ones are cut here: a log line is not megabytes).
pub const MAX_LINE: usize = 64 << 10;

/// What the lines of a log were, counted.
#[derive(Debug, Default, Clone)]
pub struct LineCounts {
    pub lines: usize,
    pub known: usize,
    pub unknown: usize,
    /// Per format: how many did not read, and the first (`file:line: why: text`).
    pub malformed: Vec<(&'static str, usize, String)>,
    /// Known lines by the prover that prints them ([`lines::LogLine::prover`]).
    pub provers: Vec<(&'static str, usize)>,
}

impl LineCounts {
    /// Who printed the log: the provers its known lines come from, most lines first.
    pub fn prover_name(&self) -> String {
        let mut by = self.provers.clone();
        by.sort_by_key(|p| std::cmp::Reverse(p.1));
        let names: Vec<&str> = by.iter().map(|p| p.0).collect();
        if names.is_empty() {
            "a prover".to_owned()
        } else {
            names.join(" + ")
        }
    }

    fn printed_by(&mut self, prover: Option<&'static str>) {
        let Some(prover) = prover else { return };
        match self.provers.iter_mut().find(|p| p.0 == prover) {
            Some(p) => p.1 += 1,
            None => self.provers.push((prover, 1)),
        }
    }

    pub fn malformed_total(&self) -> usize {
        self.malformed.iter().map(|m| m.1).sum()
    }

    fn bad(&mut self, format: &'static str, first: impl FnOnce() -> String) {
        match self.malformed.iter_mut().find(|m| m.0 == format) {
            Some(m) => m.1 += 1,
            None => self.malformed.push((format, 1, first())),
        }
    }

    /// One warning per format that had lines that did not read.
    pub fn warnings(&self) -> Vec<String> {
        self.malformed
            .iter()
            .map(|(format, n, first)| {
                format!(
                    "{n} {format} line{} did not read (the first at {first})",
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect()
    }
}

/// What an import read and made.
#[derive(Debug, Default)]
pub struct Imported {
    /// The sessions, ready to be framed: each a `Hello`, its definitions, then by time.
    pub events: Vec<Event>,
    pub counts: LineCounts,
    pub proofs: usize,
    pub sessions: usize,
    /// Proofs placed after the previous one because the log gave no time for them.
    pub unanchored: usize,
    /// Everything a reader of the report should know, malformed lines included.
    pub warnings: Vec<String>,
}

/// A replay reads its input more than once (what it is, an index of its proofs, then the
/// replay): a pipe or FIFO would be drained by the first read and block the next open for
/// ever (`replay FIFO` hung past SIGTERM), or lose its first bytes (`replay <(cat rec)` read
/// as "not a proofscope recording"). Refused, by what the path is, before it is opened.
pub fn require_a_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).with_context(|| format!("opening {}", path.display()))?;
    let t = meta.file_type();
    // A device is read again when opened again (`/dev/zero`: an endless line, bounded and
    // stopped by SIGTERM like any input): only what one read drains is refused.
    let what = if t.is_fifo() {
        "a pipe or FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        return Ok(());
    };
    anyhow::bail!(
        "{} is {what}: a replay reads its input more than once (an index of its proofs, then the replay), so it needs a file; save it first (cat … > session.psrec)",
        path.display()
    )
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

/// What a replayed log costs a call, about: the call, its placement and its events (1.2 M
/// calls took 1.74 GB).
const CALL_BYTES: usize = 1536;

/// Reads the logs, in order, as one log, into calls; counts what the lines were. With `keep`,
/// only the latest `keep` calls are kept: the count of those forgotten is the third value.
fn read(paths: &[PathBuf], keep: Option<usize>) -> Result<(calls::Calls, LineCounts, usize)> {
    let mut calls = calls::Calls::default();
    let mut counts = LineCounts::default();
    let mut forgotten = 0;
    for path in paths {
        let name = path.display().to_string();
        let file: std::sync::Arc<str> = name.as_str().into();
        let f = std::fs::File::open(path).with_context(|| format!("opening {name}"))?;
        let mut r = BufReader::new(f);
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            buf.clear();
            if read_line(&mut r, &mut buf).with_context(|| format!("reading {name}"))? == 0 {
                break;
            }
            n += 1;
            let at = calls::At {
                file: file.clone(),
                line: n,
            };
            file_line(&mut calls, &mut counts, &buf, at, None);
            if let Some(k) = keep
                && calls.calls.held() > k + k / 4
            {
                forgotten += calls.forget_oldest(k);
            }
        }
        counts.lines += n;
    }
    calls.finish();
    if let Some(k) = keep {
        forgotten += calls.forget_oldest(k);
    }
    Ok((calls, counts, forgotten))
}

/// Reads one line into `buf`, at most [`MAX_LINE`] bytes of it (the rest is skipped, so a
/// file without newlines costs a line's worth of memory); returns the bytes read.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        // A headless run caught SIGINT or SIGTERM: stop, even inside a line that never ends
        // (`replay /dev/zero`).
        if let Some(sig) = crate::signals::caught() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                format!("interrupted by {}", crate::signals::name(sig)),
            ));
        }
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        r.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

/// Files one raw line: parsed, counted, added to the calls. `wall` overrides the logger's time
/// stamp (`run` stamps each line as it arrives).
fn file_line(
    calls: &mut calls::Calls,
    counts: &mut LineCounts,
    raw: &[u8],
    at: calls::At,
    wall: Option<std::time::SystemTime>,
) {
    // Logs mix encodings and binary noise: a line is read as far as it is text.
    let text = String::from_utf8_lossy(raw);
    let text = text.trim_end_matches(['\n', '\r']);
    match lines::parse(text) {
        None => counts.unknown += 1,
        Some(Err(m)) => {
            let shown: String = text.chars().take(160).collect();
            counts.bad(m.format, || format!("{at}: {}: `{shown}`", m.why));
        }
        Some(Ok(p)) => {
            counts.known += 1;
            counts.printed_by(p.line.prover());
            // A line stamped as it arrived is exact; a logger's stamp as fine as it is written.
            let res = if wall.is_some() { 0 } else { p.wall_res_ns };
            calls.push(p.line, at, wall.or(p.wall), res);
        }
    }
}

/// Reads the logs, in order, as one log; a daemon restart in it starts a new session.
pub fn import(paths: &[PathBuf]) -> Result<Imported> {
    import_calls(paths, None)
}

/// [`import`] within `budget` bytes (a replay's `--max-mib`): past about a quarter of it in
/// calls, the oldest are forgotten and the session holds the latest — as a replayed
/// recording keeps its latest proofs — and a warning says how many were not kept.
pub fn import_within(paths: &[PathBuf], budget: usize) -> Result<Imported> {
    import_calls(paths, Some((budget / 4 / CALL_BYTES).max(16)))
}

fn import_calls(paths: &[PathBuf], keep: Option<usize>) -> Result<Imported> {
    let (calls, counts, forgotten) = read(paths, keep)?;
    if counts.known == 0 {
        bail!(
            "{}: neither a recording nor a log with lines in a known format (CUZK_TIMING:, CUZK_NTT_H:, TIMELINE,…, `prover time:`, `GPU prove time:`, cuzk's gpu_ms=…; docs/CLI.md){}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if counts.malformed.is_empty() {
                String::new()
            } else {
                format!("; {}", counts.warnings().join("; "))
            }
        );
    }
    let origins: Vec<Option<u64>> = calls.segments.iter().map(|s| s.wall_origin_ns()).collect();
    let placed = place::place(&calls, &origins);
    let mut out = Imported {
        proofs: placed.len(),
        sessions: calls.segments.len().max(1),
        unanchored: placed.iter().filter(|p| !p.anchored).count(),
        ..Imported::default()
    };
    out.warnings = calls.warnings.clone();
    if forgotten > 0 {
        out.warnings.push(format!(
            "the log's first {forgotten} calls were not kept: within --max-mib a replay keeps the latest {} (as it keeps a recording's latest proofs)",
            keep.unwrap_or(0)
        ));
    }
    if calls.warnings_past > 0 {
        out.warnings.push(format!(
            "… and {} more warnings about how the log's lines group into calls",
            calls.warnings_past
        ));
    }
    if calls.forgotten_lines > 0 {
        out.warnings.push(format!(
            "{} late line{} (`async_dealloc_ms`) belonged to calls no longer kept",
            calls.forgotten_lines,
            if calls.forgotten_lines == 1 { "" } else { "s" }
        ));
    }
    out.warnings.extend(counts.warnings());
    out.warnings.push(summary(&counts, &out));
    // Placed: what the calls held is not needed any more, and its memory serves the events.
    drop(calls);
    // Grouped once: a filter per session was quadratic in a log of many restarts.
    let mut by_segment: Vec<Vec<&place::Placed>> = vec![Vec::new(); out.sessions];
    for p in &placed {
        if let Some(v) = by_segment.get_mut(p.segment) {
            v.push(p);
        }
    }
    let who = counts.prover_name();
    for ((seg, origin), mine) in origins.iter().enumerate().zip(by_segment) {
        session_events(
            &mut out.events,
            paths,
            seg,
            *origin,
            &mine,
            &out.warnings,
            &who,
        );
    }
    out.counts = counts;
    Ok(out)
}

/// The import's sentence for the report: what was read and how the times were made.
fn summary(counts: &LineCounts, out: &Imported) -> String {
    format!(
        "imported from {} log line{} ({} known, {} unknown skipped, {} malformed): phase lengths are the log's own timers (ms); their placement inside each call is reconstructed from the pipeline's order{}{}",
        counts.lines,
        if counts.lines == 1 { "" } else { "s" },
        counts.known,
        counts.unknown,
        counts.malformed_total(),
        if out.unanchored > 0 {
            format!(
                ", and {} of {} proofs have no start time in the log (placed one after another)",
                out.unanchored, out.proofs
            )
        } else {
            String::new()
        },
        if out.sessions > 1 {
            format!("; the prover restarted: {} sessions", out.sessions)
        } else {
            String::new()
        }
    )
}

/// One session of an imported log: its `Hello`, definitions, warnings, proofs, goodbye.
fn session_events(
    out: &mut Vec<Event>,
    paths: &[PathBuf],
    segment: usize,
    origin: Option<u64>,
    placed: &[&place::Placed],
    warnings: &[String],
    prover: &str,
) {
    let mut e = emit::Emitter::standalone();
    // The import's warnings travel in the recording, so its report names them too.
    let stated: Vec<Event> = warnings.iter().map(|w| e.warning(0, w)).collect();
    let timed = emit::proofs(&mut e, placed.iter().copied());
    let end_ts = timed.iter().map(|t| t.0).max().unwrap_or(0);
    let gpu = placed.iter().any(|p| p.gpu);
    let mut head = vec![
        Event::Hello(Box::new(imported_hello(
            paths, segment, origin, gpu, prover,
        ))),
        Event::LiveStart { ts: 0 },
    ];
    head.append(&mut e.take_defs());
    head.extend(stated);
    // The session is made where its events already lie (the head goes in front of them), and
    // the first session becomes `out` rather than a copy of it.
    let mut session = emit::in_order(timed);
    session.splice(0..0, head);
    session.push(Event::Goodbye {
        ts: end_ts,
        reason: "end of the imported log".into(),
    });
    if out.is_empty() {
        *out = session;
    } else {
        out.append(&mut session);
    }
}

/// The `Hello` of an imported session (docs/PROTOCOL.md, "Imported sessions"): no process
/// (pid 0), no host; time 0 at `origin` on the wall clock when the log says; the prover named
/// by the lines it printed ("curio cuzk (its log)").
fn imported_hello(
    paths: &[PathBuf],
    segment: usize,
    origin: Option<u64>,
    gpu: bool,
    prover: &str,
) -> Hello {
    Hello {
        protocol_major: probe_protocol::PROTOCOL_MAJOR,
        protocol_minor: probe_protocol::PROTOCOL_MINOR,
        prover_name: format!("{prover} (its log)"),
        prover_version: if segment > 0 {
            format!("after restart {segment}")
        } else {
            String::new()
        },
        hostname: String::new(),
        session_start_unix_ns: origin.unwrap_or(0),
        clock: IMPORTED_CLOCK.into(),
        backend: if gpu { "gpu" } else { "unknown" }.into(),
        backend_reason: "imported from a log".into(),
        gpu_unavailable_reason: Some(NO_TELEMETRY.into()),
        command_line: std::iter::once("proofscope import".to_owned())
            .chain(paths.iter().map(|p| p.display().to_string()))
            .collect(),
        ..Hello::default()
    }
}

/// The session a log is joined to: its time 0 on the wall clock, the thread that calls the
/// prover (its main thread as the probe defined it), and that thread's large frees (start,
/// end), by start.
#[derive(Debug, Clone, Default)]
pub struct JoinTo {
    pub origin_ns: u64,
    pub caller: Option<u32>,
    pub caller_frees: Vec<(u64, u64)>,
}

/// A log joined to a session recorded beside it (`replay REC --log LOG`): its calls placed by
/// their wall clock against the session's time 0, the caller's lane on the session's calling
/// thread when known, and a call placed by a coarse time stamp settled within its resolution
/// ([`place::settle_end`]). Events without a `Hello`, ids clear of the probe's.
pub fn join(paths: &[PathBuf], to: &JoinTo) -> Result<Imported> {
    let (calls, counts, _) = read(paths, None)?;
    if counts.known == 0 {
        bail!(
            "{}: no line in a known format to join (docs/CLI.md, \"Accepted log formats\")",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let origins = vec![Some(to.origin_ns); calls.segments.len().max(1)];
    let mut placed = place::place(&calls, &origins);
    for p in &mut placed {
        place::settle_end(p, &to.caller_frees);
    }
    let mut e = emit::Emitter::joined();
    if let Some(t) = to.caller {
        e.map_lane(Lane::Caller, t);
    }
    let mut out = Imported {
        proofs: placed.len(),
        sessions: 1,
        unanchored: placed.iter().filter(|p| !p.anchored).count(),
        ..Imported::default()
    };
    out.warnings = calls.warnings.clone();
    out.warnings.extend(counts.warnings());
    if out.unanchored > 0 {
        out.warnings.push(format!(
            "{} of {} calls of the log have no wall-clock time to join them by: placed one after another",
            out.unanchored, out.proofs
        ));
    }
    if let Some(res) = placed.iter().map(|p| p.end_res_ns).filter(|&r| r > 0).max() {
        out.warnings.push(format!(
            "the log's time stamps are as fine as {}: each call ends where its calling thread was not inside a free within that much after its stamp",
            crate::format::dur(res)
        ));
    }
    let timed = emit::proofs(&mut e, &placed);
    let stated: Vec<Event> = out.warnings.iter().map(|w| e.warning(0, w)).collect();
    out.events = e.take_defs();
    out.events.extend(stated);
    out.events.append(&mut emit::in_order(timed));
    out.counts = counts;
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/PROTOCOL.md §4.1 "Imported sessions": the `Hello` of a session made from a log.
    #[test]
    fn an_imported_session_says_what_its_hello_fields_mean() {
        let log = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings/logs/cuzk-c2-3-partitions.log");
        let imp = import(std::slice::from_ref(&log)).unwrap();
        let Some(Event::Hello(h)) = imp.events.first() else {
            panic!("no Hello first: {:?}", imp.events.first());
        };
        assert_eq!(h.pid, 0);
        assert_eq!(h.clock, IMPORTED_CLOCK);
        assert_eq!(h.clock, "reconstructed from log timers (ms)");
        assert_eq!(h.large_block_threshold, 0);
        assert_eq!(h.stack_threshold, 0);
        assert!(h.hostname.is_empty());
        assert_eq!(h.backend, "gpu");
        assert_eq!(h.gpu_unavailable_reason.as_deref(), Some(NO_TELEMETRY));
        assert_eq!(h.command_line[0], "proofscope import");
        assert_eq!(h.command_line[1], log.display().to_string());
        // Its TIMELINE lines (offsets from the daemon's start) carry no stamp of their own:
        // the daemon's start is unknown, and said so by 0.
        assert_eq!(h.session_start_unix_ns, 0);
        assert!(
            !imp.events
                .iter()
                .any(|e| matches!(e, Event::Alloc(_) | Event::Release(_)))
        );
    }
}
