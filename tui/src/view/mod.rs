//! Views: pure functions of `(&Model, &ViewState)` that draw into a ratatui `Buffer`.
//! `impl Widget for &Screen` composes small `render_*` functions; nothing here mutates state.

mod gaps;
mod gpu;
mod header;
mod help;
mod memory;
mod proofs;
pub mod session;
mod state;
mod stats;
pub use state::{Tab, ViewState};
pub use stats::Comparison;
pub mod timeline;

use crate::model::{Model, Proof, Session};
use crate::source::LinkStatus;
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

pub(crate) fn warn() -> Style {
    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
}

impl Widget for &Screen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < 20 || area.height < 6 {
            Paragraph::new("terminal too small").render(area, buf);
            return;
        }
        let [head, body, foot] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(area);
        header::render(self.model, self.state, self.link, head, buf);
        let list_w = if area.width >= 120 { 30 } else { 20 };
        let [left, right] =
            Layout::horizontal([Constraint::Length(list_w), Constraint::Min(10)]).areas(body);
        proofs::render(self.model, self.state, left, buf);
        let [tabs, panel] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(right);
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
            help::render(area, buf);
        }
    }
}

fn render_tabs(tab: Tab, area: Rect, buf: &mut Buffer) {
    let titles: Vec<Line> = Tab::ALL.iter().map(|t| Line::from(t.title())).collect();
    let sel = Tab::ALL.iter().position(|t| *t == tab).unwrap_or(0);
    Tabs::new(titles)
        .select(sel)
        .highlight_style(bold().fg(Color::Cyan).add_modifier(Modifier::REVERSED))
        .divider("│")
        .render(area, buf);
}

fn render_footer(state: &ViewState, link: &LinkStatus, area: Rect, buf: &mut Buffer) {
    let line = if let Some(m) = state.message.as_ref().or(state.notice.as_ref()) {
        Line::from(Span::styled(m.clone(), Style::default().fg(Color::Yellow)))
    } else if let Some(t) = &link.transport {
        Line::from(vec![
            Span::styled(t.clone(), bold()),
            Span::styled("  ? help", dim()),
        ])
    } else {
        Line::from(Span::styled(
            crate::input::footer(crate::input::When::Live),
            dim(),
        ))
    };
    Paragraph::new(line).render(area, buf);
}
