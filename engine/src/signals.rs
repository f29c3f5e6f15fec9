//! SIGINT and SIGTERM for headless runs: the handler only notes the signal; the run checks
//! it between slices of work (a replay's opening pass and its reading, a live run's waits)
//! and stops with a report that says it was interrupted.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted the run (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How many were caught.
static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::Relaxed);
    COUNT.fetch_add(1, Ordering::Relaxed);
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

/// Runs `work` (building and writing a report: seconds for a proof of 400k spans, with no
/// place to look at the signal) while a named thread checks every 10 ms for a SIGINT or
/// SIGTERM caught since it began (one caught before — a replay stopped while reading — asked
/// for the report of what was read); if one comes, it says so, removes `partial` (the report
/// file being written) and ends the process with status 1 — within the 50 ms every headless
/// stage promises.
pub fn exit_if_caught_during<T>(
    what: &str,
    partial: Option<&std::path::Path>,
    work: impl FnOnce() -> T,
) -> T {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let done = Arc::new(AtomicBool::new(false));
    let before = COUNT.load(Ordering::Relaxed);
    let watch = {
        let done = done.clone();
        let what = what.to_owned();
        let partial = partial.map(std::path::Path::to_path_buf);
        std::thread::Builder::new()
            .name("signal-watch".into())
            .spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if COUNT.load(Ordering::Relaxed) != before {
                        let sig = caught().unwrap_or(libc::SIGTERM);
                        if let Some(p) = &partial {
                            let _ = std::fs::remove_file(p);
                        }
                        eprintln!(
                            "interrupted by {} while {what}: no report written",
                            name(sig)
                        );
                        std::process::exit(1);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            })
            .ok()
    };
    let out = work();
    done.store(true, Ordering::Relaxed);
    if let Some(w) = watch {
        let _ = w.join();
    }
    out
}
