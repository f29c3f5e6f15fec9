//! The subcommands, one module each; `main.rs` only dispatches to [`run`]. Each takes its
//! parsed arguments and returns how `proofscope` exits.

mod attach;
#[cfg(feature = "demo")]
mod demo;
mod diff;
mod docs;
mod export;
mod import;
mod list;
mod opts;
mod replay;
mod run;
mod watch;

use crate::cli::{Cli, Command};
use crate::exit::Exit;
use anyhow::Result;

/// Runs the subcommand `cli` names.
pub fn run(cli: Cli) -> Result<Ended> {
    match &cli.command {
        Command::List { json } => list::list(*json).map(Ended::from),
        Command::Completions { shell } => docs::completions(*shell).map(Ended::from),
        Command::Man { dir, force } => docs::man(dir.as_deref(), *force).map(Ended::from),
        Command::Diff(x) => diff::diff(x).map(Ended::from),
        Command::Import(x) => import::import(x).map(Ended::from),
        Command::Export(x) => export::export(x).map(Ended::from),
        Command::Run(x) => run::run_prover(x),
        Command::Attach {
            socket,
            wait,
            live,
            report,
            memory,
        } => attach::attach(socket.as_deref(), *wait, live, report, memory),
        Command::Replay {
            file,
            logs,
            compare,
            proofs,
            speed,
            from_end,
            report,
            memory,
        } => replay::replay(&replay::Replay {
            file,
            logs,
            compare: compare.as_deref(),
            proofs: *proofs,
            speed: *speed,
            from_end: *from_end,
            report,
            memory,
        }),
        #[cfg(feature = "demo")]
        Command::Demo {
            demo,
            live,
            report,
            memory,
        } => demo::demo(demo, live, report, memory),
    }
}

/// How `proofscope` ends: with a status of its own, or with its prover's (`run`).
#[derive(Debug)]
pub enum Ended {
    Exit(Exit),
    Child(u8),
}

impl From<Exit> for Ended {
    fn from(e: Exit) -> Ended {
        Ended::Exit(e)
    }
}

/// A mistake in how the viewer was called: reported like clap's own, with exit status 2.
#[derive(Debug)]
pub struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}
