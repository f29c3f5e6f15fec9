//! A prover the viewer started as its child (the demo), on a private socket in a private
//! directory; quitting the viewer stops it. Knows nothing of which prover it runs.

use anyhow::{Context, Result};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct ChildProver {
    child: Option<Child>,
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl ChildProver {
    /// Starts `program` with `args` followed by `--socket <private socket>`; its output goes
    /// to a log file beside the socket.
    pub fn start(program: &Path, args: &[OsString]) -> Result<ChildProver> {
        let base = probe_protocol::discovery::default_socket_dir();
        prune(&base);
        let dir = base.join(format!("demo-{}", std::process::id()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let socket = dir.join("prover.sock");
        let log = dir.join("prover.log");
        let mut cmd = Command::new(program);
        cmd.args(args).arg("--socket").arg(&socket);
        let logf =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        Ok(ChildProver {
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

    /// The last line of its log that says what went wrong (`error: …`), else its last line:
    /// what a user needs when it exited early, without opening the log.
    pub fn last_words(&self) -> Option<String> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        let lines: Vec<&str> = log
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let pick = lines
            .iter()
            .rev()
            .find(|l| l.starts_with("error") || l.contains("Error"))
            .or(lines.last())?;
        Some(pick.chars().take(300).collect())
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

impl Drop for ChildProver {
    fn drop(&mut self) {
        self.stop();
    }
}
