//! `proofscope demo`: the built-in prover as a child process (this very binary, run as
//! `proofscope prover serve …`) on a private socket; quitting stops it.

use anyhow::{Context, Result};
use prover_core::cli::ProverArgs;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Demo {
    child: Option<Child>,
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl Demo {
    /// Starts the prover. `proofs`: stop it after that many (headless runs).
    pub fn start(args: &ProverArgs, pause_ms: u64, proofs: Option<u64>) -> Result<Demo> {
        let base = prover_core::probe::default_socket_dir();
        prune(&base);
        let dir = base.join(format!("demo-{}", std::process::id()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let socket = dir.join("prover.sock");
        let log = dir.join("prover.log");
        let exe = std::env::current_exe().context("locating the proofscope binary")?;
        let mut cmd = Command::new(exe);
        cmd.arg("prover").arg("serve").arg("--socket").arg(&socket);
        cmd.args(args.to_args());
        if pause_ms > 0 {
            cmd.arg("--pause-ms").arg(pause_ms.to_string());
        }
        if let Some(n) = proofs {
            cmd.arg("--proofs").arg(n.to_string());
        }
        let logf =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf);
        let child = cmd.spawn().context("starting the demo prover")?;
        Ok(Demo {
            child: Some(child),
            dir,
            socket,
            log,
        })
    }

    /// Whether the prover is still running (its exit status otherwise).
    pub fn status(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Stops the prover: SIGTERM (it says goodbye and removes its socket), then SIGKILL after 3 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            // SAFETY: kill with a pid we own; failure (already gone) is harmless.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
        }
        let _ = child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Removes the directories (and logs) of earlier demos whose viewer is gone.
fn prune(base: &std::path::Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("demo-")
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop();
    }
}
