//! A prover that forks: the child gets a copy of the probe's memory but none of its threads, so
//! in the child the probe is off (its state word cleared) and the C API refuses with
//! `PROOFSCOPE_FORKED`; nothing in the child waits for threads it does not have.

use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

/// The process that started the probe (0: none yet).
static OWNER: AtomicU32 = AtomicU32::new(0);
static REGISTER: Once = Once::new();

extern "C" fn in_child() {
    // Only atomics: the child of a multi-threaded process may only run async-signal-safe code.
    crate::state::set_enabled(false);
}

/// Called when a session starts: remembers this process and turns the probe off in children.
pub(crate) fn watch() {
    OWNER.store(std::process::id(), Ordering::Relaxed);
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only touches atomics; it stays valid forever.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
}

/// Whether this is a forked child of the process that started the probe.
pub fn in_forked_child() -> bool {
    let owner = OWNER.load(Ordering::Relaxed);
    owner != 0 && owner != std::process::id()
}
