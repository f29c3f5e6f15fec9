//! The C ABI: what `include/proofscope.h` declares, for C, C++ and CUDA provers (supraseal,
//! cuzk, …). Same runtime as the Rust API: a span edge from C is the Rust span edge plus a call.
//! Every function is safe to call when no session runs (it does nothing and says so), with
//! NULL or non-UTF-8 names (refused with a status), twice, or in a forked child (refused: the
//! session stays with the parent).
#![allow(non_camel_case_types)] // the C names, as the header spells them

use crate::names;
use crate::probe::{Probe, SessionInfo};
use crate::proof::{ProofInfo, ProofScope};
use crate::span::{SpanGuard, SpanHandle};
use crate::{config, fork, gpu, state, thread};
use probe_protocol::Verification;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// Status of a call that can fail.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum proofscope_status {
    PROOFSCOPE_OK = 0,
    /// No session runs: the call did nothing.
    PROOFSCOPE_NOT_RUNNING = 1,
    PROOFSCOPE_ALREADY_RUNNING = 2,
    /// NULL where a value is needed, or a string that is not UTF-8.
    PROOFSCOPE_INVALID_ARGUMENT = 3,
    /// The session could not start: `proofscope_last_error` says why.
    PROOFSCOPE_FAILED = 4,
    /// Called in a forked child: the session belongs to the parent.
    PROOFSCOPE_FORKED = 5,
}
use proofscope_status::*;

/// A call site: a static struct per site, its name set, its id 0 (the probe fills it in once).
#[repr(C)]
#[derive(Debug)]
pub struct proofscope_site {
    pub name: *const c_char,
    /// Interned name id, 0 until the first use. Written by the probe only.
    pub id: AtomicU32,
}

/// A span as C holds it: its id and the context to restore when it ends.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct proofscope_span {
    pub id: u64,
    pub prev_span: u64,
    pub prev_proof: u64,
}

/// Names a span (and its proof) for work on another thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct proofscope_handle {
    pub span: u64,
    pub proof: u64,
}

/// How the session starts. Any field may be NULL: defaults (and the `PROOFSCOPE_*`
/// environment) apply.
#[repr(C)]
#[derive(Debug)]
pub struct proofscope_config {
    pub prover_name: *const c_char,
    pub prover_version: *const c_char,
    pub backend: *const c_char,
    pub backend_reason: *const c_char,
    /// A socket path, `"none"`, or NULL for the per-user default.
    pub socket_path: *const c_char,
    /// A recording file, or NULL.
    pub record_path: *const c_char,
}

#[repr(C)]
#[derive(Debug)]
pub struct proofscope_proof_info {
    pub circuit: *const c_char,
    pub constraints: u64,
    pub circuits: u32,
    pub backend: *const c_char,
    pub synthetic_srs: c_int,
}

/// A proof in progress: its id and its outer span.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct proofscope_proof {
    pub proof: u64,
    pub outer: proofscope_span,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum proofscope_verification {
    PROOFSCOPE_NOT_CHECKED = 0,
    PROOFSCOPE_VALID = 1,
    PROOFSCOPE_INVALID = 2,
    PROOFSCOPE_UNVERIFIABLE = 3,
}

/// The session the C API started.
static PROBE: Mutex<Option<Probe>> = Mutex::new(None);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// The last block the preload library reported on this thread: `(bytes, release)`, or
    /// `(0, _)` when none is waiting to be matched ([`seen_by_preload`]).
    static LAST_PRELOAD: Cell<(u64, bool)> = const { Cell::new((0, false)) };
}

/// How much more than the size asked for glibc's chunk holding a block may be: a header
/// word and the rounding to 16 bytes, or to a page for a block it maps.
const CHUNK_SLACK: u64 = 8192;

