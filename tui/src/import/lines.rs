//! One log line → what it says, for the line formats the field already writes
//! (docs/CLI.md, "Accepted log formats"). A line is found by its marker anywhere in it, so
//! whatever prefix the logger adds (timestamps, levels, `[pid]`, a Go-style `2026/11/30 12:00:01`)
//! does not matter; the prefix's wall-clock time is kept when it has one.

use std::time::{Duration, SystemTime};

/// What a known line says.
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine {
    /// `CUZK_TIMING: key=value …` (milliseconds; `gpu_tid` and `num_circuits` are counts).
    Timing(Vec<(String, u64)>),
    /// `CUZK_NTT_H: key=valuems … total=valuems`: the inside of one `ntt_msm_h`.
    NttH(Vec<(String, u64)>),
    /// `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`.
    Timeline {
        offset_ms: u64,
        event: TimelineEvent,
        job: String,
        detail: String,
    },
    /// bellperson's `prover time: <duration>` (the wrapper timer around the proving call).
    ProverTime(Duration),
    /// bellperson's `synthesis time: <duration>`.
    SynthesisTime(Duration),
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
            _ => return None,
        })
    }
}

/// A line this importer knows by its marker but cannot read: why.
pub type Malformed = String;

/// Reads one line: `None` for a line in no known format, `Some(Err)` for a known marker
/// followed by something else.
pub fn parse(line: &str) -> Option<Result<LogLine, Malformed>> {
    if let Some(rest) = after(line, "CUZK_TIMING:") {
        return Some(pairs(rest, false).map(LogLine::Timing));
    }
    if let Some(rest) = after(line, "CUZK_NTT_H:") {
        return Some(pairs(rest, true).map(LogLine::NttH));
    }
    if let Some(rest) = after(line, "TIMELINE,") {
        return Some(timeline(rest));
    }
    if let Some(rest) = after(line, "prover time:") {
        return Some(duration(rest).map(LogLine::ProverTime));
    }
    if let Some(rest) = after(line, "synthesis time:") {
        return Some(duration(rest).map(LogLine::SynthesisTime));
    }
    None
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// `key=123 key=45` (or `key=45ms` when `ms_suffix`): at least one pair, every value an integer.
fn pairs(rest: &str, ms_suffix: bool) -> Result<Vec<(String, u64)>, Malformed> {
    let mut out = Vec::new();
    for tok in rest.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| format!("`{tok}` is not key=value"))?;
        let v = if ms_suffix {
            v.strip_suffix("ms")
                .ok_or_else(|| format!("`{tok}`: expected a value in ms (e.g. {k}=12ms)"))?
        } else {
            v
        };
        if k.is_empty() {
            return Err(format!("`{tok}` has no key"));
        }
        let n = v
            .parse::<u64>()
            .map_err(|_| format!("`{tok}`: `{v}` is not a whole number"))?;
        out.push((k.to_owned(), n));
    }
    if out.is_empty() {
        return Err("no key=value pairs".into());
    }
    Ok(out)
}

fn timeline(rest: &str) -> Result<LogLine, Malformed> {
    let mut f = rest.trim_end().splitn(4, ',');
    let (Some(offset), Some(event), Some(job)) = (f.next(), f.next(), f.next()) else {
        return Err("expected TIMELINE,<offset_ms>,<event>,<job_id>,<detail>".into());
    };
    let offset_ms = offset
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("offset `{offset}` is not a whole number of ms"))?;
    let event = TimelineEvent::parse(event.trim()).ok_or_else(|| {
        format!(
            "unknown event `{event}` (expected SYNTH_START, SYNTH_END, GPU_QUEUE, GPU_PICKUP, GPU_START or GPU_END)"
        )
    })?;
    let job = job.trim();
    if job.is_empty() {
        return Err("empty job id".into());
    }
    Ok(LogLine::Timeline {
        offset_ms,
        event,
        job: job.to_owned(),
        detail: f.next().unwrap_or("").trim().to_owned(),
    })
}

/// Rust's `Debug` of a `Duration` (`36.012345s`, `812.5ms`, `15µs`, `3ns`), also Go's
/// `1m2.5s`, read by humantime after the unit forms it does not know are rewritten.
fn duration(rest: &str) -> Result<Duration, Malformed> {
    let tok = rest.split_whitespace().next().ok_or("no duration")?;
    let tok = tok.trim_end_matches([',', ';', ')']);
    // humantime reads whole numbers per unit; a decimal is split into its parts.
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
    (any && total.is_finite()).then(|| Duration::from_secs_f64(total))
}

/// The wall-clock time a logger put at the start of the line, when it did: RFC 3339
/// (`2026-11-30T12:00:01.123Z`, also inside `[…]`) or Go's `2026/11/30 12:00:01.123456`
/// (read as UTC: the log does not say its zone).
pub fn wall_clock(line: &str) -> Option<SystemTime> {
    let s = line.trim_start().trim_start_matches('[');
    let head: String = s.chars().take(40).collect();
    // RFC 3339 with a zone, the first token.
    let first = head.split([' ', ']']).next()?;
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

    #[test]
    fn every_format_of_domain_md_reads() {
        assert_eq!(
            parse("CUZK_TIMING: gpu_tid=1 tail_msm_ms=125 gpu_total_ms=1800"),
            Some(Ok(LogLine::Timing(vec![
                ("gpu_tid".into(), 1),
                ("tail_msm_ms".into(), 125),
                ("gpu_total_ms".into(), 1800)
            ])))
        );
        assert_eq!(
            parse("I1130 12:00:01 cuzk] CUZK_NTT_H: d_b_alloc=3ms total=690ms"),
            Some(Ok(LogLine::NttH(vec![
                ("d_b_alloc".into(), 3),
                ("total".into(), 690)
            ])))
        );
        assert_eq!(
            parse("TIMELINE,1200,GPU_QUEUE,job-7,partition=3"),
            Some(Ok(LogLine::Timeline {
                offset_ms: 1200,
                event: TimelineEvent::GpuQueue,
                job: "job-7".into(),
                detail: "partition=3".into()
            }))
        );
        assert_eq!(
            parse(
                "2026-11-30T12:00:01.123Z INFO bellperson::groth16::prover: prover time: 36.012s"
            ),
            Some(Ok(LogLine::ProverTime(Duration::from_millis(36_012))))
        );
        assert_eq!(
            parse("synthesis time: 812.5ms"),
            Some(Ok(LogLine::SynthesisTime(Duration::from_micros(812_500))))
        );
        assert_eq!(
            parse("prover time: 1m2.5s").unwrap().unwrap(),
            LogLine::ProverTime(Duration::from_millis(62_500))
        );
        assert_eq!(parse("unrelated: key=1"), None);
    }

    #[test]
    fn a_known_marker_with_bad_content_says_what_is_wrong() {
        let e = parse("CUZK_TIMING: prep_msm_ms=abc").unwrap().unwrap_err();
        assert!(e.contains("`abc` is not a whole number"), "{e}");
        let e = parse("CUZK_NTT_H: total=690").unwrap().unwrap_err();
        assert!(e.contains("in ms"), "{e}");
        let e = parse("TIMELINE,12,GPU_EXPLODE,j,").unwrap().unwrap_err();
        assert!(e.contains("unknown event `GPU_EXPLODE`"), "{e}");
        let e = parse("prover time: soon").unwrap().unwrap_err();
        assert!(e.contains("not a duration"), "{e}");
        assert!(parse("CUZK_TIMING:").unwrap().is_err());
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
