//! The selected proof's timeline: one row per phase on the proof's time axis, parallel
//! sub-rows for work spread over threads or GPU streams, and the outer span's unaccounted
//! segments drawn distinctly with their duration.

use super::{ViewState, bold, dim, warn};
use proofscope_engine::analysis::proof_gaps;
use proofscope_engine::format::dur;
use proofscope_engine::model::{Model, Proof, Session, Span, SpanId, ThreadId};
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
    buf.set_string(
        area.x,
        y,
        proofscope_engine::format::fit(text, LABEL as usize - 1),
        style,
    );
}

/// "ntt_msm_h:1" for `ntt_msm_h` on thread `gpu-1` (the thread's number, else its name),
/// the phase name shortened so the suffix fits the label column.
fn phase_on_thread(name: &str, thread: &str) -> String {
    let suffix = match thread.rsplit_once('-') {
        Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => thread,
    };
    let room = (LABEL as usize - 1).saturating_sub(suffix.chars().count() + 1);
    format!("{}:{suffix}", proofscope_engine::format::fit(name, room))
}

/// A row to draw: its label, the intervals on it, its style, whether it is a sub-row, and
/// what its sub-rows would have shown when they are left out.
struct Row {
    label: String,
    spans: Vec<(u64, u64)>,
    style: Style,
    sub: bool,
    note: Option<String>,
}

/// How much of the work under each phase gets rows of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// A row per thread and per GPU stream (`e`).
    Each,
    /// One row for the phase's threads, one for its GPU streams (the default).
    Summary,
    /// No sub-rows; the phase row says how many threads and streams (when the summary does
    /// not fit).
    None,
}

fn rows(s: &Session, p: &Proof, outer: &Span, detail: Detail) -> Vec<Row> {
    // In time order: rows read top to bottom as the proof ran, whatever the phases' names.
    let mut phases: Vec<&Span> = p.children(outer.id).collect();
    phases.sort_by_key(|sp| (sp.start, sp.thread, sp.id));
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
            spans: vec![(ph.start, ph.end_or(s.now()))],
            style: Style::default().fg(color),
            sub: false,
            note: None,
        });
        let phase_row = out.len() - 1;
        let mut notes = Vec::new();
        let threads = Parallel {
            groups: other_threads(s, p, ph),
            style: Style::default().fg(color),
            noun: "thread",
            nouns: "threads",
        };
        threads.rows(detail, &mut out, &mut notes);
        let streams = Parallel {
            groups: gpu_streams(p, ph),
            style: Style::default().fg(Color::Yellow),
            noun: "GPU stream",
            nouns: "GPU streams",
        };
        streams.rows(detail, &mut out, &mut notes);
        if !notes.is_empty() {
            out[phase_row].note = Some(notes.join(", "));
        }
    }
    out.extend(beside(s, p, outer));
    out
}

/// A phase's parallel work of one kind (its other threads, or its GPU streams): labelled
/// groups of spans.
struct Parallel {
    groups: Vec<(String, Vec<(u64, u64)>)>,
    style: Style,
    noun: &'static str,
    nouns: &'static str,
}

impl Parallel {
    /// Its rows at `detail`: one row a group, one summary row, or a note on the phase's row.
    fn rows(self, detail: Detail, out: &mut Vec<Row>, notes: &mut Vec<String>) {
        let row = |label, spans| Row {
            label,
            spans,
            style: self.style,
            sub: true,
            note: None,
        };
        match detail {
            Detail::Each => {
                out.extend(self.groups.into_iter().map(|(l, spans)| row(l, spans)));
            }
            Detail::Summary if !self.groups.is_empty() => {
                let label = match self.groups.as_slice() {
                    [(one, _)] => one.clone(),
                    many => format!(" └{} {}", many.len(), self.nouns),
                };
                out.push(row(
                    label,
                    self.groups.into_iter().flat_map(|(_, v)| v).collect(),
                ));
            }
            Detail::None if !self.groups.is_empty() => {
                let n = self.groups.len();
                notes.push(format!(
                    "{n} {}",
                    if n == 1 { self.noun } else { self.nouns }
                ));
            }
            _ => {}
        }
    }
}

