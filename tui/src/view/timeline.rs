//! The selected proof's timeline: one row per phase on the proof's time axis, parallel
//! sub-rows for work spread over threads or GPU streams, and the outer span's unaccounted
//! segments drawn distinctly with their duration.

use super::{ViewState, bold, dim, warn};
use crate::analysis::{phase_order, proof_gaps};
use crate::format::dur;
use crate::model::{Model, Proof, Session, Span};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span as TSpan};
use ratatui::widgets::{Paragraph, Widget};

const LABEL: u16 = 14;
const PHASE_COLORS: [Color; 7] = [
    Color::Blue,
    Color::Magenta,
    Color::Green,
    Color::Cyan,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightGreen,
];

/// Maps session time to columns of a bar area.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub from: u64,
    pub to: u64,
    pub x: u16,
    pub width: u16,
}

impl Axis {
    pub fn col(&self, t: u64) -> f64 {
        let span = (self.to - self.from).max(1) as f64;
        (t as f64 - self.from as f64) / span * self.width as f64
    }

    /// Columns covered by [a, b), at least one when the interval is visible.
    pub fn cols(&self, a: u64, b: u64) -> Option<(u16, u16)> {
        if b < self.from || a > self.to {
            return None;
        }
        let c0 = self.col(a).clamp(0.0, self.width as f64).floor() as u16;
        let c1 = self.col(b).clamp(0.0, self.width as f64).ceil() as u16;
        let c1 = c1.max(c0 + 1).min(self.width);
        (c0 < self.width).then_some((self.x + c0, self.x + c1))
    }
}

fn fill(buf: &mut Buffer, y: u16, cols: (u16, u16), ch: &str, style: Style) {
    for x in cols.0..cols.1 {
        if let Some(c) = buf.cell_mut((x, y)) {
            c.set_symbol(ch).set_style(style);
        }
    }
}

fn label(buf: &mut Buffer, area: Rect, y: u16, text: &str, style: Style) {
    let t: String = text.chars().take(LABEL as usize - 1).collect();
    buf.set_string(area.x, y, t, style);
}

/// "ntt_msm_h:1" for `ntt_msm_h` on thread `gpu-1` (the thread's number, else its name),
/// the phase name shortened so the suffix fits the label column.
fn phase_on_thread(name: &str, thread: &str) -> String {
    let suffix = match thread.rsplit_once('-') {
        Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => thread,
    };
    let room = (LABEL as usize - 1).saturating_sub(suffix.chars().count() + 1);
    let short: String = name.chars().take(room).collect();
    format!("{short}:{suffix}")
}

/// A row to draw: its label, the intervals on it, its style, whether it is a sub-row.
struct Row {
    label: String,
    spans: Vec<(u64, u64)>,
    style: Style,
    sub: bool,
}

