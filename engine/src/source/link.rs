//! A live prover as its readers see it: the connection thread's messages, with the link's
//! state — and since when it has been lost — kept up to date as they pass. The dashboard's live
//! source and the exporter's watchers both read a prover through it, so the socket, its
//! channel and its draining on close are written once.

use super::flow::{FlowRx, channel};
use super::socket::{self, Connection, Target};
use super::{LinkState, SourceMsg};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Link {
    rx: FlowRx,
    /// Dropped to disconnect.
    conn: Option<Connection>,
    state: LinkState,
    lost_since: Option<Instant>,
}

/// What waiting on a link gave.
#[derive(Debug)]
pub enum Next {
    Msg(SourceMsg),
    /// Nothing within the wait.
    Idle,
    /// The connection thread is gone and everything it sent was read.
    Closed,
}

impl Link {
    /// Connects in the background (the thread retries with backoff; see `socket`).
    pub fn connect(target: Target) -> std::io::Result<Link> {
        let (tx, rx) = channel();
        Ok(Link {
            rx,
            conn: Some(socket::connect(target, tx)?),
            state: LinkState::Idle,
            lost_since: None,
        })
    }

    /// Follows another prover from here on; returns what the old connection had delivered,
    /// for the caller to apply first.
    pub fn retarget(&mut self, target: Target) -> std::io::Result<Vec<SourceMsg>> {
        let old = self.try_iter();
        let (tx, rx) = channel();
        self.conn = Some(socket::connect(target, tx)?);
        self.rx = rx;
        self.state = LinkState::Idle;
        self.lost_since = None;
        Ok(old)
    }

    /// The next message if one is waiting.
    pub fn try_next(&mut self) -> Option<SourceMsg> {
        let msg = self.rx.try_recv()?;
        Some(self.seen(msg))
    }

    /// The next message, waiting up to `wait` for it.
    pub fn next(&mut self, wait: Duration) -> Next {
        match self.rx.recv_timeout(wait) {
            Ok(msg) => Next::Msg(self.seen(msg)),
            Err(RecvTimeoutError::Timeout) => Next::Idle,
            Err(RecvTimeoutError::Disconnected) => Next::Closed,
        }
    }

    /// Disconnects; what had already arrived can still be read ([`Link::try_next`]).
    pub fn close(&mut self) {
        self.conn.take();
    }

    pub fn state(&self) -> &LinkState {
        &self.state
    }

    /// Since when the prover has been lost without a goodbye.
    pub fn lost_since(&self) -> Option<Instant> {
        self.lost_since
    }

    /// Every message waiting now.
    fn try_iter(&mut self) -> Vec<SourceMsg> {
        std::iter::from_fn(|| self.try_next()).collect()
    }

    /// Keeps the state a passing message tells.
    fn seen(&mut self, msg: SourceMsg) -> SourceMsg {
        if let SourceMsg::Link(state) = &msg {
            match state {
                LinkState::Disconnected(_) => {
                    self.lost_since.get_or_insert_with(Instant::now);
                }
                _ => self.lost_since = None,
            }
            self.state = state.clone();
        }
        msg
    }
}
