//! A session with no proof yet — or none at all: a prover watched through its allocator alone
//! — is still a session: its last seconds on a time axis, a row per thread that freed large
//! blocks (each release a mark, its size where it fits), memory live and resident, and the
//! largest releases with the code that freed them.

use super::timeline::Axis;
use super::{bold, dim, warn};
use proofscope_engine::analysis::releases::largest_releases;
use proofscope_engine::format::{bytes, dur};
use proofscope_engine::model::{Model, Session, ThreadId};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use std::collections::BTreeMap;

/// The stretch of a session shown when there is no proof: its last this many ns.
pub const WINDOW_NS: u64 = 30_000_000_000;
/// Label column, as the timeline's.
const LABEL: u16 = 14;

/// The window a proof-less view covers: the session's last [`WINDOW_NS`].
pub fn window(s: &Session) -> (u64, u64) {
    let end = s.now().max(1);
    (end.saturating_sub(WINDOW_NS), end)
}

/// The session panel, drawn where a proof's panel would be.
pub fn render(model: &Model, area: Rect, buf: &mut Buffer) {
    let Some(s) = model.current() else {
        Paragraph::new("waiting for a prover…")
            .style(dim())
            .render(area, buf);
        return;
    };
    if area.height < 3 {
        return;
    }
    let (from, to) = window(s);
    let releases = s.releases().range(from, to.saturating_add(1));
    let head = match s.status() {
        Some(status) => status.to_owned(),
        None => format!(
            "no proof yet: the session's last {} ({} large releases, {})",
            dur(to - from),
            releases.len(),
            bytes(releases.iter().map(|r| r.bytes).sum())
        ),
    };
    Paragraph::new(super::fit_line(
        Line::from(Span::styled(head, bold())),
        area.width,
    ))
    .render(Rect { height: 1, ..area }, buf);
    let memory = memory_line(s, from, to);
    Paragraph::new(super::fit_line(memory, area.width)).render(
        Rect {
            y: area.y + 1,
            height: 1,
            ..area
        },
        buf,
    );
    let axis = Axis {
        from,
        to,
        x: area.x + LABEL,
        width: area.width.saturating_sub(LABEL),
    };
    let mut y = area.y + 2;
    let bottom = area.y + area.height;
    let rows = thread_rows(s, from, to);
    let room = bottom.saturating_sub(y) as usize;
    let shown = rows.len().min(room.saturating_sub(2).max(1));
    for (thread, marks) in rows.iter().take(shown) {
        if y >= bottom {
            return;
        }
        draw_row(buf, area, axis, y, &s.thread_name(*thread), marks);
        y += 1;
    }
    largest(buf, area, y, bottom, s);
}

/// "live 1.2 GB (peak 3.4 GB)  rss 2.0 GB" at the window's end.
fn memory_line(s: &Session, from: u64, to: u64) -> Line<'static> {
    let samples = s.alloc_samples().range(from, to.saturating_add(1));
    let Some(last) = samples.last() else {
        return Line::from(Span::styled("no allocator samples yet", dim()));
    };
    let peak = samples.iter().map(|a| a.live_bytes).max().unwrap_or(0);
    let mut spans = vec![
        Span::styled("live ", Style::default().fg(Color::Cyan)),
        Span::raw(format!(
            "{} (peak {})  ",
            bytes(last.live_bytes),
            bytes(peak)
        )),
    ];
    if last.rss_bytes > 0 {
        spans.push(Span::styled("rss ", Style::default().fg(Color::Magenta)));
        spans.push(Span::raw(bytes(last.rss_bytes)));
    }
    Line::from(spans)
}

/// One large release drawn on a thread's row.
#[derive(Clone, Copy)]
struct ReleaseMark {
    start: u64,
    end: u64,
    bytes: u64,
}

/// A thread's row: the thread and the releases it made in the window.
type ThreadRow = (ThreadId, Vec<ReleaseMark>);

/// The threads that freed large blocks in the window, most time freeing first.
fn thread_rows(s: &Session, from: u64, to: u64) -> Vec<ThreadRow> {
    let mut by: BTreeMap<ThreadId, Vec<ReleaseMark>> = BTreeMap::new();
    for r in s.releases().range(from, to.saturating_add(1)) {
        by.entry(r.thread).or_default().push(ReleaseMark {
            start: r.ts,
            end: r.ts + r.inside_ns,
            bytes: r.bytes,
        });
    }
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by_key(|(t, m)| {
        let inside: u64 = m.iter().map(|x| x.end - x.start).sum();
        (std::cmp::Reverse(inside), *t)
    });
    rows
}

fn draw_row(buf: &mut Buffer, area: Rect, axis: Axis, y: u16, name: &str, marks: &[ReleaseMark]) {
    let label: String = proofscope_engine::format::fit(name, LABEL as usize - 1);
    buf.set_string(area.x, y, label, dim());
    for m in marks {
        if let Some((c0, c1)) = axis.cols(m.start, m.end) {
            for x in c0..c1 {
                if let Some(c) = buf.cell_mut((x, y)) {
                    c.set_symbol("▮").set_style(warn());
                }
            }
        }
    }
    let total: u64 = marks.iter().map(|m| m.bytes).sum();
    let text = format!(" freed {}", bytes(total));
    let x = (axis.x + axis.width).saturating_sub(text.chars().count() as u16);
    buf.set_string(x, y, text, dim());
}

/// The largest releases of the session, with who freed them.
fn largest(buf: &mut Buffer, area: Rect, mut y: u16, bottom: u16, s: &Session) {
    let list = largest_releases(s, bottom.saturating_sub(y + 1) as usize);
    if list.is_empty() || y + 1 >= bottom {
        return;
    }
    buf.set_string(area.x, y, "largest releases", bold());
    y += 1;
    for r in list {
        if y >= bottom {
            return;
        }
        let what = if r.address_space() {
            format!("{} address space", bytes(r.bytes))
        } else {
            bytes(r.bytes)
        };
        let text = format!(
            "{what:>10} on {} {} in free{}",
            r.thread,
            dur(r.inside_ns),
            r.freed_by
                .as_deref()
                .map_or(String::new(), |w| format!(", by {w}"))
        );
        buf.set_string(
            area.x,
            y,
            proofscope_engine::format::fit(&text, area.width as usize),
            Style::default(),
        );
        y += 1;
    }
}
