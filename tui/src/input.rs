//! Keys → actions: one table ([`KEYS`]) from which the key handling, the help
//! overlay and the footer are all made, so they cannot drift.

use crate::panel::Tab;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use proofscope_engine::source::Control;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    NextTab,
    PrevTab,
    /// Show this panel.
    Panel(Tab),
    /// The first / the last proof (replay: the last frame too).
    First,
    Last,
    /// Proof list: the next order (time, duration, unaccounted share, flagged first).
    Sort,
    /// Proof list: type a filter (phase, thread or diagnosis text).
    Filter,
    Up,
    Down,
    Left,
    Right,
    ZoomIn,
    ZoomOut,
    Follow,
    Pause,
    Record,
    Speed,
    PrevProof,
    NextProof,
    Escape,
    /// Timeline: one row per thread under each phase, or one summary row.
    Expand,
    /// Timeline: scroll its rows.
    ScrollUp,
    ScrollDown,
}

impl Action {
    /// The source's control this key asks for, if the source answers it.
    pub fn control(self) -> Option<Control> {
        Some(match self {
            Action::Pause => Control::TogglePause,
            Action::Record => Control::ToggleRecord,
            Action::Speed => Control::NextSpeed,
            Action::PrevProof => Control::PrevProof,
            Action::NextProof => Control::NextProof,
            Action::Last => Control::Last,
            _ => return None,
        })
    }
}

/// What typing the filter does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKey {
    Char(char),
    Backspace,
    Enter,
    Escape,
}

/// When a binding does something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Attached to a live prover.
    Live,
    /// Replaying a recording.
    Replay,
}

/// A key as the table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Code(KeyCode),
    Ctrl(char),
}

const fn ch(c: char) -> Key {
    Key::Code(KeyCode::Char(c))
}

/// One binding: the keys that trigger it, its action, and how the help and the footer show
/// it. [`KEYS`] is the only keymap: [`map`], the help overlay and the footer are made from it.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub action: Action,
    pub codes: &'static [Key],
    /// The keys as the help shows them.
    pub keys: &'static str,
    pub what: &'static str,
    pub when: When,
    /// Its short form in the footer, when it has a place there.
    pub footer: Option<&'static str>,
}

/// What the mouse does (the help and docs/CLI.md say it from here).
pub const MOUSE: &str =
    "click a tab or a proof; the wheel moves through the proof list or scrolls the panel";

