//! `proofscope run -- CMD…`: an unmodified prover started with the allocator probe, watched.

use super::Ended;
use super::opts::run_opts;
use super::usage;
use super::watch::{Headless, wants_report, watch};
use crate::app::App;
use anyhow::Result;

/// `proofscope run -- CMD…`: the prover started with the allocator probe, watched.
/// `run --log` must not name the recording or the report: the prover's bytes would land in
/// the recording (its header lost), or the report would replace the log.
fn refuse_log_clash(
    log: Option<&std::path::Path>,
    record: Option<&std::path::Path>,
    output: Option<&std::path::Path>,
) -> Result<()> {
    let Some(log) = log else { return Ok(()) };
    for (flag, other, what) in [
        (
            "--record",
            record,
            "the prover's output would be written into the recording",
        ),
        (
            "--output",
            output,
            "the report would replace the prover's output",
        ),
    ] {
        if let Some(other) = other.filter(|o| crate::same_file::same_file(log, o)) {
            return Err(usage(format!(
                "--log and {flag} name the same file ({}): {what}",
                other.display()
            )));
        }
    }
    Ok(())
}

/// `run`: the prover started by the relay, in the dashboard or a report.
pub(crate) fn run_prover(x: &crate::cli::RunArgs) -> Result<Ended> {
    let opts = run_opts(&x.report, &x.memory, Some(&x.live))?;
    refuse_log_clash(
        x.log.as_deref(),
        opts.record.as_deref(),
        x.report.output.as_deref(),
    )?;
    let preload = proofscope_engine::run::find_preload(x.preload.as_deref())?;
    let headless = wants_report(&x.report, Some(&x.live), None);
    // The dashboard owns the terminal: the prover's output goes to a file then.
    let log = match (&x.log, headless) {
        (Some(l), _) => Some(l.clone()),
        (None, true) => None,
        (None, false) => Some(
            probe_protocol::discovery::default_socket_dir()
                .join(format!("run-{}", std::process::id()))
                .join("prover.log"),
        ),
    };
    let plan = proofscope_engine::run::RunPlan {
        cmd: x.cmd.clone(),
        preload,
        log,
        record: opts.record.clone(),
        record_dir: opts.record_dir.clone(),
        blackbox: opts.blackbox(),
    };
    let app = App::run(plan, &opts)?;
    let how = Headless {
        headless,
        report: &x.report,
        live: Some(&x.live),
        first_proofs: None,
    };
    watch(app, &how)
}
