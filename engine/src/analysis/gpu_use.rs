//! How much of a proof each GPU was busy, and what ran while it idled. An idle GPU is a
//! finding like a gap: on a GPU prover, the wall time the device waits for the CPU (synthesis,
//! the epilogue, a synchronous release) is throughput nobody gets back unless batches overlap.
//! Busy time is the union of the proof's GPU spans on that device (exact); without GPU spans,
//! NVML's utilisation samples over the proof stand in (each sample is the share of its period a
//! kernel ran). When proofs overlap (the next batch synthesised beside this one's GPU phases),
//! the device also runs other proofs' work inside this proof's window: the device's busy share
//! counts every proof's GPU spans, and the idle finding is about the device, not the proof.

use super::gaps::Interval;
use crate::format::dur;
use crate::model::{DeviceSpan, Proof, Session};

/// Where a busy share came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BusySource {
    GpuSpans,
    Nvml,
}

/// One GPU over one proof.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuUse {
    pub device: u32,
    pub source: BusySource,
    /// This proof's own GPU work on the device.
    pub busy_ns: u64,
    pub proof_ns: u64,
    /// busy / proof, 0..=1.
    pub busy_share: f64,
    /// The device's busy time inside the proof's window, any proof's work (equal to `busy_ns`
    /// when no other proof ran on it meanwhile, and for NVML, which sees the device).
    pub device_busy_ns: u64,
    /// device_busy / proof, 0..=1: what the idle finding is about.
    pub device_busy_share: f64,
    /// Phases (children of the outer span) that ran while the GPU idled: (phase, thread, ns),
    /// most first.
    pub idle_during: Vec<(String, String, u64)>,
    /// The finding's sentence when the GPU idled more than the rule allows.
    pub finding: Option<String>,
}

/// Merges intervals (any order) into sorted disjoint ones.
fn union(mut v: Vec<Interval>) -> Vec<Interval> {
    v.sort();
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for i in v.into_iter().filter(|i| !i.is_empty()) {
        match out.last_mut() {
            Some(last) if i.start <= last.end => last.end = last.end.max(i.end),
            _ => out.push(i),
        }
    }
    out
}

/// The parts of `range` the sorted disjoint `busy` intervals leave.
fn complement(range: Interval, busy: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    let mut at = range.start;
    for b in busy {
        if b.start > at {
            out.push(Interval::new(at, b.start.min(range.end)));
        }
        at = at.max(b.end);
    }
    if at < range.end {
        out.push(Interval::new(at, range.end));
    }
    out.retain(|i| !i.is_empty());
    out
}

/// Devices the proof used or could have: the session's GPUs, and any its GPU spans name.
fn devices(session: &Session, proof: &Proof) -> Vec<u32> {
    let mut d: Vec<u32> = session
        .hello()
        .map(|h| h.gpus.iter().map(|g| g.index).collect())
        .unwrap_or_default();
    d.extend(proof.gpu_spans().iter().map(|g| g.device));
    d.sort_unstable();
    d.dedup();
    d
}

/// How busy one device was over a proof's window, and when it idled.
struct Busy {
    source: BusySource,
    busy_ns: u64,
    device_busy_ns: u64,
    idle: Vec<Interval>,
}

/// From GPU spans: this proof's on `device`, and every other proof's work inside the window
/// (`others`); `None` when this proof left none on it.
fn busy_from_spans(proof: &Proof, others: &[&Proof], device: u32, range: Interval) -> Option<Busy> {
    let clip = |g: &DeviceSpan| Interval::new(g.start.max(range.start), g.end.min(range.end));
    let spans: Vec<Interval> = proof
        .gpu_spans()
        .iter()
        .filter(|g| g.device == device)
        .map(clip)
        .collect();
    if spans.is_empty() {
        return None;
    }
    let busy_ns = union(spans.clone()).iter().map(Interval::len).sum();
    let mut all = spans;
    all.extend(
        others
            .iter()
            .flat_map(|q| q.gpu_spans().iter())
            .filter(|g| g.device == device)
            .map(clip),
    );
    let device_busy = union(all);
    Some(Busy {
        source: BusySource::GpuSpans,
        busy_ns,
        device_busy_ns: device_busy.iter().map(Interval::len).sum(),
        idle: complement(range, &device_busy),
    })
}

/// NVML's utilisation below this counts a sample's period as idle.
const IDLE_UTIL_PCT: u8 = 10;

/// From NVML: each reading over the window it averages ([`super::nvml`]); `None` without
/// readings for the range.
fn busy_from_nvml(session: &Session, device: u32, range: Interval) -> Option<Busy> {
    let readings = super::nvml::readings(session, device, range);
    let mean = super::nvml::mean_util(session, device, range)?;
    let busy_ns = (range.len() as f64 * mean / 100.0) as u64;
    let idle = readings
        .iter()
        .filter(|r| r.1 < IDLE_UTIL_PCT)
        .map(|r| Interval::new(r.0.start.max(range.start), r.0.end.min(range.end)))
        .filter(|i| !i.is_empty())
        .collect();
    Some(Busy {
        source: BusySource::Nvml,
        busy_ns,
        device_busy_ns: busy_ns,
        idle: union(idle),
    })
}

