//! The proof list: one line per retained proof, newest at the bottom, the shown one marked.

use super::{ViewState, dim, warn};
use crate::analysis::proof_gaps;
use crate::format::dur;
use crate::model::Model;
use probe_protocol::Verification;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let block = Block::default().borders(Borders::RIGHT).border_style(dim());
    let inner = block.inner(area);
    block.render(area, buf);
    let keys = model.proof_keys();
    let shown = state.shown(model);
    let rows = inner.height as usize;
    if keys.is_empty() {
        // The prover's status line (a progress bar) is shown whole in the main panel: wrapped
        // into this narrow list it was unreadable.
        Paragraph::new("no proof yet")
            .style(dim())
            .render(inner, buf);
        return;
    }
    // Keep the shown proof visible; following, keep the newest (the one in progress) too.
    let pos = match state.selected {
        None => keys.len() - 1,
        Some(_) => shown
            .and_then(|k| keys.iter().position(|x| *x == k))
            .unwrap_or(keys.len() - 1),
    };
    let first = (pos + 1)
        .saturating_sub(rows)
        .min(keys.len().saturating_sub(rows));
    let multi = model.sessions().len() > 1;
    let mut lines = Vec::new();
    for k in keys.iter().skip(first).take(rows) {
        let Some(p) = model.proof(*k) else { continue };
        let Some(s) = model.session(k.session) else {
            continue;
        };
        let (mark, mstyle) = match p.end().map(|e| e.verification) {
            None => ("…", Style::default().fg(Color::Yellow)),
            Some(Verification::Valid) => ("✓", Style::default().fg(Color::Green)),
            Some(Verification::Invalid) => ("✗", warn()),
            Some(Verification::Unverifiable) => ("~", dim()),
            Some(Verification::NotChecked) => ("·", dim()),
        };
        let len = p.outer().map(|o| o.len_at(s.now()));
        let flagged = proof_gaps(p, &state.rule, s.now())
            .first()
            .is_some_and(|g| g.gaps.iter().any(|g| g.flagged));
        let id = if multi {
            format!("{}:{}", k.session + 1, k.proof)
        } else {
            format!("#{}", k.proof)
        };
        let mut spans = vec![
            Span::raw(format!("{id:>5} ")),
            Span::raw(format!("{:>8}", len.map(dur).unwrap_or_default())),
            Span::raw(" "),
            Span::styled(mark, mstyle),
        ];
        if flagged {
            spans.push(Span::styled(" !", warn()));
        }
        let mut line = Line::from(spans);
        if Some(*k) == shown {
            line = line.style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(line);
    }
    Paragraph::new(lines).render(inner, buf);
}
