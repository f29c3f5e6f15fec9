//! `--format chrome`: Chrome trace-event JSON (opens in Perfetto and chrome://tracing), written
//! event by event to the output, so that its memory does not grow with the session (the model
//! is the only copy).
//!
//! The format lets slices on one track only nest, never overlap partly (Perfetto drops such
//! slices), so tracks are laid out to keep that rule:
//! - one track per thread *name* (`thread_name` already tells apart threads of one name alive
//!   at the same time), so that per-proof threads (`prep_msm`) are one track, not one each;
//!   spans and large frees go there (both nest on their thread);
//! - per GPU stream, lanes: work that overlaps earlier work on the stream (it happens: events
//!   of two launches resolve to overlapping times) goes to the next lane;
//! - unaccounted gaps on lanes of a track of their own, with their diagnosis in `args`.

use crate::analysis::{GapRule, gap_listing};
use crate::model::{DeviceSpan, Model, Session, ThreadId};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{self, Write};

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Process ids: each session is a process; its GPUs are processes of their own.
fn gpu_pid(session: usize, device: u32) -> u64 {
    (session as u64 + 1) * 1000 + device as u64 + 1
}

/// The track of a session's unaccounted gaps (lane 0; lane k is this + k).
const GAP_TID: u64 = 1_000_000;
/// GPU tracks: stream × this + lane.
const LANES_PER_STREAM: u64 = 1000;

/// Puts intervals (sorted by start) on the fewest lanes in which none overlaps another.
fn lanes(intervals: impl Iterator<Item = (u64, u64)>) -> Vec<u64> {
    let mut ends: Vec<u64> = Vec::new();
    intervals
        .map(|(start, end)| match ends.iter().position(|&e| e <= start) {
            Some(l) => {
                ends[l] = end;
                l as u64
            }
            None => {
                ends.push(end);
                (ends.len() - 1) as u64
            }
        })
        .collect()
}

/// Writes events separated by commas.
struct Events<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<W: Write> Events<'_, W> {
    fn push(&mut self, v: &Value) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, v).map_err(io::Error::from)
    }
}

/// The track of each thread id: one per distinct display name.
fn thread_tracks(s: &Session) -> (HashMap<ThreadId, u64>, Vec<(u64, String)>) {
    let mut ids: Vec<ThreadId> = s.thread_ids().collect();
    for (_, t) in s.trees() {
        ids.extend(t.spans().iter().map(|sp| sp.thread));
    }
    ids.extend(s.releases().all().iter().map(|r| r.thread));
    ids.sort_unstable();
    ids.dedup();
    let mut by_name: HashMap<String, u64> = HashMap::new();
    let mut names = Vec::new();
    let mut track = HashMap::new();
    for id in ids {
        let name = match s.thread_name(id) {
            n if n == "?" => format!("thread {id}"),
            n => n.into_owned(),
        };
        let next = by_name.len() as u64 + 1;
        let tid = *by_name.entry(name.clone()).or_insert_with(|| {
            names.push((next, name));
            next
        });
        track.insert(id, tid);
    }
    (track, names)
}

/// Writes the whole trace of `model` to `out`; `rule` decides which gaps are flagged.
pub fn write_chrome_trace(model: &Model, rule: &GapRule, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
    let mut ev = Events { out, first: true };
    for (si, s) in model.sessions().iter().enumerate() {
        session(&mut ev, si, s, rule)?;
    }
    ev.out.write_all(b"\n]}\n")
}

fn session<W: Write>(
    ev: &mut Events<'_, W>,
    si: usize,
    s: &Session,
    rule: &GapRule,
) -> io::Result<()> {
    let pid = si as u64 + 1;
    let pname = s
        .hello()
        .map(|h| format!("{} (pid {})", h.prover_name, h.pid))
        .unwrap_or_else(|| "prover".into());
    ev.push(
        &json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}}),
    )?;
    let (track, names) = thread_tracks(s);
    for (tid, name) in &names {
        ev.push(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}))?;
        ev.push(&json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}))?;
    }
    let tid_of = |thread: ThreadId| track.get(&thread).copied().unwrap_or(0);
    for (proof, t) in s.trees() {
        // Spans outside every proof were filed under proof 0 (the wire's "none").
        let proof = proof.map_or(0, |p| p.get());
        for sp in t.spans() {
            let end = sp.end_or(s.now());
            ev.push(&json!({
                "ph": "X", "name": s.name(sp.name), "cat": "span",
                "pid": pid, "tid": tid_of(sp.thread), "ts": us(sp.start), "dur": us(end - sp.start),
                "args": {"proof": proof, "span": sp.id, "parent": sp.parent, "open": sp.end.is_none()}
            }))?;
        }
    }
    for r in s.releases().all() {
        // Who freed it, and the whole stack, when the probe captured one.
        let stack = r.stack.and_then(|id| s.stack(id));
        let who = crate::analysis::frames::who_of(s, r);
        ev.push(&json!({
            "ph": "X", "name": format!("free {}", crate::format::bytes(r.bytes)), "cat": "release",
            "pid": pid, "tid": tid_of(r.thread), "ts": us(r.ts), "dur": us(r.inside_ns.max(1)),
            "args": {"bytes": r.bytes, "span": r.span, "freed_by": who, "stack": stack}
        }))?;
    }
    gaps(ev, pid, s, rule)?;
    gpu(ev, si, s, rule)?;
    for a in s.alloc_samples().all() {
        ev.push(
            &json!({"ph": "C", "name": "memory", "pid": pid, "ts": us(a.ts),
            "args": {"live_bytes": a.live_bytes, "rss_bytes": a.rss_bytes}}),
        )?;
    }
    Ok(())
}

