//! The help overlay, generated from the key table in `input`.

use super::{bold, dim};
use crate::input::{KEYS, When};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

/// What the glyphs of the views mean.
const LEGEND: [&str; 5] = [
    "proofs: ✓ valid  ✗ INVALID  ~ synthetic SRS  · not checked  … running",
    "        ! a flagged gap",
    "timeline: █ phase  ▬ its threads / GPU streams  ▔ prove (the wrapper timer)",
    "          ░ unaccounted: red when flagged, yellow under the threshold",
    "GPU: busy N% of the proof (GPU spans, else NVML); (!) idle past --gpu-idle-pct",
];

pub fn render(area: Rect, buf: &mut Buffer) {
    let w = area.width.min(84);
    let h = (KEYS.iter().filter(|k| !k.keys.is_empty()).count() as u16 + LEGEND.len() as u16 + 5)
        .min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    // Bindings with no help text share the line of the one before (↑ and ↓, + and -).
    let shown = |k: &&crate::input::Binding| !k.keys.is_empty();
    let mut lines: Vec<Line> = KEYS
        .iter()
        .filter(shown)
        .filter(|k| k.when != When::Replay)
        .map(|k| {
            Line::from(vec![
                Span::styled(format!("{:<10}", k.keys), bold()),
                Span::raw(k.what),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled("replay", dim())));
    lines.extend(
        KEYS.iter()
            .filter(shown)
            .filter(|k| k.when == When::Replay)
            .map(|k| {
                Line::from(vec![
                    Span::styled(format!("{:<10}", k.keys), bold()),
                    Span::raw(k.what),
                ])
            }),
    );
    lines.push(Line::from(Span::styled("legend", dim())));
    for l in LEGEND.iter().copied() {
        lines.push(Line::from(Span::raw(l)));
    }
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys ")
                .border_style(Style::default().fg(Color::Cyan)),
        )
        .render(r, buf);
}