/// The phase's children on other threads than its own, by thread, sorted by when each thread
/// started its part.
fn other_threads(s: &Session, p: &Proof, ph: &Span) -> Vec<(String, Vec<(u64, u64)>)> {
    let mut per_thread: std::collections::BTreeMap<ThreadId, Vec<(u64, u64)>> = Default::default();
    for c in p.children(ph.id).filter(|c| c.thread != ph.thread) {
        per_thread
            .entry(c.thread)
            .or_default()
            .push((c.start, c.end_or(s.now())));
    }
    let mut threads: Vec<(ThreadId, Vec<(u64, u64)>)> = per_thread.into_iter().collect();
    threads.sort_by_key(|(t, spans)| (spans.iter().map(|x| x.0).min(), *t));
    threads
        .into_iter()
        .map(|(t, spans)| (format!(" └{}", s.thread_name(t)), spans))
        .collect()
}

/// The GPU spans under the phase (or its children), by (device, stream).
fn gpu_streams(p: &Proof, ph: &Span) -> Vec<(String, Vec<(u64, u64)>)> {
    let mut per_stream: std::collections::BTreeMap<(u32, u32), Vec<(u64, u64)>> =
        Default::default();
    let descendants: Vec<SpanId> = std::iter::once(ph.id)
        .chain(p.children(ph.id).map(|c| c.id))
        .collect();
    for g in p
        .gpu_spans()
        .iter()
        .filter(|g| g.span.is_some_and(|x| descendants.contains(&x)))
    {
        per_stream
            .entry((g.device, g.stream))
            .or_default()
            .push((g.start, g.end));
    }
    per_stream
        .into_iter()
        .map(|((d, st), spans)| (format!(" └gpu{d}.s{st}"), spans))
        .collect()
}

