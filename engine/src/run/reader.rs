//! The viewer's end of the relay's channel, read on a thread of its own (`run-channel`) into a
//! bounded queue: the kernel's datagram queue is short (`net.unix.max_dgram_qlen`, 10 on many
//! hosts, a few hundred KiB), and a viewer that only looked at it between frames of the
//! dashboard let the relay drop most lines of a burst. Read continuously, lines are lost only
//! when the viewer cannot parse as fast as the prover prints for longer than the queue holds.

use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

/// Datagrams held for the viewer at most (each up to [`super::channel::BATCH_BYTES`] of
/// lines): 48 MiB.
const QUEUE_DATAGRAMS: usize = 1024;
/// How often the reading thread looks at its stop flag when nothing arrives.
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct Reader {
    rx: Receiver<Vec<u8>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reader {
    pub fn start(sock: UnixDatagram) -> std::io::Result<Reader> {
        sock.set_read_timeout(Some(POLL))?;
        let (tx, rx) = sync_channel(QUEUE_DATAGRAMS);
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("run-channel".into())
            .spawn(move || read(&sock, &tx, &stop2))?;
        Ok(Reader {
            rx,
            stop,
            thread: Some(thread),
        })
    }

    /// The next datagram waiting, if any.
    pub fn next(&self) -> Option<Vec<u8>> {
        self.rx.try_recv().ok()
    }
}

fn read(sock: &UnixDatagram, tx: &SyncSender<Vec<u8>>, stop: &AtomicBool) {
    let mut buf = vec![0u8; super::channel::BATCH_BYTES + 1024];
    while !stop.load(Ordering::Relaxed) {
        let len = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => return,
        };
        let mut msg = buf[..len].to_vec();
        // A full queue waits here (the relay then drops and counts, never the prover).
        loop {
            match tx.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(m)) => {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    msg = m;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
