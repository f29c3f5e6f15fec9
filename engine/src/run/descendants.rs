//! Which process of the run to follow next. Every process that inherits the preload serves on
//! a socket of its own in the run's private directory (`prover-<pid>.sock`); the run follows
//! the one it started, then the latest live one to appear after it (a wrapper script's prover,
//! a daemon's worker).
//!
//! "Latest" is by when a scan here first saw the socket, never by the socket's mtime: file
//! times come from the kernel's coarse clock (one tick, 4 ms at `HZ=250`), and a shell and the
//! prover it starts a few milliseconds later got the same mtime — the prover was then never
//! followed (1 run in 4 of `sh -c "date; prover; date"` here). Ties within one scan go to the
//! process started last (`/proc/<pid>/stat`), then to the higher pid.
//!
//! A socket is known by its pid, inode and mtime: a process that `exec`s keeps its pid, and
//! the new program's probe binds the path anew — a process of its own to follow (`sh -c "sleep
//! 1; exec prover"` was followed to `sleep` and never to the prover). The inode alone does not
//! tell: ext4 hands the one just freed to the next file (and the mtime alone, coarse, would
//! not tell a socket made within a clock tick of the one before).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The inode of a process's socket not bound yet.
const UNBOUND: u64 = u64::MAX;

/// A socket: its process's pid, the socket file's inode and its mtime (ns).
type Id = (u32, u64, i128);

/// The sockets of a run's processes, as scans saw them.
#[derive(Debug)]
pub struct Descendants {
    dir: PathBuf,
    /// The socket name's parts around the pid.
    head: String,
    tail: String,
    /// When a scan first saw each socket, and its process's start (clock ticks).
    seen: HashMap<Id, (Instant, u64)>,
    /// Sockets followed so far (never followed again).
    followed: HashSet<Id>,
    /// How long a socket must have been seen, its process alive, before it is followed: the
    /// short-lived processes of a script (`date`, `sed`) are gone by then.
    settle: Duration,
}

impl Descendants {
    /// For sockets named as `pattern`, `{pid}` standing for the process id; `None` when the
    /// pattern has no `{pid}` (there is then only the one process's socket).
    pub fn new(pattern: &Path, settle: Duration) -> Option<Descendants> {
        let dir = pattern.parent()?.to_owned();
        let name = pattern.file_name()?.to_str()?;
        let (head, tail) = name.split_once("{pid}")?;
        Some(Descendants {
            dir,
            head: head.to_owned(),
            tail: tail.to_owned(),
            seen: HashMap::new(),
            followed: HashSet::new(),
            settle,
        })
    }

    /// `pid`'s socket, as it is now, is followed (the process's, before it is there: the
    /// socket it opens first is then its own, followed already).
    pub fn follow(&mut self, pid: u32) {
        match self.sockets().into_iter().find(|&(p, _, _)| p == pid) {
            Some(id) => self.followed.insert(id),
            None => self.followed.insert((pid, UNBOUND, 0)),
        };
    }

    /// A socket of `pid` was followed before (the process `exec`ed another program since).
    pub fn followed_before(&self, pid: u32) -> bool {
        self.followed.iter().any(|&(p, _, _)| p == pid)
    }

    /// Looks at the directory; the process to follow next, if one has settled: alive, its
    /// socket not followed before, first seen at least the settle time ago, the latest so seen.
    pub fn scan(&mut self, now: Instant) -> Option<u32> {
        let present = self.sockets();
        // A process followed before its socket was there: this socket is the one followed.
        for &(p, ino, mtime) in &present {
            if self.followed.remove(&(p, UNBOUND, 0)) {
                self.followed.insert((p, ino, mtime));
            }
        }
        self.seen.retain(|id, _| present.contains(id));
        for &id in &present {
            if !self.followed.contains(&id) && !self.seen.contains_key(&id) {
                self.seen.insert(id, (now, start_ticks(id.0).unwrap_or(0)));
            }
        }
        self.seen
            .iter()
            .filter(|&(id, &(at, _))| {
                !self.followed.contains(id) && now.duration_since(at) >= self.settle && alive(id.0)
            })
            .max_by_key(|&(&(p, _, _), &(at, ticks))| (at, ticks, p))
            .map(|(&(p, _, _), _)| p)
    }

