//! `proofscope import LOG… -o FILE`: a prover's logs as a recording.

use super::opts::refuse_to_replace;
use super::usage;
use crate::exit::Exit;
use anyhow::{Context, Result};
use std::io::Write;

/// `proofscope import LOG... -o FILE`.
pub(crate) fn import(x: &crate::cli::ImportArgs) -> Result<Exit> {
    use proofscope_engine::import;
    refuse_to_replace(&x.output, x.force)?;
    if let Some(log) = x
        .logs
        .iter()
        .find(|l| crate::same_file::same_file(l, &x.output))
    {
        return Err(usage(format!(
            "{} is both a log and the output: the import would replace its own input",
            log.display()
        )));
    }
    let imp = import::import(&x.logs)?;
    let f = std::fs::File::create(&x.output)
        .with_context(|| format!("writing {}", x.output.display()))?;
    import::write_recording(&imp.events, std::io::BufWriter::new(f))
        .with_context(|| format!("writing {}", x.output.display()))?;
    let mut err = std::io::stderr().lock();
    for w in imp.counts.warnings() {
        let _ = writeln!(err, "{w}");
    }
    let c = &imp.counts;
    let _ = writeln!(
        err,
        "imported {} proof{} from {} lines ({} known, {} unknown skipped, {} malformed){} into {}",
        imp.proofs,
        if imp.proofs == 1 { "" } else { "s" },
        c.lines,
        c.known,
        c.unknown,
        c.malformed_total(),
        if imp.sessions > 1 {
            format!(", {} sessions (the prover restarted)", imp.sessions)
        } else {
            String::new()
        },
        x.output.display()
    );
    Ok(Exit::Ok)
}
