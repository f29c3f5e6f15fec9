//! One log line → what it says, for the line formats operators' provers print today
//! (docs/CLI.md, "Accepted log formats"; the format strings with file and line are in the
//! shared domain notes). A line is found by its marker anywhere in it, so whatever prefix the
//! logger adds (timestamps, levels, `[pid]`, a Go-style `2026/11/30 12:00:01`) does not
//! matter; the prefix's wall-clock time is kept when it has one. ANSI colours
//! (tracing-subscriber on a terminal) are stripped, and fil_logger's JSON lines are read
//! through their message and time stamp.

use std::time::{Duration, SystemTime};

/// A timer's key (`prep_msm_ms`): short, so kept inline rather than one allocation per key
/// per line (a tenth of an import's time went to allocating and freeing them).
pub type Key = compact_str::CompactString;

/// What a known line says.
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine {
    /// `CUZK_TIMING: key=value …` (milliseconds; `gpu_tid` and `num_circuits` are counts).
    Timing(Vec<(Key, u64)>),
    /// A `CUZK_TIMING:` line with no timer in it (`set pool release threshold to MAX on gpu 0`,
    /// `d_a_cache allocated 128 MiB on gpu 0`, `prestage_setup=ok …`, `host_register=…`): what
    /// the prover said, a note on its call.
    Info(String),
    /// `CUZK_NTT_H: key=valuems … total=valuems`: the inside of one `ntt_msm_h`.
    NttH(Vec<(Key, u64)>),
    /// `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`.
    /// (Job ids and details are short: kept inline, a heap allocation each was a line's
    /// largest cost after the parse.)
    Timeline {
        offset_ms: u64,
        event: TimelineEvent,
        job: Key,
        detail: Key,
    },
    /// A wrapper timer around a proving call: what the caller measured.
    Wrapper(Wrapper, Duration),
    /// Synthesis before the call (`synthesis time: …`, `… synthesis complete synth_ms=…`).
    Synthesis(Duration),
    /// A job's totals over its partitions (`Phase 7: all partitions complete …`,
    /// `FIN_TIMING …`): a note on the job's last call.
    JobTotals(String, Vec<(Key, u64)>),
}

impl LogLine {
    /// The prover that prints this line, where only one does (a synthesis timer is printed by
    /// both bellperson and cuzk).
    pub fn prover(&self) -> Option<&'static str> {
        match self {
            LogLine::Timing(_)
            | LogLine::Info(_)
            | LogLine::NttH(_)
            | LogLine::Timeline { .. }
            | LogLine::JobTotals(..)
            | LogLine::Wrapper(Wrapper::GpuMs, _) => Some("curio cuzk"),
            LogLine::Wrapper(Wrapper::GpuProveTime | Wrapper::ProverTime, _) => Some("bellperson"),
            LogLine::Synthesis(_) => None,
        }
    }
}

/// Which wrapper timer a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wrapper {
    /// bellperson's `GPU prove time: …` (around the GPU call alone).
    GpuProveTime,
    /// cuzk's `partition GPU prove complete gpu_ms=…`, `GPU prove complete gpu_ms=…`,
    /// `GPU_TIMING … gpu_ms=…`.
    GpuMs,
    /// bellperson's `prover time: …` (around the whole proof).
    ProverTime,
}

impl Wrapper {
    pub fn label(self) -> &'static str {
        match self {
            Wrapper::GpuProveTime => "`GPU prove time`",
            Wrapper::GpuMs => "`gpu_ms`",
            Wrapper::ProverTime => "`prover time`",
        }
    }
}

/// The events of curio cuzk's `TIMELINE` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineEvent {
    SynthStart,
    SynthEnd,
    GpuQueue,
    GpuPickup,
    GpuStart,
    GpuEnd,
    /// Before curio PR 1043: a job handed to the GPU channel (nothing to place).
    ChanSend,
}

impl TimelineEvent {
    fn parse(s: &str) -> Option<TimelineEvent> {
        Some(match s {
            "SYNTH_START" => TimelineEvent::SynthStart,
            "SYNTH_END" => TimelineEvent::SynthEnd,
            "GPU_QUEUE" => TimelineEvent::GpuQueue,
            "GPU_PICKUP" => TimelineEvent::GpuPickup,
            "GPU_START" => TimelineEvent::GpuStart,
            "GPU_END" => TimelineEvent::GpuEnd,
            "CHAN_SEND" => TimelineEvent::ChanSend,
            _ => return None,
        })
    }
}

