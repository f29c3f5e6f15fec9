//! Per-event wire layouts. Each event is a MessagePack array whose first element is its tag.
//! Hot events (span edges, samples) are positional arrays of integers; rare events with many
//! fields carry a MessagePack map (field names as keys) so they can grow without breaking old
//! readers. Readers skip trailing fields they do not know and whole events with unknown tags.

use crate::event::*;
use crate::kind::EventKind;
use crate::msgpack::{self, Reader};
use crate::{DecodeError, EncodeError};
use serde::{Serialize, de::DeserializeOwned};

/// Delta-coding state shared by the encoder and decoder of one frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor {
    /// Last timestamp written/read (starts at the frame's `base_ns`).
    pub t: u64,
    /// Last span id written/read (starts at 0).
    pub s: u64,
}

/// Largest timestamp or span id a stream may carry: deltas must fit an i64.
pub(crate) const MAX_ABS: u64 = i64::MAX as u64;

fn delta(from: u64, to: u64, what: &'static str) -> Result<i64, EncodeError> {
    if to > MAX_ABS || from > MAX_ABS {
        return Err(EncodeError::TimestampOverflow { what, ts: to });
    }
    Ok(to as i64 - from as i64)
}

impl Cursor {
    fn put_ts(&mut self, out: &mut Vec<u8>, ts: u64) -> Result<(), EncodeError> {
        msgpack::write_sint(out, delta(self.t, ts, "event")?);
        self.t = ts;
        Ok(())
    }

    fn put_span(&mut self, out: &mut Vec<u8>, span: u64) -> Result<(), EncodeError> {
        msgpack::write_sint(out, delta(self.s, span, "span id")?);
        self.s = span;
        Ok(())
    }

    fn put_opt_span(&mut self, out: &mut Vec<u8>, span: Option<u64>) -> Result<(), EncodeError> {
        match span {
            Some(s) => self.put_span(out, s),
            None => {
                msgpack::write_nil(out);
                Ok(())
            }
        }
    }

    fn get_abs(r: &mut Reader<'_>, base: u64, what: &'static str) -> Result<u64, DecodeError> {
        let at = r.pos();
        let d = r.read_i64(what)?;
        let v = base as i128 + d as i128;
        if v < 0 || v > MAX_ABS as i128 {
            return Err(DecodeError::OutOfRange {
                offset: at,
                what,
                value: v,
            });
        }
        Ok(v as u64)
    }

    fn get_ts(&mut self, r: &mut Reader<'_>) -> Result<u64, DecodeError> {
        self.t = Self::get_abs(r, self.t, "timestamp delta")?;
        Ok(self.t)
    }

    fn get_span(&mut self, r: &mut Reader<'_>) -> Result<u64, DecodeError> {
        self.s = Self::get_abs(r, self.s, "span id delta")?;
        Ok(self.s)
    }

    fn get_opt_span(&mut self, r: &mut Reader<'_>) -> Result<Option<u64>, DecodeError> {
        if r.take_nil() {
            Ok(None)
        } else {
            self.get_span(r).map(Some)
        }
    }
}

fn put_map<T: Serialize>(out: &mut Vec<u8>, v: &T, what: &'static str) -> Result<(), EncodeError> {
    rmp_serde::encode::write_named(out, v).map_err(|e| EncodeError::Serialize {
        what,
        message: e.to_string(),
    })
}

/// Appends one event to `out`.
pub(crate) fn encode_event(
    out: &mut Vec<u8>,
    cur: &mut Cursor,
    ev: &Event,
) -> Result<(), EncodeError> {
    let kind = ev.kind();
    // A block's stack id is a trailing field (1.3), written only when there is one.
    let trailing = match ev {
        Event::Alloc(b) | Event::Release(b) => usize::from(b.stack.is_some()),
        _ => 0,
    };
    msgpack::write_array_len(out, (kind.min_fields() + trailing) as u32);
    msgpack::write_uint(out, u64::from(kind.tag()));
    encode_body(out, cur, ev)
}

