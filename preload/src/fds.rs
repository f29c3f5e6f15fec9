//! The probe's file descriptors, kept out of the program's way. A daemon closes every fd ≥ 3
//! after it starts and then opens its own files; the probe's threads went on using the numbers
//! they had (tokio's epoll and waker, its signal pipe, the socket, `/proc` files), which by
//! then were the program's files: under the preload 31 of 31 runs of such a program broke —
//! tokio panics at exit, reads returning the probe's bytes, lines lost from its output.
//!
//! So every fd a probe thread creates is *owned*: it is moved up, out of the range programs
//! open into ([`relocate`]), and it stays the probe's until a probe thread closes it. A
//! program's `close`, `close_range` or `closefrom` passes over owned fds — they were never the
//! program's, so leaving them open changes nothing it can see except that their numbers are
//! not handed out again — and a `dup2`/`dup3` onto one fails with `EBUSY` (the kernel's own
//! answer when a number is in the middle of being handed out) rather than take it from under
//! the probe. The probe therefore never reads or writes an fd the program owns.
//!
//! A probe thread is one the probe marked as its own (`proofscope_probe::on_own_thread`).
//! The fd-creating calls are interposed (`open*`, `socket`, `socketpair`, `accept*`,
//! `epoll_create*`, `eventfd`, `pipe*`, `timerfd_create`, `dup`, `fcntl`'s `F_DUPFD*`): for the program's threads they
//! forward unchanged. In a forked child the probe's threads are gone, and with them the
//! ownership: the child may close anything (`pthread_atfork`).
//!
//! Limits: an fd closed by a raw system call (not through libc) is not seen — relocation keeps
//! the probe's fds above the numbers such programs usually sweep; fds of 65,536 and above are
//! not tracked; a program closing the very fd a probe thread is creating in the same instant
//! (before it is marked) can still take it.

use libc::{c_char, c_int, c_long, c_uint, c_void, mode_t, sockaddr, socklen_t};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Fds tracked: one bit each.
const TRACKED: usize = 1 << 16;
static OWNED: [AtomicU64; TRACKED / 64] = [const { AtomicU64::new(0) }; TRACKED / 64];

/// How far below the fd limit the probe's fds are placed: room for the few it keeps.
const HEADROOM: u64 = 256;
/// The highest the probe's fds go, whatever the limit: every `fork` copies the fd table up to
/// the highest open fd, and near a soft limit of 20,000 that made a fork of a program under
/// the preload take 0.19 ms instead of 0.09 (fd 19,744: a table of 32,768 entries; at a
/// limit of 1,048,576, 65,536). At 4,096 the table is 32 KiB.
const CEILING: u64 = 4096;

fn owned(fd: c_int) -> bool {
    let Ok(i) = usize::try_from(fd) else {
        return false;
    };
    i < TRACKED && OWNED[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0
}

fn own(fd: c_int) {
    if let Ok(i) = usize::try_from(fd)
        && i < TRACKED
    {
        OWNED[i / 64].fetch_or(1 << (i % 64), Ordering::AcqRel);
    }
}

fn disown(fd: c_int) {
    if let Ok(i) = usize::try_from(fd)
        && i < TRACKED
    {
        OWNED[i / 64].fetch_and(!(1 << (i % 64)), Ordering::AcqRel);
    }
}

/// In a forked child the probe's threads are gone: nothing is the probe's any more.
extern "C" fn forget_all() {
    for w in &OWNED {
        w.store(0, Ordering::Relaxed);
    }
}

/// Registers the fork handler; called once when the library loads.
pub fn init() {
    // SAFETY: registers a handler with no preconditions that lives for the whole process.
    unsafe { libc::pthread_atfork(None, None, Some(forget_all)) };
}

fn on_probe_thread() -> bool {
    proofscope_probe::on_own_thread()
}

fn set_errno(e: c_int) {
    // SAFETY: errno is thread-local and writable.
    unsafe { *libc::__errno_location() = e };
}

fn errno() -> c_int {
    // SAFETY: errno is thread-local and readable.
    unsafe { *libc::__errno_location() }
}

/// The lowest number the probe's fds are moved to: below the soft fd limit, or below
/// [`CEILING`] where the limit is higher, by [`HEADROOM`] (a program whose limit is 1,024
/// sweeps 3–1,023; one with a higher limit seldom sweeps past 1,024 by hand — and a sweep
/// to the limit goes through `close`/`close_range`, which pass over the probe's fds).
fn base() -> c_int {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is valid for writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 3;
    }
    let top = lim.rlim_cur.min(CEILING);
    top.saturating_sub(HEADROOM).max(3) as c_int
}

