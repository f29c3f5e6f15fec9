//! `proofscope run [OPTIONS] -- CMD [ARGS…]`: an unmodified prover watched from its first
//! instant. The viewer starts a relay process ([`relay`]), which starts the prover with the
//! allocator probe preloaded (`LD_PRELOAD`, the user's own preloads kept after it) and a
//! socket path of the viewer's choosing, so nothing races its start; a prover that links the
//! probe itself serves on that socket as it would anyway. Its output passes through the relay
//! unchanged; its log lines become the session's proofs and phases ([`source`]).

mod absence;
pub mod channel;
mod descendants;
mod reader;
pub mod relay;
pub mod source;
mod stamps;

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The allocator probe's file name.
pub const PRELOAD_LIB: &str = "libproofscope_preload.so";

/// Where the allocator probe is: `--preload PATH`, else beside the `proofscope` binary, else in
/// the install prefix's `lib/` (`bin/../lib`).
pub fn find_preload(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        if p.is_file() {
            return Ok(p.canonicalize().unwrap_or_else(|_| p.to_owned()));
        }
        bail!("--preload {}: no such file", p.display());
    }
    let exe = std::env::current_exe().context("locating the proofscope binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join(PRELOAD_LIB),
        dir.join("..").join("lib").join(PRELOAD_LIB),
        // `cargo test` runs test binaries from deps/: the library is one level up.
        dir.join("..").join(PRELOAD_LIB),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(c.canonicalize().unwrap_or_else(|_| c.clone()));
        }
    }
    bail!(
        "no {PRELOAD_LIB} beside {} or in {}: build it (`cargo build --release -p proofscope-preload`) or name it with --preload PATH",
        dir.display(),
        dir.join("..").join("lib").display()
    )
}

/// The run's private directory (its socket and, for the dashboard, the prover's output).
fn run_dir() -> Result<PathBuf> {
    let base = probe_protocol::discovery::default_socket_dir();
    let dir = base.join(format!("run-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// How to start a run.
#[derive(Debug)]
pub struct RunPlan {
    pub cmd: Vec<OsString>,
    pub preload: PathBuf,
    /// Where the prover's output goes; `None`: the viewer's own stdout and stderr.
    pub log: Option<PathBuf>,
    pub record: Option<PathBuf>,
    /// Where `r` records.
    pub record_dir: PathBuf,
    /// `--capture-dir`: the black box of the followed prover.
    pub blackbox: Option<crate::capture::BlackBox>,
}

/// The child's `LD_PRELOAD`: the probe first, the user's own after it.
fn ld_preload(preload: &Path) -> String {
    match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.trim().is_empty() => format!("{} {old}", preload.display()),
        _ => preload.display().to_string(),
    }
}

/// Starts the relay (which starts the prover); what the source needs to follow them.
pub fn launch(plan: RunPlan) -> Result<source::Launch> {
    let dir = run_dir()?;
    // Each process of the prover that inherits the preload gets a socket of its own; the
    // run follows the one it started (`prover-<pid>.sock`, once the relay says the pid).
    let socket = dir.join("prover-{pid}.sock");
    let (viewer_end, relay_end) = UnixDatagram::pair().context("a channel for the relay")?;
    // The relay inherits its end: not closed on exec.
    // SAFETY: fcntl on a descriptor this process owns, clearing only FD_CLOEXEC.
    unsafe { libc::fcntl(relay_end.as_raw_fd(), libc::F_SETFD, 0) };
    let exe = std::env::current_exe().context("locating the proofscope binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("__relay")
        .arg("--channel-fd")
        .arg(relay_end.as_raw_fd().to_string())
        .arg("--env")
        .arg(format!("LD_PRELOAD={}", ld_preload(&plan.preload)))
        .arg("--env")
        .arg(format!("PROOFSCOPE_SOCKET={}", socket.display()))
        .arg("--")
        .args(&plan.cmd)
        // The relay itself is not probed.
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::inherit());
    match &plan.log {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            cmd.stdout(f.try_clone()?).stderr(f);
        }
        None => {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        }
    }
    let relay = cmd.spawn().context("starting the relay")?;
    drop(relay_end);
    Ok(source::Launch {
        relay,
        channel: viewer_end,
        socket,
        cmd: plan
            .cmd
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect(),
        log: plan.log,
        record: plan.record,
        record_dir: plan.record_dir,
        blackbox: plan.blackbox,
    })
}
