//! `exec` under the preload: the program this library started a session for is about to be
//! replaced, and nothing of it runs again — no `atexit`, so its session would never say
//! goodbye and its socket would stay behind, stale (`sh -c "…; exec prover"` left
//! `sh-<pid>.sock`). The session ends first, with a goodbye that says why; if the `exec`
//! fails the program goes on, and a session of its own starts again.
//!
//! Only in the process whose session it is: a `fork`ed child's probe is off, and a `vfork`ed
//! child shares the parent's memory, session included — both have another pid. The `exec*`
//! functions that take a vector are interposed (`execve`, `execv`, `execvp`, `execvpe`);
//! glibc's `execl*` and `posix_spawn` call the system call directly and are not seen (the
//! socket then stays until a viewer or `proofscope list` finds it stale and removes it).

use libc::{c_char, c_int};
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// Ends this process's own session before it is replaced; whether there was one.
fn end_session(path: *const c_char) -> bool {
    let pid = super::OWN_PID.load(Ordering::Acquire);
    // SAFETY: getpid has no preconditions.
    if pid == 0 || pid != unsafe { libc::getpid() } as u32 {
        return false;
    }
    let Some(p) = super::OWN.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return false;
    };
    super::OWN_PID.store(0, Ordering::Release);
    let what = if path.is_null() {
        "another program".into()
    } else {
        // SAFETY: `exec*`'s contract: a NUL-terminated path.
        unsafe { CStr::from_ptr(path) }.to_string_lossy()
    };
    proofscope_probe::as_own_thread(|| p.shutdown(&format!("exec {what}")));
    true
}

/// The next definition of `name` (glibc's): looked up at the call, not at load time (dlsym
/// may allocate, and the allocator hooks are not ready while the library loads).
fn next(name: &CStr) -> *mut libc::c_void {
    // SAFETY: RTLD_NEXT with a NUL-terminated name; a null result is checked by the caller.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// Runs glibc's `exec` after ending the session; when it returns (it failed), the session
/// starts again, `errno` kept as the failure left it.
fn around(path: *const c_char, call: impl FnOnce() -> c_int) -> c_int {
    let ended = end_session(path);
    let r = call();
    // SAFETY: errno is thread-local and readable/writable.
    let errno = unsafe { *libc::__errno_location() };
    if ended {
        super::start_own_session();
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    r
}

/// The error an `exec` returns when glibc's own could not be found.
fn missing() -> c_int {
    // SAFETY: errno is thread-local and writable.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

type Exec3 =
    unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type Exec2 = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;

macro_rules! exec_hook {
    ($name:ident, $sym:literal, $ty:ty, ($($arg:ident: $argty:ty),*)) => {
        /// Interposed: ends this process's own session, then glibc's function of this name.
        ///
        /// # Safety
        /// The C contract of the function of this name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, $($arg: $argty),*) -> c_int {
            let f = next($sym);
            if f.is_null() {
                return missing();
            }
            // SAFETY: the symbol glibc defines under this name has this signature.
            let f: $ty = unsafe { std::mem::transmute::<*mut libc::c_void, $ty>(f) };
            // SAFETY: forwarded unchanged; the caller upholds the contract.
            around(path, || unsafe { f(path, $($arg),*) })
        }
    };
}

exec_hook!(execve, c"execve", Exec3, (argv: *const *const c_char, envp: *const *const c_char));
exec_hook!(execvpe, c"execvpe", Exec3, (argv: *const *const c_char, envp: *const *const c_char));
exec_hook!(execv, c"execv", Exec2, (argv: *const *const c_char));
exec_hook!(execvp, c"execvp", Exec2, (argv: *const *const c_char));
