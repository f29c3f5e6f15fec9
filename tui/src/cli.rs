//! The `proofscope` command line (see docs/CLI.md; `--help` is snapshot-tested). Each
//! subcommand takes only the options it uses, and every value is checked by the parser: a bad
//! one is a usage error (exit 2) that says what was expected.

use crate::exit::Exit;
use clap::{Args, CommandFactory, Parser, Subcommand};
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::Retention;
use proofscope_engine::report::Format;
use proofscope_engine::source::tape::Speed;
use std::path::PathBuf;
use std::time::Duration;

/// An engine enum on the command line: its names come from the engine's own list, so the
/// engine needs no CLI crate and each name is written once.
trait Choice: Copy + Send + Sync + 'static {
    const ALL: &'static [Self];
    fn name(self) -> &'static str;
}

impl Choice for Format {
    const ALL: &'static [Self] = &Format::ALL;
    fn name(self) -> &'static str {
        Format::name(self)
    }
}

impl Choice for Speed {
    const ALL: &'static [Self] = &Speed::ALL;
    fn name(self) -> &'static str {
        Speed::name(self)
    }
}

/// The parser of a [`Choice`]: one of its names, else a usage error listing them.
fn choice<T: Choice>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::ALL.iter().map(|v| v.name())).map(|name| {
        // The parser let only these names through.
        T::ALL
            .iter()
            .copied()
            .find(|v| v.name() == name)
            .unwrap_or(T::ALL[0])
    })
}

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
    /// List running provers (stale sockets found on the way are removed; a directory or socket
    /// another user could have put there is refused, and says why).
    List {
        /// One JSON object per socket, in an array: state, prover, pid, path, command_line
        /// (a refused directory or socket: state "refused", path, why).
        #[arg(long)]
        json: bool,
    },
    /// Print a shell's completion script for proofscope.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one per subcommand with --dir.
    Man {
        /// Write proofscope.1 and proofscope-SUBCOMMAND.1 into DIR (created if missing).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Replace pages that exist in DIR.
        #[arg(long, requires = "dir")]
        force: bool,
    },
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
        #[arg(long, value_parser = choice::<Speed>(), default_value_t = Speed::X1)]
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
#[command(next_help_heading = "Live session")]
pub struct LiveArgs {
    /// Record the session to this file from its first frame (the socket stream, replayable;
    /// an existing file needs --force).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Where the `r` key starts a recording: a new file named by the prover and the time
    /// (proofscope-PROVER-20261203T074512Z.psrec), never one that exists [default:
    /// $XDG_DATA_HOME/proofscope/recordings or ~/.local/share/proofscope/recordings].
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
    /// Stop after this many proofs completed after attaching (implies --headless).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub proofs: Option<u64>,
    /// Stop after this many seconds (implies --headless).
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub capture: CaptureArgs,
}

/// The black box: a recording of the window around each anomalous proof.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Black box")]
pub struct CaptureArgs {
    /// Keep the prover's recent frames and write the window around each proof that crosses
    /// the capture rule (the proofs before it, the proof, the proofs after it) to a .psrec
    /// here, once the proofs after it have ended.
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
    /// A proof is captured when its unaccounted time is at least PCT % of it …
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = parse_percent)]
    pub capture_unaccounted_pct: f64,
    /// … and at least this many milliseconds (the UnaccountedTimeHigh alert's floors).
    #[arg(long, value_name = "MS", default_value_t = 100.0, value_parser = parse_millis)]
    pub capture_unaccounted_min_ms: f64,
    /// Also when the phase NAME lasts at least MS milliseconds (repeatable).
    #[arg(long, value_name = "NAME=MS", value_parser = proofscope_engine::capture::parse_phase_limit)]
    pub capture_phase: Vec<proofscope_engine::capture::PhaseLimit>,
    /// Proofs kept on each side of the anomalous one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub capture_neighbours: u64,
    /// Recent frames kept per prover, in MiB (raw, as the prover sent them).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub capture_history_mib: u64,
    /// At most this many captures in the directory: the oldest are removed.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub capture_max_files: u64,
    /// At most this many MiB of captures in the directory: the oldest are removed, and a
    /// window larger than this alone is not written (counted as too_large).
    #[arg(long, value_name = "MIB", default_value = "1024", value_parser = parse_mib_bytes)]
    pub capture_max_mib: u64,
}

