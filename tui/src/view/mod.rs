//! Views: pure functions of `(&Model, &ViewState)` that draw into a ratatui `Buffer`.
//! `impl Widget for &Screen` composes small `render_*` functions; nothing here mutates state.

mod gaps;
mod gpu;
mod header;
mod help;
mod memory;
mod proofs;
mod stats;
pub use stats::Comparison;
pub mod timeline;

use crate::analysis::GapRule;
use crate::model::{Model, Proof, ProofKey, Session};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs, Widget};

/// The right-hand panels, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tab {
    #[default]
    Timeline,
    Gaps,
    Memory,
    Gpu,
    Stats,
}

impl Tab {
    pub const ALL: [Tab; 5] = [Tab::Timeline, Tab::Gaps, Tab::Memory, Tab::Gpu, Tab::Stats];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Timeline => "Timeline",
            Tab::Gaps => "Gaps",
            Tab::Memory => "Memory",
            Tab::Gpu => "GPU",
            Tab::Stats => "Stats",
        }
    }

    pub fn next(self) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Tab::ALL[(i + 1) % Tab::ALL.len()]
    }
}

/// What the user is looking at. Everything the views need besides the model.
#[derive(Debug, Clone)]
pub struct ViewState {
    pub tab: Tab,
    pub selected: Option<ProofKey>,
    /// Select the latest proof as proofs arrive.
    pub follow: bool,
    pub paused: bool,
    /// While paused (live): events held for the resume, and events dropped because the hold
    /// was full.
    pub held: (u64, u64),
    /// 1.0 shows the whole proof; 2.0 half of it, …
    pub zoom: f64,
    /// Left edge of the visible window, as a fraction of the proof's length.
    pub pan: f64,
    pub help: bool,
    pub rule: GapRule,
    /// Replay transport line, when replaying.
    pub transport: Option<String>,
    /// A transient message (errors, "recording to …").
    pub message: Option<String>,
    /// Timeline: a row per thread under each phase instead of one summary row.
    pub expand: bool,
    /// Timeline: rows scrolled off the top.
    pub scroll: usize,
    /// `replay --compare B`: B's phase statistics, shown beside these in the Stats panel.
    pub compare: Option<stats::Comparison>,
    /// The link as the source reports it (live, replay position and speed, …).
    pub link: crate::source::LinkState,
    /// The file the session is being recorded to.
    pub recording: Option<String>,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            tab: Tab::Timeline,
            selected: None,
            follow: true,
            paused: false,
            held: (0, 0),
            zoom: 1.0,
            pan: 0.0,
            help: false,
            rule: GapRule::default(),
            transport: None,
            message: None,
            expand: false,
            scroll: 0,
            compare: None,
            link: crate::source::LinkState::Idle,
            recording: None,
        }
    }
}

impl ViewState {
    /// The proof shown: the selection, else the latest.
    pub fn shown(&self, model: &Model) -> Option<ProofKey> {
        self.selected
            .filter(|k| model.proof(*k).is_some())
            .or_else(|| model.latest_proof())
    }

    /// The shown proof and its session.
    pub fn shown_proof<'m>(&self, model: &'m Model) -> Option<(&'m Session, &'m Proof)> {
        let k = self.shown(model)?;
        Some((model.session(k.session)?, model.proof(k)?))
    }

    /// The visible time window of a proof spanning [a, b].
    pub fn window(&self, a: u64, b: u64) -> (u64, u64) {
        let len = (b.saturating_sub(a)).max(1) as f64;
        let w = len / self.zoom.max(1.0);
        let start = a as f64 + (self.pan.clamp(0.0, 1.0) * (len - w).max(0.0));
        (start as u64, (start + w) as u64)
    }
}

/// The whole screen.
#[derive(Debug)]
pub struct Screen<'a> {
    pub model: &'a Model,
    pub state: &'a ViewState,
}

pub(crate) fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub(crate) fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Draws the placeholder of a panel that needs a proof; `None` when there is none yet.
pub(crate) fn proof_or_placeholder<'m>(
    model: &'m Model,
    state: &ViewState,
    area: Rect,
    buf: &mut Buffer,
) -> Option<(&'m Session, &'m Proof)> {
    let found = state.shown_proof(model);
    if found.is_none() {
        let msg = model
            .current()
            .and_then(|s| s.status.clone())
            .unwrap_or_else(|| "waiting for the first proof…".into());
        Paragraph::new(msg).style(dim()).render(area, buf);
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
        header::render(self.model, self.state, head, buf);
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
        render_footer(self.state, foot, buf);
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

fn render_footer(state: &ViewState, area: Rect, buf: &mut Buffer) {
    let line = if let Some(m) = &state.message {
        Line::from(Span::styled(m.clone(), Style::default().fg(Color::Yellow)))
    } else if let Some(t) = &state.transport {
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
