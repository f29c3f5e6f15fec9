//! `libproofscope_preload.so`: the allocator probe for programs that do not link the probe
//! (or link it without an allocator of their own): `LD_PRELOAD=libproofscope_preload.so prover`.
//!
//! It interposes the malloc family (`malloc`, `calloc`, `realloc`, `free`, `posix_memalign`,
//! `aligned_alloc`, `memalign`, `valloc`, `pvalloc`; C++ `new`/`delete` go through them) and
//! `mmap`/`munmap`. Every call is counted (live bytes); a block at or above the large-block
//! threshold is timed and reported as `Alloc`/`Release` with its thread and enclosing span.
//!
//! - The real functions are glibc's own entry points (`__libc_malloc`, …) and raw system calls
//!   for `mmap`/`munmap`: no `dlsym` bootstrap (dlsym itself calls calloc).
//! - A hook never allocates and never takes a lock: counting is per-thread slots and the
//!   report is a push into a preallocated lock-free queue; a thread-local guard keeps the
//!   probe's own allocations from being reported twice.
//! - Where the program links the probe (`libproofscope_probe.a`) and starts a session, that
//!   session registers itself here (`proofscope_preload_attach`), and blocks go to it — with
//!   the span context the program's own probe keeps per thread. Otherwise this library starts
//!   a session of its own, named after the executable, once the program has run for
//!   [`SELF_START_DELAY`] (so short-lived children of the prover, which inherit `LD_PRELOAD`,
//!   do not each open a session).
//! - After `fork`, the child's probe is off (the probe's fork handling). Before `exec`, this
//!   library's own session ends with a goodbye and its socket goes ([`exec`]).

use libc::{c_int, c_void, off_t, size_t};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

mod exec;
mod fds;
mod mappings;
mod output;
mod stdio;

/// How long the program runs before this library starts its own session
/// (`PROOFSCOPE_PRELOAD_DELAY_MS` sets another; under `proofscope run` there is none).
pub const SELF_START_DELAY: Duration = Duration::from_millis(300);

/// The delay before this library's own session: none for a process under `proofscope run`
/// (`PROOFSCOPE_RUN_PARENT` is set: the run follows the processes it started from their first
/// instant — a call that began before the session did could not be placed — and itself
/// passes over the short-lived ones, a script's `date` or `sed`); else
/// `PROOFSCOPE_PRELOAD_DELAY_MS` (up to a minute), else [`SELF_START_DELAY`].
fn self_start_delay() -> Duration {
    let env_u64 = |k: &str| std::env::var(k).ok()?.trim().parse::<u64>().ok();
    if env_u64("PROOFSCOPE_RUN_PARENT").is_some() {
        return Duration::ZERO;
    }
    env_u64("PROOFSCOPE_PRELOAD_DELAY_MS")
        .filter(|&ms| ms <= 60_000)
        .map_or(SELF_START_DELAY, Duration::from_millis)
}

unsafe extern "C" {
    fn __libc_malloc(size: size_t) -> *mut c_void;
    fn __libc_calloc(n: size_t, size: size_t) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: size_t) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: size_t, size: size_t) -> *mut c_void;
    fn __libc_valloc(size: size_t) -> *mut c_void;
    fn __libc_pvalloc(size: size_t) -> *mut c_void;
}

/// Where blocks go: the program's own probe once it registered, else this library's.
type Reporter = extern "C" fn(u64, u64, c_int);

/// The program's probe's reporter (null: report into this library's own probe).
static FORWARD: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Where writes to stdout and stderr are reported: `(fd, offset, bytes)`.
type WriteReporter = extern "C" fn(u8, u64, u64);
/// The program's probe's write reporter (null: this library's own probe).
static FORWARD_WRITE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Blocks at or above this many bytes are timed (the probe's default until a session says).
static THRESHOLD: AtomicU64 = AtomicU64::new(1 << 20);

thread_local! {
    /// Inside a hook: the probe's own work calls no hook again.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Called by a program's own probe (`proofscope_start` in libproofscope_probe) before its
/// session starts: this library's own session, if it started one, ends now, and none starts
/// later.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_preload_release() {
    TAKEN_OVER.store(true, Ordering::Release);
    if let Some(p) = OWN.lock().unwrap_or_else(|e| e.into_inner()).take() {
        proofscope_probe::as_own_thread(|| p.shutdown("handed over to the program's own probe"));
    }
}

/// Called by a program's own probe once its session runs: from then on blocks are reported
/// to it through `report(bytes, inside_ns, release)`, with the span context the program's
/// probe keeps per thread; `None` (its session ended) stops that.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_preload_attach(report: Option<Reporter>, threshold: u64) {
    if threshold > 0 {
        THRESHOLD.store(threshold, Ordering::Relaxed);
    }
    let p = report.map_or(std::ptr::null_mut(), |f| f as *mut c_void);
    FORWARD.store(p, Ordering::Release);
}

