//! Releasing the proving vectors. `sync` drops them where the proof ends — inside the outer
//! span and in no span of its own, which reproduces C2's 10-second ghost. `async` hands them to
//! a named `dealloc` thread that frees one batch at a time under a lock (curio serialises its
//! dealloc threads the same way: concurrent munmap storms slow each other down).

use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

/// How a proof's vectors are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeallocMode {
    Sync,
    Async,
}

impl DeallocMode {
    pub fn parse(s: &str) -> Option<DeallocMode> {
        match s {
            "sync" => Some(DeallocMode::Sync),
            "async" => Some(DeallocMode::Async),
            _ => None,
        }
    }
}

enum Job {
    Free(Box<dyn Send>),
    Flush(std::sync::mpsc::SyncSender<()>),
}

static QUEUE: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
/// Serialises frees, whoever performs them.
static FREE_LOCK: Mutex<()> = Mutex::new(());

fn queue() -> &'static Mutex<Sender<Job>> {
    QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("dealloc".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    match job {
                        Job::Free(v) => {
                            let _g = FREE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
                            drop(v);
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            crate::errln!(
                "warning: no dealloc thread ({e}); releases will run where they are handed over"
            );
        }
        Mutex::new(tx)
    })
}

/// Releases `v` according to `mode`.
pub fn release<T: Send + 'static>(mode: DeallocMode, v: T) {
    match mode {
        DeallocMode::Sync => {
            let _g = FREE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            drop(v);
        }
        DeallocMode::Async => {
            let tx = queue().lock().unwrap_or_else(|p| p.into_inner());
            if let Err(std::sync::mpsc::SendError(Job::Free(v))) = tx.send(Job::Free(Box::new(v))) {
                drop(tx);
                drop(v);
            }
        }
    }
}

/// Waits until everything handed to the dealloc thread so far has been freed.
pub fn flush() {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let sent = queue()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Job::Flush(tx))
        .is_ok();
    if sent {
        let _ = rx.recv();
    }
}