/// One owner per fact: a block the program reports itself (`proofscope_report_alloc`/
/// `_release`, as `proofscope::allocator` does) that the preload library, attached to this
/// session, reported a moment before on the same thread — the malloc or free inside the
/// program's allocator — is the same block. It was counted once already (by its chunk's size,
/// with the time inside the call itself); counted again, one 604 MB free read 1.2 GB in 40
/// releases, "199 % of the gap". A report the preload did not just make (memory from an
/// allocator the preload does not see: `cudaMallocHost`, a pool) is the program's alone.
fn seen_by_preload(bytes: u64, release: bool) -> bool {
    LAST_PRELOAD
        .try_with(|last| {
            let (b, r) = last.get();
            let same = b != 0 && r == release && b >= bytes && b - bytes < CHUNK_SLACK;
            if same {
                last.set((0, false));
            }
            same
        })
        .unwrap_or(false)
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

/// A C string as UTF-8: `Ok(None)` for NULL, `Err` for invalid UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char) -> Result<Option<&'a str>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(Some)
        .map_err(|_| ())
}

fn forked() -> bool {
    fork::in_forked_child()
}

/// A function of `libproofscope_preload.so`, when that library is in the process.
fn preload_fn(name: &CStr) -> *mut std::ffi::c_void {
    // SAFETY: dlsym with a NUL-terminated name; a null result means "not there".
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

type PreloadAttach = extern "C" fn(Option<extern "C" fn(u64, u64, c_int)>, u64);

/// What the preload library calls for each block once attached: this session's accounting,
/// with this process's span context.
extern "C" fn preload_report(bytes: u64, inside_ns: u64, release: c_int) {
    let _ = LAST_PRELOAD.try_with(|last| last.set((bytes, release != 0)));
    crate::alloc::report_external(bytes, inside_ns, release != 0);
}

/// What the preload library calls for each write to stdout or stderr once attached.
extern "C" fn preload_output(fd: u8, offset: u64, bytes: u64) {
    crate::output::report_output_write(fd, offset, bytes);
}

type PreloadAttachOutput = extern "C" fn(Option<extern "C" fn(u8, u64, u64)>);

/// Tells the preload library (if loaded) where blocks and output writes go: to this session,
/// or (None) nowhere.
fn attach_preload(report: Option<extern "C" fn(u64, u64, c_int)>, threshold: u64) {
    let f = preload_fn(c"proofscope_preload_attach");
    if !f.is_null() {
        // SAFETY: the preload library exports `proofscope_preload_attach` with this type.
        let attach: PreloadAttach = unsafe { std::mem::transmute(f) };
        attach(report, threshold);
    }
    let f = preload_fn(c"proofscope_preload_attach_output");
    if !f.is_null() {
        // SAFETY: the preload library exports `proofscope_preload_attach_output` with this type.
        let attach: PreloadAttachOutput = unsafe { std::mem::transmute(f) };
        attach(report.map(|_| preload_output as extern "C" fn(u8, u64, u64)));
    }
}

/// Starts a session (at most one per process).
///
/// # Safety
/// `cfg` is NULL or points to a valid `proofscope_config` whose strings are NULL or
/// NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_start(cfg: *const proofscope_config) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    // SAFETY: the caller promises `cfg` is NULL or valid.
    let cfg = unsafe { cfg.as_ref() };
    let field = |f: fn(&proofscope_config) -> *const c_char| -> Result<Option<String>, ()> {
        match cfg {
            // SAFETY: the caller promises the strings are NULL or NUL-terminated.
            Some(c) => unsafe { text(f(c)) }.map(|s| s.map(str::to_owned)),
            None => Ok(None),
        }
    };
    let (Ok(name), Ok(version), Ok(backend), Ok(reason), Ok(socket), Ok(record)) = (
        field(|c| c.prover_name),
        field(|c| c.prover_version),
        field(|c| c.backend),
        field(|c| c.backend_reason),
        field(|c| c.socket_path),
        field(|c| c.record_path),
    ) else {
        set_error("a configuration string is not UTF-8");
        return PROOFSCOPE_INVALID_ARGUMENT;
    };
    let mut slot = PROBE.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return PROOFSCOPE_ALREADY_RUNNING;
    }
    let prover = name.unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "prover".into())
    });
    let mut config = match config::ProbeConfig::from_env(&prover, version.as_deref().unwrap_or(""))
    {
        Ok(c) => c,
        Err(e) => {
            set_error(&e.to_string());
            return PROOFSCOPE_FAILED;
        }
    };
    match socket.as_deref() {
        None => {}
        Some("none") => config = config.socket(config::SocketChoice::None),
        Some(p) => config = config.socket(config::SocketChoice::At(p.into())),
    }
    if let Some(r) = record {
        config = config.record(Some(r.into()));
    }
    let info = SessionInfo {
        backend: backend.unwrap_or_default(),
        backend_reason: reason.unwrap_or_default(),
        command_line: std::env::args().collect(),
    };
    // With the preload library in the process, its own session (if any) gives way first: this
    // one sees the program's spans, so the blocks belong here.
    let release = preload_fn(c"proofscope_preload_release");
    if !release.is_null() {
        // SAFETY: the preload library exports `proofscope_preload_release` as `fn()`.
        let release: extern "C" fn() = unsafe { std::mem::transmute(release) };
        release();
    }
    let threshold = config.large_block;
    match Probe::start(config, info) {
        // PROOFSCOPE_OFF=1: the probe is off on purpose.
        Ok(p) if !p.is_enabled() => PROOFSCOPE_NOT_RUNNING,
        Ok(p) => {
            *slot = Some(p);
            attach_preload(Some(preload_report), threshold);
            PROOFSCOPE_OK
        }
        Err(crate::ProbeError::AlreadyRunning) => PROOFSCOPE_ALREADY_RUNNING,
        Err(e) => {
            set_error(&e.to_string());
            PROOFSCOPE_FAILED
        }
    }
}