/// Called by a program's own probe once its session runs: writes to stdout and stderr are
/// stamped into it from then on; `None` (its session ended) stops that.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_preload_attach_output(report: Option<WriteReporter>) {
    let p = report.map_or(std::ptr::null_mut(), |f| f as *mut c_void);
    FORWARD_WRITE.store(p, Ordering::Release);
}

/// The program's own probe asked: this library starts no session of its own.
static TAKEN_OVER: AtomicBool = AtomicBool::new(false);

/// This library's own session, when the program has none.
static OWN: Mutex<Option<proofscope_probe::Probe>> = Mutex::new(None);
/// The process [`OWN`] is the session of (0: none): a forked or vforked child, whose pid
/// differs, never ends it ([`exec`]).
static OWN_PID: AtomicU32 = AtomicU32::new(0);

fn report(bytes: u64, inside_ns: u64, release: bool) {
    let f = FORWARD.load(Ordering::Acquire);
    if f.is_null() {
        proofscope_probe::report_external(bytes, inside_ns, release);
    } else {
        // SAFETY: only `proofscope_preload_attach` stores here, and only a `Reporter`.
        let f: Reporter = unsafe { std::mem::transmute::<*mut c_void, Reporter>(f) };
        f(bytes, inside_ns, c_int::from(release));
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `call` (the real function) and accounts for the block it freed (`before` bytes, 0:
/// none) and the block it returned (`after`, 0: none). The call is timed when `before` or
/// `expect` (the size asked for) reaches the threshold; a realloc's release and allocation
/// share its time, as the probe's own allocator does.
///
/// A small block is only counted: that path touches no thread-local of this library (in a
/// shared library each one is a `__tls_get_addr` call) and cannot re-enter, since counting
/// neither allocates nor frees. Only the timed path, which reaches the probe's queue, sets the
/// re-entry guard. Measured with `cargo bench -p proofscope-preload --bench hooks`: the guard
/// on every call cost a 64 B malloc+free pair +27 ns over glibc; see docs/BENCHMARKS.md.
#[inline(always)]
fn hooked<T>(
    before: u64,
    expect: u64,
    after: impl FnOnce(&T) -> u64,
    call: impl FnOnce() -> T,
) -> T {
    let threshold = THRESHOLD.load(Ordering::Relaxed);
    if before < threshold && expect < threshold {
        let r = call();
        let made = after(&r);
        if before > 0 {
            report(before, 0, true);
        }
        if made > 0 {
            report(made, 0, false);
        }
        return r;
    }
    timed(before, after, call)
}

/// [`hooked`]'s path for a large block, out of line so that the small path's frame stays
/// small (as one function, every malloc paid this path's six register saves).
#[cold]
#[inline(never)]
fn timed<T>(before: u64, after: impl FnOnce(&T) -> u64, call: impl FnOnce() -> T) -> T {
    let Ok(outer) = BUSY.try_with(|b| !b.replace(true)) else {
        return call(); // thread teardown: no accounting
    };
    if !outer {
        return call();
    }
    let t0 = now_ns();
    let r = call();
    let inside = now_ns() - t0;
    let made = after(&r);
    if before > 0 {
        report(before, inside, true);
    }
    if made > 0 {
        report(made, inside, false);
    }
    let _ = BUSY.try_with(|b| b.set(false));
    r
}

/// The size of glibc's chunk holding the live block `p` (0 for NULL): the word before the
/// block, less its three flag bits. Both sides of the accounting use it, so live bytes stay
/// exact (a realloc releases the old chunk's size and counts the new one's).
///
/// Read inline rather than through `malloc_usable_size`, which returns the same size less the
/// header after two calls' worth of checks: the call was a quarter of a small malloc+free
/// pair's added cost (perf; `cargo bench -p proofscope-preload --bench hooks`). Every block
/// seen here came from glibc's own `__libc_*` functions, whose chunk header has had this
/// layout since glibc 2.0.
#[inline(always)]
fn size_of_block(p: *mut c_void) -> u64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `p` is a live block returned by glibc's allocator (the caller's contract for
    // free/realloc, or the call just made): the chunk's size word sits right before it, is
    // aligned and readable.
    let word = unsafe { p.cast::<usize>().sub(1).read() };
    (word & !7) as u64
}

/// Interposed `malloc_usable_size`: glibc's answer for glibc's blocks, which are the only ones
/// this library hands out. Without it, an allocator preloaded after this library
/// (`LD_PRELOAD=…preload.so:libjemalloc.so.2`, the order `proofscope run` makes) answered for
/// blocks it never made, and crashed (`malloc_usable_size(malloc(100))`: SIGSEGV in jemalloc).
/// glibc's chunk is its size word plus the block; a chunk glibc mapped on its own (flag bit 2)
/// also keeps the previous-size word before it.
///
/// # Safety
/// The C contract of `malloc_usable_size`: `p` is NULL or a live block of this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> size_t {
    if p.is_null() {
        return 0;
    }
    // SAFETY: as in `size_of_block`: the chunk's size word sits right before a live block.
    let word = unsafe { p.cast::<usize>().sub(1).read() };
    let mmapped = word & 2 != 0;
    let overhead = if mmapped { 16 } else { 8 };
    (word & !7).saturating_sub(overhead)
}

macro_rules! alloc_hook {
    ($name:ident ($($arg:ident: $ty:ty),*) => $real:ident, $size:expr) => {
        /// Interposed: forwards to glibc and accounts for the block.
        ///
        /// # Safety
        /// The C contract of the function of this name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> *mut c_void {
            // SAFETY: forwarded unchanged to glibc's implementation.
            hooked(0, $size, |p: &*mut c_void| size_of_block(*p), || unsafe { $real($($arg),*) })
        }
    };
}

