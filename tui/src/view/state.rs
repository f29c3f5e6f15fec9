//! What the user is looking at — the tab, the shown proof, zoom and pan, scroll, the help —
//! and how the view's keys change it. Everything the views need besides the model and the
//! link's status.

use crate::analysis::GapRule;
use crate::input::Action;
use crate::model::{Model, Proof, ProofKey, Session};

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
            Action::Help => self.help = !self.help,
            Action::Escape => {
                self.help = false;
                self.message = None;
            }
            Action::NextTab => self.tab = self.tab.next(),
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

    /// Moves the selection `delta` proofs; leaving the newest stops following.
    fn select(&mut self, delta: isize, model: &Model) {
        let keys = model.proof_keys();
        if keys.is_empty() {
            return;
        }
        let cur = self
            .shown(model)
            .and_then(|k| keys.iter().position(|x| *x == k))
            .unwrap_or(keys.len() - 1) as isize;
        let next = (cur + delta).clamp(0, keys.len() as isize - 1) as usize;
        self.selected = Some(keys[next]);
        if next != keys.len() - 1 {
            self.follow = false;
        }
    }
}
