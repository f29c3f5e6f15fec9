//! What the user is looking at — the tab, the shown proof, zoom and pan, scroll, the help —
//! and how the view's keys change it. Everything the views need besides the model and the
//! link's status.

use super::order::{ProofOrder, listed};
use crate::input::{Action, FilterKey};
use crate::panel::Tab;
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::{Model, Proof, ProofKey, Session};

/// Most zoom: 1/4096 of a proof across the panel.
const MAX_ZOOM: f64 = 4096.0;
/// One press of ← or →: a tenth of the proof.
const PAN_STEP: f64 = 0.1;
/// Rows one PgUp / PgDn scrolls.
const SCROLL_STEP: usize = 5;

#[derive(Debug, Clone)]
pub struct ViewState {
    pub tab: Tab,
    pub selected: Option<ProofKey>,
    /// Select the latest proof as proofs arrive.
    pub follow: bool,
    /// 1.0 shows the whole proof; 2.0 half of it, …
    pub zoom: f64,
    /// Left edge of the visible window, as a fraction of the proof's length.
    pub pan: f64,
    pub help: bool,
    pub rule: GapRule,
    /// A transient message (errors, "recording to …").
    pub message: Option<String>,
    /// A standing note until the first proof completes (the demo prover starting).
    pub notice: Option<String>,
    /// Timeline: a row per thread under each phase instead of one summary row.
    pub expand: bool,
    /// Timeline: rows scrolled off the top.
    pub scroll: usize,
    /// `replay --compare B`: B's phase statistics, shown beside these in the Stats panel.
    pub compare: Option<super::stats::Comparison>,
    /// The proof list's order (`s`).
    pub order: ProofOrder,
    /// The proof list shows only proofs matching this (`/`); empty: all.
    pub filter: String,
    /// The filter is being typed: keys go to it.
    pub editing: bool,
    /// No colour (`NO_COLOR`): what colour told is told by glyph, bold or reverse alone.
    pub monochrome: bool,
    /// Help overlay: lines scrolled off its top.
    pub help_scroll: usize,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            tab: Tab::Timeline,
            selected: None,
            follow: true,
            zoom: 1.0,
            pan: 0.0,
            help: false,
            rule: GapRule::default(),
            message: None,
            notice: None,
            expand: false,
            scroll: 0,
            compare: None,
            order: ProofOrder::Time,
            filter: String::new(),
            editing: false,
            monochrome: false,
            help_scroll: 0,
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

    /// Shows the newest proof from now on.
    pub fn follow_latest(&mut self) {
        self.follow = true;
        self.selected = None;
    }

    /// Follow mode keeps the newest proof shown.
    pub fn follow_if_following(&mut self) {
        if self.follow {
            self.selected = None;
        }
    }

    /// Applies a key of the view (the link's keys go to the source).
    pub fn apply(&mut self, a: Action, model: &Model) {
        match a {
            Action::Help => {
                self.help = !self.help;
                self.help_scroll = 0;
            }
            Action::Escape => {
                self.help = false;
                self.message = None;
            }
            Action::NextTab => self.tab = self.tab.next(),
            Action::PrevTab => self.tab = self.tab.prev(),
            Action::Panel(t) => self.tab = t,
            Action::First => self.select_at(0, model),
            Action::Last => self.select_at(usize::MAX, model),
            Action::Sort => self.order = self.order.next(),
            Action::Filter => self.editing = true,
            Action::Up if self.help => self.help_scroll = self.help_scroll.saturating_sub(1),
            Action::Down if self.help => self.help_scroll += 1,
            Action::Up => self.select(-1, model),
            Action::Down => self.select(1, model),
            Action::Left => self.pan = (self.pan - PAN_STEP).max(0.0),
            Action::Right => self.pan = (self.pan + PAN_STEP).min(1.0),
            Action::ZoomIn => self.zoom = (self.zoom * 2.0).min(MAX_ZOOM),
            Action::ZoomOut => {
                self.zoom = (self.zoom / 2.0).max(1.0);
                if self.zoom == 1.0 {
                    self.pan = 0.0;
                }
            }
            Action::Expand => {
                self.expand = !self.expand;
                self.scroll = 0;
            }
            Action::ScrollUp if self.help => {
                self.help_scroll = self.help_scroll.saturating_sub(SCROLL_STEP)
            }
            Action::ScrollDown if self.help => self.help_scroll += SCROLL_STEP,
            Action::ScrollUp => self.scroll = self.scroll.saturating_sub(SCROLL_STEP),
            Action::ScrollDown => {
                let rows = super::timeline::rows_of(model, self);
                self.scroll = (self.scroll + SCROLL_STEP).min(rows.saturating_sub(1));
            }
            Action::Follow => self.follow_latest(),
            Action::Quit
            | Action::Pause
            | Action::Record
            | Action::Speed
            | Action::PrevProof
            | Action::NextProof => {}
        }
    }

