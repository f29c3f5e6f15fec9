//! The proof list: one line per retained proof, newest at the bottom, the shown one marked.

use super::{ViewState, dim, warn};
use probe_protocol::Verification;
use proofscope_engine::analysis::proof_gaps;
use proofscope_engine::format::dur;
use proofscope_engine::model::Model;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let block = Block::default().borders(Borders::RIGHT).border_style(dim());
    block.render(area, buf);
    let shown = state.shown(model);
    let inner = entries_area(area);
    render_title(
        state,
        Rect {
            y: area.y,
            height: 1,
            ..inner
        },
        buf,
    );
    let keys = state.listed(model);
    let rows = inner.height as usize;
    if keys.is_empty() && !state.filter.is_empty() {
        Paragraph::new(proofscope_engine::format::fit(
            "no proof matches",
            inner.width as usize,
        ))
        .style(dim())
        .render(inner, buf);
        return;
    }
    if keys.is_empty() {
        // The prover's status line (a progress bar) is shown whole in the main panel: wrapped
        // into this narrow list it was unreadable.
        Paragraph::new("no proof yet")
            .style(dim())
            .render(inner, buf);
        return;
    }
    // Keep the shown proof visible; following, keep the newest (the one in progress) too.
    let pos = shown_row(&keys, shown);
    let first = first_row(keys.len(), pos, rows);
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

/// The shown proof's entry, else the last.
pub(crate) fn shown_row(
    keys: &[proofscope_engine::model::ProofKey],
    shown: Option<proofscope_engine::model::ProofKey>,
) -> usize {
    shown
        .and_then(|k| keys.iter().position(|x| *x == k))
        .unwrap_or(keys.len().saturating_sub(1))
}

/// The first list entry on screen when entry `pos` must be visible in `rows` rows.
pub(crate) fn first_row(len: usize, pos: usize, rows: usize) -> usize {
    (pos + 1).saturating_sub(rows).min(len.saturating_sub(rows))
}

/// Where the entries are drawn inside the list's area: under its title, left of its border.
pub(crate) fn entries_area(list: Rect) -> Rect {
    Rect {
        x: list.x,
        y: list.y + 1,
        width: list.width.saturating_sub(1),
        height: list.height.saturating_sub(1),
    }
}

/// The list's first line: its order and its filter (the cursor while it is typed).
fn render_title(state: &ViewState, area: Rect, buf: &mut Buffer) {
    let mut text = format!("proofs {}", state.order.label());
    if state.editing {
        text = format!("/{}▏", state.filter);
    } else if !state.filter.is_empty() {
        text = format!("{text}  /{}", state.filter);
    }
    let style = if state.editing {
        Style::default().add_modifier(Modifier::BOLD)
    } else {
        dim()
    };
    buf.set_string(
        area.x,
        area.y,
        proofscope_engine::format::fit(&text, area.width as usize),
        style,
    );
}