    /// The sockets in the directory now.
    fn sockets(&self) -> HashSet<Id> {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return HashSet::new();
        };
        entries
            .filter_map(|e| {
                let e = e.ok()?;
                let n = e.file_name().into_string().ok()?;
                let pid = n
                    .strip_prefix(&self.head)?
                    .strip_suffix(&self.tail)?
                    .parse()
                    .ok()?;
                let meta = e.metadata().ok()?;
                let mtime =
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
                Some((pid, meta.ino(), mtime))
            })
            .collect()
    }

    /// Removes the sockets of processes that are gone (a process that `exec`s or is killed
    /// leaves its socket), then the directory if nothing is left in it: a run leaves nothing
    /// behind but the sockets of processes still running.
    pub fn clean_up(&self) {
        for (p, _, _) in self.sockets() {
            if !alive(p) {
                let name = format!("{}{p}{}", self.head, self.tail);
                let _ = std::fs::remove_file(self.dir.join(name));
            }
        }
        // Fails, as it should, while a live process's socket is there.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `/proc/<pid>/stat`'s fields after the command (which may hold spaces and parentheses).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Whether the process runs (a zombie does not: it exited and waits to be reaped).
fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// The process's parent (`stat` field 4), while it runs.
pub fn parent(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(4 - 3)?.parse().ok()
}

/// When the process started, in clock ticks since boot (`stat` field 22).
fn start_ticks(pid: u32) -> Option<u64> {
    // Field 22 overall; the fields after the command start at field 3.
    stat_fields(pid)?.get(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").spawn().unwrap()
    }

    fn touch(dir: &Path, pid: u32) {
        std::fs::write(dir.join(format!("prover-{pid}.sock")), b"").unwrap();
    }

    fn kill(mut c: Child) {
        let _ = c.kill();
        let _ = c.wait();
    }

    #[test]
    fn a_process_seen_after_the_followed_one_is_followed_once_it_settles_whatever_the_mtimes() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = dir.path().join("prover-{pid}.sock");
        let (shell, prover) = (sleeper(), sleeper());
        let mut d = Descendants::new(&pattern, Duration::from_millis(500)).unwrap();
        let t0 = Instant::now();
        // Both sockets appear within one scan (the same coarse mtime, as a shell's and its
        // prover's did).
        touch(dir.path(), shell.id());
        d.follow(shell.id());
        touch(dir.path(), prover.id());
        assert_eq!(d.scan(t0), None, "not settled yet");
        assert_eq!(d.scan(t0 + Duration::from_millis(499)), None);
        assert_eq!(d.scan(t0 + Duration::from_millis(500)), Some(prover.id()));
        d.follow(prover.id());
        assert_eq!(
            d.scan(t0 + Duration::from_secs(5)),
            None,
            "never followed twice, never back to the shell"
        );
        kill(shell);
        kill(prover);
    }

    #[test]
    fn the_latest_live_process_is_chosen_and_a_dead_ones_socket_never() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = dir.path().join("prover-{pid}.sock");
        let mut d = Descendants::new(&pattern, Duration::from_millis(500)).unwrap();
        let (first, second) = (sleeper(), sleeper());
        let dead = {
            let mut c = Command::new("true").spawn().unwrap();
            c.wait().unwrap();
            c.id()
        };
        let t0 = Instant::now();
        touch(dir.path(), first.id());
        touch(dir.path(), dead);
        d.scan(t0);
        touch(dir.path(), second.id());
        d.scan(t0 + Duration::from_millis(250));
        assert_eq!(d.scan(t0 + Duration::from_secs(1)), Some(second.id()));
        let (first_id, second_id) = (first.id(), second.id());
        kill(second);
        assert_eq!(
            d.scan(t0 + Duration::from_secs(2)),
            Some(first_id),
            "the second is gone: the first is what runs"
        );
        kill(first);
        assert_eq!(d.scan(t0 + Duration::from_secs(3)), None, "{dead} is dead");
        // The sockets of processes that are gone go, and the directory with them.
        d.clean_up();
        assert!(!dir.path().exists(), "{second_id}'s and the rest removed");
    }

    #[test]
    fn a_process_that_execs_is_followed_again_once_its_new_program_binds_anew() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = dir.path().join("prover-{pid}.sock");
        let (shell, sleep) = (sleeper(), sleeper());
        let mut d = Descendants::new(&pattern, Duration::from_millis(500)).unwrap();
        let t0 = Instant::now();
        // Followed before its socket is there, as the run follows the process it started.
        d.follow(shell.id());
        touch(dir.path(), shell.id());
        touch(dir.path(), sleep.id());
        assert_eq!(d.scan(t0), None);
        assert_eq!(d.scan(t0 + Duration::from_secs(1)), Some(sleep.id()));
        d.follow(sleep.id());
        // The shell `exec`s the prover: the same pid, its socket made anew.
        let path = dir.path().join(format!("prover-{}.sock", shell.id()));
        std::fs::remove_file(&path).unwrap();
        // Past a tick of the coarse clock file times come from; the inode may well be the
        // one just freed.
        std::thread::sleep(Duration::from_millis(20));
        touch(dir.path(), shell.id());
        assert_eq!(d.scan(t0 + Duration::from_secs(2)), None, "not settled yet");
        assert_eq!(
            d.scan(t0 + Duration::from_secs(3)),
            Some(shell.id()),
            "the program the shell became"
        );
        kill(shell);
        kill(sleep);
    }

    #[test]
    fn clean_up_keeps_a_live_processs_socket_and_so_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = dir.path().join("prover-{pid}.sock");
        let d = Descendants::new(&pattern, Duration::ZERO).unwrap();
        let live = sleeper();
        touch(dir.path(), live.id());
        touch(dir.path(), u32::MAX - 1);
        d.clean_up();
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the live process's socket stays");
        kill(live);
    }

    #[test]
    fn a_process_parent_is_read_from_its_stat() {
        let me = std::process::id();
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        assert_eq!(parent(child.id()), Some(me));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(parent(u32::MAX - 1), None);
    }
}