/// Each proof's listed gaps (as the report lists them) on the gap lanes, diagnosis in args.
fn gaps<W: Write>(ev: &mut Events<'_, W>, pid: u64, s: &Session, rule: &GapRule) -> io::Result<()> {
    let mut all = Vec::new();
    for p in s.proofs() {
        let (listed, _, _) = gap_listing(s, p, rule);
        all.extend(listed.into_iter().map(|l| (p, l)));
    }
    all.sort_by_key(|(_, l)| (l.gap.at.start, l.gap.at.end));
    let lane = lanes(all.iter().map(|(_, l)| (l.gap.at.start, l.gap.at.end)));
    let used = lane.iter().copied().max().map_or(0, |m| m + 1);
    for l in 0..used {
        let name = if l == 0 {
            "unaccounted".to_owned()
        } else {
            format!("unaccounted ({})", l + 1)
        };
        ev.push(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": GAP_TID + l, "args": {"name": name}}))?;
    }
    for ((p, l), lane) in all.iter().zip(lane) {
        let (g, d) = (&l.gap, &l.diagnosis);
        ev.push(&json!({
            "ph": "X", "name": format!("gap in {}", s.name(l.span.name)), "cat": "gap",
            "pid": pid, "tid": GAP_TID + lane, "ts": us(g.at.start), "dur": us(g.at.len()),
            "args": {"proof": p.id(), "flagged": g.flagged, "place": g.place.as_str(),
                     "share_of_span": g.at.len() as f64 / l.span_len as f64,
                     "kind": d.kind.as_str(), "diagnosis": d.sentence()}
        }))?;
    }
    Ok(())
}

/// GPU spans on lanes per device and stream, and the NVML counters.
fn gpu<W: Write>(ev: &mut Events<'_, W>, si: usize, s: &Session, rule: &GapRule) -> io::Result<()> {
    let mut spans: Vec<(u64, &DeviceSpan)> = s
        .trees()
        .flat_map(|(p, t)| {
            t.gpu_spans()
                .iter()
                .map(move |g| (p.map_or(0, |p| p.get()), g))
        })
        .collect();
    spans.sort_by_key(|(_, g)| (g.device, g.stream, g.start, g.end));
    let mut devices: Vec<u32> = s.gpu_samples().keys().copied().collect();
    devices.extend(spans.iter().map(|(_, g)| g.device));
    devices.sort_unstable();
    devices.dedup();
    for dev in &devices {
        ev.push(
            &json!({"ph": "M", "name": "process_name", "pid": gpu_pid(si, *dev), "tid": 0,
            "args": {"name": format!("GPU {dev}")}}),
        )?;
    }
    for group in spans.chunk_by(|a, b| (a.1.device, a.1.stream) == (b.1.device, b.1.stream)) {
        let (dev, stream) = (group[0].1.device, group[0].1.stream);
        let lane = lanes(group.iter().map(|(_, g)| (g.start, g.end)));
        let used = lane.iter().copied().max().map_or(0, |m| m + 1);
        let base = u64::from(stream) * LANES_PER_STREAM;
        for l in 0..used {
            let name = if l == 0 {
                format!("stream {stream}")
            } else {
                format!("stream {stream} (overlapping, {})", l + 1)
            };
            ev.push(&json!({"ph": "M", "name": "thread_name", "pid": gpu_pid(si, dev), "tid": base + l, "args": {"name": name}}))?;
        }
        for ((proof, g), l) in group.iter().zip(lane) {
            ev.push(&json!({
                "ph": "X", "name": s.name(g.name), "cat": "gpu",
                "pid": gpu_pid(si, dev), "tid": base + l, "ts": us(g.start), "dur": us(g.end - g.start),
                "args": {"proof": proof, "launched_by": g.span, "stream": stream}
            }))?;
        }
    }
    // Each proof's GPU use: an instant at the proof's start, the finding in its args.
    for p in s.proofs() {
        let Some(start) = p.outer().map(|o| o.start) else {
            continue;
        };
        for u in crate::analysis::gpu_use(s, p, rule.gpu_idle_fraction) {
            ev.push(&json!({
                "ph": "i", "s": "p", "cat": "gpu_use",
                "name": format!("GPU {} busy {:.0}% of proof {}", u.device, u.device_busy_share * 100.0, p.id()),
                "pid": gpu_pid(si, u.device), "tid": 0, "ts": us(start),
                "args": {"proof": p.id(), "busy_share": u.busy_share, "busy_ns": u.busy_ns,
                         "device_busy_share": u.device_busy_share, "device_busy_ns": u.device_busy_ns,
                         "source": u.source, "idle_during": u.idle_during, "finding": u.finding}
            }))?;
        }
    }
    for (dev, series) in s.gpu_samples() {
        for g in series.all() {
            let mut args = serde_json::Map::new();
            if let Some(u) = g.util_pct {
                args.insert("util_pct".into(), json!(u));
            }
            if let Some(m) = g.mem_used_bytes {
                args.insert("mem_used_bytes".into(), json!(m));
            }
            if let Some(p) = g.power_mw {
                args.insert("power_w".into(), json!(p as f64 / 1000.0));
            }
            if let Some(c) = g.sm_clock_mhz {
                args.insert("sm_clock_mhz".into(), json!(c));
            }
            ev.push(&json!({"ph": "C", "name": "gpu", "pid": gpu_pid(si, *dev), "ts": us(g.ts), "args": args}))?;
        }
    }
    Ok(())
}

/// The whole trace as a string (for tests and small sessions).
pub fn chrome_trace(model: &Model, rule: &GapRule) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_chrome_trace(model, rule, &mut out);
    String::from_utf8(out).unwrap_or_default()
}
