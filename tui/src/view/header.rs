//! Header: who is profiled on what, and the state of the link, the recording and the counts.

use super::{ViewState, bold, dim, warn};
use proofscope_engine::model::Model;
use proofscope_engine::source::{LinkState, LinkStatus};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, status: &LinkStatus, area: Rect, buf: &mut Buffer) {
    let s = model.current();
    let hello = s.and_then(|s| s.hello());
    let mut l1 = vec![Span::styled("proofscope ", bold().fg(Color::Cyan))];
    match hello {
        Some(h) => {
            l1.push(Span::styled(
                format!("{} {}", h.prover_name, h.prover_version)
                    .trim_end()
                    .to_owned(),
                bold(),
            ));
            if s.is_some_and(|s| s.from_log()) {
                // No process, no host: when the log says, its first time stamp.
                l1.push(Span::raw(if h.session_start_unix_ns > 0 {
                    format!(
                        " from {}",
                        proofscope_engine::format::wall_clock(h.session_start_unix_ns)
                    )
                } else {
                    " (times from its start; no wall clock)".to_owned()
                }));
            } else {
                l1.push(Span::raw(format!(" pid {} on {}", h.pid, h.hostname)));
            }
            // A preloaded prover states no backend: NVML's process list may show one.
            let backend = s.map(proofscope_engine::analysis::backend::of_session);
            if let Some(b) = backend.filter(|b| b.name != "unknown") {
                l1.push(Span::styled(" │ ", dim()));
                l1.push(Span::raw(format!("backend {}", b.name)));
            }
            l1.push(Span::styled(" │ ", dim()));
            if h.gpus.is_empty() {
                let why = h
                    .gpu_unavailable_reason
                    .as_deref()
                    .map_or("none".into(), proofscope_engine::format::gpu_reason);
                l1.push(Span::styled(format!("GPU: none ({why})"), dim()));
            } else {
                let names: Vec<String> = h.gpus.iter().map(|g| g.name.clone()).collect();
                l1.push(Span::raw(format!("GPUs: {}", names.join(", "))));
            }
        }
        None => l1.push(Span::styled("waiting for a prover…", dim())),
    }
    let (link, style) = match &status.link {
        LinkState::Idle => ("idle".to_string(), dim()),
        LinkState::Connecting(p) => (
            format!("connecting to {p}"),
            Style::default().fg(Color::Yellow),
        ),
        LinkState::Live(_) => ("● live".to_string(), Style::default().fg(Color::Green)),
        LinkState::Disconnected(why) => (format!("✗ disconnected: {why}; retrying"), warn()),
        LinkState::Failed(why) => (format!("✗ {why}"), warn()),
        LinkState::Replay { file, .. } => {
            (format!("▶ replay {file}"), Style::default().fg(Color::Cyan))
        }
        LinkState::Ended(why) => (format!("■ {why}"), dim()),
    };
    let mut l2 = vec![Span::styled(link, style)];
    // A log has no stream to record or to drop from: its line is the proofs and warnings.
    let from_log = s.is_some_and(|s| s.from_log());
    if !from_log {
        l2.push(Span::styled(" │ ", dim()));
        match &status.recording {
            Some(p) => l2.push(Span::styled(format!("● rec {p}"), warn())),
            None => l2.push(Span::styled("rec off", dim())),
        }
    }
    let done = model.proofs_done();
    l2.push(Span::styled(" │ ", dim()));
    l2.push(Span::raw(format!("proofs {done}")));
    // The report's figure, by the report's function: the screen and the report agree.
    let rate = s
        .and_then(proofscope_engine::analysis::throughput::session_throughput)
        .filter(|t| t.proofs >= 2);
    if let Some(t) = rate {
        l2.push(Span::raw(format!(" ({:.1}/min)", t.per_minute)));
    }
    // Live: whether the newest proof is followed (`f` toggles it).
    if status.is_live() {
        l2.push(Span::styled(" │ ", dim()));
        if state.follow {
            l2.push(Span::styled("following", Style::default().fg(Color::Green)));
        } else {
            l2.push(Span::styled(
                "not following (f)",
                Style::default().fg(Color::Yellow),
            ));
        }
    }
    let dropped = model.dropped_total();
    if dropped > 0 {
        l2.push(Span::styled(" │ ", dim()));
        l2.push(Span::styled(format!("dropped {dropped}"), warn()));
    } else if !from_log {
        l2.push(Span::styled(" │ ", dim()));
        l2.push(Span::styled("dropped 0", dim()));
    }
    if let Some(h) = status.paused {
        l2.push(Span::styled(" │ PAUSED", warn()));
        let (held, lost) = (h.events, h.dropped);
        if held > 0 {
            l2.push(Span::styled(format!(", {held} events held"), warn()));
        }
        if lost > 0 {
            l2.push(Span::styled(
                format!(", {lost} dropped (hold full)"),
                warn(),
            ));
        }
    }
    if let Some(g) = s.and_then(|s| s.history_gap()) {
        l2.push(Span::styled(
            format!(" │ {} older events evicted by the prover", g.evicted_events),
            Style::default().fg(Color::Yellow),
        ));
    }
    // What the source warned of (an imported log's malformed lines, its import summary): the
    // first on screen, the rest in the report.
    let warnings = s
        .map(proofscope_engine::report::session_warnings)
        .unwrap_or_default();
    if let Some(first) = warnings.first() {
        l2.push(Span::styled(" │ ⚠ ", Style::default().fg(Color::Yellow)));
        let more = match warnings.len() {
            1 => String::new(),
            n => format!(" (+{} more in the report)", n - 1),
        };
        l2.push(Span::styled(
            format!("{first}{more}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    Paragraph::new(super::fit_lines(
        vec![Line::from(l1), Line::from(l2)],
        area.width,
    ))
    .render(area, buf);
}
