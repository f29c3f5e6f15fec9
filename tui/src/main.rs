//! `proofscope`: see `proofscope --help` and docs/CLI.md.

use anyhow::{Context, Result, bail};
use clap::Parser;
use probe_protocol::discovery as discover;
use proofscope::analysis::GapRule;
use proofscope::app::{self, App, RunOpts, Until};
use proofscope::cli::{Cli, Command};
use proofscope::model::Retention;
use proofscope::report::{self, Format};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

// The demo runs this binary as its prover, which then reports allocations like `prover` does.
#[cfg(feature = "demo")]
#[global_allocator]
static ALLOC: prover_core::probe::CountingAllocator = prover_core::probe::CountingAllocator;

fn main() -> ExitCode {
    // `proofscope prover …` is the built-in prover (used by `demo`).
    #[cfg(feature = "demo")]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if args.get(1).is_some_and(|a| a == "prover") {
            return prover_core::cli::run(
                std::iter::once("prover".into()).chain(args.into_iter().skip(2)),
            );
        }
    }
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn find_one() -> Result<std::path::PathBuf> {
    let found: Vec<_> = discover::find().into_iter().filter(|f| f.alive).collect();
    match found.as_slice() {
        [one] => Ok(one.path.clone()),
        [] => bail!(
            "no running prover found (looked in {}); start one with `prover serve`, or name its socket",
            discover::socket_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
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

fn run(cli: Cli) -> Result<ExitCode> {
    let o = &cli.opts;
    if !(0.0..=1.0).contains(&o.gap_fraction) {
        bail!(
            "--gap-fraction must be between 0 and 1, got {}",
            o.gap_fraction
        );
    }
    let opts = RunOpts {
        retention: Retention {
            max_proofs: o.max_proofs.max(1),
            max_bytes: o.max_mib.max(1) << 20,
        },
        rule: GapRule {
            min_fraction: o.gap_fraction,
            min_ns: (o.gap_min_ms.max(0.0) * 1e6) as u64,
        },
        record: o.record.clone(),
    };
    let mut app = match &cli.command {
        Command::List => {
            let found = discover::find();
            if found.is_empty() {
                println!(
                    "no prover sockets in {}",
                    discover::socket_dirs()
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            for f in found {
                println!(
                    "{:<15} {:<12} pid {:<8} {}",
                    match (f.alive, f.removed) {
                        (true, _) => "running",
                        (false, true) => "stale, removed",
                        (false, false) => "stale",
                    },
                    f.prover,
                    f.pid.map_or("?".into(), |p| p.to_string()),
                    f.path.display()
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Attach { socket } => {
            let path = match socket {
                Some(p) => p.clone(),
                None => find_one()?,
            };
            App::live(path, &opts)?
        }
        Command::Replay { file } => {
            if o.record.is_some() {
                bail!("--record applies to live sessions; a replay is already a recording");
            }
            App::replay(file.clone(), &opts)?
        }
        #[cfg(feature = "demo")]
        Command::Demo(d) => {
            let stop_after = if o.headless {
                o.proofs.or(Some(3))
            } else {
                None
            };
            let demo = proofscope::demo::start(d, stop_after)?;
            let mut app = App::live(demo.socket.clone(), &opts)?;
            app.view.message = Some(format!(
                "demo prover starting (log: {})",
                demo.log.display()
            ));
            app.demo = Some(demo);
            app
        }
    };
    if !o.headless {
        app::run_tui(app)?;
        return Ok(ExitCode::SUCCESS);
    }
    app::run_headless(
        &mut app,
        Until {
            proofs: o.proofs,
            duration: o.duration.map(Duration::from_secs_f64),
        },
    );
    let rep = report::build(&app.model, &opts.rule, &app.source, app.warnings.clone());
    let out = match o.format {
        Format::Text => report::text(&rep),
        Format::Json => report::json(&rep),
        Format::Chrome => report::chrome_trace(&app.model),
    };
    match &o.output {
        Some(path) => {
            std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(out.as_bytes())?,
    }
    if let Some(pct) = o.fail_on_gap {
        let worst = rep.worst_gap_pct();
        if worst > pct {
            eprintln!("a gap of {worst:.1}% exceeds --fail-on-gap {pct}%");
            return Ok(ExitCode::from(3));
        }
    }
    Ok(ExitCode::SUCCESS)
}