/// Moves a fresh fd a probe thread made up to [`base`] or above (keeping its close-on-exec
/// flag) and marks it the probe's. Where it cannot move (the limit is near), it stays where it
/// is, still owned.
fn relocate(fd: c_int) -> c_int {
    if fd < 0 {
        return fd;
    }
    let saved = errno();
    let at = base();
    let mut out = fd;
    if fd < at {
        let cloexec = real_fcntl(fd, libc::F_GETFD, 0) & libc::FD_CLOEXEC != 0;
        let cmd = if cloexec {
            libc::F_DUPFD_CLOEXEC
        } else {
            libc::F_DUPFD
        };
        // Duplicates an fd this thread owns to the lowest free number ≥ `at`.
        let moved = real_fcntl(fd, cmd, at as c_long);
        if moved >= 0 {
            real_close(fd);
            out = moved;
        }
    }
    own(out);
    set_errno(saved);
    out
}

/// The next definition of a libc function (glibc's), looked up at the first call and kept:
/// `dlsym` may allocate, and the allocator hooks are not ready while the library loads.
struct Next {
    name: &'static std::ffi::CStr,
    f: AtomicPtr<c_void>,
}

impl Next {
    const fn new(name: &'static std::ffi::CStr) -> Next {
        Next {
            name,
            f: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    fn get(&self) -> *mut c_void {
        let f = self.f.load(Ordering::Acquire);
        if !f.is_null() {
            return f;
        }
        // SAFETY: RTLD_NEXT with a NUL-terminated name; a null result is checked by callers.
        let f = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        self.f.store(f, Ordering::Release);
        f
    }
}

/// Looks up every function now, from a thread that may allocate (the session's start), so
/// that a hook called later — from a signal handler, say — need not.
pub fn resolve() {
    for n in ALL {
        n.get();
    }
}

macro_rules! next_fns {
    ($($stat:ident = $sym:literal;)*) => {
        $(static $stat: Next = Next::new($sym);)*
        static ALL: &[&Next] = &[$(&$stat),*];
    };
}

next_fns! {
    CLOSE = c"close";
    CLOSE_RANGE = c"close_range";
    FCNTL = c"fcntl";
    FCNTL64 = c"fcntl64";
    DUP = c"dup";
    DUP2 = c"dup2";
    DUP3 = c"dup3";
    OPEN = c"open";
    OPEN64 = c"open64";
    OPENAT = c"openat";
    OPENAT64 = c"openat64";
    SOCKET = c"socket";
    SOCKETPAIR = c"socketpair";
    ACCEPT = c"accept";
    ACCEPT4 = c"accept4";
    EPOLL_CREATE = c"epoll_create";
    EPOLL_CREATE1 = c"epoll_create1";
    EVENTFD = c"eventfd";
    PIPE = c"pipe";
    PIPE2 = c"pipe2";
    TIMERFD_CREATE = c"timerfd_create";
}

/// Calls the next definition of a function through `$next`, typed `$ty`; a missing one
/// (an older libc) fails with `ENOSYS`.
macro_rules! call_next {
    ($next:expr, $ty:ty, $($arg:expr),*) => {{
        let f = $next.get();
        if f.is_null() {
            set_errno(libc::ENOSYS);
            -1
        } else {
            // SAFETY: the symbol libc defines under this name has this signature.
            let f: $ty = unsafe { std::mem::transmute::<*mut c_void, $ty>(f) };
            // SAFETY: forwarded unchanged; the caller upholds the function's contract.
            unsafe { f($($arg),*) }
        }
    }};
}

fn real_close(fd: c_int) -> c_int {
    let f = CLOSE.get();
    if f.is_null() {
        // SAFETY: the system call itself, on a number the caller names.
        return unsafe { libc::syscall(libc::SYS_close, fd) } as c_int;
    }
    call_next!(CLOSE, unsafe extern "C" fn(c_int) -> c_int, fd)
}

fn real_close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let f = CLOSE_RANGE.get();
    if f.is_null() {
        // SAFETY: the system call itself, with the caller's arguments.
        let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
        return r as c_int;
    }
    call_next!(
        CLOSE_RANGE,
        unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int,
        first,
        last,
        flags
    )
}

/// Interposed `close`: one of the probe's fds closed by the program stays open (it was never
/// the program's); by the probe, it is the probe's no more.
///
/// # Safety
/// The C contract of `close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if owned(fd) {
        if !on_probe_thread() {
            return 0;
        }
        disown(fd);
    }
    let r = real_close(fd);
    if r == 0 {
        crate::output::closed(fd);
    }
    r
}

