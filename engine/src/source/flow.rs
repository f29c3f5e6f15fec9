//! The channel from a connection thread to its reader, bounded in bytes. Unbounded, a peer that
//! sends faster than the viewer applies — a live "prover" sending empty frames as fast as the
//! socket takes them — queued one warning a frame until the viewer held 3.9 GB after 20 s at
//! `--max-mib 32`. Bounded, the connection thread waits for room, the socket's own flow
//! control holds the peer back, and a real prover is not harmed: its probe never waits for a
//! subscriber (it drops a slow one's frames and counts them).

use super::SourceMsg;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// Bytes in flight at most (what a message holds decoded: about three times its frame): more
/// than the probe's own queue for a subscriber holds (16 MiB of frames,
/// `PROOFSCOPE_SUBSCRIBER_BYTES`), so that a viewer starved for a while is never the reason
/// frames are dropped — the probe's queue fills first, and counts what it drops. One message
/// always passes, whatever its size.
pub const IN_FLIGHT_BYTES: usize = 64 << 20;

/// How often a waiting sender looks for room (and at its stop flag).
const ROOM_POLL: Duration = Duration::from_millis(1);

pub fn channel() -> (FlowTx, FlowRx) {
    let (tx, rx) = mpsc::channel();
    let in_flight = Arc::new(AtomicUsize::new(0));
    (
        FlowTx {
            tx,
            in_flight: in_flight.clone(),
            stop: Arc::new(AtomicBool::new(false)),
        },
        FlowRx { rx, in_flight },
    )
}

#[derive(Debug, Clone)]
pub struct FlowTx {
    tx: Sender<(SourceMsg, usize)>,
    in_flight: Arc<AtomicUsize>,
    /// Set when the sender is to give up waiting for room (its connection is dropped).
    stop: Arc<AtomicBool>,
}

/// The receiving end is gone, or the sender was told to stop while it waited for room.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed;

impl FlowTx {
    /// This sender, giving up waiting for room once `stop` is set.
    pub fn stopped_by(&self, stop: Arc<AtomicBool>) -> FlowTx {
        FlowTx {
            stop,
            ..self.clone()
        }
    }

    /// Sends `msg` once there is room for it; `Err` when told to stop meanwhile or when
    /// nobody receives any more.
    pub fn send(&self, msg: SourceMsg) -> Result<(), Closed> {
        let cost = cost(&msg);
        loop {
            let now = self.in_flight.load(Ordering::Acquire);
            if now == 0 || now + cost <= IN_FLIGHT_BYTES {
                break;
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(Closed);
            }
            std::thread::sleep(ROOM_POLL);
        }
        self.in_flight.fetch_add(cost, Ordering::AcqRel);
        self.tx.send((msg, cost)).map_err(|_| Closed)
    }
}

#[derive(Debug)]
pub struct FlowRx {
    rx: Receiver<(SourceMsg, usize)>,
    in_flight: Arc<AtomicUsize>,
}

impl FlowRx {
    pub fn try_recv(&self) -> Option<SourceMsg> {
        self.rx.try_recv().ok().map(|m| self.taken(m))
    }

    pub fn recv_timeout(&self, wait: Duration) -> Result<SourceMsg, RecvTimeoutError> {
        self.rx.recv_timeout(wait).map(|m| self.taken(m))
    }

    fn taken(&self, (msg, cost): (SourceMsg, usize)) -> SourceMsg {
        self.in_flight.fetch_sub(cost, Ordering::AcqRel);
        msg
    }
}

/// What a message holds, about: a frame's bytes and its decoded events, a text's length.
fn cost(msg: &SourceMsg) -> usize {
    const OVERHEAD: usize = 64;
    OVERHEAD
        + match msg {
            SourceMsg::Frame { raw, events } => {
                raw.len() + std::mem::size_of_val(events.as_slice())
            }
            SourceMsg::BadFrames { why: s, .. } | SourceMsg::Notice(s) => s.len(),
            SourceMsg::Link(_) => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(n: usize) -> SourceMsg {
        SourceMsg::BadFrames {
            count: 1,
            why: "x".repeat(n),
        }
    }

    /// A sender that outpaces its reader waits once the bound is reached, and goes on as the
    /// reader takes; one message larger than the bound still passes alone.
    #[test]
    fn a_fast_sender_waits_for_its_reader() {
        let (tx, rx) = channel();
        let big = IN_FLIGHT_BYTES / 4;
        std::thread::scope(|s| {
            let sent = s.spawn(|| {
                for _ in 0..12 {
                    tx.send(bad(big)).unwrap();
                }
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                !sent.is_finished(),
                "12 quarters of the bound cannot all be in flight"
            );
            assert!(rx.in_flight.load(Ordering::Acquire) <= IN_FLIGHT_BYTES);
            let mut got = 0;
            while got < 12 {
                if rx.recv_timeout(Duration::from_secs(5)).is_ok() {
                    got += 1;
                }
            }
        });
        assert_eq!(rx.in_flight.load(Ordering::Acquire), 0);
        tx.send(bad(2 * IN_FLIGHT_BYTES)).unwrap();
        assert!(
            rx.try_recv().is_some(),
            "a message over the bound passes alone"
        );
    }

    /// A sender waiting for room stops when told to.
    #[test]
    fn a_waiting_sender_stops_when_told() {
        let (tx, _rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let tx = tx.stopped_by(stop.clone());
        tx.send(bad(IN_FLIGHT_BYTES)).unwrap();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(tx.send(bad(10)), Err(Closed));
    }
}
