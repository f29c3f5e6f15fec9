//! Wakes the fleet's scan as soon as a socket appears in (or leaves) a socket directory,
//! instead of at the next of its periodic scans: a prover that lived 2 s fell between two
//! scans 2 s apart and was never seen. The periodic scan stays (a directory that cannot be
//! watched, one that does not exist yet, a socket given by path), and inotify's failure only
//! brings back the wait of old.

use inotify::{Inotify, WatchMask};
use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

pub struct Wake {
    inotify: Option<Inotify>,
    dirs: Vec<PathBuf>,
    watched: HashSet<PathBuf>,
}

impl Wake {
    pub fn new(dirs: &[PathBuf]) -> Wake {
        Wake {
            inotify: Inotify::init().ok(),
            dirs: dirs.to_vec(),
            watched: HashSet::new(),
        }
    }

    /// Waits up to `most`, less if a socket directory changed; whether one did.
    pub fn wait(&mut self, most: Duration) -> bool {
        self.watch_new_dirs();
        let Some(inotify) = &mut self.inotify else {
            std::thread::sleep(most);
            return false;
        };
        let mut fd = libc::pollfd {
            fd: inotify.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(most.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for the inotify fd this struct owns, for the duration of
        // the call.
        let ready = unsafe { libc::poll(&mut fd, 1, ms) };
        if ready <= 0 {
            return false;
        }
        // Drain what arrived: which name changed does not matter, the scan looks at all.
        let mut buf = [0u8; 4096];
        while let Ok(events) = inotify.read_events(&mut buf) {
            if events.count() == 0 {
                break;
            }
        }
        true
    }

    /// Watches the directories that exist now and were not watched yet (a prover's first
    /// socket makes its directory).
    fn watch_new_dirs(&mut self) {
        let Some(inotify) = &self.inotify else { return };
        for d in &self.dirs {
            if self.watched.contains(d) || !d.is_dir() {
                continue;
            }
            let mask = WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::DELETE;
            if inotify.watches().add(d, mask).is_ok() {
                self.watched.insert(d.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A file made in a watched directory ends the wait at once; nothing, and the wait is
    /// the whole of it.
    #[test]
    fn a_new_entry_in_a_socket_directory_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wake::new(&[dir.path().to_owned()]);
        let t = Instant::now();
        assert!(!w.wait(Duration::from_millis(50)));
        assert!(t.elapsed() >= Duration::from_millis(50));
        let path = dir.path().join("prover-1.sock");
        let maker = std::thread::Builder::new()
            .name("maker".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::write(path, b"").unwrap();
            })
            .unwrap();
        let t = Instant::now();
        assert!(w.wait(Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        maker.join().unwrap();
    }
}