/// The probe's fds in `[first, last]`, ascending, passed to `each`.
fn owned_in(first: c_uint, last: c_uint, mut each: impl FnMut(c_uint)) {
    let end = (last as usize).min(TRACKED - 1);
    let mut i = first as usize;
    while i <= end {
        let word = OWNED[i / 64].load(Ordering::Acquire) >> (i % 64);
        if word == 0 {
            i = (i / 64 + 1) * 64;
            continue;
        }
        let at = i + word.trailing_zeros() as usize;
        if at > end {
            break;
        }
        each(at as c_uint);
        i = at + 1;
    }
}

/// Interposed `close_range`: the program's fds in the range are closed, the probe's passed
/// over (the range is closed in the pieces between them).
///
/// # Safety
/// The C contract of `close_range`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let cloexec_only = flags & libc::CLOSE_RANGE_CLOEXEC as c_int != 0;
    if cloexec_only || first > last {
        return real_close_range(first, last, flags);
    }
    crate::output::closed_range(first, last);
    if on_probe_thread() {
        return real_close_range(first, last, flags);
    }
    let mut from = first;
    let mut result = 0;
    owned_in(first, last, |fd| {
        if fd > from && real_close_range(from, fd - 1, flags) != 0 {
            result = -1;
        }
        from = fd + 1;
    });
    // `from` passed `last` only when the last fd of the range was the probe's (and not at
    // u32::MAX, which is never tracked).
    if from <= last && from != 0 && real_close_range(from, last, flags) != 0 {
        result = -1;
    }
    result
}

/// Interposed `closefrom`: `close_range(lowfd, ~0, 0)`, or one `close` at a time where the
/// kernel has no `close_range`.
///
/// # Safety
/// The C contract of `closefrom`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closefrom(lowfd: c_int) {
    let low = lowfd.max(0) as c_uint;
    // SAFETY: our own close_range, with valid arguments.
    if unsafe { close_range(low, c_uint::MAX, 0) } == 0 {
        return;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is valid for writes.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let top = lim.rlim_cur.min(1 << 20) as c_int;
    for fd in lowfd.max(0)..top {
        // SAFETY: our own close, which passes over the probe's fds.
        unsafe { close(fd) };
    }
}

fn real_fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    call_next!(
        FCNTL,
        unsafe extern "C" fn(c_int, c_int, c_long) -> c_int,
        fd,
        cmd,
        arg
    )
}

// `fcntl` is variadic in C; its one optional argument is an integer or a pointer, passed in
// the register a fixed third argument takes on the x86-64 and AArch64 Linux ABIs (see `open`
// below). A probe thread's duplicate (`F_DUPFD*`: mio's and std's `try_clone`) is asked for at
// the probe's base at least, and owned.
macro_rules! fcntl_hook {
    ($name:ident, $next:ident) => {
        /// Interposed: forwards unchanged; a probe thread's duplicate is placed high and owned.
        ///
        /// # Safety
        /// The C contract of the function of this name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
            let dup = cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC;
            if dup && on_probe_thread() {
                let at = arg.max(c_long::from(base()));
                return made(call_next!(
                    $next,
                    unsafe extern "C" fn(c_int, c_int, c_long) -> c_int,
                    fd,
                    cmd,
                    at
                ));
            }
            let r = call_next!(
                $next,
                unsafe extern "C" fn(c_int, c_int, c_long) -> c_int,
                fd,
                cmd,
                arg
            );
            if dup {
                crate::output::duplicated(fd, r);
            }
            r
        }
    };
}

fcntl_hook!(fcntl, FCNTL);
fcntl_hook!(fcntl64, FCNTL64);

/// Interposed `dup`.
///
/// # Safety
/// The C contract of `dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let r = made(call_next!(DUP, unsafe extern "C" fn(c_int) -> c_int, fd));
    crate::output::duplicated(fd, r);
    r
}

/// A program's `dup2`/`dup3` onto one of the probe's fds: refused, `EBUSY`.
fn onto_probe_fd(new: c_int) -> bool {
    if owned(new) && !on_probe_thread() {
        set_errno(libc::EBUSY);
        return true;
    }
    false
}

/// Interposed `dup2`.
///
/// # Safety
/// The C contract of `dup2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if onto_probe_fd(new) {
        return -1;
    }
    let r = call_next!(DUP2, unsafe extern "C" fn(c_int, c_int) -> c_int, old, new);
    crate::output::duplicated(old, r);
    r
}

/// Interposed `dup3`.
///
/// # Safety
/// The C contract of `dup3`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if onto_probe_fd(new) {
        return -1;
    }
    let r = call_next!(
        DUP3,
        unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
        old,
        new,
        flags
    );
    crate::output::duplicated(old, r);
    r
}

