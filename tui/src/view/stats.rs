//! Per-phase statistics across proofs; with `replay A --compare B`, B's beside A's, with bars.

use super::{bold, dim};
use proofscope_engine::analysis::{PhaseStats, phase_stats};
use proofscope_engine::format::dur;
use proofscope_engine::model::Model;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

/// Another session's phase statistics, shown beside this one's (`replay --compare`).
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// What B is (its file).
    pub label: String,
    pub stats: Vec<PhaseStats>,
    /// `proofscope diff`'s verdict on each phase's median (A → B): the same words on screen as
    /// in the diff, so that the two never disagree.
    pub verdicts: Vec<(String, Verdict)>,
}

impl Comparison {
    /// B (`label`, its model and report) beside A (its report), with `diff`'s verdicts.
    pub fn new(
        label: String,
        b: &Model,
        a_report: &proofscope_engine::report::Report,
        b_report: &proofscope_engine::report::Report,
    ) -> Comparison {
        let d = proofscope_engine::diff::diff(a_report, b_report);
        Comparison {
            label,
            stats: phase_stats(b),
            verdicts: d
                .phases
                .iter()
                .map(|(n, c)| (n.clone(), Verdict::of(c)))
                .collect(),
        }
    }
}

/// What `diff` says of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Changed,
    WithinNoise,
    /// Too few proofs a side for an interval.
    NoInterval,
}

impl Verdict {
    pub fn of(c: &proofscope_engine::diff::Change) -> Verdict {
        match proofscope_engine::diff::verdict(c) {
            "changed" => Verdict::Changed,
            "within noise" => Verdict::WithinNoise,
            _ => Verdict::NoInterval,
        }
    }

    fn glyph(self) -> &'static str {
        match self {
            Verdict::Changed => "!",
            Verdict::WithinNoise => "≈",
            Verdict::NoInterval => "?",
        }
    }
}

pub fn render(model: &Model, compare: Option<&Comparison>, area: Rect, buf: &mut Buffer) {
    let stats = phase_stats(model);
    if stats.is_empty() {
        Paragraph::new("no completed proof yet")
            .style(dim())
            .render(area, buf);
        return;
    }
    match compare {
        None => table(&stats, completed(model), area, buf),
        Some(c) => compared(&stats, c, area, buf),
    }
}

/// The table's columns, widest first to go when the panel is narrow (a cut figure would
/// read as another figure).
const COLUMNS: [(&str, u16); 5] = [
    ("phase", 14),
    ("count", 6),
    ("p50", 10),
    ("p95", 10),
    ("max", 10),
];

/// The complete proofs the statistics are over.
fn completed(model: &Model) -> usize {
    model
        .sessions()
        .iter()
        .map(|s| s.proofs().filter(|p| p.done()).count())
        .sum()
}

fn table(stats: &[PhaseStats], proofs: usize, area: Rect, buf: &mut Buffer) {
    let [title, area] =
        ratatui::layout::Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    Paragraph::new(super::fit_line(
        Line::from(Span::styled(
            format!("phase durations over all {proofs} complete proofs"),
            dim(),
        )),
        title.width,
    ))
    .render(title, buf);
    let mut shown = COLUMNS.len();
    while shown > 2 && COLUMNS[..shown].iter().map(|c| c.1).sum::<u16>() > area.width {
        shown -= 1;
    }
    let name_w = COLUMNS[0].1.min(area.width).saturating_sub(1) as usize;
    let header = Row::new(COLUMNS[..shown].iter().map(|c| Cell::from(c.0))).style(bold());
    let rows = stats.iter().map(|s| {
        let cells = [
            proofscope_engine::format::fit(&s.name, name_w),
            s.count.to_string(),
            dur(s.p50_ns),
            dur(s.p95_ns),
            dur(s.max_ns),
        ];
        Row::new(cells.into_iter().take(shown).map(Cell::from))
    });
    Table::new(
        rows,
        COLUMNS[..shown].iter().map(|c| Constraint::Length(c.1)),
    )
    .header(header)
    .render(area, buf);
}

