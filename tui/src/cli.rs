//! The `proofscope` command line (see docs/CLI.md; `--help` is snapshot-tested). Each
//! subcommand takes only the options it uses, and every value is checked by the parser: a bad
//! one is a usage error (exit 2) that says what was expected.

use crate::analysis::GapRule;
use crate::model::Retention;
use crate::report::Format;
use crate::source::tape::Speed;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// A live profiler for GPU Groth16 provers.
#[derive(Debug, Parser)]
#[command(name = "proofscope", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the built-in prover on a small SHA-256 batch and watch it live. Prover flags
    /// (e.g. --dealloc sync, --circuit, --log-size) are passed to it.
    #[cfg(feature = "demo")]
    Demo {
        #[command(flatten)]
        demo: crate::demo::DemoArgs,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        memory: MemoryArgs,
    },
    /// Attach to a running prover (found automatically when exactly one is running).
    Attach {
        /// The prover's socket [default: the only prover running; when it restarts under a
        /// new pid, the viewer follows it].
        socket: Option<PathBuf>,
        /// Wait up to SECS (30 without a value) for the prover to appear — its socket, or the
        /// only prover running — for scripts that start the prover themselves.
        #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "30", value_parser = parse_duration)]
        wait: Option<Duration>,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        memory: MemoryArgs,
    },
    /// Start a prover you cannot change and watch it from its first instant: its allocator
    /// (LD_PRELOAD) and its own log lines (supraseal's CUZK_TIMING, cuzk, bellperson) in one
    /// session. Its output passes through unchanged; its exit status is run's.
    Run(RunArgs),
    /// List running provers (stale sockets found on the way are removed).
    List,
    /// Watch every prover on this host and serve Prometheus/OpenMetrics metrics (docs/FLEET.md).
    Export(ExportArgs),
    /// Compare two recordings, before (A) and after (B): phases, unaccounted time, flagged gaps,
    /// releases, GPU use.
    Diff(DiffArgs),
    /// Turn prover logs into a recording: curio cuzk's CUZK_TIMING, CUZK_NTT_H and TIMELINE
    /// lines and bellperson's `prover time:` (docs/CLI.md, "Accepted log formats").
    Import(ImportArgs),
    /// Replay a recording with the same views (or report on it with --headless).
    Replay {
        /// The recording (.psrec) to replay, or a log that `import` reads (told apart by its
        /// content).
        file: PathBuf,
        /// Join a log captured beside the recording (the prover's stderr, or any file in a
        /// format `import` reads): its calls are placed by the wall clock in both, and the
        /// recording's releases fall inside the calls they belong to (repeatable).
        #[arg(long = "log", value_name = "LOG")]
        logs: Vec<PathBuf>,
        /// Dashboard: the Stats panel shows the phase statistics of recording (or log) B beside
        /// FILE's, with bars (headless: use `proofscope diff FILE B`).
        #[arg(long, value_name = "B", conflicts_with = "headless")]
        compare: Option<PathBuf>,
        /// Report only the first N proofs of the recording (text and JSON; with --slowest, the
        /// slowest of those). Implies --headless.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        proofs: Option<u64>,
        /// Dashboard: the replay's speed (`>` changes it).
        #[arg(long, value_enum, default_value_t = Speed::X1)]
        speed: Speed,
        /// Dashboard: start at the end, every proof read, the last one shown (End does it later).
        #[arg(long)]
        from_end: bool,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        memory: MemoryArgs,
    },
}

/// Options of `run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The allocator probe to preload [default: libproofscope_preload.so beside this binary,
    /// or in the install prefix's lib/].
    #[arg(long, value_name = "PATH")]
    pub preload: Option<PathBuf>,
    /// Write the prover's stdout and stderr to this file [default: this terminal when
    /// headless; with the dashboard, a file in the run's private directory, named in the
    /// footer].
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// The prover and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<std::ffi::OsString>,
}

/// Options of a live session.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Record the session to this file (the socket stream, replayable).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Replace the --record file if it exists.
    #[arg(long, requires = "record")]
    pub force: bool,
    /// Stop after this many proofs completed after attaching (implies --headless).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub proofs: Option<u64>,
    /// Stop after this many seconds (implies --headless).
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    pub duration: Option<Duration>,
}

/// Options of a report.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Write a report and exit instead of showing the dashboard (also when standard output is
    /// not a terminal, when TERM=dumb, and with any option only a report has).
    #[arg(long)]
    pub headless: bool,
    /// Report format (implies --headless) [default: text].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write the report here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Text report: the summary (statistics, the worst proofs, every flagged gap) even when
    /// the whole report is short [default: the summary above 60,000 characters].
    #[arg(long, conflicts_with = "full")]
    pub summary: bool,
    /// Text report: the whole report however long.
    #[arg(long)]
    pub full: bool,
    /// The summary lists this many proofs by unaccounted share.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub worst: u64,
    /// Report only the N proofs that took longest (text and JSON).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub slowest: Option<u64>,
    /// Exit with status 3 when any gap exceeds PCT percent of its span (implies --headless).
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_gap: Option<f64>,
    #[command(flatten)]
    pub gap: GapArgs,
}

