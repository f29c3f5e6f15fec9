//! What every watching command ends with: the dashboard, or a headless run, its report and
//! its exit status.

use super::Ended;
use crate::app::{self, App, Until};
use crate::cli::{LiveArgs, ReportArgs};
use crate::exit::Exit;
use anyhow::{Context, Result};
use proofscope_engine::report::{self, Format};
use std::io::Write;

/// What a headless run writes and how it exits.
pub(crate) struct Headless<'a> {
    /// A report instead of the dashboard ([`wants_report`]).
    pub headless: bool,
    pub report: &'a ReportArgs,
    pub live: Option<&'a LiveArgs>,
    /// `replay --proofs N`: report the first N proofs.
    pub first_proofs: Option<u64>,
}

/// Whether to write a report instead of showing the dashboard: asked for (`--headless`, or an
/// option only a report has), or no terminal to show it on — standard output a pipe or a file
/// (`replay X | less`, a cron job), or `TERM=dumb`, which has no cursor addressing.
pub(crate) fn wants_report(
    report: &ReportArgs,
    live: Option<&LiveArgs>,
    first_proofs: Option<u64>,
) -> bool {
    use std::io::IsTerminal;
    report.headless
        || report.asks_for_report()
        || live.is_some_and(LiveArgs::asks_for_report)
        || first_proofs.is_some()
        || !std::io::stdout().is_terminal()
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// The dashboard, or a headless run and its report.
pub(crate) fn watch(mut app: App, how: &Headless<'_>) -> Result<Ended> {
    if !how.headless {
        app::run_tui_then(&mut app)?;
        return Ok(match app.session.child().and_then(|c| c.exit) {
            Some(code) => Ended::Child(code),
            None => Ended::Exit(Exit::Ok),
        });
    }
    let until = how.live.map_or(Until::default(), |l| Until {
        proofs: l.proofs,
        duration: l.duration,
    });
    let end = app::run_headless(&mut app, until);
    let worst = write_report(&app, how)?;
    let exit = exit_of(&end, how.report, worst);
    // A prover run's status is run's, unless the report itself failed a check.
    Ok(match (end.child_exit, exit) {
        (Some(code), Exit::Ok | Exit::Failure) => Ended::Child(code),
        (_, e) => Ended::Exit(e),
    })
}

/// Writes the report in its format; the worst gap's share (for `--fail-on-gap`).
fn write_report(app: &App, how: &Headless<'_>) -> Result<f64> {
    proofscope_engine::signals::exit_if_caught_during(
        "writing the report",
        how.report.output.as_deref(),
        || build_and_write_report(app, how),
    )
}

/// [`write_report`]'s work.
fn build_and_write_report(app: &App, how: &Headless<'_>) -> Result<f64> {
    let report = how.report;
    // The Chrome trace is written from the model; the report is built only when something
    // reads it (its per-proof tables are most of a long session's size again).
    let needs_report = report.format() != Format::Chrome || report.fail_on_gap.is_some();
    let rep = needs_report.then(|| {
        let mut r = app.report();
        if let Some(n) = how.first_proofs {
            r.keep_first(n as usize);
        }
        if let Some(n) = report.slowest {
            r.keep_slowest(n as usize);
        }
        r
    });
    let text = |r: &report::Report| {
        let worst = report.worst as usize;
        if report.full {
            report::text(r)
        } else if report.summary {
            report::text_at(r, report::Detail::Summary { worst })
        } else {
            report::text_that_fits(r, worst)
        }
    };
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        match report.format() {
            Format::Text => w.write_all(rep.as_ref().map(text).unwrap_or_default().as_bytes()),
            Format::Json => w.write_all(
                rep.as_ref()
                    .map(report::json)
                    .unwrap_or_default()
                    .as_bytes(),
            ),
            // Streamed: a trace of a long session is many times the model's size as text.
            Format::Chrome => {
                let mut b = std::io::BufWriter::new(w);
                report::write_chrome_trace(app.model(), &app.view.rule, &mut b)?;
                b.flush()
            }
        }
    };
    match &report.output {
        Some(path) => {
            let mut f = std::fs::File::create(path)
                .with_context(|| format!("writing {}", path.display()))?;
            write(&mut f).with_context(|| format!("writing {}", path.display()))?
        }
        None => write(&mut std::io::stdout().lock())?,
    }
    Ok(rep.map_or(0.0, |r| r.worst_gap_pct()))
}

/// The exit status of a headless run, saying why on stderr.
fn exit_of(end: &app::HeadlessEnd, report: &ReportArgs, worst_gap_pct: f64) -> Exit {
    let mut err = std::io::stderr();
    if let Some(why) = &end.captured_nothing {
        let _ = writeln!(err, "error: nothing captured: {why}");
        return Exit::Failure;
    }
    if let Some(why) = &end.failed {
        let _ = writeln!(err, "error: {why}");
        return Exit::Failure;
    }
    if let Some(why) = &end.failed_task {
        let _ = writeln!(err, "error: {why}");
        return Exit::Failure;
    }
    if let Some(sig) = end.interrupted {
        let _ = writeln!(
            err,
            "interrupted by {}: the report covers the file only up to where it was read",
            proofscope_engine::signals::name(sig)
        );
        return Exit::Failure;
    }
    if let Some(why) = &end.vanished {
        let _ = writeln!(err, "the prover vanished without a goodbye: {why}");
        return Exit::Vanished;
    }
    if let Some(pct) = report.fail_on_gap
        && worst_gap_pct > pct
    {
        let _ = writeln!(
            err,
            "a gap of {worst_gap_pct:.1}% exceeds --fail-on-gap {pct}%"
        );
        return Exit::GapOverLimit;
    }
    Exit::Ok
}
