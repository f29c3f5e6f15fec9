//! Finding running provers: sockets in the per-user directories the probe uses.

use std::path::PathBuf;

/// A prover socket found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// Parsed from `<prover>-<pid>.sock`.
    pub prover: String,
    pub pid: Option<u32>,
    /// Something accepted a connection on it.
    pub alive: bool,
}

/// Directories searched: `$XDG_RUNTIME_DIR/proofscope` and `/tmp/proofscope-<uid>`.
pub fn dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        v.push(PathBuf::from(d).join("proofscope"));
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    v.push(PathBuf::from(format!("/tmp/proofscope-{uid}")));
    v
}

/// Every socket in the search directories, live ones first.
pub fn find() -> Vec<Found> {
    let mut out = Vec::new();
    for dir in dirs() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some("sock") {
                continue;
            }
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("")
                .to_owned();
            let (prover, pid) = match stem.rsplit_once('-') {
                Some((p, pid)) => (p.to_owned(), pid.parse().ok()),
                None => (stem.clone(), None),
            };
            let alive = std::os::unix::net::UnixStream::connect(&path).is_ok();
            out.push(Found {
                path,
                prover,
                pid,
                alive,
            });
        }
    }
    out.sort_by_key(|f| (!f.alive, f.path.clone()));
    out.dedup_by(|a, b| a.path == b.path);
    out
}
