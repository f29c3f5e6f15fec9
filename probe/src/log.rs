//! The probe's own log: lines on stderr with a prefix. Never on the hot path, never fatal (a
//! closed or full stderr drops the line and counts it), and rate-limited, so a flood of bad
//! clients cannot flood the prover's log: at most [`BURST`] lines per [`WINDOW`], then one
//! line saying how many were suppressed.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lines let through per window.
pub const BURST: u32 = 20;
/// The rate-limiting window.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Longest message written; longer ones are cut (a client name can be megabytes).
pub const MAX_LINE: usize = 300;

struct Window {
    start: Option<Instant>,
    written: u32,
    suppressed: u64,
}

static WINDOW_STATE: Mutex<Window> = Mutex::new(Window {
    start: None,
    written: 0,
    suppressed: 0,
});
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);

/// Lines suppressed by the rate limit, and lines that could not be written, so far.
pub fn lost_lines() -> (u64, u64) {
    (
        SUPPRESSED.load(Ordering::Relaxed),
        FAILED.load(Ordering::Relaxed),
    )
}

/// `text` made safe to log: control characters escaped, cut at [`MAX_LINE`] characters.
pub fn clean(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == MAX_LINE {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Logs one line (cleaned), unless the rate limit says otherwise.
pub(crate) fn log(msg: &str) {
    let now = Instant::now();
    let mut notes = Vec::new();
    {
        let mut w = WINDOW_STATE.lock().unwrap_or_else(|p| p.into_inner());
        if w.start.is_none_or(|s| now.duration_since(s) >= WINDOW) {
            if w.suppressed > 0 {
                notes.push(format!(
                    "{} line(s) suppressed in the last {} s",
                    w.suppressed,
                    WINDOW.as_secs()
                ));
            }
            *w = Window {
                start: Some(now),
                written: 0,
                suppressed: 0,
            };
        }
        if w.written >= BURST {
            w.suppressed += 1;
            SUPPRESSED.fetch_add(1, Ordering::Relaxed);
        } else {
            w.written += 1;
            notes.push(clean(msg));
        }
    }
    let mut err = std::io::stderr().lock();
    for line in notes {
        if writeln!(err, "[proofscope probe] {line}").is_err() {
            FAILED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_lines_cut() {
        assert_eq!(clean("a\nb\x1b[31m"), "a\\nb\\u{1b}[31m");
        let long = "x".repeat(10 * MAX_LINE);
        let c = clean(&long);
        assert_eq!(c.chars().count(), MAX_LINE + 1);
        assert!(c.ends_with('…'));
    }

    #[test]
    fn a_flood_is_cut_to_the_burst() {
        let (before, _) = lost_lines();
        for i in 0..(BURST as usize + 50) {
            log(&format!("flood test line {i}"));
        }
        let (after, _) = lost_lines();
        // Other tests may log too: at least the excess over one burst was suppressed.
        assert!(after - before >= 50, "{before} → {after}");
    }
}