/// A line this importer knows by its marker but cannot read: the format, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub format: &'static str,
    pub why: String,
}

/// A known line, with the wall-clock time its logger stamped on it (when it did).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub line: LogLine,
    pub wall: Option<SystemTime>,
    /// How fine that time stamp is (1 ms for `.123Z`): the line was printed within this
    /// much after `wall`.
    pub wall_res_ns: u64,
}

/// Longest number of milliseconds a log timer may say: a year. A larger value is a corrupt
/// line, not a timer (arithmetic on it would overflow or mean nothing).
pub const MAX_TIMER_MS: u64 = 366 * 86_400_000;

/// Reads one line: `None` for a line in no known format, `Some(Err)` for a known marker
/// followed by something else.
pub fn parse(raw: &str) -> Option<Result<Parsed, Malformed>> {
    let clean = strip_ansi(raw);
    // Most lines of a busy log are none of ours: they are told so before anything is copied
    // or a time stamp is read (`cargo bench -p proofscope --bench relay`).
    if let Some((msg, wall, stamp)) = json_message(&clean) {
        let line = parse_text(&msg)?;
        return Some(line.map(|line| Parsed {
            line,
            wall,
            wall_res_ns: wall.map_or(0, |_| resolution_ns(&stamp)),
        }));
    }
    let line = parse_text(&clean)?;
    let wall = wall_clock(&clean);
    let stamp = clean.trim_start().trim_start_matches('[');
    Some(line.map(|line| Parsed {
        line,
        wall,
        wall_res_ns: wall.map_or(0, |_| resolution_ns(stamp)),
    }))
}

/// Where `$marker` (a literal) ends in `$line`: memchr's searcher, built once per call site.
/// `str::find` built a two-way searcher per line and marker: a fifth of a line's cost when
/// every line was tried against every marker (callgrind, 2026-12-02).
macro_rules! after {
    ($line:expr, $marker:literal) => {{
        static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new($marker));
        let line: &str = $line;
        FINDER
            .find(line.as_bytes())
            .map(|i| &line[i + $marker.len()..])
    }};
}

/// Whether `$line` contains `$marker`, as [`after!`] finds it.
macro_rules! has {
    ($line:expr, $marker:literal) => {
        after!($line, $marker).is_some()
    };
}

/// The line's content once its logger's decoration is gone.
fn parse_text(line: &str) -> Option<Result<LogLine, Malformed>> {
    if let Some(rest) = after!(line, "CUZK_TIMING:") {
        return Some(timing(rest));
    }
    if let Some(rest) = after!(line, "CUZK_NTT_H:") {
        return Some(
            pairs(rest, Unit::MsSuffix)
                .map(LogLine::NttH)
                .map_err(|why| bad("CUZK_NTT_H:", why)),
        );
    }
    if let Some(rest) = after!(line, "TIMELINE,") {
        return Some(timeline(rest).map_err(|why| bad("TIMELINE", why)));
    }
    if let Some(rest) = after!(line, "GPU prove time:") {
        return Some(wrapper(rest, Wrapper::GpuProveTime, "GPU prove time:"));
    }
    if let Some(rest) = after!(line, "prover time:") {
        return Some(wrapper(rest, Wrapper::ProverTime, "prover time:"));
    }
    if let Some(rest) = after!(line, "synthesis time:") {
        return Some(
            duration(rest)
                .map(LogLine::Synthesis)
                .map_err(|why| bad("synthesis time:", why)),
        );
    }
    cuzk_tracing(line)
}

