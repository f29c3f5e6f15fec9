//! `--format chrome`: Chrome trace-event JSON (opens in Perfetto and chrome://tracing): spans
//! as complete events per thread, GPU spans per device and stream, large frees as events on
//! their thread, memory and GPU counters.

use crate::model::Model;
use serde_json::{Value, json};

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Process ids: each session is a process; its GPUs are processes of their own.
fn gpu_pid(session: usize, device: u32) -> u64 {
    (session as u64 + 1) * 1000 + device as u64 + 1
}

pub fn chrome_trace(model: &Model) -> String {
    let mut ev: Vec<Value> = Vec::new();
    for (si, s) in model.sessions.iter().enumerate() {
        let pid = si as u64 + 1;
        let pname = s
            .hello
            .as_ref()
            .map(|h| format!("{} (pid {})", h.prover_name, h.pid))
            .unwrap_or_else(|| "prover".into());
        ev.push(json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}}));
        let mut threads: Vec<_> = s.threads.iter().collect();
        threads.sort_by_key(|(id, _)| **id);
        for (id, (name, _)) in threads {
            ev.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": id, "args": {"name": name}}));
        }
        for p in s.proofs.values().chain(std::iter::once(&s.loose)) {
            for sp in &p.spans {
                let end = sp.end_or(s.now);
                ev.push(json!({
                    "ph": "X", "name": s.name(sp.name), "cat": "span",
                    "pid": pid, "tid": sp.thread, "ts": us(sp.start), "dur": us(end - sp.start),
                    "args": {"proof": p.id, "span": sp.id, "parent": sp.parent, "open": sp.end.is_none()}
                }));
            }
            for g in &p.gpu_spans {
                ev.push(json!({
                    "ph": "X", "name": s.name(g.name), "cat": "gpu",
                    "pid": gpu_pid(si, g.device), "tid": g.stream, "ts": us(g.start), "dur": us(g.end - g.start),
                    "args": {"proof": p.id, "launched_by": g.span}
                }));
            }
        }
        for dev in s.gpu.keys() {
            ev.push(
                json!({"ph": "M", "name": "process_name", "pid": gpu_pid(si, *dev), "tid": 0,
                "args": {"name": format!("GPU {dev}")}}),
            );
        }
        for r in s.releases.all() {
            ev.push(json!({
                "ph": "X", "name": format!("free {}", crate::format::bytes(r.bytes)), "cat": "release",
                "pid": pid, "tid": r.thread, "ts": us(r.ts), "dur": us(r.inside_ns.max(1)),
                "args": {"bytes": r.bytes, "span": r.span}
            }));
        }
        for a in s.alloc.all() {
            ev.push(
                json!({"ph": "C", "name": "memory", "pid": pid, "ts": us(a.ts),
                "args": {"live_bytes": a.live_bytes, "rss_bytes": a.rss_bytes}}),
            );
        }
        for (dev, series) in &s.gpu {
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
                ev.push(json!({"ph": "C", "name": "gpu", "pid": gpu_pid(si, *dev), "ts": us(g.ts), "args": args}));
            }
        }
    }
    serde_json::to_string(&json!({"traceEvents": ev, "displayTimeUnit": "ms"})).unwrap_or_default()
}
