//! Keys → actions: a pure mapping. The help overlay is generated from `KEYS`, so the two
//! cannot drift.

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

/// One line of the help overlay.
#[derive(Debug, Clone, Copy)]
pub struct KeyHint {
    pub keys: &'static str,
    pub what: &'static str,
    /// Only meaningful when replaying.
    pub replay: bool,
}

pub const KEYS: [KeyHint; 15] = [
    KeyHint {
        keys: "q  Ctrl-C",
        what: "quit (a demo stops its prover)",
        replay: false,
    },
    KeyHint {
        keys: "?",
        what: "this help",
        replay: false,
    },
    KeyHint {
        keys: "tab",
        what: "next panel: timeline, gaps, memory, GPU, stats",
        replay: false,
    },
    KeyHint {
        keys: "↑ ↓  k j",
        what: "select the previous / next proof",
        replay: false,
    },
    KeyHint {
        keys: "← →  h l",
        what: "pan the time axis",
        replay: false,
    },
    KeyHint {
        keys: "+  -",
        what: "zoom in / out on the time axis",
        replay: false,
    },
    KeyHint {
        keys: "f",
        what: "follow the latest proof",
        replay: false,
    },
    KeyHint {
        keys: "space",
        what: "pause / resume (live: hold events; replay: stop the clock)",
        replay: false,
    },
    KeyHint {
        keys: "r",
        what: "start / stop recording (live)",
        replay: false,
    },
    KeyHint {
        keys: "e",
        what: "timeline: a row per thread under each phase / one summary row",
        replay: false,
    },
    KeyHint {
        keys: "PgUp PgDn",
        what: "timeline: scroll its rows (also J K)",
        replay: false,
    },
    KeyHint {
        keys: "esc",
        what: "close help, clear message",
        replay: false,
    },
    KeyHint {
        keys: "s",
        what: "replay speed: 1×, 2×, 10×, max",
        replay: true,
    },
    KeyHint {
        keys: "[",
        what: "jump to the previous proof",
        replay: true,
    },
    KeyHint {
        keys: "]",
        what: "jump to the next proof",
        replay: true,
    },
];

/// The action for a key press (releases and repeats of non-navigation keys are ignored).
pub fn map(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Tab => Action::NextTab,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::Char('+') | KeyCode::Char('=') => Action::ZoomIn,
        KeyCode::Char('-') | KeyCode::Char('_') => Action::ZoomOut,
        KeyCode::Char('f') => Action::Follow,
        KeyCode::Char(' ') => Action::Pause,
        KeyCode::Char('r') => Action::Record,
        KeyCode::Char('s') => Action::Speed,
        KeyCode::Char('[') => Action::PrevProof,
        KeyCode::Char(']') => Action::NextProof,
        KeyCode::Esc => Action::Escape,
        KeyCode::Char('e') => Action::Expand,
        KeyCode::PageUp | KeyCode::Char('K') => Action::ScrollUp,
        KeyCode::PageDown | KeyCode::Char('J') => Action::ScrollDown,
        _ => return None,
    })
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
    fn every_documented_key_maps_to_something() {
        for hint in KEYS.iter().filter(|h| !h.keys.is_empty()) {
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