/// When a gap is flagged (the same rule for the dashboard, reports, `diff` and `export`).
#[derive(Debug, Clone, Copy, Args)]
pub struct GapArgs {
    /// A gap is flagged at this fraction of its span …
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05, value_parser = parse_fraction)]
    pub gap_fraction: f64,
    /// … and at least this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50.0, value_parser = parse_millis)]
    pub gap_min_ms: f64,
    /// A GPU idle for more than PCT % of a proof is flagged (GPU provers).
    #[arg(long, value_name = "PCT", default_value_t = 50.0, value_parser = parse_percent)]
    pub gpu_idle_pct: f64,
}

impl ReportArgs {
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }

    /// Whether an option was given that only a report has: it asks for the report.
    pub fn asks_for_report(&self) -> bool {
        self.format.is_some()
            || self.output.is_some()
            || self.summary
            || self.full
            || self.slowest.is_some()
            || self.fail_on_gap.is_some()
    }
}

impl LiveArgs {
    /// `--proofs` and `--duration` end a headless run.
    pub fn asks_for_report(&self) -> bool {
        self.proofs.is_some() || self.duration.is_some()
    }
}

impl GapArgs {
    pub fn rule(&self) -> GapRule {
        GapRule {
            min_fraction: self.gap_fraction,
            min_ns: (self.gap_min_ms * 1e6) as u64,
            gpu_idle_fraction: self.gpu_idle_pct / 100.0,
        }
    }
}

/// What the viewer keeps in memory.
#[derive(Debug, Clone, Args)]
pub struct MemoryArgs {
    /// Keep at most this many proofs in memory.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_proofs: u64,
    /// Keep at most this many MiB of session data in memory (older proofs are evicted).
    #[arg(long, value_name = "MIB", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_mib: u64,
}

/// Options of `diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The recording (or log) before the change.
    pub a: PathBuf,
    /// The recording (or log) after it.
    pub b: PathBuf,
    /// `text` or `json`.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Exit with status 4 on a regression: a flagged gap in B that A has not, a phase's median
    /// grown by more than PCT % (and --min-change), or the unaccounted share by more than PCT
    /// points — the last two with their 95 % interval above zero.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// A phase's change smaller than this many milliseconds is never a regression, whatever
    /// its share (40 ns → 140 ns is +250 % and nothing).
    #[arg(long, value_name = "MS", default_value_t = 1.0, value_parser = parse_millis)]
    pub min_change: f64,
    #[command(flatten)]
    pub gap: GapArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
}

/// Options of `import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The logs, read in this order as one log (other lines are counted and skipped).
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// The recording to write.
    #[arg(short, long, value_name = "FILE.psrec")]
    pub output: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Options of `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Address to serve /metrics on (use 0.0.0.0:PORT to be scraped from other hosts).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub listen: String,
    /// Sockets to watch besides the provers found in the socket directories.
    pub sockets: Vec<PathBuf>,
    /// Look for provers in this directory instead of the default ones (repeatable).
    #[arg(long, value_name = "DIR")]
    pub socket_dir: Vec<PathBuf>,
    /// Look for new and gone provers this often.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_duration)]
    pub scan: Duration,
    /// Remove a gone prover's series this long after it went (time for Prometheus to scrape
    /// its final counts).
    #[arg(long, value_name = "SECS", default_value = "300", value_parser = parse_duration)]
    pub forget_after: Duration,
    #[command(flatten)]
    pub gap: GapArgs,
    /// What each prover's model may hold, in MiB (its recent proofs, for the analysis).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub max_mib_per_prover: u64,
}

impl MemoryArgs {
    pub fn retention(&self) -> Retention {
        Retention {
            max_proofs: self.max_proofs as usize,
            max_bytes: (self.max_mib as usize) << 20,
        }
    }
}

/// A finite number from `s`, or what was wrong with it.
fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s:?} is not a finite number"))
    }
}

/// Seconds: more than 0, at most a year.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const MAX: f64 = 366.0 * 86_400.0;
    let v = finite(s)?;
    if v <= 0.0 || v > MAX {
        return Err(format!(
            "expected seconds above 0 and at most {MAX} (a year), got {s}"
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

/// A percentage, 0 to 100.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("expected a percentage from 0 to 100, got {s}"))
    }
}

/// A fraction, 0 to 1.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("expected a fraction from 0 to 1, got {s}"))
    }
}

/// Milliseconds, 0 to a day.
pub fn parse_millis(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..=86_400_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "expected milliseconds from 0 to 86400000 (a day), got {s}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_are_not_values_are_refused() {
        for bad in ["nan", "inf", "-1", "0", "1e20", "x", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_percent("nan").is_err() && parse_percent("101").is_err());
        assert!(parse_fraction("1.01").is_err() && parse_fraction("0").is_ok());
        assert!(parse_millis("-0.5").is_err() && parse_millis("0").is_ok());
    }
}