pub const KEYS: [Binding; 29] = [
    Binding {
        action: Action::Quit,
        codes: &[ch('q'), Key::Ctrl('c')],
        keys: "q  Ctrl-C",
        what: "quit (a demo stops its prover)",
        when: When::Always,
        footer: Some("q quit"),
    },
    Binding {
        action: Action::Help,
        codes: &[ch('?')],
        keys: "?",
        what: "this help",
        when: When::Always,
        footer: Some("? help"),
    },
    Binding {
        action: Action::NextTab,
        codes: &[Key::Code(KeyCode::Tab)],
        keys: "tab  S-tab",
        what: "next / previous panel: timeline, gaps, memory, GPU, stats",
        when: When::Always,
        footer: Some("tab panel"),
    },
    Binding {
        action: Action::PrevTab,
        codes: &[Key::Code(KeyCode::BackTab)],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Panel(Tab::Timeline),
        codes: &[ch('1')],
        keys: "1 … 5",
        what: "that panel",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Panel(Tab::Gaps),
        codes: &[ch('2')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Panel(Tab::Memory),
        codes: &[ch('3')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Panel(Tab::Gpu),
        codes: &[ch('4')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Panel(Tab::Stats),
        codes: &[ch('5')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Up,
        codes: &[Key::Code(KeyCode::Up), ch('k')],
        keys: "↑ ↓  k j",
        what: "select the previous / next proof",
        when: When::Always,
        footer: Some("↑↓ proof"),
    },
    Binding {
        action: Action::Down,
        codes: &[Key::Code(KeyCode::Down), ch('j')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Left,
        codes: &[Key::Code(KeyCode::Left), ch('h')],
        keys: "← →  h l",
        what: "pan the time axis",
        when: When::Always,
        footer: Some("←→ pan"),
    },
    Binding {
        action: Action::Right,
        codes: &[Key::Code(KeyCode::Right), ch('l')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::ZoomIn,
        codes: &[ch('+'), ch('=')],
        keys: "+  -",
        what: "zoom in / out on the time axis",
        when: When::Always,
        footer: Some("+/- zoom"),
    },
    Binding {
        action: Action::ZoomOut,
        codes: &[ch('-'), ch('_')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::First,
        codes: &[Key::Code(KeyCode::Home), ch('g')],
        keys: "Home End  g G",
        what: "the first / the last proof (replay: End reads to the end)",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Last,
        codes: &[Key::Code(KeyCode::End), ch('G')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Sort,
        codes: &[ch('s')],
        keys: "s",
        what: "sort the proofs: time, duration, unaccounted share, flagged first",
        when: When::Always,
        footer: Some("s sort"),
    },
    Binding {
        action: Action::Filter,
        codes: &[ch('/')],
        keys: "/",
        what: "filter the proofs by phase, thread or diagnosis (Enter keeps, Esc clears)",
        when: When::Always,
        footer: Some("/ find"),
    },
    Binding {
        action: Action::Follow,
        codes: &[ch('f')],
        keys: "f",
        what: "follow the latest proof",
        when: When::Always,
        footer: Some("f follow"),
    },
    Binding {
        action: Action::Pause,
        codes: &[ch(' ')],
        keys: "space",
        what: "pause / resume (live: hold events; replay: stop the clock)",
        when: When::Always,
        footer: Some("space pause"),
    },
    Binding {
        action: Action::Record,
        codes: &[ch('r')],
        keys: "r",
        what: "start / stop recording (live): a new dated file in --record-dir",
        when: When::Live,
        footer: Some("r rec"),
    },
    Binding {
        action: Action::Expand,
        codes: &[ch('e')],
        keys: "e",
        what: "timeline: a row per thread under each phase / one summary row",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::ScrollUp,
        codes: &[Key::Code(KeyCode::PageUp), ch('K')],
        keys: "PgUp PgDn",
        what: "timeline: scroll its rows (also J K)",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::ScrollDown,
        codes: &[Key::Code(KeyCode::PageDown), ch('J')],
        keys: "",
        what: "",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Escape,
        codes: &[Key::Code(KeyCode::Esc)],
        keys: "esc",
        what: "close help, clear message",
        when: When::Always,
        footer: None,
    },
    Binding {
        action: Action::Speed,
        codes: &[ch('>')],
        keys: ">",
        what: "replay speed: 1×, 2×, 10×, max",
        when: When::Replay,
        footer: None,
    },
    Binding {
        action: Action::PrevProof,
        codes: &[ch('[')],
        keys: "[",
        what: "jump to the previous proof",
        when: When::Replay,
        footer: None,
    },
    Binding {
        action: Action::NextProof,
        codes: &[ch(']')],
        keys: "]",
        what: "jump to the next proof",
        when: When::Replay,
        footer: None,
    },
];

/// Every binding, in the help's order.
pub fn bindings() -> impl Iterator<Item = &'static Binding> {
    KEYS.iter()
}

/// The footer's key list: every binding with a footer form that does something `when`.
pub fn footer(when: When) -> String {
    bindings()
        .filter(|b| b.when == When::Always || b.when == when)
        .filter_map(|b| b.footer)
        .collect::<Vec<_>>()
        .join("  ")
}

/// The first key bound to `action`, as a user types it: for hints on screen.
pub fn key_of(action: Action) -> String {
    let Some(b) = bindings().find(|b| b.action == action) else {
        return String::new();
    };
    match b.codes.first() {
        Some(Key::Code(KeyCode::Char(' '))) => "space".into(),
        Some(Key::Code(KeyCode::Char(c))) => c.to_string(),
        Some(Key::Ctrl(c)) => format!("Ctrl-{c}"),
        Some(Key::Code(KeyCode::Tab)) => "Tab".into(),
        Some(Key::Code(c)) => format!("{c:?}"),
        None => String::new(),
    }
}

/// What the mouse did, where (terminal cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pointer {
    Click { x: u16, y: u16 },
    WheelUp { x: u16, y: u16 },
    WheelDown { x: u16, y: u16 },
}

/// The mouse events the dashboard answers: a left click and the wheel.
pub fn mouse(m: crossterm::event::MouseEvent) -> Option<Pointer> {
    use crossterm::event::{MouseButton, MouseEventKind};
    let (x, y) = (m.column, m.row);
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => Some(Pointer::Click { x, y }),
        MouseEventKind::ScrollUp => Some(Pointer::WheelUp { x, y }),
        MouseEventKind::ScrollDown => Some(Pointer::WheelDown { x, y }),
        _ => None,
    }
}

/// A key while the filter is typed (`/`).
pub fn filter_key(key: KeyEvent) -> Option<FilterKey> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            Some(FilterKey::Char(c))
        }
        KeyCode::Backspace => Some(FilterKey::Backspace),
        KeyCode::Enter => Some(FilterKey::Enter),
        KeyCode::Esc => Some(FilterKey::Escape),
        _ => None,
    }
}

/// [`footer`] in at most `width` columns: the keys in table order while they fit, `? help`
/// always among them (it lists the rest).
pub fn footer_fitting(when: When, width: usize) -> String {
    let items: Vec<&str> = bindings()
        .filter(|b| b.when == When::Always || b.when == when)
        .filter_map(|b| b.footer)
        .collect();
    let mut out = String::new();
    for item in items {
        let need = out.chars().count() + 2 + item.chars().count();
        if !out.is_empty() && need > width {
            break;
        }
        if !out.is_empty() {
            out.push_str("  ");
        }
        out.push_str(item);
    }
    out
}

/// The action for a key press (releases are ignored).
pub fn map(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let pressed = match key.code {
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => Key::Ctrl(c),
        code => Key::Code(code),
    };
    bindings()
        .find(|b| b.codes.contains(&pressed))
        .map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn hints_name_the_key_the_map_knows() {
        assert_eq!(key_of(Action::Panel(Tab::Gaps)), "2");
        assert_eq!(map(key(KeyCode::Char('2'))), Some(Action::Panel(Tab::Gaps)));
        assert_eq!(key_of(Action::NextTab), "Tab");
    }

    #[test]
    fn vim_and_arrow_keys_agree() {
        assert_eq!(map(key(KeyCode::Char('j'))), map(key(KeyCode::Down)));
        assert_eq!(map(key(KeyCode::Char('h'))), Some(Action::Left));
        assert_eq!(
            map(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(map(key(KeyCode::Char('x'))), None);
    }

    #[test]
    fn every_binding_maps_to_its_action_and_no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for b in bindings() {
            for k in b.codes {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
                let ev = match k {
                    Key::Code(c) => KeyEvent::new(*c, KeyModifiers::NONE),
                    Key::Ctrl(c) => KeyEvent::new(KeyCode::Char(*c), KeyModifiers::CONTROL),
                };
                assert_eq!(map(ev), Some(b.action), "{k:?}");
            }
        }
        assert_eq!(
            footer(When::Live),
            "q quit  ? help  tab panel  ↑↓ proof  ←→ pan  +/- zoom  s sort  / find  f follow  space pause  r rec"
        );
        assert!(!footer(When::Replay).contains("rec"));
    }

    #[test]
    fn every_documented_key_maps_to_something() {
        for hint in bindings().filter(|h| !h.keys.is_empty()) {
            let first = hint.keys.split_whitespace().next().unwrap();
            let code = match first {
                "tab" => KeyCode::Tab,
                "space" => KeyCode::Char(' '),
                "esc" => KeyCode::Esc,
                "PgUp" => KeyCode::PageUp,
                "Home" => KeyCode::Home,
                "↑" => KeyCode::Up,
                "←" => KeyCode::Left,
                s => KeyCode::Char(s.chars().next().unwrap()),
            };
            assert!(map(key(code)).is_some(), "{first}");
        }
    }
}