alloc_hook!(malloc(size: size_t) => __libc_malloc, size as u64);
alloc_hook!(calloc(n: size_t, size: size_t) => __libc_calloc, (n as u64).saturating_mul(size as u64));
alloc_hook!(memalign(align: size_t, size: size_t) => __libc_memalign, size as u64);
alloc_hook!(aligned_alloc(align: size_t, size: size_t) => __libc_memalign, size as u64);
alloc_hook!(valloc(size: size_t) => __libc_valloc, size as u64);
alloc_hook!(pvalloc(size: size_t) => __libc_pvalloc, size as u64);

/// Interposed `free`.
///
/// # Safety
/// The C contract of `free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    let size = size_of_block(p);
    // SAFETY: forwarded unchanged.
    hooked(size, 0, |_: &()| 0, || unsafe { __libc_free(p) });
}

/// Interposed `realloc`: the old block's release and the new block's allocation.
///
/// # Safety
/// The C contract of `realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: size_t) -> *mut c_void {
    let old = size_of_block(p);
    // SAFETY: forwarded unchanged.
    hooked(
        old,
        size as u64,
        |n: &*mut c_void| size_of_block(*n),
        || unsafe { __libc_realloc(p, size) },
    )
}

/// Interposed `posix_memalign`.
///
/// # Safety
/// The C contract of `posix_memalign`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    if out.is_null() || align < std::mem::size_of::<*mut c_void>() || !align.is_power_of_two() {
        return libc::EINVAL;
    }
    // SAFETY: `memalign` is the interposed one above (accounting included).
    let p = unsafe { memalign(align, size) };
    if p.is_null() && size != 0 {
        return libc::ENOMEM;
    }
    // SAFETY: `out` is non-null and, by the contract, valid for a write.
    unsafe { *out = p };
    0
}