/// A call that makes one fd: on a probe thread, the fd is moved up and owned.
fn made(fd: c_int) -> c_int {
    if fd >= 0 && on_probe_thread() {
        relocate(fd)
    } else {
        fd
    }
}

/// A call that makes two (`pipe`, `socketpair`): both moved up and owned on a probe thread.
fn made_pair(r: c_int, fds: *mut c_int) -> c_int {
    if r == 0 && !fds.is_null() && on_probe_thread() {
        // SAFETY: the call succeeded, so `fds` points to two fds it wrote.
        unsafe {
            *fds = relocate(*fds);
            *fds.add(1) = relocate(*fds.add(1));
        }
    }
    r
}

// `open` and `openat` are variadic in C (the mode only with O_CREAT or O_TMPFILE). They are
// defined here with the mode as a fixed argument, which on the x86-64 and AArch64 Linux ABIs
// is passed exactly where a variadic caller puts it (stable Rust cannot define a variadic
// function); glibc reads it only when the flags ask for it, as it would.
macro_rules! open_hook {
    ($name:ident, $next:ident) => {
        /// Interposed: forwards unchanged; an fd a probe thread opens is moved up and owned.
        ///
        /// # Safety
        /// The C contract of the function of this name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            made(call_next!(
                $next,
                unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int,
                path,
                flags,
                mode
            ))
        }
    };
}

macro_rules! openat_hook {
    ($name:ident, $next:ident) => {
        /// Interposed: forwards unchanged; an fd a probe thread opens is moved up and owned.
        ///
        /// # Safety
        /// The C contract of the function of this name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dir: c_int,
            path: *const c_char,
            flags: c_int,
            mode: mode_t,
        ) -> c_int {
            made(call_next!(
                $next,
                unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int,
                dir,
                path,
                flags,
                mode
            ))
        }
    };
}

open_hook!(open, OPEN);
open_hook!(open64, OPEN64);
openat_hook!(openat, OPENAT);
openat_hook!(openat64, OPENAT64);

/// Interposed `socket`.
///
/// # Safety
/// The C contract of `socket`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    made(call_next!(
        SOCKET,
        unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
        domain,
        ty,
        protocol
    ))
}

/// Interposed `socketpair`.
///
/// # Safety
/// The C contract of `socketpair`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn socketpair(
    domain: c_int,
    ty: c_int,
    protocol: c_int,
    fds: *mut c_int,
) -> c_int {
    let r = call_next!(
        SOCKETPAIR,
        unsafe extern "C" fn(c_int, c_int, c_int, *mut c_int) -> c_int,
        domain,
        ty,
        protocol,
        fds
    );
    made_pair(r, fds)
}

/// Interposed `accept`.
///
/// # Safety
/// The C contract of `accept`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    made(call_next!(
        ACCEPT,
        unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int,
        fd,
        addr,
        len
    ))
}

/// Interposed `accept4`.
///
/// # Safety
/// The C contract of `accept4`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    made(call_next!(
        ACCEPT4,
        unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t, c_int) -> c_int,
        fd,
        addr,
        len,
        flags
    ))
}

/// Interposed `epoll_create`.
///
/// # Safety
/// The C contract of `epoll_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn epoll_create(size: c_int) -> c_int {
    made(call_next!(
        EPOLL_CREATE,
        unsafe extern "C" fn(c_int) -> c_int,
        size
    ))
}

/// Interposed `epoll_create1`.
///
/// # Safety
/// The C contract of `epoll_create1`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    made(call_next!(
        EPOLL_CREATE1,
        unsafe extern "C" fn(c_int) -> c_int,
        flags
    ))
}

/// Interposed `eventfd`.
///
/// # Safety
/// The C contract of `eventfd`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn eventfd(init: c_uint, flags: c_int) -> c_int {
    made(call_next!(
        EVENTFD,
        unsafe extern "C" fn(c_uint, c_int) -> c_int,
        init,
        flags
    ))
}

/// Interposed `timerfd_create`.
///
/// # Safety
/// The C contract of `timerfd_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn timerfd_create(clock: c_int, flags: c_int) -> c_int {
    made(call_next!(
        TIMERFD_CREATE,
        unsafe extern "C" fn(c_int, c_int) -> c_int,
        clock,
        flags
    ))
}

/// Interposed `pipe`.
///
/// # Safety
/// The C contract of `pipe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    let r = call_next!(PIPE, unsafe extern "C" fn(*mut c_int) -> c_int, fds);
    made_pair(r, fds)
}

/// Interposed `pipe2`.
///
/// # Safety
/// The C contract of `pipe2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    let r = call_next!(
        PIPE2,
        unsafe extern "C" fn(*mut c_int, c_int) -> c_int,
        fds,
        flags
    );
    made_pair(r, fds)
}
