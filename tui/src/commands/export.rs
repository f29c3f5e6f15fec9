//! `proofscope export`: the Prometheus exporter (crate `proofscope-export`), from the command
//! line's options.

use crate::exit::Exit;
use anyhow::Result;
use probe_protocol::discovery as discover;
use proofscope_engine::model::Retention;

fn level(l: crate::cli::LogLevel) -> proofscope_export::log::Level {
    use crate::cli::LogLevel as C;
    use proofscope_export::log::Level as E;
    match l {
        C::Debug => E::Debug,
        C::Info => E::Info,
        C::Warn => E::Warn,
        C::Error => E::Error,
    }
}

fn format(f: crate::cli::LogFormat) -> proofscope_export::log::Format {
    use crate::cli::LogFormat as C;
    use proofscope_export::log::Format as E;
    match f {
        C::Logfmt => E::Logfmt,
        C::Json => E::Json,
    }
}

/// Runs the exporter until it is stopped.
pub(crate) fn export(x: &crate::cli::ExportArgs) -> Result<Exit> {
    proofscope_export::log::init(level(x.log_level), format(x.log_format));
    proofscope_export::run(proofscope_export::ExportOpts {
        listen: x.listen.clone(),
        web_config: x.web_config.clone(),
        sockets: x.sockets.clone(),
        socket_dirs: if x.socket_dir.is_empty() {
            discover::socket_dirs()
        } else {
            x.socket_dir.clone()
        },
        rule: x.gap.rule(),
        // Proofs are counted as they settle: the model keeps a few, for the analysis of the
        // next ones and the releases that follow them — and every proof of one collector
        // cycle, whose slow events (ProofBegin, ProofEnd) all come before its spans' edges: a
        // fast prover on a loaded machine put more than 16 proofs in a cycle, and they were
        // evicted before they could settle. The byte budget bounds what they cost.
        retention: Retention {
            max_proofs: 256,
            max_bytes: (x.max_mib_per_prover as usize) << 20,
        },
        scan: x.scan,
        forget_after: x.forget_after,
        host: x.host.clone().unwrap_or_else(proofscope_export::this_host),
        max_label_values: x.max_label_values as usize,
        max_workers: x.max_workers as usize,
        capture: x.capture.opts(),
    })?;
    Ok(Exit::Ok)
}
