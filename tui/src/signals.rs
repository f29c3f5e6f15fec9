//! SIGINT and SIGTERM for headless runs: the handler only notes the signal; the run checks
//! it between slices of work (a replay's opening pass and its reading, a live run's waits)
//! and stops with a report that says it was interrupted.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted the run (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::Relaxed);
}

/// Catches SIGINT and SIGTERM from now on (a headless run: the dashboard has its own keys).
pub fn catch() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// The signal caught, if one was.
pub fn caught() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// `SIGTERM`, `SIGINT`, or the number.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        n => format!("signal {n}"),
    }
}
