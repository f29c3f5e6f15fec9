//! Per-phase statistics across proofs.

use super::{bold, dim};
use crate::analysis::phase_stats;
use crate::format::dur;
use crate::model::Model;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

pub fn render(model: &Model, area: Rect, buf: &mut Buffer) {
    let stats = phase_stats(model);
    if stats.is_empty() {
        Paragraph::new("no completed proof yet")
            .style(dim())
            .render(area, buf);
        return;
    }
    let header = Row::new(["phase", "count", "p50", "p95", "max"].map(Cell::from)).style(bold());
    let rows = stats.iter().map(|s| {
        Row::new(vec![
            Cell::from(s.name.clone()),
            Cell::from(s.count.to_string()),
            Cell::from(dur(s.p50_ns)),
            Cell::from(dur(s.p95_ns)),
            Cell::from(dur(s.max_ns)),
        ])
    });
    Table::new(
        rows,
        [
            Constraint::Length(14),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
        ],
    )
    .header(header)
    .render(area, buf);
}