impl CaptureArgs {
    /// The black box's settings, when `--capture-dir` is given.
    pub fn opts(&self) -> Option<proofscope_engine::capture::CaptureOpts> {
        let dir = self.capture_dir.clone()?;
        Some(proofscope_engine::capture::CaptureOpts {
            store: proofscope_engine::capture::Store {
                dir,
                max_files: self.capture_max_files as usize,
                max_bytes: self.capture_max_mib,
            },
            trigger: proofscope_engine::capture::Trigger {
                unaccounted_fraction: self.capture_unaccounted_pct / 100.0,
                unaccounted_min_ns: (self.capture_unaccounted_min_ms * 1e6) as u64,
                phases: self.capture_phase.clone(),
            },
            history_bytes: (self.capture_history_mib as usize) << 20,
            neighbours: self.capture_neighbours,
        })
    }
}

/// Options of a report.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Report")]
pub struct ReportArgs {
    /// Write a report and exit instead of showing the dashboard (also when standard output is
    /// not a terminal, when TERM=dumb, and with any option only a report has).
    #[arg(long)]
    pub headless: bool,
    /// Report format (implies --headless) [default: text].
    #[arg(long, value_parser = choice::<Format>())]
    pub format: Option<Format>,
    /// Write the report here instead of standard output (an existing file needs --force).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the files this command writes (--record, -o) if they exist.
    #[arg(long)]
    pub force: bool,
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
#[command(next_help_heading = "Gap rule")]
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
#[command(next_help_heading = "Memory")]
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
    /// With --fail-on-regression: pass when the figures cannot be judged (fewer than 3
    /// complete proofs a side: no interval), judging only new flagged gaps. Without it, a gate
    /// that cannot judge fails (status 1) and says why.
    #[arg(long, requires = "fail_on_regression")]
    pub allow_unjudged: bool,
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

/// `export --forget-after`'s default, seconds (20 minutes: above the alerts' longest `for:`,
/// 10 minutes; a test compares them).
pub const FORGET_AFTER_DEFAULT: &str = "1200";

/// Options of `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Address to serve /metrics on: for other hosts, a private interface's address
    /// (docs/FLEET.md, "Run it with systemd", says how to expose it safely). `--listen` is
    /// the same option.
    #[arg(
        long = "web.listen-address",
        alias = "listen",
        value_name = "ADDR",
        default_value = "127.0.0.1:9464"
    )]
    pub listen: String,
    /// TLS and basic auth, in the exporter-toolkit's format (as node_exporter's
    /// --web.config.file): tls_server_config's cert_file and key_file, basic_auth_users with
    /// bcrypt hashes (docs/FLEET.md, "TLS and basic auth").
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Sockets to watch besides the provers found in the socket directories.
    pub sockets: Vec<PathBuf>,
    /// Look for provers in this directory instead of the default ones (repeatable).
    #[arg(long, value_name = "DIR")]
    pub socket_dir: Vec<PathBuf>,
    /// Look for new and gone provers this often.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_duration)]
    pub scan: Duration,
    /// Keep a gone worker's series (`proofscope_prover_up` at 0, its counters at their
    /// totals) this long, then remove them: longer than any alert's `for:` in
    /// deploy/prometheus, so that the alert on a dead prover fires before its series go.
    #[arg(long, value_name = "SECS", default_value = FORGET_AFTER_DEFAULT, value_parser = parse_duration)]
    pub forget_after: Duration,
    /// The `host` label of every series (default: this machine's host name).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Distinct circuit and phase names exported as they are; later ones are `other`
    /// (counted in proofscope_exporter_labels_capped_total).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_label_values: u64,
    /// Workers with series at most, running and stopped: past it, the series of the oldest
    /// stopped are removed before --forget-after (counted in
    /// proofscope_exporter_workers_evicted_total).
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_workers: u64,
    #[command(flatten)]
    pub gap: GapArgs,
    /// What each prover's model may hold, in MiB (its recent proofs, for the analysis).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub max_mib_per_prover: u64,
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Log lines at or above this level.
    #[arg(long = "log.level", value_name = "LEVEL", value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Log line format (the keys time, level and msg, as node_exporter's).
    #[arg(long = "log.format", value_name = "FORMAT", value_enum, default_value_t = LogFormat::Logfmt)]
    pub log_format: LogFormat,
}

