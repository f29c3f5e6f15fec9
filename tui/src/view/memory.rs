//! Memory on the proof's time axis: live bytes and RSS, release markers, time spent freeing.

use super::{ViewState, bold, dim};
use probe_protocol::AllocSample;
use proofscope_engine::analysis::releases::{ProofReleases, ReleaseGroup};
use proofscope_engine::format::{bytes, dur};
use proofscope_engine::model::{Block, Model, Proof, Session};
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
    if s.alloc_samples().is_empty() && s.releases().is_empty() {
        Paragraph::new(proofscope_engine::format::fit(
            &no_allocator_data(s),
            area.width as usize,
        ))
        .style(dim())
        .render(area, buf);
        return;
    }
    let [summary, chart] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3)]).areas(area);
    let samples = s.alloc_samples().range(from, to.saturating_add(1));
    Paragraph::new(super::fit_lines(
        summary_lines(s, p, samples),
        summary.width,
    ))
    .render(summary, buf);
    if samples.is_empty() {
        Paragraph::new("no allocator samples in this window")
            .style(dim())
            .render(chart, buf);
        return;
    }
    let releases = s.releases().range(from, to.saturating_add(1));
    render_chart(samples, releases, (from, to), a, chart, buf);
}

/// The two summary lines: the window's peaks, and what the proof freed and where — its
/// releases as the report counts them (one function, one definition).
fn summary_lines(s: &Session, p: &Proof, samples: &[AllocSample]) -> Vec<Line<'static>> {
    let rel = proofscope_engine::analysis::releases::proof_releases(
        s,
        p,
        proofscope_engine::analysis::releases::next_start(s, p.id()),
    );
    let groups = rel.places();
    let count: usize = groups.iter().map(|g| g.1.count).sum();
    let freed: u64 = groups.iter().map(|g| g.1.bytes).sum();
    let freeing: u64 = groups.iter().map(|g| g.1.inside_ns).sum();
    let top = top_freer(&groups);
    let places = where_freed(&rel);
    // A window without samples has no peak: saying "0 B" would be a measurement.
    let peak = samples.iter().map(|x| x.live_bytes).max();
    let rss = samples.iter().map(|x| x.rss_bytes).max().filter(|&r| r > 0);
    let or_none =
        |v: Option<u64>| v.map_or("no samples".to_owned(), |b| format!("peak {}", bytes(b)));
    vec![
        Line::from(vec![
            Span::styled(format!("proof {}: ", p.id()), bold()),
            Span::styled("live ", Style::default().fg(Color::Cyan)),
            Span::raw(format!("{}  ", or_none(peak))),
            Span::styled("rss ", Style::default().fg(Color::Magenta)),
            Span::raw(or_none(rss)),
        ]),
        Line::from(vec![
            Span::styled("releases ", Style::default().fg(Color::Red)),
            Span::raw(format!(
                "{} in {count} large frees{places}, {} inside free{top}",
                bytes(freed),
                dur(freeing),
            )),
        ]),
    ]
}

/// `; 2.2 GB by main`: who freed the most, over every place.
fn top_freer(groups: &[(&str, &ReleaseGroup)]) -> String {
    let mut by: Vec<(String, u64)> = Vec::new();
    for (who, b) in groups.iter().flat_map(|g| g.1.freed_by.iter()) {
        match by.iter_mut().find(|x| x.0 == *who) {
            Some(x) => x.1 += b,
            None => by.push((who.clone(), *b)),
        }
    }
    by.sort_by_key(|x| std::cmp::Reverse(x.1));
    by.first()
        .map_or(String::new(), |(w, b)| format!("; {} by {w}", bytes(*b)))
}

/// ` (3 outside phases, 20 in phases)`: how many releases fell where.
fn where_freed(rel: &ProofReleases) -> String {
    let places = [
        ("outside phases", &rel.in_outer_outside_phases),
        ("in phases", &rel.in_phases),
        ("other threads", &rel.elsewhere_during),
        ("after it", &rel.after_outer),
    ]
    .iter()
    .filter(|(_, g)| g.count > 0)
    .map(|(w, g)| format!("{} {w}", g.count))
    .collect::<Vec<_>>()
    .join(", ");
    if places.is_empty() {
        String::new()
    } else {
        format!(" ({places})")
    }
}

/// Live bytes, RSS and release marks over `(from, to)`. The x axis is in the proof's offsets
/// from `a`, as the timeline's is (also when panned). The summary's coloured words are the
/// legend: a legend box would sit over the proof's end, where the ghost is.
fn render_chart(
    samples: &[AllocSample],
    releases: &[Block],
    (from, to): (u64, u64),
    a: u64,
    chart: Rect,
    buf: &mut Buffer,
) {
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
    let datasets = vec![
        super::series(format!("live {unit}"), Color::Cyan, &live),
        super::series(format!("rss {unit}"), Color::Magenta, &rss_pts),
        Dataset::default()
            .name("release")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(Style::default().fg(Color::Red))
            .data(&marks),
    ];
    Chart::new(datasets)
        .legend_position(None)
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

/// One line for a session with no allocator data at all, saying why and what would give it.
fn no_allocator_data(s: &proofscope_engine::model::Session) -> String {
    if s.from_log() {
        format!(
            "no allocator data: {} (a recording beside it has the frees: replay REC --log LOG)",
            proofscope_engine::import::NO_TELEMETRY
        )
    } else {
        "no allocator data in this session: no samples, no large frees (the probe's allocator hook or the preload under proofscope run gives them)".to_owned()
    }
}
