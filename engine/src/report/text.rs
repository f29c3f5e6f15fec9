//! `--format text`: a bug report to paste.

use super::{ProofReport, ReleaseGroup, ReleaseTotals, Report, SessionReport};
use crate::format::{bytes, dur};
use std::fmt::Write;

fn group(g: &ReleaseGroup) -> String {
    if g.count == 0 {
        return "none".into();
    }
    let threads: Vec<String> = g.threads.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
    let by = match g.freed_by.as_slice() {
        [] => String::new(),
        [(w, _)] => format!("; freed by {w}"),
        [(w, b), rest @ ..] => format!(
            "; {} freed by {w}, and {} more call sites",
            bytes(*b),
            rest.len()
        ),
    };
    format!(
        "{} release{}, {}, {} inside free, on {}{by}",
        g.count,
        if g.count == 1 { "" } else { "s" },
        bytes(g.bytes),
        dur(g.inside_ns),
        threads.join(", ")
    )
}

/// How much of each session the text report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every proof with its phases, gaps and releases.
    Full,
    /// Statistics, the `worst` proofs by unaccounted share, and every flagged gap.
    Summary { worst: usize },
}

/// A full text report is summarised above this many characters (a GitHub issue body holds
/// 65,536): `--full` keeps it whole.
pub const SUMMARY_ABOVE_CHARS: usize = 60_000;

/// The whole report.
pub fn text(r: &Report) -> String {
    render(r, Detail::Full)
}

/// The report to paste: whole when it fits [`SUMMARY_ABOVE_CHARS`], else the summary, which
/// says so and how large the whole one is.
pub fn text_that_fits(r: &Report, worst: usize) -> String {
    let full = text(r);
    if full.len() <= SUMMARY_ABOVE_CHARS {
        return full;
    }
    let whole = full.len();
    // Gone before the summary is made: the two at once would double the peak.
    drop(full);
    let note = format!(
        "(summary: the whole report is {whole} characters, over {SUMMARY_ABOVE_CHARS}; --full prints it)\n"
    );
    note + &render(r, Detail::Summary { worst })
}

/// The report at `detail`.
pub fn render(r: &Report, detail: Detail) -> String {
    let mut o = String::new();
    report_header(&mut o, r);
    for (i, s) in r.sessions.iter().enumerate() {
        let _ = writeln!(o, "\n== session {} ==", i + 1);
        session_header(&mut o, s);
        match detail {
            Detail::Full => proofs_full(&mut o, s),
            Detail::Summary { worst } => proofs_summary(&mut o, s, worst),
        }
        if let Some(t) = &s.throughput {
            let _ = writeln!(o, "{}", throughput_line(t));
        }
        if s.proofs.is_empty() {
            let _ = writeln!(o, "(no proof recorded)");
        }
        releases(&mut o, &s.releases);
        notable_releases(&mut o, s);
        gpus(&mut o, s);
        dropped(&mut o, s);
    }
    phase_stats(&mut o, r);
    if r.evicted_proofs > 0 || r.bad_frames > 0 {
        let _ = writeln!(
            o,
            "\nviewer: {} proofs evicted by retention, {} frames undecodable",
            r.evicted_proofs, r.bad_frames
        );
    }
    let _ = writeln!(
        o,
        "\nversions: proofscope {}, protocol {}, recording format {}",
        r.proofscope_version,
        r.protocol,
        probe_protocol::RECORDING_VERSION
    );
    o
}

/// Versions, source, gap rule, warnings.
fn report_header(o: &mut String, r: &Report) {
    let _ = writeln!(
        o,
        "proofscope {} report (protocol {})",
        r.proofscope_version, r.protocol
    );
    let _ = writeln!(o, "source: {}", r.source);
    let _ = writeln!(
        o,
        "gaps flagged at ≥ max({:.0}% of the span, {})",
        r.gap_rule.min_fraction * 100.0,
        dur(r.gap_rule.min_ns)
    );
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
}

