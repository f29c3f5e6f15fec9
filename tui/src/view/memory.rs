//! Memory on the proof's time axis: live bytes and RSS, release markers, time spent freeing.

use super::{ViewState, bold, dim};
use crate::format::{bytes, dur};
use crate::model::Model;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let Some((s, p)) = super::proof_or_placeholder(model, state, area, buf) else {
        return;
    };
    let Some((a, b)) = p.range(s.now()) else {
        return;
    };
    let (from, to) = state.window(a, b);
    let [summary, chart] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3)]).areas(area);
    let samples = s.alloc_samples().range(from, to.saturating_add(1));
    let releases = s.releases().range(from, to.saturating_add(1));
    let outer_thread = p.outer().map(|o| o.thread);
    let freeing: u64 = releases.iter().map(|r| r.inside_ns).sum();
    let on_proving: u64 = releases
        .iter()
        .filter(|r| Some(r.thread) == outer_thread)
        .map(|r| r.inside_ns)
        .sum();
    let freed: u64 = releases.iter().map(|r| r.bytes).sum();
    // Who freed most of the window's bytes, from the releases' call stacks.
    let mut by: Vec<(String, u64)> = Vec::new();
    for r in releases {
        crate::analysis::frames::tally(&mut by, s, r);
    }
    let top = by
        .first()
        .map_or(String::new(), |(w, b)| format!("; {} by {w}", bytes(*b)));
    // A window without samples has no peak: saying "0 B" would be a measurement.
    let peak = samples.iter().map(|x| x.live_bytes).max();
    let rss = samples.iter().map(|x| x.rss_bytes).max().filter(|&r| r > 0);
    let or_none =
        |v: Option<u64>| v.map_or("no samples".to_owned(), |b| format!("peak {}", bytes(b)));
    Paragraph::new(super::fit_lines(
        vec![
            Line::from(vec![
                Span::styled("live ", Style::default().fg(Color::Cyan)),
                Span::raw(format!("{}  ", or_none(peak))),
                Span::styled("rss ", Style::default().fg(Color::Magenta)),
                Span::raw(or_none(rss)),
            ]),
            Line::from(vec![
                Span::styled("releases ", Style::default().fg(Color::Red)),
                Span::raw(format!(
                    "{} freeing {} in {} large frees ({} on the proving thread){top}",
                    bytes(freed),
                    dur(freeing),
                    releases.len(),
                    dur(on_proving)
                )),
            ]),
        ],
        summary.width,
    ))
    .render(summary, buf);
    if samples.is_empty() {
        Paragraph::new("no allocator samples in this window")
            .style(dim())
            .render(chart, buf);
        return;
    }
    // The unit follows the magnitude: 90 MB, not 0.09 GB.
    let top_bytes = samples
        .iter()
        .map(|x| x.live_bytes.max(x.rss_bytes))
        .max()
        .unwrap_or(1);
    let (scale, unit) = match top_bytes {
        b if b >= 1_000_000_000 => (1e9, "GB"),
        b if b >= 1_000_000 => (1e6, "MB"),
        _ => (1e3, "kB"),
    };
    let t = |ts: u64| (ts.saturating_sub(from)) as f64 / 1e9;
    let live: Vec<(f64, f64)> = samples
        .iter()
        .map(|x| (t(x.ts), x.live_bytes as f64 / scale))
        .collect();
    let rss_pts: Vec<(f64, f64)> = samples
        .iter()
        .filter(|x| x.rss_bytes > 0)
        .map(|x| (t(x.ts), x.rss_bytes as f64 / scale))
        .collect();
    let top = top_bytes as f64 / scale;
    let marks: Vec<(f64, f64)> = releases.iter().map(|r| (t(r.ts), top * 0.98)).collect();
    let span = (to - from) as f64 / 1e9;
    let (live_name, rss_name) = (format!("live {unit}"), format!("rss {unit}"));
    let datasets = vec![
        Dataset::default()
            .name(live_name)
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Cyan))
            .data(&live),
        Dataset::default()
            .name(rss_name)
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Magenta))
            .data(&rss_pts),
        Dataset::default()
            .name("release")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(Style::default().fg(Color::Red))
            .data(&marks),
    ];
    // The x axis is in the proof's offsets, as the timeline's is (also when panned).
    Chart::new(datasets)
        .x_axis(Axis::default().bounds([0.0, span.max(1e-9)]).labels(vec![
            Line::from(format!("+{}", dur(from.saturating_sub(a)))),
            Line::from(Span::styled(
                format!("+{}", dur(to.saturating_sub(a))),
                bold(),
            )),
        ]))
        .y_axis(
            Axis::default()
                .bounds([0.0, top.max(1e-9)])
                .labels(vec![Line::from("0"), Line::from(format!("{top:.1}{unit}"))]),
        )
        .render(chart, buf);
}
