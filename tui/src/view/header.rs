//! Header: who is profiled on what, and the state of the link, the recording and the counts.

use super::{ViewState, bold, dim, warn};
use crate::input::{Action, key_of};
use probe_protocol::Hello;
use proofscope_engine::model::{Model, Session};
use proofscope_engine::source::{LinkState, LinkStatus};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, status: &LinkStatus, area: Rect, buf: &mut Buffer) {
    let s = model.current();
    let l1 = match s.and_then(|s| s.hello().map(|h| (s, h))) {
        Some((s, h)) => who(s, h),
        None => vec![
            Span::styled("proofscope ", bold().fg(Color::Cyan)),
            Span::styled("waiting for a prover…", dim()),
        ],
    };
    // A log has no stream to record or to drop from: its line is the proofs and warnings.
    let from_log = s.is_some_and(|s| s.from_log());
    let mut l2 = vec![link(&status.link)];
    if !from_log {
        l2.push(Span::styled(" │ ", dim()));
        l2.push(match &status.recording {
            Some(p) => Span::styled(format!("● rec {p}"), warn()),
            None => Span::styled("rec off", dim()),
        });
    }
    l2.extend(counts(model, state, status, from_log));
    l2.extend(paused(status));
    if let Some(g) = s.and_then(|s| s.history_gap()) {
        l2.push(Span::styled(
            format!(" │ {} older events evicted by the prover", g.evicted_events),
            Style::default().fg(Color::Yellow),
        ));
    }
    l2.extend(s.map(first_warning).unwrap_or_default());
    Paragraph::new(super::fit_lines(
        vec![Line::from(l1), Line::from(l2)],
        area.width,
    ))
    .render(area, buf);
}

/// The first line: the prover, where it runs, its backend and GPUs.
fn who(s: &Session, h: &Hello) -> Vec<Span<'static>> {
    let mut l1 = vec![
        Span::styled("proofscope ", bold().fg(Color::Cyan)),
        Span::styled(
            format!("{} {}", h.prover_name, h.prover_version)
                .trim_end()
                .to_owned(),
            bold(),
        ),
    ];
    if s.from_log() {
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
    let backend = proofscope_engine::analysis::backend::of_session(s);
    if backend.name != "unknown" {
        l1.push(Span::styled(" │ ", dim()));
        l1.push(Span::raw(format!("backend {}", backend.name)));
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
    l1
}

/// The link's state, in its colour.
fn link(state: &LinkState) -> Span<'static> {
    let (text, style) = match state {
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
    Span::styled(text, style)
}

/// Proofs (and their rate, by the report's function: the screen and the report agree),
/// whether the newest is followed, and events dropped.
fn counts(
    model: &Model,
    state: &ViewState,
    status: &LinkStatus,
    from_log: bool,
) -> Vec<Span<'static>> {
    let mut out = vec![
        Span::styled(" │ ", dim()),
        Span::raw(format!("proofs {}", model.proofs_done())),
    ];
    let rate = model
        .current()
        .and_then(proofscope_engine::analysis::throughput::session_throughput)
        .filter(|t| t.proofs >= 2);
    if let Some(t) = rate {
        out.push(Span::raw(format!(" ({:.1}/min)", t.per_minute)));
    }
    if status.is_live() {
        out.push(Span::styled(" │ ", dim()));
        out.push(if state.follow {
            Span::styled("following", Style::default().fg(Color::Green))
        } else {
            Span::styled(
                format!("not following ({})", key_of(Action::Follow)),
                Style::default().fg(Color::Yellow),
            )
        });
    }
    let dropped = model.dropped_total();
    if dropped > 0 {
        out.push(Span::styled(" │ ", dim()));
        out.push(Span::styled(format!("dropped {dropped}"), warn()));
    } else if !from_log {
        out.push(Span::styled(" │ ", dim()));
        out.push(Span::styled("dropped 0", dim()));
    }
    out
}

/// A paused view, and what the source holds back for the resume.
fn paused(status: &LinkStatus) -> Vec<Span<'static>> {
    let Some(h) = status.paused else {
        return Vec::new();
    };
    let mut out = vec![Span::styled(" │ PAUSED", warn())];
    if h.events > 0 {
        out.push(Span::styled(format!(", {} events held", h.events), warn()));
    }
    if h.dropped > 0 {
        out.push(Span::styled(
            format!(", {} dropped (hold full)", h.dropped),
            warn(),
        ));
    }
    out
}

/// What the source warned of (an imported log's malformed lines, its import summary): the
/// first on screen, the rest in the report.
fn first_warning(s: &Session) -> Vec<Span<'static>> {
    let warnings = proofscope_engine::report::session_warnings(s);
    let Some(first) = warnings.first() else {
        return Vec::new();
    };
    let more = match warnings.len() {
        1 => String::new(),
        n => format!(" (+{} more in the report)", n - 1),
    };
    vec![
        Span::styled(" │ ⚠ ", Style::default().fg(Color::Yellow)),
        Span::styled(format!("{first}{more}"), Style::default().fg(Color::Yellow)),
    ]
}