/// Ends the session started by `proofscope_start`: goodbye with `reason` (NULL: "stopped").
///
/// # Safety
/// `reason` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_stop(reason: *const c_char) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    // SAFETY: forwarded from the caller.
    let reason = unsafe { text(reason) }.ok().flatten().unwrap_or("stopped");
    let p = PROBE.lock().unwrap_or_else(|p| p.into_inner()).take();
    match p {
        Some(p) => {
            attach_preload(None, 0);
            p.shutdown(reason);
            PROOFSCOPE_OK
        }
        None => PROOFSCOPE_NOT_RUNNING,
    }
}

/// 1 while a session records, else 0.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_enabled() -> c_int {
    c_int::from(state::enabled())
}

/// Why the last failing call on this thread failed (an empty string when none did). Valid
/// until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// A status as a short English sentence (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_status_string(s: proofscope_status) -> *const c_char {
    match s {
        PROOFSCOPE_OK => c"ok",
        PROOFSCOPE_NOT_RUNNING => c"no proofscope session is running",
        PROOFSCOPE_ALREADY_RUNNING => c"a proofscope session is already running",
        PROOFSCOPE_INVALID_ARGUMENT => c"invalid argument (NULL, or not UTF-8)",
        PROOFSCOPE_FAILED => c"the proofscope session could not start",
        PROOFSCOPE_FORKED => c"called in a forked child; the session belongs to the parent",
    }
    .as_ptr()
}

/// The interned id of a C call site, registering its name on first use (0: a NULL or
/// non-UTF-8 name).
///
/// # Safety
/// `site` is NULL or points to a `proofscope_site` that lives as long as the program.
unsafe fn site_id(site: *const proofscope_site) -> u32 {
    // SAFETY: the caller promises `site` is NULL or valid.
    let Some(site) = (unsafe { site.as_ref() }) else {
        return 0;
    };
    let id = site.id.load(Ordering::Relaxed);
    if id != 0 {
        return id;
    }
    // SAFETY: the site's name is a NUL-terminated string (or NULL).
    let Ok(Some(name)) = (unsafe { text(site.name) }) else {
        return 0;
    };
    let id = names::intern(name);
    site.id.store(id, Ordering::Relaxed);
    id
}

fn to_c(g: SpanGuard) -> proofscope_span {
    let (id, prev_span, prev_proof) = g.into_raw();
    proofscope_span {
        id,
        prev_span,
        prev_proof,
    }
}