/// An event's fields after its tag. One arm per kind, as the table's rows: a kind's wire
/// layout reads as one block, and the larger ones are functions of their own.
fn encode_body(out: &mut Vec<u8>, cur: &mut Cursor, ev: &Event) -> Result<(), EncodeError> {
    use msgpack::*;
    let uints = |out: &mut Vec<u8>, vs: &[u64]| vs.iter().for_each(|v| write_uint(out, *v));
    match ev {
        Event::Hello(h) => put_map(out, h.as_ref(), "hello")?,
        Event::NameDef { id, name } => {
            write_uint(out, u64::from(*id));
            write_str(out, name);
        }
        Event::ThreadDef { id, name, os_tid } => {
            write_uint(out, u64::from(*id));
            write_str(out, name);
            write_uint(out, *os_tid);
        }
        Event::ProofBegin(p) => {
            cur.put_ts(out, p.ts)?;
            put_map(out, p.as_ref(), "proof_begin")?;
        }
        Event::ProofEnd(p) => {
            cur.put_ts(out, p.ts)?;
            put_map(out, p.as_ref(), "proof_end")?;
        }
        Event::SpanBegin(s) => encode_span_begin(out, cur, s)?,
        Event::SpanEnd(s) => {
            cur.put_span(out, s.span)?;
            cur.put_ts(out, s.ts)?;
        }
        Event::Marker(m) => encode_marker(out, cur, m)?,
        Event::AllocSample(s) => {
            cur.put_ts(out, s.ts)?;
            let c = [s.live_bytes, s.peak_bytes, s.allocs, s.frees];
            uints(out, &c);
            uints(out, &[s.alloc_bytes, s.free_bytes, s.rss_bytes]);
        }
        Event::Alloc(b) | Event::Release(b) => encode_block(out, cur, b)?,
        Event::GpuSample(g) => encode_gpu_sample(out, cur, g)?,
        Event::GpuSpan(g) => encode_gpu_span(out, cur, g)?,
        Event::Dropped(d) => {
            cur.put_ts(out, d.ts)?;
            write_map_len(out, d.counts.len() as u32);
            d.counts
                .iter()
                .for_each(|(k, n)| uints(out, &[u64::from(k.tag()), *n]));
        }
        Event::Heartbeat { ts } | Event::LiveStart { ts } => cur.put_ts(out, *ts)?,
        Event::HistoryGap(h) => {
            cur.put_ts(out, h.ts)?;
            uints(out, &[h.evicted_events, h.evicted_from, h.evicted_until]);
        }
        Event::Goodbye { ts, reason } => {
            cur.put_ts(out, *ts)?;
            write_str(out, reason);
        }
        Event::StackDef { id, frames } => {
            write_uint(out, u64::from(*id));
            write_array_len(out, frames.len() as u32);
            frames.iter().for_each(|f| write_str(out, f));
        }
        // Added in 1.2: absolute, so an older reader that skips it keeps its cursors right.
        Event::ThreadSched(s) => {
            let t = u64::from(s.thread);
            uints(out, &[s.ts, t, s.cpu_ns, s.runq_ns, s.timeslices]);
        }
        // Added in 1.5: absolute, as ThreadSched.
        Event::OutputWrite(w) => {
            let t = u64::from(w.thread);
            uints(out, &[w.ts, t, u64::from(w.stream.fd()), w.offset, w.bytes]);
        }
        // Added in 1.6: absolute, as ThreadSched.
        Event::GpuProcess(p) => {
            uints(out, &[p.ts, u64::from(p.device)]);
            write_bool(out, p.context);
            write_opt_uint(out, p.used_bytes);
        }
        // Added in 1.7: absolute, as ThreadSched.
        Event::ThreadKernel(k) => encode_thread_kernel(out, k),
        // Added in 1.7: absolute, as ThreadSched.
        Event::StackSample(s) => {
            uints(out, &[s.ts, u64::from(s.thread), u64::from(s.stack)]);
        }
        Event::Subscribe(s) => {
            write_bool(out, s.history);
            write_str(out, &s.client);
        }
    }
    Ok(())
}

fn encode_thread_kernel(out: &mut Vec<u8>, k: &ThreadKernel) {
    use msgpack::*;
    let counters = [k.minor_faults, k.major_faults, k.user_ns, k.system_ns];
    write_uint(out, k.ts);
    write_uint(out, u64::from(k.thread));
    counters.iter().for_each(|v| write_uint(out, *v));
    write_opt_uint(out, k.syscall.map(u64::from));
    write_uint(out, k.syscall_arg);
}