/// Who was profiled, when, on what machine and GPUs, called how.
fn session_header(o: &mut String, s: &SessionReport) {
    // A session imported from a log has no process or host.
    let _ = writeln!(
        o,
        "prover:   {}{}{}",
        s.prover,
        if s.prover_version.is_empty() {
            String::new()
        } else {
            format!(" {}", s.prover_version)
        },
        if s.pid == 0 && s.hostname.is_empty() {
            String::new()
        } else {
            format!(" (pid {} on {})", s.pid, s.hostname)
        }
    );
    if s.session_start_unix_ns > 0 {
        let _ = writeln!(
            o,
            "started:  {}",
            crate::format::wall_clock(s.session_start_unix_ns)
        );
    }
    let _ = writeln!(
        o,
        "backend:  {} ({})",
        s.backend,
        if s.backend_reason.is_empty() {
            "-"
        } else {
            &s.backend_reason
        }
    );
    gpu_lines(o, s);
    machine_lines(o, s);
    if !s.command_line.is_empty() {
        // Already cut to the report's rule (REPORT_ARGS × REPORT_ARG_CHARS).
        let _ = writeln!(o, "command:  {}", s.command_line.join(" "));
    }
    if s.history_evicted_events > 0 {
        let _ = writeln!(
            o,
            "note:     {} events before this report were evicted by the prover's flight recorder",
            s.history_evicted_events
        );
    }
}

fn gpu_lines(o: &mut String, s: &SessionReport) {
    if s.gpus.is_empty() {
        let _ = writeln!(
            o,
            "GPUs:     none ({})",
            s.gpu_unavailable_reason
                .as_deref()
                .map_or("-".into(), crate::format::gpu_reason)
        );
    }
    for g in &s.gpus {
        let _ = writeln!(
            o,
            "GPU {}:    {} ({}, driver {})",
            g.index,
            g.name,
            bytes(g.memory_total_bytes),
            s.gpu_driver_version.as_deref().unwrap_or("?")
        );
    }
}

fn machine_lines(o: &mut String, s: &SessionReport) {
    if s.cpu_count == 0 && s.total_ram_bytes == 0 {
        let _ = writeln!(o, "machine:  unknown; clock {}", s.clock);
    } else {
        let _ = writeln!(
            o,
            "machine:  {} CPUs{}, {} RAM; clock {}; large-block threshold {}",
            s.cpu_count,
            if s.cpu_model.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.cpu_model)
            },
            bytes(s.total_ram_bytes),
            s.clock,
            bytes(s.large_block_threshold)
        );
    }
    if !s.os.is_empty() {
        let _ = writeln!(o, "os:       {}", s.os);
    }
}

/// The session's large releases, by thread (threads under 1 % of the time folded).
fn releases(o: &mut String, t: &ReleaseTotals) {
    let _ = writeln!(o, "\n-- memory releases --");
    let _ = writeln!(
        o,
        "{} large releases, {}, {} inside free",
        t.count,
        bytes(t.bytes),
        dur(t.inside_ns)
    );
    let (shown, folded): (Vec<_>, Vec<_>) = t
        .by_thread
        .iter()
        .partition(|(_, ns)| *ns * 100 >= t.inside_ns.max(1));
    for (th, ns) in shown {
        let _ = writeln!(o, "    {th:<20} {}", dur(*ns));
    }
    if !folded.is_empty() {
        let ns: u64 = folded.iter().map(|(_, ns)| ns).sum();
        let label = format!("{} other threads", folded.len());
        let _ = writeln!(o, "    {label:<20} {}", dur(ns));
    }
}

/// The largest frees (with who freed them, and whether they were memory or address space)
/// and the call sites that spent the most time freeing.
fn notable_releases(o: &mut String, s: &SessionReport) {
    if !s.largest_releases.is_empty() {
        let _ = writeln!(o, "largest:");
    }
    for r in &s.largest_releases {
        let what = match r.resident_bytes {
            Some(res) if r.address_space() => format!(
                "{} of address space ({} resident)",
                bytes(r.bytes),
                bytes(res)
            ),
            _ => bytes(r.bytes),
        };
        let _ = writeln!(
            o,
            "    {what} at +{} on {}, {} inside free{}",
            dur(r.ts),
            r.thread,
            dur(r.inside_ns),
            r.freed_by
                .as_deref()
                .map_or(String::new(), |w| format!("; by {w}"))
        );
    }
    if !s.release_sites.is_empty() {
        let _ = writeln!(o, "call sites, most time freeing first:");
    }
    for site in &s.release_sites {
        let _ = writeln!(
            o,
            "    {}: {} release{}, {}, {} inside free, on {}",
            site.freed_by,
            site.count,
            if site.count == 1 { "" } else { "s" },
            bytes(site.bytes),
            dur(site.inside_ns),
            site.threads.join(", ")
        );
    }
}

