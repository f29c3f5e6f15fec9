//! The prover's own output lines. A prover must never die because whoever reads its output
//! went away (`prover serve … 2>&1 | head -2` closed the pipe, and `println!` panics on a
//! closed pipe): these write, and a line that cannot be written is dropped and counted.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

static LOST: AtomicU64 = AtomicU64::new(0);

/// Lines that could not be written so far.
pub fn lost_lines() -> u64 {
    LOST.load(Ordering::Relaxed)
}

#[doc(hidden)]
pub fn write_out(args: std::fmt::Arguments<'_>, stderr: bool, newline: bool) {
    let r = if stderr {
        let mut e = std::io::stderr().lock();
        e.write_fmt(args).and_then(|()| {
            if newline {
                e.write_all(b"\n")
            } else {
                e.flush()
            }
        })
    } else {
        let mut o = std::io::stdout().lock();
        o.write_fmt(args)
            .and_then(|()| if newline { o.write_all(b"\n") } else { Ok(()) })
            .and_then(|()| o.flush())
    };
    if r.is_err() {
        LOST.fetch_add(1, Ordering::Relaxed);
    }
}

/// `println!` that never panics.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::write_out(format_args!($($arg)*), false, true) };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::write_out(format_args!($($arg)*), true, true) };
}

/// `eprint!` that never panics (progress lines).
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::output::write_out(format_args!($($arg)*), true, false) };
}

/// `print!` that never panics.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_out(format_args!($($arg)*), false, false) };
}
