//! The gap table: every gap of the outer span (flagged or not) and every flagged gap of the
//! phases, with where it lies, its length and its diagnosis.

use super::{ViewState, bold, dim, warn};
use crate::analysis::{Place, diagnose, proof_gaps};
use crate::format::dur;
use crate::model::Model;
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
    let mut lines: Vec<Line> = vec![Line::from(Span::styled(
        format!(
            "gaps of proof {} (flagged: ≥ max({:.0}% of the span, {}))",
            p.id,
            state.rule.min_fraction * 100.0,
            dur(state.rule.min_ns)
        ),
        bold(),
    ))];
    let mut any = false;
    let (mut small_n, mut small_ns) = (0usize, 0u64);
    for sg in proof_gaps(p, &state.rule, s.now) {
        let is_outer = sg.span.id == outer.id;
        let len = sg.span.end_or(s.now) - sg.span.start;
        for g in sg.gaps.iter().filter(|g| is_outer || g.flagged) {
            let d = diagnose(s, p, &sg.span, g.at);
            if !g.notable(len) && d.releases.count == 0 {
                small_n += 1;
                small_ns += g.at.len();
                continue;
            }
            any = true;
            let style = if g.flagged {
                warn()
            } else {
                Style::default().fg(Color::Yellow)
            };
            let place = match g.place {
                Place::BeforeFirst => "head",
                Place::Between => "between",
                Place::AfterLast => "tail",
                Place::Whole => "whole",
            };
            lines.push(Line::from(vec![
                Span::styled(if g.flagged { "! " } else { "  " }, style),
                Span::styled(format!("{:<11}", s.name(sg.span.name)), bold()),
                Span::styled(format!("{:>9}", dur(g.at.len())), style),
                Span::raw(format!(
                    " {:>5.1}% {:<7} at +{}",
                    g.at.len() as f64 / len.max(1) as f64 * 100.0,
                    place,
                    dur(g.at.start - t0),
                )),
            ]));
            lines.push(Line::from(Span::styled(
                format!("    {}", d.sentence),
                dim(),
            )));
        }
    }
    if small_n > 0 {
        any = true;
        lines.push(Line::from(Span::styled(
            format!(
                "  + {small_n} smaller gaps in prove totalling {}",
                dur(small_ns)
            ),
            dim(),
        )));
    }
    if !any {
        lines.push(Line::from(Span::styled("no unaccounted time", dim())));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(area, buf);
}
