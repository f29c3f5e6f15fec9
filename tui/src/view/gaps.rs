//! The gap table: every gap of the outer span (flagged or not) and every flagged gap of the
//! phases, with where it lies, its length and its diagnosis.

use super::{ViewState, bold, dim, warn};
use proofscope_engine::analysis::gap_listing;
use proofscope_engine::format::dur;
use proofscope_engine::model::Model;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let Some((s, p)) = super::proof_or_placeholder(model, state, area, buf) else {
        return;
    };
    let Some(outer) = p.outer() else {
        return;
    };
    let t0 = outer.start;
    let outer_name = s.name(outer.name);
    let mut lines: Vec<Line> = vec![Line::from(Span::styled(
        format!(
            "gaps of proof {} (flagged: ≥ max({:.0}% of the span, {}))",
            p.id(),
            state.rule.min_fraction * 100.0,
            dur(state.rule.min_ns)
        ),
        bold(),
    ))];
    let (listed, summed, _) = gap_listing(s, p, &state.rule);
    let any = !listed.is_empty() || summed.count > 0;
    let settled = proofscope_engine::analysis::settled::is_settled(s, p);
    for l in listed {
        let g = l.gap;
        let style = if g.flagged {
            warn()
        } else {
            Style::default().fg(Color::Yellow)
        };
        lines.push(Line::from(vec![
            Span::styled(if g.flagged { "! " } else { "  " }, style),
            Span::styled(format!("{:>9}", dur(g.at.len())), style),
            Span::raw(format!(
                " {:>5.1}% of {}: {} at +{}",
                g.at.len() as f64 / l.span_len as f64 * 100.0,
                s.name(l.span.name),
                l.words(),
                dur(g.at.start - t0),
            )),
        ]));
        lines.push(Line::from(Span::styled(
            format!("    {}", l.shown(settled)),
            dim(),
        )));
    }
    if summed.count > 0 {
        lines.push(Line::from(Span::styled(
            format!(
                "  + {} smaller gap{} in {} totalling {} (largest {}{})",
                summed.count,
                if summed.count == 1 { "" } else { "s" },
                outer_name,
                dur(summed.total_ns),
                dur(summed.largest_ns),
                summed
                    .tail_ns
                    .map_or(String::new(), |t| format!("; tail {}", dur(t)))
            ),
            dim(),
        )));
    }
    if !any {
        lines.push(Line::from(Span::styled("no unaccounted time", dim())));
    }
    // Wrapped one column short of the edge: text that touches the edge is text that was cut.
    let inner = Rect {
        width: area.width.saturating_sub(1),
        ..area
    };
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(inner, buf);
}