fn gpus(o: &mut String, s: &SessionReport) {
    let _ = writeln!(o, "\n-- GPU --");
    if s.gpus.is_empty() {
        let _ = writeln!(o, "no GPU");
    }
    for g in &s.gpus {
        let _ = writeln!(
            o,
            "gpu{}: {} samples, util avg {} max {}, memory max {}, power avg {}, energy {}",
            g.index,
            g.samples,
            g.util_avg_pct.map_or("?".into(), |v| format!("{v:.0}%")),
            g.util_max_pct.map_or("?".into(), |v| format!("{v}%")),
            g.mem_used_max_bytes.map_or("?".into(), bytes),
            g.power_avg_w.map_or("?".into(), |v| format!("{v:.0} W")),
            g.energy_used_j.map_or("?".into(), |v| format!("{v:.0} J")),
        );
    }
}

fn dropped(o: &mut String, s: &SessionReport) {
    let _ = writeln!(o, "\n-- dropped events --");
    if s.dropped.is_empty() {
        let _ = writeln!(o, "none");
    }
    for (k, n) in &s.dropped {
        let _ = writeln!(o, "{k}: {n}");
    }
    match &s.goodbye {
        Some(g) => {
            let _ = writeln!(o, "\nsession ended: {g}");
        }
        // PROTOCOL.md §5: a stream without a Goodbye ended without one.
        None => {
            let _ = writeln!(
                o,
                "\nsession ended without a goodbye: the stream stops here (the prover was killed \
                 or is still running, or the recording was cut)"
            );
        }
    }
}

fn phase_stats(o: &mut String, r: &Report) {
    let _ = writeln!(o, "\n== phase statistics (completed proofs) ==");
    let _ = writeln!(
        o,
        "{:<16} {:>6} {:>10} {:>10} {:>10}",
        "phase", "count", "p50", "p95", "max"
    );
    for st in &r.phase_stats {
        let _ = writeln!(
            o,
            "{:<16} {:>6} {:>10} {:>10} {:>10}",
            st.name,
            st.count,
            dur(st.p50_ns),
            dur(st.p95_ns),
            dur(st.max_ns)
        );
    }
}

/// "heap 1.2 GB → peak 3.4 GB → 2.1 GB, GPU 2.4 GB": live before, the phase's peak, at its end.
fn phase_memory(m: crate::report::PhaseMemory) -> String {
    let mut out = String::from("  heap ");
    if let Some(b) = m.live_before {
        out += &format!("{} → ", bytes(b));
    }
    out += &format!("peak {} → {}", bytes(m.live_max), bytes(m.live_end));
    if let Some(g) = m.gpu_used_max {
        out += &format!(", GPU {}", bytes(g));
    }
    out
}

/// Every proof: phases, GPU work, gaps, releases.
fn proofs_full(o: &mut String, s: &super::SessionReport) {
    let _ = writeln!(o, "\n-- proofs --");
    for p in &s.proofs {
        proof_line(o, p);
        phase_lines(o, p);
        gap_lines(o, p);
        for (name, text) in &p.notes {
            let _ = writeln!(o, "  {name}: {text}");
        }
        for u in &p.gpu_use {
            let _ = writeln!(o, "  {}", gpu_use_line(u));
            if let Some(f) = &u.finding {
                let _ = writeln!(o, "  ! {f}");
            }
        }
        release_lines(o, &p.releases);
    }
}

/// "proof #1: 2 × sha256 (…), backend cpu, valid — prove 1.2 s, unaccounted 3 ms (0.2%)"
fn proof_line(o: &mut String, p: &ProofReport) {
    let _ = writeln!(
        o,
        "proof #{}: {}{}{}, backend {}{}, {}{} — {} {}, unaccounted {} ({:.1}%)",
        p.id,
        crate::format::circuits_times(p.circuits),
        p.circuit,
        // Unknown (0) for proofs imported from logs.
        if p.constraints > 0 {
            format!(" ({} constraints)", p.constraints)
        } else {
            String::new()
        },
        p.backend,
        p.backend_evidence
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})")),
        p.verification,
        if p.synthetic_srs {
            ", SYNTHETIC SRS"
        } else {
            ""
        },
        p.span,
        dur(p.duration_ns),
        dur(p.unaccounted_ns),
        p.unaccounted_ns as f64 / p.duration_ns.max(1) as f64 * 100.0
    );
}

