//! GPU aggregates: each device over the session (NVML), and each proof's device work grouped
//! by device, name and launching span.

use crate::model::{Proof, Session};
use serde::Serialize;

/// One GPU over the whole session, from its NVML samples.
#[derive(Debug, Clone, Serialize)]
pub struct GpuSummary {
    pub index: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub samples: usize,
    pub util_avg_pct: Option<f64>,
    pub util_max_pct: Option<u8>,
    pub mem_used_max_bytes: Option<u64>,
    pub power_avg_w: Option<f64>,
    pub energy_used_j: Option<f64>,
}

pub fn gpu_summary(s: &Session) -> Vec<GpuSummary> {
    let hello_gpus = s.hello().map(|h| h.gpus.clone()).unwrap_or_default();
    let mut out: Vec<GpuSummary> = hello_gpus
        .iter()
        .map(|g| {
            let series = s.gpu_samples().get(&g.index);
            let pts = series.map(|x| x.all()).unwrap_or(&[]);
            let utils: Vec<u8> = pts.iter().filter_map(|x| x.util_pct).collect();
            let power: Vec<u32> = pts.iter().filter_map(|x| x.power_mw).collect();
            let energy: Vec<u64> = pts.iter().filter_map(|x| x.energy_mj).collect();
            GpuSummary {
                index: g.index,
                name: g.name.clone(),
                memory_total_bytes: g.memory_total_bytes,
                samples: pts.len(),
                util_avg_pct: (!utils.is_empty())
                    .then(|| utils.iter().map(|&u| u as f64).sum::<f64>() / utils.len() as f64),
                util_max_pct: utils.iter().max().copied(),
                mem_used_max_bytes: pts.iter().filter_map(|x| x.mem_used_bytes).max(),
                power_avg_w: (!power.is_empty()).then(|| {
                    power.iter().map(|&p| p as f64).sum::<f64>() / power.len() as f64 / 1000.0
                }),
                energy_used_j: match (energy.first(), energy.last()) {
                    (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1000.0),
                    _ => None,
                },
            }
        })
        .collect();
    out.sort_by_key(|g| g.index);
    out
}

/// GPU spans of one name on one device, launched from one phase, within a proof.
#[derive(Debug, Clone, Serialize)]
pub struct GpuWork {
    pub device: u32,
    pub name: String,
    /// The span that launched them (empty when none was named).
    pub launched_in: String,
    pub count: usize,
    /// When the first began, from the proof's start.
    pub first_offset_ns: u64,
    /// Their durations added up.
    pub busy_ns: u64,
}

/// The proof's GPU spans grouped by device, name and launching span, in order of first start.
pub fn gpu_work(s: &Session, p: &Proof, proof_start: u64) -> Vec<GpuWork> {
    let mut out: Vec<GpuWork> = Vec::new();
    let mut spans: Vec<_> = p.gpu_spans().iter().collect();
    spans.sort_by_key(|g| g.start);
    for g in spans {
        let name = s.name(g.name);
        let launched_in = g
            .span
            .and_then(|id| p.span(id))
            .map_or("", |sp| s.name(sp.name));
        let busy = g.end.saturating_sub(g.start);
        match out
            .iter_mut()
            .find(|w| w.device == g.device && w.name == name && w.launched_in == launched_in)
        {
            Some(w) => {
                w.count += 1;
                w.busy_ns += busy;
            }
            None => out.push(GpuWork {
                device: g.device,
                name: name.to_owned(),
                launched_in: launched_in.to_owned(),
                count: 1,
                first_offset_ns: g.start.saturating_sub(proof_start),
                busy_ns: busy,
            }),
        }
    }
    out
}
