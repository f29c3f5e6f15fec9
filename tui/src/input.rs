//! Keys → actions: one table ([`KEYS`]) from which the key handling, the help
//! overlay and the footer are all made, so they cannot drift.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    NextTab,
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

pub const KEYS: [Binding; 19] = [
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
        keys: "tab",
        what: "next panel: timeline, gaps, memory, GPU, stats",
        when: When::Always,
        footer: Some("tab panel"),
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
        what: "start / stop recording (live)",
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
        codes: &[ch('s')],
        keys: "s",
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
            "q quit  ? help  tab panel  ↑↓ proof  ←→ pan  +/- zoom  f follow  space pause  r rec"
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
                "↑" => KeyCode::Up,
                "←" => KeyCode::Left,
                s => KeyCode::Char(s.chars().next().unwrap()),
            };
            assert!(map(key(code)).is_some(), "{first}");
        }
    }
}