fn rows(s: &Session, p: &Proof, outer: &Span) -> Vec<Row> {
    let mut phases: Vec<&Span> = p.children(outer.id).collect();
    phases.sort_by_key(|sp| (phase_order(s.name(sp.name)), sp.start, sp.thread));
    let mut out = Vec::new();
    for (i, ph) in phases.iter().enumerate() {
        let name = s.name(ph.name);
        let color = PHASE_COLORS[i % PHASE_COLORS.len()];
        // A phase that several threads run (one per GPU) is told apart by its thread.
        let shared = phases
            .iter()
            .any(|o| o.name == ph.name && o.thread != ph.thread);
        out.push(Row {
            label: if shared {
                phase_on_thread(name, &s.thread_name(ph.thread))
            } else {
                name.to_owned()
            },
            spans: vec![(ph.start, ph.end_or(s.now))],
            style: Style::default().fg(color),
            sub: false,
        });
        // Parallel work under this phase: children on other threads than the phase's, one row
        // per thread; GPU spans one row per (device, stream).
        let mut per_thread: std::collections::BTreeMap<u32, Vec<(u64, u64)>> = Default::default();
        for c in p.children(ph.id).filter(|c| c.thread != ph.thread) {
            per_thread
                .entry(c.thread)
                .or_default()
                .push((c.start, c.end_or(s.now)));
        }
        for (t, spans) in per_thread {
            out.push(Row {
                label: format!(" └{}", s.thread_name(t)),
                spans,
                style: Style::default().fg(color),
                sub: true,
            });
        }
        let mut per_stream: std::collections::BTreeMap<(u32, u32), Vec<(u64, u64)>> =
            Default::default();
        let descendants: Vec<u64> = std::iter::once(ph.id)
            .chain(p.children(ph.id).map(|c| c.id))
            .collect();
        for g in p
            .gpu_spans
            .iter()
            .filter(|g| g.span.is_some_and(|x| descendants.contains(&x)))
        {
            per_stream
                .entry((g.device, g.stream))
                .or_default()
                .push((g.start, g.end));
        }
        for ((d, st), spans) in per_stream {
            out.push(Row {
                label: format!(" └gpu{d}.s{st}"),
                spans,
                style: Style::default().fg(Color::Yellow),
                sub: true,
            });
        }
    }
    out
}

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let Some((s, p)) = super::proof_or_placeholder(model, state, area, buf) else {
        return;
    };
    let Some(outer) = p.outer().copied() else {
        Paragraph::new(format!("proof {} has no outer span yet", p.id)).render(area, buf);
        return;
    };
    let (a, b) = (outer.start, outer.end_or(s.now));
    let (from, to) = state.window(a, b);
    let axis = Axis {
        from,
        to,
        x: area.x + LABEL,
        width: area.width.saturating_sub(LABEL),
    };
    if axis.width < 4 || area.height < 3 {
        return;
    }
    // Title: what this proof is.
    let mut title = vec![TSpan::styled(format!("proof {} ", p.id), bold())];
    if let Some(pb) = &p.begin {
        title.push(TSpan::raw(format!(
            "{} × {} ({} constraints) {}",
            pb.circuits, pb.circuit, pb.constraints, pb.backend
        )));
        if pb.synthetic_srs {
            title.push(TSpan::styled(" SYNTHETIC SRS", warn()));
        }
    }
    title.push(TSpan::styled(format!("  {}", dur(b - a)), bold()));
    if let Some(e) = &p.end {
        title.push(TSpan::raw(format!("  {}", e.verification.as_str())));
    }
    Paragraph::new(Line::from(title)).render(Rect { height: 1, ..area }, buf);
    // Axis line.
    let y_axis = area.y + 1;
    label(buf, area, y_axis, "", dim());
    let left = format!("+{}", dur(from - a));
    let right = format!("+{}", dur(to - a));
    buf.set_string(axis.x, y_axis, &left, dim());
    let rx = (axis.x + axis.width).saturating_sub(right.len() as u16);
    if rx > axis.x + left.len() as u16 {
        buf.set_string(rx, y_axis, &right, dim());
    }
    // Outer span row with its unaccounted segments.
    let y0 = area.y + 2;
    let gaps = proof_gaps(p, &state.rule, s.now);
    let outer_gaps = gaps.iter().find(|g| g.span.id == outer.id);
    label(buf, area, y0, s.name(outer.name), bold());
    if let Some(c) = axis.cols(a, b) {
        fill(buf, y0, c, "▔", dim());
    }
    if let Some(og) = outer_gaps {
        for g in &og.gaps {
            let wide = axis.col(g.at.end) - axis.col(g.at.start) >= 0.5;
            if !(wide || g.flagged) {
                continue; // invisible at this zoom; the summary line counts it
            }
            let Some(c) = axis.cols(g.at.start, g.at.end) else {
                continue;
            };
            let style = if g.flagged {
                Style::default().fg(Color::Red)
            } else {
                Style::default().fg(Color::Yellow)
            };
            fill(buf, y0, c, "░", style);
            let text = dur(g.at.len()).to_string();
            if (c.1 - c.0) as usize >= text.len() + 2 {
                let x = c.0 + (c.1 - c.0 - text.len() as u16) / 2;
                buf.set_string(
                    x,
                    y0,
                    &text,
                    style.add_modifier(ratatui::style::Modifier::BOLD),
                );
            }
        }
    }
    // Phase rows.
    let all = rows(s, p, &outer);
    let avail = area.height.saturating_sub(3) as usize;
    let shown = if all.len() > avail {
        avail.saturating_sub(1)
    } else {
        all.len()
    };
    for (i, r) in all.iter().take(shown).enumerate() {
        let y = y0 + 1 + i as u16;
        label(buf, area, y, &r.label, if r.sub { dim() } else { r.style });
        for &(sa, sb) in &r.spans {
            if let Some(c) = axis.cols(sa, sb) {
                fill(buf, y, c, if r.sub { "▬" } else { "█" }, r.style);
            }
        }
    }
    if shown < all.len() {
        let y = y0 + 1 + shown as u16;
        buf.set_string(
            area.x,
            y,
            format!("… {} more rows (taller terminal)", all.len() - shown),
            dim(),
        );
    }
    // Summary under the rows, if room.
    let used = 3 + shown as u16 + u16::from(shown < all.len());
    if area.height > used
        && let Some(og) = outer_gaps
    {
        let total = (b - a).max(1);
        let flagged = og.gaps.iter().filter(|g| g.flagged).count();
        let text = format!(
            "unaccounted {} ({:.1}% of prove), {} gap{}, {} flagged (≥ {})",
            dur(og.unaccounted_ns),
            og.unaccounted_ns as f64 / total as f64 * 100.0,
            og.gaps.len(),
            if og.gaps.len() == 1 { "" } else { "s" },
            flagged,
            dur(state.rule.threshold(total)),
        );
        let style = if flagged > 0 { warn() } else { dim() };
        buf.set_string(area.x, area.y + used, text, style);
    }
}