/// Rows for the proofs in flight beside this one (batches that overlap): when each ran its
/// phases and its GPU work, inside this proof's window, so that what the device did while this
/// proof synthesised is on screen.
fn beside(s: &Session, p: &Proof, outer: &Span) -> Vec<Row> {
    let (a, b) = (outer.start, outer.end_or(s.now()));
    let clip = |x: u64, y: u64| (x.max(a), y.min(b));
    let mut out = Vec::new();
    for q in s.proofs().filter(|q| q.id() != p.id()) {
        let Some(qo) = q.outer() else {
            continue;
        };
        let (qa, qb) = (qo.start, qo.end_or(s.now()));
        if qb <= a || qa >= b {
            continue;
        }
        out.push(Row {
            label: format!("proof #{}", q.id()),
            spans: vec![clip(qa, qb)],
            style: Style::default().fg(Color::Magenta),
            sub: true,
            note: None,
        });
        let gpu: Vec<(u64, u64)> = q
            .gpu_spans()
            .iter()
            .map(|g| clip(g.start, g.end))
            .filter(|(x, y)| x < y)
            .collect();
        if !gpu.is_empty() {
            out.push(Row {
                label: format!(" └#{} GPU", q.id()),
                spans: gpu,
                style: Style::default().fg(Color::Yellow),
                sub: true,
                note: None,
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
        let text = format!("proof {} has no outer span yet", p.id());
        Paragraph::new(proofscope_engine::format::fit(&text, area.width as usize))
            .render(area, buf);
        return;
    };
    let (a, b) = (outer.start, outer.end_or(s.now()));
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
    render_title(s, p, b - a, area, buf);
    render_axis(&axis, a, area, buf);
    let gaps = proof_gaps(p, &state.rule, s.now());
    let outer_gaps = gaps.iter().find(|g| g.span.id == outer.id);
    let y0 = area.y + 2;
    label(buf, area, y0, s.name(outer.name), bold());
    render_outer_row(&axis, (a, b), outer_gaps, y0, buf);
    let worst = worst_flagged(s, p, &outer, outer_gaps);
    let plan = RowPlan::new(s, p, &outer, state, area, worst.is_some());
    render_phase_rows(&plan, &axis, state, area, buf);
    let mut y = plan.bottom - plan.reserved;
    if let Some(og) = outer_gaps {
        render_unaccounted(s, &outer, og, b - a, state, area, y, buf);
    }
    y += 1;
    if let Some((finding, key)) = &worst {
        let w = area.width as usize;
        buf.set_string(
            area.x,
            y,
            proofscope_engine::format::fit(finding, w),
            warn(),
        );
        buf.set_string(
            area.x,
            y + 1,
            proofscope_engine::format::fit(key, w),
            bold(),
        );
        y += 2;
    }
    if plan.legend {
        render_legend(s.name(outer.name), area, y, buf);
    }
}

/// The title line: what this proof is, and how long it took.
fn render_title(s: &Session, p: &Proof, len: u64, area: Rect, buf: &mut Buffer) {
    let mut title = vec![TSpan::styled(format!("proof {} ", p.id()), bold())];
    if let Some(pb) = p.begin() {
        // Constraints only where known: 0 is "unknown" (a proof from a log).
        let constraints = if pb.constraints > 0 {
            format!(" ({} constraints)", pb.constraints)
        } else {
            String::new()
        };
        title.push(TSpan::raw(format!(
            "{}{}{constraints} {}",
            proofscope_engine::format::circuits_times(pb.circuits),
            pb.circuit,
            proofscope_engine::analysis::backend::of_proof(s, p).name
        )));
        if pb.synthetic_srs {
            title.push(TSpan::styled(" SYNTHETIC SRS", warn()));
        }
    }
    title.push(TSpan::styled(format!("  {}", dur(len)), bold()));
    if let Some(e) = p.end() {
        title.push(TSpan::raw(format!("  {}", e.verification.as_str())));
    }
    Paragraph::new(super::fit_line(
        Line::from(title),
        area.width.saturating_sub(1),
    ))
    .render(Rect { height: 1, ..area }, buf);
}

/// The axis line: ticks at round offsets from the proof's start `a`, labelled where they fit.
fn render_axis(axis: &Axis, a: u64, area: Rect, buf: &mut Buffer) {
    let y_axis = area.y + 1;
    label(buf, area, y_axis, "", dim());
    let mut free_from = axis.x;
    for t in ticks(axis.from - a, axis.to - a, axis.width) {
        let col = axis.col(a + t).round() as u16;
        let x = axis.x + col.min(axis.width.saturating_sub(1));
        let text = if t == 0 {
            "┊0".to_owned()
        } else {
            format!("┊{}", dur(t))
        };
        if x >= free_from && x + text.chars().count() as u16 <= axis.x + axis.width {
            buf.set_string(x, y_axis, &text, dim());
            free_from = x + text.chars().count() as u16 + 1;
        }
    }
}

/// The outer span's row over `(a, b)`, with its unaccounted segments.
fn render_outer_row(
    axis: &Axis,
    (a, b): (u64, u64),
    outer_gaps: Option<&proofscope_engine::analysis::SpanGaps>,
    y0: u16,
    buf: &mut Buffer,
) {
    if let Some(c) = axis.cols(a, b) {
        fill(buf, y0, c, "▔", dim());
    }
    let Some(og) = outer_gaps else { return };
    for g in &og.gaps {
        let wide = axis.col(g.at.end) - axis.col(g.at.start) >= 0.5;
        if !(wide || g.flagged) {
            continue; // invisible at this zoom; the summary line counts it
        }
        let Some(c) = axis.cols(g.at.start, g.at.end) else {
            continue;
        };
        // Flagged and not differ in glyph as well as colour (NO_COLOR, colour blindness).
        let (glyph, style) = if g.flagged {
            (FLAGGED, Style::default().fg(Color::Red))
        } else {
            (UNFLAGGED, Style::default().fg(Color::Yellow))
        };
        fill(buf, y0, c, glyph, style);
        let text = dur(g.at.len()).to_string();
        let tw = text.chars().count() as u16;
        let bold = style.add_modifier(ratatui::style::Modifier::BOLD);
        if c.1 - c.0 >= tw + 2 {
            let x = c.0 + (c.1 - c.0 - tw) / 2;
            buf.set_string(x, y0, &text, bold);
        } else if g.flagged && c.0 > axis.x + tw {
            // Too narrow to hold its length: the length beside it, over the outer bar.
            buf.set_string(c.0 - tw - 1, y0, format!("{text} "), bold);
        }
    }
}

/// The phase rows between the outer row and the lines kept at the bottom (the unaccounted
/// summary always, the worst gap's two lines, the legend when there is room for it).
struct RowPlan {
    rows: Vec<Row>,
    /// First row shown, and how many.
    scroll: usize,
    shown: usize,
    /// Every row is on screen (else a line says what is above and below).
    fits: bool,
    y0: u16,
    bottom: u16,
    reserved: u16,
    legend: bool,
}

impl RowPlan {
    fn new(
        s: &Session,
        p: &Proof,
        outer: &Span,
        state: &ViewState,
        area: Rect,
        worst: bool,
    ) -> RowPlan {
        let y0 = area.y + 2;
        let bottom = area.y + area.height;
        let legend = area.height >= 12;
        let reserved = 1 + u16::from(legend) + 2 * u16::from(worst);
        let avail = bottom.saturating_sub(y0 + 1 + reserved) as usize;
        // Collapsed (the default), the phases come first: their summary sub-rows only if all fit.
        let rows = if state.expand {
            rows(s, p, outer, Detail::Each)
        } else {
            let summary = rows(s, p, outer, Detail::Summary);
            if summary.len() <= avail {
                summary
            } else {
                rows(s, p, outer, Detail::None)
            }
        };
        let scroll = state.scroll.min(rows.len().saturating_sub(avail));
        let fits = rows.len() <= avail;
        let shown = if fits {
            rows.len()
        } else {
            avail.saturating_sub(1)
        };
        RowPlan {
            rows,
            scroll,
            shown,
            fits,
            y0,
            bottom,
            reserved,
            legend,
        }
    }
}

fn render_phase_rows(plan: &RowPlan, axis: &Axis, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let rows = plan.rows.iter().skip(plan.scroll).take(plan.shown);
    for (i, r) in rows.enumerate() {
        render_phase_row(r, axis, area, plan.y0 + 1 + i as u16, buf);
    }
    if !plan.fits {
        let y = plan.y0 + 1 + plan.shown as u16;
        let below = plan.rows.len() - plan.scroll - plan.shown;
        buf.set_string(
            area.x,
            y,
            format!(
                "… {} rows above, {below} below (PgUp/PgDn; e: {} threads)",
                plan.scroll,
                if state.expand { "collapse" } else { "expand" }
            ),
            dim(),
        );
    }
}

/// One phase (or thread) row: its bars, and a phase's duration beside its bar — after it, else
/// before it, else over its end.
fn render_phase_row(r: &Row, axis: &Axis, area: Rect, y: u16, buf: &mut Buffer) {
    label(buf, area, y, &r.label, if r.sub { dim() } else { r.style });
    let mut bar = None;
    for &(sa, sb) in &r.spans {
        if let Some(c) = axis.cols(sa, sb) {
            fill(buf, y, c, if r.sub { "▬" } else { "█" }, r.style);
            bar = Some(c);
        }
    }
    let (false, Some((c0, c1)), [(sa, sb)]) = (r.sub, bar, r.spans.as_slice()) else {
        return;
    };
    let text = match &r.note {
        Some(n) => format!("{} ({n})", dur(sb - sa)),
        None => dur(sb - sa),
    };
    let len = text.chars().count() as u16 + 1;
    let right = axis.x + axis.width;
    let (x, text) = if right.saturating_sub(c1) >= len {
        (c1, format!(" {text}"))
    } else if c0.saturating_sub(axis.x) >= len {
        (c0 - len, format!("{text} "))
    } else {
        (right.saturating_sub(len), format!(" {text}"))
    };
    buf.set_string(
        x,
        y,
        &text,
        r.style.add_modifier(ratatui::style::Modifier::BOLD),
    );
}

/// The outer span's unaccounted time, always on screen.
#[allow(clippy::too_many_arguments)]
fn render_unaccounted(
    s: &Session,
    outer: &Span,
    og: &proofscope_engine::analysis::SpanGaps,
    len: u64,
    state: &ViewState,
    area: Rect,
    y: u16,
    buf: &mut Buffer,
) {
    let total = len.max(1);
    let flagged = og.gaps.iter().filter(|g| g.flagged).count();
    let text = format!(
        "unaccounted {} ({:.1}% of {}), {flagged} of {} gap{} flagged (≥ {})",
        dur(og.unaccounted_ns),
        og.unaccounted_ns as f64 / total as f64 * 100.0,
        s.name(outer.name),
        og.gaps.len(),
        if og.gaps.len() == 1 { "" } else { "s" },
        dur(state.rule.threshold(total)),
    );
    let style = if flagged > 0 { warn() } else { dim() };
    let w = area.width as usize;
    buf.set_string(area.x, y, proofscope_engine::format::fit(&text, w), style);
}

/// The key to the chart's glyphs, short where the panel is narrow.
fn render_legend(outer_name: &str, area: Rect, y: u16, buf: &mut Buffer) {
    let wide = format!(
        "█ phase  ▬ its threads / GPU streams  ▔ {outer_name}  {UNFLAGGED} unaccounted  {FLAGGED} flagged"
    );
    let text = if wide.chars().count() <= area.width as usize {
        wide
    } else {
        format!("█ phase ▬ threads ▔ {outer_name} {UNFLAGGED} unaccounted {FLAGGED} flagged")
    };
    buf.set_string(
        area.x,
        y,
        proofscope_engine::format::fit(&text, area.width as usize),
        dim(),
    );
}

/// Unaccounted time under the threshold, and over it.
const UNFLAGGED: &str = "░";
const FLAGGED: &str = "▓";

/// The first-sight lines under the chart when a gap of the outer span is flagged: the largest
/// and what the diagnosis found; then the key to the whole of it.
fn worst_flagged(
    s: &Session,
    p: &Proof,
    outer: &proofscope_engine::model::Span,
    gaps: Option<&proofscope_engine::analysis::SpanGaps>,
) -> Option<(String, String)> {
    let g = gaps?
        .gaps
        .iter()
        .filter(|g| g.flagged)
        .max_by_key(|g| g.at.len())?;
    let d = proofscope_engine::analysis::diagnose(s, p, outer, g.at);
    let t0 = outer.start;
    let finding = format!(
        "! {} {} at +{}: {}",
        g.place.words(),
        dur(g.at.len()),
        dur(g.at.start.saturating_sub(t0)),
        if proofscope_engine::analysis::settled::is_settled(s, p) {
            d.headline()
        } else {
            d.so_far()
        },
    );
    // What the diagnosis panel adds: for frees, who freed them; else the evidence.
    let more = if d.releases.are_own() {
        "who freed it, from where"
    } else {
        "what the thread was doing, and the evidence"
    };
    let key = format!(
        "  press {} for the diagnosis ({more})",
        crate::input::key_of(crate::input::Action::Panel(super::Tab::Gaps))
    );
    Some((finding, key))
}

/// How far the timeline can scroll: its rows for the shown proof, at `expand`.
pub fn rows_of(model: &Model, state: &ViewState) -> usize {
    let Some(k) = state.shown(model) else {
        return 0;
    };
    let (Some(s), Some(p)) = (model.session(k.session), model.proof(k)) else {
        return 0;
    };
    let detail = if state.expand {
        Detail::Each
    } else {
        Detail::Summary
    };
    p.outer().map_or(0, |o| rows(s, p, o, detail).len())
}

/// Round offsets (1, 2 or 5 × a power of ten, in ns) between `from` and `to`, at most one per
/// 12 columns of `width`.
pub fn ticks(from: u64, to: u64, width: u16) -> Vec<u64> {
    let span = to.saturating_sub(from).max(1) as f64;
    let want = (f64::from(width) / 12.0).max(1.0);
    let raw = span / want;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
        .max(1.0) as u64;
    let first = from.div_ceil(step) * step;
    (0..)
        .map(|i| first + i * step)
        .take_while(|t| *t <= to)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_on_round_values() {
        // 0 to 543 ms over 120 columns: at most ten ticks, so 100 ms apart.
        let t = ticks(0, 543_000_000, 120);
        assert_eq!(t.first(), Some(&0));
        assert!(t.windows(2).all(|w| w[1] - w[0] == 100_000_000), "{t:?}");
        assert_eq!(t.last(), Some(&500_000_000));
        // Panned: from +1.234 s, ticks still on multiples of the step.
        let t = ticks(1_234_000_000, 1_734_000_000, 60);
        assert!(t.iter().all(|x| x % 100_000_000 == 0), "{t:?}");
    }
}