/// cuzk's `tracing` lines (engine.rs, pipeline.rs): the wrapper and synthesis timers and the
/// job totals, read by their fields.
fn cuzk_tracing(line: &str) -> Option<Result<LogLine, Malformed>> {
    let ms = |key: &str| field_ms(line, key);
    if has!(line, "Phase 7: all partitions complete") || has!(line, "FIN_TIMING") {
        let what = if has!(line, "FIN_TIMING") {
            "FIN_TIMING"
        } else {
            "Phase 7"
        };
        let fields = ms_fields(line);
        if fields.is_empty() {
            return Some(Err(bad(what, "no key=value timers".into())));
        }
        return Some(Ok(LogLine::JobTotals(what.into(), fields)));
    }
    if has!(line, "GPU prove complete") || has!(line, "GPU_TIMING") {
        return Some(match ms("gpu_ms")? {
            Ok(v) => Ok(LogLine::Wrapper(Wrapper::GpuMs, Duration::from_millis(v))),
            Err(why) => Err(bad("gpu_ms=", why)),
        });
    }
    if has!(line, "synthesis complete") {
        return Some(match ms("synth_ms")? {
            Ok(v) => Ok(LogLine::Synthesis(Duration::from_millis(v))),
            Err(why) => Err(bad("synth_ms=", why)),
        });
    }
    None
}

fn bad(format: &'static str, why: String) -> Malformed {
    Malformed { format, why }
}

/// Removes ANSI escape sequences (`ESC [ … letter`) and other lone escapes.
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\x1b') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out.into()
}