/// `export --log.level`: mapped onto the exporter's levels in `commands/export.rs`, the one
/// place that names the exporter crate (an exhaustive match: a level added to either side
/// fails to compile until it is on both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// `export --log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Logfmt,
    Json,
}

impl MemoryArgs {
    pub fn retention(&self) -> Retention {
        Retention {
            max_proofs: self.max_proofs as usize,
            max_bytes: (self.max_mib as usize) << 20,
        }
    }
}

/// The command line as `proofscope` parses it: [`Cli`] with each subcommand's examples and
/// exit statuses after its options (the top level: a few of each, and every status).
pub fn command() -> clap::Command {
    let top = with_examples(&EXAMPLES.top, Exit::help(None));
    Cli::command()
        .max_term_width(MAX_HELP_WIDTH)
        .after_help(top)
        .mut_subcommands(|sub| {
            let name = sub.get_name().to_owned();
            let examples = EXAMPLES.of(&name);
            sub.after_help(with_examples(examples, Exit::help(Some(&name))))
        })
}

/// Help wraps to the terminal, but no wider than this: long lines read badly.
const MAX_HELP_WIDTH: usize = 110;

fn with_examples(examples: &[(&str, &str)], exits: String) -> String {
    let mut out = String::new();
    if !examples.is_empty() {
        out.push_str("Examples:\n");
        for (what, cmd) in examples {
            out.push_str(&format!("  # {what}\n  {cmd}\n"));
        }
        out.push('\n');
    }
    out + exits.trim_end()
}

/// Each subcommand's examples: what it shows, then the command.
struct Examples {
    top: [(&'static str, &'static str); 5],
    sub: &'static [(&'static str, &'static [(&'static str, &'static str)])],
}

impl Examples {
    fn of(&self, sub: &str) -> &'static [(&'static str, &'static str)] {
        self.sub
            .iter()
            .find(|(name, _)| *name == sub)
            .map_or(&[], |(_, e)| e)
    }
}