const A_STYLE: Style = Style::new().fg(Color::Cyan);
const B_STYLE: Style = Style::new().fg(Color::Magenta);

/// Two rows a phase (A, then B): count, p50, p95, and a bar of the p50 on one scale.
fn compared(a: &[PhaseStats], c: &Comparison, area: Rect, buf: &mut Buffer) {
    // A's phases in order, then those only B has.
    let mut names: Vec<&str> = a.iter().map(|s| s.name.as_str()).collect();
    for s in &c.stats {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let scale = a
        .iter()
        .chain(&c.stats)
        .map(|s| s.p50_ns)
        .max()
        .unwrap_or(1)
        .max(1);
    let fixed = 14 + 6 + 10 + 10 + 9 + 5;
    let bars = Bars {
        width: area.width.saturating_sub(fixed).max(4) as u64,
        scale,
    };
    let rows = names.iter().map(|n| compared_row(n, a, c, &bars));
    let [legend, area] =
        ratatui::layout::Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    Paragraph::new(super::fit_line(
        Line::from(vec![
            Span::styled("█ A: this recording   ", A_STYLE),
            Span::styled(format!("▒ B: {}", c.label), B_STYLE),
            Span::styled(
                "   ! changed  ≈ within noise  ? too few proofs (as diff)",
                dim(),
            ),
        ]),
        legend.width,
    ))
    .render(legend, buf);
    let header = Row::new(["phase", "count", "p50", "p95", "B vs A", "p50 bars"].map(Cell::from))
        .style(bold());
    Table::new(
        rows,
        [
            Constraint::Length(14),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(9),
            Constraint::Min(4),
        ],
    )
    .header(header)
    .render(area, buf);
}

/// The p50 bars' width and the p50 they are scaled to.
struct Bars {
    width: u64,
    scale: u64,
}

impl Bars {
    fn bar(&self, s: &Option<PhaseStats>, style: Style, glyph: &str) -> Line<'static> {
        let n = s
            .as_ref()
            .map_or(0, |s| (s.p50_ns * self.width).div_ceil(self.scale)) as usize;
        Line::from(Span::styled(glyph.repeat(n), style))
    }
}

/// Phase `n`'s two rows: A's figures over B's, the change of the p50 with diff's verdict.
fn compared_row(n: &str, a: &[PhaseStats], c: &Comparison, bars: &Bars) -> Row<'static> {
    let find = |v: &'_ [PhaseStats]| v.iter().find(|s| s.name == n).cloned();
    let (x, y) = (find(a), find(&c.stats));
    let two = |f: &dyn Fn(&PhaseStats) -> String| {
        Text::from(vec![
            Line::styled(x.as_ref().map_or("-".into(), f), A_STYLE),
            Line::styled(y.as_ref().map_or("-".into(), f), B_STYLE),
        ])
    };
    let verdict = c
        .verdicts
        .iter()
        .find(|(p, _)| p == n)
        .map_or("", |(_, v)| v.glyph());
    let change = match (&x, &y) {
        (Some(x), Some(y)) if x.p50_ns > 0 => {
            let pct = (y.p50_ns as f64 / x.p50_ns as f64 - 1.0) * 100.0;
            let sign = if pct < 0.0 { "−" } else { "+" };
            format!("{sign}{:.1}% {verdict}", pct.abs())
        }
        _ => String::new(),
    };
    Row::new(vec![
        Cell::from(n.to_string()),
        Cell::from(two(&|s| s.count.to_string())),
        Cell::from(two(&|s| dur(s.p50_ns))),
        Cell::from(two(&|s| dur(s.p95_ns))),
        Cell::from(change),
        Cell::from(Text::from(vec![
            bars.bar(&x, A_STYLE, "█"),
            bars.bar(&y, B_STYLE, "▒"),
        ])),
    ])
    .height(2)
}