/// Interposed `mmap`: a mapping at or above the threshold — anonymous, or of a file, whose
/// unmapping can take as long as a free (supraseal's 2.1 GB parameter file: 41–131 ms in
/// `munmap`) — is memory, counted and reported; a reservation (anonymous, `PROT_NONE`) is
/// address space, remembered so that its unmapping is not counted either, and whatever is
/// mapped inside it is left to it ([`mappings`]).
///
/// # Safety
/// The C contract of `mmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let call = || {
        // SAFETY: the system call with the caller's arguments: the same contract.
        unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void }
    };
    if (len as u64) < THRESHOLD.load(Ordering::Relaxed) {
        return call();
    }
    let memory = |p: &*mut c_void| {
        if *p == libc::MAP_FAILED {
            0
        } else {
            (len - mappings::overlap(*p as usize, len)) as u64
        }
    };
    let reservation = flags & libc::MAP_ANONYMOUS != 0 && prot == libc::PROT_NONE;
    if !reservation {
        return hooked(0, len as u64, memory, call);
    }
    let p = call();
    // One inside a reservation already remembered (a pool decommitting what it had committed
    // there) takes no slot of its own.
    if p == libc::MAP_FAILED
        || mappings::overlap(p as usize, len) == len
        || mappings::note(p as usize, len)
    {
        return p;
    }
    // The table is full: counted as memory, and its unmapping will be too.
    hooked(0, len as u64, memory, || p)
}

/// Interposed `mmap64` (the same call on 64-bit Linux).
///
/// # Safety
/// As for `mmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    // SAFETY: forwarded.
    unsafe { mmap(addr, len, prot, flags, fd, off) }
}

/// Interposed `munmap`: unmapping memory at or above the threshold is timed and reported;
/// the part of the range that lies in a reservation ([`mappings`]) is not counted.
///
/// # Safety
/// The C contract of `munmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let call = || {
        // SAFETY: the system call with the caller's arguments. libc's `syscall` returns -1
        // with errno set on failure (it was overwritten here with 1, EPERM, for EINVAL).
        let r = unsafe { libc::syscall(libc::SYS_munmap, addr, len) };
        if r < 0 { -1 } else { 0 }
    };
    if (len as u64) < THRESHOLD.load(Ordering::Relaxed) {
        return call();
    }
    let memory = len - mappings::unmapping(addr as usize, len);
    if memory == 0 || !mapped_at_an_end(addr, len) {
        return call();
    }
    hooked(memory as u64, 0, |_: &c_int| 0, call)
}

/// `mremap`, from c/mremap.c (which takes its variadic new address): timed, and counted as
/// the mapping hooks count — a mapping that stays at or above the threshold releases what it
/// shrank by or allocates what it grew by; one that crosses the threshold is an unmapping of
/// the old size (if it was counted) and a mapping of the new (if it will be), so live bytes
/// stay exact against `mmap` and `munmap`; a failed call changes nothing. Mappings inside a
/// reservation ([`mappings`]) are not memory and pass through. Before, it was not hooked: a
/// program growing a buffer with `mremap` read as never having it.
///
/// # Safety
/// The C contract of `mremap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_preload_mremap(
    old: *mut c_void,
    old_size: size_t,
    new_size: size_t,
    flags: c_int,
    new_address: *mut c_void,
) -> *mut c_void {
    let call = || {
        // SAFETY: the system call with the caller's arguments; libc's `syscall` returns -1
        // (MAP_FAILED) with errno set on failure.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mremap,
                old,
                old_size,
                new_size,
                flags,
                new_address,
            )
        };
        r as *mut c_void
    };
    let threshold = THRESHOLD.load(Ordering::Relaxed) as usize;
    let (was, will) = (old_size >= threshold, new_size >= threshold);
    if (!was && !will) || mappings::overlap(old as usize, old_size) > 0 {
        return call();
    }
    let (released, made) = match (was, will) {
        (true, true) => (
            old_size.saturating_sub(new_size),
            new_size.saturating_sub(old_size),
        ),
        (true, false) => (old_size, 0),
        _ => (0, new_size),
    };
    let Ok(outer) = BUSY.try_with(|b| !b.replace(true)) else {
        return call();
    };
    if !outer {
        return call();
    }
    let t0 = now_ns();
    let p = call();
    let inside = now_ns() - t0;
    if p != libc::MAP_FAILED {
        if released > 0 {
            report(released as u64, inside, true);
        }
        if made > 0 {
            report(made as u64, inside, false);
        }
    }
    let _ = BUSY.try_with(|b| b.set(false));
    p
}

