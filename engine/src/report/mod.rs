//! Headless reports, built once from the model and the analysis: a bug report to paste
//! (`text`), a documented JSON document (`json`, schema in docs/CLI.md), and a Chrome trace
//! that Perfetto opens (`chrome`). This module is the report's schema and its assembly; every
//! figure in it is computed in `analysis`.

mod chrome;
mod json;
mod text;

pub use chrome::{chrome_trace, write_chrome_trace};
pub use json::json;
pub use text::{Detail, SUMMARY_ABOVE_CHARS, render as text_at, text, text_that_fits};

pub use crate::analysis::Place;
pub use crate::analysis::gpu_summary::{GpuSummary, GpuWork};
pub use crate::analysis::memory::PhaseMemory;
pub use crate::analysis::releases::{
    NotableRelease, ProofReleases, ReleaseGroup, ReleaseSite, ReleaseTotals,
};
pub use crate::analysis::throughput::Throughput;
use crate::analysis::{self, Diagnosis, GapRule, ListedGap, PhaseStats, Summed};
use crate::model::{Model, Proof, Session};
use probe_protocol::markers::{self, Meaning};
use serde::Serialize;

/// Output format of `--headless`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Chrome,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 3] = [Format::Text, Format::Json, Format::Chrome];

    /// The name the command line takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Chrome => "chrome",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    pub gpus: Vec<GpuSummary>,
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
    /// The largest frees, largest first, with who freed them.
    pub largest_releases: Vec<NotableRelease>,
    /// The call sites that spent the most time freeing.
    pub release_sites: Vec<ReleaseSite>,
    pub dropped: Vec<(String, u64)>,
    pub history_evicted_events: u64,
    pub goodbye: Option<String>,
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
    /// 0: the source did not say (a log without `num_circuits=`).
    pub circuits: u32,
    pub backend: String,
    /// Why the backend is believed when the prover did not state it (NVML's process list).
    pub backend_evidence: Option<String>,
    pub synthetic_srs: bool,
    pub complete: bool,
    pub verification: String,
    pub error: Option<String>,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The outer span's name (the wrapper timer, e.g. `prove`).
    pub span: String,
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
    pub gpu_use: Vec<analysis::GpuUse>,
    /// Markers with a text inside the proof, (name, text), in order: what the prover said
    /// about it (e.g. `memory_check`: how it was admitted beside another batch).
    pub notes: Vec<(String, String)>,
}

impl GapReport {
    fn of(l: ListedGap, proof_start: u64, s: &Session) -> GapReport {
        GapReport {
            span: s.name(l.span.name).to_owned(),
            place: l.gap.place,
            start_offset_ns: l.gap.at.start - proof_start,
            duration_ns: l.gap.at.len(),
            share_of_span: l.gap.at.len() as f64 / l.span_len as f64,
            flagged: l.gap.flagged,
            diagnosis: l.diagnosis,
        }
    }
}

impl From<Summed> for SmallGaps {
    fn from(s: Summed) -> SmallGaps {
        SmallGaps {
            count: s.count,
            total_ns: s.total_ns,
            largest_ns: s.largest_ns,
            tail_ns: s.tail_ns,
        }
    }
}

/// The proof's phases (the outer span's children), in order of start (then of arrival: never
/// by name).
fn phases(s: &Session, p: &Proof, proof_start: u64) -> Vec<PhaseReport> {
    let mut spans: Vec<_> = p.phases().collect();
    spans.sort_by_key(|c| (c.start, c.id));
    spans
        .into_iter()
        .map(|c| PhaseReport {
            name: s.name(c.name).to_owned(),
            thread: s.thread_name(c.thread).into_owned(),
            start_offset_ns: c.start.saturating_sub(proof_start),
            duration_ns: c.len_at(s.now()),
            memory: analysis::memory::phase_memory(s, c.start, c.end_or(s.now())),
        })
        .collect()
}

