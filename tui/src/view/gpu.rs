//! GPU panel: utilisation, memory, power and clocks of each device on the proof's time axis.

use super::{ViewState, dim};
use probe_protocol::GpuSample;
use proofscope_engine::analysis::{Interval, nvml};
use proofscope_engine::format::bytes;
use proofscope_engine::model::{Model, Session, TimeSeries};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span as TSpan};
use ratatui::widgets::{Axis, Chart, Paragraph, Widget};

pub fn render(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let Some(s) = model.current() else { return };
    if s.gpu_samples().is_empty() {
        render_no_telemetry(s, area, buf);
        return;
    }
    let shown = Shown::of(model, state, s);
    let devices: Vec<_> = s.gpu_samples().iter().collect();
    let parts = Layout::vertical(
        devices
            .iter()
            .map(|_| Constraint::Ratio(1, devices.len() as u32)),
    )
    .split(area);
    for ((dev, series), part) in devices.into_iter().zip(parts.iter()) {
        render_device(model, state, &shown, *dev, series, *part, buf);
    }
}

/// Why there is no GPU panel.
fn render_no_telemetry(s: &Session, area: Rect, buf: &mut Buffer) {
    let why = s
        .hello()
        .and_then(|h| h.gpu_unavailable_reason.as_deref())
        .map(|r| proofscope_engine::format::gpu_reason(r).into_owned())
        .unwrap_or_else(|| "no GPU samples".into());
    let hint = if s.from_log() {
        " (a recording beside it has it: replay REC --log LOG)"
    } else {
        ""
    };
    Paragraph::new(proofscope_engine::format::fit(
        &format!("no GPU telemetry: {why}{hint}"),
        area.width as usize,
    ))
    .style(dim())
    .render(area, buf);
}

/// What every device's part shows: the shown proof's window, or the session's last 30 s.
struct Shown {
    /// The shown proof's span, and the window of it on screen.
    proof_range: Option<(u64, u64)>,
    range: Option<(u64, u64)>,
    /// What each line covers, in words.
    covers: String,
    /// Each GPU's busy share of the shown proof (GPU spans, else NVML): the idle-GPU finding.
    uses: Vec<proofscope_engine::analysis::GpuUse>,
}

impl Shown {
    fn of(model: &Model, state: &ViewState, s: &Session) -> Shown {
        let proof = state.shown(model).and_then(|k| model.proof(k));
        let proof_range = proof.and_then(|p| p.range(s.now()));
        let covers = match proof {
            Some(p) if proof_range.is_some() => format!("in proof {}", p.id()),
            _ => "the last 30 s".to_owned(),
        };
        let uses = proof
            .map(|p| proofscope_engine::analysis::gpu_use(s, p, state.rule.gpu_idle_fraction))
            .unwrap_or_default();
        Shown {
            proof_range,
            range: proof_range.map(|(a, b)| state.window(a, b)),
            covers,
            uses,
        }
    }
}

/// One device's part: its summary line, its phases' utilisation, the legend and the chart.
fn render_device(
    model: &Model,
    state: &ViewState,
    shown: &Shown,
    dev: u32,
    series: &TimeSeries<GpuSample>,
    part: Rect,
    buf: &mut Buffer,
) {
    let Some(s) = model.current() else { return };
    let (from, to) = shown.range.unwrap_or_else(|| {
        let last = series.last().map_or(0, |x| x.ts);
        (last.saturating_sub(30_000_000_000), last)
    });
    let pts = series.range(from, to.saturating_add(1));
    let window = Interval::new(from, to);
    let phase_line = shown.proof_range.is_some() && part.height >= 6;
    let legend_line = part.height >= 5;
    let [info, phases, legend, chart] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(phase_line)),
        Constraint::Length(u16::from(legend_line)),
        Constraint::Min(2),
    ])
    .areas(part);
    // Over the window shown (the selected proof), each reading over the time it averages.
    let readings = nvml::readings(s, dev, window);
    let text = info_line(s, shown, dev, pts, &readings, window);
    Paragraph::new(proofscope_engine::format::fit(&text, info.width as usize)).render(info, buf);
    if phase_line {
        let text = phase_utils(model, state, dev);
        Paragraph::new(proofscope_engine::format::fit(&text, phases.width as usize))
            .style(dim())
            .render(phases, buf);
    }
    if legend_line {
        Paragraph::new(super::fit_line(legend_of(), legend.width)).render(legend, buf);
    }
    // Offsets from the proof's start, as on the timeline.
    let origin = shown.proof_range.map(|(a, _)| a);
    render_chart(pts, &readings, (from, to), origin, chart, buf);
}

