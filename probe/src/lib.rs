//! proofscope-probe: the runtime a prover embeds so the `proofscope` viewer can watch it.
//!
//! - [`span!`] opens an RAII span (name interned once per call site); spans nest per thread;
//!   a [`SpanHandle`] lets worker threads and GPU threads name their parent; a [`ProofScope`]
//!   brackets one proof (`ProofBegin`/`ProofEnd` and the outer span, the wrapper timer).
//! - A span edge is a tick and a push into a ring the thread owns; with the probe off it is
//!   one relaxed atomic load.
//! - A named collector thread drains the rings, keeps a flight recorder bounded in bytes and
//!   fans out to subscribers on a local socket (and optionally to a recording file).
//! - [`CountingAllocator`] counts every allocation and times large blocks (`Alloc`/`Release`).
//! - With the `nvml` feature (on by default), a named thread samples the GPUs when there are
//!   any. GPU work timed by the caller's own events reaches the timeline through
//!   [`DeviceClock`] and [`gpu_span`]; the probe itself has no CUDA dependency.
//!
//! See `probe/README.md` for a quick start, the feature flags, the environment variables and
//! the cost per span and per allocation.

mod alloc;
mod cadence;
pub mod capi;
mod clock;
mod collector;
mod config;
mod encoded;
mod error;
mod fork;
mod gpu;
mod headroom;
mod history;
mod hook_queue;
mod kernel;
mod log;
mod names;
#[cfg(feature = "nvml")]
mod nvml;
#[cfg(not(feature = "nvml"))]
#[path = "no_nvml.rs"]
mod nvml;
mod observer;
mod output;
mod probe;
mod proof;
mod recorder;
mod ring;
mod sched;
mod sched_stamp;
mod server;
mod session;
mod slot_tls;
mod span;
mod stack_sampler;
mod stacks;
mod state;
mod subscriber;
mod system;
mod thread;
mod thread_ids;
#[cfg(feature = "tracing")]
mod tracing_layer;
mod visible;

pub use alloc::{
    AllocTotals, CountingAllocator, dropped_stacks, report_external, thread_totals, totals,
};
pub use collector::CollectorStats;
pub use config::{ConfigError, DEFAULT_LARGE_BLOCK, ProbeConfig, SocketChoice};
pub use error::ProbeError;
pub use fork::in_forked_child;
pub use gpu::{DeviceClock, gpu_span, monotonic_to_session_ns, now_ns};
pub use log::lost_lines as log_lines_lost;
pub use names::{CallSite, intern};
#[doc(hidden)]
pub use observer::StartingThread;
pub use observer::{ThreadCpu, own_threads_cpu, with_signals_blocked};
#[doc(hidden)]
pub use observer::{as_own_thread, on_own_thread};
pub use output::report_output_write;
pub use probe::{Probe, SessionInfo, wait_drained};
pub use probe_protocol::Verification;
pub use probe_protocol::discovery::{default_socket_dir, default_socket_path};
pub use proof::{ProofInfo, ProofScope};
pub use span::{Adopted, SpanGuard, SpanHandle, marker, marker_with_text};
pub use state::enabled;
pub use system::{cpu_count, total_ram_bytes};
#[cfg(feature = "tracing")]
pub use tracing_layer::ProofscopeLayer;

/// Opens a span until the end of the enclosing scope: `let _s = span!("ntt");`, or under an
/// explicit parent from another thread: `let _s = span!("msm", parent = handle);`.
#[macro_export]
macro_rules! span {
    ($name:literal) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::SpanGuard::enter(&SITE)
    }};
    ($name:literal, parent = $parent:expr) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::SpanGuard::enter_under(&SITE, $parent)
    }};
}

/// Records an instant: `marker!("barrier")`.
#[macro_export]
macro_rules! marker {
    ($name:literal) => {{
        static SITE: $crate::CallSite = $crate::CallSite::new($name);
        $crate::marker(&SITE)
    }};
}