/// The phases, then the device work.
fn phase_lines(o: &mut String, p: &ProofReport) {
    for ph in &p.phases {
        let line = format!(
            "    {:<14} +{:<10} {:>10}  {:<12}{}",
            ph.name,
            dur(ph.start_offset_ns),
            dur(ph.duration_ns),
            ph.thread,
            ph.memory.map(phase_memory).unwrap_or_default()
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
    for w in &p.gpu_work {
        let line = format!(
            "    gpu{} {:<16} +{:<10} {:>10}  ×{}{}",
            w.device,
            w.name,
            dur(w.first_offset_ns),
            dur(w.busy_ns),
            w.count,
            if w.launched_in.is_empty() {
                String::new()
            } else {
                format!(", launched in {}", w.launched_in)
            }
        );
        let _ = writeln!(o, "{line}");
    }
}

/// The listed gaps with their diagnoses, and the line that sums the rest.
fn gap_lines(o: &mut String, p: &ProofReport) {
    for g in &p.gaps {
        let _ = writeln!(
            o,
            "  {} gap in {}: {} {} at +{} ({:.1}% of the span)",
            if g.flagged { "!" } else { "·" },
            g.span,
            dur(g.duration_ns),
            g.place.as_str(),
            dur(g.start_offset_ns),
            g.share_of_span * 100.0
        );
        let _ = writeln!(o, "      {}", g.diagnosis.sentence());
    }
    let small = &p.small_gaps;
    if small.count > 0 {
        let _ = writeln!(
            o,
            "  · {} smaller gap{} in {} totalling {} (largest {}{})",
            small.count,
            if small.count == 1 { "" } else { "s" },
            p.span,
            dur(small.total_ns),
            dur(small.largest_ns),
            small.tail_ns.map_or(String::new(), |t| format!(
                "; the tail after the last child {}",
                dur(t)
            ))
        );
    }
}

fn release_lines(o: &mut String, rel: &super::ProofReleases) {
    let _ = writeln!(
        o,
        "  releases inside the outer span, outside every phase: {}",
        group(&rel.in_outer_outside_phases)
    );
    let _ = writeln!(o, "  releases inside phases: {}", group(&rel.in_phases));
    let _ = writeln!(
        o,
        "  releases on other threads during the proof: {}",
        group(&rel.elsewhere_during)
    );
    let _ = writeln!(
        o,
        "  releases after the outer span (outside the proof): {}",
        group(&rel.after_outer)
    );
}

/// "throughput: 3.20 proofs per minute (3 complete proofs, 37.5 s from the first's end to the
/// last's); 3 of them overlapped another (at most 2 in flight)"
fn throughput_line(t: &super::Throughput) -> String {
    let mut s = format!("throughput: {:.2} proofs per minute ", t.per_minute);
    s += &if t.proofs == 1 {
        format!("(one complete proof of {})", dur(t.window_ns))
    } else {
        format!(
            "between completions ({} complete proofs, {} from the first's end to the last's; {:.2} over the whole {} from the first's start)",
            t.proofs,
            dur(t.window_ns),
            t.per_minute_run,
            dur(t.run_ns)
        )
    };
    if t.overlapping > 0 {
        s += &format!(
            "; {} of them overlapped another (at most {} in flight)",
            t.overlapping, t.most_in_flight
        );
    } else {
        s += "; one at a time";
    }
    s
}

/// "gpu0 busy 36% of the proof (7.0 s of 19.3 s, GPU spans); idle during synthesis 10.2 s, …"
fn gpu_use_line(u: &crate::analysis::GpuUse) -> String {
    let mut s = format!(
        "gpu{} busy {:.0}% of the proof ({} of {}, {})",
        u.device,
        u.device_busy_share * 100.0,
        dur(u.device_busy_ns),
        dur(u.proof_ns),
        match u.source {
            crate::analysis::BusySource::GpuSpans => "GPU spans",
            crate::analysis::BusySource::Nvml => "NVML utilisation",
        }
    );
    if u.device_busy_ns != u.busy_ns {
        s += &format!(
            ", {:.0}% this proof's own work ({}), the rest another proof's",
            u.busy_share * 100.0,
            dur(u.busy_ns)
        );
    }
    if !u.idle_during.is_empty() {
        let during: Vec<String> = u
            .idle_during
            .iter()
            .map(|(p, _, ns)| format!("{p} {}", dur(*ns)))
            .collect();
        s += &format!("; idle during {}", during.join(", "));
    }
    s
}

/// The proofs in brief: duration and unaccounted statistics, the `worst` proofs by unaccounted
/// share, and every flagged gap with its diagnosis.
fn proofs_summary(o: &mut String, s: &super::SessionReport, worst: usize) {
    let done: Vec<&ProofReport> = s.proofs.iter().filter(|p| p.complete).collect();
    let _ = writeln!(
        o,
        "\n-- proofs: {} ({} complete) --",
        s.proofs.len(),
        done.len()
    );
    if s.proofs.is_empty() {
        let _ = writeln!(o, "(no proof recorded)");
        return;
    }
    duration_summary(o, &done);
    worst_by_share(o, &done, worst);
    gpu_busy_summary(o, &done, worst);
    flagged_gaps(o, s);
}

/// The share of a proof no phase accounts for.
fn unaccounted_share(p: &ProofReport) -> f64 {
    p.unaccounted_ns as f64 / p.duration_ns.max(1) as f64
}

/// "prove: p50 …, p95 …, max …; unaccounted … in all (…% of proof time)"
fn duration_summary(o: &mut String, done: &[&ProofReport]) {
    let Some(first) = done.first() else { return };
    let mut d: Vec<u64> = done.iter().map(|p| p.duration_ns).collect();
    d.sort_unstable();
    let at = |q: f64| crate::analysis::stats::percentile(&d, q);
    let total: u64 = done.iter().map(|p| p.duration_ns).sum();
    let unacc: u64 = done.iter().map(|p| p.unaccounted_ns).sum();
    let _ = writeln!(
        o,
        "{}: p50 {}, p95 {}, max {}; unaccounted {} in all ({:.1}% of proof time)",
        first.span,
        dur(at(50.0)),
        dur(at(95.0)),
        dur(at(100.0)),
        dur(unacc),
        unacc as f64 / total.max(1) as f64 * 100.0
    );
}

fn worst_by_share(o: &mut String, done: &[&ProofReport], worst: usize) {
    let mut by_share = done.to_vec();
    by_share.sort_by(|a, b| {
        unaccounted_share(b)
            .total_cmp(&unaccounted_share(a))
            .then(a.id.cmp(&b.id))
    });
    let _ = writeln!(
        o,
        "worst {} by unaccounted share:",
        worst.min(by_share.len())
    );
    for p in by_share.iter().take(worst) {
        let flagged = p.gaps.iter().filter(|g| g.flagged).count();
        let _ = writeln!(
            o,
            "  proof #{}: {} {}, unaccounted {} ({:.1}%){}",
            p.id,
            p.span,
            dur(p.duration_ns),
            dur(p.unaccounted_ns),
            unaccounted_share(p) * 100.0,
            if flagged > 0 {
                format!(
                    ", {flagged} flagged gap{}",
                    if flagged == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            }
        );
    }
}

/// The GPU busy share over proofs and GPUs, and the worst idle findings.
fn gpu_busy_summary(o: &mut String, done: &[&ProofReport], worst: usize) {
    let mut b: Vec<f64> = done
        .iter()
        .flat_map(|p| p.gpu_use.iter().map(|u| u.device_busy_share))
        .collect();
    if b.is_empty() {
        return;
    }
    b.sort_by(f64::total_cmp);
    let mut idle: Vec<(u64, &crate::analysis::GpuUse)> = done
        .iter()
        .flat_map(|p| p.gpu_use.iter().map(move |u| (p.id, u)))
        .filter(|(_, u)| u.finding.is_some())
        .collect();
    let _ = writeln!(
        o,
        "GPU busy share per proof and GPU: p50 {:.0}%, min {:.0}%, max {:.0}%; {} idle finding{}",
        b[(b.len() - 1) / 2] * 100.0,
        b[0] * 100.0,
        b[b.len() - 1] * 100.0,
        idle.len(),
        if idle.len() == 1 { "" } else { "s" }
    );
    idle.sort_by(|a, b| a.1.device_busy_share.total_cmp(&b.1.device_busy_share));
    for (id, u) in idle.iter().take(worst) {
        let _ = writeln!(o, "  proof #{id}: {}", u.finding.as_deref().unwrap_or(""));
    }
}

fn flagged_gaps(o: &mut String, s: &super::SessionReport) {
    let flagged: Vec<(u64, &super::GapReport)> = s
        .proofs
        .iter()
        .flat_map(|p| p.gaps.iter().filter(|g| g.flagged).map(move |g| (p.id, g)))
        .collect();
    let _ = writeln!(o, "\n-- flagged gaps: {} --", flagged.len());
    for (id, g) in flagged {
        let _ = writeln!(
            o,
            "  proof #{id}: gap in {}: {} {} at +{} ({:.1}% of the span)",
            g.span,
            dur(g.duration_ns),
            g.place.as_str(),
            dur(g.start_offset_ns),
            g.share_of_span * 100.0
        );
        let _ = writeln!(o, "      {}", g.diagnosis.sentence());
    }
}