fn encode_marker(out: &mut Vec<u8>, cur: &mut Cursor, m: &Marker) -> Result<(), EncodeError> {
    use msgpack::*;
    cur.put_ts(out, m.ts)?;
    write_uint(out, u64::from(m.name));
    write_uint(out, u64::from(m.thread));
    cur.put_opt_span(out, m.span)?;
    match &m.text {
        Some(t) => write_str(out, t),
        None => write_nil(out),
    }
    Ok(())
}

fn encode_block(out: &mut Vec<u8>, cur: &mut Cursor, b: &BlockEvent) -> Result<(), EncodeError> {
    use msgpack::*;
    cur.put_ts(out, b.ts)?;
    for v in [b.bytes, b.inside_ns, u64::from(b.thread)] {
        write_uint(out, v);
    }
    cur.put_opt_span(out, b.span)?;
    if let Some(s) = b.stack {
        write_uint(out, u64::from(s));
    }
    Ok(())
}

fn encode_gpu_span(out: &mut Vec<u8>, cur: &mut Cursor, g: &GpuSpan) -> Result<(), EncodeError> {
    use msgpack::*;
    cur.put_ts(out, g.start)?;
    let len = g.end.saturating_sub(g.start);
    for v in [
        len,
        u64::from(g.device),
        u64::from(g.stream),
        u64::from(g.name),
    ] {
        write_uint(out, v);
    }
    cur.put_opt_span(out, g.span)
}

fn encode_span_begin(
    out: &mut Vec<u8>,
    cur: &mut Cursor,
    s: &SpanBegin,
) -> Result<(), EncodeError> {
    use msgpack::*;
    cur.put_span(out, s.span)?;
    match s.parent {
        Some(p) => write_sint(out, delta(p, s.span, "parent span id")?),
        None => write_nil(out),
    }
    write_opt_uint(out, s.proof);
    write_uint(out, s.name as u64);
    write_uint(out, s.thread as u64);
    cur.put_ts(out, s.ts)
}

fn encode_gpu_sample(
    out: &mut Vec<u8>,
    cur: &mut Cursor,
    g: &GpuSample,
) -> Result<(), EncodeError> {
    use msgpack::*;
    cur.put_ts(out, g.ts)?;
    write_uint(out, g.device as u64);
    for v in [g.util_pct.map(u64::from), g.mem_util_pct.map(u64::from)] {
        write_opt_uint(out, v);
    }
    write_opt_uint(out, g.mem_used_bytes);
    write_opt_uint(out, g.mem_total_bytes);
    write_opt_uint(out, g.power_mw.map(u64::from));
    write_opt_uint(out, g.energy_mj);
    for v in [
        g.temp_c,
        g.sm_clock_mhz,
        g.mem_clock_mhz,
        g.pcie_rx_kbps,
        g.pcie_tx_kbps,
    ] {
        write_opt_uint(out, v.map(u64::from));
    }
    Ok(())
}

fn get_map<T: DeserializeOwned>(
    r: &mut Reader<'_>,
    index: usize,
    tag: u64,
) -> Result<T, DecodeError> {
    let start = r.pos();
    r.skip_value(1)?;
    let bytes = r.slice(start, r.pos());
    rmp_serde::from_slice(bytes).map_err(|e| DecodeError::BadPayload {
        offset: start,
        index,
        tag,
        message: e.to_string(),
    })
}

fn small<T: TryFrom<u64>>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Option<T>, DecodeError> {
    let at = r.pos();
    match r.read_opt_u64(what)? {
        None => Ok(None),
        Some(v) => T::try_from(v)
            .map(Some)
            .map_err(|_| DecodeError::OutOfRange {
                offset: at,
                what,
                value: v as i128,
            }),
    }
}

/// Decodes one event. Returns `Ok(None)` for an event of unknown kind (skipped whole).
pub(crate) fn decode_event(
    r: &mut Reader<'_>,
    cur: &mut Cursor,
    index: usize,
) -> Result<Option<Event>, DecodeError> {
    let start = r.pos();
    let n = r.read_array_len("event")?;
    if n == 0 {
        return Err(DecodeError::BadPayload {
            offset: start,
            index,
            tag: 0,
            message: "an empty array: an event starts with its tag".into(),
        });
    }
    let tag_at = r.pos();
    let t = r.read_u64("event tag")?;
    // A kind this build does not know was added by a later minor version: skipped whole.
    let Some(kind) = u8::try_from(t).ok().and_then(EventKind::from_tag) else {
        for _ in 1..n {
            r.skip_value(1)?;
        }
        return Ok(None);
    };
    let needed = kind.min_fields();
    if n < needed {
        return Err(DecodeError::MissingFields {
            offset: tag_at,
            index,
            tag: t,
            found: n - 1,
            needed: needed - 1,
        });
    }
    let at = At { index, tag: t };
    let (ev, read) = decode_body(r, cur, kind, n, at)?;
    // Trailing fields of a later minor version: skipped.
    for _ in read..n {
        r.skip_value(1)?;
    }
    Ok(Some(ev))
}

