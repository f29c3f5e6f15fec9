//! Where provers listen, and how a viewer finds them: the one definition both sides use.
//!
//! A prover that does not name its socket listens on `<dir>/<prover>-<pid>.sock`, where `<dir>`
//! is `$XDG_RUNTIME_DIR/proofscope` when that variable is set and not empty, else
//! `/tmp/proofscope-<uid>`. Viewers search both directories. A socket file whose listener is
//! gone (connecting is refused) is *stale*: whoever finds one may remove it.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// File extension of prover sockets.
pub const SOCKET_EXTENSION: &str = "sock";

/// Subdirectory of `$XDG_RUNTIME_DIR` that holds prover sockets.
const RUNTIME_SUBDIR: &str = "proofscope";

fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

fn runtime_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(RUNTIME_SUBDIR))
}

fn tmp_dir() -> PathBuf {
    PathBuf::from(format!("/tmp/proofscope-{}", uid()))
}

/// The directory a prover's default socket goes in.
pub fn default_socket_dir() -> PathBuf {
    runtime_dir().unwrap_or_else(tmp_dir)
}

/// Every directory a viewer searches, the default one first.
pub fn socket_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = runtime_dir().into_iter().collect();
    v.push(tmp_dir());
    v
}

/// `prover` as it appears in a socket file name: characters other than ASCII letters, digits,
/// `.`, `_` and `-` become `_`, so a name can never leave the directory; never empty.
pub fn sanitize_prover_name(prover: &str) -> String {
    let s: String = prover
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.as_str() {
        "" | "." | ".." => "prover".into(),
        _ => s,
    }
}

/// `<prover>-<pid>.sock`.
pub fn socket_file_name(prover: &str, pid: u32) -> String {
    format!("{}-{pid}.{SOCKET_EXTENSION}", sanitize_prover_name(prover))
}

/// Where a prover with this name and pid listens by default.
pub fn default_socket_path(prover: &str, pid: u32) -> PathBuf {
    default_socket_dir().join(socket_file_name(prover, pid))
}

/// The prover name and pid a socket's file name says (`None` when it is not a `.sock` file).
pub fn parse_socket_name(path: &Path) -> Option<(String, Option<u32>)> {
    if path.extension().and_then(|x| x.to_str()) != Some(SOCKET_EXTENSION) {
        return None;
    }
    let stem = path.file_stem()?.to_str()?;
    Some(match stem.rsplit_once('-') {
        Some((p, pid)) if pid.parse::<u32>().is_ok() => (p.to_owned(), pid.parse().ok()),
        _ => (stem.to_owned(), None),
    })
}

/// What is at a socket path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketState {
    /// Nothing there.
    Missing,
    /// A socket something accepts connections on.
    Live,
    /// A socket file nobody listens on (its prover died without removing it).
    Stale,
    /// A file that is not a socket: never touched.
    NotASocket,
}

/// Looks at `path`. Liveness is tested by connecting; a listener sees a client that closes
/// at once, and must not treat it as an error.
pub fn socket_state(path: &Path) -> SocketState {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return SocketState::Missing;
    };
    if !meta.file_type().is_socket() {
        return SocketState::NotASocket;
    }
    match UnixStream::connect(path) {
        Ok(_) => SocketState::Live,
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => SocketState::Stale,
        // Permission denied, too many files, …: something may be there; leave it.
        Err(_) => SocketState::Live,
    }
}

/// A socket file younger than this is not removed as stale: its prover may have bound it and
/// not listen yet. A scan woken by the socket's creation (the exporter's inotify) found every
/// new socket in that instant and removed it, its prover then unreachable for good.
pub const STALE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Removes `path` if it is a stale socket older than [`STALE_GRACE`]; returns whether it did.
pub fn remove_if_stale(path: &Path) -> bool {
    remove_if_stale_after(path, STALE_GRACE)
}

fn remove_if_stale_after(path: &Path, grace: std::time::Duration) -> bool {
    socket_state(path) == SocketState::Stale
        && older_than(path, grace)
        && std::fs::remove_file(path).is_ok()
}

/// Whether the file at `path` was last changed at least `grace` ago (a clock that cannot
/// say: not old).
fn older_than(path: &Path, grace: std::time::Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= grace)
}

/// A prover socket found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// Parsed from `<prover>-<pid>.sock`.
    pub prover: String,
    pub pid: Option<u32>,
    /// Something accepted a connection on it.
    pub alive: bool,
    /// It was stale and has been removed.
    pub removed: bool,
}

