//! `proofscope`: dispatches to the subcommands (`commands`), the built-in demo prover and
//! `run`'s relay process.

use clap::FromArgMatches;
use proofscope::cli::Cli;
use proofscope::commands::{self, Ended, Usage};
use proofscope::exit::Exit;
use std::io::Write;
use std::process::ExitCode;

// The demo runs this binary as its prover, which then reports allocations like `prover` does.
#[cfg(feature = "demo")]
#[global_allocator]
static ALLOC: prover_core::probe::CountingAllocator = prover_core::probe::CountingAllocator;

fn main() -> ExitCode {
    if let Some(code) = builtin_prover() {
        return code;
    }
    // `proofscope __relay …` is run's relay process (between the viewer and the prover).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "__relay") {
        return proofscope_engine::run::relay::main(&argv[2..]);
    }
    // clap's generated `help` subcommand refuses `--help`; a user who types it wants help.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "help")
        && args.iter().skip(2).any(|a| a == "--help" || a == "-h")
    {
        let _ = proofscope::cli::command().print_help();
        return Exit::Ok.into();
    }
    let cli = match Cli::from_arg_matches(&proofscope::cli::command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match commands::run(cli) {
        Ok(Ended::Exit(code)) => code.into(),
        Ok(Ended::Child(code)) => ExitCode::from(code),
        // `proofscope man | head`: the reader has what it wanted; no error to tell.
        Err(e) if is_broken_pipe(&e) => Exit::Ok.into(),
        Err(e) if e.is::<Usage>() => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            Exit::Usage.into()
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            Exit::Failure.into()
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `proofscope prover …` is the built-in prover (used by `demo`).
fn builtin_prover() -> Option<ExitCode> {
    #[cfg(feature = "demo")]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if args.get(1).is_some_and(|a| a == "prover") {
            return Some(prover_core::cli::run(
                std::iter::once("prover".into()).chain(args.into_iter().skip(2)),
            ));
        }
    }
    None
}