/// Where an event is, for errors about its payload.
#[derive(Clone, Copy)]
struct At {
    index: usize,
    tag: u64,
}

/// The fields of an event of `kind` (its array holds `n` elements); returns the event and how
/// many elements it read, tag included. One arm per kind, as the table's rows: a kind's wire
/// layout reads as one block, and the larger ones are functions of their own.
fn decode_body(
    r: &mut Reader<'_>,
    cur: &mut Cursor,
    kind: EventKind,
    n: usize,
    at: At,
) -> Result<(Event, usize), DecodeError> {
    let needed = kind.min_fields();
    let ev = match kind {
        EventKind::Hello => Event::Hello(Box::new(get_map(r, at.index, at.tag)?)),
        EventKind::NameDef => Event::NameDef {
            id: r.read_u32("name id")?,
            name: r.read_str("name")?.to_owned(),
        },
        EventKind::ThreadDef => Event::ThreadDef {
            id: r.read_u32("thread id")?,
            name: r.read_str("thread name")?.to_owned(),
            os_tid: r.read_u64("os thread id")?,
        },
        EventKind::ProofBegin => {
            let ts = cur.get_ts(r)?;
            let mut p: ProofBegin = get_map(r, at.index, at.tag)?;
            p.ts = ts;
            Event::ProofBegin(Box::new(p))
        }
        EventKind::ProofEnd => {
            let ts = cur.get_ts(r)?;
            let mut p: ProofEnd = get_map(r, at.index, at.tag)?;
            p.ts = ts;
            Event::ProofEnd(Box::new(p))
        }
        EventKind::SpanBegin => Event::SpanBegin(decode_span_begin(r, cur)?),
        EventKind::SpanEnd => Event::SpanEnd(SpanEnd {
            span: cur.get_span(r)?,
            ts: cur.get_ts(r)?,
        }),
        EventKind::Marker => Event::Marker(Box::new(Marker {
            ts: cur.get_ts(r)?,
            name: r.read_u32("name id")?,
            thread: r.read_u32("thread id")?,
            span: cur.get_opt_span(r)?,
            text: r.read_opt_str("marker text")?.map(str::to_owned),
        })),
        EventKind::AllocSample => Event::AllocSample(decode_alloc_sample(r, cur)?),
        EventKind::Alloc | EventKind::Release => {
            let with_stack = n > needed;
            let b = decode_block(r, cur, with_stack)?;
            let ev = if kind == EventKind::Alloc {
                Event::Alloc(b)
            } else {
                Event::Release(b)
            };
            return Ok((ev, needed + usize::from(with_stack)));
        }
        EventKind::GpuSample => Event::GpuSample(Box::new(decode_gpu_sample(r, cur)?)),
        EventKind::GpuSpan => Event::GpuSpan(decode_gpu_span(r, cur)?),
        EventKind::Dropped => Event::Dropped(decode_dropped(r, cur)?),
        EventKind::Heartbeat => Event::Heartbeat { ts: cur.get_ts(r)? },
        EventKind::LiveStart => Event::LiveStart { ts: cur.get_ts(r)? },
        EventKind::HistoryGap => Event::HistoryGap(HistoryGap {
            ts: cur.get_ts(r)?,
            evicted_events: r.read_u64("evicted events")?,
            evicted_from: r.read_u64("evicted from")?,
            evicted_until: r.read_u64("evicted until")?,
        }),
        EventKind::Goodbye => Event::Goodbye {
            ts: cur.get_ts(r)?,
            reason: r.read_str("goodbye reason")?.to_owned(),
        },
        EventKind::StackDef => decode_stack(r)?,
        EventKind::ThreadSched => Event::ThreadSched(decode_thread_sched(r)?),
        EventKind::OutputWrite => Event::OutputWrite(decode_output_write(r)?),
        EventKind::GpuProcess => Event::GpuProcess(decode_gpu_process(r)?),
        EventKind::ThreadKernel => Event::ThreadKernel(decode_thread_kernel(r)?),
        EventKind::StackSample => Event::StackSample(StackSample {
            ts: r.read_u64("stack sample timestamp")?,
            thread: r.read_u32("thread id")?,
            stack: r.read_u32("stack id")?,
        }),
        EventKind::Subscribe => Event::Subscribe(Subscribe {
            history: r.read_bool("history flag")?,
            client: r.read_str("client name")?.to_owned(),
        }),
    };
    Ok((ev, needed))
}

