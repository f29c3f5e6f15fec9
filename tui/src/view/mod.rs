//! Views: pure functions of `(&Model, &ViewState)` that draw into a ratatui `Buffer`.
//! `impl Widget for &Screen` composes small `render_*` functions; nothing here mutates state.

mod gaps;
mod gpu;
mod header;
mod help;
mod memory;
pub mod order;
mod proofs;
pub mod session;
mod state;
mod stats;
pub mod transport;
pub use crate::input::FilterKey;
pub use crate::panel::Tab;
pub use state::ViewState;
pub use stats::{Comparison, Verdict};
pub mod timeline;

use proofscope_engine::model::{Model, Proof, Session};
use proofscope_engine::source::LinkStatus;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs, Widget};

/// The whole screen.
#[derive(Debug)]
pub struct Screen<'a> {
    pub model: &'a Model,
    pub state: &'a ViewState,
    /// The link as the source reports it (live, replay position and speed, recording, pause).
    pub link: &'a LinkStatus,
}

pub(crate) fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub(crate) fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// The shown proof; with none (yet, or ever: a prover watched through its allocator alone),
/// the session panel is drawn instead and `None` returned.
pub(crate) fn proof_or_placeholder<'m>(
    model: &'m Model,
    state: &ViewState,
    area: Rect,
    buf: &mut Buffer,
) -> Option<(&'m Session, &'m Proof)> {
    let found = state.shown_proof(model);
    if found.is_none() {
        session::render(model, area, buf);
    }
    found
}

/// `line` cut to `width` columns, ending in `…` when anything was cut: no text on any panel
/// is cut silently.
pub(crate) fn fit_line(line: Line<'_>, width: u16) -> Line<'static> {
    use unicode_width::UnicodeWidthStr;
    let width = width as usize;
    let style = line.style;
    let total: usize = line.spans.iter().map(|s| s.content.width()).sum();
    let mut out: Vec<Span<'static>> = Vec::new();
    if total <= width {
        out.extend(
            line.spans
                .into_iter()
                .map(|s| Span::styled(s.content.into_owned(), s.style)),
        );
    } else {
        let mut room = width;
        for s in line.spans {
            let w = s.content.width();
            if w < room {
                room -= w;
                out.push(Span::styled(s.content.into_owned(), s.style));
                continue;
            }
            // This span holds the cut: it ends in the ellipsis.
            out.push(Span::styled(
                proofscope_engine::format::fit(&s.content, room.max(1)),
                s.style,
            ));
            if w == room {
                // Exactly full, yet more follows: the last character gives way to `…`.
                let last = out.pop().map(|s| (s.content.into_owned(), s.style));
                if let Some((t, st)) = last {
                    out.push(Span::styled(
                        proofscope_engine::format::fit(&format!("{t}…"), room),
                        st,
                    ));
                }
            }
            break;
        }
    }
    Line::from(out).style(style)
}

/// Every line of `lines` fitted to `width` ([`fit_line`]).
pub(crate) fn fit_lines(lines: Vec<Line<'_>>, width: u16) -> Vec<Line<'static>> {
    lines.into_iter().map(|l| fit_line(l, width)).collect()
}

pub(crate) fn warn() -> Style {
    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
}

/// Where each part of the screen lies: drawing and the mouse use the same places.
#[derive(Debug, Clone, Copy)]
pub struct Areas {
    pub head: Rect,
    pub list: Rect,
    pub tabs: Rect,
    pub panel: Rect,
    pub foot: Rect,
}

/// Below this the layout is compact: no proof list (`[` `]` still choose the proof, each
/// panel's title names it) under 80 columns, a one-line header under 24 rows.
pub const FULL_LAYOUT: (u16, u16) = (80, 24);

/// The screen's parts for a terminal of `area`; `None` when it is too small to draw.
pub fn areas(area: Rect) -> Option<Areas> {
    if area.width < 20 || area.height < 6 {
        return None;
    }
    let head_h = if area.height < FULL_LAYOUT.1 { 1 } else { 2 };
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    // Narrow terminals give the panel the room; the list keeps ids and durations.
    let list_w = match area.width {
        120.. => 30,
        w if w >= FULL_LAYOUT.0 => 20,
        _ => 0,
    };
    let [list, right] =
        Layout::horizontal([Constraint::Length(list_w), Constraint::Min(10)]).areas(body);
    let [tabs, panel] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(right);
    Some(Areas {
        head,
        list,
        tabs,
        panel,
        foot,
    })
}

/// The tab under column `x` of the tab bar (as [`render_tabs`] lays them out: a space each
/// side of a title, `│` between).
pub fn tab_at(tabs: Rect, x: u16) -> Option<Tab> {
    let mut left = tabs.x;
    for t in Tab::ALL {
        let w = t.title().chars().count() as u16 + 2;
        if (left..left + w).contains(&x) {
            return Some(t);
        }
        left += w + 1;
    }
    None
}

impl Widget for &Screen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Some(Areas {
            head,
            list,
            tabs,
            panel,
            foot,
        }) = areas(area)
        else {
            Paragraph::new(proofscope_engine::format::fit(
                "terminal too small: 20×6 at least",
                area.width as usize,
            ))
            .render(area, buf);
            return;
        };
        header::render(self.model, self.state, self.link, head, buf);
        proofs::render(self.model, self.state, list, buf);
        render_tabs(self.state.tab, tabs, buf);
        match self.state.tab {
            Tab::Timeline => timeline::render(self.model, self.state, panel, buf),
            Tab::Gaps => gaps::render(self.model, self.state, panel, buf),
            Tab::Memory => memory::render(self.model, self.state, panel, buf),
            Tab::Gpu => gpu::render(self.model, self.state, panel, buf),
            Tab::Stats => stats::render(self.model, self.state.compare.as_ref(), panel, buf),
        }
        render_footer(self.state, self.link, foot, buf);
        if self.state.help {
            help::render(self.state.help_scroll, area, buf);
        }
        if self.state.monochrome {
            monochrome(area, buf);
        }
    }
}