    /// The proofs the list shows, in its order.
    pub fn listed(&self, model: &Model) -> Vec<ProofKey> {
        listed(model, self.order, &self.filter, &self.rule)
    }

    /// Moves the selection `delta` rows of the list; leaving the newest stops following.
    fn select(&mut self, delta: isize, model: &Model) {
        let keys = self.listed(model);
        let Some(last) = keys.len().checked_sub(1) else {
            return;
        };
        let cur = self
            .shown(model)
            .and_then(|k| keys.iter().position(|x| *x == k))
            .unwrap_or(last) as isize;
        self.select_at((cur + delta).clamp(0, last as isize) as usize, model);
    }

    /// Selects row `row` of the list (past the end: the last); the newest in time order
    /// follows new proofs again.
    pub fn select_at(&mut self, row: usize, model: &Model) {
        let keys = self.listed(model);
        let Some(last) = keys.len().checked_sub(1) else {
            return;
        };
        let row = row.min(last);
        self.selected = Some(keys[row]);
        self.follow = row == last && self.order == ProofOrder::Time && self.filter.is_empty();
        if self.follow {
            self.selected = None;
        }
    }

    /// A key while the filter is typed: a character, Backspace, Enter (keep), Esc (clear).
    pub fn edit_filter(&mut self, key: FilterKey) {
        match key {
            FilterKey::Char(c) => self.filter.push(c),
            FilterKey::Backspace => {
                self.filter.pop();
            }
            FilterKey::Enter => self.editing = false,
            FilterKey::Escape => {
                self.filter.clear();
                self.editing = false;
            }
        }
    }
}

impl ViewState {
    /// Where the shown proof is in the list's order, and the first entry drawn.
    fn list_window(&self, model: &Model, rows: usize) -> (Vec<ProofKey>, usize) {
        let keys = self.listed(model);
        let pos = super::proofs::shown_row(&keys, self.shown(model));
        let first = super::proofs::first_row(keys.len(), pos, rows);
        (keys, first)
    }

    /// A click or the wheel at a cell of a `screen`-sized terminal: a tab, a proof, scrolling.
    pub fn point(
        &mut self,
        p: crate::input::Pointer,
        screen: ratatui::layout::Rect,
        model: &Model,
    ) {
        use crate::input::Pointer;
        let Some(a) = super::areas(screen) else {
            return;
        };
        let inside = |r: ratatui::layout::Rect, x: u16, y: u16| {
            r.contains(ratatui::layout::Position { x, y })
        };
        match p {
            Pointer::Click { x, y } if inside(a.tabs, x, y) => {
                if let Some(t) = super::tab_at(a.tabs, x) {
                    self.tab = t;
                }
            }
            Pointer::Click { x, y } => {
                let entries = super::proofs::entries_area(a.list);
                if inside(entries, x, y) {
                    let (keys, first) = self.list_window(model, entries.height as usize);
                    let row = first + (y - entries.y) as usize;
                    if row < keys.len() {
                        self.select_at(row, model);
                    }
                }
            }
            Pointer::WheelUp { x, y } | Pointer::WheelDown { x, y } => {
                let up = matches!(p, Pointer::WheelUp { .. });
                let action = match (self.help, inside(a.list, x, y), up) {
                    (false, true, true) => Action::Up,
                    (false, true, false) => Action::Down,
                    (_, _, true) => Action::ScrollUp,
                    (_, _, false) => Action::ScrollDown,
                };
                self.apply(action, model);
            }
        }
    }
}