/// The device's summary over the window: busy share, NVML utilisation, memory and power.
fn info_line(
    s: &Session,
    shown: &Shown,
    dev: u32,
    pts: &[GpuSample],
    readings: &[(Interval, u8)],
    window: Interval,
) -> String {
    let covers = &shown.covers;
    if pts.is_empty() {
        return format!("gpu{dev} {covers}: no samples");
    }
    let utils: Vec<u8> = readings.iter().map(|r| r.1).collect();
    let powers: Vec<u32> = pts.iter().filter_map(|g| g.power_mw).collect();
    let total = pts.iter().find_map(|g| g.mem_total_bytes);
    let util = if utils.is_empty() {
        "util ?".to_owned()
    } else {
        format!(
            "NVML util {:.0}% (peak {}%)",
            nvml::mean_util(s, dev, window).unwrap_or(0.0),
            utils.iter().max().copied().unwrap_or(0)
        )
    };
    let power = if powers.is_empty() {
        "? W".to_owned()
    } else {
        let w: Vec<f64> = powers.iter().map(|&p| f64::from(p) / 1000.0).collect();
        format!(
            "{:.0} W avg, {:.0} peak",
            w.iter().sum::<f64>() / w.len().max(1) as f64,
            w.iter().copied().fold(0.0, f64::max)
        )
    };
    let busy = shown
        .uses
        .iter()
        .find(|u| u.device == dev)
        .map_or(String::new(), |u| {
            let by = match u.source {
                proofscope_engine::analysis::BusySource::GpuSpans => "GPU spans",
                proofscope_engine::analysis::BusySource::Nvml => "from NVML",
            };
            format!(
                "busy {:.0}% ({by}){}  ",
                u.device_busy_share * 100.0,
                if u.finding.is_some() { " (!)" } else { "" }
            )
        });
    format!(
        "gpu{dev} {covers}: {busy}{util}  mem peak {} / {}  {power}  ({} samples)",
        pts.iter()
            .filter_map(|g| g.mem_used_bytes)
            .max()
            .map_or("?".into(), bytes),
        total.map_or("?".into(), bytes),
        pts.len()
    )
}

/// Utilisation, memory and power over `(from, to)`, each reading at the middle of the time it
/// averages.
fn render_chart(
    pts: &[GpuSample],
    readings: &[(Interval, u8)],
    (from, to): (u64, u64),
    origin: Option<u64>,
    chart: Rect,
    buf: &mut Buffer,
) {
    let t = |ts: u64| ts.saturating_sub(from) as f64 / 1e9;
    let util: Vec<(f64, f64)> = readings
        .iter()
        .map(|(w, u)| (t(w.start + w.len() / 2), f64::from(*u)))
        .collect();
    let mem: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|g| {
            Some((
                t(g.ts),
                g.mem_used_bytes? as f64 / g.mem_total_bytes?.max(1) as f64 * 100.0,
            ))
        })
        .collect();
    let power: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|g| Some((t(g.ts), g.power_mw? as f64 / 10_000.0)))
        .collect();
    let span = ((to - from) as f64 / 1e9).max(1e-9);
    Chart::new(vec![
        super::series("util %", Color::Green, &util),
        super::series("mem %", Color::Cyan, &mem),
        super::series("W/10", Color::Yellow, &power),
    ])
    .x_axis(Axis::default().bounds([0.0, span]).labels(match origin {
        Some(a) => vec![
            Line::from(proofscope_engine::format::offset(from.saturating_sub(a))),
            Line::from(proofscope_engine::format::offset(to.saturating_sub(a))),
        ],
        None => vec![Line::from("0"), Line::from(format!("{span:.2}s"))],
    }))
    // The legend is a line above the plot: inside, it would sit over the proof's end.
    .legend_position(None)
    .y_axis(
        Axis::default()
            .bounds([0.0, 100.0])
            .labels(vec![Line::from("0"), Line::from("100")]),
    )
    .render(chart, buf);
}

/// The chart's series, named in their colours.
fn legend_of() -> Line<'static> {
    let item = |name: &'static str, color: Color| {
        [
            TSpan::styled("━ ", Style::default().fg(color)),
            TSpan::styled(name, Style::default().fg(color)),
            TSpan::raw("  "),
        ]
    };
    Line::from(
        [
            item(
                "util % (NVML, at the time each reading averages)",
                Color::Green,
            ),
            item("mem %", Color::Cyan),
            item("W/10", Color::Yellow),
        ]
        .concat(),
    )
}

/// NVML's utilisation during each phase of the shown proof, longest phases first: a proof's
/// GPU phases read their own kernels, its synthesis the idle GPU.
fn phase_utils(model: &Model, state: &ViewState, device: u32) -> String {
    let Some((s, p)) = state.shown_proof(model) else {
        return String::new();
    };
    let now = s.now();
    let mut seen: Vec<(String, u64, f64)> = Vec::new();
    for ph in p.phases() {
        let iv = Interval::new(ph.start, ph.end_or(now));
        let Some(u) = nvml::mean_util(s, device, iv) else {
            continue;
        };
        let name = s.name(ph.name).to_owned();
        match seen.iter_mut().find(|x| x.0 == name) {
            Some(x) if x.1 < iv.len() => *x = (name, iv.len(), u),
            Some(_) => {}
            None => seen.push((name, iv.len(), u)),
        }
    }
    seen.sort_by_key(|x| std::cmp::Reverse(x.1));
    let parts: Vec<String> = seen
        .iter()
        .map(|(n, _, u)| format!("{n} {u:.0}%"))
        .collect();
    if parts.is_empty() {
        "NVML util by phase: no readings".to_owned()
    } else {
        format!("NVML util by phase: {}", parts.join("  "))
    }
}