/// `NO_COLOR`: every colour taken out after drawing, bold and reverse kept — so each view
/// must tell what matters by glyph or modifier too (the active tab is reversed, flagged time
/// is ▓, the shown proof reversed).
fn monochrome(area: Rect, buf: &mut Buffer) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.set_fg(Color::Reset).set_bg(Color::Reset);
            }
        }
    }
}

/// One line of a chart: points joined, in braille, in its colour.
fn series<'a>(
    name: impl Into<Line<'a>>,
    color: Color,
    data: &'a [(f64, f64)],
) -> ratatui::widgets::Dataset<'a> {
    ratatui::widgets::Dataset::default()
        .name(name)
        .marker(ratatui::symbols::Marker::Braille)
        .graph_type(ratatui::widgets::GraphType::Line)
        .style(Style::default().fg(color))
        .data(data)
}

fn render_tabs(tab: Tab, area: Rect, buf: &mut Buffer) {
    let titles: Vec<Line> = Tab::ALL.iter().map(|t| Line::from(t.title())).collect();
    let sel = Tab::ALL.iter().position(|t| *t == tab).unwrap_or(0);
    Tabs::new(titles)
        .select(sel)
        .padding(" ", " ")
        .highlight_style(bold().fg(Color::Cyan).add_modifier(Modifier::REVERSED))
        .divider("│")
        .render(area, buf);
}

fn render_footer(state: &ViewState, link: &LinkStatus, area: Rect, buf: &mut Buffer) {
    let line = if let Some(m) = state.message.as_ref().or(state.notice.as_ref()) {
        Line::from(Span::styled(m.clone(), Style::default().fg(Color::Yellow)))
    } else if let Some(t) = &link.transport {
        Line::from(vec![
            Span::styled(transport::line(t), bold()),
            Span::styled("  ? help", dim()),
        ])
    } else {
        Line::from(Span::styled(
            crate::input::footer_fitting(crate::input::When::Live, area.width as usize),
            dim(),
        ))
    };
    Paragraph::new(fit_line(line, area.width)).render(area, buf);
}

#[cfg(test)]
mod fit_tests {
    use super::*;

    fn text(l: &Line) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_cut_line_ends_in_an_ellipsis_and_a_whole_one_is_untouched() {
        let l = Line::from(vec![
            Span::raw("libnvidia-ml.so.1 "),
            Span::raw("not found"),
        ]);
        assert_eq!(
            text(&fit_line(l.clone(), 40)),
            "libnvidia-ml.so.1 not found"
        );
        assert_eq!(text(&fit_line(l.clone(), 20)), "libnvidia-ml.so.1 n…");
        assert_eq!(text(&fit_line(l.clone(), 18)), "libnvidia-ml.so.1…");
        let cut = fit_line(l, 10);
        assert_eq!(text(&cut), "libnvidia…");
        assert_eq!(
            unicode_width::UnicodeWidthStr::width(text(&cut).as_str()),
            10
        );
    }
}