/// What the prover said about the proof in markers with a text (how `serve` admitted it beside
/// another batch, …); a `cause:` marker of a known kind is a gap's diagnosis and shows there.
fn notes(s: &Session, p: &Proof) -> Vec<(String, String)> {
    p.marks()
        .iter()
        .filter_map(|m| {
            let name = s.name(m.name);
            let text = m.text.as_deref()?;
            let stated = matches!(markers::meaning(name), Meaning::Cause(Ok(_)));
            (!stated).then(|| (name.to_owned(), text.to_owned()))
        })
        .collect()
}

/// The report of one proof of session `s`; `next_start` (the start of the first proof that
/// begins after this one ended) bounds the releases counted as after it. `None` when the
/// proof has no outer span yet.
pub fn proof_report(
    s: &Session,
    p: &Proof,
    next_start: Option<u64>,
    rule: &GapRule,
) -> Option<ProofReport> {
    let outer = *p.outer()?;
    let (a, b) = (outer.start, outer.end_or(s.now()));
    let (listed, summed, unaccounted_ns) = analysis::gap_listing(s, p, rule);
    let begin = p.begin();
    let backend = analysis::backend::of_proof(s, p);
    Some(ProofReport {
        id: p.id().get(),
        circuit: begin.map(|x| x.circuit.clone()).unwrap_or_default(),
        constraints: begin.map_or(0, |x| x.constraints),
        circuits: begin.map_or(0, |x| x.circuits),
        backend: backend.name,
        backend_evidence: backend.evidence,
        synthetic_srs: begin.is_some_and(|x| x.synthetic_srs),
        complete: p.done(),
        verification: p
            .end()
            .map_or("in progress", |e| e.verification.as_str())
            .to_owned(),
        error: p.end().and_then(|e| e.error.clone()),
        start_ns: a,
        duration_ns: b - a,
        span: s.name(outer.name).to_owned(),
        thread: s.thread_name(outer.thread).into_owned(),
        phases: phases(s, p, a),
        unaccounted_ns,
        gaps: listed.into_iter().map(|l| GapReport::of(l, a, s)).collect(),
        small_gaps: summed.into(),
        releases: analysis::releases::proof_releases(s, p, next_start),
        gpu_work: analysis::gpu_summary::gpu_work(s, p, a),
        gpu_use: analysis::gpu_use(s, p, rule.gpu_idle_fraction),
        notes: notes(s, p),
    })
}

/// The largest frees a report lists one by one, and the freeing call sites it names.
pub const LARGEST_RELEASES: usize = 10;
pub const RELEASE_SITES: usize = 5;

/// Dropped events per kind name over the session.
fn dropped(s: &Session) -> Vec<(String, u64)> {
    let mut by: std::collections::BTreeMap<&'static str, u64> = Default::default();
    for d in s.drops() {
        for (k, n) in d.counts.nonzero() {
            *by.entry(k.name()).or_default() += n;
        }
    }
    by.into_iter().map(|(k, n)| (k.to_owned(), n)).collect()
}

