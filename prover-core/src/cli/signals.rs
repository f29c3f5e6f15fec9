//! SIGINT/SIGTERM/SIGHUP: the first asks for a clean stop (finish the current proof, say
//! goodbye, remove the socket); the second removes the socket and exits at once. SIGHUP (a
//! closed terminal, a service manager's reload-or-stop) killed the prover on the spot and left
//! its socket behind, and a viewer waited 10 s for it.

use std::sync::atomic::{AtomicUsize, Ordering};

static SIGNALS: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicUsize = AtomicUsize::new(0);

/// The probe's socket, removed by a second signal before it exits: left behind, it made a
/// viewer wait 10 s for a prover that was gone.
static SOCKET: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig as usize, Ordering::Relaxed);
    if SIGNALS.fetch_add(1, Ordering::Relaxed) >= 1 {
        if let Some(path) = SOCKET.get() {
            // SAFETY: unlink is async-signal-safe; `path` is a NUL-terminated string set once
            // before the handlers could need it and never freed (`OnceLock::get` is a plain
            // atomic load, no lock).
            unsafe { libc::unlink(path.as_ptr()) };
        }
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// The socket a second signal removes before exiting at once (set once; later calls keep
/// the first).
pub fn remove_on_exit(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) {
        let _ = SOCKET.set(c);
    }
}

/// Installs the handlers (idempotent).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `on_signal` only touches atomics and calls _exit, both async-signal-safe;
        // the handler pointer stays valid for the whole program.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Sleeps for `d`, or until a stop is requested (looked at every 10 ms): a pause between
/// batches never delays a stop.
pub fn pause(d: std::time::Duration) {
    let end = std::time::Instant::now() + d;
    while requested().is_none() {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(10)));
    }
}

/// Whether a stop was requested, and by which signal.
pub fn requested() -> Option<&'static str> {
    if SIGNALS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    Some(match LAST.load(Ordering::Relaxed) as i32 {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    })
}