/// A directory or socket file passed over because another user could have put it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    /// Why, in a sentence: who owns it, or what its mode lets others do.
    pub why: String,
}

/// What a search found: the sockets it may follow, and what it refused.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub found: Vec<Found>,
    pub refused: Vec<Refused>,
}

/// Whether `path` may be trusted as this user's: owned by this uid, and for a directory not
/// writable by group or others (who could plant or swap a socket in it). Another user who made
/// `/tmp/proofscope-<uid>` first (mode 777) could otherwise serve a fake prover there, and a
/// viewer would report its proofs as the user's own — the prover itself refuses such a
/// directory, and so does the viewer.
pub fn check_owner(path: &Path, dir: bool) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if meta.uid() != uid() {
        return Err(format!(
            "owned by uid {}, not by you (uid {}): another user may have made it; remove it, or set XDG_RUNTIME_DIR",
            meta.uid(),
            uid()
        ));
    }
    if !dir {
        return Ok(());
    }
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "mode {:o} lets other users write into it; chmod 700 it",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// Every socket in the search directories, live ones first. Stale sockets are removed (and
/// returned with `removed` set, so a listing can say so).
pub fn find() -> Vec<Found> {
    find_in(&socket_dirs())
}

/// [`find`] in the directories `dirs` instead of the default ones.
pub fn find_in(dirs: &[PathBuf]) -> Vec<Found> {
    scan(dirs).found
}

/// [`find_in`], with what it refused: a directory or socket another user owns or can write
/// ([`check_owner`]) is never followed.
pub fn scan(dirs: &[PathBuf]) -> Scan {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        if let Err(why) = check_owner(dir, true) {
            refused.push(Refused {
                path: dir.clone(),
                why,
            });
            continue;
        }
        for e in rd.flatten() {
            let path = e.path();
            let Some((prover, pid)) = parse_socket_name(&path) else {
                continue;
            };
            if let Err(why) = check_owner(&path, false) {
                refused.push(Refused { path, why });
                continue;
            }
            let state = socket_state(&path);
            if state == SocketState::NotASocket || state == SocketState::Missing {
                continue;
            }
            let removed = state == SocketState::Stale
                && older_than(&path, STALE_GRACE)
                && std::fs::remove_file(&path).is_ok();
            out.push(Found {
                path,
                prover,
                pid,
                alive: state == SocketState::Live,
                removed,
            });
        }
    }
    // Live first, then by prover and pid as numbers (as strings, pid 10 came before 9).
    out.sort_by(|a, b| {
        (!a.alive, &a.prover, a.pid, &a.path).cmp(&(!b.alive, &b.prover, b.pid, &b.path))
    });
    out.dedup_by(|a, b| a.path == b.path);
    Scan {
        found: out,
        refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_stay_inside_the_directory() {
        let name = socket_file_name("c2-prover", 42);
        assert_eq!(name, "c2-prover-42.sock");
        assert_eq!(
            parse_socket_name(Path::new(&name)),
            Some(("c2-prover".into(), Some(42)))
        );
        assert_eq!(socket_file_name("../../etc/x y", 7), ".._.._etc_x_y-7.sock");
        assert_eq!(socket_file_name("..", 7), "prover-7.sock");
        assert_eq!(parse_socket_name(Path::new("x.txt")), None);
        assert_eq!(
            parse_socket_name(Path::new("prover.sock")),
            Some(("prover".into(), None))
        );
    }

    #[test]
    fn a_socket_without_listener_is_stale_and_removed() {
        let dir = std::env::temp_dir().join(format!("ps-disc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p-1.sock");
        let _ = std::fs::remove_file(&path);
        assert_eq!(socket_state(&path), SocketState::Missing);
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(socket_state(&path), SocketState::Live);
        assert!(!remove_if_stale(&path));
        drop(l); // the file stays: nobody listens now
        assert_eq!(socket_state(&path), SocketState::Stale);
        // Just made: perhaps its prover is about to listen.
        assert!(!remove_if_stale(&path));
        assert!(remove_if_stale_after(&path, std::time::Duration::ZERO));
        assert_eq!(socket_state(&path), SocketState::Missing);
        std::fs::write(&path, b"not a socket").unwrap();
        assert_eq!(socket_state(&path), SocketState::NotASocket);
        assert!(!remove_if_stale(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
