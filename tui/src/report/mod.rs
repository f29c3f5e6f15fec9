//! Headless reports, built once from the model: a bug report to paste (`text`), a documented
//! JSON document (`json`, schema in docs/CLI.md), and a Chrome trace that Perfetto opens
//! (`chrome`).

mod chrome;
mod json;
mod text;

pub use chrome::{chrome_trace, write_chrome_trace};
pub use json::json;
pub use text::{Detail, SUMMARY_ABOVE_CHARS, render as text_at, text, text_that_fits};

pub use crate::analysis::Place;
use crate::analysis::{Diagnosis, GapRule, PhaseStats, gap_listing, phase_stats};
use crate::model::{Model, Proof, Session};
use serde::Serialize;

/// Output format of `--headless`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Chrome,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub proofscope_version: String,
    pub protocol: String,
    pub source: String,
    pub gap_rule: GapRuleReport,
    pub sessions: Vec<SessionReport>,
    pub phase_stats: Vec<PhaseStats>,
    pub evicted_proofs: u64,
    pub evicted_events: u64,
    pub bad_frames: u64,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct GapRuleReport {
    pub min_fraction: f64,
    pub min_ns: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    pub prover: String,
    pub prover_version: String,
    pub pid: u32,
    pub hostname: String,
    pub session_start_unix_ns: u64,
    pub clock: String,
    pub backend: String,
    pub backend_reason: String,
    pub gpus: Vec<GpuReport>,
    pub gpu_unavailable_reason: Option<String>,
    pub gpu_driver_version: Option<String>,
    pub cpu_count: u32,
    pub total_ram_bytes: u64,
    /// Empty when the prover did not say (protocol 1.0).
    pub cpu_model: String,
    pub os: String,
    pub large_block_threshold: u64,
    pub command_line: Vec<String>,
    pub proofs: Vec<ProofReport>,
    /// Over the completed proofs; `None` before one completes.
    pub throughput: Option<Throughput>,
    pub releases: ReleaseTotals,
    pub dropped: Vec<(String, u64)>,
    pub history_evicted_events: u64,
    pub goodbye: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GpuReport {
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

#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    pub name: String,
    pub thread: String,
    pub start_offset_ns: u64,
    pub duration_ns: u64,
    /// `None` when no memory sample fell inside the phase.
    pub memory: Option<PhaseMemory>,
}

/// Memory over one phase, from the allocator and NVML samples taken during it (every 10 ms
/// and 100 ms by default, so a phase shorter than that may have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseMemory {
    /// Heap bytes live (counting allocator) at the last sample before the phase began.
    pub live_before: Option<u64>,
    /// The most heap bytes live at any sample during the phase or the one just before it.
    pub live_max: u64,
    /// Heap bytes live at the last sample during the phase.
    pub live_end: u64,
    /// The largest resident set seen during the phase (0: unknown).
    pub rss_max: u64,
    /// The most device memory used on any GPU during the phase.
    pub gpu_used_max: Option<u64>,
}

