//! The exit statuses of `proofscope`, one place: each subcommand's `--help` lists those it
//! can end with from here, and docs/CLI.md shows that help.

use std::process::ExitCode;

/// Why `proofscope` exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Failure = 1,
    Usage = 2,
    GapOverLimit = 3,
    Regression = 4,
    Vanished = 5,
}

impl Exit {
    pub const ALL: [Exit; 6] = [
        Exit::Ok,
        Exit::Failure,
        Exit::Usage,
        Exit::GapOverLimit,
        Exit::Regression,
        Exit::Vanished,
    ];

    /// What the status says, in the words `--help` prints.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "done",
            Exit::Failure => {
                "an error: a file that cannot be read or written, nothing captured, a failed \
                 connection"
            }
            Exit::Usage => "the command line was wrong",
            Exit::GapOverLimit => "--fail-on-gap: a gap exceeded the limit",
            Exit::Regression => "--fail-on-regression: B regressed",
            Exit::Vanished => {
                "the prover vanished without a goodbye (the report covers what arrived)"
            }
        }
    }

    /// Whether subcommand `sub` can end with this status (every one can end with 0, 1 and 2).
    fn ends(self, sub: &str) -> bool {
        match self {
            Exit::Ok | Exit::Failure | Exit::Usage => true,
            Exit::GapOverLimit => matches!(sub, "demo" | "attach" | "run" | "replay"),
            Exit::Regression => sub == "diff",
            Exit::Vanished => matches!(sub, "demo" | "attach" | "run"),
        }
    }

    /// The `Exit status:` section of `sub`'s help (`None`: the top level's, every status).
    pub fn help(sub: Option<&str>) -> String {
        let mut out = String::from("Exit status:\n");
        for e in Exit::ALL
            .into_iter()
            .filter(|e| sub.is_none_or(|s| e.ends(s)))
        {
            out.push_str(&format!("  {}  {}\n", e as u8, e.meaning()));
        }
        if matches!(sub, None | Some("run")) {
            out.push_str(
                "  run: otherwise the prover's own status (1 or 5 give way to it; 128+N when a \
                 signal N ended it)\n",
            );
        }
        out
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}
