//! The connection to a live prover: a named thread connects to the prover's socket,
//! subscribes with history, and forwards frames. When the prover goes away it says so and
//! reconnects with a capped backoff (100 ms doubling to 5 s — `min`, not `max`). Attached by
//! discovery, it also follows
//! a prover that replaces the lost one under a new pid (and so a new socket): the same prover
//! name and command line, or else the only prover running. An incompatible protocol version,
//! and a prover that refuses this viewer, are clear, final errors.

use super::LinkState;
use super::SourceMsg;
use super::flow::FlowTx;
use probe_protocol::discovery;
use probe_protocol::{
    DecodeError, Event, FrameReader, ReadError, ReadErrorKind, Subscribe, encode_frame,
};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Next wait after `d`: doubled, never above the cap.
pub fn next_backoff(d: Duration) -> Duration {
    (d * 2).min(BACKOFF_MAX)
}

/// Which prover to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This socket, and only it.
    Socket(PathBuf),
    /// This socket, found by discovery: when its prover is gone, the prover that replaced it.
    Discovered(PathBuf),
}

/// A running connection thread; dropping it stops the thread.
#[derive(Debug)]
pub struct Connection {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a prover says it is (from its `Hello`), to recognise it after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    prover: String,
    command_line: Vec<String>,
    pid: u32,
}

enum Outcome {
    /// The stream ended (prover exit or network error): retry. `true` when the session had
    /// got going (the backoff then starts over).
    Lost(String, bool),
    /// The prover said goodbye: retry quietly (it may be restarted).
    Finished(String),
    /// Do not retry.
    Fatal(String),
    Stopped,
}

/// Connects to `path` and subscribes (with the prover's history when `history`).
fn subscribe(path: &Path, history: bool) -> Result<FrameReader<UnixStream>, String> {
    let mut stream = UnixStream::connect(path)
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
    let subscribe = Event::Subscribe(Subscribe {
        history,
        client: format!("proofscope {}", env!("CARGO_PKG_VERSION")),
    });
    let sub = encode_frame(0, &[subscribe]).map_err(|e| e.to_string())?;
    stream
        .write_all(&sub)
        .map_err(|e| format!("subscribe failed: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    Ok(FrameReader::new(stream))
}

/// What the prover at `path` says it is: the `Hello` of a short look (no history).
fn identity_at(path: &Path) -> Option<Identity> {
    let mut frames = subscribe(path, false).ok()?;
    for _ in 0..10 {
        match frames.next_raw() {
            Ok(Some(raw)) => {
                return raw.decode().ok()?.events.into_iter().find_map(|e| match e {
                    Event::Hello(h) => Some(Identity {
                        prover: h.prover_name,
                        command_line: h.command_line,
                        pid: h.pid,
                    }),
                    _ => None,
                });
            }
            Err(e) if e.error == ReadErrorKind::TimedOut => {}
            _ => return None,
        }
    }
    None
}

/// A run of frames that did not decode: the first [`BadRun::ALONE`] said each alone, the
/// rest counted and said once per [`BadRun::EVERY`] and when the run ends — a peer sending
/// empty frames made one message of every four bytes (13.8 M in 20 s).
#[derive(Default)]
struct BadRun {
    /// Frames in this run so far.
    frames: u64,
    /// Of them, counted and not said yet, with the last one's reason.
    untold: u64,
    last: String,
}

impl BadRun {
    const ALONE: u64 = 5;
    const EVERY: u64 = 1 << 16;

    fn add(&mut self, why: String, tx: &FlowTx) {
        self.frames += 1;
        if self.frames <= Self::ALONE {
            let _ = tx.send(SourceMsg::BadFrames { count: 1, why });
            return;
        }
        self.untold += 1;
        self.last = why;
        if self.untold >= Self::EVERY {
            self.tell(tx);
        }
    }

    /// A frame decoded: the run is over.
    fn end(&mut self, tx: &FlowTx) {
        self.tell(tx);
        self.frames = 0;
    }

    fn tell(&mut self, tx: &FlowTx) {
        if self.untold == 0 {
            return;
        }
        let why = format!(
            "{} more frames did not decode (the last: {})",
            self.untold, self.last
        );
        let _ = tx.send(SourceMsg::BadFrames {
            count: self.untold,
            why,
        });
        self.untold = 0;
    }
}

fn session(path: &Path, tx: &FlowTx, stop: &AtomicBool, seen: &mut Option<Identity>) -> Outcome {
    let mut frames = match subscribe(path, true) {
        Ok(f) => f,
        Err(why) => return Outcome::Lost(why, false),
    };
    let mut first = true;
    let mut bad = BadRun::default();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Outcome::Stopped;
        }
        let raw = match frames.next_raw() {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                bad.end(tx);
                return Outcome::Lost("the prover closed the connection".into(), !first);
            }
            Err(e) if e.error == ReadErrorKind::TimedOut => continue,
            Err(e) if e.is_fatal() => {
                bad.end(tx);
                return match e.error {
                    ReadErrorKind::Io(why) => Outcome::Lost(format!("read failed: {why}"), !first),
                    _ => Outcome::Fatal(format!("corrupt stream at {e}")),
                };
            }
            Err(e) => {
                bad.add(format!("frame at {e}"), tx);
                continue;
            }
        };
        let frame = match raw.decode() {
            Ok(frame) => frame,
            Err(ReadError {
                error: ReadErrorKind::Decode(e @ DecodeError::IncompatibleVersion { .. }),
                ..
            }) => return Outcome::Fatal(e.to_string()),
            Err(e) => {
                bad.add(format!("frame at {e}"), tx);
                continue;
            }
        };
        bad.end(tx);
        let hello = frame.events.iter().find_map(|e| match e {
            Event::Hello(h) => Some(Identity {
                prover: h.prover_name.clone(),
                command_line: h.command_line.clone(),
                pid: h.pid,
            }),
            _ => None,
        });
        let bye = frame.events.iter().find_map(|e| match e {
            Event::Goodbye { reason, .. } => Some(reason.clone()),
            _ => None,
        });
        if first {
            first = false;
            // A server that refuses a client sends it a lone goodbye and closes.
            if let (None, Some(reason)) = (&hello, &bye) {
                return Outcome::Fatal(format!("the prover refused this viewer: {reason}"));
            }
            let _ = tx.send(SourceMsg::Link(LinkState::Live(path.display().to_string())));
        }
        if let Some(id) = hello {
            *seen = Some(id);
        }
        if tx
            .send(SourceMsg::Frame {
                raw: raw.into_bytes(),
                events: frame.events,
            })
            .is_err()
        {
            return Outcome::Stopped;
        }
        if let Some(reason) = bye {
            return Outcome::Finished(reason);
        }
    }
}