const EXAMPLES: Examples = Examples {
    top: [
        (
            "the built-in prover, its ghost flagged within seconds",
            "proofscope demo",
        ),
        (
            "a prover you cannot change, allocator and log in one view",
            "proofscope run -- ./my-prover --its-flags",
        ),
        ("the one prover running on this host", "proofscope attach"),
        (
            "a recording, every proof read, the last one shown",
            "proofscope replay recordings/h200-ghost-sync.psrec --from-end",
        ),
        (
            "a gate in CI: B slower than A by 5 % is a failure",
            "proofscope diff before.psrec after.psrec --fail-on-regression 5",
        ),
    ],
    sub: &[
        (
            "demo",
            &[
                (
                    "the release nobody timed, flagged and diagnosed",
                    "proofscope demo",
                ),
                (
                    "the fix: the vectors dropped on another thread",
                    "proofscope demo --dealloc async",
                ),
                (
                    "five proofs, then the report as JSON",
                    "proofscope demo --proofs 5 --format json -o demo.json",
                ),
                (
                    "a larger circuit on the GPU",
                    "proofscope demo --backend gpu --log-size 18 --srs synthetic",
                ),
            ],
        ),
        (
            "attach",
            &[
                (
                    "the one prover running, recorded from now on",
                    "proofscope attach --record c2.psrec",
                ),
                (
                    "a named socket, waiting for the prover to start",
                    "proofscope attach --wait 60 $XDG_RUNTIME_DIR/proofscope/prover-4242.sock",
                ),
                (
                    "ten minutes of a server, then the text report",
                    "proofscope attach --duration 600 -o report.txt",
                ),
            ],
        ),
        (
            "run",
            &[
                (
                    "a C2 prover, unmodified: its frees and its CUZK_TIMING phases joined",
                    "proofscope run -- ./c2",
                ),
                (
                    "a wrapper script, recorded: the prover it starts is followed",
                    "proofscope run --record c2.psrec --log c2.log -- ./start-prover.sh",
                ),
                (
                    "no dashboard: the prover's output here, the report in a file",
                    "proofscope run --headless -o c2.txt -- ./c2",
                ),
            ],
        ),
        (
            "list",
            &[
                ("the provers running here", "proofscope list"),
                (
                    "their sockets, for a script",
                    "proofscope list --json | jq -r '.[].path'",
                ),
            ],
        ),
        (
            "completions",
            &[
                (
                    "bash, for this user",
                    "proofscope completions bash > ~/.local/share/bash-completion/completions/proofscope",
                ),
                ("zsh", "proofscope completions zsh > ~/.zfunc/_proofscope"),
                (
                    "fish",
                    "proofscope completions fish > ~/.config/fish/completions/proofscope.fish",
                ),
            ],
        ),
        (
            "man",
            &[
                ("read it now", "proofscope man | man -l -"),
                (
                    "install a page per subcommand",
                    "proofscope man --dir ~/.local/share/man/man1",
                ),
            ],
        ),
        (
            "export",
            &[
                (
                    "every prover on this host, for Prometheus on this host",
                    "proofscope export",
                ),
                (
                    "scraped from the private network (firewalled to the Prometheus hosts)",
                    "proofscope export --web.listen-address 10.0.0.12:9464",
                ),
            ],
        ),
        (
            "diff",
            &[
                (
                    "what changed, phase by phase",
                    "proofscope diff before.psrec after.psrec",
                ),
                (
                    "a CI gate that ignores changes under 2 ms",
                    "proofscope diff before.psrec after.psrec --fail-on-regression 5 --min-change 2",
                ),
            ],
        ),
        (
            "import",
            &[
                (
                    "a cuzk log as a recording",
                    "proofscope import cuzk.log -o cuzk.psrec",
                ),
                (
                    "a log split over files, replacing an older import",
                    "proofscope import c2.log.1 c2.log -o c2.psrec --force",
                ),
            ],
        ),
        (
            "replay",
            &[
                (
                    "at ten times the speed",
                    "proofscope replay c2.psrec --speed 10",
                ),
                (
                    "a preload recording joined to the prover's stderr",
                    "proofscope replay c2.psrec --log c2.stderr",
                ),
                (
                    "the five slowest proofs, as text",
                    "proofscope replay c2.psrec --slowest 5 | less",
                ),
                (
                    "before and after, side by side",
                    "proofscope replay a.psrec --compare b.psrec",
                ),
            ],
        ),
    ],
};

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
/// MiB, fractions allowed (0.25 = 256 KiB), as bytes: at least 64 KiB, at most 16 TiB.
pub fn parse_mib_bytes(s: &str) -> Result<u64, String> {
    let v = finite(s)?;
    if (1.0 / 16.0..=16.0 * 1024.0 * 1024.0).contains(&v) {
        Ok((v * 1024.0 * 1024.0) as u64)
    } else {
        Err(format!("'{s}': from 0.0625 (64 KiB) to 16777216 (16 TiB)"))
    }
}

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