fn decode_alloc_sample(r: &mut Reader<'_>, cur: &mut Cursor) -> Result<AllocSample, DecodeError> {
    Ok(AllocSample {
        ts: cur.get_ts(r)?,
        live_bytes: r.read_u64("live bytes")?,
        peak_bytes: r.read_u64("peak bytes")?,
        allocs: r.read_u64("alloc count")?,
        frees: r.read_u64("free count")?,
        alloc_bytes: r.read_u64("allocated bytes")?,
        free_bytes: r.read_u64("freed bytes")?,
        rss_bytes: r.read_u64("rss bytes")?,
    })
}

fn decode_thread_sched(r: &mut Reader<'_>) -> Result<ThreadSched, DecodeError> {
    Ok(ThreadSched {
        ts: r.read_u64("sched timestamp")?,
        thread: r.read_u32("thread id")?,
        cpu_ns: r.read_u64("on-CPU ns")?,
        runq_ns: r.read_u64("run-queue ns")?,
        timeslices: r.read_u64("timeslices")?,
    })
}

fn decode_output_write(r: &mut Reader<'_>) -> Result<OutputWrite, DecodeError> {
    Ok(OutputWrite {
        ts: r.read_u64("write timestamp")?,
        thread: r.read_u32("thread id")?,
        stream: {
            let at = r.pos();
            let fd = r.read_u64("output stream (1 or 2)")?;
            OutputStream::of_fd(fd).ok_or(DecodeError::OutOfRange {
                offset: at,
                what: "output stream (1 or 2)",
                value: i128::from(fd),
            })?
        },
        offset: r.read_u64("stream offset")?,
        bytes: r.read_u64("bytes written")?,
    })
}

fn decode_thread_kernel(r: &mut Reader<'_>) -> Result<ThreadKernel, DecodeError> {
    Ok(ThreadKernel {
        ts: r.read_u64("kernel sample timestamp")?,
        thread: r.read_u32("thread id")?,
        minor_faults: r.read_u64("minor faults")?,
        major_faults: r.read_u64("major faults")?,
        user_ns: r.read_u64("user ns")?,
        system_ns: r.read_u64("system ns")?,
        syscall: r.read_opt_u32("system call name")?,
        syscall_arg: r.read_u64("system call argument")?,
    })
}

fn decode_gpu_process(r: &mut Reader<'_>) -> Result<GpuProcess, DecodeError> {
    Ok(GpuProcess {
        ts: r.read_u64("GPU process timestamp")?,
        device: r.read_u32("device index")?,
        context: r.read_bool("context held")?,
        used_bytes: r.read_opt_u64("process memory used")?,
    })
}

fn decode_stack(r: &mut Reader<'_>) -> Result<Event, DecodeError> {
    let id = r.read_u32("stack id")?;
    let count = r.read_array_len("stack frames")?;
    let mut frames = Vec::with_capacity(count.min(256));
    for _ in 0..count {
        frames.push(r.read_str("stack frame")?.to_owned());
    }
    Ok(Event::StackDef { id, frames })
}

fn decode_span_begin(r: &mut Reader<'_>, cur: &mut Cursor) -> Result<SpanBegin, DecodeError> {
    let span = cur.get_span(r)?;
    let parent = if r.take_nil() {
        None
    } else {
        let at = r.pos();
        let d = r.read_i64("parent delta")?;
        let p = span as i128 - d as i128;
        // Span ids are never 0: a parent of 0 is as wrong as a negative one.
        if p < 1 || p > MAX_ABS as i128 {
            return Err(DecodeError::OutOfRange {
                offset: at,
                what: "parent delta",
                value: p,
            });
        }
        Some(p as u64)
    };
    Ok(SpanBegin {
        span,
        parent,
        proof: r.read_opt_u64("proof id")?,
        name: r.read_u32("name id")?,
        thread: r.read_u32("thread id")?,
        ts: cur.get_ts(r)?,
    })
}

