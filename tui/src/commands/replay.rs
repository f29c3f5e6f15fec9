//! `proofscope replay FILE [--log LOG…]`: a recording (or a log) in the dashboard, on its own
//! clock, or read through into a report.

use super::Ended;
use super::diff::comparison;
use super::opts::run_opts;
use super::usage;
use super::watch::{Headless, wants_report, watch};
use crate::app::App;
use crate::cli::{MemoryArgs, ReportArgs};
use crate::input::Action;
use anyhow::{Result, bail};
use proofscope_engine::source::{Control, Speed};
use std::path::{Path, PathBuf};

/// What `replay` was asked.
#[derive(Debug)]
pub(crate) struct Replay<'a> {
    pub file: &'a Path,
    /// Logs joined to the recording's first session.
    pub logs: &'a [PathBuf],
    /// `--compare B`: B's figures beside the file's in the dashboard.
    pub compare: Option<&'a Path>,
    /// `--proofs N`: report the first N proofs.
    pub proofs: Option<u64>,
    pub speed: Speed,
    pub from_end: bool,
    pub report: &'a ReportArgs,
    pub memory: &'a MemoryArgs,
}

pub(crate) fn replay(x: &Replay<'_>) -> Result<Ended> {
    let opts = run_opts(x.report, x.memory, None)?;
    refuse_input_as_output(x)?;
    let headless = wants_report(x.report, None, x.proofs);
    if headless {
        // From here: the opening pass over a large file is interruptible too.
        proofscope_engine::signals::catch();
    }
    if headless && x.compare.is_some() {
        bail!(
            "--compare is for the dashboard, and this run writes a report (no terminal, \
             or an option only a report has): `proofscope diff A B` compares two reports"
        );
    }
    let mut app = App::replay_with_logs(x.file.to_owned(), x.logs, &opts)?;
    if let Some(b) = x.compare {
        app.view.compare = Some(comparison(x.file, b, &opts)?);
    }
    app.control(Control::Speed(x.speed));
    if x.from_end {
        app.apply(Action::Last);
    }
    let how = Headless {
        headless,
        report: x.report,
        live: None,
        first_proofs: x.proofs,
    };
    watch(app, &how)
}

/// The report may not replace one of the files it reads.
fn refuse_input_as_output(x: &Replay<'_>) -> Result<()> {
    let Some(o) = &x.report.output else {
        return Ok(());
    };
    let inputs = std::iter::once(x.file)
        .chain(x.logs.iter().map(PathBuf::as_path))
        .chain(x.compare);
    if let Some(input) = inputs
        .into_iter()
        .find(|i| crate::same_file::same_file(i, o))
    {
        return Err(usage(format!(
            "{} is both an input and the report's output (-o {}): the report would replace it",
            input.display(),
            o.display()
        )));
    }
    Ok(())
}