/// fil_logger's JSON form: `{"level":…,"msg"|"message":…,"ts"|"timestamp"|"time":…}`, also
/// tracing-subscriber's JSON (`"fields":{"message":…}`).
fn json_message(line: &str) -> Option<(String, Option<SystemTime>, String)> {
    let t = line.trim();
    if !t.starts_with('{') {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    let o = v.as_object()?;
    let msg = ["msg", "message"]
        .iter()
        .find_map(|k| o.get(*k)?.as_str().map(str::to_owned))
        .or_else(|| Some(o.get("fields")?.get("message")?.as_str()?.to_owned()))?;
    // Fields beside the message (`gpu_ms` in a structured event) travel with it.
    let extra: Vec<String> = o
        .get("fields")
        .and_then(|f| f.as_object())
        .into_iter()
        .flatten()
        .chain(o.iter())
        .filter(|(k, v)| k.ends_with("_ms") && v.is_number())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let stamp = ["ts", "timestamp", "time"]
        .iter()
        .find_map(|k| o.get(*k)?.as_str())
        .unwrap_or("");
    let wall = wall_clock(stamp);
    let text = if extra.is_empty() {
        msg
    } else {
        format!("{msg} {}", extra.join(" "))
    };
    Some((text, wall, stamp.to_owned()))
}

/// How fine a time stamp at the start of `s` is: 10^-digits s for its fractional seconds
/// (`12:00:01.123` → 1 ms), 1 s without them.
fn resolution_ns(s: &str) -> u64 {
    let head = head(s, 40);
    // The seconds' fraction: the digits after the first '.' that follows a time `hh:mm:ss`.
    let Some(colon) = head.rfind(':') else {
        return 1_000_000_000;
    };
    let rest = &head[colon..];
    let digits = rest.find('.').map_or(0, |dot| {
        rest[dot + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count()
    });
    10u64.pow(9u32.saturating_sub(digits.min(9) as u32))
}

/// The first `n` characters of `s`.
fn head(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// How a timer's value is written.
#[derive(Clone, Copy)]
enum Unit {
    /// A bare number of ms (`prep_msm_ms=336`).
    Bare,
    /// With its unit (`total=165ms`).
    MsSuffix,
}

/// A timer's value, range-checked.
fn ms_value(k: &str, v: &str) -> Result<u64, String> {
    let n = v
        .parse::<u64>()
        .map_err(|_| format!("`{k}={v}`: `{v}` is not a whole number"))?;
    if n > MAX_TIMER_MS {
        return Err(format!("`{k}={v}`: {n} ms is more than a year"));
    }
    Ok(n)
}

/// `key=123 key=45` (or `key=45ms`): at least one pair, every value a whole number.
fn pairs(rest: &str, unit: Unit) -> Result<Vec<(Key, u64)>, String> {
    let mut out = Vec::new();
    for tok in rest.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| format!("`{tok}` is not key=value"))?;
        let v = match unit {
            Unit::Bare => v,
            Unit::MsSuffix => v
                .strip_suffix("ms")
                .ok_or_else(|| format!("`{tok}`: expected a value in ms (e.g. {k}=12ms)"))?,
        };
        if k.is_empty() {
            return Err(format!("`{tok}` has no key"));
        }
        out.push((Key::from(k), ms_value(k, v)?));
    }
    if out.is_empty() {
        return Err("no key=value pairs".into());
    }
    Ok(out)
}

/// A `CUZK_TIMING:` line: timers when every token is `key=number`; a note when it holds no
/// timer (no `…_ms=` key); malformed when a timer's value does not read.
fn timing(rest: &str) -> Result<LogLine, Malformed> {
    match pairs(rest, Unit::Bare) {
        Ok(p) => Ok(LogLine::Timing(p)),
        Err(why) => {
            let has_timer = rest
                .split_whitespace()
                .any(|t| t.split_once('=').is_some_and(|(k, _)| k.ends_with("_ms")));
            if has_timer || rest.trim().is_empty() {
                Err(bad("CUZK_TIMING:", why))
            } else {
                Ok(LogLine::Info(rest.trim().to_owned()))
            }
        }
    }
}

fn timeline(rest: &str) -> Result<LogLine, String> {
    let mut f = rest.trim_end().splitn(4, ',');
    let (Some(offset), Some(event), Some(job)) = (f.next(), f.next(), f.next()) else {
        return Err("expected TIMELINE,<offset_ms>,<event>,<job_id>,<detail>".into());
    };
    let offset_ms = ms_value("offset", offset.trim())
        .map_err(|_| format!("offset `{offset}` is not a whole number of ms"))?;
    let event = TimelineEvent::parse(event.trim()).ok_or_else(|| {
        format!(
            "unknown event `{event}` (expected SYNTH_START, SYNTH_END, GPU_QUEUE, GPU_PICKUP, GPU_START, GPU_END or CHAN_SEND)"
        )
    })?;
    let job = job.trim();
    if job.is_empty() {
        return Err("empty job id".into());
    }
    Ok(LogLine::Timeline {
        offset_ms,
        event,
        job: job.into(),
        detail: f.next().unwrap_or("").trim().into(),
    })
}

fn wrapper(rest: &str, w: Wrapper, format: &'static str) -> Result<LogLine, Malformed> {
    duration(rest)
        .map(|d| LogLine::Wrapper(w, d))
        .map_err(|why| bad(format, why))
}

/// `key=123` or `key=12.5` in a line of fields: `None` when the key is absent.
fn field_ms(line: &str, key: &str) -> Option<Result<u64, String>> {
    let pat = format!("{key}=");
    let at = line
        .match_indices(&pat)
        .find(|(i, _)| *i == 0 || !line.as_bytes()[i - 1].is_ascii_alphanumeric())?
        .0;
    let v: String = line[at + pat.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let ms = v
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x <= MAX_TIMER_MS as f64);
    Some(
        ms.map(|x| x.round() as u64)
            .ok_or(format!("`{key}={v}` is not a number of ms")),
    )
}

/// Every `…_ms=number` field of a line.
fn ms_fields(line: &str) -> Vec<(Key, u64)> {
    line.split([' ', ',', '\t'])
        .filter_map(|tok| {
            let (k, _) = tok.split_once('=')?;
            let k = k.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
            if !k.ends_with("_ms") {
                return None;
            }
            Some((Key::from(k), field_ms(tok, k)?.ok()?))
        })
        .collect()
}

/// Rust's `Debug` of a `Duration` (`36.012345s`, `812.5ms`, `15µs`, `3ns`), also Go's
/// `1m2.5s`; at most a year.
fn duration(rest: &str) -> Result<Duration, String> {
    let tok = rest.split_whitespace().next().ok_or("no duration")?;
    let tok = tok.trim_end_matches([',', ';', ')', '"']);
    parse_decimal_duration(tok).ok_or_else(|| format!("`{tok}` is not a duration like 36.0s"))
}

fn parse_decimal_duration(tok: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = tok;
    let mut any = false;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "µs" | "us" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * scale;
        any = true;
    }
    // A wrapper timer of more than a year is a corrupt line, not a measurement.
    let max = MAX_TIMER_MS as f64 / 1e3;
    (any && total.is_finite() && (0.0..=max).contains(&total))
        .then(|| Duration::from_secs_f64(total))
}