/// Whether the first or the last page of `[addr, addr + len)` is mapped (`mincore` fails with
/// `ENOMEM` on a page that is not). `munmap` of a range never mapped succeeds, and was counted
/// as a release: a program that allocated under 1 GB read "26 large releases, 2203.6 GB".
/// Two system calls on a path taken only for unmappings of a megabyte or more.
fn mapped_at_an_end(addr: *mut c_void, len: size_t) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let start = addr as usize & !(page - 1);
    let last = (addr as usize).saturating_add(len.saturating_sub(1)) & !(page - 1);
    let mut vec = [0u8; 1];
    [start, last].iter().any(|&p| {
        // SAFETY: mincore only reads the page tables for one page and writes one byte to
        // `vec`; an unmapped page is an error (ENOMEM), not a fault. errno is restored.
        unsafe {
            let saved = *libc::__errno_location();
            let r = libc::mincore(p as *mut c_void, page, vec.as_mut_ptr());
            *libc::__errno_location() = saved;
            r == 0
        }
    })
}

extern "C" fn start_own_session() {
    static FORK_HANDLER: std::sync::Once = std::sync::Once::new();
    FORK_HANDLER.call_once(fds::init);
    // The program's signals never run on this thread, nor on the probe's it starts
    // (`with_signals_blocked` says why).
    let spawned = proofscope_probe::with_signals_blocked(|| {
        std::thread::Builder::new()
            .name("proofscope-preload".into())
            .spawn(|| {
                STARTER_UP.store(true, Ordering::Release);
                proofscope_probe::as_own_thread(start_after_delay)
            })
    });
    if spawned.is_ok() {
        wait_for_starter();
    }
}

/// Set by the thread [`start_own_session`] starts, first thing.
static STARTER_UP: AtomicBool = AtomicBool::new(false);

/// Waits (at most 20 ms) until the starter thread runs: by then glibc has given it its arena
/// (64 MiB of address space) and its stack, so that a program which reads its address space in
/// `main` to bound it (`RLIMIT_AS`) counts them, and a session that would not fit is refused
/// (the probe's headroom check) instead of taking the room from under it — under `proofscope
/// run` the thread came up after `main` had read 7.6 MiB, then took 66 MiB, and 8 of the
/// program's 400 `malloc`s failed. The wait costs a process about a thread's start (BENCHMARKS).
fn wait_for_starter() {
    let t0 = std::time::Instant::now();
    while !STARTER_UP.load(Ordering::Acquire) && t0.elapsed() < Duration::from_millis(20) {
        std::thread::yield_now();
    }
}

/// The body of the thread `start_own_session` starts: the probe's work, its fds the probe's.
fn start_after_delay() {
    fds::resolve();
    output::resolve();
    std::thread::sleep(self_start_delay());
    let mut own = OWN.lock().unwrap_or_else(|e| e.into_inner());
    if TAKEN_OVER.load(Ordering::Acquire) {
        return; // the program's own probe took over
    }
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    let config = match proofscope_probe::ProbeConfig::from_env(&exe, "") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("[proofscope preload] {e}; no session");
            return;
        }
    };
    THRESHOLD.store(config.large_block, Ordering::Relaxed);
    let info = proofscope_probe::SessionInfo {
        backend: String::new(),
        backend_reason: "allocator probe (LD_PRELOAD): no spans".into(),
        command_line: std::env::args().collect(),
    };
    match proofscope_probe::Probe::start(config, info) {
        Ok(p) => {
            *own = Some(p);
            // SAFETY: getpid has no preconditions.
            OWN_PID.store(unsafe { libc::getpid() } as u32, Ordering::Release);
            // SAFETY: registers a handler with no preconditions that lives forever.
            unsafe { libc::atexit(stop_own_session) };
        }
        Err(e) => eprintln!("[proofscope preload] no session: {e}"),
    }
}

extern "C" fn stop_own_session() {
    if let Ok(mut g) = OWN.lock()
        && let Some(p) = g.take()
    {
        proofscope_probe::as_own_thread(|| p.shutdown("program exited"));
    }
}

/// Runs when the library is loaded.
#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = start_own_session;