/// What the samples say about memory in [start, end).
pub fn phase_memory(s: &Session, start: u64, end: u64) -> Option<PhaseMemory> {
    let end = end.max(start + 1);
    let during = s.alloc.range(start, end);
    let last = during.last()?;
    let gpu_used_max = s
        .gpu
        .values()
        .flat_map(|g| g.range(start, end))
        .filter_map(|g| g.mem_used_bytes)
        .max();
    let live_before = s.alloc.at(start.saturating_sub(1)).map(|a| a.live_bytes);
    let live_max = during.iter().map(|a| a.live_bytes).max().unwrap_or(0);
    Some(PhaseMemory {
        live_before,
        live_max: live_max.max(live_before.unwrap_or(0)),
        live_end: last.live_bytes,
        rss_max: during.iter().map(|a| a.rss_bytes).max().unwrap_or(0),
        gpu_used_max,
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct GapReport {
    pub span: String,
    pub place: Place,
    pub start_offset_ns: u64,
    pub duration_ns: u64,
    pub share_of_span: f64,
    pub flagged: bool,
    pub diagnosis: Diagnosis,
}

/// Large frees around one proof, by the span they are attributed to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProofReleases {
    /// Attributed to the outer span itself: outside every phase, inside the wrapper timer.
    pub in_outer_outside_phases: ReleaseGroup,
    /// Attributed to a phase or a span below one (temporaries).
    pub in_phases: ReleaseGroup,
    /// During the outer span on threads with no span of this proof (other work).
    pub elsewhere_during: ReleaseGroup,
    /// After the outer span ended, before the next proof began (detached frees).
    pub after_outer: ReleaseGroup,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseGroup {
    pub count: usize,
    pub bytes: u64,
    pub inside_ns: u64,
    /// (thread, count) pairs.
    pub threads: Vec<(String, usize)>,
    /// The code that freed them, from their call stacks: (who, bytes), most bytes first.
    pub freed_by: Vec<(String, u64)>,
}

impl ReleaseGroup {
    fn add(&mut self, bytes: u64, ns: u64, thread: &str) {
        self.count += 1;
        self.bytes += bytes;
        self.inside_ns += ns;
        match self.threads.iter_mut().find(|(t, _)| t == thread) {
            Some(x) => x.1 += 1,
            None => self.threads.push((thread.to_owned(), 1)),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReleaseTotals {
    pub count: usize,
    pub bytes: u64,
    pub inside_ns: u64,
    pub by_thread: Vec<(String, u64)>,
}

/// The outer span's gaps not listed one by one: each shorter than every listed gap.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SmallGaps {
    pub count: usize,
    pub total_ns: u64,
    pub largest_ns: u64,
    /// The outer span's tail, when it is one of them.
    pub tail_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProofReport {
    pub id: u64,
    pub circuit: String,
    pub constraints: u64,
    pub circuits: u32,
    pub backend: String,
    pub synthetic_srs: bool,
    pub complete: bool,
    pub verification: String,
    pub error: Option<String>,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub thread: String,
    pub phases: Vec<PhaseReport>,
    pub unaccounted_ns: u64,
    pub gaps: Vec<GapReport>,
    pub small_gaps: SmallGaps,
    pub releases: ProofReleases,
    /// Device work reported as GPU spans, per device, name and launching phase.
    pub gpu_work: Vec<GpuWork>,
    /// Each GPU's busy share of the proof, what ran while it idled, and the finding when it
    /// idled more than the rule allows.
    pub gpu_use: Vec<crate::analysis::GpuUse>,
    /// Markers with a text inside the proof, (name, text), in order: what the prover said
    /// about it (e.g. `memory_check`: how it was admitted beside another batch).
    pub notes: Vec<(String, String)>,
}

/// Proofs per minute over a session's completed proofs, and how much they overlapped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    pub proofs: u64,
    /// From the first proof's end to the last one's (a single proof: its own span).
    pub window_ns: u64,
    /// Proofs completed per minute once the first has: (proofs − 1) over the window, the rate
    /// a pipeline keeps once full (the live header's figure); a single proof: one over its span.
    pub per_minute: f64,
    /// From the first proof's start to the last one's end.
    pub run_ns: u64,
    /// Proofs over `run_ns`: the rate of a run this short, pipeline fill included (a pipeline's
    /// first proof completes late, which flatters `per_minute` over few proofs).
    pub per_minute_run: f64,
    /// Proofs whose outer span overlapped another proof's.
    pub overlapping: u64,
    /// The most outer spans open at once.
    pub most_in_flight: u32,
}

/// The throughput of proofs with outer spans `[start, end)`; `None` without a proof.
pub fn throughput(spans: &[(u64, u64)]) -> Option<Throughput> {
    let first_end = spans.iter().map(|x| x.1).min()?;
    let last_end = spans.iter().map(|x| x.1).max()?;
    let first_start = spans.iter().map(|x| x.0).min()?;
    let run_ns = last_end.saturating_sub(first_start);
    let (window_ns, intervals) = if spans.len() == 1 {
        (spans[0].1.saturating_sub(spans[0].0), 1)
    } else {
        (last_end - first_end, spans.len() - 1)
    };
    let overlapping = spans
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            spans
                .iter()
                .enumerate()
                .any(|(j, b)| *i != j && a.0 < b.1 && b.0 < a.1)
        })
        .count() as u64;
    // Sweep: +1 at each start, −1 at each end (ends first at equal times).
    let mut edges: Vec<(u64, i32)> = spans.iter().flat_map(|x| [(x.0, 1), (x.1, -1)]).collect();
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        open += d;
        most = most.max(open);
    }
    Some(Throughput {
        proofs: spans.len() as u64,
        window_ns,
        per_minute: if window_ns > 0 {
            intervals as f64 * 60e9 / window_ns as f64
        } else {
            0.0
        },
        run_ns,
        per_minute_run: if run_ns > 0 {
            spans.len() as f64 * 60e9 / run_ns as f64
        } else {
            0.0
        },
        overlapping,
        most_in_flight: most.max(0) as u32,
    })
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
fn gpu_work(s: &Session, p: &Proof, proof_start: u64) -> Vec<GpuWork> {
    let mut out: Vec<GpuWork> = Vec::new();
    let mut spans: Vec<_> = p.gpu_spans.iter().collect();
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

/// The report of one proof of session `s`; `next_start` (the start of the first proof that
/// begins after this one ended) bounds the releases counted as after it. `None` when the proof has no outer span yet.
pub fn proof_report(
    s: &Session,
    p: &Proof,
    next_start: Option<u64>,
    rule: &GapRule,
) -> Option<ProofReport> {
    let outer = *p.outer()?;
    let (a, b) = (outer.start, outer.end_or(s.now));
    let mut phases: Vec<PhaseReport> = p
        .children(outer.id)
        .map(|c| PhaseReport {
            name: s.name(c.name).to_owned(),
            thread: s.thread_name(c.thread).into_owned(),
            start_offset_ns: c.start.saturating_sub(a),
            duration_ns: c.end_or(s.now) - c.start,
            memory: phase_memory(s, c.start, c.end_or(s.now)),
        })
        .collect();
    phases.sort_by_key(|x| (x.start_offset_ns, x.name.clone()));
    let (listed, summed, unaccounted_ns) = gap_listing(s, p, rule);
    let gaps = listed
        .into_iter()
        .map(|l| GapReport {
            span: s.name(l.span.name).to_owned(),
            place: l.gap.place,
            start_offset_ns: l.gap.at.start - a,
            duration_ns: l.gap.at.len(),
            share_of_span: l.gap.at.len() as f64 / l.span_len as f64,
            flagged: l.gap.flagged,
            diagnosis: l.diagnosis,
        })
        .collect();
    let small = SmallGaps {
        count: summed.count,
        total_ns: summed.total_ns,
        largest_ns: summed.largest_ns,
        tail_ns: summed.tail_ns,
    };
    // Releases around the proof. A free in a proof's span is that proof's. A free in no proof's
    // span is counted once: by the proof whose window holds it (the one that began first, when
    // proofs overlap), else by the proof that ended last before it.
    let mut rel = ProofReleases::default();
    let until = next_start.unwrap_or(u64::MAX);
    let windows: Vec<(u64, u64, u64)> = s
        .proofs
        .values()
        .filter(|q| q.id != p.id)
        .filter_map(|q| q.outer().map(|o| (q.id, o.start, o.end_or(s.now))))
        .collect();
    for r in s.releases.range(a, until.max(b + 1)) {
        let own = r.span.is_some_and(|sp| p.index.contains_key(&sp));
        if !own && r.span.is_some_and(|sp| s.span_proof.contains_key(&sp)) {
            continue;
        }
        let t = r.ts;
        let group = if t > b {
            // After the outer span: the proof's own (its verification) or detached frees.
            let held = windows.iter().any(|&(_, qa, qb)| qa <= t && t <= qb);
            let ended_later = windows.iter().any(|&(_, _, qb)| b < qb && qb < t);
            if !own && (t >= until || held || ended_later) {
                continue;
            }
            &mut rel.after_outer
        } else if own && r.span == Some(outer.id) {
            &mut rel.in_outer_outside_phases
        } else if own {
            &mut rel.in_phases
        } else if windows
            .iter()
            .any(|&(_, qa, qb)| qa < a && qa <= t && t <= qb)
        {
            continue; // an older proof in flight holds it
        } else {
            &mut rel.elsewhere_during
        };
        group.add(r.bytes, r.inside_ns, &s.thread_name(r.thread));
        crate::analysis::frames::tally(&mut group.freed_by, s, r);
    }
    // What the prover said about the proof in markers with a text (how `serve` admitted it
    // beside another batch, …); a `cause:` marker is a gap's diagnosis and shows there.
    let notes = p
        .markers
        .iter()
        .filter_map(|m| {
            let name = s.name(m.name);
            let text = m.text.as_deref()?;
            (!name.starts_with(crate::analysis::diagnosis::CAUSE_PREFIX))
                .then(|| (name.to_owned(), text.to_owned()))
        })
        .collect();
    let begin = p.begin.as_ref();
    Some(ProofReport {
        id: p.id,
        circuit: begin.map(|x| x.circuit.clone()).unwrap_or_default(),
        constraints: begin.map_or(0, |x| x.constraints),
        circuits: begin.map_or(0, |x| x.circuits),
        backend: begin.map(|x| x.backend.clone()).unwrap_or_default(),
        synthetic_srs: begin.is_some_and(|x| x.synthetic_srs),
        complete: p.done(),
        verification: p
            .end
            .as_ref()
            .map_or("in progress", |e| e.verification.as_str())
            .to_owned(),
        error: p.end.as_ref().and_then(|e| e.error.clone()),
        start_ns: a,
        duration_ns: b - a,
        thread: s.thread_name(outer.thread).into_owned(),
        phases,
        unaccounted_ns,
        gaps,
        small_gaps: small,
        releases: rel,
        gpu_work: gpu_work(s, p, a),
        gpu_use: crate::analysis::gpu_use(s, p, rule.gpu_idle_fraction),
        notes,
    })
}

fn gpu_report(s: &Session) -> Vec<GpuReport> {
    let hello_gpus = s.hello.as_ref().map(|h| h.gpus.clone()).unwrap_or_default();
    let mut out: Vec<GpuReport> = hello_gpus
        .iter()
        .map(|g| {
            let series = s.gpu.get(&g.index);
            let pts = series.map(|x| x.all()).unwrap_or(&[]);
            let utils: Vec<u8> = pts.iter().filter_map(|x| x.util_pct).collect();
            let power: Vec<u32> = pts.iter().filter_map(|x| x.power_mw).collect();
            let energy: Vec<u64> = pts.iter().filter_map(|x| x.energy_mj).collect();
            GpuReport {
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

impl Report {
    /// Keeps, in each session, only the `n` proofs that took longest (in id order): `--slowest`.
    /// Keeps the first `n` proofs of the whole report (in session order), for `replay --proofs`.
    pub fn keep_first(&mut self, n: usize) {
        let mut left = n;
        for s in &mut self.sessions {
            let k = left.min(s.proofs.len());
            s.proofs.truncate(k);
            left -= k;
        }
    }

    pub fn keep_slowest(&mut self, n: usize) {
        for s in &mut self.sessions {
            let mut d: Vec<u64> = s.proofs.iter().map(|p| p.duration_ns).collect();
            d.sort_unstable_by(|a, b| b.cmp(a));
            let Some(&cut) = d.get(n.saturating_sub(1)) else {
                continue;
            };
            let mut kept = 0;
            s.proofs.retain(|p| {
                let keep = p.duration_ns >= cut && kept < n;
                kept += usize::from(keep);
                keep
            });
        }
    }
}

/// A marker of this name outside every proof carries a warning for the report's reader in its
/// text (docs/PROTOCOL.md): `import` writes the malformed lines of a log this way, so a
/// recording made from a log still names them.
pub const WARNING_MARKER: &str = "warning";

/// Builds the report of everything the model retains.
pub fn build(model: &Model, rule: &GapRule, source: &str, mut warnings: Vec<String>) -> Report {
    for (i, s) in model.sessions.iter().enumerate() {
        let stated = s.loose.markers.iter();
        for m in stated.filter(|m| s.name(m.name) == WARNING_MARKER) {
            let text = m.text.as_deref().unwrap_or("(no text)");
            warnings.push(if model.sessions.len() > 1 {
                format!("session {}: {text}", i + 1)
            } else {
                text.to_owned()
            });
        }
    }
    let sessions = model
        .sessions
        .iter()
        .map(|s| {
            let h = s.hello.clone().unwrap_or_default();
            let starts: Vec<u64> = s
                .proofs
                .values()
                .filter_map(|p| p.outer().map(|o| o.start))
                .collect();
            let proofs: Vec<ProofReport> = s
                .proofs
                .values()
                .filter_map(|p| {
                    // Frees after the proof count as its own until a proof begins after it
                    // ended (with overlapping proofs the next one began before).
                    let o = p.outer()?;
                    let b = o.end_or(s.now);
                    let next = starts.iter().copied().filter(|&x| x > b).min();
                    proof_report(s, p, next, rule)
                })
                .collect();
            let outer: Vec<(u64, u64)> = s
                .proofs
                .values()
                .filter(|p| p.done())
                .filter_map(|p| p.outer().map(|o| (o.start, o.end_or(s.now))))
                .collect();
            let throughput = throughput(&outer);
            let mut totals = ReleaseTotals::default();
            let mut by_thread: std::collections::BTreeMap<String, u64> = Default::default();
            for r in s.releases.all() {
                totals.count += 1;
                totals.bytes += r.bytes;
                totals.inside_ns += r.inside_ns;
                *by_thread
                    .entry(s.thread_name(r.thread).into_owned())
                    .or_default() += r.inside_ns;
            }
            let mut bt: Vec<(String, u64)> = by_thread.into_iter().collect();
            bt.sort_by_key(|(n, ns)| (std::cmp::Reverse(*ns), n.clone()));
            totals.by_thread = bt;
            let mut dropped: std::collections::BTreeMap<&'static str, u64> = Default::default();
            for (_, counts) in &s.dropped {
                for (k, n) in counts {
                    *dropped.entry(k.name()).or_default() += n;
                }
            }
            SessionReport {
                prover: h.prover_name.clone(),
                prover_version: h.prover_version.clone(),
                pid: h.pid,
                hostname: h.hostname.clone(),
                session_start_unix_ns: h.session_start_unix_ns,
                clock: h.clock.clone(),
                backend: h.backend.clone(),
                backend_reason: h.backend_reason.clone(),
                gpus: gpu_report(s),
                gpu_unavailable_reason: h.gpu_unavailable_reason.clone(),
                gpu_driver_version: h.gpu_driver_version.clone(),
                cpu_count: h.cpu_count,
                total_ram_bytes: h.total_ram_bytes,
                cpu_model: h.cpu_model.clone(),
                os: h.os.clone(),
                large_block_threshold: h.large_block_threshold,
                command_line: report_command_line(&h.command_line),
                proofs,
                throughput,
                releases: totals,
                dropped: dropped
                    .into_iter()
                    .map(|(k, n)| (k.to_owned(), n))
                    .collect(),
                history_evicted_events: s.history_gap.map_or(0, |g| g.evicted_events),
                goodbye: s.goodbye.as_ref().map(|g| g.1.clone()),
            }
        })
        .collect();
    Report {
        proofscope_version: env!("CARGO_PKG_VERSION").into(),
        protocol: probe_protocol::protocol_version(),
        source: source.into(),
        gap_rule: GapRuleReport {
            min_fraction: rule.min_fraction,
            min_ns: rule.min_ns,
        },
        sessions,
        phase_stats: phase_stats(model),
        evicted_proofs: model.evicted_proofs,
        evicted_events: model.evicted_events,
        bad_frames: model.bad_frames,
        warnings,
    }
}

impl Report {
    /// The largest flagged gap as a share of its span, in percent (for `--fail-on-gap`).
    pub fn worst_gap_pct(&self) -> f64 {
        self.sessions
            .iter()
            .flat_map(|s| &s.proofs)
            .flat_map(|p| &p.gaps)
            .map(|g| g.share_of_span * 100.0)
            .fold(0.0, f64::max)
    }

    pub fn proofs(&self) -> usize {
        self.sessions.iter().map(|s| s.proofs.len()).sum()
    }
}

/// A command line as reports show it: at most 64 arguments of at most 200 characters (a report
/// must fit an issue, whatever the prover was called with).
fn report_command_line(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = args
        .iter()
        .take(64)
        .map(|a| match a.char_indices().nth(200) {
            Some((at, _)) => format!("{}…", &a[..at]),
            None => a.clone(),
        })
        .collect();
    if args.len() > 64 {
        out.push(format!("… {} more arguments", args.len() - 64));
    }
    out
}
