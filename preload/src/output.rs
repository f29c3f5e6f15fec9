//! The program's writes to its standard output and error, stamped where they happen: each
//! `write`/`writev` on fd 1 or 2 (or an fd duplicated from one of them), and what a stdio call
//! on `stdout`/`stderr` flushed (`stdio.c`: glibc's stdio writes through its own internal
//! entry points, which no interposer sees), is reported to the session with the bytes of the
//! stream it carried (`proofscope_probe::report_output_write`). `proofscope run` places the
//! prover's log lines by these stamps instead of by their arrival at a reader that a loaded
//! machine delays.
//!
//! The offsets count every byte this process wrote to each stream since it started, reported
//! or not (no session yet, a full queue), so a later report still says where its bytes are. A
//! stream redirected elsewhere (`dup2` of another fd onto 1 or 2, as daemons do) is no longer
//! counted: its bytes no longer reach the reader.

use libc::{c_int, c_void, iovec, size_t, ssize_t};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, Ordering};

/// Bytes written so far to stdout (0) and stderr (1).
static OFFSET: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
/// The stream no longer reaches what it reached at start.
static REDIRECTED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];
/// Fds below this are tracked as duplicates of a stream.
const ALIASES: usize = 1024;
/// For each fd: the stream it duplicates (1 or 2), 0 for none.
static ALIAS: [AtomicU8; ALIASES] = [const { AtomicU8::new(0) }; ALIASES];

/// The stream (1 stdout, 2 stderr) whose bytes a write to `fd` carries, 0 for none.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_preload_stream_of(fd: c_int) -> c_int {
    let stream = match fd {
        1 | 2 => fd as u8,
        _ => usize::try_from(fd)
            .ok()
            .filter(|&i| i < ALIASES)
            .map_or(0, |i| ALIAS[i].load(Ordering::Relaxed)),
    };
    if stream == 0 || REDIRECTED[usize::from(stream - 1)].load(Ordering::Relaxed) {
        return 0;
    }
    c_int::from(stream)
}

/// `bytes` more bytes of `stream` (1 or 2) were just written by this thread: counted, and
/// reported with where they are in the stream.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_preload_written(stream: c_int, bytes: u64) {
    let Some(i) = usize::try_from(stream - 1).ok().filter(|&i| i < 2) else {
        return;
    };
    if bytes == 0 {
        return;
    }
    let offset = OFFSET[i].fetch_add(bytes, Ordering::AcqRel);
    report(stream as u8, offset, bytes);
}

/// Where a write's stamp goes: the program's own probe once it attached (it names the
/// threads), else this library's session.
fn report(fd: u8, offset: u64, bytes: u64) {
    let f = super::FORWARD_WRITE.load(Ordering::Acquire);
    if f.is_null() {
        proofscope_probe::report_output_write(fd, offset, bytes);
    } else {
        // SAFETY: only `proofscope_preload_attach` stores here, and only a `WriteReporter`.
        let f: super::WriteReporter =
            unsafe { std::mem::transmute::<*mut c_void, super::WriteReporter>(f) };
        f(fd, offset, bytes);
    }
}

/// `new` now refers to what `old` referred to (a `dup`, `dup2`, `dup3` or `F_DUPFD`): a
/// duplicate of a stream is that stream; a stream's own fd given something else is redirected.
pub fn duplicated(old: c_int, new: c_int) {
    if new < 0 || old == new {
        return;
    }
    let stream = proofscope_preload_stream_of(old) as u8;
    match new {
        1 | 2 => {
            if stream != new as u8 {
                REDIRECTED[(new - 1) as usize].store(true, Ordering::Relaxed);
            }
        }
        _ => {
            if let Some(slot) = usize::try_from(new).ok().and_then(|i| ALIAS.get(i)) {
                slot.store(stream, Ordering::Relaxed);
            }
        }
    }
}

/// `fd` was closed: it duplicates nothing now. Closing 1 or 2 itself ends that stream.
pub fn closed(fd: c_int) {
    match fd {
        1 | 2 => REDIRECTED[(fd - 1) as usize].store(true, Ordering::Relaxed),
        _ => {
            if let Some(slot) = usize::try_from(fd).ok().and_then(|i| ALIAS.get(i)) {
                slot.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// Every fd in `[first, last]` was closed.
pub fn closed_range(first: u32, last: u32) {
    for fd in first..=last.min(ALIASES as u32 - 1) {
        closed(fd as c_int);
    }
}

type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
type WritevFn = unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t;

static WRITE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static WRITEV: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// glibc's function `name`, looked up once (at the session's start, or at the first call).
fn next(slot: &AtomicPtr<c_void>, name: &std::ffi::CStr) -> *mut c_void {
    let f = slot.load(Ordering::Acquire);
    if !f.is_null() {
        return f;
    }
    // SAFETY: RTLD_NEXT with a NUL-terminated name; a null result is checked by callers.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    slot.store(f, Ordering::Release);
    f
}

/// Looks up glibc's `write` and `writev` now, from a thread that may allocate.
pub fn resolve() {
    next(&WRITE, c"write");
    next(&WRITEV, c"writev");
}

/// A raw system call's result as libc returns it: -1 with `errno` set on an error.
fn raw(r: libc::c_long) -> ssize_t {
    if r < 0 {
        // SAFETY: errno is thread-local and writable.
        unsafe { *libc::__errno_location() = -r as c_int };
        -1
    } else {
        r as ssize_t
    }
}

/// Interposed `write`: forwarded unchanged; what reached a standard stream is reported.
///
/// # Safety
/// The C contract of `write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    let f = next(&WRITE, c"write");
    let r = if f.is_null() {
        // SAFETY: the system call itself with the caller's arguments.
        raw(unsafe { libc::syscall(libc::SYS_write, fd, buf, n) })
    } else {
        // SAFETY: glibc's `write` has this signature; forwarded unchanged.
        unsafe { std::mem::transmute::<*mut c_void, WriteFn>(f)(fd, buf, n) }
    };
    written(fd, r);
    r
}

/// Interposed `writev`: as `write`.
///
/// # Safety
/// The C contract of `writev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, count: c_int) -> ssize_t {
    let f = next(&WRITEV, c"writev");
    let r = if f.is_null() {
        // SAFETY: the system call itself with the caller's arguments.
        raw(unsafe { libc::syscall(libc::SYS_writev, fd, iov, count) })
    } else {
        // SAFETY: glibc's `writev` has this signature; forwarded unchanged.
        unsafe { std::mem::transmute::<*mut c_void, WritevFn>(f)(fd, iov, count) }
    };
    written(fd, r);
    r
}

/// After a write to `fd` returned `r`: its bytes counted and reported if it is a stream's.
/// errno is left as the write left it.
fn written(fd: c_int, r: ssize_t) {
    if r <= 0 {
        return;
    }
    let stream = proofscope_preload_stream_of(fd);
    if stream != 0 {
        // SAFETY: errno is thread-local.
        let saved = unsafe { *libc::__errno_location() };
        proofscope_preload_written(stream, r as u64);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = saved };
    }
}
