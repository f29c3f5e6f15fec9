//! What a source warns of, bounded: each shape of message (its numbers set aside) is kept word
//! for word the first [`KEEP`] times, then counted on one line, "… and N more like this". A
//! recording of a valid header and 16 MiB of zeros warned once per four-byte "frame": 4.19 M
//! lines, a 437 MB report and 3.35 GB of memory, past any `--max-mib`.

use std::collections::HashMap;

/// Messages of one shape kept word for word.
pub const KEEP: u64 = 5;
/// Shapes told apart; past them, every new shape is counted on one line.
const MAX_SHAPES: usize = 1024;

#[derive(Debug, Clone)]
enum Line {
    Said(String),
    /// The messages of one shape past the first [`KEEP`]: the first of them, and how many.
    More {
        like: String,
        count: u64,
    },
}

/// The warnings, in the order first said.
#[derive(Debug, Clone, Default)]
pub struct Warnings {
    lines: Vec<Line>,
    /// Per shape: how many were said, and the line that counts the rest.
    shapes: HashMap<String, (u64, Option<usize>)>,
    /// The line that counts shapes past [`MAX_SHAPES`].
    other: Option<usize>,
}

/// The message with each run of digits as `#`: "recording byte 748: …" and "recording byte
/// 752: …" are one shape.
pub(crate) fn shape(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    let mut digits = false;
    for c in w.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
        } else {
            out.push(c);
            digits = false;
        }
    }
    out
}

impl Warnings {
    pub fn push(&mut self, w: impl Into<String>) {
        let w = w.into();
        let key = shape(&w);
        if !self.shapes.contains_key(&key) && self.shapes.len() >= MAX_SHAPES {
            self.other = Some(self.count(self.other, w));
            return;
        }
        let (said, at) = {
            let e = self.shapes.entry(key.clone()).or_insert((0, None));
            e.0 += 1;
            (e.0, e.1)
        };
        if said <= KEEP {
            self.lines.push(Line::Said(w));
            return;
        }
        let i = self.count(at, w);
        if let Some(e) = self.shapes.get_mut(&key) {
            e.1 = Some(i);
        }
    }

    /// Counts `w` on line `at`, or on a new line when `None`; the line.
    fn count(&mut self, at: Option<usize>, w: String) -> usize {
        if let Some(i) = at
            && let Some(Line::More { count, .. }) = self.lines.get_mut(i)
        {
            *count += 1;
            return i;
        }
        self.lines.push(Line::More { like: w, count: 1 });
        self.lines.len() - 1
    }

    pub fn extend(&mut self, ws: impl IntoIterator<Item = String>) {
        for w in ws {
            self.push(w);
        }
    }

    /// The lines as a report prints them.
    pub fn to_vec(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| match l {
                Line::Said(w) => w.clone(),
                Line::More { like, count } => format!(
                    "… and {count} more warning{} like this: {like}",
                    if *count == 1 { "" } else { "s" }
                ),
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_shapes_are_counted_after_the_first_few() {
        let mut w = Warnings::default();
        for i in 0..1_000_000u64 {
            w.push(format!("recording byte {}: needed 1 more byte", 12 + 4 * i));
        }
        w.push("another thing");
        let lines = w.to_vec();
        assert_eq!(lines.len(), KEEP as usize + 2, "{lines:?}");
        assert_eq!(lines[0], "recording byte 12: needed 1 more byte");
        assert_eq!(
            lines[KEEP as usize],
            "… and 999995 more warnings like this: recording byte 32: needed 1 more byte"
        );
        assert_eq!(lines[KEEP as usize + 1], "another thing");
    }

    #[test]
    fn shapes_past_the_bound_share_one_line() {
        let mut w = Warnings::default();
        for i in 0..(MAX_SHAPES + 100) {
            w.push(format!("shape {} {}", "x".repeat(i % 7), "y".repeat(i)));
        }
        let lines = w.to_vec();
        assert_eq!(lines.len(), MAX_SHAPES + 1, "bounded");
        assert!(
            lines[MAX_SHAPES].starts_with("… and 100 more warnings like this"),
            "{}",
            lines[MAX_SHAPES]
        );
    }
}