/// An `Alloc` or `Release`; `with_stack`: the trailing stack id (1.3) is there.
fn decode_block(
    r: &mut Reader<'_>,
    cur: &mut Cursor,
    with_stack: bool,
) -> Result<BlockEvent, DecodeError> {
    let mut b = BlockEvent {
        ts: cur.get_ts(r)?,
        bytes: r.read_u64("block bytes")?,
        inside_ns: r.read_u64("time inside allocator")?,
        thread: r.read_u32("thread id")?,
        span: cur.get_opt_span(r)?,
        stack: None,
    };
    if with_stack {
        b.stack = r
            .read_opt_u64("stack id")?
            .map(|s| u32::try_from(s).unwrap_or(u32::MAX));
    }
    Ok(b)
}

fn decode_gpu_sample(r: &mut Reader<'_>, cur: &mut Cursor) -> Result<GpuSample, DecodeError> {
    Ok(GpuSample {
        ts: cur.get_ts(r)?,
        device: r.read_u32("device")?,
        util_pct: small(r, "utilisation")?,
        mem_util_pct: small(r, "memory utilisation")?,
        mem_used_bytes: r.read_opt_u64("memory used")?,
        mem_total_bytes: r.read_opt_u64("memory total")?,
        power_mw: small(r, "power")?,
        energy_mj: r.read_opt_u64("energy")?,
        temp_c: small(r, "temperature")?,
        sm_clock_mhz: small(r, "SM clock")?,
        mem_clock_mhz: small(r, "memory clock")?,
        pcie_rx_kbps: small(r, "PCIe rx")?,
        pcie_tx_kbps: small(r, "PCIe tx")?,
    })
}

fn decode_gpu_span(r: &mut Reader<'_>, cur: &mut Cursor) -> Result<GpuSpan, DecodeError> {
    let start = cur.get_ts(r)?;
    let at = r.pos();
    let dur = r.read_u64("GPU span duration")?;
    let end = start.checked_add(dur).ok_or(DecodeError::OutOfRange {
        offset: at,
        what: "GPU span duration",
        value: dur as i128,
    })?;
    Ok(GpuSpan {
        start,
        end,
        device: r.read_u32("device")?,
        stream: r.read_u32("stream")?,
        name: r.read_u32("name id")?,
        span: cur.get_opt_span(r)?,
    })
}

