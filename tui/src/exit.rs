//! The exit statuses of `proofscope`, one place (docs/CLI.md lists them, `--help` too).

use std::process::ExitCode;

/// Why `proofscope` exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// An error (a file that cannot be read, nothing captured, a failed connection).
    Failure = 1,
    /// The command line was wrong.
    Usage = 2,
    /// `--fail-on-gap`: a gap exceeded the limit.
    GapOverLimit = 3,
    /// `diff --fail-on-regression`: B regressed.
    Regression = 4,
    /// The prover vanished without a goodbye (the report covers what arrived).
    Vanished = 5,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}