/// The phases that ran while the device idled: (phase, thread, ns), the three longest; a
/// phase run by several threads (one per GPU worker) counts once, its longest.
fn idle_phases(session: &Session, proof: &Proof, idle: &[Interval]) -> Vec<(String, String, u64)> {
    let mut during: Vec<(String, String, u64)> = proof
        .phases()
        .filter_map(|c| {
            let ci = Interval::new(c.start, c.end_or(session.now()));
            let ov: u64 = idle.iter().map(|i| i.overlap(&ci)).sum();
            (ov > 0).then(|| {
                (
                    session.name(c.name).to_owned(),
                    session.thread_name(c.thread).into_owned(),
                    ov,
                )
            })
        })
        .collect();
    during.sort_by(|x, y| x.0.cmp(&y.0).then(y.2.cmp(&x.2)));
    during.dedup_by(|later, first| later.0 == first.0);
    during.sort_by_key(|d| std::cmp::Reverse(d.2));
    during.truncate(3);
    during
}

/// Each GPU's use over `proof`, with a finding where it idled more than `max_idle` (0..=1) of
/// the proof. Empty for a proof that ran on the CPU or whose GPUs left no evidence.
pub fn gpu_use(session: &Session, proof: &Proof, max_idle: f64) -> Vec<GpuUse> {
    let gpu_proof =
        super::backend::of_proof(session, proof).name == "gpu" || !proof.gpu_spans().is_empty();
    let (Some(outer), true) = (proof.outer(), gpu_proof) else {
        return Vec::new();
    };
    let range = Interval::new(outer.start, outer.end_or(session.now()));
    if range.is_empty() {
        return Vec::new();
    }
    // Other proofs whose windows meet this one, for their GPU work inside it.
    let others: Vec<&Proof> = session
        .proofs()
        .filter(|q| q.id() != proof.id() && !q.gpu_spans().is_empty())
        .filter(|q| {
            q.range(session.now())
                .is_some_and(|(a, b)| a < range.end && range.start < b)
        })
        .collect();
    let mut out = Vec::new();
    for device in devices(session, proof) {
        let Some(busy) = busy_from_spans(proof, &others, device, range)
            .or_else(|| busy_from_nvml(session, device, range))
        else {
            continue;
        };
        let device_busy_share = busy.device_busy_ns as f64 / range.len() as f64;
        let mut u = GpuUse {
            device,
            source: busy.source,
            busy_ns: busy.busy_ns,
            proof_ns: range.len(),
            busy_share: busy.busy_ns as f64 / range.len() as f64,
            device_busy_ns: busy.device_busy_ns,
            device_busy_share,
            idle_during: idle_phases(session, proof, &busy.idle),
            finding: None,
        };
        if 1.0 - device_busy_share > max_idle {
            u.finding = Some(sentence(&u));
        }
        out.push(u);
    }
    out
}

fn sentence(u: &GpuUse) -> String {
    let idle = (1.0 - u.device_busy_share) * 100.0;
    let mut s = format!("GPU {} idle {idle:.0}% of the proof", u.device);
    match u.idle_during.first() {
        Some((phase, thread, ns)) => {
            s += &format!(" while {phase} ran on {thread} ({} of it)", dur(*ns));
            let others: Vec<String> = u.idle_during[1..]
                .iter()
                .map(|(p, _, ns)| format!("{p} {}", dur(*ns)))
                .collect();
            if !others.is_empty() {
                s += &format!(", then {}", others.join(", "));
            }
            s += &format!(
                ": keep the GPU fed while {phase} runs (overlap it with another batch's GPU work)"
            );
        }
        None => s += " with no phase running: the prover waited between its GPU calls",
    }
    if u.source == BusySource::Nvml {
        s += " (from NVML utilisation: no GPU spans)";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProofId;
    use crate::model::fixture::{Fixture, session};

    const MS: u64 = 1_000_000;

    #[test]
    fn busy_is_the_union_of_gpu_spans_and_the_idle_phases_are_named() {
        let mut f = Fixture::new();
        let main = f.thread(1, "main");
        let gpu = f.thread(2, "gpu-0");
        let outer = f.proof(1, "gpu", "prove", main, 0, 1000 * MS);
        f.span(Some(1), Some(outer), "synthesis", main, 0, 640 * MS);
        let ntt = f.span(Some(1), Some(outer), "ntt_msm_h", gpu, 640 * MS, 1000 * MS);
        // Two overlapping kernels and one apart: 300 ms busy in all.
        for (a, b) in [(650, 800), (700, 850), (900, 1000)] {
            f.gpu_span(ntt, 0, "k", a * MS, b * MS);
        }
        let m = f.model();
        let s = session(&m);
        let p = s.proof(ProofId(1)).unwrap();
        let u = gpu_use(s, p, 0.5);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].busy_ns, 300 * MS);
        assert_eq!(u[0].source, BusySource::GpuSpans);
        assert_eq!(
            u[0].idle_during[0],
            ("synthesis".into(), "main".into(), 640 * MS)
        );
        let f = u[0].finding.as_deref().unwrap();
        assert!(
            f.starts_with("GPU 0 idle 70% of the proof while synthesis ran on main"),
            "{f}"
        );
        assert!(f.contains("keep the GPU fed while synthesis runs"), "{f}");
        // Under the threshold: measured, not flagged.
        assert!(gpu_use(s, p, 0.8)[0].finding.is_none());
    }
}