fn decode_dropped(r: &mut Reader<'_>, cur: &mut Cursor) -> Result<Dropped, DecodeError> {
    let ts = cur.get_ts(r)?;
    let len = r.read_map_len("drop counts")?;
    let mut counts = Vec::with_capacity(len.min(EventKind::COUNT));
    for _ in 0..len {
        let k = r.read_u64("dropped kind")?;
        let n = r.read_u64("dropped count")?;
        // Losses of a kind this reader does not know could not be shown anyway.
        if let Some(kind) = u8::try_from(k).ok().and_then(EventKind::from_tag) {
            counts.push((kind, n));
        }
    }
    Ok(Dropped { ts, counts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::{Clock, SpanField};

    /// An event of `kind` at `ts` naming span `span` where it has one.
    fn sample(kind: EventKind, ts: u64, span: u64) -> Event {
        let block = BlockEvent {
            ts,
            bytes: 1 << 30,
            inside_ns: 5,
            thread: 1,
            span: Some(span),
            stack: Some(3),
        };
        match kind {
            EventKind::Hello => Event::Hello(Box::default()),
            EventKind::NameDef => Event::NameDef {
                id: 1,
                name: "n".into(),
            },
            EventKind::ThreadDef => Event::ThreadDef {
                id: 1,
                name: "t".into(),
                os_tid: 9,
            },
            EventKind::ProofBegin => Event::ProofBegin(Box::new(ProofBegin {
                ts,
                ..ProofBegin::default()
            })),
            EventKind::ProofEnd => Event::ProofEnd(Box::new(ProofEnd {
                ts,
                ..ProofEnd::default()
            })),
            EventKind::SpanBegin => Event::SpanBegin(SpanBegin {
                ts,
                span,
                parent: None,
                proof: Some(1),
                name: 1,
                thread: 1,
            }),
            EventKind::SpanEnd => Event::SpanEnd(SpanEnd { ts, span }),
            EventKind::Marker => Event::Marker(Box::new(Marker {
                ts,
                name: 1,
                thread: 1,
                span: Some(span),
                text: None,
            })),
            EventKind::AllocSample => Event::AllocSample(AllocSample {
                ts,
                ..AllocSample::default()
            }),
            EventKind::Alloc => Event::Alloc(block),
            EventKind::Release => Event::Release(block),
            EventKind::GpuSample => Event::GpuSample(Box::new(GpuSample {
                ts,
                ..GpuSample::default()
            })),
            EventKind::GpuSpan => Event::GpuSpan(GpuSpan {
                start: ts,
                end: ts + 10,
                device: 0,
                stream: 0,
                name: 1,
                span: Some(span),
            }),
            EventKind::Dropped => Event::Dropped(Dropped {
                ts,
                counts: vec![(EventKind::SpanBegin, 2)],
            }),
            EventKind::Heartbeat => Event::Heartbeat { ts },
            EventKind::HistoryGap => Event::HistoryGap(HistoryGap {
                ts,
                ..HistoryGap::default()
            }),
            EventKind::LiveStart => Event::LiveStart { ts },
            EventKind::Goodbye => Event::Goodbye {
                ts,
                reason: "bye".into(),
            },
            EventKind::ThreadSched => Event::ThreadSched(ThreadSched {
                ts,
                ..ThreadSched::default()
            }),
            EventKind::StackDef => Event::StackDef {
                id: 3,
                frames: vec!["f".into()],
            },
            EventKind::OutputWrite => Event::OutputWrite(OutputWrite {
                ts,
                ..OutputWrite::default()
            }),
            EventKind::GpuProcess => Event::GpuProcess(GpuProcess {
                ts,
                ..GpuProcess::default()
            }),
            EventKind::ThreadKernel => Event::ThreadKernel(ThreadKernel {
                ts,
                syscall: Some(4),
                ..ThreadKernel::default()
            }),
            EventKind::StackSample => Event::StackSample(StackSample {
                ts,
                thread: 1,
                stack: 3,
            }),
            EventKind::Subscribe => Event::Subscribe(Subscribe {
                history: true,
                client: "c".into(),
            }),
        }
    }

    /// The table's clock and span columns are what the codec does: after an event of each
    /// kind, a heartbeat's time delta and a span end's span delta show whether it moved the
    /// cursors. And every kind's timestamp reads back as it was set.
    #[test]
    fn every_kind_moves_the_cursors_as_the_table_says() {
        for kind in EventKind::ALL {
            let ev = sample(kind, 1_000, 50);
            assert_eq!(ev.kind(), kind);
            let mut moved = ev.clone();
            moved.set_ts(777);
            let has_ts = kind.info().clock != Clock::None;
            assert_eq!(moved.ts(), has_ts.then_some(777), "{kind:?}");
            let frame = crate::encode_frame(
                0,
                &[
                    ev,
                    Event::Heartbeat { ts: 2_000 },
                    Event::SpanEnd(SpanEnd {
                        ts: 2_000,
                        span: 60,
                    }),
                ],
            )
            .unwrap();
            let mut r = Reader::new(&frame[crate::FRAME_PREFIX_LEN..]);
            r.read_array_len("frame").unwrap();
            for _ in 0..4 {
                r.skip_value(1).unwrap(); // major, minor, base, the event
            }
            assert_eq!(r.read_array_len("heartbeat").unwrap(), 2);
            r.read_u64("tag").unwrap();
            let dt = r.read_i64("ts delta").unwrap();
            let want_dt = if kind.info().clock == Clock::Delta {
                1_000
            } else {
                2_000
            };
            assert_eq!(dt, want_dt, "{kind:?}: time cursor");
            r.read_array_len("span end").unwrap();
            r.read_u64("tag").unwrap();
            let ds = r.read_i64("span delta").unwrap();
            let want_ds = if kind.info().span == SpanField::None {
                60
            } else {
                10
            };
            assert_eq!(ds, want_ds, "{kind:?}: span cursor");
        }
    }
}
