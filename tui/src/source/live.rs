//! The live source: a named thread connects to the prover's socket, subscribes with history,
//! and forwards frames. When the prover goes away it says so and reconnects with a capped
//! backoff (100 ms doubling to 5 s — `min`, not `max`); an incompatible protocol version is a
//! clear, final error.

use super::SourceMsg;
use crate::model::LinkState;
use probe_protocol::{
    DecodeError, Event, FrameReader, ReadError, ReadErrorKind, Subscribe, encode_frame,
};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Next wait after `d`: doubled, never above the cap.
pub fn next_backoff(d: Duration) -> Duration {
    (d * 2).min(BACKOFF_MAX)
}

/// A running live source; dropping it stops the thread.
#[derive(Debug)]
pub struct Live {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

enum Outcome {
    /// The stream ended (prover exit or network error): retry. `true` when the session had
    /// got going (the backoff then starts over).
    Lost(String, bool),
    /// Do not retry.
    Fatal(String),
    Stopped,
}

fn session(path: &PathBuf, tx: &Sender<SourceMsg>, stop: &AtomicBool) -> Outcome {
    let mut stream = match UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::Lost(format!("cannot connect to {}: {e}", path.display()), false);
        }
    };
    let hello = Event::Subscribe(Subscribe {
        history: true,
        client: format!("proofscope {}", env!("CARGO_PKG_VERSION")),
    });
    let sub = match encode_frame(0, &[hello]) {
        Ok(f) => f,
        Err(e) => return Outcome::Fatal(e.to_string()),
    };
    if let Err(e) = stream.write_all(&sub) {
        return Outcome::Lost(format!("subscribe failed: {e}"), false);
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = tx.send(SourceMsg::Link(LinkState::Live(path.display().to_string())));
    let mut frames = FrameReader::new(stream);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Outcome::Stopped;
        }
        let raw = match frames.next_raw() {
            Ok(Some(raw)) => raw,
            Ok(None) => return Outcome::Lost("the prover closed the connection".into(), true),
            Err(e) if e.error == ReadErrorKind::TimedOut => continue,
            Err(e) if e.is_fatal() => {
                return match e.error {
                    ReadErrorKind::Io(why) => Outcome::Lost(format!("read failed: {why}"), true),
                    _ => Outcome::Fatal(format!("corrupt stream at {e}")),
                };
            }
            Err(e) => {
                let _ = tx.send(SourceMsg::BadFrame(format!("frame at {e}")));
                continue;
            }
        };
        match raw.decode() {
            Ok(frame) => {
                let bye = frame
                    .events
                    .iter()
                    .any(|e| matches!(e, Event::Goodbye { .. }));
                if tx
                    .send(SourceMsg::Frame {
                        raw: raw.into_bytes(),
                        events: frame.events,
                    })
                    .is_err()
                {
                    return Outcome::Stopped;
                }
                if bye {
                    return Outcome::Lost("the prover said goodbye".into(), true);
                }
            }
            Err(ReadError {
                error: ReadErrorKind::Decode(e @ DecodeError::IncompatibleVersion { .. }),
                ..
            }) => {
                return Outcome::Fatal(e.to_string());
            }
            Err(e) => {
                let _ = tx.send(SourceMsg::BadFrame(format!("frame at {e}")));
            }
        }
    }
}

/// Starts following the prover at `path`.
pub fn start(path: PathBuf, tx: Sender<SourceMsg>) -> std::io::Result<Live> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name("proofscope-live".into())
        .spawn(move || {
            let mut wait = BACKOFF_START;
            let _ = tx.send(SourceMsg::Link(LinkState::Connecting(
                path.display().to_string(),
            )));
            loop {
                match session(&path, &tx, &s2) {
                    Outcome::Stopped => return,
                    Outcome::Fatal(why) => {
                        let _ = tx.send(SourceMsg::Link(LinkState::Failed(why)));
                        return;
                    }
                    Outcome::Lost(why, was_live) => {
                        if was_live {
                            wait = BACKOFF_START;
                        }
                        if tx
                            .send(SourceMsg::Link(LinkState::Disconnected(why)))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
                // Sleep in small steps so a stop is noticed quickly.
                let mut slept = Duration::ZERO;
                while slept < wait {
                    if s2.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    slept += Duration::from_millis(50);
                }
                wait = next_backoff(wait);
            }
        })?;
    Ok(Live {
        stop,
        thread: Some(thread),
    })
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
}