/// The wall-clock time a logger put at the start of the line, when it did: RFC 3339
/// (`2026-11-30T12:00:01.123Z`, also inside `[…]`) or Go's `2026/11/30 12:00:01.123456`
/// (read as UTC: the log does not say its zone).
pub fn wall_clock(line: &str) -> Option<SystemTime> {
    let s = line.trim_start().trim_start_matches('[');
    // Every format read below starts with the year: most lines of a log have no stamp.
    if !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let head = head(s, 40);
    // RFC 3339 with a zone, the first token.
    let first = head.split([' ', ']', '\t']).next()?;
    if let Ok(t) = humantime::parse_rfc3339_weak(first.trim_end_matches('Z')) {
        return Some(t);
    }
    if let Ok(t) = humantime::parse_rfc3339(first) {
        return Some(t);
    }
    // Go: date and time as two tokens.
    let mut it = head.split_whitespace();
    let (d, t) = (it.next()?, it.next()?.trim_end_matches(']'));
    if d.len() == 10 && d.as_bytes()[4] == b'/' {
        let iso = format!("{} {}", d.replace('/', "-"), t);
        return humantime::parse_rfc3339_weak(&iso).ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Option<Result<LogLine, Malformed>> {
        parse(s).map(|r| r.map(|p| p.line))
    }

    #[test]
    fn every_format_of_the_domain_notes_reads() {
        assert_eq!(
            line("CUZK_TIMING: gpu_tid=1 tail_msm_ms=125 gpu_total_ms=1800"),
            Some(Ok(LogLine::Timing(vec![
                ("gpu_tid".into(), 1),
                ("tail_msm_ms".into(), 125),
                ("gpu_total_ms".into(), 1800)
            ])))
        );
        assert_eq!(
            line("I1130 12:00:01 cuzk] CUZK_NTT_H: d_b_alloc=3ms total=690ms"),
            Some(Ok(LogLine::NttH(vec![
                ("d_b_alloc".into(), 3),
                ("total".into(), 690)
            ])))
        );
        assert_eq!(
            line("TIMELINE,1200,GPU_QUEUE,job-7,partition=3"),
            Some(Ok(LogLine::Timeline {
                offset_ms: 1200,
                event: TimelineEvent::GpuQueue,
                job: "job-7".into(),
                detail: "partition=3".into()
            }))
        );
        assert_eq!(
            line("2026-11-30T12:00:01.123Z INFO bellperson::groth16::prover: prover time: 36.012s"),
            Some(Ok(LogLine::Wrapper(
                Wrapper::ProverTime,
                Duration::from_millis(36_012)
            )))
        );
        assert_eq!(
            line("synthesis time: 812.5ms"),
            Some(Ok(LogLine::Synthesis(Duration::from_micros(812_500))))
        );
        assert_eq!(
            line("prover time: 1m2.5s").unwrap().unwrap(),
            LogLine::Wrapper(Wrapper::ProverTime, Duration::from_millis(62_500))
        );
        assert_eq!(line("unrelated: key=1"), None);
    }

    #[test]
    fn informational_cuzk_timing_lines_are_notes() {
        for s in [
            "set pool release threshold to MAX on gpu 0",
            "d_a_cache allocated 128 MiB on gpu 0",
            "prestage_setup=ok domain=134217728 lot_of_memory=1",
            "host_register=fallback err=2",
            "prestage_vram free_mib=80000",
        ] {
            assert_eq!(
                line(&format!("CUZK_TIMING: {s}")),
                Some(Ok(LogLine::Info(s.into()))),
                "{s}"
            );
        }
        assert!(matches!(
            line("TIMELINE,10,CHAN_SEND,j,partition=0"),
            Some(Ok(LogLine::Timeline {
                event: TimelineEvent::ChanSend,
                ..
            }))
        ));
    }

    #[test]
    fn the_wrapper_timers_operators_have_read() {
        assert_eq!(
            line(
                "[2026-11-30T12:01:49Z INFO  bellperson::groth16::prover::supraseal] GPU prove time: 25.7s"
            ),
            Some(Ok(LogLine::Wrapper(
                Wrapper::GpuProveTime,
                Duration::from_millis(25_700)
            )))
        );
        assert_eq!(
            line(
                "2026-11-30T12:01:49.000001Z  INFO cuzk_core::engine: partition GPU prove complete job=j partition=3 gpu_ms=1804"
            ),
            Some(Ok(LogLine::Wrapper(
                Wrapper::GpuMs,
                Duration::from_millis(1804)
            )))
        );
        assert_eq!(
            line("INFO cuzk_core::pipeline: GPU prove complete (split) gpu_ms=1790.6"),
            Some(Ok(LogLine::Wrapper(
                Wrapper::GpuMs,
                Duration::from_millis(1791)
            )))
        );
        assert_eq!(
            line("INFO cuzk_core::pipeline: partition 3 synthesis complete synth_ms=7200"),
            Some(Ok(LogLine::Synthesis(Duration::from_millis(7200))))
        );
        assert_eq!(
            line(
                "INFO cuzk_core::engine: Phase 7: all partitions complete job=j total_ms=95000 synth_ms=72000 gpu_ms=23000"
            ),
            Some(Ok(LogLine::JobTotals(
                "Phase 7".into(),
                vec![
                    ("total_ms".into(), 95000),
                    ("synth_ms".into(), 72000),
                    ("gpu_ms".into(), 23000)
                ]
            )))
        );
    }

    #[test]
    fn colours_and_json_are_seen_through() {
        let coloured = "\x1b[2m2026-11-30T12:01:49.123Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mbellperson\x1b[0m: prover time: 36.0s";
        let p = parse(coloured).unwrap().unwrap();
        assert_eq!(
            p.line,
            LogLine::Wrapper(Wrapper::ProverTime, Duration::from_secs(36))
        );
        assert_eq!(p.wall, wall_clock("2026-11-30T12:01:49.123Z x"));
        let json = r#"{"level":"INFO","ts":"2026-11-30T12:01:49.123Z","logger":"bellperson::groth16::prover::supraseal","msg":"prover time: 36.012s"}"#;
        let p = parse(json).unwrap().unwrap();
        assert_eq!(
            p.line,
            LogLine::Wrapper(Wrapper::ProverTime, Duration::from_millis(36_012))
        );
        assert_eq!(p.wall, wall_clock("2026-11-30T12:01:49.123Z x"));
        let fields = r#"{"timestamp":"2026-11-30T12:01:49Z","level":"INFO","fields":{"message":"partition GPU prove complete","gpu_ms":1804},"target":"cuzk_core::engine"}"#;
        assert_eq!(
            parse(fields).unwrap().unwrap().line,
            LogLine::Wrapper(Wrapper::GpuMs, Duration::from_millis(1804))
        );
    }

    #[test]
    fn a_known_marker_with_bad_content_says_what_is_wrong() {
        let e = line("CUZK_TIMING: prep_msm_ms=abc").unwrap().unwrap_err();
        assert!(e.why.contains("`abc` is not a whole number"), "{e:?}");
        assert_eq!(e.format, "CUZK_TIMING:");
        let e = line("CUZK_NTT_H: total=690").unwrap().unwrap_err();
        assert!(e.why.contains("in ms"), "{e:?}");
        let e = line("TIMELINE,12,GPU_EXPLODE,j,").unwrap().unwrap_err();
        assert!(e.why.contains("unknown event `GPU_EXPLODE`"), "{e:?}");
        let e = line("prover time: soon").unwrap().unwrap_err();
        assert!(e.why.contains("not a duration"), "{e:?}");
        assert!(line("CUZK_TIMING:").unwrap().is_err());
    }

    #[test]
    fn numbers_past_a_year_are_refused_not_wrapped() {
        assert!(
            line("prover time: 99999999999999999999999s")
                .unwrap()
                .is_err()
        );
        assert!(line("prover time: 1e19s").unwrap().is_err());
        assert!(
            line("CUZK_TIMING: prep_msm_ms=18446744073706551616")
                .unwrap()
                .is_err()
        );
        assert!(
            line("CUZK_TIMING: prep_msm_ms=40000000000")
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn logger_prefixes_give_the_wall_clock() {
        let t = wall_clock("2026-11-30T12:00:01.500Z INFO x").unwrap();
        let go = wall_clock("2026/11/30 12:00:01.500000 CUZK_TIMING: x=1").unwrap();
        assert_eq!(t, go);
        assert_eq!(wall_clock("[2026-11-30T12:00:01.500Z] x"), Some(t));
        assert_eq!(wall_clock("CUZK_TIMING: prep_msm_ms=1"), None);
    }
}
