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
    "          ░ unaccounted under the threshold (yellow), ▓ flagged (red)",
    "GPU: busy N% of the proof (GPU spans, else NVML); (!) idle past --gpu-idle-pct",
];

/// Width of the keys column.
const KEY_COL: usize = 14;

/// A binding's lines: its keys, then what it does, wrapped beside them.
fn binding_lines(k: &crate::input::Binding, width: usize, out: &mut Vec<(String, bool)>) {
    let room = width.saturating_sub(KEY_COL).max(10);
    for (i, part) in proofscope_engine::format::wrap(k.what, room)
        .into_iter()
        .enumerate()
    {
        let keys = if i == 0 { k.keys } else { "" };
        out.push((format!("{keys:<KEY_COL$}{part}"), false));
    }
}

/// The overlay's lines at `width` characters, wrapped: (text, is it a heading).
fn lines(width: usize) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    // Bindings with no help text share the line of the one before (↑ and ↓, + and -).
    let shown = |k: &&crate::input::Binding| !k.keys.is_empty();
    for k in KEYS.iter().filter(shown).filter(|k| k.when != When::Replay) {
        binding_lines(k, width, &mut out);
    }
    binding_lines(
        &crate::input::Binding {
            keys: "mouse",
            what: crate::input::MOUSE,
            ..KEYS[0]
        },
        width,
        &mut out,
    );
    out.push(("replay".to_owned(), true));
    for k in KEYS.iter().filter(shown).filter(|k| k.when == When::Replay) {
        binding_lines(k, width, &mut out);
    }
    out.push(("legend".to_owned(), true));
    for l in LEGEND {
        out.extend(
            proofscope_engine::format::wrap(l, width)
                .into_iter()
                .map(|t| (t, false)),
        );
    }
    out
}

/// The overlay, `scroll` lines down (clamped so the last line stays at the bottom).
pub fn render(scroll: usize, area: Rect, buf: &mut Buffer) {
    let w = area.width.min(88);
    let text = lines(w.saturating_sub(2) as usize);
    let h = (text.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let rows = h.saturating_sub(2) as usize;
    let top = scroll.min(text.len().saturating_sub(rows));
    let more = text.len() > rows;
    let title = if more {
        format!(" keys — ↑↓ scroll, {}/{} ", top + rows, text.len())
    } else {
        " keys ".to_owned()
    };
    let shown: Vec<Line> = text
        .into_iter()
        .skip(top)
        .take(rows)
        .map(|(t, heading)| {
            let t = proofscope_engine::format::fit(&t, w.saturating_sub(2) as usize);
            if heading {
                Line::from(Span::styled(t, dim()))
            } else {
                let (k, rest) = split_keys(&t);
                Line::from(vec![Span::styled(k, bold()), Span::raw(rest)])
            }
        })
        .collect();
    Paragraph::new(shown)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(proofscope_engine::format::fit(
                    &title,
                    w.saturating_sub(2) as usize,
                ))
                .border_style(Style::default().fg(Color::Cyan)),
        )
        .render(r, buf);
}

/// The keys column of a binding's line, and the rest.
fn split_keys(line: &str) -> (String, String) {
    let k: String = line.chars().take(KEY_COL).collect();
    let rest: String = line.chars().skip(KEY_COL).collect();
    (k, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_fits_and_a_small_overlay_scrolls_to_its_last_line() {
        for l in lines(36) {
            assert!(l.0.chars().count() <= 36, "{l:?}");
        }
        let area = Rect::new(0, 0, 40, 10);
        let mut buf = Buffer::empty(area);
        render(10_000, area, &mut buf);
        let text: String = (0..10)
            .map(|y| {
                (0..40)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains("scroll"), "{text}");
        let last = lines(38).last().unwrap().0.clone();
        let tail: String = last.chars().take(20).collect();
        assert!(text.contains(tail.trim()), "{text}");
    }
}
