//! The options every watching command shares, checked before anything starts: a refusal loses
//! nothing.

use super::usage;
use crate::app::RunOpts;
use crate::cli::{LiveArgs, MemoryArgs, ReportArgs};
use anyhow::Result;

/// The run's options from the command line's; a usage error for files that clash or that
/// would be replaced without `--force`.
pub(crate) fn run_opts(
    report: &ReportArgs,
    memory: &MemoryArgs,
    live: Option<&LiveArgs>,
) -> Result<RunOpts> {
    let record = live.and_then(|l| l.record.clone());
    if let (Some(r), Some(o)) = (&record, &report.output)
        && crate::same_file::same_file(r, o)
    {
        return Err(usage(format!(
            "--record and --output name the same file ({}): the report would replace the recording",
            r.display()
        )));
    }
    if report.force && record.is_none() && report.output.is_none() {
        return Err(usage(
            "--force replaces the files named by --record or -o, and neither was given",
        ));
    }
    for file in record.iter().chain(&report.output) {
        refuse_to_replace(file, report.force)?;
    }
    Ok(RunOpts {
        retention: memory.retention(),
        rule: report.gap.rule(),
        record,
        record_dir: live
            .and_then(|l| l.record_dir.clone())
            .unwrap_or_else(proofscope_engine::tap::record::default_record_dir),
        capture: live.and_then(|l| l.capture.opts()),
    })
}

/// The one overwrite rule: a file this command writes may replace another only with `--force`
/// (checked before anything starts, so a refusal loses nothing). `/dev/null`, a pipe or a
/// terminal is written to, not replaced.
pub(crate) fn refuse_to_replace(file: &std::path::Path, force: bool) -> Result<()> {
    if std::fs::metadata(file).is_ok_and(|m| m.is_file()) && !force {
        return Err(usage(format!(
            "{} exists; pass --force to replace it, or name another file",
            file.display()
        )));
    }
    Ok(())
}