/// The socket of the prover that replaced `lost` (at `old`): another live socket whose prover
/// has the same name and command line (asked by connecting), else the only prover running.
fn replacement(old: &Path, lost: Option<&Identity>) -> Option<PathBuf> {
    let live: Vec<_> = discovery::find().into_iter().filter(|f| f.alive).collect();
    if let Some(lost) = lost {
        for f in live
            .iter()
            .filter(|f| f.path != old && f.prover == lost.prover)
        {
            if identity_at(&f.path)
                .is_some_and(|id| id.prover == lost.prover && id.command_line == lost.command_line)
            {
                return Some(f.path.clone());
            }
        }
    }
    match live.as_slice() {
        [only] => Some(only.path.clone()),
        _ => None,
    }
}

/// Starts following `target` on a thread of its own.
pub fn connect(target: Target, tx: FlowTx) -> std::io::Result<Connection> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name("proofscope-live".into())
        .spawn(move || follow(target, &tx.stopped_by(s2.clone()), &s2))?;
    Ok(Connection {
        stop,
        thread: Some(thread),
    })
}

fn follow(target: Target, tx: &FlowTx, stop: &AtomicBool) {
    let (mut path, discovered) = match target {
        Target::Socket(p) => (p, false),
        Target::Discovered(p) => (p, true),
    };
    let mut wait = BACKOFF_START;
    let mut seen: Option<Identity> = None;
    // The prover said goodbye and none has gone live since: failing to reconnect (its socket
    // is being removed) is not news, and must not replace "prover finished" with an error.
    let mut finished_last = false;
    let _ = tx.send(SourceMsg::Link(LinkState::Connecting(
        path.display().to_string(),
    )));
    loop {
        let before = seen.clone();
        let outcome = session(&path, tx, stop, &mut seen);
        let same_prover = before.is_some() && before == seen;
        let state = match outcome {
            Outcome::Stopped => return,
            Outcome::Fatal(why) => {
                let _ = tx.send(SourceMsg::Link(LinkState::Failed(why)));
                return;
            }
            Outcome::Finished(reason) => {
                // The same prover saying goodbye again and again (its socket stays open
                // after its goodbye, as no probe's does) is retried less and less often:
                // reset each time, 20 such sockets were reconnected to 6,211 times in 15 s,
                // each time replaying their history into the exporter (67 MiB). A new prover
                // on the socket (another pid) is followed at once.
                if !(finished_last && same_prover) {
                    wait = BACKOFF_START;
                }
                LinkState::Ended(format!("prover finished: {reason}"))
            }
            Outcome::Lost(why, was_live) => {
                if was_live {
                    wait = BACKOFF_START;
                    finished_last = false;
                }
                LinkState::Disconnected(why)
            }
        };
        let finished = matches!(state, LinkState::Ended(_));
        let quiet = finished_last && !finished;
        finished_last |= finished;
        // Report the loss once; a retry that finds nothing keeps the first message.
        if !quiet && tx.send(SourceMsg::Link(state)).is_err() {
            return;
        }
        loop {
            // Sleep in small steps so a stop is noticed quickly.
            let mut slept = Duration::ZERO;
            while slept < wait {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
                slept += Duration::from_millis(50);
            }
            wait = next_backoff(wait);
            if discovery::socket_state(&path) == discovery::SocketState::Live {
                break;
            }
            if !discovered {
                if !finished || path.exists() {
                    break;
                }
                continue;
            }
            let lost = seen.clone();
            if let Some(next) = replacement(&path, lost.as_ref())
                && next != path
            {
                let _ = tx.send(SourceMsg::Notice(format!(
                    "following the prover that replaced {}{}: {}",
                    lost.as_ref()
                        .map_or_else(String::new, |l| format!("{} ", l.prover)),
                    lost.as_ref()
                        .map_or_else(String::new, |l| format!("(pid {})", l.pid)),
                    next.display()
                )));
                path = next;
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let mut d = BACKOFF_START;
        let mut seen = vec![d];
        for _ in 0..10 {
            d = next_backoff(d);
            seen.push(d);
        }
        assert_eq!(seen[1], Duration::from_millis(200));
        assert_eq!(*seen.last().unwrap(), BACKOFF_MAX);
        assert!(seen.windows(2).all(|w| w[1] >= w[0] && w[1] <= BACKOFF_MAX));
    }

    /// A socket that says hello and goodbye to every viewer and stays open (no probe does
    /// this; a fake prover, or one stuck in its exit, can): the link retries it less and less
    /// often. With the backoff reset at each goodbye it was reconnected to about 10 times a
    /// second, each time replaying its history.
    #[test]
    fn a_prover_saying_goodbye_again_and_again_is_retried_less_and_less_often() {
        use std::io::Write;
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("again-4242.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let sessions = Arc::new(AtomicUsize::new(0));
        let counted = sessions.clone();
        std::thread::Builder::new()
            .name("goodbye-again".into())
            .spawn(move || {
                let hello = probe_protocol::Hello {
                    prover_name: "again".into(),
                    pid: 4242,
                    ..probe_protocol::Hello::default()
                };
                let events = [
                    Event::Hello(Box::new(hello)),
                    Event::Goodbye {
                        ts: 1,
                        reason: "done".into(),
                    },
                ];
                let frame = probe_protocol::encode_frame(0, &events).unwrap();
                let mut open = Vec::new();
                for mut s in listener.incoming().map_while(Result::ok) {
                    let mut sub = [0u8; 4];
                    // A liveness check connects and closes; a viewer subscribes.
                    if std::io::Read::read_exact(&mut s, &mut sub).is_ok()
                        && s.write_all(&frame).is_ok()
                    {
                        counted.fetch_add(1, Ordering::Relaxed);
                        open.push(s);
                    }
                }
            })
            .unwrap();
        let (tx, rx) = crate::source::flow::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let p2 = path.clone();
        let t = std::thread::Builder::new()
            .name("link-under-test".into())
            .spawn(move || follow(Target::Socket(p2), &tx, &stop2))
            .unwrap();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_secs(4) {
            let _ = rx.recv_timeout(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        let n = sessions.load(Ordering::Relaxed);
        // 100, 200, 400, 800, 1,600 ms: six sessions in 4 s, against ~35 when every goodbye
        // started the backoff over.
        assert!((2..=8).contains(&n), "{n} sessions in 4 s");
        drop(rx);
        t.join().unwrap();
    }
}