/// Opens a span named by `site` under this thread's current span. Returns a span whose `id`
/// is 0 when nothing was recorded (no session, a NULL or non-UTF-8 name).
///
/// # Safety
/// `site` is NULL or points to a `proofscope_site` that lives as long as the program.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_span_begin(site: *const proofscope_site) -> proofscope_span {
    if !state::enabled() {
        return proofscope_span::default();
    }
    // SAFETY: forwarded from the caller.
    match unsafe { site_id(site) } {
        0 => proofscope_span::default(),
        id => to_c(SpanGuard::enter_id(id)),
    }
}

/// Opens a span named by `site` under `parent` (a handle from another thread).
///
/// # Safety
/// As for `proofscope_span_begin`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_span_begin_under(
    site: *const proofscope_site,
    parent: proofscope_handle,
) -> proofscope_span {
    if !state::enabled() {
        return proofscope_span::default();
    }
    // SAFETY: forwarded from the caller.
    match unsafe { site_id(site) } {
        0 => proofscope_span::default(),
        id => to_c(SpanGuard::enter_id_under(
            id,
            SpanHandle {
                span: parent.span,
                proof: parent.proof,
            },
        )),
    }
}

/// Opens a span with a name known at run time (slower: a lookup under a lock).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_span_begin_named(name: *const c_char) -> proofscope_span {
    if !state::enabled() {
        return proofscope_span::default();
    }
    // SAFETY: forwarded from the caller.
    match unsafe { text(name) } {
        Ok(Some(n)) => to_c(SpanGuard::enter_dynamic(n)),
        _ => proofscope_span::default(),
    }
}

/// Closes a span on the thread that opened it (a span with id 0 is ignored).
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_span_end(span: proofscope_span) {
    if span.id == 0 {
        return;
    }
    drop(SpanGuard::from_raw(
        span.id,
        span.prev_span,
        span.prev_proof,
    ));
}

/// This thread's current span and proof, to hand to work on other threads.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_current() -> proofscope_handle {
    let c = thread::current_ctx();
    proofscope_handle {
        span: c.span,
        proof: c.proof,
    }
}

/// Makes `h` this thread's current span (spans opened meanwhile nest under it); returns the
/// context to give back to `proofscope_restore`.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_adopt(h: proofscope_handle) -> proofscope_handle {
    let prev = proofscope_current();
    thread::set_ctx(thread::Ctx {
        span: h.span,
        proof: h.proof,
    });
    prev
}

/// Restores the context `proofscope_adopt` returned.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_restore(prev: proofscope_handle) {
    thread::set_ctx(thread::Ctx {
        span: prev.span,
        proof: prev.proof,
    });
}

/// Records an instant named by `site` inside the current span.
///
/// # Safety
/// As for `proofscope_span_begin`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_marker(site: *const proofscope_site) {
    if !state::enabled() {
        return;
    }
    // SAFETY: forwarded from the caller.
    let id = unsafe { site_id(site) };
    if id != 0 {
        crate::span::marker_id(id);
    }
}

/// Records an instant with a text (copied).
///
/// # Safety
/// `name` and `text` are NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_marker_text(
    name: *const c_char,
    text_: *const c_char,
) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    // SAFETY: forwarded from the caller.
    let (Ok(Some(name)), Ok(t)) = (unsafe { text(name) }, unsafe { text(text_) }) else {
        return PROOFSCOPE_INVALID_ARGUMENT;
    };
    if !state::enabled() {
        return PROOFSCOPE_NOT_RUNNING;
    }
    crate::span::marker_with_text(name, t.unwrap_or(""));
    PROOFSCOPE_OK
}

/// Begins a proof: `ProofBegin` and its outer span `prove` (the wrapper timer). A proof with
/// id 0 means nothing was recorded.
///
/// # Safety
/// `info` is NULL or points to a valid `proofscope_proof_info` whose strings are NULL or
/// NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_proof_begin(
    info: *const proofscope_proof_info,
) -> proofscope_proof {
    if !state::enabled() {
        return proofscope_proof::default();
    }
    // SAFETY: the caller promises `info` is NULL or valid, its strings NULL or terminated.
    let info = unsafe { info.as_ref() }.map(|i| unsafe {
        ProofInfo {
            circuit: text(i.circuit).ok().flatten().unwrap_or("").to_owned(),
            constraints: i.constraints,
            circuits: i.circuits,
            backend: text(i.backend).ok().flatten().unwrap_or("").to_owned(),
            synthetic_srs: i.synthetic_srs != 0,
        }
    });
    let (proof, outer) = ProofScope::begin(info.unwrap_or_default()).into_raw();
    proofscope_proof {
        proof,
        outer: outer.map_or_else(proofscope_span::default, |(id, prev_span, prev_proof)| {
            proofscope_span {
                id,
                prev_span,
                prev_proof,
            }
        }),
    }
}