fn session_report(s: &Session, rule: &GapRule) -> SessionReport {
    let h = s.hello().cloned().unwrap_or_default();
    let session_backend = analysis::backend::of_session(s);
    let proofs = s
        .proofs()
        .filter_map(|p| {
            let next = analysis::releases::next_start(s, p.id());
            proof_report(s, p, next, rule)
        })
        .collect();
    SessionReport {
        prover: h.prover_name,
        prover_version: h.prover_version,
        pid: h.pid,
        hostname: h.hostname,
        session_start_unix_ns: h.session_start_unix_ns,
        clock: h.clock,
        backend: session_backend.name,
        backend_reason: match session_backend.evidence {
            Some(e) if h.backend_reason.is_empty() => e,
            Some(e) => format!("{e}; {}", h.backend_reason),
            None => h.backend_reason,
        },
        gpus: analysis::gpu_summary::gpu_summary(s),
        gpu_unavailable_reason: h.gpu_unavailable_reason,
        gpu_driver_version: h.gpu_driver_version,
        cpu_count: h.cpu_count,
        total_ram_bytes: h.total_ram_bytes,
        cpu_model: h.cpu_model,
        os: h.os,
        large_block_threshold: h.large_block_threshold,
        command_line: report_command_line(&h.command_line),
        proofs,
        throughput: analysis::throughput::session_throughput(s),
        releases: analysis::releases::session_releases(s),
        largest_releases: analysis::releases::largest_releases(s, LARGEST_RELEASES),
        release_sites: analysis::releases::release_sites(s, RELEASE_SITES),
        dropped: dropped(s),
        history_evicted_events: s.history_gap().map_or(0, |g| g.evicted_events),
        goodbye: s.goodbye().map(|g| g.reason.clone()),
    }
}

/// The warnings a source stated in `warning` markers outside every proof (an imported log's
/// malformed lines), prefixed by their session when there are several.
fn stated_warnings(model: &Model) -> Vec<String> {
    let many = model.sessions().len() > 1;
    let mut out = Vec::new();
    for (i, s) in model.sessions().iter().enumerate() {
        for text in session_warnings(s) {
            out.push(if many {
                format!("session {}: {text}", i + 1)
            } else {
                text
            });
        }
    }
    out
}

/// The warnings one session's source stated outside every proof (the header shows them).
pub fn session_warnings(s: &crate::model::Session) -> Vec<String> {
    s.loose()
        .marks()
        .iter()
        .filter(|m| markers::meaning(s.name(m.name)) == Meaning::Warning)
        .map(|m| m.text.as_deref().unwrap_or("(no text)").to_owned())
        .collect()
}

/// Builds the report of everything the model retains.
pub fn build(model: &Model, rule: &GapRule, source: &str, mut warnings: Vec<String>) -> Report {
    warnings.extend(stated_warnings(model));
    Report {
        proofscope_version: env!("CARGO_PKG_VERSION").into(),
        protocol: probe_protocol::protocol_version(),
        source: source.into(),
        gap_rule: GapRuleReport {
            min_fraction: rule.min_fraction,
            min_ns: rule.min_ns,
        },
        sessions: model
            .sessions()
            .iter()
            .map(|s| session_report(s, rule))
            .collect(),
        phase_stats: analysis::phase_stats(model),
        evicted_proofs: model.evicted_proofs(),
        evicted_events: model.evicted_events(),
        bad_frames: model.bad_frames(),
        warnings,
    }
}

impl Report {
    /// Keeps the first `n` proofs of the whole report (in session order), for `replay --proofs`.
    pub fn keep_first(&mut self, n: usize) {
        let mut left = n;
        for s in &mut self.sessions {
            let k = left.min(s.proofs.len());
            s.proofs.truncate(k);
            left -= k;
        }
    }

    /// Keeps, in each session, only the `n` proofs that took longest (in id order): `--slowest`.
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

/// Arguments of a command line a report shows, and characters of each: a report must fit an
/// issue, whatever the prover was called with (the JSON and the text alike).
pub const REPORT_ARGS: usize = 64;
pub const REPORT_ARG_CHARS: usize = 200;

/// A command line as reports show it: at most [`REPORT_ARGS`] arguments of at most
/// [`REPORT_ARG_CHARS`] characters, each cut one ending in `…`.
fn report_command_line(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = args
        .iter()
        .take(REPORT_ARGS)
        .map(|a| match a.char_indices().nth(REPORT_ARG_CHARS) {
            Some((at, _)) => format!("{}…", &a[..at]),
            None => a.clone(),
        })
        .collect();
    if args.len() > REPORT_ARGS {
        out.push(format!("… {} more arguments", args.len() - REPORT_ARGS));
    }
    out
}
