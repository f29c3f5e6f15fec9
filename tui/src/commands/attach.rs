//! `proofscope attach [SOCKET]`: a running prover followed, found by its socket or as the one
//! prover running.

use super::Ended;
use super::opts::run_opts;
use super::usage;
use super::watch::{Headless, wants_report, watch};
use crate::app::App;
use crate::cli::{LiveArgs, MemoryArgs, ReportArgs};
use anyhow::{Context, Result, bail};
use probe_protocol::discovery as discover;
use proofscope_engine::source::Target;

/// `attach`: the prover at `socket`, or the only one running, in the dashboard or a report.
pub(crate) fn attach(
    socket: Option<&std::path::Path>,
    wait: Option<std::time::Duration>,
    live: &LiveArgs,
    report: &ReportArgs,
    memory: &MemoryArgs,
) -> Result<Ended> {
    let opts = run_opts(report, memory, Some(live))?;
    let target = attach_target(socket, wait)?;
    let how = Headless {
        headless: wants_report(report, Some(live), None),
        report,
        live: Some(live),
        first_proofs: None,
    };
    watch(App::live(target, &opts)?, &how)
}

pub(crate) fn socket_dirs() -> String {
    discover::socket_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The search's refusals, one line each, for a message.
fn refusals(refused: &[discover::Refused]) -> String {
    refused
        .iter()
        .map(|r| format!("\n  refused {}: {}", r.path.display(), r.why))
        .collect()
}

fn find_one() -> Result<std::path::PathBuf> {
    let scan = discover::scan(&discover::socket_dirs());
    let found: Vec<_> = scan.found.into_iter().filter(|f| f.alive).collect();
    if !found.is_empty() && !scan.refused.is_empty() {
        eprintln!("warning: passed over{}", refusals(&scan.refused));
    }
    match found.as_slice() {
        [one] => Ok(one.path.clone()),
        [] => bail!(
            "no running prover found (looked in {}); start one with `prover serve`, or name its socket{}",
            socket_dirs(),
            refusals(&scan.refused)
        ),
        many => bail!(
            "{} provers are running; name one:\n{}",
            many.len(),
            many.iter()
                .map(|f| format!("  proofscope attach {}", f.path.display()))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// A path `attach` can follow: a socket (a recording or a log is replayed, not attached to:
/// attached, a file read as "the prover vanished").
fn attachable(p: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(p)
        .with_context(|| format!("reading {}", p.display()))?
        .file_type();
    if t.is_socket() {
        return Ok(());
    }
    let hint = if t.is_file() {
        format!(
            "; a recording or a log is replayed: proofscope replay {}",
            p.display()
        )
    } else {
        String::new()
    };
    Err(usage(format!(
        "{} is not a prover's socket{hint}",
        p.display()
    )))
}

/// What `attach` follows: the socket named (which must exist, or appear within `wait`), or
/// the only prover running (found within `wait`).
fn attach_target(
    socket: Option<&std::path::Path>,
    wait: Option<std::time::Duration>,
) -> Result<Target> {
    let deadline = std::time::Instant::now() + wait.unwrap_or_default();
    loop {
        let found = match socket {
            Some(p) if p.exists() => return attachable(p).map(|()| Target::Socket(p.to_owned())),
            Some(p) => Err(anyhow::anyhow!(
                "no prover socket at {}{}",
                p.display(),
                if wait.is_some() {
                    " (waited for it; is the prover started with PROOFSCOPE_SOCKET set to it?)"
                } else {
                    " (pass --wait SECS to wait for a prover that is still starting)"
                }
            )),
            None => find_one().map(Target::Discovered),
        };
        match found {
            Ok(t) => return Ok(t),
            Err(e) if std::time::Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}