/// Ends a proof: closes its outer span (if still open: pass it as returned by
/// `proofscope_proof_begin`, on the same thread) and sends `ProofEnd`.
///
/// # Safety
/// `error` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_proof_end(
    proof: proofscope_proof,
    ok: c_int,
    verification: proofscope_verification,
    error: *const c_char,
) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    if proof.proof == 0 {
        return PROOFSCOPE_NOT_RUNNING;
    }
    // SAFETY: forwarded from the caller.
    let Ok(error) = (unsafe { text(error) }) else {
        return PROOFSCOPE_INVALID_ARGUMENT;
    };
    let outer = (proof.outer.id != 0).then_some((
        proof.outer.id,
        proof.outer.prev_span,
        proof.outer.prev_proof,
    ));
    let v = match verification {
        proofscope_verification::PROOFSCOPE_NOT_CHECKED => Verification::NotChecked,
        proofscope_verification::PROOFSCOPE_VALID => Verification::Valid,
        proofscope_verification::PROOFSCOPE_INVALID => Verification::Invalid,
        proofscope_verification::PROOFSCOPE_UNVERIFIABLE => Verification::Unverifiable,
    };
    ProofScope::from_raw(proof.proof, outer).end(ok != 0, v, error.map(str::to_owned));
    PROOFSCOPE_OK
}

/// Session nanoseconds now (0 when no session runs).
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_now_ns() -> u64 {
    gpu::now_ns()
}

/// A CLOCK_MONOTONIC reading (ns) on the session clock (0 when no session runs).
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_monotonic_to_session_ns(mono_ns: u64) -> u64 {
    gpu::monotonic_to_session_ns(mono_ns)
}

/// Reports device work already on the session clock (e.g. from CUDA events resolved against
/// an anchor, as `proofscope_cuda.hpp` does), under the span that launched it.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proofscope_gpu_span(
    device: u32,
    stream: u32,
    name: *const c_char,
    start_ns: u64,
    end_ns: u64,
    parent: proofscope_handle,
) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    // SAFETY: forwarded from the caller.
    let Ok(Some(name)) = (unsafe { text(name) }) else {
        return PROOFSCOPE_INVALID_ARGUMENT;
    };
    if !state::enabled() {
        return PROOFSCOPE_NOT_RUNNING;
    }
    gpu::gpu_span(
        device,
        stream,
        name,
        start_ns,
        end_ns,
        SpanHandle {
            span: parent.span,
            proof: parent.proof,
        },
    );
    PROOFSCOPE_OK
}

/// Reports an allocation by a custom allocator that just returned after `inside_ns`
/// (reported as `Alloc` when at or above the large-block threshold; counted either way).
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_report_alloc(bytes: u64, inside_ns: u64) -> proofscope_status {
    report_block(bytes, inside_ns, false)
}

/// Reports a release by a custom allocator that just returned after `inside_ns`.
#[unsafe(no_mangle)]
pub extern "C" fn proofscope_report_release(bytes: u64, inside_ns: u64) -> proofscope_status {
    report_block(bytes, inside_ns, true)
}

fn report_block(bytes: u64, inside_ns: u64, release: bool) -> proofscope_status {
    if forked() {
        return PROOFSCOPE_FORKED;
    }
    if !state::enabled() {
        return PROOFSCOPE_NOT_RUNNING;
    }
    if !seen_by_preload(bytes, release) {
        crate::alloc::report_external(bytes, inside_ns, release);
    }
    PROOFSCOPE_OK
}
