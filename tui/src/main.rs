//! `proofscope`: see `proofscope --help` and docs/CLI.md.

use anyhow::{Context, Result, bail};
use clap::FromArgMatches;
use probe_protocol::discovery as discover;
use proofscope::app::{self, App, RunOpts, Until};
use proofscope::cli::{Cli, Command, LiveArgs, MemoryArgs, ReportArgs};
use proofscope::exit::Exit;
use proofscope_engine::model::Retention;
use proofscope_engine::report::{self, Format};
use proofscope_engine::source::Target;
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
    match run(cli) {
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

fn socket_dirs() -> String {
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

/// A mistake in how the viewer was called: reported like clap's own, with exit status 2.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

fn run_opts(report: &ReportArgs, memory: &MemoryArgs, live: Option<&LiveArgs>) -> Result<RunOpts> {
    let record = live.and_then(|l| l.record.clone());
    if let (Some(r), Some(o)) = (&record, &report.output)
        && proofscope::same_file::same_file(r, o)
    {
        return Err(usage(format!(
            "--record and --output name the same file ({}): the report would replace the recording",
            r.display()
        )));
    }
    if report.force && record.is_none() && report.output.is_none() {
        return Err(usage(
            "--force replaces the files named by --record or -o, and neither was given",
        ));
    }
    for file in record.iter().chain(&report.output) {
        refuse_to_replace(file, report.force)?;
    }
    Ok(RunOpts {
        retention: memory.retention(),
        rule: report.gap.rule(),
        record,
        record_dir: live
            .and_then(|l| l.record_dir.clone())
            .unwrap_or_else(proofscope_engine::tap::record::default_record_dir),
        capture: live.and_then(|l| l.capture.opts()),
    })
}

/// The one overwrite rule: a file this command writes may replace another only with `--force`
/// (checked before anything starts, so a refusal loses nothing). `/dev/null`, a pipe or a
/// terminal is written to, not replaced.
fn refuse_to_replace(file: &std::path::Path, force: bool) -> Result<()> {
    if std::fs::metadata(file).is_ok_and(|m| m.is_file()) && !force {
        return Err(usage(format!(
            "{} exists; pass --force to replace it, or name another file",
            file.display()
        )));
    }
    Ok(())
}

fn list(json: bool) -> Result<Exit> {
    let discover::Scan { found, refused } = discover::scan(&discover::socket_dirs());
    let mut out = std::io::stdout().lock();
    let state = |f: &discover::Found| match (f.alive, f.removed) {
        (true, _) => "running",
        (false, true) => "stale, removed",
        (false, false) => "stale",
    };
    if json {
        let rows: Vec<_> = found
            .iter()
            .map(|f| {
                serde_json::json!({
                    "state": state(f),
                    "prover": f.prover,
                    "pid": f.pid,
                    "path": f.path.display().to_string(),
                    "command_line": f.pid.map(command_line).unwrap_or_default(),
                })
            })
            .chain(refused.iter().map(|r| {
                serde_json::json!({
                    "state": "refused",
                    "path": r.path.display().to_string(),
                    "why": r.why,
                })
            }))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(Exit::Ok);
    }
    if found.is_empty() {
        writeln!(out, "no prover sockets in {}", socket_dirs())?;
    }
    for r in &refused {
        writeln!(out, "{:<15} {}: {}", "refused", r.path.display(), r.why)?;
    }
    for f in &found {
        writeln!(
            out,
            "{:<15} {:<12} pid {:<8} {}",
            state(f),
            f.prover,
            f.pid.map_or("?".into(), |p| p.to_string()),
            f.path.display()
        )?;
        // Two provers of one name tell apart by how they were started.
        let cmd = f.pid.map(command_line).unwrap_or_default().join(" ");
        if f.alive && !cmd.is_empty() {
            let cut: String = cmd.chars().take(200).collect();
            let more = if cut.len() < cmd.len() { " …" } else { "" };
            writeln!(out, "{:<15} {cut}{more}", "")?;
        }
    }
    Ok(Exit::Ok)
}

/// A running process's command line, from `/proc` (empty when it is gone or not ours).
fn command_line(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `proofscope completions SHELL`: the script on stdout.
fn completions(shell: clap_complete::Shell) -> Result<Exit> {
    let mut cmd = proofscope::cli::command();
    // Into memory first: clap_complete panics on a write error (`… | head`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "proofscope", &mut script);
    std::io::stdout().write_all(&script)?;
    Ok(Exit::Ok)
}

/// `proofscope man [--dir DIR]`: the top page on stdout, or every page into DIR.
fn man(dir: Option<&std::path::Path>, force: bool) -> Result<Exit> {
    let cmd = proofscope::cli::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
        return Ok(Exit::Ok);
    };
    // Built as clap_mangen::generate_to builds it: subcommands named `proofscope-demo`.
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let pages: Vec<clap_mangen::Man> = std::iter::once(cmd.clone())
        .chain(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .map(clap_mangen::Man::new)
        .collect();
    for page in &pages {
        refuse_to_replace(&dir.join(page.get_filename()), force)?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for page in pages {
        let path = page
            .generate_to(dir)
            .with_context(|| format!("writing {}", dir.join(page.get_filename()).display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(Exit::Ok)
}

/// A recording (or log) replayed headless, for `diff` and `--compare`.
fn replayed(file: &std::path::Path, opts: &RunOpts) -> Result<App> {
    let mut app = App::replay(file.to_owned(), opts)
        .with_context(|| format!("reading {}", file.display()))?;
    app::run_headless(&mut app, Until::default());
    Ok(app)
}

/// `proofscope diff A B`: both recordings replayed headless, reported, compared.
fn diff(x: &proofscope::cli::DiffArgs) -> Result<Exit> {
    let opts = RunOpts {
        retention: x.memory.retention(),
        rule: x.gap.rule(),
        ..RunOpts::default()
    };
    let (a, b) = (
        replayed(&x.a, &opts)?.report(),
        replayed(&x.b, &opts)?.report(),
    );
    let d = proofscope_engine::diff::diff(&a, &b);
    let out = match x.format {
        proofscope::cli::DiffFormat::Text => proofscope_engine::diff::text(&d),
        proofscope::cli::DiffFormat::Json => proofscope_engine::diff::json(&d),
    };
    std::io::stdout().write_all(out.as_bytes())?;
    if x.fail_on_regression.is_some() && (d.proofs_a == 0 || d.proofs_b == 0) {
        // A gate that passes on nothing would wave through a prover that stopped proving.
        bail!(
            "--fail-on-regression: {} has no complete proof, so nothing can be judged",
            if d.proofs_b == 0 {
                x.b.display()
            } else {
                x.a.display()
            }
        );
    }
    let Some(pct) = x.fail_on_regression else {
        return Ok(Exit::Ok);
    };
    let worse = d.regressions(pct, x.min_change / 1e3);
    if !worse.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "regressions (over {pct}%, at least {} ms, interval above zero; or a new flagged gap):\n  {}",
            x.min_change,
            worse.join("\n  ")
        );
        return Ok(Exit::Regression);
    }
    if d.prove_s.interval.is_none() {
        let why = format!(
            "--fail-on-regression: {} and {} complete proofs, fewer than {} a side: no figure could be judged, only new flagged gaps (none)",
            d.proofs_a,
            d.proofs_b,
            proofscope_engine::diff::MIN_FOR_INTERVAL
        );
        if !x.allow_unjudged {
            // A CI gate that cannot judge must not pass as if it had.
            bail!("{why}; --allow-unjudged passes such a pair");
        }
        let _ = writeln!(std::io::stderr(), "warning: {why} (--allow-unjudged)");
    }
    Ok(Exit::Ok)
}

/// B's phase statistics for `replay A --compare B`, and `diff`'s verdicts on A → B: both
/// replayed headless, once.
fn comparison(
    a: &std::path::Path,
    b: &std::path::Path,
    opts: &RunOpts,
) -> Result<proofscope::view::Comparison> {
    let this = replayed(a, opts)?;
    let other = replayed(b, opts)?;
    Ok(proofscope::view::Comparison::new(
        b.display().to_string(),
        other.model(),
        &this.report(),
        &other.report(),
    ))
}

/// `proofscope import LOG... -o FILE`.
fn import(x: &proofscope::cli::ImportArgs) -> Result<Exit> {
    use proofscope_engine::import;
    refuse_to_replace(&x.output, x.force)?;
    if let Some(log) = x
        .logs
        .iter()
        .find(|l| proofscope::same_file::same_file(l, &x.output))
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

fn export(x: &proofscope::cli::ExportArgs) -> Result<Exit> {
    proofscope_export::run(proofscope_export::ExportOpts {
        listen: x.listen.clone(),
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
        capture: x.capture.opts(),
    })?;
    Ok(Exit::Ok)
}

/// What a headless run writes and how it exits.
struct Headless<'a> {
    /// A report instead of the dashboard ([`wants_report`]).
    headless: bool,
    report: &'a ReportArgs,
    live: Option<&'a LiveArgs>,
    /// `replay --proofs N`: report the first N proofs.
    first_proofs: Option<u64>,
}

/// How `proofscope` ends: with a status of its own, or with its prover's (`run`).
enum Ended {
    Exit(Exit),
    Child(u8),
}

impl From<Exit> for Ended {
    fn from(e: Exit) -> Ended {
        Ended::Exit(e)
    }
}

/// Whether to write a report instead of showing the dashboard: asked for (`--headless`, or an
/// option only a report has), or no terminal to show it on — standard output a pipe or a file
/// (`replay X | less`, a cron job), or `TERM=dumb`, which has no cursor addressing.
fn wants_report(report: &ReportArgs, live: Option<&LiveArgs>, first_proofs: Option<u64>) -> bool {
    use std::io::IsTerminal;
    report.headless
        || report.asks_for_report()
        || live.is_some_and(LiveArgs::asks_for_report)
        || first_proofs.is_some()
        || !std::io::stdout().is_terminal()
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

fn run(cli: Cli) -> Result<Ended> {
    match &cli.command {
        Command::List { json } => list(*json).map(Ended::from),
        Command::Completions { shell } => completions(*shell).map(Ended::from),
        Command::Man { dir, force } => man(dir.as_deref(), *force).map(Ended::from),
        Command::Diff(x) => diff(x).map(Ended::from),
        Command::Import(x) => import(x).map(Ended::from),
        Command::Export(x) => export(x).map(Ended::from),
        Command::Run(x) => run_prover(x),
        Command::Attach {
            socket,
            wait,
            live,
            report,
            memory,
        } => {
            let opts = run_opts(report, memory, Some(live))?;
            let target = attach_target(socket.as_deref(), *wait)?;
            let how = Headless {
                headless: wants_report(report, Some(live), None),
                report,
                live: Some(live),
                first_proofs: None,
            };
            watch(App::live(target, &opts)?, &how)
        }
        Command::Replay {
            file,
            logs,
            compare,
            proofs,
            speed,
            from_end,
            report,
            memory,
        } => {
            let opts = run_opts(report, memory, None)?;
            if let Some(o) = &report.output
                && let Some(input) = std::iter::once(file)
                    .chain(logs)
                    .chain(compare)
                    .find(|i| proofscope::same_file::same_file(i, o))
            {
                return Err(usage(format!(
                    "{} is both an input and the report's output (-o {}): the report would replace it",
                    input.display(),
                    o.display()
                )));
            }
            let headless = wants_report(report, None, *proofs);
            if headless {
                // From here: the opening pass over a large file is interruptible too.
                proofscope_engine::signals::catch();
            }
            if headless && compare.is_some() {
                bail!(
                    "--compare is for the dashboard, and this run writes a report (no terminal, \
                     or an option only a report has): `proofscope diff A B` compares two reports"
                );
            }
            let mut app = App::replay_with_logs(file.clone(), logs, &opts)?;
            if let Some(b) = compare {
                app.view.compare = Some(comparison(file, b, &opts)?);
            }
            app.control(proofscope_engine::source::Control::Speed(*speed));
            if *from_end {
                app.apply(proofscope::input::Action::Last);
            }
            let how = Headless {
                headless,
                report,
                live: None,
                first_proofs: *proofs,
            };
            watch(app, &how)
        }
        #[cfg(feature = "demo")]
        Command::Demo {
            demo,
            live,
            report,
            memory,
        } => {
            let opts = run_opts(report, memory, Some(live))?;
            let headless = wants_report(report, Some(live), None);
            let stop_after = if headless {
                live.proofs.or(Some(3))
            } else {
                None
            };
            let child = proofscope::demo::start(demo, stop_after)?;
            let how = Headless {
                headless,
                report,
                live: Some(live),
                first_proofs: None,
            };
            watch(App::demo(child, &opts)?, &how)
        }
    }
}

/// `proofscope run -- CMD…`: the prover started with the allocator probe, watched.
/// `run --log` must not name the recording or the report: the prover's bytes would land in
/// the recording (its header lost), or the report would replace the log.
fn refuse_log_clash(
    log: Option<&std::path::Path>,
    record: Option<&std::path::Path>,
    output: Option<&std::path::Path>,
) -> Result<()> {
    let Some(log) = log else { return Ok(()) };
    for (flag, other, what) in [
        (
            "--record",
            record,
            "the prover's output would be written into the recording",
        ),
        (
            "--output",
            output,
            "the report would replace the prover's output",
        ),
    ] {
        if let Some(other) = other.filter(|o| proofscope::same_file::same_file(log, o)) {
            return Err(usage(format!(
                "--log and {flag} name the same file ({}): {what}",
                other.display()
            )));
        }
    }
    Ok(())
}

fn run_prover(x: &proofscope::cli::RunArgs) -> Result<Ended> {
    let opts = run_opts(&x.report, &x.memory, Some(&x.live))?;
    refuse_log_clash(
        x.log.as_deref(),
        opts.record.as_deref(),
        x.report.output.as_deref(),
    )?;
    let preload = proofscope_engine::run::find_preload(x.preload.as_deref())?;
    let headless = wants_report(&x.report, Some(&x.live), None);
    // The dashboard owns the terminal: the prover's output goes to a file then.
    let log = match (&x.log, headless) {
        (Some(l), _) => Some(l.clone()),
        (None, true) => None,
        (None, false) => Some(
            probe_protocol::discovery::default_socket_dir()
                .join(format!("run-{}", std::process::id()))
                .join("prover.log"),
        ),
    };
    let plan = proofscope_engine::run::RunPlan {
        cmd: x.cmd.clone(),
        preload,
        log,
        record: opts.record.clone(),
        record_dir: opts.record_dir.clone(),
        blackbox: opts.blackbox(),
    };
    let app = App::run(plan, &opts)?;
    let how = Headless {
        headless,
        report: &x.report,
        live: Some(&x.live),
        first_proofs: None,
    };
    watch(app, &how)
}

/// The dashboard, or a headless run and its report.
fn watch(mut app: App, how: &Headless<'_>) -> Result<Ended> {
    if !how.headless {
        app::run_tui_then(&mut app)?;
        return Ok(match app.session.child().and_then(|c| c.exit) {
            Some(code) => Ended::Child(code),
            None => Ended::Exit(Exit::Ok),
        });
    }
    let until = how.live.map_or(Until::default(), |l| Until {
        proofs: l.proofs,
        duration: l.duration,
    });
    let end = app::run_headless(&mut app, until);
    let worst = write_report(&app, how)?;
    let exit = exit_of(&end, how.report, worst);
    // A prover run's status is run's, unless the report itself failed a check.
    Ok(match (end.child_exit, exit) {
        (Some(code), Exit::Ok | Exit::Failure) => Ended::Child(code),
        (_, e) => Ended::Exit(e),
    })
}

/// Writes the report in its format; the worst gap's share (for `--fail-on-gap`).
fn write_report(app: &App, how: &Headless<'_>) -> Result<f64> {
    proofscope_engine::signals::exit_if_caught_during(
        "writing the report",
        how.report.output.as_deref(),
        || build_and_write_report(app, how),
    )
}

/// [`write_report`]'s work.
fn build_and_write_report(app: &App, how: &Headless<'_>) -> Result<f64> {
    let report = how.report;
    // The Chrome trace is written from the model; the report is built only when something
    // reads it (its per-proof tables are most of a long session's size again).
    let needs_report = report.format() != Format::Chrome || report.fail_on_gap.is_some();
    let rep = needs_report.then(|| {
        let mut r = app.report();
        if let Some(n) = how.first_proofs {
            r.keep_first(n as usize);
        }
        if let Some(n) = report.slowest {
            r.keep_slowest(n as usize);
        }
        r
    });
    let text = |r: &report::Report| {
        let worst = report.worst as usize;
        if report.full {
            report::text(r)
        } else if report.summary {
            report::text_at(r, report::Detail::Summary { worst })
        } else {
            report::text_that_fits(r, worst)
        }
    };
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        match report.format() {
            Format::Text => w.write_all(rep.as_ref().map(text).unwrap_or_default().as_bytes()),
            Format::Json => w.write_all(
                rep.as_ref()
                    .map(report::json)
                    .unwrap_or_default()
                    .as_bytes(),
            ),
            // Streamed: a trace of a long session is many times the model's size as text.
            Format::Chrome => {
                let mut b = std::io::BufWriter::new(w);
                report::write_chrome_trace(app.model(), &app.view.rule, &mut b)?;
                b.flush()
            }
        }
    };
    match &report.output {
        Some(path) => {
            let mut f = std::fs::File::create(path)
                .with_context(|| format!("writing {}", path.display()))?;
            write(&mut f).with_context(|| format!("writing {}", path.display()))?
        }
        None => write(&mut std::io::stdout().lock())?,
    }
    Ok(rep.map_or(0.0, |r| r.worst_gap_pct()))
}

/// The exit status of a headless run, saying why on stderr.
fn exit_of(end: &app::HeadlessEnd, report: &ReportArgs, worst_gap_pct: f64) -> Exit {
    let mut err = std::io::stderr();
    if let Some(why) = &end.captured_nothing {
        let _ = writeln!(err, "error: nothing captured: {why}");
        return Exit::Failure;
    }
    if let Some(why) = &end.failed {
        let _ = writeln!(err, "error: {why}");
        return Exit::Failure;
    }
    if let Some(why) = &end.failed_task {
        let _ = writeln!(err, "error: {why}");
        return Exit::Failure;
    }
    if let Some(sig) = end.interrupted {
        let _ = writeln!(
            err,
            "interrupted by {}: the report covers the file only up to where it was read",
            proofscope_engine::signals::name(sig)
        );
        return Exit::Failure;
    }
    if let Some(why) = &end.vanished {
        let _ = writeln!(err, "the prover vanished without a goodbye: {why}");
        return Exit::Vanished;
    }
    if let Some(pct) = report.fail_on_gap
        && worst_gap_pct > pct
    {
        let _ = writeln!(
            err,
            "a gap of {worst_gap_pct:.1}% exceeds --fail-on-gap {pct}%"
        );
        return Exit::GapOverLimit;
    }
    Exit::Ok
}
